/**
 * RedisCache.evictByPrefix's options against a real Redis (what `tenang cache` relies on): a dry
 * run counts without deleting, kept keys are skipped, and progress is reported after every batch.
 * Every key sits under one prefix of this run; afterAll deletes exactly those.
 */
import type Redis from 'ioredis';
import { connectRedis, type RedisConnection } from '../../lib/adapters/redis/connect';
import { RedisCache } from '../../lib/adapters/redis/redis-cache';
import type { PrefixEviction } from '../../lib/core/ports';
import { redisClient, uniqueName } from '../helpers/aws';

jest.setTimeout(30_000);

const PREFIX = `${uniqueName('it-redis-evict')}:`;
const TTL_MS = 60_000;

let connection: RedisConnection;
let cache: RedisCache;
let admin: Redis;

/** A scope of `values` cached values, one tombstone and one lock. */
async function seed(values: number): Promise<{ scope: string; keys: string[] }> {
  const scope = `${PREFIX}${uniqueName('s')}:`;
  const keys = Array.from({ length: values }, (_, i) => `${scope}v${i}`);
  await Promise.all(keys.map((k, i) => cache.putIfNewer(k, i, { i }, TTL_MS)));
  await cache.fence(`${scope}t`, 3, TTL_MS);
  await cache.tryLoadLock(`${scope}v0`, 'token', TTL_MS);
  return { scope, keys };
}

beforeAll(() => {
  const url = process.env.REDIS_URL;
  if (url === undefined) throw new Error('REDIS_URL is not set: run through the jest integration project');
  connection = connectRedis({ kind: 'url', url }, { commandTimeoutMs: 1_000 });
  cache = new RedisCache(connection);
  admin = redisClient();
});

afterAll(async () => {
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 500);
    cursor = next;
    if (keys.length > 0) await admin.del(...keys);
  } while (cursor !== '0');
  await admin.quit();
  await connection.close();
});

describe('Class: RedisCache', () => {
  describe('Method: evictByPrefix (options)', () => {
    it('when it is a dry run, it counts the cached values it would evict and deletes nothing', async () => {
      // Prepare
      const { scope, keys } = await seed(40);

      // Act
      const result = await cache.evictByPrefix(scope, { dryRun: true, count: 10 });

      // Assess
      expect(result).toEqual({ scanned: 42, evicted: 40 });
      expect(await admin.exists(...keys)).toBe(40);
    });

    it('when keys are to be kept, it skips them and evicts the others', async () => {
      // Prepare
      const { scope, keys } = await seed(20);
      const kept = new Set([keys[3] as string, keys[7] as string]);

      // Act
      const result = await cache.evictByPrefix(scope, { keep: kept, count: 10 });

      // Assess
      expect(result).toEqual({ scanned: 22, evicted: 18 });
      expect(await cache.get(keys[3] as string)).toEqual({ kind: 'value', version: 3, value: { i: 3 } });
      expect(await cache.get(keys[7] as string)).toEqual({ kind: 'value', version: 7, value: { i: 7 } });
      expect(await cache.get(keys[4] as string)).toBeUndefined();
    });

    it('when the scan takes several batches, it reports the running totals after each one', async () => {
      // Prepare
      const { scope } = await seed(300);
      const progress: PrefixEviction[] = [];

      // Act
      const result = await cache.evictByPrefix(scope, { count: 50, onBatch: (p) => progress.push(p) });

      // Assess
      expect(progress.length).toBeGreaterThan(1);
      expect(progress.at(-1)).toEqual(result);
      expect(result).toEqual({ scanned: 302, evicted: 300 });
      for (let i = 1; i < progress.length; i += 1) {
        expect(progress[i]?.scanned).toBeGreaterThanOrEqual(progress[i - 1]?.scanned ?? 0);
      }
    });
  });
});
