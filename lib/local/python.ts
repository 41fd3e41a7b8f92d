import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { LocalEnvError } from './errors';

/** The moto release the project is measured against (README: Quick start, Known emulator issues). */
export const MOTO_REQUIREMENT = 'moto[server]==5.2.1';

/** Where to look for a Python that can run moto, and whether to install moto when none can. */
export interface PythonSearch {
  /** Python command to use; when unset, `<projectRoot>/.venv/bin/python` if it exists, then `python3`. */
  readonly python?: string;
  /** Project root holding `.venv`. */
  readonly projectRoot: string;
  /** Try `python -m venv .venv` + pip install when moto is missing. */
  readonly installMoto: boolean;
  /** Progress messages. */
  readonly log: (line: string) => void;
}

type CommandResult =
  | { readonly kind: 'missing' }
  | {
      readonly kind: 'exited';
      readonly code: number | null;
      readonly stdout: string;
      readonly stderr: string;
    };

type PythonStatus =
  | { readonly kind: 'missing'; readonly command: string }
  | {
      readonly kind: 'no-moto';
      readonly command: string;
      readonly executable: string;
      /** The last line the failed check printed to stderr (or why it was stopped), for the error. */
      readonly said: string;
    }
  | { readonly kind: 'ready'; readonly command: string; readonly executable: string };

// Prints the real interpreter path first (shims and wrappers resolved) so the server is spawned
// directly and SIGTERM reaches it, then proves `moto.server` and its Flask dependencies import.
const INSPECT_SCRIPT =
  'import sys; sys.stdout.write(sys.executable + "\\n"); sys.stdout.flush(); import moto.server';

const INSPECT_TIMEOUT_MS = 60_000;

/** Returns the path of a Python interpreter that can run `python -m moto.server`, installing moto if allowed. */
export async function findMotoPython(search: PythonSearch): Promise<string> {
  const venvPython = path.join(search.projectRoot, '.venv', 'bin', 'python');
  const candidates = search.python
    ? [search.python]
    : [...(existsSync(venvPython) ? [venvPython] : []), 'python3'];
  const statuses: PythonStatus[] = [];
  for (const command of candidates) {
    let status = await inspectPython(command);
    // A failed check is asked once more before moto counts as missing: a version manager's shim
    // (pyenv's python3 is a bash script running several more) can fail on its own under a loaded
    // machine, and a wrong verdict here means a pip install that cannot succeed without PyPI.
    if (status.kind === 'no-moto') status = await inspectPython(command);
    if (status.kind === 'ready') return status.executable;
    statuses.push(status);
  }
  const basePython = statuses.find((status) => status.kind === 'no-moto');
  if (basePython === undefined) throw pythonMissingError(candidates);
  if (!search.installMoto) throw motoMissingError(basePython.command, basePython.said);
  return installMotoIntoVenv(basePython, search);
}

async function inspectPython(command: string): Promise<PythonStatus> {
  const result = await runCommand(command, ['-c', INSPECT_SCRIPT], INSPECT_TIMEOUT_MS);
  if (result.kind === 'missing') return { kind: 'missing', command };
  const executable = result.stdout.split('\n')[0]?.trim() || command;
  if (result.code === 0) return { kind: 'ready', command, executable };
  const said =
    result.code === null
      ? `no answer in ${INSPECT_TIMEOUT_MS / 1000} s`
      : (result.stderr.trim().split('\n').pop() ?? '');
  return { kind: 'no-moto', command, executable, said };
}

async function installMotoIntoVenv(
  base: Extract<PythonStatus, { kind: 'no-moto' }>,
  search: PythonSearch,
): Promise<string> {
  const basePython = base.command;
  const venvDir = path.join(search.projectRoot, '.venv');
  const venvPython = path.join(venvDir, 'bin', 'python');
  const created = !existsSync(venvPython);
  search.log(`moto is not installed; trying to install ${MOTO_REQUIREMENT} into ${venvDir}`);
  try {
    if (created) await mustSucceed(basePython, ['-m', 'venv', venvDir], 120_000);
    // Short network timeouts and no retries: an unreachable package index must fail in seconds.
    await mustSucceed(
      venvPython,
      [
        '-m',
        'pip',
        'install',
        '--disable-pip-version-check',
        '--timeout',
        '5',
        '--retries',
        '0',
        MOTO_REQUIREMENT,
      ],
      600_000,
    );
  } catch (error) {
    // Leave no half-made virtualenv behind, but never remove one the user made.
    if (created) await rm(venvDir, { recursive: true, force: true });
    throw motoMissingError(basePython, base.said, error);
  }
  const status = await inspectPython(venvPython);
  if (status.kind !== 'ready')
    throw motoMissingError(basePython, status.kind === 'no-moto' ? status.said : '');
  return status.executable;
}

async function mustSucceed(command: string, args: readonly string[], timeoutMs: number): Promise<void> {
  const result = await runCommand(command, args, timeoutMs);
  if (result.kind === 'missing') throw new Error(`${command} not found`);
  if (result.code !== 0) {
    const lastLine = result.stderr.trim().split('\n').pop() ?? '';
    throw new Error(`'${args.slice(0, 3).join(' ')}' exited with code ${result.code}: ${lastLine}`);
  }
}

/** Runs a command to completion, killing it after `timeoutMs` (then `code` is null). */
function runCommand(command: string, args: readonly string[], timeoutMs: number): Promise<CommandResult> {
  return new Promise((resolve) => {
    // Not spawn's `timeout` option: its timer outlives a command that fails to spawn.
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const finish = (result: CommandResult): void => {
      clearTimeout(timer);
      resolve(result);
    };
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', (error: NodeJS.ErrnoException) =>
      finish(
        error.code === 'ENOENT'
          ? { kind: 'missing' }
          : { kind: 'exited', code: null, stdout, stderr: `${stderr}\n${error.message}` },
      ),
    );
    child.on('close', (code) => finish({ kind: 'exited', code, stdout, stderr }));
  });
}

function pythonMissingError(tried: readonly string[]): LocalEnvError {
  return new LocalEnvError(
    `Python 3 was not found (tried: ${tried.join(', ')}); the local AWS emulator (moto) needs it. ` +
      `Install it (Debian/Ubuntu: apt-get install python3 python3-venv), then moto: ` +
      `python3 -m pip install '${MOTO_REQUIREMENT}'. ` +
      `Or set AWS_ENDPOINT_URL to an emulator that is already running.`,
  );
}

function motoMissingError(python: string, said: string, cause?: unknown): LocalEnvError {
  const check = said === '' ? '' : ` (${python} -c 'import moto.server': ${said})`;
  const why = cause instanceof Error ? ` Installing it into .venv failed (${cause.message}).` : '';
  return new LocalEnvError(
    `moto, the local AWS emulator, is not installed for ${python}${check}.${why} ` +
      `Install it with: ${python} -m pip install '${MOTO_REQUIREMENT}' ` +
      `(or set AWS_ENDPOINT_URL to an emulator that is already running).`,
    { cause },
  );
}
