/**
 * DLQ not empty (runbooks/dlq-not-empty.md): the payments DLQ holds a poison message, a capture
 * that ran out of attempts during a provider outage, and a capture that a later delivery already
 * did. The runbook lists them, replays with a dry run first, then replays the transient failures:
 * the undone capture happens once, the done one is skipped, the poison stays for a human.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SendMessageCommand, type MessageAttributeValue } from '@aws-sdk/client-sqs';
import { DLQ_ATTRIBUTE } from '../adapters/aws/sqs-job-runner';
import { makeEnvelope } from '../core/envelope';
import { paymentCaptureKey } from '../core/payment';
import { drillInfo } from '../ops/drills/catalog';
import type { Drill, DrillContext } from './drill';
import {
  createOrder,
  jobTarget,
  ledgerEntriesFor,
  orderStates,
  placePaidOrders,
  queueDepth,
  seedSku,
} from './support';

/** What the job runner puts on a message it dead-letters after its last attempt. */
function exhaustedAttributes(correlationId: string): Record<string, MessageAttributeValue> {
  const at = new Date().toISOString();
  const s = (v: string): MessageAttributeValue => ({ DataType: 'String', StringValue: v });
  return {
    [DLQ_ATTRIBUTE.errorClass]: s('TransientError'),
    [DLQ_ATTRIBUTE.errorKind]: s('transient'),
    [DLQ_ATTRIBUTE.errorMessage]: s('payment provider unavailable on every attempt'),
    [DLQ_ATTRIBUTE.attempts]: { DataType: 'Number', StringValue: '5' },
    [DLQ_ATTRIBUTE.firstFailureAt]: s(at),
    [DLQ_ATTRIBUTE.lastFailureAt]: s(at),
    [DLQ_ATTRIBUTE.jobType]: s('payment.capture'),
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
      MessageAttributes: exhaustedAttributes(correlationId),
    }),
  );
}

export const dlqNotEmpty: Drill = {
  ...drillInfo('dlq-not-empty'),
  async run(ctx) {
    const payments = jobTarget(ctx, 'payment.capture');
    // A poison message goes through the real consumer, which dead-letters it on its first attempt.
    await ctx.sqs.send(
      new SendMessageCommand({
        QueueUrl: payments.queueUrl,
        MessageBody: '{"type":"payment.capture", this is not JSON',
        MessageGroupId: `poison-${ctx.runId}`,
        MessageDeduplicationId: `poison-${ctx.runId}`,
      }),
    );
    // A capture that was done (and whose earlier delivery was dead-lettered), and one never done.
    const [done] = await placePaidOrders(ctx, 1);
    if (done === undefined) throw new Error('no order placed');
    await ctx.until(
      async () =>
        (await orderStates(ctx, [done.orderId])).get(done.orderId) === 'PENDING' ? undefined : true,
      `order ${done.orderId} to be paid`,
    );
    await seedSku(ctx, `sku-${ctx.runId}-b`);
    const undone = await createOrder(ctx, 2, `sku-${ctx.runId}-b`);
    const undonePayment = `pay-${ctx.runId}-exhausted`;
    await deadLetterCapture(ctx, payments.dlqUrl, done);
    await deadLetterCapture(ctx, payments.dlqUrl, { ...undone, paymentId: undonePayment });
    await ctx.until(async () => {
      const d = await queueDepth(ctx.sqs, payments.dlqUrl);
      return d.visible + d.inFlight >= 3 ? true : undefined;
    }, 'the poison message to reach the DLQ');

    // The runbook: look, dry run, replay the transient failures only.
    await ctx.tenang(['status']);
    const listed = await ctx.tenang(['dlq', 'list', 'payment.capture', '--json']);
    const auditLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-drill-')), 'replay.jsonl');
    const dry = await ctx.tenang([
      'dlq',
      'replay',
      'payment.capture',
      '--error-class',
      'TransientError',
      '--dry-run',
      '--audit-log',
      `${auditLog}.dry-run`,
    ]);
    const replay = await ctx.tenang([
      'dlq',
      'replay',
      'payment.capture',
      '--error-class',
      'TransientError',
      '--yes',
      '--audit-log',
      auditLog,
    ]);
    await ctx.until(
      async () =>
        (await orderStates(ctx, [undone.orderId])).get(undone.orderId) === 'PENDING' ? undefined : true,
      `the replayed capture of ${undone.orderId}`,
    );
    const left = await ctx.until(async () => {
      const d = await queueDepth(ctx.sqs, payments.dlqUrl);
      return d.inFlight === 0 ? d.visible : undefined;
    }, 'the DLQ to settle');
    const remaining = await ctx.tenang(['dlq', 'list', 'payment.capture', '--json']);
    const remainingClasses = (
      JSON.parse(remaining.out) as { messages: { errorClass?: string }[] }
    ).messages.map((m) => m.errorClass ?? '-');
    const decisions = fs.existsSync(auditLog)
      ? fs.readFileSync(auditLog, 'utf8').split('\n').filter(Boolean).length
      : 0;
    fs.rmSync(path.dirname(auditLog), { recursive: true, force: true });
    const states = await orderStates(ctx, [done.orderId, undone.orderId]);
    return [
      ctx.check(
        'listing found all three',
        listed.code === 0 && (JSON.parse(listed.out) as { seen: number }).seen >= 3,
        `dlq list exited ${listed.code}`,
      ),
      ctx.check('dry run changed nothing', dry.code === 0, `dry run exited ${dry.code}`),
      ctx.check('replay succeeded', replay.code === 0, `replay exited ${replay.code}: ${replay.err.trim()}`),
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
      ctx.check(
        'only the poison message stays',
        left === 1 && remainingClasses.length === 1 && remainingClasses[0] !== 'TransientError',
        `DLQ holds ${left}: ${remainingClasses.join(', ')}`,
      ),
      ctx.check('every decision audited', decisions >= 2, `${decisions} line(s) in the audit log`),
    ];
  },
};
