import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { synthCacheEnabled, synthKey, withSynthCache } from '../../../lib/local/synth-cache';

/** A scratch project with a source file, a dependency and an output directory. */
function project(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-synth-cache-'));
  fs.mkdirSync(path.join(root, 'lib'));
  fs.writeFileSync(path.join(root, 'lib', 'app.ts'), 'export const a = 1;\n');
  fs.mkdirSync(path.join(root, 'node_modules', 'dep'), { recursive: true });
  fs.writeFileSync(path.join(root, 'node_modules', 'dep', 'index.js'), 'x');
  return root;
}

/** A stand-in for `cdk synth --output dir`: writes a manifest and counts its calls. */
function fakeSynth() {
  let calls = 0;
  const synth = async (dir: string): Promise<void> => {
    calls += 1;
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ call: calls }));
  };
  return { synth, calls: () => calls };
}

/** Far below the ten minutes a live holder's lock is waited for. */
const LOCK_POLL_BOUND_MS = 5_000;

describe('Module: synth-cache', () => {
  const args = ['-c', 'tenang:target=emulator'];

  it('when a source changes, the key changes; a dependency, an output, the emulator port or an unrelated variable do not', () => {
    // Prepare
    const root = project();
    const env = { AWS_REGION: 'us-east-1', TENANG_MOTO_PORT: '5000', HOME: '/a' };
    const before = synthKey(root, args, env);

    // Act
    fs.writeFileSync(path.join(root, 'node_modules', 'dep', 'index.js'), 'y');
    fs.mkdirSync(path.join(root, '.tenang', 'cdk.out-dev-5000'), { recursive: true });
    fs.writeFileSync(path.join(root, '.tenang', 'cdk.out-dev-5000', 'manifest.json'), '{}');
    const ignored = synthKey(root, args, { ...env, TENANG_MOTO_PORT: '6000', HOME: '/b' });
    const region = synthKey(root, args, { ...env, AWS_REGION: 'eu-west-1' });
    const context = synthKey(root, [...args, '-c', 'tenang:stage=prod'], env);
    fs.writeFileSync(path.join(root, 'lib', 'app.ts'), 'export const a = 2;\n');
    const edited = synthKey(root, args, env);

    // Assess
    expect(ignored).toBe(before);
    expect(new Set([before, region, context, edited]).size).toBe(4);
  });

  it('when the same key is asked twice, the second copies the first assembly without synthesizing', async () => {
    // Prepare
    const root = project();
    const { synth, calls } = fakeSynth();
    const first = path.join(root, '.tenang', 'cdk.out-a');
    const second = path.join(root, '.tenang', 'cdk.out-b');

    // Act
    const a = await withSynthCache(root, 'k1', first, synth);
    const b = await withSynthCache(root, 'k1', second, synth);

    // Assess
    expect([a, b]).toEqual(['miss', 'hit']);
    expect(calls()).toBe(1);
    expect(fs.readFileSync(path.join(second, 'manifest.json'), 'utf8')).toBe('{"call":1}');
  });

  it('when a synthesis fails, nothing is cached and the next one synthesizes again', async () => {
    // Prepare
    const root = project();
    const { synth, calls } = fakeSynth();
    const out = path.join(root, '.tenang', 'cdk.out-a');

    // Act
    await expect(
      withSynthCache(root, 'k2', out, async (dir) => {
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(path.join(dir, 'manifest.json'), 'partial');
        throw new Error('cdk synth failed');
      }),
    ).rejects.toThrow('cdk synth failed');
    const retried = await withSynthCache(root, 'k2', out, synth);

    // Assess
    expect(retried).toBe('miss');
    expect(calls()).toBe(1);
    expect(fs.readdirSync(path.join(root, '.tenang', 'synth-cache'))).toEqual(['k2']);
  });

  it('when an operator command writes its audit log, a run log or a packed tarball into the project, the key stays the same', () => {
    // Prepare
    const root = project();
    const env = { AWS_REGION: 'us-east-1' };
    const before = synthKey(root, args, env);

    // Act
    fs.mkdirSync(path.join(root, 'tenang-audit'));
    fs.writeFileSync(path.join(root, 'tenang-audit', 'cache-2026-12-07T17-48-26-325Z.jsonl'), '{}\n');
    fs.writeFileSync(path.join(root, 'start.log'), 'ready\n');
    fs.writeFileSync(path.join(root, 'my-app-0.1.0.tgz'), 'x');
    const after = synthKey(root, args, env);
    fs.writeFileSync(path.join(root, 'lib', 'audit.ts'), 'export const b = 1;\n');
    const withSource = synthKey(root, args, env);

    // Assess
    expect(after).toBe(before);
    expect(withSource).not.toBe(before);
  });

  it('when two platforms ask for the same missing entry at once, it is synthesized once and both get it', async () => {
    // Prepare
    const root = project();
    let calls = 0;
    let finish: () => void = () => undefined;
    const slowSynth = async (dir: string): Promise<void> => {
      calls += 1;
      await new Promise<void>((resolve) => (finish = resolve));
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify({ call: calls }));
    };
    const first = path.join(root, '.tenang', 'cdk.out-a');
    const second = path.join(root, '.tenang', 'cdk.out-b');

    // Act
    const a = withSynthCache(root, 'k3', first, slowSynth);
    const b = withSynthCache(root, 'k3', second, slowSynth);
    await new Promise((resolve) => setTimeout(resolve, 600));
    const callsWhileWaiting = calls;
    finish();
    const results = await Promise.all([a, b]);

    // Assess
    expect(callsWhileWaiting).toBe(1);
    expect(results).toEqual(['miss', 'hit']);
    expect(calls).toBe(1);
    expect(fs.readFileSync(path.join(second, 'manifest.json'), 'utf8')).toBe('{"call":1}');
    expect(fs.readdirSync(path.join(root, '.tenang', 'synth-cache'))).toEqual(['k3']);
  });

  it('when the lock of a synthesis whose process is gone is left behind, the next one synthesizes at once', async () => {
    // Prepare
    const root = project();
    const { synth, calls } = fakeSynth();
    fs.mkdirSync(path.join(root, '.tenang', 'synth-cache'), { recursive: true });
    // A pid above Linux's pid_max: no such process.
    fs.writeFileSync(path.join(root, '.tenang', 'synth-cache', 'k4.lock'), '4194305');
    const out = path.join(root, '.tenang', 'cdk.out-a');
    const started = Date.now();

    // Act
    const result = await withSynthCache(root, 'k4', out, synth);

    // Assess
    expect(result).toBe('miss');
    expect(calls()).toBe(1);
    expect(Date.now() - started).toBeLessThan(LOCK_POLL_BOUND_MS);
    expect(fs.readdirSync(path.join(root, '.tenang', 'synth-cache'))).toEqual(['k4']);
  });

  it('when TENANG_SYNTH_CACHE is 0 it is off, and on otherwise', () => {
    // Assess
    expect(synthCacheEnabled({ TENANG_SYNTH_CACHE: '0' })).toBe(false);
    expect(synthCacheEnabled({})).toBe(true);
  });
});
