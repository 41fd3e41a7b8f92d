/**
 * InventoryStore over the inventory table (L3): one item per SKU,
 * `{ sku, available, fence?, reservations: { <orderId>: { quantity, fence, reservedAt } }, updatedAt }`.
 *
 * A reservation is one conditional UpdateItem: it decrements `available`, records the
 * reservation under the order id (a second one for the same order is a duplicate, never a second
 * decrement) and stores the writer's fence, refusing a fence the item has already seen. When the
 * condition fails, the old item says why. DynamoDbUnleasedReservation sends the same Update in
 * one transaction with the SKU's lock item (DynamoDbLockStore.writeWithoutLease), its fence the
 * clock's epoch ms.
 *
 * The reservations live in the SKU's item, so the item grows by ~80 bytes per order: about
 * 4,000 open reservations fit DynamoDB's 400 KB item limit. Settled reservations must be pruned
 * (by whatever ships or cancels the order) long before that.
 */
import {
  ConditionalCheckFailedException,
  GetItemCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
  type Update,
} from '@aws-sdk/client-dynamodb';
import { REFERENCE_TABLE_KEYS } from './tables';
import { StaleFencingTokenError, fenceAccepts, type Clock, type DynamoDbLockStore } from 'tenang/runtime';
import {
  InsufficientStockError,
  skuLockResource,
  UnknownSkuError,
  type InventoryStore,
  type Reservation,
  type StockLevel,
  type UnleasedReservation,
  type UnleasedReserveResult,
} from './inventory';

type Item = Record<string, AttributeValue>;

const SKU = REFERENCE_TABLE_KEYS.inventory.partitionKey;

const n = (value: number): AttributeValue => ({ N: String(value) });
const s = (value: string): AttributeValue => ({ S: value });

function num(value: AttributeValue | undefined): number | undefined {
  return value?.N === undefined ? undefined : Number(value.N);
}

function stockOf(sku: string, item: Item): StockLevel {
  const reservations: Record<string, Reservation> = {};
  for (const [orderId, value] of Object.entries(item.reservations?.M ?? {})) {
    reservations[orderId] = {
      quantity: num(value.M?.quantity) ?? 0,
      fence: num(value.M?.fence) ?? 0,
      reservedAt: value.M?.reservedAt?.S ?? '',
    };
  }
  return { sku, available: num(item.available) ?? 0, fence: num(item.fence), reservations };
}

/** The fenced reservation's Update: one UpdateItem, or one item of a TransactWriteItems. */
function reservationUpdate(
  tableName: string,
  request: { sku: string; orderId: string; quantity: number; fence: number; at: Date },
): Update {
  return {
    TableName: tableName,
    Key: { [SKU]: s(request.sku) },
    UpdateExpression:
      'SET #available = #available - :q, #reservations.#order = :reservation, #fence = :t, #updatedAt = :at',
    ConditionExpression:
      'attribute_exists(#available) AND attribute_not_exists(#reservations.#order) AND ' +
      '(attribute_not_exists(#fence) OR #fence < :t) AND #available >= :q',
    ExpressionAttributeNames: {
      '#available': 'available',
      '#reservations': 'reservations',
      '#order': request.orderId,
      '#fence': 'fence',
      '#updatedAt': 'updatedAt',
    },
    ExpressionAttributeValues: {
      ':q': n(request.quantity),
      ':t': n(request.fence),
      ':at': s(request.at.toISOString()),
      ':reservation': {
        M: {
          quantity: n(request.quantity),
          fence: n(request.fence),
          reservedAt: s(request.at.toISOString()),
        },
      },
    },
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/**
 * Turns a failed reservation condition into its meaning, in the order the fake store checks it.
 * @throws UnknownSkuError, StaleFencingTokenError, InsufficientStockError
 */
function explainRefusal(
  request: { sku: string; orderId: string; quantity: number; fence: number },
  item: Item | undefined,
  cause: unknown,
): 'duplicate' {
  if (item?.available === undefined) {
    throw new UnknownSkuError(`SKU ${request.sku} does not exist in the inventory`, { cause });
  }
  const stock = stockOf(request.sku, item);
  if (stock.reservations[request.orderId] !== undefined) return 'duplicate';
  if (!fenceAccepts(stock.fence, request.fence)) {
    throw new StaleFencingTokenError(
      `write to SKU ${request.sku} with fence ${request.fence} refused: fence ${stock.fence} was accepted already`,
      { cause },
    );
  }
  if (stock.available < request.quantity) {
    throw new InsufficientStockError(request.sku, request.quantity, stock.available, { cause });
  }
  throw new Error(`reservation of SKU ${request.sku} refused for no known reason`, { cause });
}

/** Stock per SKU with fenced, idempotent reservations. */
export class DynamoDbInventoryStore implements InventoryStore {
  public constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
    private readonly clock: Clock = () => new Date(),
  ) {}

  public async reserve(request: {
    sku: string;
    orderId: string;
    quantity: number;
    fence: number;
    at: Date;
  }): Promise<'reserved' | 'duplicate'> {
    try {
      await this.client.send(new UpdateItemCommand(reservationUpdate(this.tableName, request)));
      return 'reserved';
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return explainRefusal(request, error.Item, error);
      throw error;
    }
  }

  public async get(sku: string): Promise<StockLevel | undefined> {
    const { Item } = await this.client.send(
      new GetItemCommand({ TableName: this.tableName, Key: { [SKU]: s(sku) }, ConsistentRead: true }),
    );
    return Item === undefined ? undefined : stockOf(sku, Item);
  }

  /**
   * Sets a SKU's available stock (seeding, restocking, tests); keeps its fence and reservations.
   */
  public async seed(sku: string, available: number): Promise<void> {
    if (!Number.isInteger(available) || available < 0) {
      throw new RangeError(`available must be a non-negative integer, got ${available}`);
    }
    await this.client.send(
      new UpdateItemCommand({
        TableName: this.tableName,
        Key: { [SKU]: s(sku) },
        UpdateExpression:
          'SET #available = :available, #reservations = if_not_exists(#reservations, :none), #updatedAt = :at',
        ExpressionAttributeNames: {
          '#available': 'available',
          '#reservations': 'reservations',
          '#updatedAt': 'updatedAt',
        },
        ExpressionAttributeValues: {
          ':available': n(available),
          ':none': { M: {} },
          ':at': s(this.clock().toISOString()),
        },
      }),
    );
  }
}

/**
 * The lease-free reservation over the inventory table and the locks table: the fenced
 * reservation and the SKU's lock item in one TransactWriteItems (DynamoDbLockStore.writeWithoutLease
 * says why that keeps the lease's guarantees, and what it costs).
 */
export class DynamoDbUnleasedReservation implements UnleasedReservation {
  public constructor(
    private readonly locks: DynamoDbLockStore,
    private readonly inventoryTable: string,
  ) {}

  public async reserve(request: {
    sku: string;
    orderId: string;
    quantity: number;
    at: Date;
  }): Promise<UnleasedReserveResult> {
    const result = await this.locks.writeWithoutLease({
      resource: skuLockResource(request.sku),
      nowMs: request.at.getTime(),
      write: (fence) => reservationUpdate(this.inventoryTable, { ...request, fence }),
    });
    switch (result.kind) {
      case 'written':
        return { kind: 'reserved', fence: result.fence };
      case 'busy':
      case 'undecided':
        return result;
      case 'refused':
        try {
          return {
            kind: explainRefusal({ ...request, fence: request.at.getTime() }, result.item, result.cause),
          };
        } catch (error) {
          // The SKU saw a fence at or above the clock's: the lease path's fences count on from the lock's.
          if (error instanceof StaleFencingTokenError) return { kind: 'undecided', reason: error.message };
          throw error;
        }
    }
  }
}
