/**
 * The local platform's two long runs, shared by tenang's checkout (`npm run local -- up`,
 * `npm start`: bin/local.ts) and an app's `tenang local up|start` (lib/ops/commands/local.ts):
 * `up` deploys and keeps running until Ctrl-C, printing the `export` lines for another shell;
 * `start` is the one-shot scenario run. Signals and the process's exit stay with bin/ (handed in
 * as LocalRunIo): only bin/ calls process.exit.
 */
import { constants } from 'node:os';
import { CommandFailedError, UsageError } from '../ops/cli-context';
import { cliPlace } from '../ops/cli-place';
import type { LocalRunRequest } from '../ops/commands/local';
import { LocalEnvError } from './errors';
import { localAppDirectory } from './project';
import { ProvisionError } from './provision';
import { ScenarioOptionsError } from './scenario';
import { printDeployment, renderOperatorEnvironment, startLocalPipeline, upLocalPipeline } from './start';

/** What a run needs of its process: output, progress, the signals and the way out. */
export interface LocalRunIo {
  /** stdout: the deployment, the `export` lines, the scenario's status and summary. */
  readonly out: (text: string) => void;
  /** stderr: one progress line. */
  readonly log: (line: string) => void;
  /** stderr as it is: one line a function printed. */
  readonly err: (line: string) => void;
  /** Routes SIGINT and SIGTERM to `handler` from now on, replacing the one before. */
  readonly onSignal: (handler: (signal: NodeJS.Signals) => void) => void;
  /** Ends the process at once (a second Ctrl-C, a stop that hangs); the exit hook kills the servers. */
  readonly exit: (code: number) => never;
  /** stdout is a terminal (the live status redraws in place). @default false */
  readonly tty?: boolean;
  readonly columns?: number;
  /** Where the hints' commands are seen from. @default cliPlace() */
  readonly cwd?: string;
}

/** How long a Ctrl-C'd run may take to stop before the process exits anyway. */
const STOP_DEADLINE_MS = 30_000;

/** The conventional exit code of a process ended by `signal` (128 + its number). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

/** Options of localUp. */
export interface LocalUpOptions {
  readonly stage: string;
  /** Don't print the functions' log lines. @default false */
  readonly quiet?: boolean;
  /** The app to deploy. @default the nearest cdk.json at or above the working directory */
  readonly projectRoot?: string;
}

/**
 * `up`: deploy the app on the local platform, print what another shell exports to operate it, run
 * until SIGINT/SIGTERM, then stop every function instance, server and emulator started. A signal
 * before it is up ends the process at once (the exit hook kills the servers started).
 */
export async function localUp(opts: LocalUpOptions, io: LocalRunIo): Promise<number> {
  io.onSignal((signal) => io.exit(signalExitCode(signal)));
  const short = (fn: string): string => fn.replace(`tenang-${opts.stage}-`, '');
  const running = await upLocalPipeline({
    stage: opts.stage,
    projectRoot: opts.projectRoot,
    log: io.log,
    // Like `sam local start-api`: the functions' log lines on the terminal, without the EMF metrics.
    onFunctionOutput:
      opts.quiet === true
        ? undefined
        : (line, fn) => {
            if (!line.includes('"_aws":')) io.err(`[${short(fn)}] ${line}`);
          },
  });
  let received: NodeJS.Signals | undefined;
  const stopped = new Promise<NodeJS.Signals>((resolve) => io.onSignal(resolve)).then(
    (signal) => (received = signal),
  );
  try {
    const { platform } = running;
    await printDeployment(platform, io.out);
    const origin = (name: string): string =>
      platform.env.started.includes(name) ? 'started here' : 'reused';
    io.out(
      renderOperatorEnvironment(
        running.environment,
        {
          routes: platform.deployment.routes,
          jobTypes: platform.config.jobTypes,
          notes: [
            `AWS endpoint: ${platform.env.endpoint} (moto, ${origin('moto')}), region ${platform.env.region}; Lambda API: ${platform.control.url} (the local control plane)`,
            `Redis: ${platform.env.redisUrl} (${running.redis === undefined ? 'REDIS_URL, not ours' : `started here, pid ${running.redis.pid ?? '?'}`})`,
            `HTTP API: ${platform.api.url} (IAM authorization is not checked locally)`,
          ],
        },
        cliPlace(io.cwd),
      ),
    );
    io.log(`ready: stage ${opts.stage} runs on the local platform; press Ctrl-C to stop`);
    // Reused servers are not our children: something must keep the event loop alive.
    const keepAlive = setInterval(() => undefined, 60_000);
    await stopped;
    clearInterval(keepAlive);
    io.log('stopping every function, poller and server this run started…');
  } finally {
    // A second signal while stopping ends the process at once; a stop that hangs still ends.
    io.onSignal((signal) => io.exit(signalExitCode(signal)));
    setTimeout(() => io.exit(signalExitCode(received ?? 'SIGTERM')), STOP_DEADLINE_MS).unref();
    await running.stop();
  }
  io.log('stopped');
  return 0;
}

/** Options of localStart. */
export interface LocalStartOptions {
  readonly stage: string;
  readonly scenario: string;
  /** Seconds of traffic. @default the scenario's */
  readonly duration?: number;
  /** Payments per second. @default the scenario's */
  readonly rate?: number;
  /** The app to deploy. @default the nearest cdk.json at or above the working directory */
  readonly projectRoot?: string;
}

/** `start`: deploy, run the scenario, report; the first Ctrl-C stops it cleanly, a second one at once. */
export async function localStart(opts: LocalStartOptions, io: LocalRunIo): Promise<number> {
  const controller = new AbortController();
  let interruptedBy: NodeJS.Signals | undefined;
  io.onSignal((signal) => {
    if (interruptedBy !== undefined) io.exit(signalExitCode(signal));
    interruptedBy = signal;
    io.log(`${signal}: stopping everything this run started (again to force)…`);
    controller.abort();
    // A stop that hangs still ends; the exit hook kills the servers started here.
    setTimeout(() => io.exit(signalExitCode(signal)), STOP_DEADLINE_MS).unref();
  });
  const outcome = await startLocalPipeline({
    stage: opts.stage,
    scenario: opts.scenario,
    durationSeconds: opts.duration,
    ratePerSecond: opts.rate,
    projectRoot: opts.projectRoot,
    log: io.log,
    out: io.out,
    tty: io.tty === true,
    columns: io.columns,
    signal: controller.signal,
  });
  if (outcome.interrupted || interruptedBy !== undefined) return signalExitCode(interruptedBy ?? 'SIGINT');
  return outcome.report?.ok === true ? 0 : 1;
}

/**
 * The local platform's known failures as the `tenang` CLI's errors (its funnel prints them without
 * a trace): a missing python3, moto, redis-server or cdk, a failed cdk step, bad scenario options.
 * Anything else is left as it is: a bug, shown in full.
 */
export function asCliError(error: unknown): unknown {
  if (error instanceof ScenarioOptionsError) return new UsageError(error.message);
  if (error instanceof LocalEnvError || error instanceof ProvisionError)
    return new CommandFailedError(error.message, { cause: error });
  return error;
}

/**
 * `tenang local`'s run (lib/ops/commands/local.ts) for the app of `cwd`: its nearest cdk.json,
 * where the assembly, caches and reports go; the local platform's known failures as CLI errors.
 */
export async function runLocalForCli(
  request: LocalRunRequest,
  io: LocalRunIo,
  cwd: string = process.cwd(),
): Promise<number> {
  try {
    const projectRoot = localAppDirectory(cwd);
    io.log(`app: ${projectRoot}`);
    return request.run === 'up'
      ? await localUp({ stage: request.stage, quiet: request.quiet, projectRoot }, io)
      : await localStart({ ...request, projectRoot }, io);
  } catch (error) {
    throw asCliError(error);
  }
}
