/**
 * `tenang status`: per job type and stream consumer, the backlog, the DLQ, whether the consumer
 * is paused (the flag: desired) and whether its mapping is enabled (actual), the degrade flag,
 * alarms in ALARM and the retry rate. Everything is read from the stack and CloudWatch
 * (lib/ops/pipeline-status.ts, loaded when the command runs).
 */
import type { Command } from 'commander';
import * as z from '../../config/zod';
import type { CliContext, RegisterCommand } from '../cli-context';
import { formatAge } from '../duration';
import { parseOptions } from '../options';
import type { PipelineStatus } from '../pipeline-status';
import { renderTable } from '../table';

const StatusOptionsSchema = z.object({
  json: z.optional(z.boolean()),
  watch: z.optional(z.boolean()),
  interval: z._default(
    z.pipe(
      z.string().check(z.regex(/^[1-9][0-9]*$/, 'must be a whole number of seconds')),
      z.transform((t: string) => Number(t)),
    ),
    5,
  ),
});

const dash = (v: number | undefined): string => (v === undefined ? '-' : String(v));

/** The human table of a status. */
export function renderStatus(status: PipelineStatus): string {
  const rows = status.consumers.map((c) => {
    let state = c.paused ? `PAUSED${c.pauseOverdue ? ' (OVERDUE)' : ''}` : 'enabled';
    if (c.drift) state += ` [mapping ${c.mappingState}]`;
    return {
      consumer: c.consumer,
      'job type': c.jobType ?? '(stream)',
      depth: dash(c.depth),
      'in flight': dash(c.inFlight),
      oldest: c.oldestAgeSeconds === undefined ? '-' : formatAge(c.oldestAgeSeconds * 1000),
      dlq: dash(c.dlqDepth),
      expired: dash(c.expiredDepth),
      state,
      'retry %': dash(c.retryRatePercent),
      alarms:
        c.alarms.length === 0 ? '-' : c.alarms.map((a) => a.replace(`tenang-${status.stage}-`, '')).join(','),
    };
  });
  const lines = [
    `stage ${status.stage} (${status.stackName}) at ${status.at}   degrade: ${status.degraded ? `ON (${status.degradeReason ?? 'no reason'})` : 'off'}`,
    '',
    renderTable(
      [
        'consumer',
        'job type',
        'depth',
        'in flight',
        'oldest',
        'dlq',
        'expired',
        'state',
        'retry %',
        'alarms',
      ],
      rows,
    ),
  ];
  const paused = status.consumers.filter((c) => c.paused);
  if (paused.length > 0) {
    lines.push('');
    for (const c of paused)
      lines.push(
        `${c.consumer} paused by ${c.pauseSetBy ?? '?'}: ${c.pauseReason ?? '(no reason)'}; until ${c.pauseUntil ?? '(no expiry)'}${c.pauseOverdue ? ' — OVERDUE' : ''}`,
      );
  }
  for (const c of status.consumers.filter((x) => x.flagInvalid !== undefined))
    lines.push(`${c.consumer}: pause flag is invalid (${c.flagInvalid}); treated as not paused`);
  return lines.join('\n');
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Registers `status`. */
export const register: RegisterCommand = (program: Command, context: () => CliContext): void => {
  program
    .command('status')
    .description('Show every consumer: backlog, oldest age, DLQ, paused or enabled, alarms, retry rate')
    .option('--json', 'print the status as JSON')
    .option('--watch', 'refresh until interrupted')
    .option('--interval <seconds>', 'refresh interval with --watch', '5')
    .addHelpText(
      'after',
      `
Oldest age is CloudWatch's ApproximateAgeOfOldestMessage (the newest datapoint of the last 5
minutes); "-" means no datapoint. Retry rate is JobRetried / attempts over the last 5 minutes.

Examples:
  $ tenang status
  $ tenang --stage prod status --json
  $ tenang status --watch --interval 10`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const opts = parseOptions(StatusOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
      const { readPipelineStatus } = await import('../pipeline-status');
      for (;;) {
        const status = await readPipelineStatus(ctx);
        ctx.out(opts.json === true ? JSON.stringify(status, null, 2) : renderStatus(status));
        if (opts.watch !== true) return;
        await sleep(opts.interval * 1000);
        if (opts.json !== true) ctx.out('');
      }
    });
};
