import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  GetItemCommand,
  ScanCommand,
  ThrottlingException,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type AttributeValue,
  type CancellationReason,
  type Update,
} from '@aws-sdk/client-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { DynamoDbLockStore } from '../../../lib/adapters/aws/dynamodb-lock-store';

const TABLE = 'tenang-test-locks';
const RESOURCE = 'inventory:sku-1';
const NOW_MS = 1_900_000_000_000;

const dynamoMock = mockClient(DynamoDBClient);

function store(): DynamoDbLockStore {
  return new DynamoDbLockStore(new DynamoDBClient({ region: 'eu-west-1' }), TABLE);
}

function conditionFailed(item?: Record<string, AttributeValue>): ConditionalCheckFailedException {
  const error = new ConditionalCheckFailedException({
    message: 'The conditional request failed',
    $metadata: {},
  });
  if (item !== undefined) error.Item = item;
  return error;
}

const HELD_ITEM = {
  resource: { S: RESOURCE },
  owner: { S: 'owner-a' },
  fence: { N: '1900000000001' },
  acquiredAt: { N: String(NOW_MS - 2_000) },
  expiresAt: { N: String(NOW_MS + 8_000) },
  expiresAtEpoch: { N: String(Math.ceil((NOW_MS + 8_000) / 1000)) },
};

beforeEach(() => {
  dynamoMock.reset();
});

describe('Class: DynamoDbLockStore', () => {
  describe('Method: tryAcquire', () => {
    it('when the condition holds, it sends one conditional UpdateItem that bumps the fence and sets the TTL', async () => {
      // Prepare
      dynamoMock.on(UpdateItemCommand).resolves({ Attributes: { fence: { N: '1900000000001' } } });

      // Act
      const result = await store().tryAcquire({
        resource: RESOURCE,
        ownerToken: 'owner-b',
        nowMs: NOW_MS,
        expiresAtMs: NOW_MS + 10_500,
      });

      // Assess
      expect(result).toEqual({ acquired: true, fence: 1_900_000_000_001 });
      expect(dynamoMock).toHaveReceivedCommandTimes(UpdateItemCommand, 1);
      expect(dynamoMock).toHaveReceivedCommandWith(UpdateItemCommand, {
        TableName: TABLE,
        Key: { resource: { S: RESOURCE } },
        ConditionExpression: 'attribute_not_exists(#owner) OR #expiresAt < :now',
        UpdateExpression:
          'SET #owner = :owner, #acquiredAt = :now, #expiresAt = :exp, #ttl = :ttl, ' +
          '#fence = if_not_exists(#fence, :now) + :one',
        ExpressionAttributeNames: expect.objectContaining({
          '#ttl': 'expiresAtEpoch',
          '#owner': 'owner',
        }) as unknown,
        ExpressionAttributeValues: expect.objectContaining({
          ':owner': { S: 'owner-b' },
          ':now': { N: String(NOW_MS) },
          ':ttl': { N: String(Math.ceil((NOW_MS + 10_500) / 1000)) },
        }) as unknown,
        ReturnValues: 'ALL_NEW',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
    });

    it('when someone holds a live lease, it answers busy with the holder from the old item', async () => {
      // Prepare
      dynamoMock.on(UpdateItemCommand).rejects(conditionFailed(HELD_ITEM));

      // Act
      const result = await store().tryAcquire({
        resource: RESOURCE,
        ownerToken: 'owner-b',
        nowMs: NOW_MS,
        expiresAtMs: NOW_MS + 10_000,
      });

      // Assess
      expect(result).toEqual({
        acquired: false,
        holder: {
          ownerToken: 'owner-a',
          fence: 1_900_000_000_001,
          acquiredAtMs: NOW_MS - 2_000,
          expiresAtMs: NOW_MS + 8_000,
        },
      });
    });

    it('when a resend finds the lease its own lost-answer attempt took (same owner token), it is acquired with that fence', async () => {
      // Prepare: the first attempt was applied, its answer lost; the SDK's resend fails the condition.
      dynamoMock.on(UpdateItemCommand).rejects(conditionFailed(HELD_ITEM));

      // Act
      const result = await store().tryAcquire({
        resource: RESOURCE,
        ownerToken: 'owner-a',
        nowMs: NOW_MS,
        expiresAtMs: NOW_MS + 8_000,
      });

      // Assess
      expect(result).toEqual({ acquired: true, fence: 1_900_000_000_001 });
    });

    it('when DynamoDB throttles, it lets the SDK error through for the failure policy to classify', async () => {
      // Prepare
      const throttled = new ThrottlingException({ message: 'slow down', $metadata: {} });
      dynamoMock.on(UpdateItemCommand).rejects(throttled);

      // Act
      const attempt = store().tryAcquire({
        resource: RESOURCE,
        ownerToken: 'o',
        nowMs: NOW_MS,
        expiresAtMs: NOW_MS,
      });

      // Assess
      await expect(attempt).rejects.toBe(throttled);
    });
  });

  describe('Method: extend', () => {
    it('when the owner still holds a live lease, it moves the expiry conditionally on owner, fence and expiry', async () => {
      // Prepare
      dynamoMock.on(UpdateItemCommand).resolves({});

      // Act
      const extended = await store().extend({
        resource: RESOURCE,
        ownerToken: 'owner-a',
        fence: 7,
        nowMs: NOW_MS,
        expiresAtMs: NOW_MS + 10_000,
      });

      // Assess
      expect(extended).toBe(true);
      expect(dynamoMock).toHaveReceivedCommandWith(UpdateItemCommand, {
        ConditionExpression: '#owner = :owner AND #fence = :fence AND #expiresAt >= :now',
        UpdateExpression: 'SET #expiresAt = :exp, #ttl = :ttl',
      });
    });

    it('when the condition fails, it answers false', async () => {
      // Prepare
      dynamoMock.on(UpdateItemCommand).rejects(conditionFailed());

      // Act
      const extended = await store().extend({
        resource: RESOURCE,
        ownerToken: 'owner-a',
        fence: 7,
        nowMs: NOW_MS,
        expiresAtMs: NOW_MS + 10_000,
      });

      // Assess
      expect(extended).toBe(false);
    });
  });

  describe('Methods: release and releaseExpired', () => {
    it('when the owner releases, it removes only the lease fields (the fence stays) on the owner condition', async () => {
      // Prepare
      dynamoMock.on(UpdateItemCommand).resolves({});

      // Act
      const result = await store().release({ resource: RESOURCE, ownerToken: 'owner-a' });

      // Assess
      expect(result).toEqual({ released: true });
      expect(dynamoMock).toHaveReceivedCommandWith(UpdateItemCommand, {
        UpdateExpression: 'REMOVE #owner, #acquiredAt, #expiresAt, #ttl',
        ConditionExpression: '#owner = :owner',
        ExpressionAttributeValues: { ':owner': { S: 'owner-a' } },
      });
    });

    it('when a non-owner releases, it is refused and says who holds the lease', async () => {
      // Prepare
      dynamoMock.on(UpdateItemCommand).rejects(conditionFailed(HELD_ITEM));

      // Act
      const result = await store().release({ resource: RESOURCE, ownerToken: 'intruder' });

      // Assess
      expect(result).toMatchObject({ released: false, holder: { ownerToken: 'owner-a' } });
    });

    it('when an orphan is released, it also requires the lease to have expired', async () => {
      // Prepare
      dynamoMock.on(UpdateItemCommand).resolves({});

      // Act
      await store().releaseExpired({ resource: RESOURCE, ownerToken: 'owner-a', nowMs: NOW_MS });

      // Assess
      expect(dynamoMock).toHaveReceivedCommandWith(UpdateItemCommand, {
        ConditionExpression: '#owner = :owner AND #expiresAt < :now',
        ExpressionAttributeValues: { ':owner': { S: 'owner-a' }, ':now': { N: String(NOW_MS) } },
      });
    });
  });

  describe('Methods: get and listHeld', () => {
    it('when a record exists without a lease, it returns its fence and no holder', async () => {
      // Prepare
      dynamoMock.on(GetItemCommand).resolves({ Item: { resource: { S: RESOURCE }, fence: { N: '12' } } });

      // Act
      const record = await store().get(RESOURCE);

      // Assess
      expect(record).toEqual({ resource: RESOURCE, fence: 12, holder: undefined });
      expect(dynamoMock).toHaveReceivedCommandWith(GetItemCommand, { ConsistentRead: true });
    });

    it('when the held records span several scan pages, it reads every page', async () => {
      // Prepare
      dynamoMock
        .on(ScanCommand)
        .resolvesOnce({ Items: [HELD_ITEM], LastEvaluatedKey: { resource: { S: RESOURCE } } })
        .resolvesOnce({ Items: [{ ...HELD_ITEM, resource: { S: 'inventory:sku-2' } }] });

      // Act
      const records = await store().listHeld();

      // Assess
      expect(records.map((r) => r.resource)).toEqual([RESOURCE, 'inventory:sku-2']);
      expect(dynamoMock).toHaveReceivedCommandTimes(ScanCommand, 2);
      expect(dynamoMock).toHaveReceivedNthSpecificCommandWith(2, ScanCommand, {
        ExclusiveStartKey: { resource: { S: RESOURCE } },
        FilterExpression: 'attribute_exists(#owner)',
      });
    });
  });

  describe('Method: writeWithoutLease', () => {
    const write = (fence: number): Update => ({
      TableName: 'tenang-test-stock',
      Key: { sku: { S: 'sku-1' } },
      UpdateExpression: 'SET #fence = :t',
      ConditionExpression: 'attribute_not_exists(#fence) OR #fence < :t',
      ExpressionAttributeNames: { '#fence': 'fence' },
      ExpressionAttributeValues: { ':t': { N: String(fence) } },
    });

    function cancelled(reasons: CancellationReason[]): TransactionCanceledException {
      return new TransactionCanceledException({
        message: 'Transaction cancelled',
        $metadata: {},
        CancellationReasons: reasons,
      });
    }

    const CHECK_FAILED = 'ConditionalCheckFailed';

    it('when nothing holds the lease, it sends ONE TransactWriteItems: the lock fence advanced to now on no live lease and a lower fence, and the write with that fence', async () => {
      // Prepare
      dynamoMock.on(TransactWriteItemsCommand).resolves({});

      // Act
      const result = await store().writeWithoutLease({ resource: RESOURCE, nowMs: NOW_MS, write });

      // Assess
      expect(result).toEqual({ kind: 'written', fence: NOW_MS });
      expect(dynamoMock.calls()).toHaveLength(1);
      expect(dynamoMock).toHaveReceivedCommandWith(TransactWriteItemsCommand, {
        TransactItems: [
          {
            Update: {
              TableName: TABLE,
              Key: { resource: { S: RESOURCE } },
              UpdateExpression: 'SET #fence = :now',
              ConditionExpression:
                '(attribute_not_exists(#owner) OR #expiresAt < :now) AND ' +
                '(attribute_not_exists(#fence) OR #fence < :now)',
              ExpressionAttributeNames: { '#owner': 'owner', '#fence': 'fence', '#expiresAt': 'expiresAt' },
              ExpressionAttributeValues: { ':now': { N: String(NOW_MS) } },
              ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
            },
          },
          { Update: { ...write(NOW_MS), ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } },
        ],
      });
    });

    it('when a live lease holds the resource, it answers busy with the holder from the lock item', async () => {
      // Prepare: the write's own condition failed too; the lease decides.
      dynamoMock.on(TransactWriteItemsCommand).rejects(
        cancelled([
          { Code: CHECK_FAILED, Item: HELD_ITEM },
          { Code: CHECK_FAILED, Item: { sku: { S: 'sku-1' } } },
        ]),
      );

      // Act
      const result = await store().writeWithoutLease({ resource: RESOURCE, nowMs: NOW_MS, write });

      // Assess
      expect(result).toEqual({
        kind: 'busy',
        holder: {
          ownerToken: 'owner-a',
          fence: 1_900_000_000_001,
          acquiredAtMs: NOW_MS - 2_000,
          expiresAtMs: NOW_MS + 8_000,
        },
      });
    });

    it("when only the write's condition failed, it answers refused with that item as it was", async () => {
      // Prepare
      const stock = { sku: { S: 'sku-1' }, fence: { N: '5' } };
      const error = cancelled([{ Code: 'None' }, { Code: CHECK_FAILED, Item: stock }]);
      dynamoMock.on(TransactWriteItemsCommand).rejects(error);

      // Act
      const result = await store().writeWithoutLease({ resource: RESOURCE, nowMs: NOW_MS, write });

      // Assess
      expect(result).toEqual({ kind: 'refused', item: stock, cause: error });
    });

    it("when the lock's fence is not below the clock (its lease expired), it answers undecided and says why", async () => {
      // Prepare
      const ahead = { ...HELD_ITEM, fence: { N: String(NOW_MS + 5) }, expiresAt: { N: String(NOW_MS - 1) } };
      dynamoMock
        .on(TransactWriteItemsCommand)
        .rejects(cancelled([{ Code: CHECK_FAILED, Item: ahead }, { Code: 'None' }]));

      // Act
      const result = await store().writeWithoutLease({ resource: RESOURCE, nowMs: NOW_MS, write });

      // Assess
      expect(result).toEqual({
        kind: 'undecided',
        reason: `the lock's fence ${NOW_MS + 5} is not below the clock's ${NOW_MS}`,
      });
    });

    it("when a concurrent transaction conflicts, it answers undecided with the reasons' codes", async () => {
      // Prepare
      dynamoMock
        .on(TransactWriteItemsCommand)
        .rejects(cancelled([{ Code: 'TransactionConflict' }, { Code: 'None' }]));

      // Act
      const result = await store().writeWithoutLease({ resource: RESOURCE, nowMs: NOW_MS, write });

      // Assess
      expect(result).toEqual({
        kind: 'undecided',
        reason: 'transaction cancelled (TransactionConflict, None)',
      });
    });

    it('when DynamoDB throttles, it lets the SDK error through for the failure policy to classify', async () => {
      // Prepare
      dynamoMock
        .on(TransactWriteItemsCommand)
        .rejects(new ThrottlingException({ message: 'slow down', $metadata: {} }));

      // Act
      const attempt = store().writeWithoutLease({ resource: RESOURCE, nowMs: NOW_MS, write });

      // Assess
      await expect(attempt).rejects.toBeInstanceOf(ThrottlingException);
    });
  });
});
