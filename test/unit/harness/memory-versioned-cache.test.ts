import { InMemoryVersionedCache } from '../../../harness/fakes/memory-versioned-cache';
import { CacheUnavailableError } from '../../../lib/core/errors';
import { describeVersionedCacheContract } from '../../helpers/versioned-cache-contract';

describe('Class: InMemoryVersionedCache', () => {
  const cache = new InMemoryVersionedCache();
  let counter = 0;

  describeVersionedCacheContract({
    cache: () => cache,
    freshKey: (label) => {
      counter += 1;
      return `fake:${label}:${counter}`;
    },
  });

  describe('Property: down', () => {
    it('when the cache is down, every method rejects with CacheUnavailableError', async () => {
      // Prepare
      const down = new InMemoryVersionedCache();
      down.down = true;

      // Act
      const results = await Promise.allSettled([
        down.get('k'),
        down.putIfNewer('k', 1, {}, 1000),
        down.fence('k', 1, 1000),
        down.tryLoadLock('k', 't', 1000),
        down.releaseLoadLock('k', 't', 1000),
        down.waitForLanding('k', '0', 1000),
      ]);

      // Assess
      for (const result of results) {
        expect(result.status).toBe('rejected');
        expect((result as PromiseRejectedResult).reason).toBeInstanceOf(CacheUnavailableError);
      }
    });
  });
});
