/**
 * Permission denied (runbooks/permission-denied.md): a deploy leaves the notification consumer
 * without its grant on the dedup table, so every notification it receives is denied. The runner
 * holds each one (never dead-letters it) and pages; the runbook pauses the consumer so the held
 * jobs stop spending receives, "deploys the fix", resumes, and the held jobs come back when their
 * holds end and are sent once each.
 *
 * The missing grant is played by the platform's IAM enforcement: the consumer's role loses the
 * first write its declaration grants on the dedup table (LocalPlatform.withholdTableGrant), so
 * DynamoDB's own AccessDeniedException comes back from the emulator's IAM, with AWS's message.
 * Restoring the grant is the fixed deploy.
 */
import { PERMISSION_HOLD_BASE_VARIABLE } from '../adapters/aws/sqs-job-runner';
import { IDEMPOTENCY_TABLE, tableVariable } from '../config';
import { drillInfo } from '../ops/drills/catalog';
import type { Drill, DrillContext } from './drill';
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

/** The deployed name of `table` as `functionName`'s environment holds it (`<NAME>_TABLE`). */
function deployedTableName(ctx: DrillContext, functionName: string, table: string): string {
  const name = ctx.platform.deployment.functions.get(functionName)?.environment[tableVariable(table)];
  if (name === undefined || name === '')
    throw new Error(`deployed function ${functionName} has no ${tableVariable(table)}`);
  return name;
}

export const permissionDenied: Drill = {
  ...drillInfo('permission-denied'),
  async run(ctx) {
    const notifications = jobTarget(ctx, 'notification.send');
    const messaging = ctx.platform.providers.messaging;
    const dlqBefore = await queueDepth(ctx.sqs, notifications.dlqUrl);

    // Incident: the consumer's role lost its grant on the dedup table.
    const job = ctx.config.jobTypes.find((j) => j.name === notifications.jobType);
    // A table of the job's own before tenang's idempotency table, which every idempotent job has.
    const grants = Object.entries(job?.resources.tables ?? {}).sort(
      ([a], [b]) => Number(a === IDEMPOTENCY_TABLE.name) - Number(b === IDEMPOTENCY_TABLE.name),
    );
    const [table, actions] = grants[0] ?? [];
    const action = actions?.[0];
    if (table === undefined || action === undefined)
      throw new Error(`${notifications.jobType} declares no table grant for the drill to withhold`);
    ctx.platform.setInstanceEnvironment(notifications.functionName, {
      [PERMISSION_HOLD_BASE_VARIABLE]: String(DRILL_HOLD_BASE_SECONDS),
    });
    ctx.platform.withholdTableGrant(
      notifications.functionName,
      `dynamodb:${action}`,
      deployedTableName(ctx, notifications.functionName, table),
    );
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
    ctx.platform.restoreGrants(notifications.functionName);
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
