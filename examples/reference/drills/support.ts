/**
 * What the reference's drills need: its tables, a paid order placed through the API, and the
 * facts its drills check (order state, stock, provider ledgers), over tenang's drill helpers
 * (tenang/local).
 */
import { DynamoDbInventoryStore, DynamoDbOrderStore } from '../domain';
import { functionEnv, queueDepth, type DrillCheck, type DrillContext } from 'tenang/local';

/** The deployed orders and inventory tables. */
export function tables(ctx: DrillContext): { readonly orders: string; readonly inventory: string } {
  return {
    orders: functionEnv(ctx.platform, ctx.platform.functionNamed('ingress'), 'ORDERS_TABLE'),
    inventory: functionEnv(ctx.platform, ctx.platform.functionNamed('inventory-consumer'), 'INVENTORY_TABLE'),
  };
}

/** An order the drill created and paid for through the API. */
export interface PlacedOrder {
  readonly orderId: string;
  readonly paymentId: string;
  readonly sku: string;
  readonly quantity: number;
  readonly amountMinor: number;
}

/** Stock given to each SKU a drill seeds. */
export const DRILL_STOCK = 1_000;

/** Seeds `sku` with DRILL_STOCK. */
export async function seedSku(ctx: DrillContext, sku: string): Promise<void> {
  await new DynamoDbInventoryStore(ctx.dynamodb, tables(ctx).inventory).seed(sku, DRILL_STOCK);
}

/** Creates an order (PENDING) through `POST /orders`; the SKU must be seeded. */
export async function createOrder(
  ctx: DrillContext,
  n: number,
  sku: string,
): Promise<{ orderId: string; amountMinor: number; quantity: number }> {
  const amountMinor = 1_000 + n;
  const quantity = 1 + (n % 3);
  const created = await ctx.api('POST', '/orders', {
    customerEmail: `drill+${ctx.runId}-${n}@example.com`,
    lines: [{ sku, quantity }],
    amountMinor,
    currency: 'EUR',
  });
  const orderId = (created.body as { orderId?: unknown } | undefined)?.orderId;
  if (created.status !== 201 || typeof orderId !== 'string')
    throw new Error(`POST /orders answered ${created.status}: ${JSON.stringify(created.body)}`);
  return { orderId, amountMinor, quantity };
}

/** Posts the capture of an existing order through `POST /orders/{id}/payments`. */
export async function payOrder(
  ctx: DrillContext,
  order: { orderId: string; amountMinor: number },
  paymentId: string,
): Promise<void> {
  const paid = await ctx.api(
    'POST',
    `/orders/${order.orderId}/payments`,
    { paymentId, amountMinor: order.amountMinor, currency: 'EUR' },
    { 'Idempotency-Key': `req-${paymentId}` },
  );
  if (paid.status !== 202)
    throw new Error(
      `POST /orders/${order.orderId}/payments answered ${paid.status}: ${JSON.stringify(paid.body)}`,
    );
}

/** Creates and pays `count` orders of one seeded SKU (seeded here when not given). */
export async function placePaidOrders(
  ctx: DrillContext,
  count: number,
  sku?: string,
): Promise<PlacedOrder[]> {
  const theSku = sku ?? `sku-${ctx.runId}`;
  if (sku === undefined) await seedSku(ctx, theSku);
  const placed: PlacedOrder[] = [];
  for (let n = 1; n <= count; n += 1) {
    const order = await createOrder(ctx, n, theSku);
    const paymentId = `pay-${ctx.runId}-${n}`;
    await payOrder(ctx, order, paymentId);
    placed.push({ ...order, paymentId, sku: theSku });
  }
  return placed;
}

/** Each order's state (consistent reads; an order not found is left out). */
export async function orderStates(
  ctx: DrillContext,
  orderIds: readonly string[],
): Promise<Map<string, string>> {
  const store = new DynamoDbOrderStore(ctx.dynamodb, tables(ctx).orders);
  const states = new Map<string, string>();
  for (const id of new Set(orderIds)) {
    const order = await store.get(id);
    if (order !== undefined) states.set(id, order.state);
  }
  return states;
}

/** Side effects in a provider's ledger that mention `id` (an order id). */
export function ledgerEntriesFor(ctx: DrillContext, provider: 'payment' | 'messaging', id: string): number {
  return ctx.platform.providers[provider].ledger().filter((e) => JSON.stringify(e.body).includes(id)).length;
}

/** Waits until `count` is at least one for every order (or fails naming what it waited for). */
export async function untilOncePerOrder(
  ctx: DrillContext,
  orders: readonly { orderId: string }[],
  count: (orderId: string) => number,
  what: string,
  deadlineMs = 90_000,
): Promise<void> {
  await ctx.until(
    () => Promise.resolve(orders.every((o) => count(o.orderId) >= 1) ? true : undefined),
    what,
    deadlineMs,
  );
}

/** Waits until every order has its notification and the notification queue is empty. */
export async function untilNotifiedAndDrained(
  ctx: DrillContext,
  orders: readonly { orderId: string }[],
  queueUrl: string,
): Promise<void> {
  await untilOncePerOrder(
    ctx,
    orders,
    (id) => ledgerEntriesFor(ctx, 'messaging', id),
    'every order notified',
  );
  await ctx.until(async () => {
    const d = await queueDepth(ctx.sqs, queueUrl);
    return d.visible + d.inFlight === 0 ? true : undefined;
  }, 'the notification queue to drain');
}

/** The checks every drill ends with on its orders: one charge each, paid, one notification each. */
export function oncePerOrderChecks(
  ctx: DrillContext,
  orders: readonly PlacedOrder[],
  states: ReadonlyMap<string, string>,
): DrillCheck[] {
  const charges = orders.map((o) => ledgerEntriesFor(ctx, 'payment', o.orderId));
  const notifications = orders.map((o) => ledgerEntriesFor(ctx, 'messaging', o.orderId));
  const unpaid = orders.filter((o) => !['PAID', 'RESERVED'].includes(states.get(o.orderId) ?? ''));
  return [
    ctx.check(
      'one charge per order',
      charges.every((c) => c === 1),
      `charges per order: ${charges.join(', ')}`,
    ),
    ctx.check(
      'every order paid',
      unpaid.length === 0,
      unpaid.length === 0
        ? `${orders.length} PAID or RESERVED`
        : `not paid: ${unpaid.map((o) => o.orderId).join(', ')}`,
    ),
    ctx.check(
      'one notification per order',
      notifications.every((c) => c === 1),
      `notifications per order: ${notifications.join(', ')}`,
    ),
  ];
}

/** An order as GET /orders/{id} answers it, with its X-Cache header. */
export async function readOrder(
  ctx: DrillContext,
  orderId: string,
): Promise<{ state: string; version: number; cache: string }> {
  const answer = await ctx.api('GET', `/orders/${orderId}`);
  const body = answer.body as { state?: string; version?: number } | undefined;
  if (answer.status !== 200 || body?.state === undefined || body.version === undefined)
    throw new Error(`GET /orders/${orderId} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return { state: body.state, version: body.version, cache: answer.headers?.get('x-cache') ?? '-' };
}

/**
 * Reads an order until it is served from the cache and still is after a pause: the order's
 * INSERT invalidation may land after the first reads (a cold invalidator) and evict the value
 * they cached. Returns the last read.
 */
export async function cacheOrder(
  ctx: DrillContext,
  orderId: string,
): Promise<{ state: string; version: number; cache: string }> {
  return ctx.until(
    async () => {
      await readOrder(ctx, orderId);
      if ((await readOrder(ctx, orderId)).cache !== 'hit') return undefined;
      await new Promise((r) => setTimeout(r, 4_000));
      const settled = await readOrder(ctx, orderId);
      return settled.cache === 'hit' ? settled : undefined;
    },
    `order ${orderId} to stay cached`,
    60_000,
  );
}
