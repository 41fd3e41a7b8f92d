/**
 * The reference app's outbox (D6): the follow-up jobs of an order change, which its outbox relay
 * (examples/reference/functions/outbox-relay.ts) enqueues with the kit's relayFollowUps
 * (lib/core/outbox.ts) from the orders table's stream.
 *
 * When an order becomes PAID, one `notification.send` (order-paid) and one `inventory.reserve`
 * per line are enqueued, each keyed on the order, its version and the job.
 */
import { makeEnvelope, type JobEnvelope, type FollowUp } from 'tenang/runtime';
import type { Order } from './order';
import type { OrderState } from './state-machine';
import type { InventoryReservePayload, NotificationSendPayload } from './payloads';

/** Whether this change makes the order PAID (an insert as PAID counts). */
export function becamePaid(oldState: OrderState | undefined, newState: OrderState | undefined): boolean {
  return newState === 'PAID' && oldState !== 'PAID';
}

/** The idempotency key of a follow-up: order, version and job, so each change's jobs are distinct. */
export function followUpKey(orderId: string, version: number, job: string): string {
  return `order:${orderId}:v${version}:${job}`;
}

/**
 * The follow-up jobs of a change from `oldState` to `order` (undefined when the order was
 * removed). Only the change into PAID has follow-ups.
 */
export function followUpsForOrderChange(
  oldState: OrderState | undefined,
  order: Order | undefined,
  now: Date,
): FollowUp[] {
  if (order === undefined || !becamePaid(oldState, order.state)) return [];
  const correlationId = order.orderId;
  const followUp = (envelope: JobEnvelope): FollowUp => ({
    dedupKey: `outbox:${envelope.idempotencyKey}`,
    envelope,
  });
  const notification = makeEnvelope<NotificationSendPayload>(
    'notification.send',
    {
      orderId: order.orderId,
      template: 'order-paid',
      recipient: order.customerEmail,
      orderVersion: order.version,
    },
    {
      idempotencyKey: followUpKey(order.orderId, order.version, 'notification.send:order-paid'),
      correlationId,
      now,
    },
  );
  // The line index is part of the key: two lines of one SKU are two reservations.
  const reservations = order.lines.map((line, index) =>
    makeEnvelope<InventoryReservePayload>(
      'inventory.reserve',
      { orderId: order.orderId, sku: line.sku, quantity: line.quantity },
      {
        idempotencyKey: followUpKey(order.orderId, order.version, `inventory.reserve:${index}:${line.sku}`),
        correlationId,
        now,
      },
    ),
  );
  return [followUp(notification), ...reservations.map(followUp)];
}
