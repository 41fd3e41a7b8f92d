/**
 * Stuck jobs (runbooks/stuck-jobs.md): a job hangs on a dependency until the function times out.
 * Its message stays in flight (a FIFO group waits behind it), and nothing fails loudly. The runbook
 * reads the in-flight count and the oldest age, does not pause a critical consumer, and lets the
 * visibility timeout hand the job back: it is done once. The reference's capture hangs at its own
 * crash point before the charge; a declared job type (`--job-type`, or the app's first with a
 * samplePayload) hangs at the runner's point before its code runs (`before-run`).
 */
import { GetQueueAttributesCommand, SetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { drillInfo } from '../ops/drills/catalog';
import type { Drill, DrillCheck, DrillContext } from './drill';
import { DeclaredDrillJobs, declaredDrillJobType } from './drill-jobs';
import {
  consumerStatus,
  jobTarget,
  ledgerEntriesFor,
  orderStates,
  placePaidOrders,
  queueDepth,
} from './support';

const info = drillInfo('stuck-jobs');

/** What hangs and how it is judged: the reference's capture, or a declared job type's job. */
interface StuckJob {
  readonly target: ReturnType<typeof jobTarget>;
  /** The point the next invocation hangs at. */
  readonly point: string;
  /** Sends the job that will hang. */
  send(): Promise<void>;
  /** Its side effects so far (0 while it hangs). */
  effects(): Promise<number>;
  /** Waits until it is done (after the visibility timeout handed it back). */
  untilDone(deadlineMs: number): Promise<string>;
  /** Its checks once done: done exactly once. */
  checks(): Promise<DrillCheck[]>;
}

function referenceCapture(ctx: DrillContext): StuckJob {
  let orderId = '';
  const charges = (): number => ledgerEntriesFor(ctx, 'payment', orderId);
  return {
    target: jobTarget(ctx, info.jobType ?? ''),
    point: 'hang:before-side-effect',
    async send() {
      const [order] = await placePaidOrders(ctx, 1);
      if (order === undefined) throw new Error('no order placed');
      orderId = order.orderId;
    },
    effects: () => Promise.resolve(charges()),
    untilDone: (deadlineMs) =>
      ctx.until(
        async () => {
          const s = (await orderStates(ctx, [orderId])).get(orderId);
          return s === 'PENDING' || s === undefined ? undefined : s;
        },
        'the capture to come back after the visibility timeout',
        deadlineMs,
      ),
    checks: () =>
      Promise.resolve([
        ctx.check(
          'captured once after the timeout',
          charges() === 1,
          `${charges()} charge(s) for ${orderId}`,
        ),
      ]),
  };
}

function declaredJob(ctx: DrillContext, jobs: DeclaredDrillJobs): StuckJob {
  const ids = jobs.ids('stuck');
  return {
    target: jobs.target,
    point: 'hang:before-run',
    async send() {
      await jobs.sendOne('stuck');
    },
    effects: async () => ((await jobs.verdictOf(ids)).outcome === 'lost' ? 0 : 1),
    untilDone: (deadlineMs) =>
      ctx.until(
        async () => ((await jobs.verdictOf(ids)).outcome === 'lost' ? undefined : 'done'),
        `${ids.idempotencyKey} to come back after the visibility timeout`,
        deadlineMs,
      ),
    checks: () => jobs.checks(),
  };
}

export const stuckJobs: Drill = {
  ...info,
  async run(ctx) {
    const declared = declaredDrillJobType(ctx, info);
    const stuck =
      declared === undefined ? referenceCapture(ctx) : declaredJob(ctx, new DeclaredDrillJobs(ctx, declared));
    const payments = stuck.target;
    const job = ctx.config.jobTypes.find((j) => j.name === payments.jobType);
    if (job === undefined) throw new Error(`no ${payments.jobType} job type`);
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
      ctx.platform.crashInvocations(payments.functionName, [stuck.point], 1);
      await stuck.send();
      await ctx.until(async () => {
        const d = await queueDepth(ctx.sqs, payments.queueUrl);
        return d.inFlight > 0 ? true : undefined;
      }, `the ${payments.jobType} job to be in flight`);
      await new Promise((r) => setTimeout(r, 3_000));
      const status = await consumerStatus(ctx, payments.consumer);
      const effectsWhileStuck = await stuck.effects();
      await stuck.untilDone((job.function.timeoutSeconds + 5) * 1_000 + 60_000);
      const after = await consumerStatus(ctx, payments.consumer);
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
        ...(await stuck.checks()),
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
