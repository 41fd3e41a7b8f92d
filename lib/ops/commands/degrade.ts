/** `tenang degrade on|off --reason <text>` (B3): the stage's degrade flag. */
import type { Command } from 'commander';
import * as z from '../../config/zod';
import { degradeFlagSchema, type DegradeFlag } from '../../core/flags';
import type { CliContext, RegisterCommand } from '../cli-context';
import { parseOptions } from '../options';

/** Options of `degrade`, with the on/off argument as `mode`. */
export const DegradeOptionsSchema = z.union([
  z.object({
    mode: z.literal('on'),
    reason: z
      .string('--reason is required to turn degrade mode on')
      .check(z.minLength(1, '--reason must not be empty')),
    dryRun: z.optional(z.boolean()),
    json: z.optional(z.boolean()),
  }),
  z.object({
    mode: z.literal('off'),
    reason: z.optional(z.string()),
    dryRun: z.optional(z.boolean()),
    json: z.optional(z.boolean()),
  }),
]);

/** Registers `degrade`. */
export const register: RegisterCommand = (program: Command, context: () => CliContext): void => {
  program
    .command('degrade')
    .description(
      'Turn degrade mode on or off: sheddable work is refused, deferrable work deferred, critical work continues',
    )
    .argument('<mode>', 'on | off')
    .option('--reason <text>', 'why (required for on)')
    .option('--dry-run', 'show the flag value without writing it')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
Functions read the flag with a cache of a few seconds, so it takes effect within seconds.

Examples:
  $ tenang degrade on --reason "invoicing provider slow, protect the invoices"
  $ tenang degrade off`,
    )
    .action(async (mode: string, _opts: unknown, cmd: Command) => {
      const opts = parseOptions(DegradeOptionsSchema, { ...cmd.optsWithGlobals(), mode });
      const ctx = context();
      const flag: DegradeFlag = degradeFlagSchema().parse(
        opts.mode === 'on'
          ? { degraded: true, reason: opts.reason, setBy: ctx.actor }
          : { degraded: false, ...(opts.reason ? { reason: opts.reason } : {}), setBy: ctx.actor },
      );
      const name = ctx.config.degradeFlagName;
      if (opts.dryRun !== true) {
        const { PutParameterCommand } = await import('@aws-sdk/client-ssm');
        await ctx.clients.ssm.send(
          new PutParameterCommand({
            Name: name,
            Value: JSON.stringify(flag),
            Type: 'String',
            Overwrite: true,
          }),
        );
      }
      const result = { flagName: name, flag, dryRun: opts.dryRun === true };
      ctx.out(
        opts.json === true
          ? JSON.stringify(result, null, 2)
          : `${result.dryRun ? '[dry run] would set' : 'set'} ${name} = ${JSON.stringify(flag)}`,
      );
    });
};
