import { InMemoryLockStore } from '../../../harness/fakes/memory-lock-store';
import { classifyError, LockBusyError } from '../../../lib/core/errors';
import {
  fenceAccepts,
  isOrphan,
  LeaseLock,
  LeaseLostError,
  LockHeldError,
  withLease,
  type Every,
  type LockEvent,
  type LockStore,
} from '../../../lib/core/lease-lock';
import { manualClock, sequentialTokens, type ManualClock } from '../../helpers/manual-clock';

const RESOURCE = 'inventory:sku-1';
const TTL_MS = 10_000;

interface Fixture {
  readonly clock: ManualClock;
  readonly store: InMemoryLockStore;
  readonly lock: LeaseLock;
  readonly events: LockEvent[];
}

function fixture(store: InMemoryLockStore = new InMemoryLockStore()): Fixture {
  const clock = manualClock();
  const events: LockEvent[] = [];
  const lock = new LeaseLock({ store, clock, newToken: sequentialTokens(), report: (e) => events.push(e) });
  return { clock, store, lock, events };
}

/** An Every whose ticks the test fires by hand. */
function manualEvery(): {
  every: Every;
  tick: () => void;
  cancelled: () => boolean;
  intervalMs: () => number;
} {
  let tick: (() => void) | undefined;
  let cancelled = false;
  let interval = 0;
  return {
    every: (intervalMs, fn) => {
      interval = intervalMs;
      tick = fn;
      return () => {
        cancelled = true;
      };
    },
    tick: () => tick?.(),
    cancelled: () => cancelled,
    intervalMs: () => interval,
  };
}

describe('Class: LeaseLock', () => {
  describe('Method: acquire', () => {
    it('when the resource is free, it returns a lease with the injected owner token, a fence and the expiry', async () => {
      // Prepare
      const { clock, lock } = fixture();

      // Act
      const lease = await lock.acquire(RESOURCE, TTL_MS);

      // Assess
      expect(lease).toEqual({
        resource: RESOURCE,
        ownerToken: 'owner-1',
        fence: clock.ms() + 1,
        acquiredAt: clock(),
        expiresAt: new Date(clock.ms() + TTL_MS),
      });
    });

    it('when another owner holds a live lease, it throws a transient LockHeldError saying how long to wait', async () => {
      // Prepare
      const { clock, lock } = fixture();
      const first = await lock.acquire(RESOURCE, TTL_MS);
      clock.advance(4_000);

      // Act
      const attempt = lock.acquire(RESOURCE, TTL_MS);

      // Assess
      const error = await attempt.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockHeldError);
      expect(error).toBeInstanceOf(LockBusyError);
      expect(classifyError(error)).toBe('transient');
      expect(error).toMatchObject({
        retryAfterMs: 6_000,
        holder: { ownerToken: first.ownerToken, fence: first.fence },
      });
    });

    it('when the lease has expired, it gives the resource to the next owner with a higher fence', async () => {
      // Prepare
      const { clock, lock } = fixture();
      const first = await lock.acquire(RESOURCE, TTL_MS);
      clock.advance(TTL_MS + 1);

      // Act
      const second = await lock.acquire(RESOURCE, TTL_MS);

      // Assess
      expect(second.ownerToken).not.toBe(first.ownerToken);
      expect(second.fence).toBeGreaterThan(first.fence);
    });

    it('when the lease expires exactly now, it still counts as held', async () => {
      // Prepare
      const { clock, lock } = fixture();
      await lock.acquire(RESOURCE, TTL_MS);
      clock.advance(TTL_MS);

      // Act
      const attempt = lock.acquire(RESOURCE, TTL_MS);

      // Assess
      await expect(attempt).rejects.toBeInstanceOf(LockHeldError);
    });

    it('when leases are released and taken again, it issues strictly increasing fences', async () => {
      // Prepare
      const { lock } = fixture();
      const fences: number[] = [];

      // Act
      for (let i = 0; i < 5; i += 1) {
        const lease = await lock.acquire(RESOURCE, TTL_MS);
        fences.push(lease.fence);
        await lock.release(lease);
      }

      // Assess
      expect(fences).toEqual([...fences].sort((a, b) => a - b));
      expect(new Set(fences).size).toBe(5);
    });

    it('when the record was swept away (TTL), it starts the new fence above every fence issued before', async () => {
      // Prepare
      const { clock, store, lock } = fixture();
      let last = 0;
      for (let i = 0; i < 3; i += 1) {
        last = (await lock.acquire(RESOURCE, TTL_MS)).fence;
        clock.advance(TTL_MS + 1);
      }
      store.sweep(RESOURCE);
      clock.advance(1);

      // Act
      const after = await lock.acquire(RESOURCE, TTL_MS);

      // Assess
      expect(after.fence).toBeGreaterThan(last);
    });

    it('when the ttl is not a positive integer, it throws a RangeError without touching the store', async () => {
      // Prepare
      const { lock, store } = fixture();

      // Act
      const attempt = lock.acquire(RESOURCE, 0);

      // Assess
      await expect(attempt).rejects.toBeInstanceOf(RangeError);
      expect(await store.get(RESOURCE)).toBeUndefined();
    });
  });

  describe('Method: extend', () => {
    it('when the owner extends a live lease, it moves the expiry and keeps the fence', async () => {
      // Prepare
      const { clock, lock } = fixture();
      const lease = await lock.acquire(RESOURCE, TTL_MS);
      clock.advance(8_000);

      // Act
      const extended = await lock.extend(lease, TTL_MS);

      // Assess
      expect(extended.fence).toBe(lease.fence);
      expect(extended.expiresAt).toEqual(new Date(clock.ms() + TTL_MS));
      clock.advance(5_000);
      await expect(lock.acquire(RESOURCE, TTL_MS)).rejects.toBeInstanceOf(LockHeldError);
    });

    it('when the lease expired, it throws LeaseLostError (transient) and reports the lost lease', async () => {
      // Prepare
      const { clock, lock, events } = fixture();
      const lease = await lock.acquire(RESOURCE, TTL_MS);
      clock.advance(TTL_MS + 1);

      // Act
      const attempt = lock.extend(lease, TTL_MS);

      // Assess
      const error = await attempt.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LeaseLostError);
      expect(classifyError(error)).toBe('transient');
      expect(events).toEqual([
        { kind: 'lease-lost', resource: RESOURCE, ownerToken: 'owner-1', fence: lease.fence },
      ]);
    });

    it('when another owner took the lease over, it refuses to extend the stale one and leaves the new one alone', async () => {
      // Prepare
      const { clock, lock, store } = fixture();
      const stale = await lock.acquire(RESOURCE, TTL_MS);
      clock.advance(TTL_MS + 1);
      const current = await lock.acquire(RESOURCE, TTL_MS);

      // Act
      const attempt = lock.extend(stale, 60_000);

      // Assess
      await expect(attempt).rejects.toBeInstanceOf(LeaseLostError);
      expect((await store.get(RESOURCE))?.holder).toMatchObject({
        ownerToken: current.ownerToken,
        expiresAtMs: current.expiresAt.getTime(),
      });
    });
  });

  describe('Method: release', () => {
    it('when the owner releases, it frees the resource for the next owner', async () => {
      // Prepare
      const { lock, events } = fixture();
      const lease = await lock.acquire(RESOURCE, TTL_MS);

      // Act
      const result = await lock.release(lease);

      // Assess
      expect(result).toEqual({ released: true });
      expect(events).toEqual([]);
      await expect(lock.acquire(RESOURCE, TTL_MS)).resolves.toMatchObject({ ownerToken: 'owner-2' });
    });

    it('when a non-owner releases, it refuses, reports the refusal and keeps the holder', async () => {
      // Prepare
      const { clock, lock, store, events } = fixture();
      const stale = await lock.acquire(RESOURCE, TTL_MS);
      clock.advance(TTL_MS + 1);
      const current = await lock.acquire(RESOURCE, TTL_MS);

      // Act
      const result = await lock.release(stale);

      // Assess
      expect(result).toMatchObject({ released: false, holder: { ownerToken: current.ownerToken } });
      expect(events).toEqual([
        {
          kind: 'release-refused',
          resource: RESOURCE,
          ownerToken: stale.ownerToken,
          holder: expect.objectContaining({ ownerToken: current.ownerToken }) as unknown,
        },
      ]);
      expect((await store.get(RESOURCE))?.holder?.ownerToken).toBe(current.ownerToken);
    });

    it('when the owner releases after its lease expired but before anyone took it, it clears the lease', async () => {
      // Prepare
      const { clock, lock, store } = fixture();
      const lease = await lock.acquire(RESOURCE, TTL_MS);
      clock.advance(TTL_MS + 1);

      // Act
      const result = await lock.release(lease);

      // Assess
      expect(result).toEqual({ released: true });
      expect(await store.get(RESOURCE)).toEqual({
        resource: RESOURCE,
        fence: lease.fence,
        holder: undefined,
      });
    });
  });

  describe('Method: releaseQuietly', () => {
    it('when the store cannot be reached, it reports the failure and returns instead of throwing', async () => {
      // Prepare
      const store = new InMemoryLockStore();
      const { lock, events } = fixture(store);
      const lease = await lock.acquire(RESOURCE, TTL_MS);
      const outage = new Error('connection reset');
      jest.spyOn(store, 'release').mockRejectedValueOnce(outage);

      // Act
      const result = await lock.releaseQuietly(lease);

      // Assess
      expect(result).toEqual({ released: false, holder: undefined });
      expect(events).toEqual([
        { kind: 'release-failed', resource: RESOURCE, ownerToken: lease.ownerToken, error: outage },
      ]);
    });
  });

  describe('Methods: listOrphans and releaseOrphan', () => {
    it('when a lease expired without a release, it lists it as an orphan, and live or released ones not', async () => {
      // Prepare
      const { clock, lock } = fixture();
      const orphan = await lock.acquire('inventory:sku-orphan', TTL_MS);
      clock.advance(TTL_MS + 1);
      await lock.acquire('inventory:sku-live', TTL_MS);
      await lock.release(await lock.acquire('inventory:sku-released', TTL_MS));

      // Act
      const orphans = await lock.listOrphans();

      // Assess
      expect(orphans.map((o) => o.resource)).toEqual(['inventory:sku-orphan']);
      expect(orphans[0]?.holder?.ownerToken).toBe(orphan.ownerToken);
    });

    it('when the orphan is still live, or owned by someone else, it refuses to release it', async () => {
      // Prepare
      const { clock, lock, events } = fixture();
      const live = await lock.acquire(RESOURCE, TTL_MS);
      clock.advance(TTL_MS - 1);

      // Act
      const whileLive = await lock.releaseOrphan(RESOURCE, live.ownerToken);
      clock.advance(2);
      const wrongOwner = await lock.releaseOrphan(RESOURCE, 'someone-else');

      // Assess
      expect(whileLive.released).toBe(false);
      expect(wrongOwner.released).toBe(false);
      expect(events.map((e) => e.kind)).toEqual(['release-refused', 'release-refused']);
    });

    it('when the orphan has expired and the owner is the one listed, it releases it and keeps the fence', async () => {
      // Prepare
      const { clock, lock, store } = fixture();
      const lease = await lock.acquire(RESOURCE, TTL_MS);
      clock.advance(TTL_MS + 1);

      // Act
      const result = await lock.releaseOrphan(RESOURCE, lease.ownerToken);

      // Assess
      expect(result).toEqual({ released: true });
      expect(await store.get(RESOURCE)).toEqual({
        resource: RESOURCE,
        fence: lease.fence,
        holder: undefined,
      });
    });
  });
});

describe('Function: fenceAccepts', () => {
  it.each([
    [undefined, 1, true],
    [4, 5, true],
    [5, 5, false],
    [6, 5, false],
  ])('when the resource accepted %p and the write carries %p, it answers %p', (accepted, fence, expected) => {
    // Act
    const result = fenceAccepts(accepted, fence);

    // Assess
    expect(result).toBe(expected);
  });
});

describe('Function: isOrphan', () => {
  it('when a held record expired before now, it is an orphan; live or clear records are not', () => {
    // Prepare
    const now = new Date(10_000);
    const holder = { ownerToken: 'o', fence: 1, acquiredAtMs: 0 };

    // Act
    const verdicts = [
      isOrphan({ resource: 'r', fence: 1, holder: { ...holder, expiresAtMs: 9_999 } }, now),
      isOrphan({ resource: 'r', fence: 1, holder: { ...holder, expiresAtMs: 10_000 } }, now),
      isOrphan({ resource: 'r', fence: 1, holder: undefined }, now),
    ];

    // Assess
    expect(verdicts).toEqual([true, false, false]);
  });
});

describe('Function: withLease', () => {
  it('when the work succeeds, it returns its value and releases the lease', async () => {
    // Prepare
    const { lock, store } = fixture();
    const heartbeat = manualEvery();

    // Act
    const outcome = await withLease(lock, RESOURCE, { ttlMs: TTL_MS, every: heartbeat.every }, (held) =>
      Promise.resolve(`wrote with fence ${held.current().fence}`),
    );

    // Assess
    expect(outcome.value).toBe(`wrote with fence ${outcome.lease.fence}`);
    expect(outcome.release).toEqual({ released: true });
    expect(outcome.lost).toBe(false);
    expect(heartbeat.cancelled()).toBe(true);
    expect(heartbeat.intervalMs()).toBe(Math.floor(TTL_MS / 3));
    expect((await store.get(RESOURCE))?.holder).toBeUndefined();
  });

  it('when the work throws, it still releases the lease and rethrows the work error', async () => {
    // Prepare
    const { lock, store } = fixture();
    const failure = new Error('work failed');

    // Act
    const attempt = withLease(lock, RESOURCE, { ttlMs: TTL_MS, every: manualEvery().every }, () =>
      Promise.reject(failure),
    );

    // Assess
    await expect(attempt).rejects.toBe(failure);
    expect((await store.get(RESOURCE))?.holder).toBeUndefined();
  });

  it('when the release fails as the work throws, it rethrows the work error, not the release error', async () => {
    // Prepare
    const store = new InMemoryLockStore();
    const { lock, events } = fixture(store);
    jest.spyOn(store, 'release').mockRejectedValueOnce(new Error('store down'));
    const failure = new Error('work failed');

    // Act
    const attempt = withLease(lock, RESOURCE, { ttlMs: TTL_MS, every: manualEvery().every }, () =>
      Promise.reject(failure),
    );

    // Assess
    await expect(attempt).rejects.toBe(failure);
    expect(events.map((e) => e.kind)).toEqual(['release-failed']);
  });

  it('when the lock is busy, it throws LockHeldError and never runs the work', async () => {
    // Prepare
    const { lock } = fixture();
    await lock.acquire(RESOURCE, TTL_MS);
    const work = jest.fn(() => Promise.resolve('never'));

    // Act
    const attempt = withLease(lock, RESOURCE, { ttlMs: TTL_MS, every: manualEvery().every }, work);

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(LockHeldError);
    expect(work).not.toHaveBeenCalled();
  });

  it('when long work runs past the ttl, the heartbeat extends the lease so no one else can take it (D5)', async () => {
    // Prepare
    const { clock, lock } = fixture();
    const heartbeat = manualEvery();
    let rivalAttempt: unknown;

    // Act
    const outcome = await withLease(
      lock,
      RESOURCE,
      { ttlMs: TTL_MS, heartbeatMs: 3_000, every: heartbeat.every },
      async (held) => {
        for (let step = 0; step < 5; step += 1) {
          clock.advance(3_000);
          heartbeat.tick();
          await new Promise((resolve) => setImmediate(resolve));
        }
        rivalAttempt = await lock.acquire(RESOURCE, TTL_MS).catch((e: unknown) => e);
        return held.current().expiresAt;
      },
    );

    // Assess
    expect(rivalAttempt).toBeInstanceOf(LockHeldError);
    expect(outcome.value).toEqual(new Date(clock.ms() + TTL_MS));
    expect(outcome.lost).toBe(false);
    expect(outcome.release).toEqual({ released: true });
  });

  it('when the heartbeat finds the lease lost, it aborts the signal and reports the lease as lost', async () => {
    // Prepare
    const { clock, lock } = fixture();
    const heartbeat = manualEvery();
    let abortedDuringWork = false;

    // Act
    const outcome = await withLease(
      lock,
      RESOURCE,
      { ttlMs: TTL_MS, every: heartbeat.every },
      async (held) => {
        clock.advance(TTL_MS + 1);
        await lock.acquire(RESOURCE, TTL_MS); // someone else takes the expired lease
        heartbeat.tick();
        await new Promise((resolve) => setImmediate(resolve));
        abortedDuringWork = held.signal.aborted;
        return 'done';
      },
    );

    // Assess
    expect(abortedDuringWork).toBe(true);
    expect(outcome.lost).toBe(true);
    expect(outcome.release.released).toBe(false);
  });

  it('when the store is slow, it never runs two extensions at once', async () => {
    // Prepare
    const store = new InMemoryLockStore();
    const { clock, lock } = fixture(store);
    const heartbeat = manualEvery();
    let inFlight = 0;
    let maxInFlight = 0;
    const original = store.extend.bind(store);
    jest.spyOn(store, 'extend').mockImplementation(async (request: Parameters<LockStore['extend']>[0]) => {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((resolve) => setImmediate(resolve));
      inFlight -= 1;
      return original(request);
    });

    // Act
    await withLease(lock, RESOURCE, { ttlMs: TTL_MS, every: heartbeat.every }, async () => {
      clock.advance(1_000);
      heartbeat.tick();
      heartbeat.tick();
      heartbeat.tick();
      await new Promise((resolve) => setImmediate(resolve));
      return 'done';
    });

    // Assess
    expect(store.extend).toHaveBeenCalledTimes(3);
    expect(maxInFlight).toBe(1);
  });
});
