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
import { Command, InvalidArgumentError } from 'commander';
import { LocalEnvError, startLocalEnv, type LocalEnv } from '../lib/local/env';
import { ProvisionError } from '../lib/local/provision';
import { SCENARIOS, ScenarioOptionsError } from '../lib/local/scenario';
import { localStart, localUp, signalExitCode, type LocalRunIo } from '../lib/local/local-commands';
import { shellQuote } from '../lib/local/start';

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

/** The process as the shared runs (lib/local/local-commands.ts) see it. */
const runIo: LocalRunIo = {
  out: (text) => process.stdout.write(text),
  log,
  err: (line) => process.stderr.write(`${line}\n`),
  onSignal: (handler) => {
    onSignal = handler;
  },
  exit: (code) => process.exit(code),
  tty: process.stdout.isTTY === true,
  columns: process.stdout.columns,
};

/** Parses a positive number option. */
function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a positive number');
  return n;
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
      exitCode = opts.envOnly === true ? await upEnvOnly() : await localUp(opts, runIo);
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
    .option(
      '--rate <per-second>',
      "traffic per second: of the app's scenario flow when it runs (the reference's: payments), else jobs (default: the scenario's)",
      positiveNumber,
    )
    .action(async (opts: { stage: string; scenario: string; duration?: number; rate?: number }) => {
      exitCode = await localStart(opts, runIo);
    });
  await program.parseAsync(argv);
  return exitCode;
}

main(process.argv).then(
  (code) => process.exit(code),
  (error: unknown) => process.exit(reportError(error)),
);
