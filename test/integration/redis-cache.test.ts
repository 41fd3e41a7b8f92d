/**
 * RedisCache against a real Redis: the VersionedCache contract (the Lua scripts agree with the
 * core's rules and the in-memory fake), atomicity under concurrency, prefix eviction, and fast
 * failure when Redis is down (a private redis-server; the shared one is never stopped).
 */
import type Redis from 'ioredis';
import { connectRedis, type RedisConnection } from '../../lib/adapters/redis/connect';
import { decodeEntry, RedisCache } from '../../lib/adapters/redis/redis-cache';
import { CacheUnavailableError } from '../../lib/core/errors';
import { redisClient, uniqueName } from '../helpers/aws';
import { startOwnRedis, type OwnRedis } from '../helpers/redis-server';
import { describeVersionedCacheContract } from '../helpers/versioned-cache-contract';

jest.setTimeout(30_000);

/**
 * The clients' command timeout: 1 s, four times the 250 ms `tenang init` declares, because this
 * suite runs at a low priority beside the platform lanes, where a reply can wait for the CPU
 * longer than 250 ms.
 */
const COMMAND_TIMEOUT_MS = 1_000;
// Every key of this file sits under one unique prefix; afterAll deletes exactly those.
const PREFIX = `${uniqueName('it-redis-cache')}:`;

function requireRedisUrl(): string {
  const url = process.env.REDIS_URL;
  if (url === undefined) throw new Error('REDIS_URL is not set: run through the jest integration project');
  return url;
}

let connection: RedisConnection;
let cache: RedisCache;
let admin: Redis;
let counter = 0;
const key = (label: string): string => {
  counter += 1;
  return `${PREFIX}${label}:${counter}`;
};

beforeAll(() => {
  connection = connectRedis(
    { kind: 'url', url: requireRedisUrl() },
    { commandTimeoutMs: COMMAND_TIMEOUT_MS },
  );
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
  describeVersionedCacheContract({ cache: () => cache, freshKey: key });

  describe('Method: putIfNewer', () => {
    it('when the key holds data that is not an entry, it is replaced', async () => {
      // Prepare
      const k = key('foreign');
      await admin.set(k, 'something else', 'PX', 60_000);

      // Act
      const result = await cache.putIfNewer(k, 1, { ok: true }, 60_000);

      // Assess
      expect(result).toBe('written');
      expect(await cache.get(k)).toEqual({ kind: 'value', version: 1, value: { ok: true } });
    });

    it('when a version is not a non-negative safe integer, it refuses before calling Redis', async () => {
      // Act
      const writing = cache.putIfNewer(key('bad-version'), 1.5, {}, 60_000);

      // Assess
      await expect(writing).rejects.toThrow(RangeError);
    });

    it('when 200 write-backs and invalidations race on one key, the entry ends at the highest version and never went below an applied invalidation', async () => {
      // Prepare
      const k = key('race');
      const versions = Array.from({ length: 200 }, (_, i) => (i * 37) % 101);
      const fences = new Set([13, 58, 99]);
      // The race is about order, not time: 200 commands at once from a process the CI machine
      // runs at low priority took longer than the functions' 250 ms timeout (seen once, under load).
      const patient = connectRedis({ kind: 'url', url: requireRedisUrl() }, { commandTimeoutMs: 10_000 });
      const racing = new RedisCache(patient);

      // Act
      const results = await Promise.all(
        versions.map((v) =>
          fences.has(v) ? racing.fence(k, v, 60_000) : racing.putIfNewer(k, v, { v }, 60_000),
        ),
      ).finally(() => patient.close());

      // Assess
      const entry = await cache.get(k);
      expect(entry?.version).toBe(100);
      expect(entry?.kind).toBe('value');
      expect(results.filter((r) => r === 'written' || r === 'fenced').length).toBeGreaterThan(0);
    });
  });

  describe('Method: evictByPrefix', () => {
    it('when evicting a prefix, it deletes its cached values, keeps its tombstones, locks and landing signals, and leaves other prefixes alone', async () => {
      // Prepare
      const scope = `${PREFIX}evict:${uniqueName('p')}:`;
      const other = `${PREFIX}keep:${uniqueName('p')}:`;
      for (let i = 0; i < 25; i += 1) await cache.putIfNewer(`${scope}v${i}`, i, { i }, 60_000);
      await cache.fence(`${scope}t`, 9, 60_000);
      await cache.tryLoadLock(`${scope}v1`, 'token', 60_000);
      // A landing signal (a stream) under the prefix: neither a GET nor a DEL may touch it.
      await cache.tryLoadLock(`${scope}v2`, 'token', 60_000);
      await cache.releaseLoadLock(`${scope}v2`, 'token', 60_000);
      await cache.putIfNewer(`${other}v`, 1, { other: true }, 60_000);

      // Act
      const dryRun = await cache.evictByPrefix(scope, { count: 10, dryRun: true });
      const result = await cache.evictByPrefix(scope, { count: 10 });

      // Assess
      expect(dryRun).toEqual({ scanned: 28, evicted: 25 });
      expect(result).toEqual({ scanned: 28, evicted: 25 });
      expect(await cache.get(`${scope}v3`)).toBeUndefined();
      expect(await cache.get(`${scope}t`)).toEqual({ kind: 'tombstone', version: 9 });
      expect(await admin.get(`${scope}v1:lock`)).toBe('token');
      expect(await admin.type(`${scope}v2:landed`)).toBe('stream');
      expect(await cache.get(`${other}v`)).toEqual({ kind: 'value', version: 1, value: { other: true } });
    });

    it('when the prefix holds glob characters, they match literally', async () => {
      // Prepare
      const scope = `${PREFIX}glob*[x]?:`;
      await cache.putIfNewer(`${scope}a`, 1, {}, 60_000);
      await cache.putIfNewer(`${PREFIX}globZZx:a`, 1, {}, 60_000);

      // Act
      const result = await cache.evictByPrefix(scope);

      // Assess
      expect(result.evicted).toBe(1);
      expect(await cache.get(`${PREFIX}globZZx:a`)).toBeDefined();
    });
  });

  describe('Function: decodeEntry', () => {
    it.each([
      ['v:3:{"a":1}', { kind: 'value', version: 3, value: { a: 1 } }],
      ['t:4:', { kind: 'tombstone', version: 4 }],
      ['v:3:not json', undefined],
      ['hello', undefined],
      [null, undefined],
    ])('when the stored string is %p, it decodes to %p', (raw, expected) => {
      // Act
      const entry = decodeEntry(raw);

      // Assess
      expect(entry).toEqual(expected);
    });
  });
});

describe('Class: RedisCache, waits for a landing', () => {
  let ownConnection: RedisConnection | undefined;

  afterEach(async () => {
    await ownConnection?.close();
    ownConnection = undefined;
  });

  /** The mark of a caller that lost `k`'s lock to 'holder'. */
  async function lostTo(on: RedisCache, k: string): Promise<string> {
    await on.tryLoadLock(k, 'holder', 60_000);
    const lost = await on.tryLoadLock(k, 'waiter', 60_000);
    if (lost.acquired) throw new Error('the lock was free');
    return lost.since;
  }

  it('when a caller is blocked waiting, the other commands of its process are answered at once', async () => {
    // Prepare
    const k = key('blocked');
    const since = await lostTo(cache, k);
    const waiting = cache.waitForLanding(k, since, 1_500);

    // Act
    const started = Date.now();
    const entry = await cache.get(key('meanwhile'));
    const answeredMs = Date.now() - started;
    await cache.releaseLoadLock(k, 'holder', 60_000);

    // Assess
    expect(entry).toBeUndefined();
    expect(answeredMs).toBeLessThan(COMMAND_TIMEOUT_MS);
    expect((await waiting).landed).toBe(true);
  });

  it('when a wait lasts longer than the command timeout, it runs its full time and ends without an error', async () => {
    // Prepare
    const k = key('long-wait');
    const since = await lostTo(cache, k);
    const started = Date.now();

    // Act
    const landing = await cache.waitForLanding(k, since, COMMAND_TIMEOUT_MS * 3);

    // Assess
    expect(landing).toEqual({ landed: false });
    expect(Date.now() - started).toBeGreaterThanOrEqual(COMMAND_TIMEOUT_MS * 3 - 10);
  });

  it('when waits on more keys than blocking connections overlap, each still sees its landing', async () => {
    // Prepare: one blocking connection, so the second wait queues behind the first.
    ownConnection = connectRedis(
      { kind: 'url', url: requireRedisUrl() },
      { commandTimeoutMs: COMMAND_TIMEOUT_MS, maxBlockingClients: 1 },
    );
    const ownCache = new RedisCache(ownConnection);
    const [a, b] = [key('queued-a'), key('queued-b')];
    const [sinceA, sinceB] = [await lostTo(ownCache, a), await lostTo(ownCache, b)];
    const waits = [ownCache.waitForLanding(a, sinceA, 5_000), ownCache.waitForLanding(b, sinceB, 5_000)];

    // Act: b lands while its wait is still queued, then a.
    await ownCache.releaseLoadLock(b, 'holder', 60_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await ownCache.releaseLoadLock(a, 'holder', 60_000);
    const landings = await Promise.all(waits);

    // Assess
    expect(landings).toEqual([{ landed: true }, { landed: true }]);
  });
});

describe('Class: RedisCache with a Redis that goes down', () => {
  let own: OwnRedis | undefined;
  let ownConnection: RedisConnection | undefined;

  afterEach(async () => {
    await ownConnection?.close();
    await own?.stop();
    own = undefined;
    ownConnection = undefined;
  });

  it('when the cache is used first, it waits for the connection instead of failing the first command', async () => {
    // Prepare
    own = await startOwnRedis();
    ownConnection = connectRedis({ kind: 'url', url: own.url }, { commandTimeoutMs: COMMAND_TIMEOUT_MS });
    const ownCache = new RedisCache(ownConnection);

    // Act
    const result = await ownCache.putIfNewer('k', 1, { first: true }, 60_000);

    // Assess
    expect(result).toBe('written');
  });

  it('when Redis stops, every command fails fast with CacheUnavailableError, and after a restart the cache works again', async () => {
    // Prepare
    own = await startOwnRedis();
    ownConnection = connectRedis({ kind: 'url', url: own.url }, { commandTimeoutMs: COMMAND_TIMEOUT_MS });
    const ownCache = new RedisCache(ownConnection);
    await ownCache.putIfNewer('k', 1, {}, 60_000);
    // Opens the connection blocking reads run on, as a first wait would.
    await ownCache.waitForLanding('k', '0-0', 1);

    // Act
    await own.stop();
    const started = Date.now();
    const results = await Promise.allSettled([
      ownCache.get('k'),
      ownCache.putIfNewer('k', 2, {}, 60_000),
      ownCache.fence('k', 3, 60_000),
      ownCache.tryLoadLock('k', 't', 1_000),
      ownCache.releaseLoadLock('k', 't', 1_000),
      ownCache.waitForLanding('k', '0-0', 1_000),
    ]);
    const elapsed = Date.now() - started;
    own = await own.restart();
    const recovered = await pollUntilWorks(() => ownCache.get('k'));

    // Assess
    for (const result of results) {
      expect(result.status).toBe('rejected');
      expect((result as PromiseRejectedResult).reason).toBeInstanceOf(CacheUnavailableError);
    }
    expect(elapsed).toBeLessThan(COMMAND_TIMEOUT_MS * 4);
    expect(recovered).toBeUndefined();
  });
});

/** Retries `read` until it stops failing (ioredis reconnects in the background), for at most 10 s. */
async function pollUntilWorks<T>(read: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      return await read();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
