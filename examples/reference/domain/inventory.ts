/**
 * inventory.reserve (L1–L3, D5): stock per SKU is a shared resource. A reservation runs under a
 * lease lock on the SKU, and its one conditional write carries the lease's fencing token, so a
 * holder whose lease was taken over cannot write after the newer holder. A second reservation
 * for the same order is a duplicate, never a second decrement.
 *
 * The lease's critical section is that one write, so when an UnleasedReservation is given the
 * reservation first runs without a lease: one atomic step that checks no live lease holds the
 * SKU, advances the lock's fence to the clock and writes the stock with it (the lock protocol's
 * lease-free path, lib/core/lease-lock.ts). A live lease is 'busy' as on the lease path; what
 * that step cannot decide (the lock's fence ahead of the clock, a conflicting transaction) falls
 * back to the lease path, so nothing is lost and no guarantee changes.
 */
import {
  type Random,
  waitDeferSeconds,
  PermanentError,
  StaleFencingTokenError,
  LeaseLostError,
  LockHeldError,
  withLease,
  type Every,
  type LeaseLock,
  type LockHolder,
  type LockReleaseResult,
  type Clock,
} from 'tenang/runtime';

/** The SKU does not exist in the inventory table. Permanent. */
export class UnknownSkuError extends PermanentError {}

/** Not enough stock for the reservation. Permanent: retrying does not create stock. */
export class InsufficientStockError extends PermanentError {
  public constructor(
    public readonly sku: string,
    public readonly requested: number,
    public readonly available: number,
    options?: { cause?: unknown },
  ) {
    super(`insufficient stock for SKU ${sku}: ${requested} requested, ${available} available`, options);
  }
}

/** One reservation as the stock item records it. */
export interface Reservation {
  readonly quantity: number;
  readonly fence: number;
  /** ISO-8601. */
  readonly reservedAt: string;
}

/** Stock of one SKU. */
export interface StockLevel {
  readonly sku: string;
  readonly available: number;
  /** The newest fence the item accepted; undefined before the first fenced write. */
  readonly fence: number | undefined;
  /** Reservations by order id. */
  readonly reservations: Readonly<Record<string, Reservation>>;
}

/** Stock per SKU, written only with a fencing token (the protected resource of L3). */
export interface InventoryStore {
  /**
   * In one conditional write: decrements `available` by `quantity`, records the reservation
   * for `orderId` and stores `fence`. 'duplicate' when `orderId` already holds a reservation.
   * @throws StaleFencingTokenError when the item accepted a newer or equal fence;
   * InsufficientStockError; UnknownSkuError.
   */
  reserve(request: {
    readonly sku: string;
    readonly orderId: string;
    readonly quantity: number;
    readonly fence: number;
    readonly at: Date;
  }): Promise<'reserved' | 'duplicate'>;
  /** The SKU's stock, or undefined when it does not exist. */
  get(sku: string): Promise<StockLevel | undefined>;
}

/** What a lease-free reservation came to. */
export type UnleasedReserveResult =
  | { readonly kind: 'reserved'; readonly fence: number }
  | { readonly kind: 'duplicate' }
  /** A live lease holds the SKU; nothing written. */
  | { readonly kind: 'busy'; readonly holder: LockHolder }
  /** Nothing written, and the step cannot tell why in domain terms: take the lease path. */
  | { readonly kind: 'undecided'; readonly reason: string };

/** The lease-free path of a reservation: one atomic step over the SKU's lock and its stock. */
export interface UnleasedReservation {
  /**
   * When no live lease holds `skuLockResource(sku)` and the lock's fence is below `at` (epoch
   * ms): advances the lock's fence to `at` and reserves as InventoryStore.reserve does with that
   * fence, atomically; otherwise writes nothing.
   * @throws InsufficientStockError; UnknownSkuError.
   */
  reserve(request: {
    readonly sku: string;
    readonly orderId: string;
    readonly quantity: number;
    readonly at: Date;
  }): Promise<UnleasedReserveResult>;
}

/** The lock resource guarding a SKU's stock. */
export function skuLockResource(sku: string): string {
  return `inventory:${sku}`;
}

/** How a reservation attempt ran. */
export interface ReservePath {
  /** 'transaction': the lease-free step decided it; 'lease': the lease path ran. */
  readonly via: 'transaction' | 'lease';
  /** Why the lease-free step, tried first, left the reservation to the lease path. */
  readonly fallback?: string;
}

/** What a reservation attempt came to. */
export type ReserveOutcome = ReservePath &
  (
    | {
        readonly kind: 'reserved';
        readonly fence: number;
        /** The lease's release; undefined on the transaction path, which takes no lease. */
        readonly release: LockReleaseResult | undefined;
      }
    | {
        readonly kind: 'duplicate';
        /** The lease's fence; undefined on the transaction path. */
        readonly fence: number | undefined;
        readonly release: LockReleaseResult | undefined;
      }
    | {
        readonly kind: 'busy';
        readonly holder: LockHolder | undefined;
        /** How long the holder's lease has been held, ms (lock age, L4). */
        readonly holderAgeMs: number | undefined;
        readonly deferSeconds: number;
      }
  );

/** What reserveStock needs. */
export interface ReserveStockDeps {
  readonly lock: LeaseLock;
  readonly store: InventoryStore;
  /** The lease-free path, tried first. @default - none: every reservation takes the lease */
  readonly unleased?: UnleasedReservation;
  readonly clock: Clock;
  readonly random: Random;
  /** Lease length; shorter than the function timeout so a crashed holder frees the SKU soon. */
  readonly leaseTtlMs: number;
  /** @default leaseTtlMs / 3 */
  readonly heartbeatMs?: number;
  /** @default everyInterval */
  readonly every?: Every;
  /**
   * Called once the lease is held, before the stock write: where the chaos suite crashes the
   * holder (a lease left behind, L2). Only the lease path has the point: the lease-free step is
   * one atomic request, and a crash before or after it leaves nothing behind. @default never crashes
   */
  readonly crash?: (point: 'holding-lock') => void;
}

/**
 * Reserves `quantity` of `sku` for `orderId`: lease-free when `deps.unleased` decides it, else
 * under the SKU's lease. A busy lock is an outcome (the caller defers the job), not an error.
 * @throws LeaseLostError (transient) when the lease was lost before or at the write;
 * InsufficientStockError / UnknownSkuError (permanent).
 */
export async function reserveStock(
  deps: ReserveStockDeps,
  request: { readonly sku: string; readonly orderId: string; readonly quantity: number },
): Promise<ReserveOutcome> {
  if (deps.unleased === undefined) return reserveUnderLease(deps, request, undefined);
  const at = deps.clock();
  const result = await deps.unleased.reserve({ ...request, at });
  switch (result.kind) {
    case 'reserved':
      return { kind: 'reserved', fence: result.fence, release: undefined, via: 'transaction' };
    case 'duplicate':
      return { kind: 'duplicate', fence: undefined, release: undefined, via: 'transaction' };
    case 'busy':
      return busy(deps, result.holder, Math.max(0, result.holder.expiresAtMs - at.getTime()), 'transaction');
    case 'undecided':
      return reserveUnderLease(deps, request, result.reason);
  }
}

function busy(
  deps: ReserveStockDeps,
  holder: LockHolder | undefined,
  retryAfterMs: number,
  via: ReservePath['via'],
  fallback?: string,
): ReserveOutcome {
  const now = deps.clock().getTime();
  return {
    kind: 'busy',
    holder,
    holderAgeMs: holder === undefined ? undefined : Math.max(0, now - holder.acquiredAtMs),
    deferSeconds: waitDeferSeconds(retryAfterMs, deps.random),
    via,
    ...(fallback === undefined ? {} : { fallback }),
  };
}

async function reserveUnderLease(
  deps: ReserveStockDeps,
  request: { readonly sku: string; readonly orderId: string; readonly quantity: number },
  fallback: string | undefined,
): Promise<ReserveOutcome> {
  const resource = skuLockResource(request.sku);
  const path = { via: 'lease' as const, ...(fallback === undefined ? {} : { fallback }) };
  try {
    const outcome = await withLease(
      deps.lock,
      resource,
      { ttlMs: deps.leaseTtlMs, heartbeatMs: deps.heartbeatMs, every: deps.every },
      async (held) => {
        if (held.signal.aborted) throw new LeaseLostError(`lease on ${resource} was lost before the write`);
        deps.crash?.('holding-lock');
        const { fence } = held.current();
        try {
          return {
            result: await deps.store.reserve({ ...request, fence, at: deps.clock() }),
            fence,
          };
        } catch (error) {
          // A newer holder wrote first: this job is not done; it retries under a new lease.
          if (error instanceof StaleFencingTokenError) {
            throw new LeaseLostError(
              `lease on ${resource} (fence ${fence}) was taken over: ${error.message}`,
              {
                cause: error,
              },
            );
          }
          throw error;
        }
      },
    );
    const kind = outcome.value.result === 'reserved' ? 'reserved' : 'duplicate';
    return { kind, fence: outcome.value.fence, release: outcome.release, ...path };
  } catch (error) {
    if (!(error instanceof LockHeldError)) throw error;
    return busy(deps, error.holder, error.retryAfterMs, 'lease', fallback);
  }
}
