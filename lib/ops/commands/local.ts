/**
 * `tenang local up [--quiet]` and `tenang local start [--scenario NAME] [--duration S] [--rate N]`:
 * the local platform for the app of the working directory (the nearest cdk.json: its own `app`
 * synthesizes it), a team's app with tenang installed as much as tenang's checkout. `up` deploys
 * it into moto and keeps it running until Ctrl-C, printing the `export` lines that point `tenang`
 * and the AWS CLI of another shell at it; `start` is the one-shot run: deploy, a scenario with a
 * live status, its report in the app's reports/. moto and Redis are started when none answers.
 * Operator code never loads the emulator (lib/ops sits below lib/local), so the runs are handed
 * in by bin/tenang.ts and loaded only when one starts.
 */
import type { Command } from 'commander';
import * as z from '../../config/zod';
import { CommandFailedError, configFree, type RegisterCommand } from '../cli-context';
import { cliPlace } from '../cli-place';
import { parseOptions, RateSchema } from '../options';

/** What `tenang local` asks of a run. */
export type LocalRunRequest =
  | { readonly run: 'up'; readonly stage: string; readonly quiet?: boolean }
  | {
      readonly run: 'start';
      readonly stage: string;
      readonly scenario: string;
      readonly duration?: number;
      readonly rate?: number;
    };

/**
 * Runs `request` for the app of the working directory and resolves with its exit code (0 done,
 * 1 an invariant failed, 128 + n when a signal ended it); bin/tenang.ts's, on this process.
 */
export type LocalRunner = (request: LocalRunRequest) => Promise<number>;

/** `--duration 30`: seconds, more than 0 (commander passes strings). */
const SecondsSchema = z.pipe(
  z.string().check(z.regex(/^[0-9]+(\.[0-9]+)?$/, 'must be a number of seconds')),
  z.pipe(
    z.transform((text: string): number => Number(text)),
    z.number().check(z.positive('must be more than 0 seconds')),
  ),
);

const UpOptionsSchema = z.object({ stage: z.string(), quiet: z.optional(z.boolean()) });
const StartOptionsSchema = z.object({
  stage: z.string(),
  scenario: z.string().check(z.minLength(1)),
  duration: z.optional(SecondsSchema),
  rate: z.optional(RateSchema),
});

/** A run that did not end well, as the CLI's failure (exit 1). */
function checked(what: string, code: number): void {
  if (code === 0) return;
  throw new CommandFailedError(
    code > 128 ? `${what} was interrupted (signal ${code - 128})` : `${what} failed (exit code ${code})`,
  );
}

/** The `local` command, running through `runner` (bin/tenang.ts hands in the emulator's runs). */
export const localCommand =
  (runner: LocalRunner): RegisterCommand =>
  (program: Command): void => {
    const local = program
      .command('local')
      .description(
        "Run your app on the local platform (moto and Redis, IAM enforced): the app of this directory's cdk.json",
      )
      .addHelpText(
        'after',
        `
The app is the nearest cdk.json at or above the working directory; cdk comes from the app's
node_modules (npm install -D aws-cdk), moto from python3 (pip install 'moto[server]'), Redis from
redis-server. Caches go to the app's .tenang/, reports to its reports/.

Examples:
  $ ${cliPlace().localUp}
  $ npx tenang local start --scenario smoke`,
      );
    const up = local
      .command('up')
      .description(
        'deploy the app on the local platform and keep it running until Ctrl-C; prints the `export` lines that point tenang and the AWS CLI of another shell at it',
      )
      .option('--quiet', "don't print the functions' log lines")
      .action(async (_opts: unknown, cmd: Command) => {
        const opts = parseOptions(UpOptionsSchema, cmd.optsWithGlobals());
        checked('tenang local up', await runner({ run: 'up', ...opts }));
      });
    const start = local
      .command('start')
      .description(
        "deploy the app, run a scenario with a live status, write its report to the app's reports/<timestamp>/ and stop; exits 1 when an invariant fails",
      )
      .option('--scenario <name>', 'scenario to run (an unknown name lists them)', 'default')
      .option('--duration <seconds>', "seconds of traffic (default: the scenario's)")
      .option(
        '--rate <per-second>',
        "traffic per second: of the app's scenario flow when it runs (the reference's: payments), else jobs (default: the scenario's)",
      )
      .action(async (_opts: unknown, cmd: Command) => {
        const opts = parseOptions(StartOptionsSchema, cmd.optsWithGlobals());
        checked(`scenario ${opts.scenario}`, await runner({ run: 'start', ...opts }));
      });
    // The platform deploys the app itself: no deployed stack is read before the run.
    configFree(local);
    configFree(up);
    configFree(start);
  };
