/**
 * The VersionedCache contract, run against the in-memory fake (unit) and the Redis adapter
 * (integration): the fake the core tests rely on and the Lua scripts must agree rule by rule.
 */
import { pollUntil } from '../../lib/local/poll';
import type { CacheEntry, VersionedCache } from '../../lib/core/ports';

/** How a contract run gets a cache and fresh keys. */
export interface ContractSubject {
  readonly cache: () => VersionedCache;
  /** A key no other test uses. */
  readonly freshKey: (label: string) => string;
}

const TTL_MS = 60_000;

type Seed =
  | { readonly kind: 'value'; readonly version: number }
  | { readonly kind: 'tombstone'; readonly version: number }
  | undefined;

interface WriteCase {
  readonly current: Seed;
  readonly op: 'putIfNewer' | 'fence';
  readonly version: number;
  readonly result: 'written' | 'fenced' | 'superseded';
  /** The entry afterwards (kind and version). */
  readonly after: Seed;
}

/** Every transition of the two rules (admitsValue, admitsTombstone) around an existing entry. */
const WRITE_CASES: readonly WriteCase[] = [
  {
    current: undefined,
    op: 'putIfNewer',
    version: 3,
    result: 'written',
    after: { kind: 'value', version: 3 },
  },
  {
    current: { kind: 'value', version: 3 },
    op: 'putIfNewer',
    version: 2,
    result: 'fenced',
    after: { kind: 'value', version: 3 },
  },
  {
    current: { kind: 'value', version: 3 },
    op: 'putIfNewer',
    version: 3,
    result: 'fenced',
    after: { kind: 'value', version: 3 },
  },
  {
    current: { kind: 'value', version: 3 },
    op: 'putIfNewer',
    version: 4,
    result: 'written',
    after: { kind: 'value', version: 4 },
  },
  {
    current: { kind: 'tombstone', version: 3 },
    op: 'putIfNewer',
    version: 2,
    result: 'fenced',
    after: { kind: 'tombstone', version: 3 },
  },
  {
    current: { kind: 'tombstone', version: 3 },
    op: 'putIfNewer',
    version: 3,
    result: 'written',
    after: { kind: 'value', version: 3 },
  },
  {
    current: { kind: 'tombstone', version: 3 },
    op: 'putIfNewer',
    version: 4,
    result: 'written',
    after: { kind: 'value', version: 4 },
  },
  { current: undefined, op: 'fence', version: 3, result: 'fenced', after: { kind: 'tombstone', version: 3 } },
  {
    current: { kind: 'value', version: 3 },
    op: 'fence',
    version: 2,
    result: 'superseded',
    after: { kind: 'value', version: 3 },
  },
  {
    current: { kind: 'value', version: 3 },
    op: 'fence',
    version: 3,
    result: 'fenced',
    after: { kind: 'tombstone', version: 3 },
  },
  {
    current: { kind: 'value', version: 3 },
    op: 'fence',
    version: 4,
    result: 'fenced',
    after: { kind: 'tombstone', version: 4 },
  },
  {
    current: { kind: 'tombstone', version: 3 },
    op: 'fence',
    version: 2,
    result: 'superseded',
    after: { kind: 'tombstone', version: 3 },
  },
  {
    current: { kind: 'tombstone', version: 3 },
    op: 'fence',
    version: 3,
    result: 'superseded',
    after: { kind: 'tombstone', version: 3 },
  },
  {
    current: { kind: 'tombstone', version: 3 },
    op: 'fence',
    version: 4,
    result: 'fenced',
    after: { kind: 'tombstone', version: 4 },
  },
];

function describeSeed(seed: Seed): string {
  return seed === undefined ? 'nothing' : `a ${seed.kind} at version ${seed.version}`;
}

async function seed(cache: VersionedCache, key: string, entry: Seed): Promise<void> {
  if (entry === undefined) return;
  if (entry.kind === 'value') await cache.putIfNewer(key, entry.version, { seeded: entry.version }, TTL_MS);
  else await cache.fence(key, entry.version, TTL_MS);
}

function shape(entry: CacheEntry | undefined): Seed {
  return entry === undefined ? undefined : { kind: entry.kind, version: entry.version };
}

/** Declares the contract's tests for `subject`. */
export function describeVersionedCacheContract(subject: ContractSubject): void {
  describe('Method: get', () => {
    it('when the key was never written, it returns undefined', async () => {
      // Act
      const entry = await subject.cache().get(subject.freshKey('absent'));

      // Assess
      expect(entry).toBeUndefined();
    });

    it('when a value was written, it returns it with its version, as JSON round-trips it', async () => {
      // Prepare
      const cache = subject.cache();
      const key = subject.freshKey('roundtrip');
      const value = { orderId: 'o-1', lines: [{ sku: 'sku-ä', quantity: 2 }], note: 'a:1:b' };
      await cache.putIfNewer(key, 7, value, TTL_MS);

      // Act
      const entry = await cache.get(key);

      // Assess
      expect(entry).toEqual({ kind: 'value', version: 7, value });
    });
  });

  describe('Methods: putIfNewer and fence', () => {
    it.each(
      WRITE_CASES.map(
        (c) => [describeSeed(c.current), c.op, c.version, c.result, describeSeed(c.after), c] as const,
      ),
    )(
      'when the key holds %s and %s(%i) runs, it returns %s and leaves %s',
      async (_current, _op, _version, _result, _after, c) => {
        // Prepare
        const cache = subject.cache();
        const key = subject.freshKey(`${c.op}-${c.version}`);
        await seed(cache, key, c.current);

        // Act
        const result =
          c.op === 'putIfNewer'
            ? await cache.putIfNewer(key, c.version, { written: c.version }, TTL_MS)
            : await cache.fence(key, c.version, TTL_MS);

        // Assess
        expect(result).toBe(c.result);
        expect(shape(await cache.get(key))).toEqual(c.after);
      },
    );

    it('when a value is written with a short TTL, it disappears after the TTL', async () => {
      // Prepare
      const cache = subject.cache();
      const key = subject.freshKey('ttl');
      await cache.putIfNewer(key, 1, { short: true }, 50);

      // Act
      const gone = await pollUntil(async () => ((await cache.get(key)) === undefined ? true : undefined), {
        description: 'the value to expire',
        deadlineMs: 2_000,
        intervalMs: 20,
      });

      // Assess
      expect(gone).toBe(true);
    });
  });

  describe('Methods: tryLoadLock and releaseLoadLock', () => {
    it('when the lock is free, the first caller gets it and a second is told where the landing signal stands', async () => {
      // Prepare
      const cache = subject.cache();
      const key = subject.freshKey('lock');

      // Act
      const first = await cache.tryLoadLock(key, 'token-a', TTL_MS);
      const second = await cache.tryLoadLock(key, 'token-b', TTL_MS);

      // Assess
      expect(first).toEqual({ acquired: true });
      expect(second).toEqual({ acquired: false, since: expect.any(String) });
    });

    it('when the key holds a value, the attempt reports it, whether it takes the lock or not; a tombstone it does not report', async () => {
      // Prepare
      const cache = subject.cache();
      const [withValue, withTombstone] = [subject.freshKey('lock-value'), subject.freshKey('lock-tomb')];
      await cache.putIfNewer(withValue, 2, { two: true }, TTL_MS);
      await cache.fence(withTombstone, 3, TTL_MS);
      const found = { kind: 'value', version: 2, value: { two: true } };

      // Act
      const first = await cache.tryLoadLock(withValue, 'token-a', TTL_MS);
      const second = await cache.tryLoadLock(withValue, 'token-b', TTL_MS);
      const fenced = await cache.tryLoadLock(withTombstone, 'token-a', TTL_MS);

      // Assess
      expect(first).toEqual({ acquired: true, found });
      expect(second).toEqual({ acquired: false, since: expect.any(String), found });
      expect(fenced).toEqual({ acquired: true });
    });

    it('when another token releases, the lock stays; when its owner releases, it is free again', async () => {
      // Prepare
      const cache = subject.cache();
      const key = subject.freshKey('unlock');
      await cache.tryLoadLock(key, 'owner', TTL_MS);

      // Act
      await cache.releaseLoadLock(key, 'intruder', TTL_MS);
      const afterIntruder = await cache.tryLoadLock(key, 'third', TTL_MS);
      await cache.releaseLoadLock(key, 'owner', TTL_MS);
      const afterOwner = await cache.tryLoadLock(key, 'third', TTL_MS);

      // Assess
      expect([afterIntruder.acquired, afterOwner.acquired]).toEqual([false, true]);
    });

    it('when the lock is not released, it expires after its TTL', async () => {
      // Prepare
      const cache = subject.cache();
      const key = subject.freshKey('lock-ttl');
      await cache.tryLoadLock(key, 'gone', 50);

      // Act
      const taken = await pollUntil(
        async () => ((await cache.tryLoadLock(key, 'next', TTL_MS)).acquired ? true : undefined),
        {
          description: 'the lock to expire',
          deadlineMs: 2_000,
          intervalMs: 20,
        },
      );

      // Assess
      expect(taken).toBe(true);
    });

    it('when the key holds a value, taking and releasing its load lock leaves the value as it was', async () => {
      // Prepare
      const cache = subject.cache();
      const key = subject.freshKey('lock-entry');
      await cache.putIfNewer(key, 2, { two: true }, TTL_MS);

      // Act
      await cache.tryLoadLock(key, 'owner', TTL_MS);
      await cache.releaseLoadLock(key, 'owner', TTL_MS);

      // Assess
      expect(await cache.get(key)).toEqual({ kind: 'value', version: 2, value: { two: true } });
    });
  });

  describe('Method: waitForLanding', () => {
    /** A lock held by 'holder', and the mark a caller that lost it was given. */
    async function heldBy(cache: VersionedCache, key: string): Promise<string> {
      await cache.tryLoadLock(key, 'holder', TTL_MS);
      const lost = await cache.tryLoadLock(key, 'waiter', TTL_MS);
      if (lost.acquired) throw new Error('the lock was free');
      return lost.since;
    }

    it('when the holder writes back and releases, every caller waiting from its mark wakes at once with the value', async () => {
      // Prepare
      const cache = subject.cache();
      const key = subject.freshKey('wake-all');
      const since = await heldBy(cache, key);
      const started = Date.now();
      const waits = [1, 2, 3].map(() => cache.waitForLanding(key, since, 5_000));

      // Act
      await new Promise((resolve) => setTimeout(resolve, 50));
      await cache.putIfNewer(key, 4, { four: true }, TTL_MS);
      await cache.releaseLoadLock(key, 'holder', TTL_MS);
      const landings = await Promise.all(waits);

      // Assess
      const landing = { landed: true, found: { kind: 'value', version: 4, value: { four: true } } };
      expect(landings).toEqual([landing, landing, landing]);
      expect(Date.now() - started).toBeLessThan(2_500);
    });

    it('when the key holds no value at the release (nothing loaded, or fenced off), the landing carries none', async () => {
      // Prepare
      const cache = subject.cache();
      const [empty, fenced] = [subject.freshKey('wake-empty'), subject.freshKey('wake-fenced')];
      const [sinceEmpty, sinceFenced] = [await heldBy(cache, empty), await heldBy(cache, fenced)];
      await cache.putIfNewer(fenced, 4, { four: true }, TTL_MS);
      await cache.fence(fenced, 5, TTL_MS);

      // Act
      await cache.releaseLoadLock(empty, 'holder', TTL_MS);
      await cache.releaseLoadLock(fenced, 'holder', TTL_MS);
      const landings = [
        await cache.waitForLanding(empty, sinceEmpty, 5_000),
        await cache.waitForLanding(fenced, sinceFenced, 5_000),
      ];

      // Assess
      expect(landings).toEqual([{ landed: true }, { landed: true }]);
    });

    it('when the landing came between the lost attempt and the wait, the wait returns at once', async () => {
      // Prepare
      const cache = subject.cache();
      const key = subject.freshKey('wake-missed');
      const since = await heldBy(cache, key);
      await cache.releaseLoadLock(key, 'holder', TTL_MS);
      const started = Date.now();

      // Act
      const landing = await cache.waitForLanding(key, since, 5_000);

      // Assess
      expect(landing.landed).toBe(true);
      expect(Date.now() - started).toBeLessThan(2_500);
    });

    it('when nothing lands, the wait says so once its time is out', async () => {
      // Prepare
      const cache = subject.cache();
      const key = subject.freshKey('wake-none');
      const since = await heldBy(cache, key);
      const started = Date.now();

      // Act
      const landing = await cache.waitForLanding(key, since, 150);

      // Assess
      expect(landing).toEqual({ landed: false });
      expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    });

    it('when a landing came before the lost attempt, a wait from its mark does not take it for a new one', async () => {
      // Prepare
      const cache = subject.cache();
      const key = subject.freshKey('wake-old');
      await cache.tryLoadLock(key, 'first', TTL_MS);
      await cache.releaseLoadLock(key, 'first', TTL_MS);
      const since = await heldBy(cache, key);

      // Act
      const landing = await cache.waitForLanding(key, since, 150);

      // Assess
      expect(landing).toEqual({ landed: false });
    });

    it('when a landing on another key is signalled, it wakes nobody waiting on this one', async () => {
      // Prepare
      const cache = subject.cache();
      const key = subject.freshKey('wake-mine');
      const other = subject.freshKey('wake-other');
      const since = await heldBy(cache, key);
      await cache.tryLoadLock(other, 'holder', TTL_MS);
      const waiting = cache.waitForLanding(key, since, 200);

      // Act
      await cache.releaseLoadLock(other, 'holder', TTL_MS);
      const landing = await waiting;

      // Assess
      expect(landing).toEqual({ landed: false });
    });
  });
}
