/**
 * A cache of `cdk synth`'s emulator-target cloud assembly, keyed by everything the synthesis
 * reads: the app's sources (every file under the project but dependencies and outputs), the
 * context arguments and the environment the cdk CLI passes on (CDK_*, AWS_REGION,
 * AWS_DEFAULT_REGION, TENANG_* but the emulator's port). A platform started again on unchanged
 * sources copies the assembly instead of synthesizing: a synthesis bundles every function with
 * esbuild and runs cdk-nag, about 20 s of a quiet 2-core machine, and `npm test` starts a
 * platform more than a dozen times. The emulator's endpoint is not part of the synthesis (the
 * template names no endpoint; `cdk deploy` reads it), so platforms on different emulators share
 * an entry. What tenang and its operators write into the project (run reports, `tenang-audit/`
 * logs of `tenang cache`/`tenang dlq`, logs, packed tarballs) is not a source either: an
 * incident command run between two starts must not cost a synthesis. Two platforms that ask for
 * the same missing entry at once synthesize it once: the second waits for the first's (a lock
 * file beside the entry) and copies it. Set TENANG_SYNTH_CACHE=0 to synthesize every time.
 */
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Directories never read for the key: dependencies, build and run outputs, VCS. */
const SKIPPED_DIRS = new Set([
  'node_modules',
  '.git',
  '.tenang',
  'cdk.out',
  'dist',
  'reports',
  'coverage',
  // The operator commands' audit logs (lib/ops/cache/audit.ts, lib/ops/dlq/session.ts).
  'tenang-audit',
]);
/** Files never read for the key: logs and packed tarballs, which no synthesis reads. */
const SKIPPED_FILE = /\.(log|tgz)$/;
/** How long a synthesis of the same entry by another process is waited for before this one synthesizes. */
const LOCK_WAIT_MS = 10 * 60_000;
/** How often the waiting process looks for the entry. */
const LOCK_POLL_MS = 250;
/** Entries kept; older ones are removed when a new one is written. */
const KEPT_ENTRIES = 4;
/** Environment variables that differ between platforms without changing the synthesis. */
const IGNORED_ENV = new Set(['TENANG_MOTO_PORT']);

/** Every file under `root` the synthesis may read, sorted, as paths relative to it. */
function sourceFiles(root: string): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) walk(path.join(dir, entry.name));
      } else if (entry.isFile() && !SKIPPED_FILE.test(entry.name)) {
        files.push(path.relative(root, path.join(dir, entry.name)));
      }
    }
  };
  walk(root);
  return files.sort();
}

/** The key of a synthesis of `projectRoot` with `args` under `env`. */
export function synthKey(
  projectRoot: string,
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify(args));
  const relevant = Object.entries(env)
    .filter(
      ([k, v]) =>
        v !== undefined &&
        !IGNORED_ENV.has(k) &&
        (k.startsWith('CDK_') || k.startsWith('TENANG_') || k === 'AWS_REGION' || k === 'AWS_DEFAULT_REGION'),
    )
    .sort(([a], [b]) => a.localeCompare(b));
  hash.update(JSON.stringify(relevant));
  for (const file of sourceFiles(projectRoot)) {
    hash.update(file);
    hash.update('\0');
    hash.update(fs.readFileSync(path.join(projectRoot, file)));
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 32);
}

/** Whether the cache is on: TENANG_SYNTH_CACHE=0 turns it off. */
export function synthCacheEnabled(env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  return env.TENANG_SYNTH_CACHE !== '0';
}

/**
 * Puts the assembly of `key` into `assemblyDir`: copied from the cache when it holds it (returns
 * 'hit'); otherwise `synth(dir)` writes it into a scratch directory that becomes the entry, so a
 * failed or interrupted synthesis never leaves a partial one ('miss').
 */
export async function withSynthCache(
  projectRoot: string,
  key: string,
  assemblyDir: string,
  synth: (outputDir: string) => Promise<void>,
): Promise<'hit' | 'miss'> {
  const cacheDir = path.join(projectRoot, '.tenang', 'synth-cache');
  const entry = path.join(cacheDir, key);
  fs.rmSync(assemblyDir, { recursive: true, force: true });
  const cached = (): boolean => fs.existsSync(path.join(entry, 'manifest.json'));
  if (cached()) return copyHit(entry, assemblyDir);
  fs.mkdirSync(cacheDir, { recursive: true });
  // Another platform synthesizing the same sources: wait for its entry rather than synthesize too.
  const lock = `${entry}.lock`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  while (!tryLock(lock)) {
    if (cached()) return copyHit(entry, assemblyDir);
    // Its holder died (a killed start) or takes too long: synthesize without it.
    if (Date.now() > deadline || !lockHolderAlive(lock) || lockAgeMs(lock) > LOCK_WAIT_MS) break;
    await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
  }
  try {
    if (cached()) return copyHit(entry, assemblyDir);
    const scratch = path.join(cacheDir, `.partial-${randomBytes(6).toString('hex')}`);
    try {
      await synth(scratch);
      fs.cpSync(scratch, assemblyDir, { recursive: true });
      try {
        fs.renameSync(scratch, entry);
      } catch {
        // Another platform wrote the same entry meanwhile: keep theirs.
      }
      prune(cacheDir, entry);
      return 'miss';
    } finally {
      fs.rmSync(scratch, { recursive: true, force: true });
    }
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

function copyHit(entry: string, assemblyDir: string): 'hit' {
  fs.cpSync(entry, assemblyDir, { recursive: true });
  return 'hit';
}

/** Creates `lock` if no one holds it; answers whether this process now does. */
function tryLock(lock: string): boolean {
  try {
    fs.writeFileSync(lock, String(process.pid), { flag: 'wx' });
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/** Whether the process named in `lock` still runs (a lock just created, its pid not yet readable, counts as held). */
function lockHolderAlive(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(fs.readFileSync(lock, 'utf8'));
  } catch {
    return true;
  }
  if (!Number.isInteger(pid) || pid <= 0) return lockAgeMs(lock) < 5_000;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Age of `lock`, ms; 0 once it is gone. */
function lockAgeMs(lock: string): number {
  try {
    return Date.now() - fs.statSync(lock).mtimeMs;
  } catch {
    return 0;
  }
}

/** Removes all but the KEPT_ENTRIES newest entries (and `keep`), and leftovers of killed syntheses. */
function prune(cacheDir: string, keep: string): void {
  const dirs = fs.readdirSync(cacheDir, { withFileTypes: true }).filter((e) => e.isDirectory());
  // A synthesis killed with its process leaves its scratch directory: gone after an hour.
  for (const e of dirs.filter((d) => d.name.startsWith('.partial-'))) {
    const dir = path.join(cacheDir, e.name);
    if (Date.now() - fs.statSync(dir).mtimeMs > 3_600_000) fs.rmSync(dir, { recursive: true, force: true });
  }
  const entries = dirs
    .filter((e) => !e.name.startsWith('.partial-'))
    .map((e) => ({ dir: path.join(cacheDir, e.name), at: fs.statSync(path.join(cacheDir, e.name)).mtimeMs }))
    .sort((a, b) => b.at - a.at);
  for (const old of entries.slice(KEPT_ENTRIES)) {
    if (old.dir !== keep) fs.rmSync(old.dir, { recursive: true, force: true });
  }
}
