/**
 * inventory.reserve (L1–L3, D5): stock per SKU is a shared resource. A reservation runs under a
 * lease lock on the SKU, and its one conditional write carries the lease's fencing token, so a
 * holder whose lease was taken over cannot write after the newer holder. A second reservation
 * for the same order is a duplicate, never a second decrement.
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

/** The lock resource guarding a SKU's stock. */
export function skuLockResource(sku: string): string {
  return `inventory:${sku}`;
}

/** What a reservation attempt came to. */
export type ReserveOutcome =
  | { readonly kind: 'reserved'; readonly fence: number; readonly release: LockReleaseResult }
  | { readonly kind: 'duplicate'; readonly fence: number; readonly release: LockReleaseResult }
  | {
      readonly kind: 'busy';
      readonly holder: LockHolder | undefined;
      /** How long the holder's lease has been held, ms (lock age, L4). */
      readonly holderAgeMs: number | undefined;
      readonly deferSeconds: number;
    };

/** What reserveStock needs. */
export interface ReserveStockDeps {
  readonly lock: LeaseLock;
  readonly store: InventoryStore;
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
   * holder (a lease left behind, L2). @default never crashes
   */
  readonly crash?: (point: 'holding-lock') => void;
}

/**
 * Reserves `quantity` of `sku` for `orderId` under the SKU's lease.
 * A busy lock is an outcome (the caller defers the job), not an error.
 * @throws LeaseLostError (transient) when the lease was lost before or at the write;
 * InsufficientStockError / UnknownSkuError (permanent).
 */
export async function reserveStock(
  deps: ReserveStockDeps,
  request: { readonly sku: string; readonly orderId: string; readonly quantity: number },
): Promise<ReserveOutcome> {
  const resource = skuLockResource(request.sku);
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
    return { kind, fence: outcome.value.fence, release: outcome.release };
  } catch (error) {
    if (!(error instanceof LockHeldError)) throw error;
    const now = deps.clock().getTime();
    return {
      kind: 'busy',
      holder: error.holder,
      holderAgeMs: error.holder === undefined ? undefined : Math.max(0, now - error.holder.acquiredAtMs),
      deferSeconds: waitDeferSeconds(error.retryAfterMs, deps.random),
    };
  }
}
