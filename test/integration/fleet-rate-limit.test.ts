/**
 * The fleet-wide rate limit's record against moto's DynamoDB (R4): real conditional
 * UpdateItems on one item shared by several limiters, as instances of one consumer share it.
 */
import {
  CreateTableCommand,
  DeleteTableCommand,
  GetItemCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { DynamoDbRateStore } from '../../lib/adapters/aws/dynamodb-rate-store';
import { TABLE_KEYS } from '../../lib/config';
import { FleetRateLimit } from '../../lib/core/fleet-rate-limit';
import { TokenBucket, type TakeResult } from '../../lib/core/token-bucket';
import { dynamoClient, uniqueName } from '../helpers/aws';
import { countSdkCalls } from '../helpers/dynamodb-calls';
import { manualClock, type ManualClock } from '../helpers/manual-clock';

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

function instance(
  client: DynamoDBClient,
  key: string,
  clock: ManualClock,
  tableName = table,
): FleetRateLimit {
  return new FleetRateLimit({
    store: new DynamoDbRateStore(client, {
      tableName,
      keyAttribute: TABLE_KEYS.dedup.partitionKey,
      key,
      ttlAttribute: TABLE_KEYS.dedup.ttl,
      nowMs: () => clock.ms(),
    }),
    ratePerSecond: 50,
    burst: 10,
    clock,
    fallback: new TokenBucket({ ratePerSecond: 10, burst: 1, clock }),
  });
}

const takes = (l: FleetRateLimit, n: number, maxWaitMs: number): Promise<TakeResult[]> =>
  Promise.all(Array.from({ length: n }, () => l.take(maxWaitMs)));

describe('Class: DynamoDbRateStore (moto)', () => {
  it("when a batch takes its tokens from an idle limit, one conditional UpdateItem grants them all and the record holds the fleet's next arrival time", async () => {
    // Prepare
    const client = dynamoClient();
    const log = countSdkCalls(client);
    const clock = manualClock();
    const key = uniqueName('rate');

    try {
      // Act
      const results = await takes(instance(client, key, clock), 10, 1000);

      // Assess
      expect(results).toEqual(Array(10).fill({ granted: true, waitMs: 0 }));
      expect(log.calls()).toEqual(['UpdateItemCommand']);
      const { Item } = await dynamo.send(
        new GetItemCommand({
          TableName: table,
          Key: { [TABLE_KEYS.dedup.partitionKey]: { S: key } },
          ConsistentRead: true,
        }),
      );
      expect(Item?.['tat']).toEqual({ N: String(clock.ms() + 200) });
      expect(Number(Item?.[TABLE_KEYS.dedup.ttl]?.N)).toBeGreaterThan(clock.ms() / 1000);
    } finally {
      client.destroy();
    }
  });

  it('when three instances take at once, together they are granted no more than the burst now and the rate after', async () => {
    // Prepare
    const clock = manualClock();
    const key = uniqueName('rate');
    const fleet = [0, 1, 2].map(() => instance(dynamo, key, clock));

    // Act: 3 × 10 tokens, each waiting up to 200 ms.
    const results = (await Promise.all(fleet.map((l) => takes(l, 10, 200)))).flat();

    // Assess: 10 at once, then one every 20 ms up to 200 ms: 20 in all, the rest refused.
    const granted = results.filter((r): r is Extract<TakeResult, { granted: true }> => r.granted);
    expect(granted).toHaveLength(20);
    expect(granted.filter((r) => r.waitMs === 0)).toHaveLength(10);
    expect(
      granted
        .map((r) => r.waitMs)
        .sort((a, b) => a - b)
        .slice(10),
    ).toEqual([20, 40, 60, 80, 100, 120, 140, 160, 180, 200]);
    expect(results.filter((r) => !r.granted)).toHaveLength(10);
  });

  it('when its table cannot be reached, the instance answers from its own share', async () => {
    // Prepare
    const clock = manualClock();
    const l = instance(dynamo, uniqueName('rate'), clock, uniqueName('missing'));

    // Act
    const results = await takes(l, 2, 0);

    // Assess: the fallback bucket's one token, then a refusal.
    expect(results).toEqual([
      { granted: true, waitMs: 0 },
      { granted: false, retryAfterMs: 100 },
    ]);
  });
});
