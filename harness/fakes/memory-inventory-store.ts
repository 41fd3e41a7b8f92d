/** InventoryStore in memory, with the DynamoDB adapter's condition, for unit and property tests. */
import { StaleFencingTokenError } from '../../lib/core/errors';
import {
  InsufficientStockError,
  skuLockResource,
  UnknownSkuError,
  type InventoryStore,
  type StockLevel,
  type UnleasedReservation,
  type UnleasedReserveResult,
} from '../../examples/reference/domain/inventory';
import { fenceAccepts } from '../../lib/core/lease-lock';
import type { InMemoryLockStore } from './memory-lock-store';

/** An in-memory InventoryStore; `writes` lists every accepted write in order. */
export class InMemoryInventoryStore implements InventoryStore {
  private readonly items = new Map<string, StockLevel>();
  /** Accepted writes, in order: what a property test checks fencing against. */
  public readonly writes: { sku: string; orderId: string; fence: number }[] = [];

  /** Sets a SKU's available stock, keeping its fence and reservations. */
  public seed(sku: string, available: number): void {
    const item = this.items.get(sku);
    this.items.set(sku, { sku, available, fence: item?.fence, reservations: item?.reservations ?? {} });
  }

  public reserve(request: {
    sku: string;
    orderId: string;
    quantity: number;
    fence: number;
    at: Date;
  }): Promise<'reserved' | 'duplicate'> {
    try {
      return Promise.resolve(this.reserveNow(request));
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  /**
   * The lease-free path over this store and `locks`, with DynamoDbUnleasedReservation's outcomes
   * in its order: a live lease, then the stock's refusal, then the lock's fence ahead of the clock.
   */
  public unleased(locks: InMemoryLockStore): UnleasedReservation {
    return {
      reserve: (request): Promise<UnleasedReserveResult> => {
        const fence = request.at.getTime();
        const lock = locks.unleased(skuLockResource(request.sku), fence);
        if (lock.kind === 'busy') return Promise.resolve(lock);
        const item = this.items.get(request.sku);
        if (item === undefined)
          return Promise.reject(new UnknownSkuError(`SKU ${request.sku} does not exist`));
        if (item.reservations[request.orderId] !== undefined) return Promise.resolve({ kind: 'duplicate' });
        if (!fenceAccepts(item.fence, fence))
          return Promise.resolve({
            kind: 'undecided',
            reason: `SKU ${request.sku} accepted fence ${item.fence}`,
          });
        if (item.available < request.quantity)
          return Promise.reject(new InsufficientStockError(request.sku, request.quantity, item.available));
        if (lock.kind === 'ahead')
          return Promise.resolve({ kind: 'undecided', reason: `the lock's fence ${lock.fence} is ahead` });
        lock.advance();
        this.reserveNow({ ...request, fence });
        return Promise.resolve({ kind: 'reserved', fence });
      },
    };
  }

  private reserveNow(request: {
    sku: string;
    orderId: string;
    quantity: number;
    fence: number;
    at: Date;
  }): 'reserved' | 'duplicate' {
    const item = this.items.get(request.sku);
    if (item === undefined) throw new UnknownSkuError(`SKU ${request.sku} does not exist`);
    // The same order as the DynamoDB adapter explains a failed condition: duplicate first.
    if (item.reservations[request.orderId] !== undefined) return 'duplicate';
    if (!fenceAccepts(item.fence, request.fence)) {
      throw new StaleFencingTokenError(
        `write to SKU ${request.sku} with fence ${request.fence} refused: fence ${item.fence} was accepted already`,
      );
    }
    if (item.available < request.quantity) {
      throw new InsufficientStockError(request.sku, request.quantity, item.available);
    }
    this.items.set(request.sku, {
      sku: request.sku,
      available: item.available - request.quantity,
      fence: request.fence,
      reservations: {
        ...item.reservations,
        [request.orderId]: {
          quantity: request.quantity,
          fence: request.fence,
          reservedAt: request.at.toISOString(),
        },
      },
    });
    this.writes.push({ sku: request.sku, orderId: request.orderId, fence: request.fence });
    return 'reserved';
  }

  public get(sku: string): Promise<StockLevel | undefined> {
    return Promise.resolve(this.items.get(sku));
  }
}
