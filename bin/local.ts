/**
 * Local platform CLI (`tsx bin/local.ts <command>`): brings up moto and Redis, reusing what runs.
 *   up                    keep the environment running until Ctrl-C; prints `export` lines
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
import { startLocalPipeline } from '../lib/local/start';

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

/** `up`: start the environment, print it, wait for SIGINT/SIGTERM, stop what was started. */
async function up(): Promise<number> {
  const env = await startLocalEnv({ log });
  process.stdout.write(describeEnv(env));
  log('ready; press Ctrl-C to stop');
  // Reused servers are not our children, so something must keep the event loop alive.
  const keepAlive = setInterval(() => undefined, 60_000);
  await new Promise<void>((resolve) => {
    onSignal = () => resolve();
  });
  clearInterval(keepAlive);
  log(env.started.length > 0 ? `stopping ${env.started.join(', ')}` : 'nothing to stop');
  await env.stop();
  return 0;
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

function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
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
    .description('start the local environment and keep it running until Ctrl-C')
    .action(async () => {
      exitCode = await up();
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
