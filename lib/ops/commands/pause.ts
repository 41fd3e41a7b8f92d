/** `tenang pause <consumer> --reason <text> --for <duration>` (B4, X4). */
import type { Command } from 'commander';
import * as z from '../../config/zod';
import { UsageError, type CliContext, type RegisterCommand } from '../cli-context';
import { DurationSchema } from '../duration';
import { nonEmpty, parseOptions } from '../options';
import type { PauseResult } from '../pause-control';

/** Options of `pause`. */
export const PauseOptionsSchema = z.object({
  reason: nonEmpty('--reason (why the consumer is paused)'),
  for: z.pipe(z.string('--for (how long the pause should last, e.g. 30m) is required'), DurationSchema),
  force: z.optional(z.boolean()),
  dryRun: z.optional(z.boolean()),
  json: z.optional(z.boolean()),
});

/** The human line of a pause or resume. */
export function describePause(result: PauseResult): string {
  const action = result.flag.paused ? 'paused' : 'resumed';
  const prefix = result.dryRun ? '[dry run] would have ' : '';
  const until = result.flag.until === undefined ? '' : ` until ${result.flag.until}`;
  const finishing =
    result.stateAfter === 'Disabling'
      ? '; batches received before the pause are still finishing, no new ones are taken'
      : '';
  return `${prefix}${action} ${result.consumer}${until} (flag ${result.flagName}; mapping ${result.mappingId}: ${result.stateBefore} → ${result.stateAfter}${finishing})`;
}

/** Registers `pause`. */
export const register: RegisterCommand = (program: Command, context: () => CliContext): void => {
  program
    .command('pause')
    .description('Pause a consumer: write its pause flag and disable its event source mapping now')
    .argument('<consumer>', 'consumer to pause, e.g. invoice-consumer')
    .option('--reason <text>', 'why (shown by status, alarms and the audit trail)')
    .option(
      '--for <duration>',
      'expected length: 30m, 2h, 1d; past it the pause alarms as overdue (it does not resume by itself)',
    )
    .option('--force', 'pause a consumer the config marks as needed for recovery')
    .option('--dry-run', 'show what would change without writing anything')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
Messages stay in the queue while paused; "tenang resume" drains them.

Examples:
  $ tenang pause invoice-consumer --reason "invoicing provider outage" --for 30m
  $ tenang --stage prod pause receipt-consumer --reason "mail migration" --for 2h --dry-run`,
    )
    .action(async (consumer: string, _opts: unknown, cmd: Command) => {
      const opts = parseOptions(PauseOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
      const [{ applyPause }, { findConsumer, neededForRecovery }] = await Promise.all([
        import('../pause-control'),
        import('../pipeline-resources'),
      ]);
      const entry = findConsumer(ctx, consumer);
      if (neededForRecovery(entry) && opts.force !== true) {
        throw new UsageError(
          `${consumer} is needed for recovery (pipeline config: neededForRecovery): pausing it stops what recovers the others. Add --force if you mean it.`,
        );
      }
      const result = await applyPause(
        ctx,
        entry,
        {
          paused: true,
          reason: opts.reason,
          until: new Date(ctx.now().getTime() + opts.for).toISOString(),
          setBy: ctx.actor,
        },
        { dryRun: opts.dryRun === true },
      );
      ctx.out(opts.json === true ? JSON.stringify(result, null, 2) : describePause(result));
    });
};
