/**
 * The order: the reference app's source of truth in DynamoDB, read through the cache, streamed to
 * its outbox. It is here, not in lib/reference, because the kit's cache operations
 * (lib/core/cache-admin.ts, lib/adapters/aws/entity-source.ts) still know the cache's one entity,
 * the order, by its schema.
 */
import * as z from 'tenang/zod';
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

/** A stored item that is not a valid order (a bug or a manual edit): never guessed at. */
export class CorruptOrderError extends Error {
  public constructor(orderId: string, problems: readonly string[]) {
    super(`order ${orderId} is not a valid order: ${problems.join('; ')}`);
    this.name = 'CorruptOrderError';
  }
}

/** A stored `item` as an order, or CorruptOrderError naming every invalid field. */
export function parseStoredOrder(orderId: string, item: Record<string, unknown>): Order {
  const parsed = OrderSchema.safeParse(item);
  if (!parsed.success) {
    throw new CorruptOrderError(
      orderId,
      parsed.error.issues.map((i) => `${i.path.map(String).join('.') || 'item'}: ${i.message}`),
    );
  }
  return parsed.data;
}
