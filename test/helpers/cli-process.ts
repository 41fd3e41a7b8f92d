/** The repository's entry points run as a user runs them: child processes through tsx. */
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';

/** The repository root (cwd of every child). */
export const ROOT = path.resolve(__dirname, '..', '..');
/** The tsx launcher `npx tsx` runs. */
export const TSX = path.join(ROOT, 'node_modules', '.bin', 'tsx');

/** What a finished child printed. */
export interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Starts `tsx <script> args` from the repository root with exactly `env` (plus PATH). */
export function spawnTsx(
  script: string,
  args: readonly string[],
  env: Readonly<Record<string, string>>,
  opts: { readonly detached?: boolean } = {},
): ChildProcess {
  return spawn(TSX, [script, ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: opts.detached,
  });
}

/** Runs `tsx bin/tenang.ts args` with exactly `env` (plus PATH) and waits for it to end. */
export function runTenang(args: readonly string[], env: Readonly<Record<string, string>>): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawnTsx('bin/tenang.ts', args, env);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
