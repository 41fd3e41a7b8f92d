/**
 * Local platform CLI (`tsx bin/local.ts <command>`): brings up moto and Redis, reusing what runs.
 *   up                    deploy the pipeline on the local platform and keep it running until
 *                         Ctrl-C; prints the `export` lines that point `tenang` and curl at it
 *                         (`up --env-only`: only moto and Redis)
 *   run -- <cmd> [args]   run a command inside the environment, exit with its exit code
 *   start                 deploy the app into moto with cdk, run a scenario with a live status and
 *                         write its report (`npm start -- --scenario smoke --duration 30 --rate 2`)
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { Command, InvalidArgumentError } from 'commander';
import { LocalEnvError, startLocalEnv, type LocalEnv } from '../lib/local/env';
import { ProvisionError } from '../lib/local/provision';
import { SCENARIOS, ScenarioOptionsError } from '../lib/local/scenario';
import {
  printDeployment,
  renderOperatorEnvironment,
  shellQuote,
  startLocalPipeline,
  UP_SKUS,
  upLocalPipeline,
} from '../lib/local/start';

/** The command given to `run` could not be found. */
class CommandNotFoundError extends Error {
  override readonly name: string = 'CommandNotFoundError';
}

const log = (line: string): void => {
  process.stderr.write(`[local] ${line}\n`);
};

// Until a command takes signals over, a signal ends the process with the conventional code;
// process.exit runs lib/local's exit hook, which kills the servers started so far.
let onSignal: (signal: NodeJS.Signals) => void = (signal) => process.exit(signalExitCode(signal));
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => onSignal(signal));

/** `up --env-only`: start moto and Redis, print them, wait for SIGINT/SIGTERM, stop what was started. */
async function upEnvOnly(): Promise<number> {
  const env = await startLocalEnv({ log });
  process.stdout.write(describeEnv(env));
  log('ready; press Ctrl-C to stop');
  // Reused servers are not our children, so something must keep the event loop alive.
  const keepAlive = setInterval(() => undefined, 60_000);
  await untilSignal();
  clearInterval(keepAlive);
  log(env.started.length > 0 ? `stopping ${env.started.join(', ')}` : 'nothing to stop');
  await env.stop();
  return 0;
}

/**
 * `up`: deploy the pipeline on the local platform, print what another shell exports to operate
 * it, run until SIGINT/SIGTERM, then stop every function instance, server and emulator started.
 * A signal before it is up ends the process at once (the exit hook kills the servers started).
 */
async function up(opts: { stage: string; quiet?: boolean }): Promise<number> {
  const short = (fn: string): string => fn.replace(`tenang-${opts.stage}-`, '');
  const running = await upLocalPipeline({
    stage: opts.stage,
    log,
    // Like `sam local start-api`: the functions' log lines on the terminal, without the EMF metrics.
    onFunctionOutput:
      opts.quiet === true
        ? undefined
        : (line, fn) => {
            if (!line.includes('"_aws":')) process.stderr.write(`[${short(fn)}] ${line}\n`);
          },
  });
  let received: NodeJS.Signals | undefined;
  const stopped = untilSignal().then((signal) => (received = signal));
  try {
    const { platform } = running;
    await printDeployment(platform, (text) => process.stdout.write(text));
    const origin = (name: string): string =>
      platform.env.started.includes(name) ? 'started here' : 'reused';
    process.stdout.write(
      renderOperatorEnvironment(running.environment, {
        routes: platform.deployment.routes,
        notes: [
          `AWS endpoint: ${platform.env.endpoint} (moto, ${origin('moto')}), region ${platform.env.region}; Lambda API: ${platform.control.url} (the local control plane)`,
          `Redis: ${platform.env.redisUrl} (${running.redis === undefined ? 'REDIS_URL, not ours' : `started here, pid ${running.redis.pid ?? '?'}`}); stock of ${UP_SKUS.join(', ')} seeded`,
          `HTTP API: ${platform.api.url} (IAM authorization is not checked locally)`,
        ],
      }),
    );
    log(`ready: stage ${opts.stage} runs on the local platform; press Ctrl-C to stop`);
    await stopped;
    log('stopping every function, poller and server this run started…');
  } finally {
    // A second signal while stopping ends the process at once; a stop that hangs still ends.
    onSignal = (signal) => process.exit(signalExitCode(signal));
    setTimeout(() => process.exit(signalExitCode(received ?? 'SIGTERM')), STOP_DEADLINE_MS).unref();
    await running.stop();
  }
  log('stopped');
  return 0;
}

/** Resolves on the next SIGINT or SIGTERM. */
function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    onSignal = resolve;
  });
}

/** `run`: run `command args` with the environment's variables, then stop what was started. */
async function run(command: string, args: readonly string[]): Promise<number> {
  const env = await startLocalEnv({ log });
  try {
    return await runChild(command, args, { ...process.env, ...env.env });
  } finally {
    await env.stop();
  }
}

function runChild(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit', env });
    onSignal = (signal) => child.kill(signal);
    child.on('error', (error: NodeJS.ErrnoException) =>
      reject(error.code === 'ENOENT' ? new CommandNotFoundError(`${command}: command not found`) : error),
    );
    child.on('exit', (code, signal) => resolve(code ?? (signal ? signalExitCode(signal) : 1)));
  });
}

/** `export` lines a shell can source, then the endpoints as comments. */
function describeEnv(env: LocalEnv): string {
  const origin = (name: string): string => (env.started.includes(name) ? 'started here' : 'reused');
  const exports = Object.entries(env.env)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => `export ${name}=${shellQuote(value)}`);
  return [
    ...exports,
    `# AWS endpoint: ${env.endpoint} (${origin('moto')}), region ${env.region}`,
    `# Redis: ${env.redisUrl} (${origin('redis')})`,
    '',
  ].join('\n');
}

/** `start`: deploy, run the scenario, report; the first Ctrl-C stops it cleanly, a second one at once. */
async function start(opts: {
  stage: string;
  scenario: string;
  duration?: number;
  rate?: number;
}): Promise<number> {
  const controller = new AbortController();
  let interruptedBy: NodeJS.Signals | undefined;
  onSignal = (signal) => {
    if (interruptedBy !== undefined) process.exit(signalExitCode(signal));
    interruptedBy = signal;
    log(`${signal}: stopping everything this run started (again to force)…`);
    controller.abort();
    // A stop that hangs still ends; the exit hook kills the servers started here.
    setTimeout(() => process.exit(signalExitCode(signal)), STOP_DEADLINE_MS).unref();
  };
  const outcome = await startLocalPipeline({
    stage: opts.stage,
    scenario: opts.scenario,
    durationSeconds: opts.duration,
    ratePerSecond: opts.rate,
    log,
    out: (text) => process.stdout.write(text),
    tty: process.stdout.isTTY === true,
    columns: process.stdout.columns,
    signal: controller.signal,
  });
  if (outcome.interrupted || interruptedBy !== undefined) return signalExitCode(interruptedBy ?? 'SIGINT');
  return outcome.report?.ok === true ? 0 : 1;
}

/** How long a Ctrl-C'd run may take to stop before the process exits anyway. */
const STOP_DEADLINE_MS = 30_000;

/** Parses a positive number option. */
function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a positive number');
  return n;
}

function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

/** The one error funnel: a message and an exit code for every failure. */
function reportError(error: unknown): number {
  if (error instanceof LocalEnvError) {
    log(`error: ${error.message}`);
    return 1;
  }
  if (error instanceof ProvisionError) {
    log(`error: ${error.message}`);
    return 1;
  }
  if (error instanceof ScenarioOptionsError) {
    log(`error: ${error.message}`);
    return 2;
  }
  if (error instanceof CommandNotFoundError) {
    log(`error: ${error.message}`);
    return 127;
  }
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  return 70; // EX_SOFTWARE: a bug, shown in full
}

async function main(argv: readonly string[]): Promise<number> {
  let exitCode = 0;
  const program = new Command('local')
    .description('Run moto and Redis locally for tenang (reuses servers that already run).')
    .enablePositionalOptions();
  program
    .command('up')
    .description(
      'deploy the pipeline on the local platform (moto, a redis-server of its own, cdk deploy, the functions, pollers and HTTP API) and keep it running until Ctrl-C; prints the `export` lines that point `tenang` and curl at it',
    )
    .option('--stage <name>', 'stage to deploy', 'dev')
    .option('--quiet', "don't print the functions' log lines")
    .option('--env-only', 'only moto and Redis, nothing deployed (what `run` gives a command)')
    .action(async (opts: { stage: string; quiet?: boolean; envOnly?: boolean }) => {
      exitCode = opts.envOnly === true ? await upEnvOnly() : await up(opts);
    });
  program
    .command('run')
    .description('run a command inside the local environment: run -- <command> [args...]')
    .argument('<command>', 'command to run')
    .argument('[args...]', 'its arguments')
    .passThroughOptions()
    .action(async (command: string, args: string[]) => {
      exitCode = await run(command, args);
    });
  program
    .command('start')
    .description(
      'bring up moto and a Redis of its own, cdk deploy the app into moto, run a scenario with a live status, write its report to reports/<timestamp>/, stop; exits 1 when an invariant fails',
    )
    .option('--stage <name>', 'stage to deploy', 'dev')
    .option('--scenario <name>', `scenario to run: ${Object.keys(SCENARIOS).join(', ')}`, 'default')
    .option('--duration <seconds>', "seconds of traffic (default: the scenario's)", positiveNumber)
    .option('--rate <payments/s>', "payments per second (default: the scenario's)", positiveNumber)
    .action(async (opts: { stage: string; scenario: string; duration?: number; rate?: number }) => {
      exitCode = await start(opts);
    });
  await program.parseAsync(argv);
  return exitCode;
}

main(process.argv).then(
  (code) => process.exit(code),
  (error: unknown) => process.exit(reportError(error)),
);
