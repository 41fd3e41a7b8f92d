/**
 * Retry storm (runbooks/retry-storm.md): the messaging provider is down, so every notification
 * fails and comes back after its backoff. The runbook pauses the sheddable consumer instead of
 * letting it hammer the provider, and resumes it once the provider is back.
 */
import { drillInfo } from '../ops/drills/catalog';
import type { Drill } from './drill';
import {
  consumerStatus,
  oncePerOrderChecks,
  orderStates,
  placePaidOrders,
  queueDepth,
  jobTarget,
  untilNotifiedAndDrained,
} from './support';

export const retryStorm: Drill = {
  ...drillInfo('retry-storm'),
  async run(ctx) {
    const messaging = ctx.platform.providers.messaging;
    const notifications = jobTarget(ctx, 'notification.send');
    // Incident: the provider is down; paid orders keep producing notifications that fail.
    messaging.set({ outage: true });
    const before = messaging.requestCount();
    const orders = await placePaidOrders(ctx, 3);
    await ctx.until(
      () => Promise.resolve(messaging.requestCount() - before >= orders.length ? true : undefined),
      'the notification consumer to fail against the provider',
    );

    // Detect, then contain: pause the sheddable consumer (its pause cost is late e-mails).
    const detected = await consumerStatus(ctx, notifications.consumer);
    const paused = await ctx.tenang([
      'pause',
      notifications.consumer,
      '--reason',
      'messaging provider outage (drill)',
      '--for',
      '30m',
    ]);
    // `tenang pause` returns once the mapping is Disabled (a batch already running finished); the
    // wait covers a reply still on its way from the provider.
    await new Promise((r) => setTimeout(r, 2_000));
    const requestsWhenPaused = messaging.requestCount();
    // Let the backoff of every failed message run out while paused: nothing reaches the provider.
    await new Promise((r) => setTimeout(r, 12_000));
    const requestsWhilePaused = messaging.requestCount() - requestsWhenPaused;

    // The provider recovers; return to normal.
    messaging.set({ outage: false });
    const resumed = await ctx.tenang(['resume', notifications.consumer]);
    await untilNotifiedAndDrained(ctx, orders, notifications.queueUrl);
    const after = await consumerStatus(ctx, notifications.consumer);
    const dlq = await queueDepth(ctx.sqs, notifications.dlqUrl);
    return [
      ctx.check('pause accepted', paused.code === 0, `tenang pause exited ${paused.code}`),
      ctx.check(
        'no provider calls while paused',
        requestsWhilePaused === 0,
        `${requestsWhilePaused} request(s) reached the provider while the consumer was paused`,
      ),
      ctx.check('resume accepted', resumed.code === 0, `tenang resume exited ${resumed.code}`),
      ctx.check(
        'consumer running again',
        !after.paused && after.mappingState === 'Enabled',
        `paused=${after.paused}, mapping ${after.mappingState} (was ${detected.mappingState} at detection)`,
      ),
      ctx.check(
        'nothing dead-lettered',
        dlq.visible + dlq.inFlight === 0,
        `DLQ holds ${dlq.visible + dlq.inFlight}`,
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
