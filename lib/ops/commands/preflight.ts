/**
 * `tenang preflight [--cdk-out <dir>] [--shards <n>] [--json]`: a read-only check that the
 * account and region can take the stage before `cdk deploy` (P5): Lambda concurrency for the
 * stage's worst case, fixed-name tables and log groups left by a destroyed stage, the CDK
 * bootstrap, and the region's services. Exits 1 when a check fails (a warning or a skipped check
 * does not), 2 on a usage error, 3 without usable credentials. The work is in
 * lib/ops/preflight/run.ts, loaded when the command runs.
 */
import type { Command } from 'commander';
import * as z from '../../config/zod';
import type { PreflightCheck } from '../../audit/preflight';
import { CommandFailedError, configFree, type CliContext, type RegisterCommand } from '../cli-context';
import { CountSchema, parseOptions } from '../options';

const PreflightOptionsSchema = z.object({
  json: z.optional(z.boolean()),
  cdkOut: z.optional(z.string().check(z.minLength(1, 'needs a directory'))),
  shards: z._default(CountSchema, 1),
});

/** The text report: one line per check, its status first, then what to do. */
export function renderPreflight(
  checks: readonly PreflightCheck[],
  header: {
    readonly stage: string;
    readonly stackName: string;
    readonly region: string;
    readonly source: string;
  },
  notes: readonly string[] = [],
): string {
  const width = Math.max(...checks.map((c) => c.id.length));
  return [
    `preflight of stage ${header.stage} (stack ${header.stackName}, ${header.region}), from ${header.source}`,
    ...checks.map(
      (c) =>
        `${c.status.padEnd(7)} ${c.id.padEnd(width)}  ${c.message}${c.remedy === null ? '' : ` -> to do: ${c.remedy}`}`,
    ),
    ...notes.map((n) => `note: ${n}`),
  ].join('\n');
}

/** Registers `tenang preflight`. */
export const register: RegisterCommand = (program: Command, context: () => CliContext): void => {
  const preflight = program
    .command('preflight')
    .description(
      'check, read-only, that the account and region can take the stage: Lambda concurrency, tables and log groups left by a destroyed stage, the CDK bootstrap, the region',
    )
    .option(
      '--cdk-out <dir>',
      "a cdk.out to read the stage from (default: ./cdk.out when it holds the stage's stack)",
    )
    .option('--shards <n>', 'shards assumed per table stream that does not exist yet', '1')
    .option('--json', 'print the checks as JSON: [{ id, status, message, remedy, resources }]')
    .addHelpText(
      'after',
      `
What the stage needs comes from --cdk-out (or ./cdk.out), else the deployed stack's template,
else the declaration (TENANG_PIPELINE), which does not know the functions an app adds itself.
Concurrency counts each queue mapping's maximum concurrency, each stream mapping's shards x
parallelization factor (the stream's open shards when it exists, else --shards) and 1 per other
function, against the unreserved concurrency plus 10 % headroom (a warning when only that is short).

Statuses: pass, warn (exit 0), fail (exit 1), skipped (the account would not say: not allowed,
or not implemented by the endpoint; exit 0, with why).
Exit codes: 0 nothing failed, 1 a check failed, 2 usage error, 3 no usable AWS credentials.

Examples:
  $ npx cdk synth && tenang --stage prod preflight
  $ tenang preflight --cdk-out cdk.out --json
  $ TENANG_PIPELINE="$(cat pipeline.json)" tenang --stage dev preflight --shards 4`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const opts = parseOptions(PreflightOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
      const { runPreflight } = await import('../preflight/run');
      const result = await runPreflight(ctx, {
        ...(opts.cdkOut === undefined ? {} : { cdkOut: opts.cdkOut }),
        assumedShards: opts.shards,
      });
      if (opts.json === true) {
        ctx.err(`preflight: the stage as ${result.source} declares it`);
        for (const note of result.notes) ctx.err(`preflight: note: ${note}`);
        ctx.out(JSON.stringify(result.checks, null, 2));
      } else {
        ctx.out(
          renderPreflight(
            result.checks,
            { stage: ctx.stage, stackName: ctx.stackName, region: ctx.region, source: result.source },
            result.notes,
          ),
        );
      }
      const failed = result.checks.filter((c) => c.status === 'fail').map((c) => c.id);
      if (failed.length > 0) throw new CommandFailedError(`preflight failed: ${failed.join(', ')}`);
    });
  // A synthesized stage needs no declaration: no GetTemplate before the action.
  configFree(preflight, (options) => options.cdkOut !== undefined);
};
