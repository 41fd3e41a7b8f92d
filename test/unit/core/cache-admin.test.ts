/**
 * The cache-admin operations (lib/core/cache-admin.ts) over the in-memory cache: what the
 * function and the CLI's --direct path both run. Requests are validated at the boundary;
 * refusals are answered, failures of the cache thrown.
 */
import { InMemoryVersionedCache } from '../../../harness/fakes/memory-versioned-cache';
import { CEILING_VERSION } from '../../../lib/core/cache-admin-keys';
import {
  runCacheAdminRequest,
  type CacheAdminDeps,
  type EntitySource,
  type SourceState,
} from '../../../lib/core/cache-admin';
import { cacheKeyspace, entityCacheKey } from '../../../lib/core/cache-keys';
import { CacheUnavailableError } from '../../../lib/core/errors';
import type { EvictingCache, PrefixEviction, PrefixEvictionOptions } from '../../../lib/core/ports';

const STAGE = 'unit';
const KEYSPACE = cacheKeyspace(STAGE);
const ORDER = { name: 'order', table: 'orders', key: 'orderId', version: 'version' };
const SETTINGS = {
  ttlSeconds: 60,
  ttlJitterRatio: 0,
  loadLockMs: 100,
  hotKeys: ['order:hot'],
  entities: [ORDER],
};
const orderCacheKey = (keyspace: typeof KEYSPACE, id: string): string =>
  entityCacheKey(keyspace, 'order', id);
const BY = { actor: 'alice' };

/** The in-memory cache with a recorded prefix eviction (SCAN is Redis's; its test is redis-cache-eviction). */
class FakeCache extends InMemoryVersionedCache implements EvictingCache {
  public readonly evictions: { prefix: string; options: PrefixEvictionOptions }[] = [];

  public evictByPrefix(prefix: string, options: PrefixEvictionOptions = {}): Promise<PrefixEviction> {
    if (this.down) return Promise.reject(new CacheUnavailableError('down'));
    this.evictions.push({ prefix, options });
    return Promise.resolve({ scanned: 4, evicted: 2 });
  }
}

/** A stored item at `version`, as the source reads it. */
function present(orderId: string, version: number): SourceState {
  return { kind: 'present', version, item: { orderId, version, state: 'PAID' } };
}

function depsWith(cache: FakeCache, orders: Record<string, SourceState>): Omit<CacheAdminDeps, 'warn'> {
  const source: EntitySource = {
    tableOf: () => 'tenang-unit-orders',
    read: (ref) => Promise.resolve(orders[ref.id] ?? { kind: 'absent' }),
  };
  return { stage: STAGE, settings: SETTINGS, cache, source: () => Promise.resolve(source), random: () => 0 };
}

describe('Function: runCacheAdminRequest', () => {
  it('when an entity is invalidated, it fences its key at the version the source has', async () => {
    // Prepare
    const cache = new FakeCache();
    const deps = depsWith(cache, { o1: present('o1', 3) });

    // Act
    const answer = await runCacheAdminRequest(deps, {
      operation: 'invalidate-entity',
      entity: 'order:o1',
      dryRun: false,
      requestedBy: BY,
    });

    // Assess
    expect(answer).toMatchObject({
      status: 'ok',
      operation: 'invalidate-entity',
      result: { entity: 'order:o1', sourceVersion: 3, keys: [{ fenceVersion: 3, result: 'fenced' }] },
    });
    expect(await cache.get(orderCacheKey(KEYSPACE, 'o1'))).toEqual({ kind: 'tombstone', version: 3 });
  });

  it('when the entity cannot be read, it fences above every version and answers the warning', async () => {
    // Prepare
    const cache = new FakeCache();
    const deps = depsWith(cache, { o2: { kind: 'unreadable', reason: 'order o2 is not a valid order' } });

    // Act
    const answer = await runCacheAdminRequest(deps, {
      operation: 'invalidate-entity',
      entity: 'order:o2',
      dryRun: false,
      requestedBy: BY,
    });

    // Assess
    expect(answer).toMatchObject({ status: 'ok', warnings: [expect.stringContaining('not a valid order')] });
    expect(await cache.get(orderCacheKey(KEYSPACE, 'o2'))).toEqual({
      kind: 'tombstone',
      version: CEILING_VERSION,
    });
  });

  it('when a flush is confirmed, it warms the hot keys and evicts the stage keeping them', async () => {
    // Prepare
    const cache = new FakeCache();
    const deps = depsWith(cache, { hot: present('hot', 5) });

    // Act
    const answer = await runCacheAdminRequest(deps, {
      operation: 'flush',
      batch: 100,
      dryRun: false,
      confirmed: true,
      requestedBy: BY,
    });

    // Assess
    expect(answer).toMatchObject({
      status: 'ok',
      result: { hotKeys: [{ result: 'warmed', version: 5 }], evicted: 2 },
    });
    expect(cache.evictions).toEqual([
      {
        prefix: `tenang:${STAGE}:`,
        options: expect.objectContaining({ count: 100, keep: new Set([orderCacheKey(KEYSPACE, 'hot')]) }),
      },
    ]);
  });

  it('when a flush is neither confirmed nor a dry run, it is refused and nothing is touched', async () => {
    // Prepare
    const cache = new FakeCache();

    // Act
    const answer = await runCacheAdminRequest(depsWith(cache, {}), {
      operation: 'flush',
      batch: 100,
      dryRun: false,
      confirmed: false,
      requestedBy: BY,
    });

    // Assess
    expect(answer).toEqual({ status: 'refused', message: expect.stringContaining('confirmed: true') });
    expect(cache.evictions).toEqual([]);
    expect(cache.calls.putIfNewer).toBe(0);
  });

  it('when a prefix lies outside the stage, it is refused naming the keyspace', async () => {
    // Act
    const answer = await runCacheAdminRequest(depsWith(new FakeCache(), {}), {
      operation: 'invalidate-prefix',
      prefix: 'tenang:other:v1:',
      batch: 10,
      dryRun: false,
      requestedBy: BY,
    });

    // Assess
    expect(answer).toEqual({
      status: 'refused',
      message: expect.stringContaining(`it must start with tenang:${STAGE}:`),
    });
  });

  it('when the request does not match the schema, it is refused naming each bad field', async () => {
    // Act
    const answer = await runCacheAdminRequest(depsWith(new FakeCache(), {}), {
      operation: 'invalidate-entity',
      entity: 'customer:1',
      requestedBy: {},
    });

    // Assess
    expect(answer.status).toBe('refused');
    const message = answer.status === 'refused' ? answer.message : '';
    expect(message).toContain('entity: unknown entity "customer"');
    expect(message).toContain('dryRun:');
    expect(message).toContain('requestedBy.actor:');
  });

  it('when the cache does not answer, it throws (a function error, not a refusal)', async () => {
    // Prepare
    const cache = new FakeCache();
    cache.down = true;

    // Act
    const running = runCacheAdminRequest(depsWith(cache, {}), {
      operation: 'invalidate-prefix',
      prefix: `tenang:${STAGE}:v1:order:`,
      batch: 10,
      dryRun: false,
      requestedBy: BY,
    });

    // Assess
    await expect(running).rejects.toThrow(CacheUnavailableError);
  });

  it('when the entity is not declared, it is refused naming the declared ones, and nothing is read', async () => {
    // Prepare
    const cache = new FakeCache();
    const deps = { ...depsWith(cache, {}), settings: { ...SETTINGS, entities: [] } };

    // Act
    const answer = await runCacheAdminRequest(deps, {
      operation: 'invalidate-entity',
      entity: 'order:o1',
      dryRun: false,
      requestedBy: BY,
    });

    // Assess
    expect(answer).toEqual({
      status: 'refused',
      message: expect.stringContaining('unknown entity "order"; none is declared (stage.cache.entities)'),
    });
    expect(cache.calls.fence).toBe(0);
  });
});
