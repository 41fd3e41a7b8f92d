/**
 * Permission denied (runbooks/permission-denied.md): a deploy leaves the notification consumer
 * without its grant on the dedup table, so every notification it receives is denied. The runner
 * holds each one (never dead-letters it) and pages; the runbook pauses the consumer so the held
 * jobs stop spending receives, "deploys the fix", resumes, and the held jobs come back when their
 * holds end and are sent once each.
 *
 * The missing grant is played with the SDK fault `ddb-access-denied` (TENANG_FAULTS): DynamoDB's
 * own AccessDeniedException, refused before it is sent. Lifting the fault is the fixed deploy.
 */
import { PERMISSION_HOLD_BASE_VARIABLE } from '../adapters/aws/sqs-job-runner';
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
  untilOncePerOrder,
} from './support';

/** Slack past the longest first hold for the returned jobs to be received and sent. */
const RETURN_SLACK_MS = 60_000;
/**
 * The first hold's ceiling in the drill: AWS's 300 s compressed to 20 s (the platform's time
 * compression, as smoke scenarios shorten alarm periods), so the drill waits seconds, not minutes.
 */
const DRILL_HOLD_BASE_SECONDS = 20;

export const permissionDenied: Drill = {
  ...drillInfo('permission-denied'),
  async run(ctx) {
    const notifications = jobTarget(ctx, 'notification.send');
    const messaging = ctx.platform.providers.messaging;
    const dlqBefore = await queueDepth(ctx.sqs, notifications.dlqUrl);

    // Incident: the consumer's role lost dynamodb:UpdateItem on the dedup table.
    ctx.platform.setInstanceEnvironment(notifications.functionName, {
      [PERMISSION_HOLD_BASE_VARIABLE]: String(DRILL_HOLD_BASE_SECONDS),
    });
    ctx.platform.setFaults(notifications.functionName, 'ddb-access-denied=1');
    const sentBefore = messaging.requestCount();
    const orders = await placePaidOrders(ctx, 3);
    // Every notification is received, denied and held out of the queue: in flight, not visible.
    const held = await ctx.until(
      async () => {
        const d = await queueDepth(ctx.sqs, notifications.queueUrl);
        return d.inFlight >= orders.length && d.visible === 0 ? d : undefined;
      },
      'the denied notifications to be held in flight',
      90_000,
    );
    // Every hold began by now: each ends within the first hold's ceiling from here.
    const heldBy = Date.now();

    // Detect, then contain: pause, so the held jobs spend no more receives.
    const detected = await consumerStatus(ctx, notifications.consumer);
    const paused = await ctx.tenang([
      'pause',
      notifications.consumer,
      '--reason',
      'dedup table grant missing since the last deploy (drill)',
      '--for',
      '30m',
    ]);
    const dlqWhileDenied = await queueDepth(ctx.sqs, notifications.dlqUrl);
    const sentWhileDenied = messaging.requestCount() - sentBefore;

    // The fixed grant is deployed (cdk deploy); then return to normal.
    ctx.platform.setFaults(notifications.functionName, '');
    const resumed = await ctx.tenang(['resume', notifications.consumer]);
    // A held job returns when its hold ends: at most the first hold's ceiling after it was held.
    const deadline = heldBy + DRILL_HOLD_BASE_SECONDS * 1_000 + RETURN_SLACK_MS - Date.now();
    await untilOncePerOrder(
      ctx,
      orders,
      (id) => ledgerEntriesFor(ctx, 'messaging', id),
      'every held notification to return and be sent',
      Math.max(deadline, RETURN_SLACK_MS),
    );
    await ctx.until(async () => {
      const d = await queueDepth(ctx.sqs, notifications.queueUrl);
      return d.visible + d.inFlight === 0 ? true : undefined;
    }, 'the notification queue to drain');
    ctx.platform.setInstanceEnvironment(notifications.functionName, {});
    const after = await consumerStatus(ctx, notifications.consumer);
    const dlq = await queueDepth(ctx.sqs, notifications.dlqUrl);
    const dlqCount = (d: typeof dlq): number => d.visible + d.inFlight;
    return [
      ctx.check(
        'denied jobs held, not dead-lettered',
        held.inFlight >= orders.length && dlqCount(dlqWhileDenied) === dlqCount(dlqBefore),
        `${held.inFlight} in flight, ${held.visible} visible; DLQ ${dlqCount(dlqBefore)} before, ${dlqCount(dlqWhileDenied)} while denied`,
      ),
      ctx.check(
        'nothing sent while denied',
        sentWhileDenied === 0,
        `${sentWhileDenied} request(s) reached the messaging provider while the grant was missing`,
      ),
      ctx.check(
        'in flight visible in status',
        (detected.inFlight ?? 0) >= orders.length,
        `status at detection: in flight ${detected.inFlight ?? '-'}, depth ${detected.depth ?? '-'}`,
      ),
      ctx.check('pause accepted', paused.code === 0, `tenang pause exited ${paused.code}`),
      ctx.check('resume accepted', resumed.code === 0, `tenang resume exited ${resumed.code}`),
      ctx.check(
        'consumer running again',
        !after.paused && after.mappingState === 'Enabled',
        `paused=${after.paused}, mapping ${after.mappingState}`,
      ),
      ctx.check(
        'nothing dead-lettered',
        dlqCount(dlq) === dlqCount(dlqBefore),
        `DLQ held ${dlqCount(dlqBefore)} before the drill, ${dlqCount(dlq)} after`,
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
