/**
 * Stale cache (runbooks/stale-cache.md): an order's invalidation is lost (the cache invalidator
 * failed on it until the record went to its on-failure queue), so reads keep being served the
 * cached old state. The runbook invalidates the entity with the CLI — fenced at the order's
 * current version, so a reader holding the old one cannot put it back — and reads it fresh. The
 * CLI runs as on AWS, without REDIS_URL: the invalidation must go through the cache-admin function.
 */
import { CACHE_ADMIN_SERVICE, consumerStatus, queueDepth, type Drill, type DrillContext } from 'tenang/local';
import { cacheOrder, createOrder, orderStates, payOrder, readOrder, seedSku } from './support';

/** Makes every invocation of the cache invalidator crash until `lost` resolves; returns the on-failure depth. */
export async function loseInvalidations(
  ctx: DrillContext,
  change: () => Promise<void>,
): Promise<{ onFailureDepth: number }> {
  const invalidator = ctx.platform.functionNamed('cache-invalidator');
  const source = ctx.platform.streamSources.find((s) => s.spec.functionName === invalidator);
  const onFailure = source?.spec.onFailureQueueUrl;
  if (source === undefined || onFailure === undefined)
    throw new Error(`${invalidator} has no stream mapping with an on-failure queue`);
  const before = await queueDepth(ctx.sqs, onFailure);
  ctx.platform.crashInvocations(invalidator, ['before-invalidation'], 10_000);
  try {
    await change();
    // Every change made must be given up, not just the first batch: wait until the on-failure
    // depth has grown and the mapping has stopped trying (no invocation, and so no retry, for a
    // while: each retry of a crashed batch starts a new process, seconds apart on a loaded machine).
    let last = { depth: before.visible, batches: source.stats.batches, since: Date.now() };
    const depth = await ctx.until(
      async () => {
        const d = (await queueDepth(ctx.sqs, onFailure)).visible;
        const batches = source.stats.batches;
        if (d !== last.depth || batches !== last.batches) last = { depth: d, batches, since: Date.now() };
        return d > before.visible && Date.now() - last.since >= 8_000 ? d : undefined;
      },
      "the invalidator's retries to run out",
      180_000,
    );
    return { onFailureDepth: depth };
  } finally {
    ctx.platform.crashInvocations(invalidator, [], 0);
  }
}

export const staleCache: Drill = {
  name: 'stale-cache',
  runbook: 'stale-cache',
  incident: "an order's invalidation is lost, so the cache keeps serving its old version",
  // The order made and paid through the API, its lost invalidation, its reads.
  consumers: ['ingress', 'payment-consumer', 'cache-invalidator', 'order-reader'],
  async run(ctx) {
    const sku = `sku-${ctx.runId}`;
    await seedSku(ctx, sku);
    const order = await createOrder(ctx, 1, sku);
    const cached = await cacheOrder(ctx, order.orderId);
    const { onFailureDepth } = await loseInvalidations(ctx, async () => {
      await payOrder(ctx, order, `pay-${ctx.runId}`);
      await ctx.until(
        async () =>
          (await orderStates(ctx, [order.orderId])).get(order.orderId) === 'PENDING' ? undefined : true,
        'the order to be paid',
      );
    });
    const stale = await readOrder(ctx, order.orderId);
    const status = await consumerStatus(ctx, 'cache-invalidator');

    const admin = ctx.platform.functionNamed(CACHE_ADMIN_SERVICE);
    const adminRuns = ctx.platform.invocationCount(admin);
    const invalidated = await ctx.tenang(['cache', 'invalidate', '--entity', `order:${order.orderId}`]);
    const invoked = ctx.platform.invocationCount(admin) - adminRuns;
    const fresh = await readOrder(ctx, order.orderId);
    const again = await readOrder(ctx, order.orderId);
    const current = (await orderStates(ctx, [order.orderId])).get(order.orderId);
    return [
      ctx.check(
        'order cached before',
        cached.cache === 'hit' && cached.state === 'PENDING',
        `second read: ${cached.cache}, ${cached.state}`,
      ),
      ctx.check(
        'stale value served after the lost invalidation',
        stale.cache === 'hit' && stale.state === 'PENDING' && current !== 'PENDING',
        `read ${stale.cache} ${stale.state} v${stale.version} while the table says ${current}; on-failure depth ${onFailureDepth}`,
      ),
      ctx.check(
        'status shows the failed invalidations',
        (status.dlqDepth ?? 0) >= 1,
        `cache-invalidator on-failure depth ${status.dlqDepth ?? '-'}`,
      ),
      ctx.check(
        'invalidate accepted',
        invalidated.code === 0,
        `cache invalidate exited ${invalidated.code}: ${invalidated.err.trim()}`,
      ),
      ctx.check(
        'the invalidation ran in the cache-admin function (the CLI has no REDIS_URL)',
        invoked === 1,
        `${admin} invoked ${invoked} time(s) by the command`,
      ),
      ctx.check(
        'read fresh after the invalidation',
        fresh.cache !== 'hit' && fresh.state === current && fresh.version > stale.version,
        `read ${fresh.cache} ${fresh.state} v${fresh.version}`,
      ),
      ctx.check(
        'fresh value cached again',
        again.cache === 'hit' && again.version === fresh.version,
        `read ${again.cache} v${again.version}`,
      ),
    ];
  },
};
