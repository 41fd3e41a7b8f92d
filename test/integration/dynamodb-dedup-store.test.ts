/**
 * The dedup store against moto's DynamoDB (Q1): a real conditional PutItem whose failed condition
 * returns the old record (ReturnValuesOnConditionCheckFailure), so one call tells 'done' from
 * 'in-flight'. Time is a manual clock, so "the claim expired" needs no sleeping.
 */
import {
  CreateTableCommand,
  DeleteTableCommand,
  GetItemCommand,
  PutItemCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { DynamoDbDedupStore } from '../../lib/adapters/aws/dynamodb-dedup-store';
import { TABLE_KEYS } from '../../lib/config';
import { dynamoClient, uniqueName } from '../helpers/aws';
import { countSdkCalls } from '../helpers/dynamodb-calls';
import { manualClock } from '../helpers/manual-clock';

jest.setTimeout(30_000);

let dynamo: DynamoDBClient;
let table: string;

beforeAll(async () => {
  dynamo = dynamoClient();
  table = uniqueName('dedup');
  await dynamo.send(
    new CreateTableCommand({
      TableName: table,
      AttributeDefinitions: [{ AttributeName: TABLE_KEYS.dedup.partitionKey, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: TABLE_KEYS.dedup.partitionKey, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
});

afterAll(async () => {
  if (table !== undefined)
    await dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
  dynamo?.destroy();
});

async function record(key: string): Promise<Record<string, unknown> | undefined> {
  const { Item } = await dynamo.send(
    new GetItemCommand({
      TableName: table,
      Key: { [TABLE_KEYS.dedup.partitionKey]: { S: key } },
      ConsistentRead: true,
    }),
  );
  return Item;
}

describe('Class: DynamoDbDedupStore (moto)', () => {
  it('when a key is claimed, it is in flight for the claim TTL, then claimable again', async () => {
    // Prepare
    const clock = manualClock();
    const store = new DynamoDbDedupStore(dynamo, table, clock);
    const key = uniqueName('key');
    const nowEpoch = Math.floor(clock.ms() / 1000);

    // Act
    const first = await store.claim(key, 15);
    clock.advance(15_000);
    const within = await store.claim(key, 15);
    clock.advance(1_000);
    const after = await store.claim(key, 15);

    // Assess
    expect([first, within, after]).toEqual(['claimed', 'in-flight', 'claimed']);
    expect(await record(key)).toEqual({
      dedupKey: { S: key },
      status: { S: 'in-flight' },
      expiration: { N: String(nowEpoch + 16 + 15) },
    });
  });

  it('when a claim is confirmed, every later claim within the long TTL is done', async () => {
    // Prepare
    const clock = manualClock();
    const store = new DynamoDbDedupStore(dynamo, table, clock);
    const key = uniqueName('key');
    await store.claim(key, 15);

    // Act
    await store.confirm(key, 86_400);
    clock.advance(3_600_000);
    const outcome = await store.claim(key, 15);

    // Assess
    expect(outcome).toBe('done');
    expect((await record(key))?.status).toEqual({ S: 'done' });
  });

  it('when a claim is released, the key can be claimed at once', async () => {
    // Prepare
    const store = new DynamoDbDedupStore(dynamo, table, manualClock());
    const key = uniqueName('key');
    await store.claim(key, 15);

    // Act
    await store.release(key);
    const outcome = await store.claim(key, 15);

    // Assess
    expect(outcome).toBe('claimed');
  });

  it('when a claim names its owner, only the same owner takes it over while it is in flight, and nobody once it is done', async () => {
    // Prepare
    const store = new DynamoDbDedupStore(dynamo, table, manualClock());
    const key = uniqueName('key');
    await store.claim(key, 15, 'stream-record:1');

    // Act
    const byOther = await store.claim(key, 15, 'stream-record:2');
    const anonymous = await store.claim(key, 15);
    const bySame = await store.claim(key, 15, 'stream-record:1');
    await store.confirm(key, 3600);
    const sameAfterDone = await store.claim(key, 15, 'stream-record:1');

    // Assess
    expect([byOther, anonymous, bySame, sameAfterDone]).toEqual([
      'in-flight',
      'in-flight',
      'claimed',
      'done',
    ]);
    expect((await record(key))?.status).toEqual({ S: 'done' });
  });

  it('when a record was written before statuses existed, it counts as done', async () => {
    // Prepare
    const clock = manualClock();
    const key = uniqueName('key');
    await dynamo.send(
      new PutItemCommand({
        TableName: table,
        Item: { dedupKey: { S: key }, expiration: { N: String(Math.floor(clock.ms() / 1000) + 600) } },
      }),
    );

    // Act
    const outcome = await new DynamoDbDedupStore(dynamo, table, clock).claim(key, 15);

    // Assess
    expect(outcome).toBe('done');
  });

  it('when the key is held, telling done from in-flight costs one call', async () => {
    // Prepare
    const client = dynamoClient();
    const log = countSdkCalls(client);
    const store = new DynamoDbDedupStore(client, table, manualClock());
    const key = uniqueName('key');
    await store.claim(key, 15);
    log.reset();

    try {
      // Act
      const outcome = await store.claim(key, 15);

      // Assess
      expect(outcome).toBe('in-flight');
      expect(log.calls()).toEqual(['PutItemCommand']);
    } finally {
      client.destroy();
    }
  });
  it('when a batch confirms its claims at once, they go in a few BatchWriteItems, every record done, each caller answered', async () => {
    // Prepare
    const client = dynamoClient();
    const log = countSdkCalls(client);
    const clock = manualClock();
    const store = new DynamoDbDedupStore(client, table, clock);
    const keys = Array.from({ length: 12 }, () => uniqueName('key'));
    await Promise.all(keys.map((key) => store.claim(key, 15)));
    log.reset();

    try {
      // Act: the same key twice in one batch as well (BatchWriteItem refuses a key named twice).
      await Promise.all([...keys, keys[0] ?? ''].map((key) => store.confirm(key, 86_400)));

      // Assess: the first alone, the others together while it was written.
      expect(log.calls()).toEqual(['PutItemCommand', 'BatchWriteItemCommand']);
      for (const key of keys) {
        const item = await record(key);
        expect(item?.['status']).toEqual({ S: 'done' });
        expect(item?.[TABLE_KEYS.dedup.ttl]).toEqual({ N: String(Math.floor(clock.ms() / 1000) + 86_400) });
      }
      expect(await store.claim(keys[5] ?? '', 15)).toBe('done');
    } finally {
      client.destroy();
    }
  });

  it('when a batched confirm fails, every caller of that batch is told', async () => {
    // Prepare: a table that does not exist.
    const store = new DynamoDbDedupStore(dynamo, uniqueName('missing'), manualClock());

    // Act
    const outcomes = await Promise.allSettled(['a', 'b', 'c'].map((key) => store.confirm(key, 60)));

    // Assess
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected']);
  });
});
