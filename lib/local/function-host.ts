/**
 * Runs a deployed function's bundle locally the way the Lambda service does: each instance is a
 * child process (an execution environment) that loads the bundle once and serves one invocation
 * at a time, with the function's deployed environment plus the Lambda and endpoint variables, a
 * Lambda-like context and the function timeout enforced by killing the instance. A crash is a
 * real process dying.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import * as path from 'node:path';

/** What the host needs to run one function. */
export interface FunctionSpec {
  /** Deployed function name (AWS_LAMBDA_FUNCTION_NAME). */
  readonly name: string;
  /** The bundled entry file (index.mjs in the cdk.out asset). */
  readonly bundleFile: string;
  /** Exported handler name (`index.handler` → `handler`). */
  readonly handlerName: string;
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  /** The deployed environment (from GetFunctionConfiguration). */
  readonly environment: Readonly<Record<string, string>>;
}

/**
 * The outcome of one invocation, as the Lambda service sees it. `durationMs` is the whole
 * invocation as the caller waits for it (an instance's start on a cold start, the IPC both ways);
 * `handlerMs`, where the handler returned or threw, its own time in the instance, from its call to
 * its promise settling (what Lambda reports and bills as Duration), and `handlerCpuMs` the CPU
 * time the instance's process spent meanwhile (user and system).
 */
export type InvokeResult =
  | {
      readonly status: 'ok';
      readonly result: unknown;
      readonly durationMs: number;
      readonly handlerMs?: number;
      readonly handlerCpuMs?: number;
      readonly coldStart: boolean;
    }
  | {
      readonly status: 'error' | 'timeout' | 'crash' | 'init-error';
      readonly errorType: string;
      readonly errorMessage: string;
      readonly durationMs: number;
      readonly handlerMs?: number;
      readonly handlerCpuMs?: number;
      readonly coldStart: boolean;
    };

/** Options of one invocation. */
export interface InvokeOptions {
  /** Points where this invocation's instance crashes (TENANG_CRASH_POINTS). @default none */
  readonly crashPoints?: readonly string[];
  /** Variables this invocation's instance gets on top of the deployed ones (the platform's time compression). @default none */
  readonly environment?: Readonly<Record<string, string>>;
}

type ChildMessage =
  | { type: 'ready'; initMs: number }
  | { type: 'init-error'; message: string }
  | { type: 'result'; requestId: string; result: unknown; handlerMs: number; handlerCpuMs: number }
  | {
      type: 'error';
      requestId: string;
      errorType: string;
      errorMessage: string;
      handlerMs: number;
      handlerCpuMs: number;
    };

interface Instance {
  readonly child: ChildProcess;
  /** Crash points and variables it was started with: an instance serves only invocations asking for the same. */
  readonly injectionKey: string;
  readonly ready: Promise<{ ok: true } | { ok: false; message: string }>;
  busy: boolean;
  dead: boolean;
}

const RUNTIME = path.join(__dirname, 'runtime', 'lambda-runtime.mjs');

/** One function's pool of local execution environments. */
export class FunctionHost {
  private readonly idle: Instance[] = [];
  private readonly all = new Set<Instance>();

  public constructor(
    public readonly spec: FunctionSpec,
    /** Variables every instance gets on top of the deployed ones (endpoints, credentials). */
    private readonly endpointEnv: Readonly<Record<string, string>>,
    /** Receives every line the function writes (logs, EMF metrics). */
    private readonly onOutput: (line: string, fn: string) => void = () => undefined,
    /** Node.js options every instance starts with (modules to preload, for example). @default none */
    private readonly execArgv: readonly string[] = [],
  ) {}

  /** Invokes the function once; never throws for a function failure. */
  public async invoke(event: unknown, opts: InvokeOptions = {}): Promise<InvokeResult> {
    const crashSpec = (opts.crashPoints ?? []).join(',');
    const extra = opts.environment ?? {};
    const started = Date.now();
    const key = `${crashSpec}|${JSON.stringify(extra)}`;
    let instance = this.takeIdle(key);
    const coldStart = instance === undefined;
    instance ??= this.spawn(crashSpec, extra, key);
    instance.busy = true;
    const ready = await instance.ready;
    if (!ready.ok) {
      this.discard(instance);
      return {
        status: 'init-error',
        errorType: 'Runtime.InitError',
        errorMessage: ready.message,
        durationMs: Date.now() - started,
        coldStart,
      };
    }
    const result = await this.run(instance, event, started, coldStart);
    if (instance.dead) this.discard(instance);
    else {
      instance.busy = false;
      this.idle.push(instance);
    }
    return result;
  }

  /**
   * Stops every instance: kills each process that has not exited, including one already given up
   * as dead (unreachable, its exit not seen yet), so none outlives the host.
   */
  public async stop(): Promise<void> {
    const exits = [...this.all].map(
      (i) =>
        new Promise<void>((resolve) => {
          if (i.child.exitCode !== null || i.child.signalCode !== null) return resolve();
          i.child.once('exit', () => resolve());
          i.child.kill('SIGKILL');
        }),
    );
    await Promise.all(exits);
    this.idle.length = 0;
    this.all.clear();
  }

  /** Instances alive (for tests and the status view). */
  public instanceCount(): number {
    return [...this.all].filter((i) => !i.dead).length;
  }

  private takeIdle(injectionKey: string): Instance | undefined {
    const index = this.idle.findIndex((i) => !i.dead && i.injectionKey === injectionKey);
    if (index < 0) return undefined;
    return this.idle.splice(index, 1)[0];
  }

  private spawn(crashSpec: string, extra: Readonly<Record<string, string>>, injectionKey: string): Instance {
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      ...this.spec.environment,
      ...this.endpointEnv,
      ...extra,
      AWS_LAMBDA_FUNCTION_NAME: this.spec.name,
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(this.spec.memoryMb),
      AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
      AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${this.spec.name}`,
      _HANDLER: `index.${this.spec.handlerName}`,
      LAMBDA_TASK_ROOT: path.dirname(this.spec.bundleFile),
      TZ: 'UTC',
    };
    if (crashSpec.length > 0) env.TENANG_CRASH_POINTS = crashSpec;
    const child = fork(RUNTIME, [this.spec.bundleFile, this.spec.handlerName], {
      env,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      execArgv: [...this.execArgv],
    });
    const forward = (chunk: Buffer): void => {
      for (const line of chunk.toString().split('\n'))
        if (line.trim().length > 0) this.onOutput(line, this.spec.name);
    };
    child.stdout?.on('data', forward);
    child.stderr?.on('data', forward);
    const instance: Instance = {
      child,
      injectionKey,
      busy: false,
      dead: false,
      ready: new Promise((resolve) => {
        const onMessage = (m: ChildMessage): void => {
          if (m.type === 'ready') resolve({ ok: true });
          if (m.type === 'init-error') resolve({ ok: false, message: m.message });
        };
        child.on('message', onMessage);
        child.once('exit', (code, signal) =>
          resolve({ ok: false, message: `exited during init (${signal ?? code})` }),
        );
      }),
    };
    child.once('exit', () => {
      instance.dead = true;
    });
    this.all.add(instance);
    return instance;
  }

  private run(
    instance: Instance,
    event: unknown,
    started: number,
    coldStart: boolean,
  ): Promise<InvokeResult> {
    const requestId = randomUUID();
    const timeoutMs = this.spec.timeoutSeconds * 1000;
    return new Promise((resolve) => {
      const { child } = instance;
      const finish = (result: InvokeResult): void => {
        clearTimeout(timer);
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(result);
      };
      const onMessage = (m: ChildMessage): void => {
        if (m.type === 'result' && m.requestId === requestId) {
          finish({
            status: 'ok',
            result: m.result,
            durationMs: Date.now() - started,
            handlerMs: m.handlerMs,
            handlerCpuMs: m.handlerCpuMs,
            coldStart,
          });
        } else if (m.type === 'error' && m.requestId === requestId) {
          finish({
            status: 'error',
            errorType: m.errorType,
            errorMessage: m.errorMessage,
            durationMs: Date.now() - started,
            handlerMs: m.handlerMs,
            handlerCpuMs: m.handlerCpuMs,
            coldStart,
          });
        }
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
        instance.dead = true;
        finish({
          status: 'crash',
          errorType: 'Runtime.ExitError',
          errorMessage: `the execution environment exited (${signal ?? `code ${code}`})`,
          durationMs: Date.now() - started,
          coldStart,
        });
      };
      // The Lambda service stops a function at its timeout; so do we, by killing the instance.
      const timer = setTimeout(() => {
        instance.dead = true;
        child.off('exit', onExit);
        child.kill('SIGKILL');
        finish({
          status: 'timeout',
          errorType: 'Sandbox.Timedout',
          errorMessage: `Task timed out after ${this.spec.timeoutSeconds.toFixed(2)} seconds`,
          durationMs: Date.now() - started,
          coldStart,
        });
      }, timeoutMs);
      child.on('message', onMessage);
      child.once('exit', onExit);
      // The process may have died since it was last idle (killed from outside: its exit event is
      // not handled yet): the send then fails, and the invocation ends as a crash, not a throw.
      if (!child.connected) {
        onExit(child.exitCode, child.signalCode);
        return;
      }
      child.send({ type: 'invoke', requestId, event, timeoutMs }, (error) => {
        if (error !== null) onExit(child.exitCode, child.signalCode);
      });
    });
  }

  private discard(instance: Instance): void {
    instance.dead = true;
    if (instance.child.exitCode === null) instance.child.kill('SIGKILL');
    this.all.delete(instance);
  }
}
