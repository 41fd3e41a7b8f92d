/**
 * Backlog (runbooks/backlog.md): a consumer paused for maintenance while its jobs keep coming; its
 * queue grows and its oldest message ages. The runbook reads the status, resumes, and watches the
 * queue drain with every job done once. Any job type: `--job-type`, else the app's default for
 * the drill (drill-jobs.ts).
 */
import { drillInfo } from '../ops/drills/catalog';
import type { Drill } from './drill';
import { drillJobs } from './drill-jobs';
import { consumerStatus, queueDepth } from './support';

/** Jobs queued behind the paused consumer. */
const BACKLOG_JOBS = 4;

const info = drillInfo('backlog');

export const backlog: Drill = {
  ...info,
  async run(ctx) {
    const jobs = drillJobs(ctx, info);
    const target = jobs.target;
    const dlqBefore = await queueDepth(ctx.sqs, target.dlqUrl);
    const paused = await ctx.tenang([
      'pause',
      target.consumer,
      '--reason',
      'provider maintenance window (drill)',
      '--for',
      '1h',
    ]);
    await jobs.send(BACKLOG_JOBS);
    const backlogDepth = await ctx.until(async () => {
      const d = await queueDepth(ctx.sqs, target.queueUrl);
      return d.visible >= BACKLOG_JOBS ? d.visible : undefined;
    }, 'the backlog to build up behind the paused consumer');
    const during = await consumerStatus(ctx, target.consumer);
    const doneWhilePaused = await jobs.done();

    const resumed = await ctx.tenang(['resume', target.consumer]);
    await jobs.untilDone();
    const after = await consumerStatus(ctx, target.consumer);
    const dlq = await queueDepth(ctx.sqs, target.dlqUrl);
    return [
      ctx.check('pause accepted', paused.code === 0, `tenang pause exited ${paused.code}`),
      ctx.check(
        'backlog visible in status',
        during.paused && (during.depth ?? 0) >= BACKLOG_JOBS,
        `status while paused: paused=${during.paused}, depth ${during.depth ?? '-'} (queue held ${backlogDepth})`,
      ),
      ctx.check('nothing done while paused', doneWhilePaused === 0, `${doneWhilePaused} done while paused`),
      ctx.check('resume accepted', resumed.code === 0, `tenang resume exited ${resumed.code}`),
      ctx.check(
        'drained after resume',
        !after.paused && after.mappingState === 'Enabled' && (after.depth ?? 0) === 0,
        `paused=${after.paused}, mapping ${after.mappingState}, depth ${after.depth ?? '-'}`,
      ),
      ctx.check(
        'nothing dead-lettered',
        dlq.visible + dlq.inFlight === dlqBefore.visible + dlqBefore.inFlight,
        `DLQ held ${dlqBefore.visible + dlqBefore.inFlight} before the drill, ${dlq.visible + dlq.inFlight} after`,
      ),
      ...(await jobs.checks()),
    ];
  },
};
