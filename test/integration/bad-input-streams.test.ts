/**
 * The bad stream records of the corpus (test/fixtures/bad-input/stream-records.ts) through the
 * stream consumers against moto (real tables, their streams' real records) and Redis: each bad
 * record is delivered between the records of two orders that become PAID. The good records are
 * processed (cache keys fenced, follow-ups enqueued once); the bad one is logged and skipped
 * without a batch item failure that would hold the shard, except where failing is the design
 * (a PAID order whose follow-ups cannot be built: the mapping retries it, bisecting, then parks
 * it in the on-failure queue); and nothing else changes.
 */
import {
  CreateTableCommand,
  DeleteTableCommand,
  PutItemCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { marshall } from '@aws-sdk/util-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import type Redis from 'ioredis';
import type * as InvalidatorModule from '../../examples/reference/functions/cache-invalidator';
import type * as RelayModule from '../../examples/reference/functions/outbox-relay';
import { DynamoDbDedupStore } from '../../lib/adapters/aws/dynamodb-dedup-store';
import { DynamoDbOrderStore } from '../../examples/reference/domain/dynamodb-order-store';
import { stageConfig } from '../../lib/adapters/lambda-env';
import { connectRedis, type RedisConnection } from '../../lib/adapters/redis/connect';
import { RedisCache } from '../../lib/adapters/redis/redis-cache';
import { TABLE_KEYS } from '../../lib/config/tables';
import { REFERENCE_TABLE_KEYS } from '../../examples/reference/domain/tables';
import { cacheKeyspace, type CacheKeyspace } from '../../lib/core/cache-keys';
import { orderCacheKey } from '../../examples/reference/domain/order-cache';
import type { JobEnvelope } from '../../lib/core/envelope';
import type { Order } from '../../examples/reference/domain/order';
import {
  STREAM_RECORD_CASES,
  type StreamIds,
  type StreamRecordCase,
  type StreamWrite,
} from '../fixtures/bad-input';
import { dynamoClient, redisClient, sqsClient, uniqueName } from '../helpers/aws';
import { StreamTail, streamsClient } from '../helpers/dynamodb-stream';
import { captureLogs, type LogLine } from '../helpers/log-capture';
import { lambdaContext } from '../helpers/sqs-events';

jest.setTimeout(60_000);

const STAGE = 'it';
const SETTINGS = stageConfig(STAGE, process.env.AWS_REGION).stage.cache;
const CONTEXT = lambdaContext(15_000, 'bad-input-streams-test');

let invalidator: typeof InvalidatorModule;
let relay: typeof RelayModule;
let dynamo: DynamoDBClient;
let doc: DynamoDBDocumentClient;
let streams: DynamoDBStreamsClient;
let sqs: SQSClient;
let ordersTable: string;
/** A table of another entity (keys pk, sk) whose stream is wired to the consumers by mistake. */
let foreignTable: string;
let dedupTable: string;
let store: DynamoDbOrderStore;
let connection: RedisConnection;
let cache: RedisCache;
let admin: Redis;
const keyspaces: CacheKeyspace[] = [];
const queues: string[] = [];

function requireEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set: run through the jest integration project`);
  return value;
}

beforeAll(async () => {
  dynamo = dynamoClient();
  doc = DynamoDBDocumentClient.from(dynamo);
  streams = streamsClient();
  sqs = sqsClient();
  ordersTable = uniqueName('bad-stream-orders');
  foreignTable = uniqueName('bad-stream-customers');
  dedupTable = uniqueName('bad-stream-dedup');
  const stream = { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' } as const;
  await dynamo.send(
    new CreateTableCommand({
      TableName: ordersTable,
      AttributeDefinitions: [{ AttributeName: REFERENCE_TABLE_KEYS.orders.partitionKey, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: REFERENCE_TABLE_KEYS.orders.partitionKey, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
      StreamSpecification: stream,
    }),
  );
  await dynamo.send(
    new CreateTableCommand({
      TableName: foreignTable,
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      StreamSpecification: stream,
    }),
  );
  await dynamo.send(
    new CreateTableCommand({
      TableName: dedupTable,
      AttributeDefinitions: [{ AttributeName: TABLE_KEYS.dedup.partitionKey, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: TABLE_KEYS.dedup.partitionKey, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  store = new DynamoDbOrderStore(dynamo, ordersTable);
  // The modules' scope reads the environment, as in Lambda; the tests build their own handlers.
  const saved = { ...process.env };
  Object.assign(process.env, {
    TENANG_STAGE: STAGE,
    CACHE_AUTH: 'none',
    NOTIFICATION_SEND_QUEUE_URL: 'http://localhost/unused-notifications',
    INVENTORY_RESERVE_QUEUE_URL: 'http://localhost/unused-inventory',
    DEGRADE_FLAG: `/tenang/${STAGE}/flags/degrade`,
    DEDUP_TABLE: dedupTable,
  });
  try {
    invalidator = await import('../../examples/reference/functions/cache-invalidator');
    relay = await import('../../examples/reference/functions/outbox-relay');
  } finally {
    process.env = saved;
  }
  connection = connectRedis(
    { kind: 'url', url: requireEnv('REDIS_URL') },
    { commandTimeoutMs: SETTINGS.commandTimeoutMs },
  );
  cache = new RedisCache(connection);
  admin = redisClient();
});

afterAll(async () => {
  for (const keyspace of keyspaces) {
    const keys = await keysUnder(keyspace);
    if (keys.length > 0) await admin.del(...keys);
  }
  await admin?.quit();
  await connection?.close();
  for (const url of queues) await sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
  for (const table of [ordersTable, foreignTable, dedupTable]) {
    await dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
  }
  dynamo?.destroy();
  streams?.destroy();
  sqs?.destroy();
});

/** Every Redis key of `keyspace`, sorted. */
async function keysUnder(keyspace: CacheKeyspace): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, page] = await admin.scan(cursor, 'MATCH', `${keyspace.prefix}*`, 'COUNT', 500);
    cursor = next;
    keys.push(...page);
  } while (cursor !== '0');
  return keys.sort();
}

async function createQueue(prefix: string): Promise<string> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: uniqueName(prefix) }));
  if (QueueUrl === undefined) throw new Error('queue not created');
  queues.push(QueueUrl);
  return QueueUrl;
}

/** Every message in `queueUrl` as `type correlationId`, sorted (received and left in flight). */
async function drain(queueUrl: string): Promise<string[]> {
  const found: string[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
    );
    if (Messages.length === 0) return found.sort();
    for (const m of Messages) {
      const envelope = JSON.parse(m.Body ?? '{}') as JobEnvelope;
      found.push(`${envelope.type} ${envelope.correlationId}`);
    }
  }
}

/** Every item of the dedup table by key, as JSON. */
async function dedupRecords(): Promise<Map<string, string>> {
  const items = new Map<string, string>();
  let start: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(
      new ScanCommand({ TableName: dedupTable, ConsistentRead: true, ExclusiveStartKey: start }),
    );
    for (const item of page.Items ?? [])
      items.set(String(item[TABLE_KEYS.dedup.partitionKey]), JSON.stringify(item));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return items;
}

async function put(write: StreamWrite): Promise<void> {
  await dynamo.send(
    new PutItemCommand({
      TableName: write.table === 'orders' ? ordersTable : foreignTable,
      Item: marshall(write.item),
    }),
  );
}

function newOrder(orderId: string): Order {
  const now = new Date().toISOString();
  return {
    orderId,
    state: 'PENDING',
    version: 0,
    customerEmail: 'ana@example.com',
    lines: [{ sku: 'sku-1', quantity: 1 }],
    amountMinor: 1250,
    currency: 'EUR',
    createdAt: now,
    updatedAt: now,
  };
}

/** The batch of a case: the records of good order A, the case's record, those of good order B. */
interface StreamBatch {
  readonly ids: StreamIds;
  readonly good: readonly [string, string];
  readonly bad: DynamoDBRecord;
  readonly event: DynamoDBStreamEvent;
}

async function streamBatch(c: StreamRecordCase): Promise<StreamBatch> {
  const ids: StreamIds = { orderId: uniqueName('order'), customerId: uniqueName('customer') };
  const good = [uniqueName('order'), uniqueName('order')] as const;
  const setup = c.setup?.(ids);
  if (setup !== undefined) await put(setup);
  const tails = {
    orders: await StreamTail.open(dynamo, streams, ordersTable),
    foreign: await StreamTail.open(dynamo, streams, foreignTable),
  };
  const createAndPay = async (orderId: string): Promise<DynamoDBRecord[]> => {
    await store.create(newOrder(orderId));
    await store.transition(orderId, 'PENDING', 'PAID', 0, { paymentId: `pay-${orderId}` });
    return (await tails.orders.readAtLeast(2)).Records;
  };
  const before = await createAndPay(good[0]);
  const write = c.write(ids);
  await put(write);
  const [bad, ...more] = (await tails[write.table].readAtLeast(1)).Records;
  if (bad === undefined || more.length > 0)
    throw new Error(`the case wrote ${more.length + 1} stream records, not one`);
  const after = await createAndPay(good[1]);
  return { ids, good, bad, event: { Records: [...before, bad, ...after] } };
}

const sequenceNumberOf = (record: DynamoDBRecord): string => record.dynamodb?.SequenceNumber ?? '?';

/** The warn, error and critical lines. */
const problemLines = (logs: LogLine[]): LogLine[] =>
  logs.filter((l) => ['WARN', 'ERROR', 'CRITICAL'].includes(l.level));

describe('Bad stream records at the stream consumers (integration)', () => {
  it('when the corpus is read, every name is unique', () => {
    // Assess
    const names = STREAM_RECORD_CASES.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
  });

  describe.each(STREAM_RECORD_CASES)('when the batch holds [order A, $name, order B]', (c) => {
    let batch: StreamBatch;

    beforeAll(async () => {
      batch = await streamBatch(c);
    });

    it(`Function: cache-invalidator handler — the bad record is ${c.expect.invalidator}, both orders' keys are fenced, no record fails`, async () => {
      // Prepare
      const keyspace = cacheKeyspace(uniqueName('bad'));
      keyspaces.push(keyspace);
      const handle = invalidator.createHandler({
        cache,
        keyspace,
        settings: SETTINGS,
        logger: new Logger({ serviceName: invalidator.SERVICE_NAME, logLevel: 'INFO' }),
      });

      // Act
      const { result: response, logs } = await captureLogs(() => handle(batch.event, CONTEXT));

      // Assess
      expect(response.batchItemFailures).toEqual([]);
      const fenced = c.expect.invalidator === 'invalidated' ? [...batch.good, batch.ids.orderId] : batch.good;
      expect(await keysUnder(keyspace)).toEqual(fenced.map((id) => orderCacheKey(keyspace, id)).sort());
      for (const orderId of fenced) {
        expect(await cache.get(orderCacheKey(keyspace, orderId))).toMatchObject({
          kind: 'tombstone',
          version: 1,
        });
      }
      const sequenceNumber = sequenceNumberOf(batch.bad);
      switch (c.expect.invalidator) {
        case 'skipped-unknown-entity':
          expect(problemLines(logs)).toEqual([
            expect.objectContaining({
              level: 'WARN',
              message: 'stream record of an unknown entity; skipped',
              sequenceNumber,
              reason: expect.stringMatching(/^no orderId key \(keys: /) as unknown,
            }),
          ]);
          break;
        case 'skipped-invalid-image':
          expect(problemLines(logs)).toEqual([
            expect.objectContaining({
              level: 'ERROR',
              message: 'order image without a valid orderId and version; skipped',
              orderId: batch.ids.orderId,
              correlationId: batch.ids.orderId,
              sequenceNumber,
            }),
          ]);
          break;
        case 'invalidated':
          expect(problemLines(logs)).toEqual([]);
          expect(logs).toContainEqual(
            expect.objectContaining({
              message: 'cache keys invalidated',
              orderId: batch.ids.orderId,
              sequenceNumber,
            }),
          );
      }
    });

    it(`Function: outbox-relay handler — the bad record is ${c.expect.relay}, both orders' follow-ups are enqueued once`, async () => {
      // Prepare
      const notifications = await createQueue('bad-stream-notify');
      const reservations = await createQueue('bad-stream-reserve');
      const metrics = new Metrics({ namespace: 'tenang', serviceName: relay.SERVICE_NAME });
      jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
      const handle = relay.createHandler({
        dedup: new DynamoDbDedupStore(dynamo, dedupTable),
        enqueue: relay.sqsEnqueue(sqs, {
          'notification.send': notifications,
          'inventory.reserve': reservations,
        }),
        criticalityOf: relay.criticalityFrom(stageConfig(STAGE, process.env.AWS_REGION)),
        isDegraded: () => Promise.resolve(false),
        functionTimeoutSeconds: 15,
        logger: new Logger({ serviceName: relay.SERVICE_NAME, logLevel: 'INFO' }),
        metrics,
      });
      const dedupBefore = await dedupRecords();

      // Act
      const { result: response, logs } = await captureLogs(() => handle(batch.event, CONTEXT));

      // Assess
      const sequenceNumber = sequenceNumberOf(batch.bad);
      expect(response.batchItemFailures).toEqual(
        c.expect.relay === 'failed' ? [{ itemIdentifier: sequenceNumber }] : [],
      );
      expect(await drain(notifications)).toEqual(batch.good.map((id) => `notification.send ${id}`).sort());
      expect(await drain(reservations)).toEqual(batch.good.map((id) => `inventory.reserve ${id}`).sort());
      const dedupAfter = await dedupRecords();
      const claimed = [...dedupAfter.keys()].filter((k) => dedupBefore.get(k) !== dedupAfter.get(k));
      expect(claimed).toHaveLength(4);
      for (const key of claimed) expect(batch.good.some((id) => key.includes(`:${id}:`))).toBe(true);
      switch (c.expect.relay) {
        case 'skipped-unknown-entity':
          expect(problemLines(logs)).toEqual([
            expect.objectContaining({
              level: 'WARN',
              message: 'stream record of an unknown entity; skipped',
              sequenceNumber,
              reason: expect.stringMatching(/^no orderId key \(keys: /) as unknown,
            }),
          ]);
          break;
        case 'ignored':
          expect(problemLines(logs)).toEqual([]);
          break;
        case 'failed':
          expect(problemLines(logs)).toEqual([
            expect.objectContaining({
              level: 'ERROR',
              message: 'order became PAID but its image is not a valid order; the record fails',
              orderId: batch.ids.orderId,
              correlationId: batch.ids.orderId,
              sequenceNumber,
              problems: expect.arrayContaining([
                expect.stringMatching(/^customerEmail: /),
                expect.stringMatching(/^lines: /),
              ]) as unknown,
            }),
          ]);
      }
    });
  });
});
