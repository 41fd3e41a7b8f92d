/** The order: the source of truth in DynamoDB, read through the cache, streamed to the outbox. */
import * as z from '../config/zod';
import { ORDER_STATES } from './state-machine';

/** One order line. */
export const OrderLineSchema = z.object({
  sku: z.string().check(z.minLength(1), z.maxLength(64)),
  quantity: z.int().check(z.positive(), z.lte(10_000)),
});

/** An order as stored (the orders table item). */
export const OrderSchema = z.object({
  orderId: z.string().check(z.minLength(1), z.maxLength(128)),
  state: z.enum(ORDER_STATES),
  /** Incremented by every write; the cache and the outbox key on it. */
  version: z.int().check(z.nonnegative()),
  customerEmail: z.email(),
  lines: z.array(OrderLineSchema).check(z.minLength(1), z.maxLength(50)),
  amountMinor: z.int().check(z.positive()),
  currency: z.string().check(z.regex(/^[A-Z]{3}$/)),
  /** Set when the payment is captured. */
  paymentId: z.optional(z.string()),
  chargeId: z.optional(z.string()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Order = z.infer<typeof OrderSchema>;
export type OrderLine = z.infer<typeof OrderLineSchema>;
