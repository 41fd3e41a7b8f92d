/**
 * A scratch copy of the repository (sources only; node_modules linked) for tests that change the
 * app and deploy it to a local platform of their own.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export const REPO = path.resolve(__dirname, '..', '..');

/** What a deployment of the app needs from the repository. */
const APP_ENTRIES = [
  'bin',
  'lib',
  'lambdas',
  'examples',
  'runbooks',
  'package.json',
  'package-lock.json',
  'cdk.json',
  'tsconfig.json',
] as const;

/** Copies the app into a fresh temporary directory and returns it. */
export function scratchCopy(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  for (const entry of APP_ENTRIES)
    // Timestamps kept: a lockfile newer than node_modules would make scripts/ensure-deps.mjs reinstall.
    fs.cpSync(path.join(REPO, entry), path.join(dir, entry), { recursive: true, preserveTimestamps: true });
  fs.symlinkSync(path.join(REPO, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
}

/** Files under `dir` whose content differs from the repository's (or that it lacks), relative paths. */
export function changedFiles(dir: string): string[] {
  const changed: string[] = [];
  const walk = (rel: string): void => {
    const abs = path.join(dir, rel);
    for (const entry of fs.readdirSync(abs, { withFileTypes: true })) {
      const child = path.join(rel, entry.name);
      if (entry.isSymbolicLink()) continue;
      if (entry.isDirectory()) walk(child);
      else {
        const original = path.join(REPO, child);
        if (
          !fs.existsSync(original) ||
          !fs.readFileSync(original).equals(fs.readFileSync(path.join(dir, child)))
        )
          changed.push(child);
      }
    }
  };
  for (const entry of APP_ENTRIES) {
    const abs = path.join(dir, entry);
    if (fs.statSync(abs).isDirectory()) walk(entry);
    else if (!fs.readFileSync(abs).equals(fs.readFileSync(path.join(REPO, entry)))) changed.push(entry);
  }
  return changed.sort();
}
