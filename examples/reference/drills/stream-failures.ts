/**
 * Stream failures (runbooks/stream-failures.md): the cache invalidator fails on every batch until
 * a batch of order changes is given up to its on-failure queue, so those orders are served
 * stale. The runbook lists the failed batches, replays them from the stream (the invalidator is
 * idempotent: it fences by version), checks the reads, and evicts the order prefix as the
 * fallback for records the stream no longer holds. The replay reads the stream as a third reader
 * beside the two mappings, with the platform enforcing DynamoDB Streams' two readers per shard
 * (lib/local/moto_server.py): it must still succeed, say how many of its reads were throttled,
 * and leave both mappings current.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CACHE_ADMIN_SERVICE, consumerStatus, type Drill } from 'tenang/local';
import { cacheKeyspace, entityPrefix } from 'tenang/runtime';
import { loseInvalidations } from './stale-cache';
import { cacheOrder, createOrder, orderStates, payOrder, readOrder, seedSku } from './support';

/** Orders whose invalidations are lost together. */
const ORDERS = 3;

/** Iterator age both stream mappings must be back under after the replay, ms. */
const CURRENT_ITERATOR_AGE_MS = 5_000;

export const streamFailures: Drill = {
  name: 'stream-failures',
  runbook: 'stream-failures',
  incident: 'the cache invalidator keeps failing until a batch of order changes reaches its on-failure queue',
  // The outbox relay is the stream's other reader: the replay must leave its mapping current too.
  consumers: ['ingress', 'payment-consumer', 'cache-invalidator', 'outbox-relay', 'order-reader'],
  async run(ctx) {
    const sku = `sku-${ctx.runId}`;
    await seedSku(ctx, sku);
    const orders: Awaited<ReturnType<typeof createOrder>>[] = [];
    for (let n = 1; n <= ORDERS; n += 1) orders.push(await createOrder(ctx, n, sku));
    for (const o of orders) await cacheOrder(ctx, o.orderId);
    const { onFailureDepth } = await loseInvalidations(ctx, async () => {
      for (const [n, o] of orders.entries()) await payOrder(ctx, o, `pay-${ctx.runId}-${n}`);
      await ctx.until(async () => {
        const states = await orderStates(
          ctx,
          orders.map((o) => o.orderId),
        );
        return orders.every((o) => states.get(o.orderId) !== 'PENDING') ? true : undefined;
      }, 'every order to be paid');
    });
    const stale = await Promise.all(orders.map((o) => readOrder(ctx, o.orderId)));

    const auditDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-drill-'));
    const before = await consumerStatus(ctx, 'cache-invalidator');
    const listed = await ctx.tenang(['dlq', 'list', 'cache-invalidator', '--json']);
    const dry = await ctx.tenang([
      'dlq',
      'replay',
      'cache-invalidator',
      '--dry-run',
      '--audit-log',
      path.join(auditDir, 'dry.jsonl'),
    ]);
    const replay = await ctx.tenang([
      'dlq',
      'replay',
      'cache-invalidator',
      '--yes',
      '--audit-log',
      path.join(auditDir, 'replay.jsonl'),
    ]);
    const fresh = await Promise.all(orders.map((o) => readOrder(ctx, o.orderId)));
    const states = await orderStates(
      ctx,
      orders.map((o) => o.orderId),
    );
    const prefix = entityPrefix(cacheKeyspace(ctx.stage), 'order');
    const admin = ctx.platform.functionNamed(CACHE_ADMIN_SERVICE);
    const adminRuns = ctx.platform.invocationCount(admin);
    const evicted = await ctx.tenang(['cache', 'invalidate', '--prefix', prefix]);
    const invoked = ctx.platform.invocationCount(admin) - adminRuns;
    const after = await consumerStatus(ctx, 'cache-invalidator');
    fs.rmSync(auditDir, { recursive: true, force: true });
    // A change after the replay: both mappings deliver it, their iterator age back to seconds.
    const mappings = ['cache-invalidator', 'outbox-relay'].map((consumer) => {
      const fn = ctx.platform.functionNamed(consumer);
      const source = ctx.platform.streamSources.find((s) => s.spec.functionName === fn);
      if (source === undefined) throw new Error(`${consumer} has no stream mapping`);
      return { consumer, source, batches: source.stats.batches };
    });
    await createOrder(ctx, ORDERS + 1, sku);
    await ctx.until(
      () => Promise.resolve(mappings.every((m) => m.source.stats.batches > m.batches) ? true : undefined),
      'both stream mappings to deliver a change made after the replay',
    );
    const ages = mappings.map((m) => `${m.consumer} ${m.source.stats.iteratorAgeMs} ms`);
    return [
      ctx.check(
        'stale reads after the lost batch',
        // Records retried after the crashes were lifted may still land; the incident needs one lost.
        stale.some((r) => r.cache === 'hit' && r.state === 'PENDING'),
        `reads: ${stale.map((r) => `${r.cache} ${r.state}`).join(', ')}; on-failure depth ${onFailureDepth}`,
      ),
      ctx.check(
        'status shows the on-failure queue',
        (before.dlqDepth ?? 0) >= 1,
        `on-failure depth ${before.dlqDepth ?? '-'}`,
      ),
      ctx.check(
        'failed batches listed',
        listed.code === 0,
        `dlq list exited ${listed.code}: ${listed.err.trim()}`,
      ),
      ctx.check('dry run accepted', dry.code === 0, `dry run exited ${dry.code}: ${dry.err.trim()}`),
      ctx.check('replay succeeded', replay.code === 0, `replay exited ${replay.code}: ${replay.err.trim()}`),
      ctx.check(
        'replay reports its throttled reads',
        /throttled reads: \d+/.test(replay.out),
        replay.out.split('\n').find((l) => l.startsWith('throttled reads:')) ?? 'no "throttled reads:" line',
      ),
      ctx.check(
        'both stream mappings current after the replay',
        mappings.every((m) => m.source.stats.iteratorAgeMs < CURRENT_ITERATOR_AGE_MS),
        `iterator age: ${ages.join(', ')}; throttled reads: ${mappings
          .map((m) => `${m.consumer} ${m.source.stats.throttledReads}`)
          .join(', ')}`,
      ),
      ctx.check(
        'reads fresh after the replay',
        fresh.every((r, i) => r.state === states.get(orders[i]?.orderId ?? '')),
        `reads: ${fresh.map((r) => `${r.cache} ${r.state}`).join(', ')}`,
      ),
      ctx.check(
        'on-failure queue empty',
        (after.dlqDepth ?? 0) === 0,
        `on-failure depth ${after.dlqDepth ?? '-'}`,
      ),
      ctx.check(
        'prefix eviction accepted',
        evicted.code === 0,
        `cache invalidate --prefix exited ${evicted.code}: ${evicted.err.trim()}`,
      ),
      ctx.check(
        'the eviction ran in the cache-admin function (the CLI has no REDIS_URL)',
        invoked === 1,
        `${admin} invoked ${invoked} time(s) by the command`,
      ),
    ];
  },
};
