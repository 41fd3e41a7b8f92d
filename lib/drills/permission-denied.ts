/**
 * Permission denied (runbooks/permission-denied.md): a deploy leaves a consumer without its grant
 * on one of its tables, so every job it receives is denied. The runner holds each one (never
 * dead-letters it) and pages; the runbook pauses the consumer so the held jobs stop spending
 * receives, "deploys the fix", resumes, and the held jobs come back when their holds end and are
 * done once each. Any job type with a table grant (its own table, else tenang's idempotency
 * table): `--job-type`, else the app's default for the drill (drill-jobs.ts).
 *
 * The missing grant is played by the platform's IAM enforcement: the consumer's role loses every
 * action its declaration grants on that table (LocalPlatform.withholdTableGrant), so DynamoDB's
 * own AccessDeniedException comes back from the emulator's IAM, with AWS's message. Restoring the
 * grants is the fixed deploy.
 */
import { PERMISSION_HOLD_BASE_VARIABLE } from '../adapters/aws/sqs-job-runner';
import { IDEMPOTENCY_TABLE, tableVariable } from '../config';
import { drillInfo } from '../ops/drills/catalog';
import type { Drill } from './drill';
import { drillJobs, providerRequests } from './drill-jobs';
import { consumerStatus, functionEnv, queueDepth } from './support';

const info = drillInfo('permission-denied');

/**
 * The first hold's ceiling in the drill: AWS's 300 s compressed to 20 s (the platform's time
 * compression, as smoke scenarios shorten alarm periods), so the drill waits seconds, not minutes.
 */
const DRILL_HOLD_BASE_SECONDS = 20;

export const permissionDenied: Drill = {
  ...info,
  async run(ctx) {
    const jobs = drillJobs(ctx, info);
    const target = jobs.target;
    const dlqBefore = await queueDepth(ctx.sqs, target.dlqUrl);

    // Incident: the consumer's role lost its grants on one of its tables.
    const job = ctx.config.jobTypes.find((j) => j.name === target.jobType);
    // A table of the job's own before tenang's idempotency table, which every idempotent job has.
    const grants = Object.entries(job?.resources.tables ?? {}).sort(
      ([a], [b]) => Number(a === IDEMPOTENCY_TABLE.name) - Number(b === IDEMPOTENCY_TABLE.name),
    );
    const [table, actions] = grants[0] ?? [];
    if (table === undefined || actions === undefined || actions.length === 0)
      throw new Error(
        `drill permission-denied needs a job type with a table grant; ${target.jobType} declares none`,
      );
    ctx.platform.setInstanceEnvironment(target.functionName, {
      [PERMISSION_HOLD_BASE_VARIABLE]: String(DRILL_HOLD_BASE_SECONDS),
    });
    const tableName = functionEnv(ctx.platform, target.functionName, tableVariable(table));
    for (const action of actions)
      ctx.platform.withholdTableGrant(target.functionName, `dynamodb:${action}`, tableName);
    const sentBefore = providerRequests(jobs.providers);
    const sent = 3;
    await jobs.send(sent);
    // Every job is received, denied and held out of the queue: in flight, not visible.
    const held = await ctx.until(
      async () => {
        const d = await queueDepth(ctx.sqs, target.queueUrl);
        return d.inFlight >= sent && d.visible === 0 ? d : undefined;
      },
      'the denied jobs to be held in flight',
      90_000,
    );

    // Detect, then contain: pause, so the held jobs spend no more receives.
    const detected = await consumerStatus(ctx, target.consumer);
    const paused = await ctx.tenang([
      'pause',
      target.consumer,
      '--reason',
      `${table} table grant missing since the last deploy (drill)`,
      '--for',
      '30m',
    ]);
    const dlqWhileDenied = await queueDepth(ctx.sqs, target.dlqUrl);
    const sentWhileDenied = providerRequests(jobs.providers) - sentBefore;

    // The fixed grant is deployed (cdk deploy); then return to normal.
    ctx.platform.restoreGrants(target.functionName);
    const resumed = await ctx.tenang(['resume', target.consumer]);
    // A held job returns when its hold ends, at most DRILL_HOLD_BASE_SECONDS after it was held:
    // the wait for every job done (90 s) covers that and the receive and run after it.
    await jobs.untilDone();
    ctx.platform.setInstanceEnvironment(target.functionName, {});
    const after = await consumerStatus(ctx, target.consumer);
    const dlq = await queueDepth(ctx.sqs, target.dlqUrl);
    const dlqCount = (d: typeof dlq): number => d.visible + d.inFlight;
    return [
      ctx.check(
        'denied jobs held, not dead-lettered',
        held.inFlight >= sent && dlqCount(dlqWhileDenied) === dlqCount(dlqBefore),
        `${held.inFlight} in flight, ${held.visible} visible; DLQ ${dlqCount(dlqBefore)} before, ${dlqCount(dlqWhileDenied)} while denied`,
      ),
      ctx.check(
        'nothing sent while denied',
        sentWhileDenied === 0,
        `${sentWhileDenied} request(s) reached the job's providers while the grant was missing`,
      ),
      ctx.check(
        'in flight visible in status',
        (detected.inFlight ?? 0) >= sent,
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
      ...(await jobs.checks()),
    ];
  },
};
