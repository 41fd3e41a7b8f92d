#!/usr/bin/env node
/**
 * The `tenang` CLI's entry point: builds the commander program from the command modules and
 * funnels every error into one message and exit code (0 ok, 1 failure, 2 usage or an invalid
 * pipeline declaration, 3 no usable AWS credentials: lib/ops/cli-errors.ts); with --json the
 * same report is also one JSON object on stdout. Only this file calls process.exit; tests drive
 * `run(argv, io)` and get the exit code back.
 */
import { constants } from 'node:os';
import * as readline from 'node:readline/promises';
import { Command, CommanderError, Option } from 'commander';
import {
  CommandFailedError,
  contextFromEnv,
  needsConfig,
  UsageError,
  wantsJson,
  type CliContext,
  type Prompt,
  type RegisterCommand,
} from '../lib/ops/cli-context';
import { PIPELINE_VARIABLE, PipelineConfigError } from '../lib/config';
import { MappingError } from '../lib/core/reconcile';
import {
  credentialsFailureOf,
  credentialsReport,
  describeCredentialsFailure,
  errorJson,
  EXIT_CODE,
  EXIT_CODES_HELP,
  type CliErrorReport,
} from '../lib/ops/cli-errors';
import { cliPlace, type CliPlace } from '../lib/ops/cli-place';
import { auditCommand } from '../lib/ops/commands/audit';
import { register as registerDegrade } from '../lib/ops/commands/degrade';
import { register as registerDlq } from '../lib/ops/commands/dlq';
import { register as registerPause } from '../lib/ops/commands/pause';
import { register as registerPreflight } from '../lib/ops/commands/preflight';
import { register as registerResume } from '../lib/ops/commands/resume';
import { register as registerStatus } from '../lib/ops/commands/status';
import { register as registerLock } from '../lib/ops/commands/lock';
import { register as registerCache } from '../lib/ops/commands/cache';
import { register as registerInit } from '../lib/ops/commands/init';
import { runbooksCommand } from '../lib/ops/commands/runbooks';
import { localCommand, type LocalRunner } from '../lib/ops/commands/local';
import { drillsOfAppAt } from '../lib/drills/app-drills';
import { drillCommand } from '../lib/drills/command';

/**
 * `tenang local`'s runs on this process: its streams, its signals (routed to the run, which stops
 * what it started) and process.exit for a second Ctrl-C. Loaded when a run starts: the CLI's other
 * commands never load the emulator, and lib/ops never imports lib/local.
 */
const runLocal: LocalRunner = async (request) => {
  const { runLocalForCli } = await import('../lib/local/local-commands');
  let onSignal: (signal: NodeJS.Signals) => void = (signal) =>
    process.exit(128 + (constants.signals[signal] ?? 0));
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => onSignal(signal));
  return runLocalForCli(request, {
    out: (text) => process.stdout.write(text),
    log: (line) => process.stderr.write(`[local] ${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    onSignal: (handler) => {
      onSignal = handler;
    },
    exit: (code) => process.exit(code),
    tty: process.stdout.isTTY === true,
    columns: process.stdout.columns,
  });
};

/** Every command module, in help order. */
export const COMMANDS: readonly RegisterCommand[] = [
  registerStatus,
  registerPause,
  registerResume,
  registerDegrade,
  registerDlq,
  // The audit's P2 rule judges tenang's drills and the app's own (its extensions).
  auditCommand(drillsOfAppAt),
  registerPreflight,
  registerLock,
  registerCache,
  registerInit,
  runbooksCommand(drillsOfAppAt),
  localCommand(runLocal),
  // Drills run their steps through this CLI: handed in, so lib/ never imports bin/.
  drillCommand((argv, env) => runCaptured(argv, { env })),
];

/** Where the CLI writes and how it asks. */
export interface CliIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** @default not interactive: destructive commands need --yes */
  readonly prompt?: Prompt;
  /** @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** Where the hints' commands and paths are seen from (lib/ops/cli-place.ts). @default process.cwd() */
  readonly cwd?: string;
}

const line =
  (write: (t: string) => void) =>
  (text: string): void =>
    write(text.endsWith('\n') ? text : `${text}\n`);

/** The process's own streams; asks on the terminal when stdin is one. */
export function processIo(): CliIo {
  const interactive = process.stdin.isTTY === true;
  return {
    out: line((t) => process.stdout.write(t)),
    err: line((t) => process.stderr.write(t)),
    prompt: {
      interactive,
      async confirm(question: string): Promise<boolean> {
        const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
        try {
          return /^y(es)?$/i.test((await rl.question(question)).trim());
        } finally {
          rl.close();
        }
      },
    },
  };
}

/** Whether `error` came from an AWS service (the SDK's ServiceException carries $metadata and $fault). */
function isAwsError(error: unknown): error is Error & { $fault?: string } {
  return error instanceof Error && '$metadata' in error && '$fault' in error;
}

/** The invalid pipeline declaration `error` is or wraps (cause), if any: a config error, not a bug. */
function configErrorOf(error: unknown): PipelineConfigError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth <= 5 && current instanceof Error; depth += 1) {
    if (current instanceof PipelineConfigError) return current;
    current = current.cause;
  }
  return undefined;
}

/** What the funnel makes of an error: its report (none for a help shown), and the text for stderr if any is due. */
export interface FunnelledError {
  /** @default none: commander showed the help (exit code 0) */
  readonly report?: CliErrorReport;
  /** @default none: already printed (commander writes its own usage errors) */
  readonly text?: string;
}

/** Maps an error to its report and its text (the error funnel: one place for every message and exit code). */
export function funnelError(
  error: unknown,
  env: NodeJS.ProcessEnv = process.env,
  place: CliPlace = cliPlace(),
): FunnelledError {
  const said = (report: CliErrorReport): FunnelledError => ({ report, text: `error: ${report.message}` });
  if (error instanceof CommanderError) {
    // Commander has already written its message (or the help) through configureOutput.
    if (error.exitCode === 0) return {};
    const message =
      error.message === '(outputHelp)'
        ? 'a subcommand is needed (its list is printed on stderr)'
        : error.message.replace(/^error: /, '');
    return { report: { kind: 'usage', message, exitCode: EXIT_CODE.usage } };
  }
  if (error instanceof UsageError)
    return said({ kind: 'usage', message: error.message, exitCode: EXIT_CODE.usage });
  // Before the failures and the AWS errors: a command may wrap it (cause), an expired or unknown
  // token is an AWS error, and none of them is a bug.
  const credentials = credentialsFailureOf(error);
  if (credentials !== undefined) {
    return {
      report: credentialsReport(credentials, env, place),
      text: describeCredentialsFailure(credentials, env, place),
    };
  }
  // The declaration's listed problems are the message: their stack points into tenang's loader,
  // never at the mistake. Exit 2, as for options: what the operator gave is wrong, not the run.
  const config = configErrorOf(error);
  if (config !== undefined && error instanceof Error)
    return said({ kind: 'config', message: error.message, exitCode: EXIT_CODE.usage });
  if (error instanceof CommandFailedError || error instanceof MappingError)
    return said({ kind: 'failure', message: error.message, exitCode: EXIT_CODE.failure });
  if (isAwsError(error)) {
    const message = `AWS ${error.name}: ${error.message.split('\n')[0] ?? ''}`;
    return said({ kind: 'aws', message, exitCode: EXIT_CODE.failure });
  }
  const code = (error as { code?: unknown } | undefined)?.code;
  if (error instanceof Error && (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'ETIMEDOUT')) {
    const message = `cannot reach the AWS endpoint (${String(code)}): ${error.message}`;
    return said({ kind: 'network', message, exitCode: EXIT_CODE.failure });
  }
  const stack = error instanceof Error ? (error.stack ?? error.message) : String(error);
  return {
    report: {
      kind: 'unexpected',
      message: `unexpected error (a bug in tenang): ${error instanceof Error ? error.message : String(error)}`,
      exitCode: EXIT_CODE.failure,
      stack,
    },
    text: `unexpected error (a bug in tenang):\n${stack}`,
  };
}

/** Maps an error to its exit code, writing its explanation to `err` (funnelError, as text only). */
export function exitCodeFor(
  error: unknown,
  err: (text: string) => void,
  env: NodeJS.ProcessEnv = process.env,
  place: CliPlace = cliPlace(),
): number {
  const { report, text } = funnelError(error, env, place);
  if (text !== undefined) err(text);
  return report?.exitCode ?? EXIT_CODE.ok;
}

/** Whether `argv` asks for --json (before any `--`): for an error commander raised before an action was chosen. */
function argvAsksJson(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes('--json');
}

/** Builds the program; `context` is created on first use with the parsed global options. */
export function buildProgram(
  io: CliIo,
  onContext: (ctx: CliContext) => void = () => undefined,
  onAction: (action: Command) => void = () => undefined,
): Command {
  const env = io.env ?? process.env;
  const program = new Command('tenang');
  let context: CliContext | undefined;
  const getContext = (): CliContext => {
    if (context !== undefined) return context;
    const { stage } = program.opts<{ stage: string }>();
    if (!/^[a-z][a-z0-9-]{0,19}$/.test(stage)) {
      throw new UsageError(`--stage: "${stage}" is not a stage name (lower-case letters, digits and -)`);
    }
    try {
      context = contextFromEnv({ stage, out: io.out, err: io.err, prompt: io.prompt }, env);
    } catch (error) {
      // An invalid declaration in the environment is a config error (the funnel lists its problems).
      if (error instanceof PipelineConfigError)
        throw new CommandFailedError(`${PIPELINE_VARIABLE}: ${error.message}`, { cause: error });
      throw new UsageError(`--stage ${stage}: ${(error as Error).message}`);
    }
    onContext(context);
    return context;
  };
  program
    .description(
      'Operate a tenang pipeline: status, pause/resume, degrade mode, DLQ inspection and replay, locks, cache invalidation, audit, preflight, drills',
    )
    .addOption(
      new Option('--stage <name>', 'stage to operate').default(env.TENANG_STAGE ?? 'dev').env('TENANG_STAGE'),
    )
    .option('--json', 'machine-readable output (read commands); any error as one JSON object on stdout')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .addHelpText(
      'after',
      // A function: the runbooks' path is looked up only when the help is shown.
      () => `
${EXIT_CODES_HELP}
Endpoints come from the environment (AWS_REGION, AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_LAMBDA).

Examples:
  $ tenang status
  $ tenang pause invoice-consumer --reason "provider outage" --for 30m
  $ tenang dlq replay invoice.issue --dry-run
  $ tenang lock list --orphans
  $ tenang cache invalidate --entity order:123
  $ tenang audit --live
  $ tenang preflight
  $ tenang drill --list
  $ tenang init my-app
  $ tenang runbooks --check

Runbooks: ${cliPlace(io.cwd).runbooksIndex} (every step there is one of these commands).`,
    );
  // Each action runs with the stage's pipeline config at hand: unless TENANG_PIPELINE gives it,
  // it is read once from the deployed stack's template (a failure surfaces where it is needed).
  program.hook('preAction', async (_program, action) => {
    // First: the funnel needs to know the action (its --json) even when the context fails.
    onAction(action);
    if (needsConfig(action)) await getContext().loadConfig?.();
  });
  for (const register of COMMANDS) register(program, getContext);
  // Subcommands inherit the overrides: no command may exit the process.
  const override = (cmd: Command): void => {
    cmd.exitOverride().configureOutput({ writeOut: io.out, writeErr: io.err });
    for (const sub of cmd.commands) override(sub);
  };
  for (const sub of program.commands) override(sub);
  return program;
}

/** Runs the CLI with `argv` (without node and script) and returns the exit code. */
export async function run(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  let context: CliContext | undefined;
  let action: Command | undefined;
  let printed = false;
  const out = (text: string): void => {
    printed = true;
    io.out(text);
  };
  const program = buildProgram(
    { ...io, out },
    (ctx) => (context = ctx),
    (chosen) => (action = chosen),
  );
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return EXIT_CODE.ok;
  } catch (error) {
    const { report, text } = funnelError(error, io.env ?? process.env, cliPlace(io.cwd));
    if (text !== undefined) io.err(text);
    // With --json the error is also one JSON object on stdout, unless the command already answered
    // there (audit, preflight print their JSON report and then fail): stdout stays one document.
    const json = action === undefined ? argvAsksJson(argv) : wantsJson(action);
    if (report !== undefined && json && !printed) io.out(errorJson(report));
    return report?.exitCode ?? EXIT_CODE.ok;
  } finally {
    if (context !== undefined) for (const client of Object.values(context.clients)) client.destroy();
  }
}

/** What a captured run printed. */
export interface CapturedRun {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/** Runs the CLI and returns its output instead of writing it (tests, drills). */
export async function runCaptured(
  argv: readonly string[],
  opts: Pick<CliIo, 'env' | 'prompt' | 'cwd'> = {},
): Promise<CapturedRun> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run(argv, { out: (t) => out.push(t), err: (t) => err.push(t), ...opts });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

if (require.main === module) {
  void run(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
    // Leave time for piped output to flush; exit even if a handle lingers.
    setTimeout(() => process.exit(code), 1_000).unref();
  });
}
