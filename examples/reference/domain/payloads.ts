/**
 * The payloads of the reference app's job types (examples/reference): a payment capture, an
 * order notification, a stock reservation. The kit's envelope (lib/core/envelope.ts) carries any
 * payload; these are the reference's own schemas, and PAYLOADS names them by job type for code
 * that plays the reference flow (its job modules, the local scenario and the drills, the tests).
 */
import * as z from 'tenang/zod';
import { parseEnvelope, type JobEnvelope } from 'tenang/runtime';

const id = z
  .string()
  .check(z.minLength(1), z.maxLength(128), z.regex(/^[A-Za-z0-9._:-]+$/, 'only letters, digits and . _ : -'));

/** payment.capture: capture an order's payment exactly once. */
export const PaymentCapturePayload = z.object({
  orderId: id,
  paymentId: id,
  amountMinor: z.int().check(z.positive(), z.lte(100_000_000)),
  currency: z.string().check(z.regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code')),
});
export type PaymentCapturePayload = z.infer<typeof PaymentCapturePayload>;

/** notification.send: tell the customer about an order. */
export const NotificationSendPayload = z.object({
  orderId: id,
  template: z.enum(['order-paid', 'order-shipped', 'payment-failed']),
  recipient: z.email(),
  /** The order version that triggered it; dedup is per (order, template). */
  orderVersion: z.int().check(z.nonnegative()),
});
export type NotificationSendPayload = z.infer<typeof NotificationSendPayload>;

/** inventory.reserve: reserve stock for an order line. */
export const InventoryReservePayload = z.object({
  orderId: id,
  sku: id,
  quantity: z.int().check(z.positive(), z.lte(10_000)),
});
export type InventoryReservePayload = z.infer<typeof InventoryReservePayload>;

/** The payload schema of each reference job type. */
export const PAYLOADS = {
  'payment.capture': PaymentCapturePayload,
  'notification.send': NotificationSendPayload,
  'inventory.reserve': InventoryReservePayload,
} as const;
/** A job type of the reference app. */
export type JobTypeName = keyof typeof PAYLOADS;
/** The payload of a reference job type. */
export type PayloadOf<T extends JobTypeName> = z.infer<(typeof PAYLOADS)[T]>;

/** Whether `name` is one of the reference app's job types. */
export function isReferenceJobType(name: string): name is JobTypeName {
  return Object.hasOwn(PAYLOADS, name);
}

/** parseEnvelope with the reference job type's own payload schema. */
export function parseReferenceEnvelope<T extends JobTypeName>(
  body: string,
  expectedType: T,
): JobEnvelope<PayloadOf<T>> {
  return parseEnvelope(body, expectedType, PAYLOADS[expectedType] as unknown as z.ZodMiniType<PayloadOf<T>>);
}
