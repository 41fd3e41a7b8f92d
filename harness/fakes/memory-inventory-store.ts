/** InventoryStore in memory, with the DynamoDB adapter's condition, for unit and property tests. */
import { StaleFencingTokenError } from '../../lib/core/errors';
import {
  InsufficientStockError,
  UnknownSkuError,
  type InventoryStore,
  type StockLevel,
} from '../../examples/reference/domain/inventory';
import { fenceAccepts } from '../../lib/core/lease-lock';

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
    const item = this.items.get(request.sku);
    if (item === undefined) return Promise.reject(new UnknownSkuError(`SKU ${request.sku} does not exist`));
    // The same order as the DynamoDB adapter explains a failed condition: duplicate first.
    if (item.reservations[request.orderId] !== undefined) return Promise.resolve('duplicate');
    if (!fenceAccepts(item.fence, request.fence)) {
      return Promise.reject(
        new StaleFencingTokenError(
          `write to SKU ${request.sku} with fence ${request.fence} refused: fence ${item.fence} was accepted already`,
        ),
      );
    }
    if (item.available < request.quantity) {
      return Promise.reject(new InsufficientStockError(request.sku, request.quantity, item.available));
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
    return Promise.resolve('reserved');
  }

  public get(sku: string): Promise<StockLevel | undefined> {
    return Promise.resolve(this.items.get(sku));
  }
}
