import { InMemoryInventoryStore } from '../../../../harness/fakes/memory-inventory-store';
import { InMemoryLockStore } from '../../../../harness/fakes/memory-lock-store';
import { classifyError } from '../../../../lib/core/errors';
import {
  InsufficientStockError,
  reserveStock,
  skuLockResource,
  UnknownSkuError,
  type ReserveStockDeps,
} from '../../../../examples/reference/domain/inventory';
import { StaleFencingTokenError } from '../../../../lib/core/errors';
import { LeaseLock, LeaseLostError, type Every } from '../../../../lib/core/lease-lock';
import { manualClock, sequentialTokens, type ManualClock } from '../../../helpers/manual-clock';

const SKU = 'sku-42';
const LEASE_MS = 10_000;

interface Fixture {
  readonly clock: ManualClock;
  readonly locks: InMemoryLockStore;
  readonly store: InMemoryInventoryStore;
  readonly lock: LeaseLock;
  readonly deps: ReserveStockDeps;
}

/** A heartbeat that never fires unless the test fires it. */
const never: Every = () => () => undefined;

function fixture(stock = 10): Fixture {
  const clock = manualClock();
  const locks = new InMemoryLockStore();
  const store = new InMemoryInventoryStore();
  store.seed(SKU, stock);
  const lock = new LeaseLock({ store: locks, clock, newToken: sequentialTokens() });
  return {
    clock,
    locks,
    store,
    lock,
    deps: { lock, store, clock, random: () => 0, leaseTtlMs: LEASE_MS, every: never },
  };
}

describe('Function: reserveStock', () => {
  it('when the SKU is free and has stock, it reserves under the lease fence and releases the lock', async () => {
    // Prepare
    const { deps, store, locks } = fixture();

    // Act
    const outcome = await reserveStock(deps, { sku: SKU, orderId: 'order-1', quantity: 3 });

    // Assess
    expect(outcome).toMatchObject({ kind: 'reserved', release: { released: true } });
    const stock = await store.get(SKU);
    expect(stock?.available).toBe(7);
    expect(stock?.reservations['order-1']).toMatchObject({ quantity: 3 });
    expect(stock?.fence).toBe(outcome.kind === 'reserved' ? outcome.fence : NaN);
    expect((await locks.get(skuLockResource(SKU)))?.holder).toBeUndefined();
  });

  it('when the crash hook is called, the lease is held and nothing is written yet', async () => {
    // Prepare: the hook records what it sees, then dies as a crashed process would not return.
    const { deps, store, locks } = fixture();
    const seen: { point: string; holder: string | undefined; available: number | undefined }[] = [];
    const died = new Error('process killed');
    const crash = async (point: string): Promise<void> => {
      seen.push({
        point,
        holder: (await locks.get(skuLockResource(SKU)))?.holder?.ownerToken,
        available: (await store.get(SKU))?.available,
      });
    };
    let pending: Promise<void> = Promise.resolve();

    // Act
    const error = await reserveStock(
      {
        ...deps,
        crash: (point) => {
          pending = crash(point);
          throw died;
        },
      },
      { sku: SKU, orderId: 'order-1', quantity: 3 },
    ).catch((e: unknown) => e);
    await pending;

    // Assess
    expect(error).toBe(died);
    expect(seen).toEqual([{ point: 'holding-lock', holder: expect.any(String) as unknown, available: 10 }]);
    expect((await store.get(SKU))?.reservations['order-1']).toBeUndefined();
  });

  it('when the same order is reserved twice, it reports a duplicate and decrements once', async () => {
    // Prepare
    const { deps, store } = fixture();
    await reserveStock(deps, { sku: SKU, orderId: 'order-1', quantity: 3 });

    // Act
    const second = await reserveStock(deps, { sku: SKU, orderId: 'order-1', quantity: 3 });

    // Assess
    expect(second.kind).toBe('duplicate');
    expect((await store.get(SKU))?.available).toBe(7);
  });

  it('when another holder has the SKU, it returns busy with a deferral covering the rest of that lease', async () => {
    // Prepare
    const { deps, lock, clock, store } = fixture();
    await lock.acquire(skuLockResource(SKU), LEASE_MS);
    clock.advance(3_500);

    // Act
    const outcome = await reserveStock(deps, { sku: SKU, orderId: 'order-1', quantity: 3 });

    // Assess
    expect(outcome).toMatchObject({ kind: 'busy', holderAgeMs: 3_500, deferSeconds: 7 });
    expect((await store.get(SKU))?.available).toBe(10);
  });

  it('when stock is short, it throws a permanent InsufficientStockError naming the numbers and frees the lock', async () => {
    // Prepare
    const { deps, locks } = fixture(2);

    // Act
    const error = await reserveStock(deps, { sku: SKU, orderId: 'order-1', quantity: 3 }).catch(
      (e: unknown) => e,
    );

    // Assess
    expect(error).toBeInstanceOf(InsufficientStockError);
    expect(classifyError(error)).toBe('permanent');
    expect((error as Error).message).toBe('insufficient stock for SKU sku-42: 3 requested, 2 available');
    expect((await locks.get(skuLockResource(SKU)))?.holder).toBeUndefined();
  });

  it('when the SKU does not exist, it throws a permanent UnknownSkuError', async () => {
    // Prepare
    const { deps } = fixture();

    // Act
    const attempt = reserveStock(deps, { sku: 'no-such-sku', orderId: 'order-1', quantity: 1 });

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(UnknownSkuError);
  });

  it('when a newer holder wrote while this one held a stale lease, it throws a transient LeaseLostError', async () => {
    // Prepare
    const { deps, store, clock } = fixture();
    const reserve = store.reserve.bind(store);
    jest.spyOn(store, 'reserve').mockImplementationOnce(async (request) => {
      // While this write is on its way, its lease expires and a newer holder writes first.
      clock.advance(LEASE_MS + 1);
      await reserve({ ...request, orderId: 'order-newer', fence: request.fence + 1 });
      return reserve(request);
    });

    // Act
    const error = await reserveStock(deps, { sku: SKU, orderId: 'order-1', quantity: 3 }).catch(
      (e: unknown) => e,
    );

    // Assess
    expect(error).toBeInstanceOf(LeaseLostError);
    expect(classifyError(error)).toBe('transient');
    expect((await store.get(SKU))?.reservations['order-1']).toBeUndefined();
  });
});

describe('Function: reserveStock (lease-free path)', () => {
  /** The fixture with the lease-free path on, over the same fakes. */
  function unleasedFixture(stock = 10): Fixture {
    const f = fixture(stock);
    return { ...f, deps: { ...f.deps, unleased: f.store.unleased(f.locks) } };
  }

  it('when the SKU is free, it reserves in one step with the clock as fence, takes no lease and advances the lock fence to it', async () => {
    // Prepare
    const { deps, store, locks, clock } = unleasedFixture();
    const crash = jest.fn();

    // Act
    const outcome = await reserveStock({ ...deps, crash }, { sku: SKU, orderId: 'order-1', quantity: 3 });

    // Assess
    expect(outcome).toEqual({ kind: 'reserved', fence: clock.ms(), release: undefined, via: 'transaction' });
    expect((await store.get(SKU))?.available).toBe(7);
    expect((await store.get(SKU))?.fence).toBe(clock.ms());
    expect(await locks.get(skuLockResource(SKU))).toEqual({
      resource: skuLockResource(SKU),
      fence: clock.ms(),
      holder: undefined,
    });
    // No lease, so no point where a crash would leave one behind.
    expect(crash).not.toHaveBeenCalled();
  });

  it('when a live lease holds the SKU, it returns busy with the deferral and holder age, and writes nothing', async () => {
    // Prepare
    const { deps, lock, clock, store } = unleasedFixture();
    await lock.acquire(skuLockResource(SKU), LEASE_MS);
    clock.advance(3_500);

    // Act
    const outcome = await reserveStock(deps, { sku: SKU, orderId: 'order-1', quantity: 3 });

    // Assess
    expect(outcome).toMatchObject({ kind: 'busy', holderAgeMs: 3_500, deferSeconds: 7, via: 'transaction' });
    expect((await store.get(SKU))?.available).toBe(10);
  });

  it('when the same order is reserved twice, it reports a duplicate from the stock and decrements once', async () => {
    // Prepare
    const { deps, store, clock } = unleasedFixture();
    await reserveStock(deps, { sku: SKU, orderId: 'order-1', quantity: 3 });
    clock.advance(1);

    // Act
    const second = await reserveStock(deps, { sku: SKU, orderId: 'order-1', quantity: 3 });

    // Assess
    expect(second).toEqual({ kind: 'duplicate', fence: undefined, release: undefined, via: 'transaction' });
    expect((await store.get(SKU))?.available).toBe(7);
  });

  it('when stock is short, it throws the permanent InsufficientStockError and leaves the lock as it was', async () => {
    // Prepare
    const { deps, locks } = unleasedFixture(2);

    // Act
    const error = await reserveStock(deps, { sku: SKU, orderId: 'order-1', quantity: 3 }).catch(
      (e: unknown) => e,
    );

    // Assess
    expect(error).toBeInstanceOf(InsufficientStockError);
    expect(await locks.get(skuLockResource(SKU))).toBeUndefined();
  });

  it('when the lock fence is not below the clock (a second reservation in the same ms), it falls back to the lease path, whose fence counts on from the lock', async () => {
    // Prepare: the first reservation set the lock's fence to this very millisecond.
    const { deps, store, clock, locks } = unleasedFixture();
    await reserveStock(deps, { sku: SKU, orderId: 'order-1', quantity: 3 });

    // Act
    const outcome = await reserveStock(deps, { sku: SKU, orderId: 'order-2', quantity: 3 });

    // Assess
    expect(outcome).toMatchObject({
      kind: 'reserved',
      fence: clock.ms() + 1,
      via: 'lease',
      release: { released: true },
      fallback: expect.any(String) as unknown,
    });
    expect((await store.get(SKU))?.available).toBe(4);
    expect((await locks.get(skuLockResource(SKU)))?.holder).toBeUndefined();
  });

  it("when a holder whose lease expired writes after the lease-free path did, its write is refused; a later holder's is accepted", async () => {
    // Prepare: a zombie takes the lease and stalls past its expiry.
    const { deps, store, clock, lock } = unleasedFixture();
    const zombie = await lock.acquire(skuLockResource(SKU), LEASE_MS);
    clock.advance(LEASE_MS + 1);
    await reserveStock(deps, { sku: SKU, orderId: 'order-1', quantity: 3 });

    // Act
    const late = store.reserve({
      sku: SKU,
      orderId: 'order-zombie',
      quantity: 1,
      fence: zombie.fence,
      at: clock(),
    });
    const later = await reserveStock(
      { ...deps, unleased: undefined },
      { sku: SKU, orderId: 'order-2', quantity: 1 },
    );

    // Assess
    await expect(late).rejects.toBeInstanceOf(StaleFencingTokenError);
    expect(later).toMatchObject({ kind: 'reserved', via: 'lease', fence: clock.ms() + 1 });
    expect(Object.keys((await store.get(SKU))?.reservations ?? {}).sort()).toEqual(['order-1', 'order-2']);
  });
});
