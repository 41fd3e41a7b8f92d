/**
 * `tenang drill <name>|all [--json]` and `tenang drill --list` (P2): starts a local platform of
 * its own for the app of the working directory (its own moto on a free port, the local Redis), creates the drill's incident, runs the
 * runbook's commands through this CLI, checks the outcome and stops what it started. It never
 * uses the AWS account or endpoint of the environment: a drill is an exercise, not an incident.
 * The drills sit above the operator code and the emulator (lib/drills), so this command is
 * registered by bin/tenang.ts from here. The drills are tenang's and the app's own (its cdk.json's
 * `tenang:extensions`, lib/drills/app-drills.ts); the platform loads only when one runs
 * (lib/drills/run-locally.ts).
 */
import type { Command } from 'commander';
import * as z from '../config/zod';
import {
  CommandFailedError,
  configFree,
  UsageError,
  type CliContext,
  type RegisterCommand,
} from '../ops/cli-context';
import { findAppDirectory } from '../local/project';
import { DRILL_CATALOG } from '../ops/drills/catalog';
import { cliPlace } from '../ops/cli-place';
import { parseOptions } from '../ops/options';
import { renderTable } from '../ops/table';
import { appDrillInfos } from './app-drills';
import type { RunDrillOptions } from './drill';

const DrillOptionsSchema = z.object({
  list: z.optional(z.boolean()),
  json: z.optional(z.boolean()),
  jobType: z.optional(z.string().check(z.minLength(1))),
  stage: z.string(),
});

/** tenang's drills whose incident holds for any job type: they take `--job-type`. */
const ANY_JOB_TYPE: readonly string[] = DRILL_CATALOG.filter((d) => d.anyJobType).map((d) => d.name);

/**
 * The `drill` command, running its steps through `cli`: bin/tenang.ts hands in its own runCaptured
 * (lib/ never imports bin/, which registers this command).
 */
export const drillCommand =
  (cli: RunDrillOptions['cli']): RegisterCommand =>
  (program: Command, context: () => CliContext): void => {
    const drill = program
      .command('drill')
      .description(
        "Rehearse a runbook: create its incident on a local platform, run the runbook's commands, check recovery",
      )
      .argument('[name]', 'a drill name, or "all" (see --list)')
      .option('--list', 'list the drills and the runbooks they execute')
      .option('--json', 'print the results as JSON')
      .option(
        '--job-type <type>',
        `play the incident on this job type (one the pipeline declares with a samplePayload); drills that take one: ${ANY_JOB_TYPE.join(', ')}`,
      )
      .addHelpText(
        'after',
        `
A drill starts its own local platform (moto on a free port, the local Redis; npm start's
machinery) for the app of this directory (its nearest cdk.json), so it needs python3 with moto,
redis-server and the app's cdk (npm install -D aws-cdk), never an AWS account. It takes 30 s to
start plus up to a few minutes per drill. Exit code 1 when a drill fails.

Examples:
  $ tenang drill --list
  $ tenang drill retry-storm
  $ tenang drill dlq-not-empty --job-type invoice.issue
  $ tenang drill all --json > drills.json`,
      )
      .action(async (name: string | undefined, _opts: unknown, cmd: Command) => {
        const opts = parseOptions(DrillOptionsSchema, cmd.optsWithGlobals());
        // The drill uses no AWS clients of the operator's environment; the context only supplies output.
        const ctx = context();
        // tenang's drills and the app's own: its extensions load here (a module that does not is
        // the CLI's error, naming it).
        const appDir = findAppDirectory();
        let catalog: ReturnType<typeof appDrillInfos>;
        try {
          catalog = appDrillInfos(appDir);
        } catch (error) {
          const { asCliError } = await import('../local/local-commands');
          throw asCliError(error);
        }
        if (opts.list === true) {
          // The runbooks as a path from here: the checkout's runbooks/, an app's node_modules/tenang/runbooks/.
          const place = cliPlace();
          const rows = catalog.map((d) => ({
            drill: d.name,
            runbook: place.runbook(d.runbook),
            incident: d.incident,
          }));
          ctx.out(
            opts.json === true
              ? JSON.stringify(rows, null, 2)
              : renderTable(['drill', 'runbook', 'incident'], rows),
          );
          return;
        }
        if (name === undefined)
          throw new UsageError('name a drill (or "all"); `tenang drill --list` shows them');
        const names = name === 'all' ? catalog.map((d) => d.name) : [name];
        const unknown = names.filter((n) => !catalog.some((d) => d.name === n));
        if (unknown.length > 0)
          throw new UsageError(
            `no drill named ${unknown.join(', ')}; choose from: ${catalog.map((d) => d.name).join(', ')}, all`,
          );
        const anyJobType = catalog.filter((d) => d.anyJobType === true).map((d) => d.name);
        const fixed = names.filter((n) => !anyJobType.includes(n));
        if (opts.jobType !== undefined && fixed.length > 0)
          throw new UsageError(
            `--job-type: ${fixed.join(', ')} ${fixed.length === 1 ? 'is' : 'are'} about the app's own domain and take${fixed.length === 1 ? 's' : ''} no job type; drills that take one: ${anyJobType.join(', ')}`,
          );
        // The platform and the drills load only when a drill runs.
        const [{ runDrillsLocally }, { renderDrillResult }] = await Promise.all([
          import('./run-locally'),
          import('./drill'),
        ]);
        const results = await runDrillsLocally(names, {
          ...(appDir === undefined ? {} : { projectRoot: appDir }),
          stage: opts.stage,
          progress: ctx.err,
          cli,
          jobType: opts.jobType,
        });
        ctx.out(
          opts.json === true
            ? JSON.stringify(results, null, 2)
            : results.map((r) => renderDrillResult(r)).join('\n\n'),
        );
        const failed = results.filter((r) => !r.passed);
        if (failed.length > 0)
          throw new CommandFailedError(`drill failed: ${failed.map((r) => r.drill).join(', ')}`);
      });
    // A drill plays on a platform of its own: the operator's stack is never read.
    configFree(drill);
  };
