import { spawn, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';

const TAIL_LINES = 20;

/** Children still running, killed if the parent exits without stopping them. */
const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Kills every live child on process exit; `exit` listeners must be synchronous, hence SIGKILL. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of liveChildren) child.kill('SIGKILL');
  });
}

/** A server process started by the local environment; keeps the tail of its output for error messages. */
export class ChildServer {
  private readonly child: ChildProcess;
  private readonly tail: string[] = [];
  private readonly exited: Promise<void>;
  private failure: NodeJS.ErrnoException | undefined;
  private stopping: Promise<void> | undefined;

  /** Starts `command args` with its working directory in the temp dir, so it never writes into the project. */
  constructor(
    /** Short name used in messages and `LocalEnv.started` ("moto", "redis"). */
    readonly name: string,
    command: string,
    args: readonly string[],
  ) {
    installExitHook();
    this.child = spawn(command, args, { cwd: tmpdir(), stdio: ['ignore', 'pipe', 'pipe'] });
    liveChildren.add(this.child);
    // Always drain the pipes: moto logs every request, and a full pipe would block it.
    this.child.stdout?.on('data', (chunk: Buffer) => this.remember(chunk));
    this.child.stderr?.on('data', (chunk: Buffer) => this.remember(chunk));
    this.exited = new Promise((resolve) => {
      this.child.once('exit', () => resolve());
      this.child.once('error', (error: NodeJS.ErrnoException) => {
        this.failure = error;
        // A child that failed to spawn never emits 'exit'.
        if (this.child.pid === undefined) resolve();
      });
    });
    void this.exited.then(() => liveChildren.delete(this.child));
  }

  /** Process id, undefined when the command could not be spawned. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** The spawn error (ENOENT when the command does not exist), if any. */
  get spawnError(): NodeJS.ErrnoException | undefined {
    return this.failure;
  }

  /** Why the process is no longer running ("exited with code 1"), or undefined while it runs. */
  get exitReason(): string | undefined {
    if (this.failure && this.child.pid === undefined) return `could not be started (${this.failure.message})`;
    if (this.child.signalCode !== null) return `was killed by ${this.child.signalCode}`;
    if (this.child.exitCode !== null) return `exited with code ${this.child.exitCode}`;
    return undefined;
  }

  /** The last lines the process wrote to stdout and stderr. */
  get outputTail(): string {
    return this.tail.join('\n');
  }

  /** Sends SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. Idempotent. */
  stop(graceMs = 5000): Promise<void> {
    this.stopping ??= this.terminate(graceMs);
    return this.stopping;
  }

  private async terminate(graceMs: number): Promise<void> {
    if (this.exitReason !== undefined) return;
    this.child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const exitedInTime = await Promise.race([
      this.exited.then(() => true),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), graceMs);
      }),
    ]);
    clearTimeout(timer);
    if (!exitedInTime) {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }

  private remember(chunk: Buffer): void {
    const lines = chunk
      .toString('utf8')
      .split('\n')
      .filter((line) => line.trim() !== '');
    this.tail.push(...lines);
    this.tail.splice(0, Math.max(0, this.tail.length - TAIL_LINES));
  }
}
