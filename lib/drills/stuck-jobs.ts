/**
 * Stuck jobs (runbooks/stuck-jobs.md): a job hangs on a dependency until the function times out.
 * Its message stays in flight (a FIFO group waits behind it), and nothing fails loudly. The runbook
 * reads the in-flight count and the oldest age, does not pause a critical consumer, and lets the
 * visibility timeout hand the job back: it is done once. Any job type (`--job-type`, else the
 * app's default for the drill): the job hangs at the runner's point before its code runs
 * (`before-run`), so nothing of it is done while it hangs.
 */
import { GetQueueAttributesCommand, SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { drillInfo } from '../ops/drills/catalog';
import type { Drill } from './drill';
import { drillJobs } from './drill-jobs';
import { consumerStatus, queueDepth } from './support';

const info = drillInfo('stuck-jobs');

/** Where the stuck job hangs: the runner's point before the job's own code, for any job type. */
const HANG_POINT = 'hang:before-run';

export const stuckJobs: Drill = {
  ...info,
  async run(ctx) {
    const jobs = drillJobs(ctx, info);
    const stuckTarget = jobs.target;
    const job = ctx.config.jobTypes.find((j) => j.name === stuckTarget.jobType);
    if (job === undefined) throw new Error(`no ${stuckTarget.jobType} job type`);
    // The deployed visibility is 6× the timeout; the drill shortens it so the job returns within
    // a minute, and restores it at the end.
    const { Attributes } = await ctx.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: stuckTarget.queueUrl,
        AttributeNames: ['VisibilityTimeout'],
      }),
    );
    const deployedVisibility = Attributes?.VisibilityTimeout ?? String(job.visibilityTimeoutSeconds);
    await ctx.sqs.send(
      new SetQueueAttributesCommand({
        QueueUrl: stuckTarget.queueUrl,
        Attributes: { VisibilityTimeout: String(job.function.timeoutSeconds + 5) },
      }),
    );
    // The local event source re-reads the queue's visibility timeout every 5 s.
    await new Promise((r) => setTimeout(r, 6_000));
    const dlqBefore = await queueDepth(ctx.sqs, stuckTarget.dlqUrl);
    try {
      ctx.platform.crashInvocations(stuckTarget.functionName, [HANG_POINT], 1);
      const stuck = await jobs.sendOne('stuck');
      await ctx.until(async () => {
        const d = await queueDepth(ctx.sqs, stuckTarget.queueUrl);
        return d.inFlight > 0 ? true : undefined;
      }, `the ${stuckTarget.jobType} job to be in flight`);
      await new Promise((r) => setTimeout(r, 3_000));
      const status = await consumerStatus(ctx, stuckTarget.consumer);
      const effectsWhileStuck = (await jobs.verdictOf(stuck)).outcome === 'lost' ? 0 : 1;
      await ctx.until(
        async () => ((await jobs.verdictOf(stuck)).outcome === 'lost' ? undefined : true),
        `${stuck.idempotencyKey} to come back after the visibility timeout`,
        (job.function.timeoutSeconds + 5) * 1_000 + 60_000,
      );
      const after = await consumerStatus(ctx, stuckTarget.consumer);
      return [
        ctx.check(
          'stuck job visible in status',
          (status.inFlight ?? 0) >= 1 && !status.paused,
          `in flight ${status.inFlight ?? '-'}, depth ${status.depth ?? '-'}, paused=${status.paused}`,
        ),
        ctx.check(
          'no effect while stuck',
          effectsWhileStuck === 0,
          `${effectsWhileStuck} effect(s) while hung`,
        ),
        ...(await jobs.checks()),
        ctx.check(
          'nothing left in flight, nothing dead-lettered',
          (after.inFlight ?? 0) === 0 && (after.dlqDepth ?? 0) === dlqBefore.visible + dlqBefore.inFlight,
          `in flight ${after.inFlight ?? '-'}, DLQ ${after.dlqDepth ?? '-'} (held ${dlqBefore.visible + dlqBefore.inFlight} before)`,
        ),
      ];
    } finally {
      ctx.platform.crashInvocations(stuckTarget.functionName, [], 0);
      await ctx.sqs.send(
        new SetQueueAttributesCommand({
          QueueUrl: stuckTarget.queueUrl,
          Attributes: { VisibilityTimeout: deployedVisibility },
        }),
      );
    }
  },
};
