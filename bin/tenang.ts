#!/usr/bin/env node
/**
 * The `tenang` CLI's entry point: builds the commander program from the command modules and
 * funnels every error into one message and exit code (0 ok, 1 failure, 2 usage, 3 no usable AWS
 * credentials: lib/ops/cli-errors.ts). Only this file calls process.exit; tests drive
 * `run(argv, io)` and get the exit code back.
 */
import * as readline from 'node:readline/promises';
import { Command, CommanderError, Option } from 'commander';
import {
  CommandFailedError,
  contextFromEnv,
  needsConfig,
  UsageError,
  type CliContext,
  type Prompt,
  type RegisterCommand,
} from '../lib/ops/cli-context';
import { MappingError } from '../lib/core/reconcile';
import {
  credentialsFailureOf,
  describeCredentialsFailure,
  EXIT_CODE,
  EXIT_CODES_HELP,
} from '../lib/ops/cli-errors';
import { register as registerAudit } from '../lib/ops/commands/audit';
import { register as registerDegrade } from '../lib/ops/commands/degrade';
import { register as registerDlq } from '../lib/ops/commands/dlq';
import { register as registerPause } from '../lib/ops/commands/pause';
import { register as registerPreflight } from '../lib/ops/commands/preflight';
import { register as registerResume } from '../lib/ops/commands/resume';
import { register as registerStatus } from '../lib/ops/commands/status';
import { register as registerLock } from '../lib/ops/commands/lock';
import { register as registerCache } from '../lib/ops/commands/cache';
import { drillCommand } from '../lib/drills/command';

/** Every command module, in help order. */
export const COMMANDS: readonly RegisterCommand[] = [
  registerStatus,
  registerPause,
  registerResume,
  registerDegrade,
  registerDlq,
  registerAudit,
  registerPreflight,
  registerLock,
  registerCache,
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

/** Maps an error to its exit code, writing its explanation to `err` (the error funnel). */
export function exitCodeFor(
  error: unknown,
  err: (text: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): number {
  if (error instanceof CommanderError) {
    // Commander has already written its message (or the help) through configureOutput.
    return error.exitCode === 0 ? 0 : 2;
  }
  if (error instanceof UsageError) {
    err(`error: ${error.message}`);
    return 2;
  }
  // Before the failures and the AWS errors: a command may wrap it (cause), an expired or unknown
  // token is an AWS error, and none of them is a bug.
  const credentials = credentialsFailureOf(error);
  if (credentials !== undefined) {
    err(describeCredentialsFailure(credentials, env));
    return EXIT_CODE.credentials;
  }
  if (error instanceof CommandFailedError || error instanceof MappingError) {
    err(`error: ${error.message}`);
    return 1;
  }
  if (isAwsError(error)) {
    err(`error: AWS ${error.name}: ${error.message.split('\n')[0] ?? ''}`);
    return 1;
  }
  const code = (error as { code?: unknown } | undefined)?.code;
  if (error instanceof Error && (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'ETIMEDOUT')) {
    err(`error: cannot reach the AWS endpoint (${String(code)}): ${error.message}`);
    return 1;
  }
  err(
    `unexpected error (a bug in tenang):\n${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
  );
  return 1;
}

/** Builds the program; `context` is created on first use with the parsed global options. */
export function buildProgram(io: CliIo, onContext: (ctx: CliContext) => void = () => undefined): Command {
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
    .option('--json', 'machine-readable output (read commands)')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .addHelpText(
      'after',
      `
${EXIT_CODES_HELP}
Endpoints come from the environment (AWS_REGION, AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_LAMBDA).

Examples:
  $ tenang status
  $ tenang pause notification-consumer --reason "provider outage" --for 30m
  $ tenang dlq replay payment.capture --dry-run
  $ tenang lock list --orphans
  $ tenang cache invalidate --entity order:123
  $ tenang audit --live
  $ tenang preflight
  $ tenang drill --list

Runbooks: runbooks/README.md (every step there is one of these commands).`,
    );
  // Each action runs with the stage's pipeline config at hand: unless TENANG_PIPELINE gives it,
  // it is read once from the deployed stack's template (a failure surfaces where it is needed).
  program.hook('preAction', async (_program, action) => {
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
  const program = buildProgram(io, (ctx) => (context = ctx));
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    return exitCodeFor(error, io.err, io.env ?? process.env);
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
  opts: Pick<CliIo, 'env' | 'prompt'> = {},
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
