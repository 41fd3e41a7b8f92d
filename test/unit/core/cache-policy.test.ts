import { InMemoryVersionedCache } from '../../../harness/fakes/memory-versioned-cache';
import {
  admitsTombstone,
  admitsValue,
  CacheAside,
  invalidateKeys,
  tombstoneTtlMs,
  ttlWithJitterMs,
  type CachedEntityCodec,
  type CachePolicyEvent,
  type CachePolicySettings,
} from '../../../lib/core/cache-policy';
import { CacheUnavailableError } from '../../../lib/core/errors';
import type { CacheEntry, VersionedCache } from '../../../lib/core/ports';

interface Doc {
  readonly id: string;
  readonly version: number;
  readonly body: string;
}

const CODEC: CachedEntityCodec<Doc> = {
  parse: (raw) => {
    const r = raw as Partial<Doc> | null;
    return r !== null && typeof r === 'object' && typeof r.id === 'string' && typeof r.version === 'number'
      ? (r as Doc)
      : undefined;
  },
  version: (doc) => doc.version,
};

const SETTINGS: CachePolicySettings = {
  ttlSeconds: 300,
  ttlJitterRatio: 0.2,
  loadLockMs: 2_000,
};
const KEY = 'tenang:unit:v1:doc:{d-1}';

/**
 * A fake clock that moves only when the test advances it, and the timers of the cache's waits
 * on it, so a wait runs out of time exactly when the test says.
 */
class FakeTime {
  public nowMs = 1_000_000;
  private timers: { readonly atMs: number; readonly fire: () => void }[] = [];
  public readonly clock = (): Date => new Date(this.nowMs);
  public readonly sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      this.timers.push({ atMs: this.nowMs + ms, fire: resolve });
    });

  /** Moves the clock and fires the timers that are due. */
  public advance(ms: number): void {
    this.nowMs += ms;
    const due = this.timers.filter((t) => t.atMs <= this.nowMs);
    this.timers = this.timers.filter((t) => t.atMs > this.nowMs);
    for (const timer of due) timer.fire();
  }

  /** A cache whose TTLs and waits run on this clock. */
  public cache(): InMemoryVersionedCache {
    return new InMemoryVersionedCache(() => this.nowMs, { sleep: this.sleep });
  }
}

/** `cache` with some of its methods replaced, to stage a race around them. */
function around(cache: VersionedCache, replaced: Partial<VersionedCache>): VersionedCache {
  return {
    get: (...args) => cache.get(...args),
    putIfNewer: (...args) => cache.putIfNewer(...args),
    fence: (...args) => cache.fence(...args),
    tryLoadLock: (...args) => cache.tryLoadLock(...args),
    releaseLoadLock: (...args) => cache.releaseLoadLock(...args),
    waitForLanding: (...args) => cache.waitForLanding(...args),
    ...replaced,
  };
}

/** Lets every promise that can settle do so. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A promise the test resolves when it wants. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve: (value: T) => void = () => undefined;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

function doc(version: number, body = `body-${version}`): Doc {
  return { id: 'd-1', version, body };
}

function policy(
  cache: VersionedCache,
  time: FakeTime,
  options: { random?: () => number; events?: CachePolicyEvent[]; settings?: CachePolicySettings } = {},
): CacheAside<Doc> {
  return new CacheAside(options.settings ?? SETTINGS, CODEC, {
    cache,
    clock: time.clock,
    random: options.random ?? ((): number => 0.5),
    onEvent: (event) => options.events?.push(event),
  });
}

describe('Function: ttlWithJitterMs', () => {
  it('when random is 0, it is the base TTL; when random approaches 1, it approaches TTL × (1 + ratio)', () => {
    // Act
    const low = ttlWithJitterMs(SETTINGS, () => 0);
    const high = ttlWithJitterMs(SETTINGS, () => 0.999_999);

    // Assess
    expect(low).toBe(300_000);
    expect(high).toBe(360_000);
  });

  it('when many TTLs are drawn, they spread over the jitter range instead of expiring together', () => {
    // Prepare
    let i = 0;
    const random = (): number => (i++ % 100) / 100;

    // Act
    const ttls = new Set(Array.from({ length: 100 }, () => ttlWithJitterMs(SETTINGS, random)));

    // Assess
    expect(ttls.size).toBe(100);
    expect(Math.min(...ttls)).toBeGreaterThanOrEqual(300_000);
    expect(Math.max(...ttls)).toBeLessThan(360_000);
  });
});

describe('Function: tombstoneTtlMs', () => {
  it('when computed, it is the base TTL: far longer than any read in flight', () => {
    // Act
    const ttl = tombstoneTtlMs(SETTINGS);

    // Assess
    expect(ttl).toBe(300_000);
  });
});

describe('Functions: admitsValue and admitsTombstone', () => {
  const value = (version: number): CacheEntry => ({ kind: 'value', version, value: {} });
  const tombstone = (version: number): CacheEntry => ({ kind: 'tombstone', version });

  const cases = (expected: readonly boolean[]) =>
    [
      { label: 'nothing', current: undefined },
      { label: 'an older value', current: value(1) },
      { label: 'an equal value', current: value(2) },
      { label: 'a newer value', current: value(3) },
      { label: 'an older tombstone', current: tombstone(1) },
      { label: 'an equal tombstone', current: tombstone(2) },
      { label: 'a newer tombstone', current: tombstone(3) },
    ].map((c, i) => ({ ...c, expected: expected[i] }));

  it.each(cases([true, true, false, false, true, true, false]))(
    'when the key holds $label, a value at version 2 is admitted: $expected',
    ({ current, expected }) => {
      // Act
      const admitted = admitsValue(current, 2);

      // Assess
      expect(admitted).toBe(expected);
    },
  );

  it.each(cases([true, true, true, false, true, false, false]))(
    'when the key holds $label, a tombstone at version 2 is admitted: $expected',
    ({ current, expected }) => {
      // Act
      const admitted = admitsTombstone(current, 2);

      // Assess
      expect(admitted).toBe(expected);
    },
  );
});

describe('Class: CacheAside', () => {
  describe('Method: read', () => {
    it('when the cache holds the value, it returns a hit without calling the loader', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      await cache.putIfNewer(KEY, 4, doc(4), 60_000);
      const load = jest.fn(() => Promise.resolve(doc(5)));

      // Act
      const read = await policy(cache, time).read(KEY, load);

      // Assess
      expect(read).toEqual({ source: 'hit', value: doc(4) });
      expect(load).not.toHaveBeenCalled();
    });

    it('when the key is absent, it loads, writes back with a jittered TTL and the next read is a hit', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      const put = jest.spyOn(cache, 'putIfNewer');
      const load = jest.fn(() => Promise.resolve(doc(2)));
      const reader = policy(cache, time, { random: () => 0.5 });

      // Act
      const first = await reader.read(KEY, load);
      const second = await reader.read(KEY, load);

      // Assess
      expect(first).toEqual({ source: 'miss', value: doc(2) });
      expect(second).toEqual({ source: 'hit', value: doc(2) });
      expect(load).toHaveBeenCalledTimes(1);
      expect(put).toHaveBeenCalledWith(KEY, 2, doc(2), 330_000);
    });

    it('when the value was written back, it expires after its jittered TTL and is loaded again', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      const load = jest.fn(() => Promise.resolve(doc(2)));
      const reader = policy(cache, time, { random: () => 0 });
      await reader.read(KEY, load);

      // Act
      time.nowMs += 299_999;
      const before = await reader.read(KEY, load);
      time.nowMs += 1;
      const after = await reader.read(KEY, load);

      // Assess
      expect([before.source, after.source]).toEqual(['hit', 'miss']);
      expect(load).toHaveBeenCalledTimes(2);
    });

    it('when the key holds a tombstone, it is a miss and the loaded version replaces the tombstone', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      await cache.fence(KEY, 5, 60_000);

      // Act
      const read = await policy(cache, time).read(KEY, () => Promise.resolve(doc(5)));

      // Assess
      expect(read).toEqual({ source: 'miss', value: doc(5) });
      expect(cache.peek(KEY)).toEqual({ kind: 'value', version: 5, value: doc(5) });
    });

    it('when the cached value does not parse (an old format), it is a miss', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      await cache.putIfNewer(KEY, 1, { legacy: true }, 60_000);

      // Act
      const read = await policy(cache, time).read(KEY, () => Promise.resolve(doc(2)));

      // Assess
      expect(read).toEqual({ source: 'miss', value: doc(2) });
    });

    it('when the loader finds nothing, it returns undefined and writes nothing', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();

      // Act
      const read = await policy(cache, time).read(KEY, () => Promise.resolve(undefined));

      // Assess
      expect(read).toEqual({ source: 'miss', value: undefined });
      expect(cache.calls.putIfNewer).toBe(0);
      expect(cache.peek(KEY)).toBeUndefined();
    });

    it('when a loaded version is older than a tombstone written meanwhile, the write-back is refused and reported', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      const events: CachePolicyEvent[] = [];
      const loaded = deferred<Doc>();
      const reading = policy(cache, time, { events }).read(KEY, () => loaded.promise);
      await new Promise((r) => setImmediate(r));

      // Act
      await cache.fence(KEY, 3, 60_000);
      loaded.resolve(doc(2));
      const read = await reading;

      // Assess
      expect(read).toEqual({ source: 'miss', value: doc(2) });
      expect(cache.peek(KEY)).toEqual({ kind: 'tombstone', version: 3 });
      expect(events).toContainEqual({ kind: 'write-back-fenced', key: KEY, version: 2 });
    });

    it('when a read starts after an invalidation completed, it returns the new version', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      let stored = doc(1);
      const reader = policy(cache, time);
      await reader.read(KEY, () => Promise.resolve(stored));
      stored = doc(2);
      await invalidateKeys(cache, [{ key: KEY, version: 2 }], SETTINGS);

      // Act
      const read = await reader.read(KEY, () => Promise.resolve(stored));

      // Assess
      expect(read).toEqual({ source: 'miss', value: doc(2) });
    });

    it('when many reads of one key run at once in a process, they share one cache look-up and one load', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      const loaded = deferred<Doc>();
      const load = jest.fn(() => loaded.promise);
      const reader = policy(cache, time);

      // Act
      const reads = Array.from({ length: 50 }, () => reader.read(KEY, load));
      loaded.resolve(doc(1));
      const results = await Promise.all(reads);

      // Assess
      expect(load).toHaveBeenCalledTimes(1);
      expect(cache.calls.get).toBe(1);
      expect(new Set(results.map((r) => r.source))).toEqual(new Set(['miss']));
    });

    it('when the shared load fails, every waiting read fails and the next read loads again', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      const reader = policy(cache, time);
      const failing = jest.fn(() => Promise.reject(new Error('dynamodb down')));

      // Act
      const results = await Promise.allSettled([reader.read(KEY, failing), reader.read(KEY, failing)]);
      const retry = await reader.read(KEY, () => Promise.resolve(doc(1)));

      // Assess
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
      expect(failing).toHaveBeenCalledTimes(1);
      expect(retry.source).toBe('miss');
      expect(await cache.tryLoadLock(KEY, 'next', 1_000)).toMatchObject({ acquired: true });
    });

    it('when another process holds the load lock, the waiter is woken when the value lands and is handed it, without a load, a pause or another look', async () => {
      // Prepare: the holder's load takes 200 ms of the fake clock.
      const time = new FakeTime();
      const cache = time.cache();
      const loaded = deferred<Doc>();
      const holderLoad = jest.fn(() => loaded.promise);
      const waiterLoad = jest.fn(() => Promise.resolve(doc(9)));
      const holding = policy(cache, time).read(KEY, holderLoad);
      await settle();
      const waiting = policy(cache, time).read(KEY, waiterLoad);
      await settle();
      time.advance(200);
      const before = { ...cache.calls };

      // Act
      loaded.resolve(doc(1));
      const [held, waited] = await Promise.all([holding, waiting]);

      // Assess
      expect(held).toEqual({ source: 'miss', value: doc(1) });
      expect(waited).toEqual({ source: 'hit', value: doc(1) });
      expect(holderLoad).toHaveBeenCalledTimes(1);
      expect(waiterLoad).not.toHaveBeenCalled();
      // Waking costs only the holder's release: nothing ran while the load lasted, nothing after it.
      expect(before).toEqual({
        get: 2,
        putIfNewer: 0,
        fence: 0,
        tryLoadLock: 2,
        releaseLoadLock: 0,
        waitForLanding: 1,
      });
      expect(cache.calls).toEqual({
        get: 2,
        putIfNewer: 1,
        fence: 0,
        tryLoadLock: 2,
        releaseLoadLock: 1,
        waitForLanding: 1,
      });
    });

    it('when a value lands between its miss and its lock attempt, it takes the lock, finds the value and does not load', async () => {
      // Prepare: another process writes back and releases right after this caller's miss.
      const time = new FakeTime();
      const cache = time.cache();
      let looks = 0;
      const racing = around(cache, {
        get: async (key) => {
          const entry = await cache.get(key);
          looks += 1;
          if (looks === 1) await cache.putIfNewer(KEY, 4, doc(4), 60_000);
          return entry;
        },
      });
      const load = jest.fn(() => Promise.resolve(doc(9)));

      // Act
      const read = await policy(racing, time).read(KEY, load);

      // Assess
      expect(read).toEqual({ source: 'hit', value: doc(4) });
      expect(load).not.toHaveBeenCalled();
      expect(await cache.tryLoadLock(KEY, 'next', 1_000)).toMatchObject({ acquired: true });
    });

    it('when many processes wait on one holder, one landing wakes them all and none loads', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      const loaded = deferred<Doc>();
      const holding = policy(cache, time).read(KEY, () => loaded.promise);
      await settle();
      const load = jest.fn(() => Promise.resolve(doc(9)));
      const waiting = Array.from({ length: 5 }, () => policy(cache, time).read(KEY, load));
      await settle();
      const blocked = cache.waiting(KEY);

      // Act
      loaded.resolve(doc(2));
      const reads = await Promise.all([holding, ...waiting]);

      // Assess
      expect(blocked).toBe(5);
      expect(reads.slice(1)).toEqual(Array.from({ length: 5 }, () => ({ source: 'hit', value: doc(2) })));
      expect(load).not.toHaveBeenCalled();
      expect(cache.waiting(KEY)).toBe(0);
    });

    it('when the value lands between a waiter losing the lock and its wait, the wait returns at once', async () => {
      // Prepare: the holder writes back and releases right after the waiter's failed attempt.
      const time = new FakeTime();
      const cache = time.cache();
      await cache.tryLoadLock(KEY, 'holder', SETTINGS.loadLockMs);
      const racing = around(cache, {
        tryLoadLock: async (...args) => {
          const attempt = await cache.tryLoadLock(...args);
          await cache.putIfNewer(KEY, 4, doc(4), 60_000);
          await cache.releaseLoadLock(KEY, 'holder', SETTINGS.loadLockMs);
          return attempt;
        },
      });
      const started = time.nowMs;

      // Act
      const read = await policy(racing, time).read(KEY, () => Promise.resolve(doc(9)));

      // Assess
      expect(read).toEqual({ source: 'hit', value: doc(4) });
      expect(time.nowMs).toBe(started);
    });

    it('when the holder loads an old version that a tombstone fences off, the woken waiter never gets it and loads the new version itself', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      const loaded = deferred<Doc>();
      const holding = policy(cache, time).read(KEY, () => loaded.promise);
      await settle();
      const waiterLoad = jest.fn(() => Promise.resolve(doc(2)));
      const waiting = policy(cache, time).read(KEY, waiterLoad);
      await settle();

      // Act: an invalidation at version 2 lands while the holder still has version 1 in hand.
      await cache.fence(KEY, 2, 60_000);
      loaded.resolve(doc(1));
      const [held, waited] = await Promise.all([holding, waiting]);

      // Assess
      expect(held).toEqual({ source: 'miss', value: doc(1) });
      expect(waited).toEqual({ source: 'miss', value: doc(2) });
      expect(waiterLoad).toHaveBeenCalledTimes(1);
      expect(cache.peek(KEY)).toEqual({ kind: 'value', version: 2, value: doc(2) });
    });

    it("when a tombstone is written between the holder's write-back and its release, the woken waiter is not handed the old value", async () => {
      // Prepare: an invalidation at version 2 lands just before the holder releases its lock.
      const time = new FakeTime();
      const cache = time.cache();
      const invalidatedBeforeRelease = around(cache, {
        releaseLoadLock: async (...args) => {
          await cache.fence(KEY, 2, 60_000);
          return cache.releaseLoadLock(...args);
        },
      });
      const loaded = deferred<Doc>();
      const holding = policy(invalidatedBeforeRelease, time).read(KEY, () => loaded.promise);
      await settle();
      const waiterLoad = jest.fn(() => Promise.resolve(doc(2)));
      const waiting = policy(cache, time).read(KEY, waiterLoad);
      await settle();

      // Act
      loaded.resolve(doc(1));
      const [held, waited] = await Promise.all([holding, waiting]);

      // Assess
      expect(held).toEqual({ source: 'miss', value: doc(1) });
      expect(waited).toEqual({ source: 'miss', value: doc(2) });
      expect(cache.peek(KEY)).toEqual({ kind: 'value', version: 2, value: doc(2) });
    });

    it('when the holder finds no entity, a woken waiter takes the lock and loads by itself', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      const loaded = deferred<Doc | undefined>();
      const holding = policy(cache, time).read(KEY, () => loaded.promise);
      await settle();
      const waiterLoad = jest.fn(() => Promise.resolve(undefined));
      const waiting = policy(cache, time).read(KEY, waiterLoad);
      await settle();

      // Act
      loaded.resolve(undefined);
      const [, waited] = await Promise.all([holding, waiting]);

      // Assess
      expect(waited).toEqual({ source: 'miss', value: undefined });
      expect(waiterLoad).toHaveBeenCalledTimes(1);
      expect(cache.calls.tryLoadLock).toBe(3);
    });

    it('when the lock holder never writes, the waiter loads by itself after lockWaitMs and the read never fails', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      await cache.tryLoadLock(KEY, 'crashed-holder', 60_000);
      const events: CachePolicyEvent[] = [];
      const started = time.nowMs;
      const reading = policy(cache, time, { events }).read(KEY, () => Promise.resolve(doc(3)));
      await settle();
      const blocked = cache.waiting(KEY);

      // Act
      time.advance(SETTINGS.loadLockMs - 1);
      await settle();
      const stillWaiting = cache.waiting(KEY);
      time.advance(1);
      const read = await reading;

      // Assess
      expect([blocked, stillWaiting]).toEqual([1, 1]);
      expect(read).toEqual({ source: 'miss', value: doc(3) });
      expect(time.nowMs - started).toBe(SETTINGS.loadLockMs);
      expect(events).toContainEqual({ kind: 'lock-wait-expired', key: KEY, waitedMs: SETTINGS.loadLockMs });
      expect(cache.peek(KEY)).toEqual({ kind: 'value', version: 3, value: doc(3) });
    });

    it('when the load is done, it releases the lock it took and signals the landing for as long as a waiter may wait', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      const release = jest.spyOn(cache, 'releaseLoadLock');
      const settings = { ...SETTINGS, lockWaitMs: 1_500 };

      // Act
      await policy(cache, time, { settings }).read(KEY, () => Promise.resolve(doc(1)));

      // Assess
      expect(release).toHaveBeenCalledWith(KEY, expect.any(String), 1_500);
      expect(await cache.tryLoadLock(KEY, 'next', 1_000)).toMatchObject({ acquired: true });
    });

    it('when the cache is down, it serves the loader as a bypass and writes nothing back', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      cache.down = true;
      const events: CachePolicyEvent[] = [];

      // Act
      const read = await policy(cache, time, { events }).read(KEY, () => Promise.resolve(doc(1)));

      // Assess
      expect(read).toEqual({ source: 'bypass', value: doc(1) });
      expect(cache.calls).toEqual({
        get: 1,
        putIfNewer: 0,
        fence: 0,
        tryLoadLock: 0,
        releaseLoadLock: 0,
        waitForLanding: 0,
      });
      expect(events).toEqual([expect.objectContaining({ kind: 'cache-unavailable', during: 'get' })]);
    });

    it('when the cache fails at the lock, it serves the loader as a bypass', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      jest.spyOn(cache, 'tryLoadLock').mockRejectedValue(new CacheUnavailableError('timeout'));

      // Act
      const read = await policy(cache, time).read(KEY, () => Promise.resolve(doc(1)));

      // Assess
      expect(read).toEqual({ source: 'bypass', value: doc(1) });
    });

    it('when the cache fails during the wait, the waiter serves the loader as a bypass', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      await cache.tryLoadLock(KEY, 'other-process', 60_000);
      jest.spyOn(cache, 'waitForLanding').mockRejectedValue(new CacheUnavailableError('connection lost'));
      const events: CachePolicyEvent[] = [];

      // Act
      const read = await policy(cache, time, { events }).read(KEY, () => Promise.resolve(doc(1)));

      // Assess
      expect(read).toEqual({ source: 'bypass', value: doc(1) });
      expect(events).toEqual([expect.objectContaining({ kind: 'cache-unavailable', during: 'wait' })]);
    });

    it('when only the write-back fails, the loaded value is still returned as a miss', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      jest.spyOn(cache, 'putIfNewer').mockRejectedValue(new CacheUnavailableError('timeout'));
      const events: CachePolicyEvent[] = [];

      // Act
      const read = await policy(cache, time, { events }).read(KEY, () => Promise.resolve(doc(1)));

      // Assess
      expect(read).toEqual({ source: 'miss', value: doc(1) });
      expect(events).toEqual([expect.objectContaining({ kind: 'cache-unavailable', during: 'write-back' })]);
    });

    it('when the cache fails with anything but CacheUnavailableError, the error is a bug and propagates', async () => {
      // Prepare
      const time = new FakeTime();
      const cache = time.cache();
      jest.spyOn(cache, 'get').mockRejectedValue(new TypeError('bug in the adapter'));
      const load = jest.fn(() => Promise.resolve(doc(1)));

      // Act
      const reading = policy(cache, time).read(KEY, load);

      // Assess
      await expect(reading).rejects.toThrow(TypeError);
      expect(load).not.toHaveBeenCalled();
    });
  });
});

describe('Function: invalidateKeys', () => {
  it('when keys are invalidated, each gets a tombstone at its version and afterKey runs after each', async () => {
    // Prepare
    const cache = new InMemoryVersionedCache();
    await cache.putIfNewer('a', 1, { v: 1 }, 60_000);
    const seen: string[] = [];

    // Act
    const results = await invalidateKeys(
      cache,
      [
        { key: 'a', version: 2 },
        { key: 'b', version: 5 },
      ],
      SETTINGS,
      (key) => seen.push(key),
    );

    // Assess
    expect(results).toEqual([
      { key: 'a', version: 2, result: 'fenced' },
      { key: 'b', version: 5, result: 'fenced' },
    ]);
    expect(seen).toEqual(['a', 'b']);
    expect(cache.peek('a')).toEqual({ kind: 'tombstone', version: 2 });
  });

  it('when a newer value is already cached (a stream record arrives late), it leaves it and says superseded', async () => {
    // Prepare
    const cache = new InMemoryVersionedCache();
    await cache.putIfNewer('a', 7, { v: 7 }, 60_000);

    // Act
    const results = await invalidateKeys(cache, [{ key: 'a', version: 6 }], SETTINGS);

    // Assess
    expect(results).toEqual([{ key: 'a', version: 6, result: 'superseded' }]);
    expect(cache.peek('a')).toEqual({ kind: 'value', version: 7, value: { v: 7 } });
  });

  it('when the cache is down, it throws CacheUnavailableError so the record is retried', async () => {
    // Prepare
    const cache = new InMemoryVersionedCache();
    cache.down = true;

    // Act
    const invalidating = invalidateKeys(cache, [{ key: 'a', version: 2 }], SETTINGS);

    // Assess
    await expect(invalidating).rejects.toBeInstanceOf(CacheUnavailableError);
  });
});
