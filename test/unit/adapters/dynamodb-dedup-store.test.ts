import { ConditionalCheckFailedException, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  PutCommand,
  type PutCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { DynamoDbDedupStore } from '../../../lib/adapters/aws/dynamodb-dedup-store';

const TABLE = 'tenang-test-dedup';
const NOW = new Date('2030-06-01T12:00:00.000Z');
const NOW_EPOCH = Math.floor(NOW.getTime() / 1000);

const docMock = mockClient(DynamoDBDocumentClient);

/** Items of the fake table, by dedup key. */
const items = new Map<string, Record<string, unknown>>();

/**
 * Evaluates the condition the store sends, the way DynamoDB would, for the two forms it may use:
 * `attribute_not_exists(#name)` and `#name < :value`, joined by OR; no condition always holds.
 * Anything else fails the test, so a changed condition is noticed rather than waved through.
 */
function conditionHolds(input: PutCommandInput, existing: Record<string, unknown> | undefined): boolean {
  const names = input.ExpressionAttributeNames ?? {};
  const values = input.ExpressionAttributeValues ?? {};
  const nameOf = (token: string): string => names[token] ?? token;
  if (input.ConditionExpression === undefined) return true;
  return input.ConditionExpression.split(/\s+OR\s+/).some((clause) => {
    const notExists = /^attribute_not_exists\((#\w+)\)$/.exec(clause.trim());
    if (notExists) return existing === undefined || !(nameOf(notExists[1] as string) in existing);
    const lessThan = /^(#\w+)\s*<\s*(:\w+)$/.exec(clause.trim());
    if (lessThan) {
      const attribute = existing?.[nameOf(lessThan[1] as string)];
      const value = values[lessThan[2] as string];
      return typeof attribute === 'number' && typeof value === 'number' && attribute < value;
    }
    throw new Error(`the fake table does not understand the condition clause "${clause}"`);
  });
}

/** The exception DynamoDB raises for a failed condition, carrying `item` the way the SDK does (marshalled). */
function conditionFailed(item?: Record<string, unknown>): ConditionalCheckFailedException {
  return new ConditionalCheckFailedException({
    message: 'The conditional request failed',
    $metadata: {},
    Item: item === undefined ? undefined : marshall(item),
  });
}

/**
 * Serves PutCommand from `items`, honoring the condition like DynamoDB, and returning the old
 * item on a failed condition only when ReturnValuesOnConditionCheckFailure asks for it.
 */
function serveTable(): void {
  docMock.on(PutCommand).callsFake((input: PutCommandInput) => {
    const item = input.Item as Record<string, unknown>;
    const key = item.dedupKey as string;
    const existing = items.get(key);
    if (!conditionHolds(input, existing)) {
      throw conditionFailed(input.ReturnValuesOnConditionCheckFailure === 'ALL_OLD' ? existing : undefined);
    }
    items.set(key, item);
    return {};
  });
}

/** A store whose clock reads `now`. */
function storeAt(now: Date): DynamoDbDedupStore {
  return new DynamoDbDedupStore(new DynamoDBClient({ region: 'eu-west-1' }), TABLE, () => now);
}

beforeEach(() => {
  docMock.reset();
  items.clear();
});

describe('Class: DynamoDbDedupStore', () => {
  describe('Method: claim', () => {
    it('when the key is new, it claims it in flight with one conditional put that returns the old item on failure', async () => {
      // Prepare
      serveTable();

      // Act
      const outcome = await storeAt(NOW).claim('order:ord-1:create', 600);

      // Assess
      expect(outcome).toBe('claimed');
      expect(docMock).toHaveReceivedCommandTimes(PutCommand, 1);
      expect(docMock).toHaveReceivedCommandWith(PutCommand, {
        TableName: TABLE,
        Item: { dedupKey: 'order:ord-1:create', status: 'in-flight', expiration: NOW_EPOCH + 600 },
        ConditionExpression: 'attribute_not_exists(#k) OR #ttl < :now',
        ExpressionAttributeNames: { '#k': 'dedupKey', '#ttl': 'expiration' },
        ExpressionAttributeValues: { ':now': NOW_EPOCH },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
    });

    it('when another attempt holds an unexpired in-flight claim, it is in-flight and the claim is kept', async () => {
      // Prepare
      serveTable();
      await storeAt(NOW).claim('order:ord-1:create', 600);

      // Act
      const outcome = await storeAt(new Date(NOW.getTime() + 599_000)).claim('order:ord-1:create', 600);

      // Assess
      expect(outcome).toBe('in-flight');
      expect(docMock).toHaveReceivedCommandTimes(PutCommand, 2);
      expect(items.get('order:ord-1:create')).toEqual({
        dedupKey: 'order:ord-1:create',
        status: 'in-flight',
        expiration: NOW_EPOCH + 600,
      });
    });

    it('when the key was confirmed and has not expired, it is done', async () => {
      // Prepare
      serveTable();
      const store = storeAt(NOW);
      await store.claim('order:ord-1:create', 15);
      await store.confirm('order:ord-1:create', 86_400);

      // Act
      const outcome = await storeAt(new Date(NOW.getTime() + 3_600_000)).claim('order:ord-1:create', 15);

      // Assess
      expect(outcome).toBe('done');
      expect(items.get('order:ord-1:create')).toEqual({
        dedupKey: 'order:ord-1:create',
        status: 'done',
        expiration: NOW_EPOCH + 86_400,
      });
    });

    it.each([
      ['in-flight', { dedupKey: 'k', status: 'in-flight', expiration: NOW_EPOCH + 15 }, 'in-flight'],
      ['done', { dedupKey: 'k', status: 'done', expiration: NOW_EPOCH + 600 }, 'done'],
      ['without a status (written before statuses)', { dedupKey: 'k', expiration: NOW_EPOCH + 600 }, 'done'],
    ] as const)(
      'when the failed condition returns a record %s, it reads the claim from it',
      async (_label, old, expected) => {
        // Prepare
        docMock.on(PutCommand).rejects(conditionFailed(old));

        // Act
        const outcome = await storeAt(NOW).claim('k', 15);

        // Assess
        expect(outcome).toBe(expected);
      },
    );

    it('when the failed condition returns no record, it fails loudly rather than guess done or in flight', async () => {
      // Prepare
      docMock.on(PutCommand).rejects(conditionFailed());

      // Act
      const claim = storeAt(NOW).claim('k', 15);

      // Assess
      await expect(claim).rejects.toThrow('dedup claim of k failed its condition but returned no record');
    });

    it('when the record holds an unknown status, it fails loudly', async () => {
      // Prepare
      docMock
        .on(PutCommand)
        .rejects(conditionFailed({ dedupKey: 'k', status: 'sent', expiration: NOW_EPOCH }));

      // Act
      const claim = storeAt(NOW).claim('k', 15);

      // Assess
      await expect(claim).rejects.toThrow('dedup record k has an unknown status "sent"');
    });

    it('when the record has expired but TTL has not deleted it yet, the condition accepts it and it claims again', async () => {
      // Prepare: TTL deletes up to days late; a dead attempt's claim expired one second ago.
      serveTable();
      items.set('order:ord-1:create', {
        dedupKey: 'order:ord-1:create',
        status: 'in-flight',
        expiration: NOW_EPOCH - 1,
      });

      // Act
      const outcome = await storeAt(NOW).claim('order:ord-1:create', 600);

      // Assess
      expect(outcome).toBe('claimed');
      expect(items.get('order:ord-1:create')).toEqual({
        dedupKey: 'order:ord-1:create',
        status: 'in-flight',
        expiration: NOW_EPOCH + 600,
      });
    });

    it('when the record expires exactly now, it still holds', async () => {
      // Prepare
      serveTable();
      items.set('order:ord-1:create', {
        dedupKey: 'order:ord-1:create',
        status: 'done',
        expiration: NOW_EPOCH,
      });

      // Act
      const outcome = await storeAt(NOW).claim('order:ord-1:create', 600);

      // Assess
      expect(outcome).toBe('done');
    });

    it('when DynamoDB fails otherwise, it lets the error propagate', async () => {
      // Prepare
      const throttled = Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' });
      docMock.on(PutCommand).rejects(throttled);

      // Act
      const claim = storeAt(NOW).claim('order:ord-1:create', 600);

      // Assess
      await expect(claim).rejects.toBe(throttled);
    });

    it('when no clock is given, it uses the current time', async () => {
      // Prepare
      jest.useFakeTimers({ now: NOW });
      serveTable();

      try {
        // Act
        await new DynamoDbDedupStore(new DynamoDBClient({ region: 'eu-west-1' }), TABLE).claim('k', 60);

        // Assess
        expect(docMock).toHaveReceivedCommandWith(PutCommand, {
          Item: { dedupKey: 'k', status: 'in-flight', expiration: NOW_EPOCH + 60 },
          ExpressionAttributeValues: { ':now': NOW_EPOCH },
        });
      } finally {
        jest.useRealTimers();
      }
    });
  });

  describe('Method: release', () => {
    it('when a claim is released, it deletes the record by key so the key can be claimed again', async () => {
      // Prepare
      serveTable();
      docMock.on(DeleteCommand).callsFake((input: { Key: { dedupKey: string } }) => {
        items.delete(input.Key.dedupKey);
        return {};
      });
      const store = storeAt(NOW);
      await store.claim('order:ord-1:create', 600);

      // Act
      await store.release('order:ord-1:create');
      const again = await store.claim('order:ord-1:create', 600);

      // Assess
      expect(docMock).toHaveReceivedCommandWith(DeleteCommand, {
        TableName: TABLE,
        Key: { dedupKey: 'order:ord-1:create' },
      });
      expect(again).toBe('claimed');
    });
  });
});
