/**
 * Backlog (runbooks/backlog.md): a consumer paused for maintenance while orders keep coming; its
 * queue grows and its oldest message ages. The runbook reads the status, resumes, and watches the
 * queue drain with every job done once.
 */
import { drillInfo } from '../ops/drills/catalog';
import type { Drill } from './drill';
import {
  consumerStatus,
  jobTarget,
  ledgerEntriesFor,
  oncePerOrderChecks,
  orderStates,
  placePaidOrders,
  queueDepth,
  untilNotifiedAndDrained,
} from './support';

export const backlog: Drill = {
  ...drillInfo('backlog'),
  async run(ctx) {
    const notifications = jobTarget(ctx, 'notification.send');
    const dlqBefore = await queueDepth(ctx.sqs, notifications.dlqUrl);
    const paused = await ctx.tenang([
      'pause',
      notifications.consumer,
      '--reason',
      'provider maintenance window (drill)',
      '--for',
      '1h',
    ]);
    const orders = await placePaidOrders(ctx, 4);
    const backlogDepth = await ctx.until(async () => {
      const d = await queueDepth(ctx.sqs, notifications.queueUrl);
      return d.visible >= orders.length ? d.visible : undefined;
    }, 'the backlog to build up behind the paused consumer');
    const during = await consumerStatus(ctx, notifications.consumer);
    const notifiedWhilePaused = orders.filter(
      (o) => ledgerEntriesFor(ctx, 'messaging', o.orderId) > 0,
    ).length;

    const resumed = await ctx.tenang(['resume', notifications.consumer]);
    await untilNotifiedAndDrained(ctx, orders, notifications.queueUrl);
    const after = await consumerStatus(ctx, notifications.consumer);
    const dlq = await queueDepth(ctx.sqs, notifications.dlqUrl);
    return [
      ctx.check('pause accepted', paused.code === 0, `tenang pause exited ${paused.code}`),
      ctx.check(
        'backlog visible in status',
        during.paused && (during.depth ?? 0) >= orders.length,
        `status while paused: paused=${during.paused}, depth ${during.depth ?? '-'} (queue held ${backlogDepth})`,
      ),
      ctx.check(
        'nothing done while paused',
        notifiedWhilePaused === 0,
        `${notifiedWhilePaused} notified while paused`,
      ),
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
      ...oncePerOrderChecks(
        ctx,
        orders,
        await orderStates(
          ctx,
          orders.map((o) => o.orderId),
        ),
      ),
    ];
  },
};
