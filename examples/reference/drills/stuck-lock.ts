/**
 * Stuck lock (runbooks/stuck-lock.md): a worker crashed holding the lease on a SKU. The lease is
 * short (a third of the function timeout), so the reservation waiting behind it is deferred, not
 * failed, and goes through once the lease expires; the runbook checks that before touching
 * anything. A lease left behind with no one waiting stays listed as an orphan: the runbook
 * releases it with --force, which the CLI allows only once the lease has expired.
 */
import { randomUUID } from 'node:crypto';
import type { Drill, DrillContext } from 'tenang/local';
import { DynamoDbInventoryStore, skuLockResource } from '../domain';
import { DynamoDbLockStore } from 'tenang/runtime';
import { DRILL_STOCK, placePaidOrders, seedSku, tables } from './support';

/** Lease a crashed holder left: as long as the inventory consumer's own (30 s timeout / 3). */
const CRASHED_LEASE_MS = 10_000;

function lockStore(ctx: DrillContext): DynamoDbLockStore {
  const fn = ctx.platform.functionNamed('inventory-consumer');
  const table = ctx.platform.deployment.functions.get(fn)?.environment.LOCKS_TABLE;
  if (table === undefined) throw new Error(`${fn} has no LOCKS_TABLE`);
  return new DynamoDbLockStore(ctx.dynamodb, table);
}

/** Takes a lease on `sku` as a worker that then crashed would have. */
async function crashedHolder(
  ctx: DrillContext,
  sku: string,
): Promise<{ resource: string; owner: string; fence: number }> {
  const resource = skuLockResource(sku);
  const owner = `crashed-${randomUUID()}`;
  const now = Date.now();
  const result = await lockStore(ctx).tryAcquire({
    resource,
    ownerToken: owner,
    nowMs: now,
    expiresAtMs: now + CRASHED_LEASE_MS,
  });
  if (!result.acquired) throw new Error(`could not take the lease on ${resource}`);
  return { resource, owner, fence: result.fence };
}

export const stuckLock: Drill = {
  name: 'stuck-lock',
  runbook: 'stuck-lock',
  incident: 'an inventory worker crashed holding the lease on a SKU that a paid order needs',
  // The paid order's capture, the relay that enqueues its reservation, and the reservation.
  consumers: ['ingress', 'payment-consumer', 'outbox-relay', 'inventory-consumer'],
  async run(ctx) {
    const store = lockStore(ctx);
    const inventory = new DynamoDbInventoryStore(ctx.dynamodb, tables(ctx).inventory);
    const sku = `sku-${ctx.runId}`;
    await seedSku(ctx, sku);
    const crashed = await crashedHolder(ctx, sku);
    const [order] = await placePaidOrders(ctx, 1, sku);
    if (order === undefined) throw new Error('no order placed');

    // Detect: the lease is live; forcing it is refused, and waiting is the fix.
    const listed = await ctx.tenang(['lock', 'list', '--json']);
    const forcedLive = await ctx.tenang([
      'lock',
      'release',
      crashed.resource,
      '--owner',
      crashed.owner,
      '--force',
      '--yes',
    ]);
    const reserved = await ctx.until(async () => {
      const level = await inventory.get(sku);
      return level?.reservations[order.orderId];
    }, `the reservation of ${order.orderId} after the lease expired`);

    // An orphan with no one waiting behind it: listed after expiry, released with --force.
    const orphanSku = `sku-${ctx.runId}-orphan`;
    await seedSku(ctx, orphanSku);
    const orphan = await crashedHolder(ctx, orphanSku);
    await new Promise((r) => setTimeout(r, CRASHED_LEASE_MS + 1_000));
    const orphans = await ctx.tenang(['lock', 'list', '--orphans', '--json']);
    const released = await ctx.tenang([
      'lock',
      'release',
      orphan.resource,
      '--owner',
      orphan.owner,
      '--force',
      '--yes',
    ]);
    const afterRelease = await store.get(orphan.resource);
    const level = await inventory.get(sku);
    const listedResources = JSON.stringify(JSON.parse(listed.out));
    const orphanResources = JSON.stringify(JSON.parse(orphans.out));
    return [
      ctx.check(
        'live lease listed',
        listed.code === 0 && listedResources.includes(crashed.resource),
        `lock list exited ${listed.code}`,
      ),
      ctx.check(
        'force on a live lease refused',
        forcedLive.code === 1,
        `lock release --force on the live lease exited ${forcedLive.code}: ${forcedLive.err.trim().split('\n')[0] ?? ''}`,
      ),
      ctx.check(
        'reserved once, after the crashed lease',
        reserved.quantity === order.quantity &&
          reserved.fence > crashed.fence &&
          level?.available === DRILL_STOCK - order.quantity,
        `reserved ${reserved.quantity} with fence ${reserved.fence} (crashed holder's ${crashed.fence}); available ${level?.available ?? '-'} of ${DRILL_STOCK}`,
      ),
      ctx.check(
        'orphan listed',
        orphans.code === 0 && orphanResources.includes(orphan.resource),
        `lock list --orphans exited ${orphans.code}`,
      ),
      ctx.check(
        'orphan released, fence kept',
        released.code === 0 && afterRelease?.holder === undefined && afterRelease?.fence === orphan.fence,
        `release exited ${released.code}; holder ${afterRelease?.holder?.ownerToken ?? 'none'}, fence ${afterRelease?.fence ?? '-'}`,
      ),
    ];
  },
};
