/** The order: the source of truth in DynamoDB, read through the cache, streamed to the outbox. */
import { z } from 'zod';
import { ORDER_STATES } from './state-machine';

/** One order line. */
export const OrderLineSchema = z.object({
  sku: z.string().min(1).max(64),
  quantity: z.number().int().positive().max(10_000),
});

/** An order as stored (the orders table item). */
export const OrderSchema = z.object({
  orderId: z.string().min(1).max(128),
  state: z.enum(ORDER_STATES),
  /** Incremented by every write; the cache and the outbox key on it. */
  version: z.number().int().nonnegative(),
  customerEmail: z.email(),
  lines: z.array(OrderLineSchema).min(1).max(50),
  amountMinor: z.number().int().positive(),
  currency: z.string().regex(/^[A-Z]{3}$/),
  /** Set when the payment is captured. */
  paymentId: z.string().optional(),
  chargeId: z.string().optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Order = z.infer<typeof OrderSchema>;
export type OrderLine = z.infer<typeof OrderLineSchema>;
