/**
 * Stuck jobs (runbooks/stuck-jobs.md): a payment capture hangs on a dependency until the function
 * times out. Its message stays in flight, its FIFO group waits, and nothing fails loudly. The
 * runbook reads the in-flight count and the oldest age, does not pause a critical consumer, and
 * lets the visibility timeout hand the job back: it is captured once.
 */
import { GetQueueAttributesCommand, SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { drillInfo } from '../ops/drills/catalog';
import type { Drill } from './drill';
import {
  consumerStatus,
  jobTarget,
  ledgerEntriesFor,
  orderStates,
  placePaidOrders,
  queueDepth,
} from './support';

export const stuckJobs: Drill = {
  ...drillInfo('stuck-jobs'),
  async run(ctx) {
    const payments = jobTarget(ctx, 'payment.capture');
    const job = ctx.config.jobTypes.find((j) => j.name === 'payment.capture');
    if (job === undefined) throw new Error('no payment.capture job type');
    // The deployed visibility is 6× the timeout; the drill shortens it so the job returns within
    // a minute, and restores it at the end.
    const { Attributes } = await ctx.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: payments.queueUrl, AttributeNames: ['VisibilityTimeout'] }),
    );
    const deployedVisibility = Attributes?.VisibilityTimeout ?? String(job.visibilityTimeoutSeconds);
    await ctx.sqs.send(
      new SetQueueAttributesCommand({
        QueueUrl: payments.queueUrl,
        Attributes: { VisibilityTimeout: String(job.function.timeoutSeconds + 5) },
      }),
    );
    // The local event source re-reads the queue's visibility timeout every 5 s.
    await new Promise((r) => setTimeout(r, 6_000));
    const dlqBefore = await queueDepth(ctx.sqs, payments.dlqUrl);
    try {
      ctx.platform.crashInvocations(payments.functionName, ['hang:before-side-effect'], 1);
      const [order] = await placePaidOrders(ctx, 1);
      if (order === undefined) throw new Error('no order placed');
      await ctx.until(async () => {
        const d = await queueDepth(ctx.sqs, payments.queueUrl);
        return d.inFlight > 0 ? true : undefined;
      }, 'the capture to be in flight');
      await new Promise((r) => setTimeout(r, 3_000));
      const stuck = await consumerStatus(ctx, payments.consumer);
      const chargedWhileStuck = ledgerEntriesFor(ctx, 'payment', order.orderId);
      const state = await ctx.until(
        async () => {
          const s = (await orderStates(ctx, [order.orderId])).get(order.orderId);
          return s === 'PENDING' || s === undefined ? undefined : s;
        },
        'the capture to come back after the visibility timeout',
        (job.function.timeoutSeconds + 5) * 1_000 + 60_000,
      );
      const after = await consumerStatus(ctx, payments.consumer);
      return [
        ctx.check(
          'stuck job visible in status',
          (stuck.inFlight ?? 0) >= 1 && !stuck.paused,
          `in flight ${stuck.inFlight ?? '-'}, depth ${stuck.depth ?? '-'}, paused=${stuck.paused}`,
        ),
        ctx.check(
          'no charge while stuck',
          chargedWhileStuck === 0,
          `${chargedWhileStuck} charge(s) while hung`,
        ),
        ctx.check(
          'captured once after the timeout',
          ledgerEntriesFor(ctx, 'payment', order.orderId) === 1,
          `order ${state}, ${ledgerEntriesFor(ctx, 'payment', order.orderId)} charge(s)`,
        ),
        ctx.check(
          'nothing left in flight, nothing dead-lettered',
          (after.inFlight ?? 0) === 0 && (after.dlqDepth ?? 0) === dlqBefore.visible + dlqBefore.inFlight,
          `in flight ${after.inFlight ?? '-'}, DLQ ${after.dlqDepth ?? '-'} (held ${dlqBefore.visible + dlqBefore.inFlight} before)`,
        ),
      ];
    } finally {
      ctx.platform.crashInvocations(payments.functionName, [], 0);
      await ctx.sqs.send(
        new SetQueueAttributesCommand({
          QueueUrl: payments.queueUrl,
          Attributes: { VisibilityTimeout: deployedVisibility },
        }),
      );
    }
  },
};
