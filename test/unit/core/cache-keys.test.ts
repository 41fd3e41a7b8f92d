import {
  cacheKeyspace,
  CACHE_SCHEMA_VERSION,
  entityCacheKey,
  entityPrefix,
  InvalidEntityImageError,
  keysForEntityChange,
  landingSignalKey,
  loadLockKey,
  type CachedEntity,
} from '../../../lib/core/cache-keys';

const KS = cacheKeyspace('dev');
/** An entity as a declaration names it (the reference app's order). */
const ORDER: CachedEntity = { name: 'order', table: 'orders', key: 'orderId', version: 'version' };
const orderCacheKey = (keyspace: typeof KS, id: string): string => entityCacheKey(keyspace, ORDER.name, id);
const keysForOrderChange = (
  keyspace: typeof KS,
  oldImage: Record<string, unknown> | undefined,
  newImage: Record<string, unknown> | undefined,
) => keysForEntityChange(keyspace, ORDER, oldImage, newImage);

describe('Function: entityCacheKey', () => {
  it('when built, it sits under the stage, the schema version and the order prefix, with the id as a hash tag', () => {
    // Act
    const key = orderCacheKey(KS, 'ord-1');

    // Assess
    expect(key).toBe(`tenang:dev:${CACHE_SCHEMA_VERSION}:order:{ord-1}`);
    expect(key.startsWith(entityPrefix(KS, 'order'))).toBe(true);
    expect(loadLockKey(key)).toBe(`${key}:lock`);
  });

  it('when its load lock and landing signal are keyed, they carry the same hash tag: one slot of a clustered cache, so one script may touch all three', () => {
    // Prepare: Redis Cluster hashes only what the first {…} holds, when it holds something.
    const hashed = (k: string): string => /^[^{]*\{([^}]+)\}/.exec(k)?.[1] ?? k;
    const key = orderCacheKey(KS, 'ord-1');

    // Act
    const tags = [key, loadLockKey(key), landingSignalKey(key)].map(hashed);

    // Assess
    expect(tags).toEqual(['ord-1', 'ord-1', 'ord-1']);
    expect(landingSignalKey(key)).not.toBe(loadLockKey(key));
  });

  it('when two stages share a Redis, their keys never collide', () => {
    // Act
    const dev = orderCacheKey(cacheKeyspace('dev'), 'ord-1');
    const prod = orderCacheKey(cacheKeyspace('prod'), 'ord-1');

    // Assess
    expect(dev).not.toBe(prod);
  });
});

describe('Function: keysForEntityChange', () => {
  it('when an order is inserted, its key is fenced at the new version', () => {
    // Act
    const keys = keysForOrderChange(KS, undefined, { orderId: 'o-1', version: 0 });

    // Assess
    expect(keys).toEqual([{ key: orderCacheKey(KS, 'o-1'), version: 0 }]);
  });

  it('when an order is modified, its key is fenced at the new version', () => {
    // Act
    const keys = keysForOrderChange(KS, { orderId: 'o-1', version: 3 }, { orderId: 'o-1', version: 4 });

    // Assess
    expect(keys).toEqual([{ key: orderCacheKey(KS, 'o-1'), version: 4 }]);
  });

  it('when an order is modified without a new version (its idempotency record claimed or released), no key is fenced', () => {
    // Act
    const keys = keysForOrderChange(KS, { orderId: 'o-1', version: 3 }, { orderId: 'o-1', version: 3 });

    // Assess
    expect(keys).toEqual([]);
  });

  it('when an order is removed, its key is fenced one past the removed version so no read can put it back', () => {
    // Act
    const keys = keysForOrderChange(KS, { orderId: 'o-1', version: 4 }, undefined);

    // Assess
    expect(keys).toEqual([{ key: orderCacheKey(KS, 'o-1'), version: 5 }]);
  });

  it('when the id differs between the images, both keys are invalidated', () => {
    // Act
    const keys = keysForOrderChange(KS, { orderId: 'o-1', version: 2 }, { orderId: 'o-2', version: 0 });

    // Assess
    expect(keys).toEqual([
      { key: orderCacheKey(KS, 'o-2'), version: 0 },
      { key: orderCacheKey(KS, 'o-1'), version: 3 },
    ]);
  });

  it('when the declared attributes differ, it reads the id and version from them', () => {
    // Prepare
    const invoice: CachedEntity = { name: 'invoice', table: 'invoices', key: 'invoiceNo', version: 'rev' };

    // Act
    const keys = keysForEntityChange(KS, invoice, { invoiceNo: 'i-1', rev: 1 }, { invoiceNo: 'i-1', rev: 2 });

    // Assess
    expect(keys).toEqual([{ key: `tenang:dev:${CACHE_SCHEMA_VERSION}:invoice:{i-1}`, version: 2 }]);
  });

  it.each([
    ['no id', { version: 1 }, 'orderId: must be a non-empty string, got nothing'],
    ['an empty id', { orderId: '', version: 1 }, 'orderId: must be a non-empty string, got ""'],
    ['a negative version', { orderId: 'o-1', version: -1 }, 'version: must be an integer ≥ 0, got -1'],
    ['a fractional version', { orderId: 'o-1', version: 1.5 }, 'version: must be an integer ≥ 0, got 1.5'],
    ['a version as text', { orderId: 'o-1', version: '2' }, 'version: must be an integer ≥ 0, got "2"'],
  ])('when an image has %s, it is refused naming the attribute', (_, image, problem) => {
    // Act
    const act = (): unknown => keysForOrderChange(KS, undefined, image);

    // Assess
    expect(act).toThrow(InvalidEntityImageError);
    expect(act).toThrow(problem);
  });
});
