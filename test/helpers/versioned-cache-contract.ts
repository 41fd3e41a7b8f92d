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

  describe('Methods: tryLock and unlock', () => {
    it('when the lock is free, the first caller gets it and a second does not', async () => {
      // Prepare
      const cache = subject.cache();
      const key = subject.freshKey('lock');

      // Act
      const first = await cache.tryLock(key, 'token-a', TTL_MS);
      const second = await cache.tryLock(key, 'token-b', TTL_MS);

      // Assess
      expect([first, second]).toEqual([true, false]);
    });

    it('when another token unlocks, the lock stays; when its owner unlocks, it is free again', async () => {
      // Prepare
      const cache = subject.cache();
      const key = subject.freshKey('unlock');
      await cache.tryLock(key, 'owner', TTL_MS);

      // Act
      await cache.unlock(key, 'intruder');
      const afterIntruder = await cache.tryLock(key, 'third', TTL_MS);
      await cache.unlock(key, 'owner');
      const afterOwner = await cache.tryLock(key, 'third', TTL_MS);

      // Assess
      expect([afterIntruder, afterOwner]).toEqual([false, true]);
    });

    it('when the lock is not released, it expires after its TTL', async () => {
      // Prepare
      const cache = subject.cache();
      const key = subject.freshKey('lock-ttl');
      await cache.tryLock(key, 'gone', 50);

      // Act
      const taken = await pollUntil(
        async () => ((await cache.tryLock(key, 'next', TTL_MS)) ? true : undefined),
        {
          description: 'the lock to expire',
          deadlineMs: 2_000,
          intervalMs: 20,
        },
      );

      // Assess
      expect(taken).toBe(true);
    });
  });
}
