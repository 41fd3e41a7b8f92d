/** `tenang resume <consumer>` (B4): clears the pause flag and enables the mapping now. */
import type { Command } from 'commander';
import * as z from '../../config/zod';
import type { CliContext, RegisterCommand } from '../cli-context';
import { parseOptions } from '../options';
import { describePause } from './pause';

const ResumeOptionsSchema = z.object({
  dryRun: z.optional(z.boolean()),
  json: z.optional(z.boolean()),
});

/** Registers `resume`. */
export const register: RegisterCommand = (program: Command, context: () => CliContext): void => {
  program
    .command('resume')
    .description('Resume a paused consumer: clear its pause flag and enable its event source mapping now')
    .argument('<consumer>', 'consumer to resume')
    .option('--dry-run', 'show what would change without writing anything')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
The backlog drains at the consumer's configured concurrency; its backlog alarms stay
suppressed for a few periods after the resume.

Examples:
  $ tenang resume invoice-consumer
  $ tenang --stage prod resume receipt-consumer --json`,
    )
    .action(async (consumer: string, _opts: unknown, cmd: Command) => {
      const opts = parseOptions(ResumeOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
      const [{ applyPause }, { findConsumer }] = await Promise.all([
        import('../pause-control'),
        import('../pipeline-resources'),
      ]);
      const entry = findConsumer(ctx, consumer);
      const result = await applyPause(
        ctx,
        entry,
        { paused: false, setBy: ctx.actor },
        { dryRun: opts.dryRun === true },
      );
      ctx.out(opts.json === true ? JSON.stringify(result, null, 2) : describePause(result));
    });
};
