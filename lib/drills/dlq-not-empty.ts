/**
 * DLQ not empty (runbooks/dlq-not-empty.md): the payments DLQ holds a poison message, a capture
 * that ran out of attempts during a provider outage, and a capture that a later delivery already
 * did. The runbook lists them, replays with a dry run first, then replays the transient failures:
 * the undone capture happens once, the done one is skipped, the poison stays for a human. Any job
 * type: `--job-type` a declared one plays the same three on its DLQ, with jobs made from its
 * `samplePayload` and judged done once by its idempotency record and its providers' ledgers.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SendMessageCommand, type MessageAttributeValue } from '@aws-sdk/client-sqs';
import { DLQ_ATTRIBUTE } from '../adapters/aws/sqs-job-runner';
import { makeEnvelope } from '../core/envelope';
import { paymentCaptureKey } from '../../examples/reference/domain/payment';
import { drillInfo } from '../ops/drills/catalog';
import type { Drill, DrillCheck, DrillContext } from './drill';
import { declaredDrillJobType, DeclaredDrillJobs } from './drill-jobs';
import {
  createOrder,
  jobTarget,
  ledgerEntriesFor,
  orderStates,
  placePaidOrders,
  queueDepth,
  seedSku,
  type JobTarget,
} from './support';

/** What the job runner puts on a message it dead-letters after its last attempt. */
function exhaustedAttributes(
  jobType: string,
  correlationId: string,
  cause: string,
): Record<string, MessageAttributeValue> {
  const at = new Date().toISOString();
  const s = (v: string): MessageAttributeValue => ({ DataType: 'String', StringValue: v });
  return {
    [DLQ_ATTRIBUTE.errorClass]: s('TransientError'),
    [DLQ_ATTRIBUTE.errorKind]: s('transient'),
    [DLQ_ATTRIBUTE.errorMessage]: s(cause),
    [DLQ_ATTRIBUTE.attempts]: { DataType: 'Number', StringValue: '5' },
    [DLQ_ATTRIBUTE.firstFailureAt]: s(at),
    [DLQ_ATTRIBUTE.lastFailureAt]: s(at),
    [DLQ_ATTRIBUTE.jobType]: s(jobType),
    [DLQ_ATTRIBUTE.correlationId]: s(correlationId),
  };
}

async function deadLetterCapture(
  ctx: DrillContext,
  dlqUrl: string,
  capture: { orderId: string; paymentId: string; amountMinor: number },
): Promise<void> {
  const correlationId = `drill-${capture.paymentId}`;
  const job = makeEnvelope(
    'payment.capture',
    {
      orderId: capture.orderId,
      paymentId: capture.paymentId,
      amountMinor: capture.amountMinor,
      currency: 'EUR',
    },
    { idempotencyKey: paymentCaptureKey(capture.paymentId), correlationId, now: new Date() },
  );
  await ctx.sqs.send(
    new SendMessageCommand({
      QueueUrl: dlqUrl,
      MessageBody: JSON.stringify(job),
      MessageGroupId: capture.orderId,
      MessageDeduplicationId: `${capture.paymentId}-dead`,
      MessageAttributes: exhaustedAttributes(
        'payment.capture',
        correlationId,
        'payment provider unavailable on every attempt',
      ),
    }),
  );
}

/** A poison message, through the real consumer, which dead-letters it on its first attempt. */
async function sendPoison(ctx: DrillContext, target: JobTarget, fifo: boolean): Promise<void> {
  await ctx.sqs.send(
    new SendMessageCommand({
      QueueUrl: target.queueUrl,
      MessageBody: `{"type":"${target.jobType}", this is not JSON`,
      ...(fifo
        ? { MessageGroupId: `poison-${ctx.runId}`, MessageDeduplicationId: `poison-${ctx.runId}` }
        : {}),
    }),
  );
}

/** The incident in a job type's DLQ, and the domain checks of its recovery. */
interface DlqIncident {
  readonly target: JobTarget;
  /** Waits until the replayed job is done. */
  untilReplayedDone(): Promise<void>;
  /** The exhausted job done once, the done job not repeated. */
  checks(): Promise<DrillCheck[]>;
}

/** The payments DLQ: a capture already done and one never done, both dead-lettered as exhausted. */
async function captureIncident(ctx: DrillContext): Promise<DlqIncident> {
  const payments = jobTarget(ctx, 'payment.capture');
  await sendPoison(ctx, payments, true);
  // A capture that was done (and whose earlier delivery was dead-lettered), and one never done.
  const [done] = await placePaidOrders(ctx, 1);
  if (done === undefined) throw new Error('no order placed');
  await ctx.until(
    async () => ((await orderStates(ctx, [done.orderId])).get(done.orderId) === 'PENDING' ? undefined : true),
    `order ${done.orderId} to be paid`,
  );
  await seedSku(ctx, `sku-${ctx.runId}-b`);
  const undone = await createOrder(ctx, 2, `sku-${ctx.runId}-b`);
  const undonePayment = `pay-${ctx.runId}-exhausted`;
  await deadLetterCapture(ctx, payments.dlqUrl, done);
  await deadLetterCapture(ctx, payments.dlqUrl, { ...undone, paymentId: undonePayment });
  return {
    target: payments,
    async untilReplayedDone() {
      await ctx.until(
        async () =>
          (await orderStates(ctx, [undone.orderId])).get(undone.orderId) === 'PENDING' ? undefined : true,
        `the replayed capture of ${undone.orderId}`,
      );
    },
    async checks() {
      const states = await orderStates(ctx, [done.orderId, undone.orderId]);
      return [
        ctx.check(
          'exhausted capture done once',
          ['PAID', 'RESERVED'].includes(states.get(undone.orderId) ?? '') &&
            ledgerEntriesFor(ctx, 'payment', undone.orderId) === 1,
          `order ${states.get(undone.orderId)}, ${ledgerEntriesFor(ctx, 'payment', undone.orderId)} charge(s)`,
        ),
        ctx.check(
          'done capture not repeated',
          ledgerEntriesFor(ctx, 'payment', done.orderId) === 1,
          `${ledgerEntriesFor(ctx, 'payment', done.orderId)} charge(s) for the capture already done`,
        ),
      ];
    },
  };
}

/** A declared job type's DLQ: a job already done and one never done, both dead-lettered as exhausted. */
async function declaredIncident(ctx: DrillContext, jobs: DeclaredDrillJobs): Promise<DlqIncident> {
  const { target } = jobs;
  const fifo = jobs.jobType.queue.kind === 'fifo';
  await sendPoison(ctx, target, fifo);
  const done = await jobs.sendOne('done');
  await ctx.until(
    async () => ((await jobs.verdictOf(done)).outcome === 'lost' ? undefined : true),
    `${done.idempotencyKey} to be done`,
  );
  const undone = jobs.ids('exhausted');
  jobs.track(undone);
  for (const job of [done, undone]) {
    const message = jobs.message({ ...job, deduplicationId: `${job.idempotencyKey}-dead` }, target.dlqUrl);
    await ctx.sqs.send(
      new SendMessageCommand({
        ...message,
        MessageAttributes: exhaustedAttributes(
          target.jobType,
          job.correlationId,
          `${target.jobType}: a dependency unavailable on every attempt`,
        ),
      }),
    );
  }
  return {
    target,
    async untilReplayedDone() {
      await ctx.until(
        async () => ((await jobs.verdictOf(undone)).outcome === 'lost' ? undefined : true),
        `the replayed ${undone.idempotencyKey}`,
      );
    },
    async checks() {
      const [exhausted, already] = [await jobs.verdictOf(undone), await jobs.verdictOf(done)];
      return [
        ctx.check(
          `exhausted ${target.jobType} done once`,
          exhausted.outcome === 'ok',
          `${exhausted.outcome}: ${exhausted.detail}`,
        ),
        ctx.check(
          `done ${target.jobType} not repeated`,
          already.outcome === 'ok',
          `${already.outcome}: ${already.detail}`,
        ),
      ];
    },
  };
}

const info = drillInfo('dlq-not-empty');

export const dlqNotEmpty: Drill = {
  ...info,
  async run(ctx) {
    const declared = declaredDrillJobType(ctx, info);
    const incident =
      declared === undefined
        ? await captureIncident(ctx)
        : await declaredIncident(ctx, new DeclaredDrillJobs(ctx, declared));
    const { jobType, dlqUrl } = incident.target;
    await ctx.until(async () => {
      const d = await queueDepth(ctx.sqs, dlqUrl);
      return d.visible + d.inFlight >= 3 ? true : undefined;
    }, 'the poison message to reach the DLQ');

    // The runbook: look, dry run, replay the transient failures only.
    await ctx.tenang(['status']);
    const listed = await ctx.tenang(['dlq', 'list', jobType, '--json']);
    const auditLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-drill-')), 'replay.jsonl');
    const dry = await ctx.tenang([
      'dlq',
      'replay',
      jobType,
      '--error-class',
      'TransientError',
      '--dry-run',
      '--audit-log',
      `${auditLog}.dry-run`,
    ]);
    const replay = await ctx.tenang([
      'dlq',
      'replay',
      jobType,
      '--error-class',
      'TransientError',
      '--yes',
      '--audit-log',
      auditLog,
    ]);
    await incident.untilReplayedDone();
    const left = await ctx.until(async () => {
      const d = await queueDepth(ctx.sqs, dlqUrl);
      return d.inFlight === 0 ? d.visible : undefined;
    }, 'the DLQ to settle');
    const remaining = await ctx.tenang(['dlq', 'list', jobType, '--json']);
    const remainingClasses = (
      JSON.parse(remaining.out) as { messages: { errorClass?: string }[] }
    ).messages.map((m) => m.errorClass ?? '-');
    const decisions = fs.existsSync(auditLog)
      ? fs.readFileSync(auditLog, 'utf8').split('\n').filter(Boolean).length
      : 0;
    fs.rmSync(path.dirname(auditLog), { recursive: true, force: true });
    return [
      ctx.check(
        'listing found all three',
        listed.code === 0 && (JSON.parse(listed.out) as { seen: number }).seen >= 3,
        `dlq list exited ${listed.code}`,
      ),
      ctx.check('dry run changed nothing', dry.code === 0, `dry run exited ${dry.code}`),
      ctx.check('replay succeeded', replay.code === 0, `replay exited ${replay.code}: ${replay.err.trim()}`),
      ...(await incident.checks()),
      ctx.check(
        'only the poison message stays',
        left === 1 && remainingClasses.length === 1 && remainingClasses[0] !== 'TransientError',
        `DLQ holds ${left}: ${remainingClasses.join(', ')}`,
      ),
      ctx.check('every decision audited', decisions >= 2, `${decisions} line(s) in the audit log`),
    ];
  },
};
