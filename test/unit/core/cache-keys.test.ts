import {
  cacheKeyspace,
  CACHE_SCHEMA_VERSION,
  entityPrefix,
  keysForOrderChange,
  loadLockKey,
  orderCacheKey,
} from '../../../lib/core/cache-keys';

const KS = cacheKeyspace('dev');

describe('Function: orderCacheKey', () => {
  it('when built, it sits under the stage, the schema version and the order prefix, with the id as a hash tag', () => {
    // Act
    const key = orderCacheKey(KS, 'ord-1');

    // Assess
    expect(key).toBe(`tenang:dev:${CACHE_SCHEMA_VERSION}:order:{ord-1}`);
    expect(key.startsWith(entityPrefix(KS, 'order'))).toBe(true);
    expect(loadLockKey(key)).toBe(`${key}:lock`);
  });

  it('when two stages share a Redis, their keys never collide', () => {
    // Act
    const dev = orderCacheKey(cacheKeyspace('dev'), 'ord-1');
    const prod = orderCacheKey(cacheKeyspace('prod'), 'ord-1');

    // Assess
    expect(dev).not.toBe(prod);
  });
});

describe('Function: keysForOrderChange', () => {
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
});
