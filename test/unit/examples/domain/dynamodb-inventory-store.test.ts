import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  GetItemCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type AttributeValue,
  type CancellationReason,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import {
  DynamoDbInventoryStore,
  DynamoDbUnleasedReservation,
} from '../../../../examples/reference/domain/dynamodb-inventory-store';
import { DynamoDbLockStore } from '../../../../lib/adapters/aws/dynamodb-lock-store';
import { classifyError, StaleFencingTokenError } from '../../../../lib/core/errors';
import { InsufficientStockError, UnknownSkuError } from '../../../../examples/reference/domain/inventory';

const TABLE = 'tenang-test-inventory';
const SKU = 'sku-1';
const AT = new Date('2030-06-01T12:00:00.000Z');
const REQUEST = { sku: SKU, orderId: 'order-9', quantity: 3, fence: 20, at: AT };

const dynamoMock = mockClient(DynamoDBClient);

function store(): DynamoDbInventoryStore {
  return new DynamoDbInventoryStore(new DynamoDBClient({ region: 'eu-west-1' }), TABLE, () => AT);
}

function refusedWith(item?: Record<string, AttributeValue>): void {
  const error = new ConditionalCheckFailedException({
    message: 'The conditional request failed',
    $metadata: {},
  });
  if (item !== undefined) error.Item = item;
  dynamoMock.on(UpdateItemCommand).rejects(error);
}

function stockItem(
  available: number,
  fence: number | undefined,
  reservations: Record<string, AttributeValue> = {},
): Record<string, AttributeValue> {
  return {
    sku: { S: SKU },
    available: { N: String(available) },
    ...(fence === undefined ? {} : { fence: { N: String(fence) } }),
    reservations: { M: reservations },
  };
}

beforeEach(() => {
  dynamoMock.reset();
});

describe('Class: DynamoDbInventoryStore', () => {
  describe('Method: reserve', () => {
    it('when the condition holds, it decrements, records the reservation and stores the fence in one UpdateItem', async () => {
      // Prepare
      dynamoMock.on(UpdateItemCommand).resolves({});

      // Act
      const result = await store().reserve(REQUEST);

      // Assess
      expect(result).toBe('reserved');
      expect(dynamoMock).toHaveReceivedCommandTimes(UpdateItemCommand, 1);
      expect(dynamoMock).toHaveReceivedCommandWith(UpdateItemCommand, {
        TableName: TABLE,
        Key: { sku: { S: SKU } },
        UpdateExpression:
          'SET #available = #available - :q, #reservations.#order = :reservation, #fence = :t, #updatedAt = :at',
        ConditionExpression:
          'attribute_exists(#available) AND attribute_not_exists(#reservations.#order) AND ' +
          '(attribute_not_exists(#fence) OR #fence < :t) AND #available >= :q',
        ExpressionAttributeNames: expect.objectContaining({ '#order': 'order-9' }) as unknown,
        ExpressionAttributeValues: expect.objectContaining({
          ':q': { N: '3' },
          ':t': { N: '20' },
        }) as unknown,
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
    });

    it('when the order already holds a reservation, it answers duplicate (even with an older fence)', async () => {
      // Prepare
      refusedWith(stockItem(7, 25, { 'order-9': { M: { quantity: { N: '3' }, fence: { N: '19' } } } }));

      // Act
      const result = await store().reserve(REQUEST);

      // Assess
      expect(result).toBe('duplicate');
    });

    it('when the item accepted a newer or equal fence, it throws StaleFencingTokenError', async () => {
      // Prepare
      refusedWith(stockItem(10, 20));

      // Act
      const error = await store()
        .reserve(REQUEST)
        .catch((e: unknown) => e);

      // Assess
      expect(error).toBeInstanceOf(StaleFencingTokenError);
      expect((error as Error).message).toBe(
        'write to SKU sku-1 with fence 20 refused: fence 20 was accepted already',
      );
      expect((error as Error).cause).toBeInstanceOf(ConditionalCheckFailedException);
    });

    it('when stock is short, it throws a permanent InsufficientStockError with the numbers', async () => {
      // Prepare
      refusedWith(stockItem(2, 5));

      // Act
      const error = await store()
        .reserve(REQUEST)
        .catch((e: unknown) => e);

      // Assess
      expect(error).toBeInstanceOf(InsufficientStockError);
      expect(classifyError(error)).toBe('permanent');
      expect(error).toMatchObject({ sku: SKU, requested: 3, available: 2 });
    });

    it('when the SKU does not exist, it throws a permanent UnknownSkuError', async () => {
      // Prepare
      refusedWith(undefined);

      // Act
      const attempt = store().reserve(REQUEST);

      // Assess
      await expect(attempt).rejects.toBeInstanceOf(UnknownSkuError);
    });

    it('when the old item explains nothing, it throws a plain Error (a bug, not a guess)', async () => {
      // Prepare
      refusedWith(stockItem(10, 5));

      // Act
      const error = await store()
        .reserve(REQUEST)
        .catch((e: unknown) => e);

      // Assess
      expect(classifyError(error)).toBe('bug');
    });
  });

  describe('Method: seed', () => {
    it('when seeding, it sets the stock and keeps existing reservations and fence', async () => {
      // Prepare
      dynamoMock.on(UpdateItemCommand).resolves({});

      // Act
      await store().seed(SKU, 50);

      // Assess
      expect(dynamoMock).toHaveReceivedCommandWith(UpdateItemCommand, {
        UpdateExpression:
          'SET #available = :available, #reservations = if_not_exists(#reservations, :none), #updatedAt = :at',
        ExpressionAttributeValues: {
          ':available': { N: '50' },
          ':none': { M: {} },
          ':at': { S: AT.toISOString() },
        },
      });
    });

    it('when the stock is negative or fractional, it throws a RangeError before writing', async () => {
      // Act
      const attempts = [store().seed(SKU, -1), store().seed(SKU, 1.5)];

      // Assess
      for (const attempt of attempts) await expect(attempt).rejects.toBeInstanceOf(RangeError);
      expect(dynamoMock).toHaveReceivedCommandTimes(UpdateItemCommand, 0);
    });
  });

  describe('Method: get', () => {
    it('when the SKU exists, it reads it consistently with its reservations', async () => {
      // Prepare
      dynamoMock.on(GetItemCommand).resolves({
        Item: stockItem(7, 20, {
          'order-9': { M: { quantity: { N: '3' }, fence: { N: '20' }, reservedAt: { S: AT.toISOString() } } },
        }),
      });

      // Act
      const stock = await store().get(SKU);

      // Assess
      expect(stock).toEqual({
        sku: SKU,
        available: 7,
        fence: 20,
        reservations: { 'order-9': { quantity: 3, fence: 20, reservedAt: AT.toISOString() } },
      });
      expect(dynamoMock).toHaveReceivedCommandWith(GetItemCommand, { ConsistentRead: true });
    });
  });
});

describe('Class: DynamoDbUnleasedReservation', () => {
  const LOCKS = 'tenang-test-locks';
  const UNLEASED = { sku: SKU, orderId: 'order-9', quantity: 3, at: AT };

  function unleased(): DynamoDbUnleasedReservation {
    const client = new DynamoDBClient({ region: 'eu-west-1' });
    return new DynamoDbUnleasedReservation(new DynamoDbLockStore(client, LOCKS), TABLE);
  }

  /** The transaction cancelled: the lock item's condition held, the stock's failed on `item`. */
  function stockRefused(item: Record<string, AttributeValue> | undefined): void {
    const reasons: CancellationReason[] = [
      { Code: 'None' },
      { Code: 'ConditionalCheckFailed', ...(item === undefined ? {} : { Item: item }) },
    ];
    dynamoMock.on(TransactWriteItemsCommand).rejects(
      new TransactionCanceledException({
        message: 'cancelled',
        $metadata: {},
        CancellationReasons: reasons,
      }),
    );
  }

  it('when the SKU is free, it sends the lock item and the fenced reservation (the clock as fence) in ONE TransactWriteItems', async () => {
    // Prepare
    dynamoMock.on(TransactWriteItemsCommand).resolves({});

    // Act
    const result = await unleased().reserve(UNLEASED);

    // Assess
    expect(result).toEqual({ kind: 'reserved', fence: AT.getTime() });
    expect(dynamoMock.calls()).toHaveLength(1);
    const [lock, stock] =
      dynamoMock.commandCalls(TransactWriteItemsCommand)[0]?.args[0].input.TransactItems ?? [];
    expect(lock?.Update).toMatchObject({ TableName: LOCKS, Key: { resource: { S: `inventory:${SKU}` } } });
    expect(stock?.Update).toMatchObject({
      TableName: TABLE,
      Key: { sku: { S: SKU } },
      ConditionExpression:
        'attribute_exists(#available) AND attribute_not_exists(#reservations.#order) AND ' +
        '(attribute_not_exists(#fence) OR #fence < :t) AND #available >= :q',
      ExpressionAttributeValues: expect.objectContaining({ ':t': { N: String(AT.getTime()) } }) as unknown,
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
  });

  it('when the order already holds a reservation, it answers duplicate', async () => {
    // Prepare
    stockRefused(stockItem(7, 25, { 'order-9': { M: { quantity: { N: '3' }, fence: { N: '25' } } } }));

    // Act
    const result = await unleased().reserve(UNLEASED);

    // Assess
    expect(result).toEqual({ kind: 'duplicate' });
  });

  it('when the SKU accepted a fence at or above the clock, it answers undecided (the lease path decides)', async () => {
    // Prepare
    stockRefused(stockItem(10, AT.getTime()));

    // Act
    const result = await unleased().reserve(UNLEASED);

    // Assess
    expect(result).toEqual({ kind: 'undecided', reason: expect.stringContaining('refused') as unknown });
  });

  it('when stock is short or the SKU is unknown, it throws the permanent errors the lease path throws', async () => {
    // Prepare
    stockRefused(stockItem(2, 25));
    const short = await unleased()
      .reserve(UNLEASED)
      .catch((e: unknown) => e);
    dynamoMock.reset();
    stockRefused(undefined);

    // Act
    const unknown = await unleased()
      .reserve(UNLEASED)
      .catch((e: unknown) => e);

    // Assess
    expect(short).toBeInstanceOf(InsufficientStockError);
    expect(unknown).toBeInstanceOf(UnknownSkuError);
    expect((unknown as Error).cause).toBeInstanceOf(TransactionCanceledException);
  });
});
