/**
 * `tenang init` as a team runs it: a new app in a directory outside the repository, with this
 * checkout's tenang installed the cheap way (test/helpers/linked-app.ts: no registry, no build).
 * The app type-checks, its own unit tests pass, `cdk synth` passes the AwsSolutions, Serverless and
 * Tenang packs, and the offline `tenang audit` in its directory passes every rule, P1 (each runbook
 * its alarms and its job type link to is a page of the app's runbooks/) and P2 (each is drilled)
 * among them; `tenang runbooks --check` finds the pages init wrote to be what the app's own
 * declaration gives (~35 s).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCaptured } from '../../bin/tenang';
import { RUNBOOK } from '../../lib/infra/observability';
import { linkTenang, REPO, runInApp, tenangInApp } from '../helpers/linked-app';

jest.setTimeout(180_000);

describe('tenang init: a new app outside the repository', () => {
  const work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-init-')));
  const app = path.join(work, 'my-app');
  let written: {
    dir: string;
    tenang: string;
    files: { path: string; action: string }[];
    nextSteps: string[];
  };

  beforeAll(async () => {
    const { code, out, err } = await runCaptured([
      'init',
      app,
      '--yes',
      '--tenang-spec',
      `file:${REPO}`,
      '--json',
    ]);
    if (code !== 0) throw new Error(`tenang init failed (${code}):\n${err}`);
    written = JSON.parse(out) as typeof written;
    linkTenang(app);
  });

  afterAll(() => {
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('when initialized, it writes a package.json that installs tenang, its peers and the tools its scripts run', () => {
    // Act
    const manifest = JSON.parse(fs.readFileSync(path.join(app, 'package.json'), 'utf8')) as {
      name: string;
      scripts: Record<string, string>;
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    const own = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as {
      peerDependencies: Record<string, string>;
    };

    // Assess
    expect(written.dir).toBe(app);
    expect(written.files.every((f) => f.action === 'create')).toBe(true);
    expect(manifest.name).toBe('my-app');
    expect(manifest.scripts).toMatchObject({
      start: 'tenang local start',
      test: 'tsx --test test/*.test.ts',
      synth: 'cdk synth --quiet',
      deploy: 'cdk deploy',
    });
    expect(manifest.dependencies).toEqual({ ...own.peerDependencies, tenang: `file:${REPO}` });
    expect(Object.keys(manifest.devDependencies).sort()).toEqual([
      '@types/node',
      'aws-cdk',
      'tsx',
      'typescript',
    ]);
    expect(manifest.devDependencies.typescript).toMatch(/^~5\.9\./);
    expect(written.nextSteps[0]).toBe(`cd ${app} && npm install && npm test && npm start`);
  });

  it('when its own checks run, it type-checks and its unit tests pass', () => {
    // Act
    const tsc = runInApp(app, path.join(app, 'node_modules', '.bin', 'tsc'), [
      '--noEmit',
      '-p',
      '.',
      // The installed copy has no dist/: its types are its sources, as tsx and esbuild load them.
      '--customConditions',
      'tenang-source',
    ]);
    const test = runInApp(app, 'npm', ['test']);

    // Assess
    expect({ code: tsc.code, out: tsc.out }).toEqual({ code: 0, out: '' });
    expect(test.code).toBe(0);
    expect(test.out).toMatch(/# pass 4\b/);
    expect(test.out).toMatch(/# fail 0\b/);
  });

  it('when synthesized with cdk synth, it passes every nag pack and its template carries its declaration', () => {
    // Act
    const synth = runInApp(app, path.join(app, 'node_modules', '.bin', 'cdk'), ['synth', '--quiet']);

    // Assess
    expect({ code: synth.code, err: synth.code === 0 ? '' : synth.err }).toEqual({ code: 0, err: '' });
    const report = JSON.parse(
      fs.readFileSync(path.join(app, 'cdk.out', 'validation-report.json'), 'utf8'),
    ) as {
      pluginReports: { violations: unknown[] }[];
    };
    expect(report.pluginReports.flatMap((r) => r.violations)).toEqual([]);
    const template = JSON.parse(
      fs.readFileSync(path.join(app, 'cdk.out', 'tenang-dev.template.json'), 'utf8'),
    ) as {
      Metadata: Record<string, string>;
      Resources: Record<string, { Type: string; Properties?: { QueueName?: string } }>;
    };
    expect(JSON.parse(template.Metadata['tenang:pipeline'] ?? '{}')).toMatchObject({
      jobTypes: [{ name: 'report.generate', runbook: 'report-generate' }],
    });
    const queues = Object.values(template.Resources)
      .filter((r) => r.Type === 'AWS::SQS::Queue')
      .map((r) => r.Properties?.QueueName);
    expect(queues).toEqual(
      expect.arrayContaining(['tenang-dev-report-generate', 'tenang-dev-report-generate-dlq']),
    );
  });

  it('when audited offline in its directory, every rule passes, P1 with pages of its own runbooks/ and P2 with drills', () => {
    // Act
    const audit = tenangInApp(app, ['audit', '--json']);

    // Assess
    expect({ code: audit.code, err: audit.code === 0 ? '' : audit.err }).toEqual({ code: 0, err: '' });
    const result = JSON.parse(audit.out) as {
      source: string;
      failed: boolean;
      items: { ruleId: string; status: string; why: string }[];
    };
    expect(result.source).toBe(`synthesized app ${app} (tenang-dev)`);
    expect(result.items.filter((i) => i.status === 'fail')).toEqual([]);
    const p1 = result.items.find((i) => i.ruleId === 'Tenang-P1-Runbook');
    const p2 = result.items.find((i) => i.ruleId === 'Tenang-P2-Drill');
    expect({ p1: p1?.status, p2: p2?.status }).toEqual({ p1: 'pass', p2: 'pass' });
    // Found in the app itself, not among tenang's pages in node_modules.
    expect(p1?.why).not.toContain("tenang's pages");
    for (const page of [...Object.values(RUNBOOK), 'report-generate'])
      expect(fs.existsSync(path.join(app, 'runbooks', `${page}.md`))).toBe(true);
    expect(p2?.why).toContain('runbooks/report-generate.md is drilled by');
  });

  it('when its runbooks are checked against its own declaration, they are up to date', () => {
    // Act
    const check = tenangInApp(app, ['runbooks', '--check', '--json']);

    // Assess
    expect({ code: check.code, err: check.code === 0 ? '' : check.err }).toEqual({ code: 0, err: '' });
    const plan = JSON.parse(check.out) as { outOfDate: string[]; pages: { file: string; action: string }[] };
    expect(plan.outOfDate).toEqual([]);
    expect(plan.pages.map((p) => p.action).every((a) => a === 'unchanged')).toBe(true);
    expect(plan.pages.map((p) => p.file).sort()).toEqual(
      written.files
        .filter((f) => f.path.startsWith('runbooks/'))
        .map((f) => f.path.replace('runbooks/', ''))
        .sort(),
    );
  });
});
