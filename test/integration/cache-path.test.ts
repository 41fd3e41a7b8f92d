/**
 * The cache path end to end against moto and Redis: orders written to a real DynamoDB table with
 * a stream, the stream's REAL records delivered to the cache invalidator, reads through the order
 * reader. Covers C1 (cache-aside, versioned entries), C2 (stream → invalidation), C3 (no stale
 * value survives an invalidation, including a reader that loaded the old version), C5 (Redis
 * down or slow: reads bypass to DynamoDB, invalidations retry and converge).
 */
import {
  CreateTableCommand,
  DeleteItemCommand,
  DeleteTableCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  DynamoDBBatchResponse,
  DynamoDBStreamEvent,
} from 'aws-lambda';
import Redis from 'ioredis';
import type * as InvalidatorModule from '../../examples/reference/functions/cache-invalidator';
import type * as ReaderModule from '../../examples/reference/functions/order-reader';
import { DynamoDbOrderStore } from '../../examples/reference/domain/dynamodb-order-store';
import { stageConfig } from '../../lib/adapters/lambda-env';
import { connectRedis, type RedisConnection } from '../../lib/adapters/redis/connect';
import { RedisCache } from '../../lib/adapters/redis/redis-cache';
import { cacheKeyspace, type CacheKeyspace } from '../../lib/core/cache-keys';
import { orderCacheKey } from '../../examples/reference/domain/order-cache';
import type { Order } from '../../examples/reference/domain/order';
import type { OrderStore } from '../../examples/reference/domain/ports';
import { pollUntil } from '../../lib/local/poll';
import { dynamoClient, redisClient, uniqueName } from '../helpers/aws';
import { StreamTail, streamsClient } from '../helpers/dynamodb-stream';
import { startOwnRedis, type OwnRedis } from '../helpers/redis-server';
import { lambdaContext, runningLambdaContext } from '../helpers/sqs-events';

jest.setTimeout(60_000);

const STAGE = 'it';
const SETTINGS = stageConfig(STAGE, process.env.AWS_REGION).stage.cache;
const CONTEXT = lambdaContext(10_000, 'cache-path-test');

type Reader = (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyStructuredResultV2>;
type Invalidator = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>;

let reader: typeof ReaderModule;
let invalidator: typeof InvalidatorModule;
let dynamo: DynamoDBClient;
let streams: DynamoDBStreamsClient;
let tableName: string;
let store: DynamoDbOrderStore;
let keyspace: CacheKeyspace;
let connection: RedisConnection;
let cache: RedisCache;
let admin: Redis;

function requireEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set: run through the jest integration project`);
  return value;
}

beforeAll(async () => {
  dynamo = dynamoClient();
  streams = streamsClient();
  tableName = uniqueName('it-cache-orders');
  await dynamo.send(
    new CreateTableCommand({
      TableName: tableName,
      AttributeDefinitions: [{ AttributeName: 'orderId', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'orderId', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
    }),
  );
  store = new DynamoDbOrderStore(dynamo, tableName);
  // A keyspace of this run only: the shared Redis is never flushed.
  keyspace = cacheKeyspace(uniqueName('itc'));
  const saved = { ...process.env };
  Object.assign(process.env, { TENANG_STAGE: STAGE, ORDERS_TABLE: tableName, CACHE_AUTH: 'none' });
  try {
    reader = await import('../../examples/reference/functions/order-reader');
    invalidator = await import('../../examples/reference/functions/cache-invalidator');
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
  await cache.evictByPrefix(keyspace.prefix);
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${keyspace.prefix}*`, 'COUNT', 500);
    cursor = next;
    if (keys.length > 0) await admin.del(...keys);
  } while (cursor !== '0');
  await admin.quit();
  await connection.close();
  await dynamo.send(new DeleteTableCommand({ TableName: tableName }));
  dynamo.destroy();
  streams.destroy();
});

function silentMetrics(): Metrics {
  const metrics = new Metrics({ namespace: 'tenang', serviceName: 'order-reader' });
  jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
  return metrics;
}

function newReader(options: { cache?: RedisCache; orders?: Pick<OrderStore, 'get'> } = {}): Reader {
  const handle = reader.createHandler({
    cache: options.cache ?? cache,
    orders: options.orders ?? store,
    keyspace,
    settings: SETTINGS,
    logger: new Logger({ serviceName: 'order-reader', logLevel: 'SILENT' }),
    metrics: silentMetrics(),
  });
  return (event) => handle(event, CONTEXT);
}

function newInvalidator(target: RedisCache = cache): Invalidator {
  const handle = invalidator.createHandler({
    cache: target,
    keyspace,
    settings: SETTINGS,
    logger: new Logger({ serviceName: 'cache-invalidator', logLevel: 'SILENT' }),
  });
  // Each invocation has 2.5 s, running down: its ride-out of an unavailable Redis (RIDE_OUT) lasts ~0.5 s.
  return (event) => handle(event, runningLambdaContext(2_500, 'cache-path-test'));
}

function newOrder(orderId: string): Order {
  const now = new Date().toISOString();
  return {
    orderId,
    state: 'PENDING',
    version: 0,
    customerEmail: 'buyer@example.com',
    lines: [{ sku: 'sku-a', quantity: 1 }],
    amountMinor: 1250,
    currency: 'EUR',
    createdAt: now,
    updatedAt: now,
  };
}

function get(orderId: string): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: 'GET /orders/{id}',
    rawPath: `/orders/${orderId}`,
    rawQueryString: '',
    headers: {},
    pathParameters: { id: orderId },
    isBase64Encoded: false,
    requestContext: {
      accountId: '123456789012',
      apiId: 'local',
      domainName: 'localhost',
      domainPrefix: 'local',
      http: {
        method: 'GET',
        path: `/orders/${orderId}`,
        protocol: 'HTTP/1.1',
        sourceIp: '127.0.0.1',
        userAgent: 'jest',
      },
      requestId: uniqueName('req'),
      routeKey: 'GET /orders/{id}',
      stage: '$default',
      time: new Date().toISOString(),
      timeEpoch: Date.now(),
    },
  };
}

/** Status, X-Cache and the order's version and state of a response. */
function seen(response: APIGatewayProxyStructuredResultV2): {
  status: number | undefined;
  xCache: unknown;
  version?: number;
  state?: string;
} {
  const xCache = response.headers?.[reader.CACHE_HEADER];
  if (response.statusCode !== 200) return { status: response.statusCode, xCache };
  const body = JSON.parse(response.body ?? '{}') as Order;
  return { status: 200, xCache, version: body.version, state: body.state };
}

describe('Cache path: stream invalidation (C1, C2, C3)', () => {
  it('when an order changes, its stream record invalidates the cached order and the next read returns the new version', async () => {
    // Prepare
    const id = uniqueName('ord');
    const read = newReader();
    const tail = await StreamTail.open(dynamo, streams, tableName);
    await store.create(newOrder(id));
    const first = seen(await read(get(id)));
    const second = seen(await read(get(id)));
    await store.transition(id, 'PENDING', 'PAID', 0, { paymentId: 'pay-1' });
    const beforeInvalidation = seen(await read(get(id)));

    // Act
    const event = await tail.readAtLeast(2);
    const response = await newInvalidator()(event);
    const afterInvalidation = seen(await read(get(id)));
    const again = seen(await read(get(id)));

    // Assess
    expect(event.Records.map((r) => r.eventName)).toEqual(['INSERT', 'MODIFY']);
    expect(response.batchItemFailures).toEqual([]);
    expect(first).toEqual({ status: 200, xCache: 'miss', version: 0, state: 'PENDING' });
    expect(second).toEqual({ status: 200, xCache: 'hit', version: 0, state: 'PENDING' });
    // The window C2 closes: until the invalidator runs, the cached version is served.
    expect(beforeInvalidation).toEqual({ status: 200, xCache: 'hit', version: 0, state: 'PENDING' });
    expect(afterInvalidation).toEqual({ status: 200, xCache: 'miss', version: 1, state: 'PAID' });
    expect(again).toEqual({ status: 200, xCache: 'hit', version: 1, state: 'PAID' });
  });

  it('when a reader loaded the old version before the change and writes it back after the invalidation, the write-back is refused and later reads never see the old version', async () => {
    // Prepare
    const id = uniqueName('ord');
    const key = orderCacheKey(keyspace, id);
    const tail = await StreamTail.open(dynamo, streams, tableName);
    await store.create(newOrder(id));
    let loadedVersion: number | undefined;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    // This reader reads DynamoDB, then stalls (a GC pause, a slow network) before its write-back.
    const slowReader = newReader({
      orders: {
        get: async (orderId) => {
          const order = await store.get(orderId);
          loadedVersion = order?.version;
          await gate;
          return order;
        },
      },
    });
    const stalled = slowReader(get(id));
    await pollUntil(async () => (loadedVersion === 0 ? true : undefined), {
      description: 'the slow reader to load version 0',
      deadlineMs: 5_000,
      intervalMs: 10,
    });

    // Act
    await store.transition(id, 'PENDING', 'PAID', 0, { paymentId: 'pay-2' });
    await newInvalidator()(await tail.readAtLeast(2));
    release();
    const slowResult = seen(await stalled);
    const entryAfterWriteBack = await cache.get(key);
    const readers = [newReader(), newReader(), newReader()];
    const later = await Promise.all(Array.from({ length: 30 }, (_, i) => readers[i % 3]?.(get(id))));

    // Assess
    // The stalled read overlapped the change, so returning the version it loaded is allowed...
    expect(slowResult).toEqual({ status: 200, xCache: 'miss', version: 0, state: 'PENDING' });
    // ...but its write-back was refused by the tombstone the invalidation left.
    expect(entryAfterWriteBack).toEqual({ kind: 'tombstone', version: 1 });
    for (const response of later) {
      expect(seen(response as APIGatewayProxyStructuredResultV2)).toMatchObject({
        status: 200,
        version: 1,
        state: 'PAID',
      });
    }
  });

  it('when an order is removed, its key is fenced past the removed version and the reader answers 404', async () => {
    // Prepare
    const id = uniqueName('ord');
    const read = newReader();
    await store.create(newOrder(id));
    await read(get(id));
    const tail = await StreamTail.open(dynamo, streams, tableName);
    await dynamo.send(new DeleteItemCommand({ TableName: tableName, Key: { orderId: { S: id } } }));

    // Act
    const event = await tail.readAtLeast(1);
    await newInvalidator()(event);
    const response = seen(await read(get(id)));

    // Assess
    expect(event.Records.map((r) => r.eventName)).toEqual(['REMOVE']);
    expect(await cache.get(orderCacheKey(keyspace, id))).toEqual({ kind: 'tombstone', version: 1 });
    expect(response).toEqual({ status: 404, xCache: 'miss' });
  });
});

describe('Cache path: Redis down or slow (C5)', () => {
  let own: OwnRedis | undefined;
  let ownConnection: RedisConnection | undefined;
  let ownCache: RedisCache;
  let ownAdmin: Redis | undefined;

  beforeEach(async () => {
    own = await startOwnRedis();
    ownConnection = connectRedis(
      { kind: 'url', url: own.url },
      { commandTimeoutMs: SETTINGS.commandTimeoutMs },
    );
    const conn = ownConnection;
    ownCache = new RedisCache(conn);
    ownAdmin = new Redis(own.url, { maxRetriesPerRequest: 1 });
  });

  afterEach(async () => {
    ownAdmin?.disconnect();
    await ownConnection?.close();
    await own?.stop();
    own = undefined;
  });

  it('when its Redis is stopped, reads are served from DynamoDB with X-Cache: bypass, never stale, and the invalidation fails so it is retried', async () => {
    // Prepare
    const id = uniqueName('ord');
    const read = newReader({ cache: ownCache });
    const tail = await StreamTail.open(dynamo, streams, tableName);
    await store.create(newOrder(id));
    await read(get(id));
    const cached = seen(await read(get(id)));
    await own?.stop();

    // Act
    const t0 = Date.now();
    const whileDown = seen(await read(get(id)));
    const bypassMs = Date.now() - t0;
    await store.transition(id, 'PENDING', 'PAID', 0, { paymentId: 'pay-3' });
    const afterChange = seen(await read(get(id)));
    const event = await tail.readAtLeast(2);
    const invalidation = await newInvalidator(ownCache)(event);

    // Assess
    expect(cached.xCache).toBe('hit');
    expect(whileDown).toEqual({ status: 200, xCache: 'bypass', version: 0, state: 'PENDING' });
    expect(afterChange).toEqual({ status: 200, xCache: 'bypass', version: 1, state: 'PAID' });
    expect(bypassMs).toBeLessThan(1_000);
    // Each record rides out the outage on its own backoff, so they fail in any order.
    expect(invalidation.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(
      event.Records.map((r) => r.dynamodb?.SequenceNumber).sort(),
    );
  });

  it('when Redis stops answering in time while it still holds the old value, reads bypass, and the retried invalidation converges so the old value does not survive', async () => {
    // Prepare
    const id = uniqueName('ord');
    const read = newReader({ cache: ownCache });
    const tail = await StreamTail.open(dynamo, streams, tableName);
    await store.create(newOrder(id));
    await read(get(id));
    await store.transition(id, 'PENDING', 'PAID', 0, { paymentId: 'pay-4' });
    const event = await tail.readAtLeast(2);
    const pauseMs = 1_500;

    // Act
    // Redis keeps its data but answers nothing (a partition, a failover): commands time out.
    await ownAdmin?.client('PAUSE', pauseMs, 'ALL');
    const whilePaused = seen(await read(get(id)));
    const failed = await newInvalidator(ownCache)(event);
    await pollUntil(
      async () =>
        (await ownCache
          .get('probe')
          .then(() => true)
          .catch(() => false))
          ? true
          : undefined,
      {
        description: 'Redis to answer again',
        deadlineMs: 10_000,
      },
    );
    const retried = await newInvalidator(ownCache)(event);
    const afterRetry = seen(await read(get(id)));

    // Assess
    expect(whilePaused).toEqual({ status: 200, xCache: 'bypass', version: 1, state: 'PAID' });
    expect(failed.batchItemFailures.length).toBeGreaterThan(0);
    expect(retried.batchItemFailures).toEqual([]);
    expect(await ownCache.get(orderCacheKey(keyspace, id))).toEqual(expect.objectContaining({ version: 1 }));
    expect(afterRetry).toMatchObject({ status: 200, version: 1, state: 'PAID' });
  });
});
