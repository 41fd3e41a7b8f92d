/**
 * Duplicate side effects (runbooks/duplicates.md): the same payment arrives many times — a client
 * retrying with its Idempotency-Key, a client retrying with a fresh key, and SQS delivering the
 * same job twice. The runbook checks the idempotency controls (status, audit) and the ledger:
 * one charge per payment, whatever the number of copies.
 */
import { jobTarget, queueDepth, sendMessage, type Drill } from 'tenang/local';
import { paymentCaptureKey } from '../domain';
import { makeEnvelope } from 'tenang/runtime';
import { createOrder, ledgerEntriesFor, orderStates, seedSku } from './support';

/** Copies of each request. */
const COPIES = 8;

export const duplicates: Drill = {
  name: 'duplicates',
  runbook: 'duplicates',
  incident: 'each payment is sent many times with its key, again with fresh keys, and delivered twice by SQS',
  consumers: ['payment-consumer', 'ingress'],
  async run(ctx) {
    const payments = jobTarget(ctx, 'payment.capture');
    const sku = `sku-${ctx.runId}`;
    await seedSku(ctx, sku);
    const orders = [await createOrder(ctx, 1, sku), await createOrder(ctx, 2, sku)];
    const answers: number[] = [];
    for (const [i, order] of orders.entries()) {
      const paymentId = `pay-${ctx.runId}-${i}`;
      const body = { paymentId, amountMinor: order.amountMinor, currency: 'EUR' };
      const sameKey = Array.from({ length: COPIES }, () =>
        ctx.api('POST', `/orders/${order.orderId}/payments`, body, { 'Idempotency-Key': `req-${paymentId}` }),
      );
      const freshKeys = Array.from({ length: COPIES }, (_, n) =>
        ctx.api('POST', `/orders/${order.orderId}/payments`, body, {
          'Idempotency-Key': `req-${paymentId}-retry-${n}`,
        }),
      );
      answers.push(...(await Promise.all([...sameKey, ...freshKeys])).map((a) => a.status));
      // SQS at-least-once: the same job delivered again under another deduplication id.
      const job = makeEnvelope(
        'payment.capture',
        { orderId: order.orderId, ...body },
        {
          idempotencyKey: paymentCaptureKey(paymentId),
          correlationId: `drill-${paymentId}`,
          now: new Date(),
        },
      );
      for (const copy of [1, 2]) {
        await sendMessage(ctx, {
          QueueUrl: payments.queueUrl,
          MessageBody: JSON.stringify(job),
          MessageGroupId: order.orderId,
          MessageDeduplicationId: `${paymentId}-redelivered-${copy}`,
        });
      }
    }
    await ctx.until(
      async () => {
        const states = await orderStates(
          ctx,
          orders.map((o) => o.orderId),
        );
        const d = await queueDepth(ctx.sqs, payments.queueUrl);
        return orders.every((o) => ['PAID', 'RESERVED'].includes(states.get(o.orderId) ?? '')) &&
          d.visible + d.inFlight === 0
          ? true
          : undefined;
      },
      'every payment captured and the payments queue drained',
      120_000,
    );

    const status = await ctx.tenang(['status']);
    const audit = await ctx.tenang(['audit', '--json']);
    const charges = orders.map((o) => ledgerEntriesFor(ctx, 'payment', o.orderId));
    const refused = answers.filter((s) => s !== 202 && s !== 409);
    const auditItems = (
      JSON.parse(audit.out) as {
        items: { ruleId?: string; featureId?: string; status?: string; why?: string }[];
      }
    ).items;
    // What failed, so that a failing check carries its evidence.
    const failedRules = auditItems
      .filter((i) => i.status === 'fail')
      .map((i) => `${i.ruleId ?? i.featureId ?? '?'}${i.why === undefined ? '' : ` (${i.why})`}`);
    const idempotencyRules = auditItems.filter((i) =>
      ['D1', 'D2', 'D3', 'I1', 'I2'].includes(i.featureId ?? ''),
    );
    return [
      ctx.check(
        'one charge per payment',
        charges.every((c) => c === 1),
        `charges per order: ${charges.join(', ')}`,
      ),
      ctx.check(
        'every copy answered',
        refused.length === 0,
        `${answers.length} requests: ${refused.length} answered other than 202/409 (${[...new Set(refused)].join(', ')})`,
      ),
      ctx.check('status read', status.code === 0, `status exited ${status.code}`),
      ctx.check(
        'audit passes the idempotency rules',
        audit.code === 0 && idempotencyRules.length > 0,
        `audit exited ${audit.code}; ${idempotencyRules.length} idempotency rule(s) checked${
          failedRules.length === 0 ? '' : `; failed: ${failedRules.join('; ')}`
        }${audit.code !== 0 && audit.err.trim() !== '' ? `; stderr: ${audit.err.trim().slice(0, 600)}` : ''}`,
      ),
    ];
  },
};
