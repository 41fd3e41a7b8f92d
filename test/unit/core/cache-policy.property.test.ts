/**
 * C3 as a property: whatever the interleaving of reads (look up → load an old version → write
 * back, or wait for another process's landing), commits and invalidations (including redelivered
 * stream records), the cache never holds a value older than the newest invalidation, a read never
 * returns a version older than an invalidation applied before its flight began, and once every
 * invalidation is applied the cache holds nothing older than the source of truth. fast-check's
 * scheduler decides the order of every cache command, load, commit and wait's expiry.
 */
import fc from 'fast-check';
import { InMemoryVersionedCache } from '../../../harness/fakes/memory-versioned-cache';
import {
  CacheAside,
  invalidateKeys,
  type CachedEntityCodec,
  type CachePolicySettings,
} from '../../../lib/core/cache-policy';
import type { CacheEntry, VersionedCache } from '../../../lib/core/ports';

interface Doc {
  readonly version: number;
}

const CODEC: CachedEntityCodec<Doc> = {
  parse: (raw) => (typeof (raw as Doc | null)?.version === 'number' ? (raw as Doc) : undefined),
  version: (doc) => doc.version,
};
// A short lock so waiters give up and load by themselves when the scheduler lets their wait run out.
const SETTINGS: CachePolicySettings = {
  ttlSeconds: 300,
  ttlJitterRatio: 0.2,
  loadLockMs: 40,
};
const KEY = 'prop:doc:{1}';
const PROCESSES = 3;

type Action =
  | { readonly kind: 'commit' }
  | { readonly kind: 'read'; readonly process: number }
  | { readonly kind: 'redeliver'; readonly index: number };

const action: fc.Arbitrary<Action> = fc.oneof(
  fc.constant<Action>({ kind: 'commit' }),
  fc.record({ kind: fc.constant('read' as const), process: fc.nat(PROCESSES - 1) }),
  fc.record({ kind: fc.constant('redeliver' as const), index: fc.nat(20) }),
);

/** Resolves after `ms` on the run's clock: the scheduler decides when. */
type Sleep = (ms: number) => Promise<void>;

/** A cache whose write-back ignores versions: what the property must catch. */
class UnfencedCache extends InMemoryVersionedCache {
  public override async putIfNewer(
    key: string,
    version: number,
    value: unknown,
    ttlMs: number,
  ): Promise<'written'> {
    this.expire(key);
    await super.putIfNewer(key, version, value, ttlMs);
    return 'written';
  }
}

interface RunResult {
  readonly violations: readonly string[];
  readonly final: CacheEntry | undefined;
  readonly latest: number;
  readonly freshRead: number | undefined;
}

/** Runs one interleaving of `actions` against `memory`; every step goes through the scheduler. */
async function run(
  s: fc.Scheduler,
  actions: readonly Action[],
  makeCache: (nowMs: () => number, sleep: Sleep) => InMemoryVersionedCache,
): Promise<RunResult> {
  let now = 0;
  // A wait for a landing runs out of time when the scheduler says, moving the clock.
  const memory = makeCache(
    () => now,
    (ms) =>
      s.schedule(Promise.resolve('timeout')).then(() => {
        now += ms;
      }),
  );
  let db: Doc = { version: 0 };
  const committed: number[] = [];
  let newestInvalidation = -1;
  const violations: string[] = [];

  const check = (after: string): void => {
    const entry = memory.peek(KEY);
    if (entry?.kind === 'value' && entry.version < newestInvalidation) {
      violations.push(`after ${after}: value v${entry.version} < invalidation v${newestInvalidation}`);
    }
  };
  const step = <T>(label: string, body: () => Promise<T>): Promise<T> =>
    s.schedule(Promise.resolve(label)).then(async () => {
      const result = await body();
      check(label);
      return result;
    });

  const cache: VersionedCache = {
    get: (key) => step('get', () => memory.get(key)),
    putIfNewer: (key, version, value, ttl) =>
      step(`put v${version}`, () => memory.putIfNewer(key, version, value, ttl)),
    fence: (key, version, ttl) =>
      step(`fence v${version}`, async () => {
        const result = await memory.fence(key, version, ttl);
        newestInvalidation = Math.max(newestInvalidation, version);
        return result;
      }),
    tryLoadLock: (key, token, ttl) => step('lock', () => memory.tryLoadLock(key, token, ttl)),
    releaseLoadLock: (key, token, ttl) => step('unlock', () => memory.releaseLoadLock(key, token, ttl)),
    waitForLanding: (key, since, timeout) => step('wait', () => memory.waitForLanding(key, since, timeout)),
  };
  const processes = Array.from(
    { length: PROCESSES },
    () =>
      new CacheAside<Doc>(SETTINGS, CODEC, {
        cache,
        clock: () => new Date(now),
        random: () => 0.5,
      }),
  );
  // The loader reads the source of truth at the moment the scheduler lets it.
  const load = (): Promise<Doc> => s.schedule(Promise.resolve('load')).then(() => db);
  const deliver = (version: number): Promise<unknown> =>
    invalidateKeys(cache, [{ key: KEY, version }], SETTINGS);
  // A read joins its process's flight if one is running (and may get that flight's older value,
  // by design): what it must not go below is the newest invalidation when the flight began.
  const pending = Array.from({ length: PROCESSES }, () => 0);
  const flightFloor = Array.from({ length: PROCESSES }, () => -1);
  const read = async (p: number): Promise<unknown> => {
    if (pending[p] === 0) flightFloor[p] = newestInvalidation;
    const floor = flightFloor[p] ?? -1;
    pending[p] = (pending[p] ?? 0) + 1;
    try {
      const result = await processes[p]?.read(KEY, load);
      const version = result?.value?.version;
      if (version !== undefined && version < floor) {
        violations.push(`a read returned v${version} after invalidation v${floor} was applied`);
      }
      return result;
    } finally {
      pending[p] = (pending[p] ?? 1) - 1;
    }
  };

  const tasks = actions.map((a) =>
    s.schedule(Promise.resolve(a.kind)).then(async (): Promise<unknown> => {
      switch (a.kind) {
        case 'commit': {
          db = { version: db.version + 1 };
          committed.push(db.version);
          // The stream delivers the change some time after the commit.
          return deliver(db.version);
        }
        case 'redeliver':
          return committed.length === 0
            ? undefined
            : deliver(committed[a.index % committed.length] as number);
        case 'read':
          return read(a.process);
      }
    }),
  );
  await s.waitIdle();
  await Promise.all(tasks);

  // Every invalidation has been applied: a fresh read must see the newest version.
  const fresh = new CacheAside<Doc>(SETTINGS, CODEC, {
    cache: memory,
    clock: () => new Date(now),
    random: () => 0.5,
  });
  const freshRead = (await fresh.read(KEY, () => Promise.resolve(db))).value?.version;
  return { violations, final: memory.peek(KEY), latest: db.version, freshRead };
}

describe('Property: no stale value survives an invalidation (C3)', () => {
  it('when reads, commits and (re)delivered invalidations interleave in any order, the cache never goes below the newest invalidation and converges', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(action, { minLength: 1, maxLength: 30 }),
        async (s, actions) => {
          // Act
          const result = await run(
            s,
            actions,
            (nowMs, sleep) => new InMemoryVersionedCache(nowMs, { sleep }),
          );

          // Assess
          expect(result.violations).toEqual([]);
          if (result.final?.kind === 'value') expect(result.final.version).toBe(result.latest);
          expect(result.freshRead).toBe(result.latest);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('when the write-back ignores versions, the property finds a stale value (the property can fail)', async () => {
    // Act
    const outcome = await fc.check(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(action, { minLength: 1, maxLength: 30 }),
        async (s, actions) => {
          const result = await run(s, actions, (nowMs, sleep) => new UnfencedCache(nowMs, { sleep }));
          return result.violations.length === 0 && result.freshRead === result.latest;
        },
      ),
      { numRuns: 500, seed: 42 },
    );

    // Assess
    expect(outcome.failed).toBe(true);
  });
});
