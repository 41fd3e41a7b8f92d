/**
 * Pause overdue (runbooks/pause-overdue.md): a consumer paused "for a few seconds" is still
 * paused after its pause expired. An expired pause never resumes by itself (the cause may still be
 * there): it alarms, and the runbook resumes it once the cause is gone, or extends it with a reason.
 * Any job type: `--job-type`, else the app's default for the drill (drill-jobs.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { drillInfo } from '../ops/drills/catalog';
import type { Drill } from './drill';
import { drillJobs } from './drill-jobs';
import { consumerStatus } from './support';

const info = drillInfo('pause-overdue');

export const pauseOverdue: Drill = {
  ...info,
  async run(ctx) {
    const jobs = drillJobs(ctx, info);
    const target = jobs.target;
    const paused = await ctx.tenang([
      'pause',
      target.consumer,
      '--reason',
      'quick provider check (drill)',
      '--for',
      '5s',
    ]);
    await jobs.send(2);
    await sleep(7_000);
    const overdue = await consumerStatus(ctx, target.consumer);
    // Extending is the other way out; the drill extends once, then resumes.
    const extended = await ctx.tenang([
      'pause',
      target.consumer,
      '--reason',
      'provider still being checked (drill)',
      '--for',
      '10m',
    ]);
    const afterExtend = await consumerStatus(ctx, target.consumer);
    const resumed = await ctx.tenang(['resume', target.consumer]);
    await jobs.untilDone();
    const after = await consumerStatus(ctx, target.consumer);
    return [
      ctx.check('pause accepted', paused.code === 0, `tenang pause exited ${paused.code}`),
      ctx.check(
        'expired pause is overdue, not resumed',
        overdue.paused && overdue.pauseOverdue && overdue.mappingState === 'Disabled',
        `paused=${overdue.paused}, overdue=${overdue.pauseOverdue}, mapping ${overdue.mappingState}`,
      ),
      ctx.check(
        'extension clears overdue',
        extended.code === 0 && afterExtend.paused && !afterExtend.pauseOverdue,
        `pause --for 10m exited ${extended.code}; overdue=${afterExtend.pauseOverdue}`,
      ),
      ctx.check(
        'resumed and drained',
        resumed.code === 0 && !after.paused && after.mappingState === 'Enabled',
        `resume exited ${resumed.code}; paused=${after.paused}, mapping ${after.mappingState}`,
      ),
      ...(await jobs.checks()),
    ];
  },
};
