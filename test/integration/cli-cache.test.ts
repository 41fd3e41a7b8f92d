/**
 * `tenang cache` (C6) through the CLI's `run()` against the real Redis and moto. Each stage of
 * this file is unique to the run and deployed as the smallest honest stack: a CloudFormation stack
 * `tenang-<stage>` holding only the orders table. The CLI runs as an operator does on AWS: with
 * no REDIS_URL, so its only way to the cache is Lambda Invoke on the stage's cache-admin
 * function, served here by the local Lambda control plane (lib/local/lambda-control.ts) running
 * the function's real handler (lambdas/cache-admin) on the shared Redis and the stage's table;
 * one test runs the `--direct` path instead, which discovers the table in the stack.
 * Reads go through the real order reader (createHandler) on the same keyspace, so "the next read
 * is a miss that loads the current version" is what a client would see. Only this run's keys are
 * touched: the shared Redis is never flushed.
 */
import {
  CloudFormationClient,
  CreateStackCommand,
  DeleteStackCommand,
  DescribeStacksCommand,
} from '@aws-sdk/client-cloudformation';
import { PutItemCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type Redis from 'ioredis';
import type * as ReaderModule from '../../examples/reference/functions/order-reader';
import type * as CacheAdminModule from '../../lambdas/cache-admin';
import { runCaptured, type CapturedRun } from '../../bin/tenang';
import { DynamoDbEntitySource } from '../../lib/adapters/aws/entity-source';
import { DynamoDbOrderStore } from '../../examples/reference/domain/dynamodb-order-store';
import * as lambdaEnv from '../../lib/adapters/lambda-env';
import { connectRedis, type RedisConnection } from '../../lib/adapters/redis/connect';
import { RedisCache } from '../../lib/adapters/redis/redis-cache';
import { CEILING_VERSION } from '../../lib/core/cache-admin-keys';
import { cacheKeyspace } from '../../lib/core/cache-keys';
import { ORDER_ENTITY, orderCacheKey } from '../../examples/reference/domain/order-cache';
import type { Order } from '../../examples/reference/domain/order';
import type { OrderStore } from '../../examples/reference/domain/ports';
import { encodePipeline, type PipelineInput } from '../../lib/config';
import { stackName } from '../../lib/infra/app';
import { startLambdaControl, type LambdaControl } from '../../lib/local/lambda-control';
import { pollUntil } from '../../lib/local/poll';
import { dynamoClient, redisClient, uniqueName } from '../helpers/aws';
import { httpApiEvent } from '../helpers/http-events';
import { lambdaContext } from '../helpers/sqs-events';

jest.setTimeout(90_000);

// Stage names: lower-case, at most 16 characters; unique per run so no other test's keys are near.
const STAGE = uniqueName('itc');
const FLUSH_STAGE = uniqueName('itf');
const OTHER_STAGE = uniqueName('ito');
const KEYSPACE = cacheKeyspace(STAGE);
const FLUSH_KEYSPACE = cacheKeyspace(FLUSH_STAGE);
const SETTINGS = lambdaEnv.stageConfig(STAGE, process.env.AWS_REGION).stage.cache;
const CONTEXT = lambdaContext(10_000, 'cli-cache-test');
const TTL_MS = 60_000;
/** The flush stage's configured hot keys: an entity reference, a full key, and a gone order. */
const HOT = { stale: 'hot-stale', cold: 'hot-cold', gone: 'hot-gone' } as const;

type Reader = (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyStructuredResultV2>;

let reader: typeof ReaderModule;
let cfn: CloudFormationClient;
let dynamo: DynamoDBClient;
let stores: Record<string, DynamoDbOrderStore>;
let connection: RedisConnection;
let cache: RedisCache;
let admin: Redis;

/** The declaration the flush stage's runs get (set in beforeAll). */
let flushPipeline = '';
/** The Lambda control plane serving Invoke with the cache-admin handlers. */
let control: LambdaControl;
/** Every invocation it served: function name and request. */
const invocations: { functionName: string; request: unknown }[] = [];

/** The CLI as an operator on AWS runs it: endpoints and credentials, no REDIS_URL. */
function cli(...argv: string[]): Promise<CapturedRun> {
  const { REDIS_URL: _redis, ...operator } = process.env;
  const env = { ...operator, AWS_ENDPOINT_URL_LAMBDA: control.url };
  if (argv.includes(FLUSH_STAGE))
    return runCaptured(argv, { env: { ...env, TENANG_PIPELINE: flushPipeline } });
  return runCaptured(argv, { env });
}

/** The CLI with the cache's variables and --direct: it connects to Redis itself. */
function cliDirect(...argv: string[]): Promise<CapturedRun> {
  return runCaptured([...argv, '--direct']);
}

/** The invocations of `stage`'s cache-admin function since `from`. */
function invocationsOf(stage: string, from = 0): unknown[] {
  return invocations
    .slice(from)
    .filter((i) => i.functionName === `${stackName(stage)}-cache-admin`)
    .map((i) => i.request);
}

/** A stack of `stage` with only its orders table, created in moto and waited for. */
async function deployOrdersTable(stage: string): Promise<DynamoDbOrderStore> {
  const table = `tenang-${stage}-orders`;
  await cfn.send(
    new CreateStackCommand({
      StackName: stackName(stage),
      TemplateBody: JSON.stringify({
        Resources: {
          Orders: {
            Type: 'AWS::DynamoDB::Table',
            Properties: {
              TableName: table,
              AttributeDefinitions: [{ AttributeName: 'orderId', AttributeType: 'S' }],
              KeySchema: [{ AttributeName: 'orderId', KeyType: 'HASH' }],
              BillingMode: 'PAY_PER_REQUEST',
            },
          },
        },
      }),
    }),
  );
  await pollUntil(
    async () => {
      const { Stacks } = await cfn.send(new DescribeStacksCommand({ StackName: stackName(stage) }));
      const status = Stacks?.[0]?.StackStatus ?? '';
      if (status.endsWith('FAILED')) throw new Error(`stack ${stackName(stage)}: ${status}`);
      return status === 'CREATE_COMPLETE' ? true : undefined;
    },
    { description: `stack ${stackName(stage)}`, deadlineMs: 30_000, intervalMs: 100 },
  );
  return new DynamoDbOrderStore(dynamo, table);
}

/** Deletes every key under `prefix` (this run's namespaces only). */
async function deleteKeys(prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await admin.del(...keys);
  } while (cursor !== '0');
}

/** Every key under `prefix`, with SCAN. */
async function keysUnder(prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    found.push(...keys);
  } while (cursor !== '0');
  return found;
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

function silentMetrics(): Metrics {
  const metrics = new Metrics({ namespace: 'tenang', serviceName: 'order-reader' });
  jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
  return metrics;
}

/** The real order reader on `stage`'s keyspace. */
function newReader(stage: string, orders: Pick<OrderStore, 'get'>): Reader {
  const handle = reader.createHandler({
    cache,
    orders,
    keyspace: cacheKeyspace(stage),
    settings: SETTINGS,
    logger: new Logger({ serviceName: 'order-reader', logLevel: 'SILENT' }),
    metrics: silentMetrics(),
  });
  return (event) => handle(event, CONTEXT);
}

/** `GET /orders/{id}` as API Gateway delivers it to the reader. */
function get(orderId: string): APIGatewayProxyEventV2 {
  return httpApiEvent('GET', `/orders/${orderId}`, {
    routeKey: 'GET /orders/{id}',
    pathParameters: { id: orderId },
    requestId: uniqueName('req'),
  });
}

/** X-Cache and the order's version of a response. */
function seen(response: APIGatewayProxyStructuredResultV2): { xCache: unknown; version?: number } {
  const xCache = response.headers?.[reader.CACHE_HEADER];
  if (response.statusCode !== 200) return { xCache };
  return { xCache, version: (JSON.parse(response.body ?? '{}') as Order).version };
}

beforeAll(async () => {
  cfn = new CloudFormationClient({ region: process.env.AWS_REGION });
  dynamo = dynamoClient();
  const [main, flush] = await Promise.all([deployOrdersTable(STAGE), deployOrdersTable(FLUSH_STAGE)]);
  stores = { [STAGE]: main, [FLUSH_STAGE]: flush };
  // The reader module builds its own (unused) clients at import; give it a valid environment.
  const saved = { ...process.env };
  Object.assign(process.env, { TENANG_STAGE: STAGE, ORDERS_TABLE: 'unused', CACHE_AUTH: 'none' });
  try {
    reader = await import('../../examples/reference/functions/order-reader');
  } finally {
    process.env = saved;
  }
  const url = process.env.REDIS_URL;
  if (url === undefined) throw new Error('REDIS_URL is not set: run through the jest integration project');
  connection = connectRedis({ kind: 'url', url }, { commandTimeoutMs: 2_000 });
  cache = new RedisCache(connection);
  admin = redisClient();
  // The flush stage's config lists hot keys (the reference pipeline has none): the CLI reads
  // the declaration from TENANG_PIPELINE, so the flush stage's runs get one that has them.
  const declaration = JSON.parse(process.env.TENANG_PIPELINE ?? '{}') as PipelineInput;
  const hotKeys = [`order:${HOT.stale}`, orderCacheKey(FLUSH_KEYSPACE, HOT.cold), `order:${HOT.gone}`];
  flushPipeline = encodePipeline({
    ...declaration,
    stage: { ...declaration.stage, cache: { ...declaration.stage.cache, hotKeys } },
  });
  // The cache-admin function of each stage: its real handler on the shared Redis and the
  // stage's orders table, with the settings its bundle would carry (the flush stage's hot keys).
  // The module's own source reads the declared entity's table variable (unused here).
  Object.assign(process.env, { TENANG_STAGE: STAGE, CACHE_AUTH: 'none', ORDERS_TABLE: 'unused' });
  let adminModule: typeof CacheAdminModule;
  try {
    adminModule = await import('../../lambdas/cache-admin');
  } finally {
    process.env = saved;
  }
  const handlers = new Map(
    [STAGE, FLUSH_STAGE, OTHER_STAGE].map((stage) => [
      `${stackName(stage)}-cache-admin`,
      adminModule.createHandler({
        stage,
        settings: stage === FLUSH_STAGE ? { ...SETTINGS, hotKeys } : SETTINGS,
        cache,
        source: new DynamoDbEntitySource(dynamo, [
          { entity: ORDER_ENTITY, tableName: `tenang-${stage}-orders` },
        ]),
        logger: new Logger({ serviceName: 'cache-admin', logLevel: 'SILENT' }),
      }),
    ]),
  );
  control = await startLambdaControl({
    upstream: process.env.AWS_ENDPOINT_URL ?? 'http://localhost:5055',
    invoke: async (functionName, request) => {
      const handle = handlers.get(functionName);
      if (handle === undefined) return undefined;
      invocations.push({ functionName, request });
      const started = Date.now();
      try {
        const result = await handle(request, lambdaContext(300_000, functionName));
        return { status: 'ok', result, durationMs: Date.now() - started, coldStart: false };
      } catch (error) {
        const e = error instanceof Error ? error : new Error(String(error));
        return {
          status: 'error',
          errorType: e.name,
          errorMessage: e.message,
          durationMs: 0,
          coldStart: false,
        };
      }
    },
  });
});

afterAll(async () => {
  jest.restoreAllMocks();
  await control?.close();
  for (const stage of [STAGE, FLUSH_STAGE, OTHER_STAGE]) await deleteKeys(`tenang:${stage}:`);
  await admin.quit();
  await connection.close();
  await Promise.all(
    [STAGE, FLUSH_STAGE].map((stage) => cfn.send(new DeleteStackCommand({ StackName: stackName(stage) }))),
  );
  cfn.destroy();
  dynamo.destroy();
});

describe('CLI: tenang cache invalidate --key / --entity (C3, C6)', () => {
  it('when a stale key is invalidated by --key, the next read is a miss that loads the current version, and an old write-back is refused', async () => {
    // Prepare
    const store = stores[STAGE] as DynamoDbOrderStore;
    const id = uniqueName('ord');
    const key = orderCacheKey(KEYSPACE, id);
    const read = newReader(STAGE, store);
    await store.create(newOrder(id));
    const old = await store.get(id);
    const cached = seen(await read(get(id)));
    // The order changes and no invalidator runs: the cache serves version 0.
    await store.transition(id, 'PENDING', 'PAID', 0, { paymentId: 'pay-1' });
    const stale = seen(await read(get(id)));

    // Act
    const from = invocations.length;
    const result = await cli('--stage', STAGE, 'cache', 'invalidate', '--key', key, '--json');
    const afterTombstone = await cache.get(key);
    const next = seen(await read(get(id)));
    const lateWriteBack = await cache.putIfNewer(key, 0, old, TTL_MS);
    const again = seen(await read(get(id)));

    // Assess
    expect(cached).toEqual({ xCache: 'miss', version: 0 });
    expect(stale).toEqual({ xCache: 'hit', version: 0 });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.out)).toMatchObject({
      entity: `order:${id}`,
      sourceVersion: 1,
      dryRun: false,
      keys: [{ key, fenceVersion: 1, before: 'value v0', result: 'fenced' }],
    });
    expect(afterTombstone).toEqual({ kind: 'tombstone', version: 1 });
    expect(next).toEqual({ xCache: 'miss', version: 1 });
    expect(lateWriteBack).toBe('fenced');
    expect(again).toEqual({ xCache: 'hit', version: 1 });
    // The CLI had no REDIS_URL: the fence was written by the stage's cache-admin function.
    expect(invocationsOf(STAGE, from)).toEqual([
      expect.objectContaining({ operation: 'invalidate-entity', entity: `order:${id}`, dryRun: false }),
    ]);
  });

  it('when --direct is given with REDIS_URL, the CLI fences the key itself (finding the table in the stack) and invokes nothing', async () => {
    // Prepare
    const store = stores[STAGE] as DynamoDbOrderStore;
    const id = uniqueName('ord');
    const key = orderCacheKey(KEYSPACE, id);
    await store.create(newOrder(id));
    await store.transition(id, 'PENDING', 'PAID', 0, { paymentId: 'pay-d' });
    const from = invocations.length;

    // Act
    const result = await cliDirect(
      '--stage',
      STAGE,
      'cache',
      'invalidate',
      '--entity',
      `order:${id}`,
      '--json',
    );

    // Assess
    expect(result.code).toBe(0);
    expect(JSON.parse(result.out)).toMatchObject({
      entity: `order:${id}`,
      table: `tenang-${STAGE}-orders`,
      keys: [{ key, fenceVersion: 1, result: 'fenced' }],
    });
    expect(await cache.get(key)).toEqual({ kind: 'tombstone', version: 1 });
    expect(invocationsOf(STAGE, from)).toEqual([]);
  });

  it("when the item's declared version attribute is not an integer ≥ 0, --entity warns it cannot be read and fences above every version", async () => {
    // Prepare: an order whose version was edited by hand into text.
    const id = uniqueName('ord');
    const key = orderCacheKey(KEYSPACE, id);
    await dynamo.send(
      new PutItemCommand({
        TableName: `tenang-${STAGE}-orders`,
        Item: { orderId: { S: id }, version: { S: 'three' } },
      }),
    );

    // Act
    const result = await cliDirect(
      '--stage',
      STAGE,
      'cache',
      'invalidate',
      '--entity',
      `order:${id}`,
      '--json',
    );

    // Assess
    expect(result.code).toBe(0);
    expect(JSON.parse(result.out)).toMatchObject({
      entity: `order:${id}`,
      sourceVersion: 'unreadable',
      keys: [{ key, fenceVersion: CEILING_VERSION, result: 'fenced' }],
    });
    expect(result.err).toContain(
      `order ${id} in tenang-${STAGE}-orders has no valid version: version must be an integer ≥ 0, got "three"`,
    );
    expect(await cache.get(key)).toEqual({ kind: 'tombstone', version: CEILING_VERSION });
  });

  it('when a reader loaded the old version before the change and writes back after --entity, its write-back is refused and reads never see the old version', async () => {
    // Prepare
    const store = stores[STAGE] as DynamoDbOrderStore;
    const id = uniqueName('ord');
    const key = orderCacheKey(KEYSPACE, id);
    await store.create(newOrder(id));
    let loadedVersion: number | undefined;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    // This reader reads DynamoDB, then stalls before its write-back.
    const slowRead = newReader(STAGE, {
      get: async (orderId) => {
        const order = await store.get(orderId);
        loadedVersion = order?.version;
        await gate;
        return order;
      },
    });
    const stalled = slowRead(get(id));
    await pollUntil(async () => (loadedVersion === 0 ? true : undefined), {
      description: 'the slow reader to load version 0',
      deadlineMs: 5_000,
      intervalMs: 10,
    });
    await store.transition(id, 'PENDING', 'PAID', 0, { paymentId: 'pay-2' });

    // Act
    const result = await cli('--stage', STAGE, 'cache', 'invalidate', '--entity', `order:${id}`);
    release();
    const slow = seen(await stalled);
    const entryAfterSlowReader = await cache.get(key);
    const read = newReader(STAGE, store);
    const next = seen(await read(get(id)));
    const again = seen(await read(get(id)));

    // Assess
    expect(result.code).toBe(0);
    expect(result.out).toContain(`order:${id} is at version 1 in tenang-${STAGE}-orders`);
    expect(result.out).toContain(`fenced ${key} at version 1 (was: empty)`);
    expect(slow).toEqual({ xCache: 'miss', version: 0 });
    expect(entryAfterSlowReader).toEqual({ kind: 'tombstone', version: 1 });
    expect(next).toEqual({ xCache: 'miss', version: 1 });
    expect(again).toEqual({ xCache: 'hit', version: 1 });
  });

  it('when the order no longer exists, --entity fences above every version so no old value can come back', async () => {
    // Prepare
    const id = uniqueName('ord');
    const key = orderCacheKey(KEYSPACE, id);
    await cache.putIfNewer(key, 3, { orderId: id, version: 3 }, TTL_MS);

    // Act
    const result = await cli('--stage', STAGE, 'cache', 'invalidate', '--entity', `order:${id}`);
    const writeBack = await cache.putIfNewer(key, 1_000_000, { orderId: id }, TTL_MS);

    // Assess
    expect(result.code).toBe(0);
    expect(result.out).toContain('does not exist');
    expect(result.out).toContain('above every version (was: value v3)');
    expect(await cache.get(key)).toEqual({ kind: 'tombstone', version: Number.MAX_SAFE_INTEGER });
    expect(writeBack).toBe('fenced');
  });

  it('when --key is given with --dry-run, it reports the fence and changes nothing', async () => {
    // Prepare
    const store = stores[STAGE] as DynamoDbOrderStore;
    const id = uniqueName('ord');
    const key = orderCacheKey(KEYSPACE, id);
    await store.create(newOrder(id));
    await store.transition(id, 'PENDING', 'PAID', 0, { paymentId: 'pay-3' });
    await cache.putIfNewer(key, 0, newOrder(id), TTL_MS);

    // Act
    const result = await cli('--stage', STAGE, 'cache', 'invalidate', '--key', key, '--dry-run');

    // Assess
    expect(result.code).toBe(0);
    expect(result.out).toContain(`[dry run] would fence ${key} at version 1 (was: value v0)`);
    expect(await cache.get(key)).toMatchObject({ kind: 'value', version: 0 });
  });

  it('when --key names a key of another stage, it exits 2 and writes nothing', async () => {
    // Prepare
    const key = orderCacheKey(cacheKeyspace(OTHER_STAGE), 'o-1');
    await cache.putIfNewer(key, 1, { v: 1 }, TTL_MS);

    // Act
    const result = await cli('--stage', STAGE, 'cache', 'invalidate', '--key', key);

    // Assess
    expect(result.code).toBe(2);
    expect(result.err).toContain(`outside stage ${STAGE}'s keyspace`);
    expect(await cache.get(key)).toEqual({ kind: 'value', version: 1, value: { v: 1 } });
  });
});

describe('CLI: tenang cache invalidate --prefix (C6)', () => {
  const BULK = 1_200;

  it('when a prefix holds more keys than several SCAN batches, it evicts exactly its cached values and leaves everything else', async () => {
    // Prepare
    const scope = `${KEYSPACE.prefix}order:{bulk-`;
    const bulk = Array.from({ length: BULK }, (_, i) => `${scope}${i}}`);
    for (let i = 0; i < bulk.length; i += 200) {
      await Promise.all(bulk.slice(i, i + 200).map((k, n) => cache.putIfNewer(k, i + n, { n }, TTL_MS)));
    }
    const tombstone = `${scope}t}`;
    await cache.fence(tombstone, 7, TTL_MS);
    const outside = orderCacheKey(KEYSPACE, 'keep-1');
    await cache.putIfNewer(outside, 2, { keep: true }, TTL_MS);
    const otherStage = `${cacheKeyspace(OTHER_STAGE).prefix}order:{bulk-1}`;
    await cache.putIfNewer(otherStage, 1, { other: true }, TTL_MS);

    // Act
    const dryRun = await cli(
      '--stage',
      STAGE,
      'cache',
      'invalidate',
      '--prefix',
      scope,
      '--dry-run',
      '--json',
    );
    const afterDryRun = (await keysUnder(scope)).length;
    const result = await cli('--stage', STAGE, 'cache', 'invalidate', '--prefix', scope, '--batch', '100');
    const left = await keysUnder(scope);

    // Assess
    expect(dryRun.code).toBe(0);
    expect(JSON.parse(dryRun.out)).toEqual({
      action: 'invalidate',
      prefix: scope,
      dryRun: true,
      scanned: BULK + 1,
      evicted: BULK,
    });
    expect(afterDryRun).toBe(BULK + 1);
    expect(result.code).toBe(0);
    expect(result.out).toContain(
      `evicted ${BULK} cached value(s) under ${scope} (${BULK + 1} key(s) scanned`,
    );
    expect(left).toEqual([tombstone]);
    expect(await cache.get(tombstone)).toEqual({ kind: 'tombstone', version: 7 });
    expect(await cache.get(outside)).toEqual({ kind: 'value', version: 2, value: { keep: true } });
    expect(await cache.get(otherStage)).toEqual({ kind: 'value', version: 1, value: { other: true } });
  });

  it('when the prefix is outside the stage keyspace, it is refused (2) and nothing is evicted', async () => {
    // Prepare
    const key = `${cacheKeyspace(OTHER_STAGE).prefix}order:{refused}`;
    await cache.putIfNewer(key, 1, { v: 1 }, TTL_MS);

    // Act
    const outside = await cli('--stage', STAGE, 'cache', 'invalidate', '--prefix', `tenang:${OTHER_STAGE}:`);
    const whole = await cli('--stage', STAGE, 'cache', 'invalidate', '--prefix', `tenang:${STAGE}:`);

    // Assess
    expect(outside.code).toBe(2);
    expect(outside.err).toContain(`outside stage ${STAGE}'s keyspace: it must start with tenang:${STAGE}:`);
    expect(whole.code).toBe(2);
    expect(whole.err).toContain('cache flush --yes-i-know');
    expect(await cache.get(key)).toEqual({ kind: 'value', version: 1, value: { v: 1 } });
  });

  it('when --direct cannot reach Redis, it fails (1) saying what the direct path needs', async () => {
    // Act
    const { code, err } = await runCaptured(
      ['--stage', STAGE, 'cache', 'invalidate', '--prefix', `${KEYSPACE.prefix}order:`, '--direct'],
      { env: { ...process.env, REDIS_URL: 'redis://127.0.0.1:1' } },
    );

    // Assess
    expect(code).toBe(1);
    expect(err).toContain('cannot use the cache at 127.0.0.1:1');
    expect(err).toContain('a network path to the cache');
  });

  it('when the stage has no cache-admin function, it fails (1) saying so and never falls back to Redis', async () => {
    // Prepare: a stage nothing is deployed for; its keyspace holds a value the CLI could reach.
    const stage = uniqueName('nof');
    const key = orderCacheKey(cacheKeyspace(stage), 'o-1');
    await cache.putIfNewer(key, 0, newOrder('o-1'), TTL_MS);

    // Act
    const { code, err } = await cli(
      '--stage',
      stage,
      'cache',
      'invalidate',
      '--prefix',
      `tenang:${stage}:v1:order:`,
    );

    // Assess
    expect(code).toBe(1);
    expect(err).toContain(`tenang-${stage}-cache-admin does not exist`);
    expect(await cache.get(key)).toMatchObject({ kind: 'value', version: 0 });
    await deleteKeys(`tenang:${stage}:`);
  });
});

describe('CLI: tenang cache flush (C6)', () => {
  const hotKey = (id: string): string => orderCacheKey(FLUSH_KEYSPACE, id);
  const coldKeys = Array.from({ length: 30 }, (_, i) => orderCacheKey(FLUSH_KEYSPACE, `cold-${i}`));
  const tombstone = orderCacheKey(FLUSH_KEYSPACE, 'fenced');

  /** What the flush stage's cache holds, key by key. */
  async function snapshot(): Promise<Record<string, string | null>> {
    const keys = (await keysUnder(`tenang:${FLUSH_STAGE}:`)).sort();
    const values = keys.length === 0 ? [] : await admin.mget(...keys);
    return Object.fromEntries(keys.map((k, i) => [k, values[i] ?? null]));
  }

  beforeAll(async () => {
    const store = stores[FLUSH_STAGE] as DynamoDbOrderStore;
    await store.create(newOrder(HOT.stale));
    await store.create(newOrder(HOT.cold));
    // Cached at version 0, then changed without an invalidation: the cache is stale.
    await cache.putIfNewer(hotKey(HOT.stale), 0, newOrder(HOT.stale), TTL_MS);
    await store.transition(HOT.stale, 'PENDING', 'PAID', 0, { paymentId: 'pay-hot' });
    // Cached, but the order is gone.
    await cache.putIfNewer(hotKey(HOT.gone), 4, { orderId: HOT.gone }, TTL_MS);
    await Promise.all(coldKeys.map((k, i) => cache.putIfNewer(k, i, { i }, TTL_MS)));
    await cache.fence(tombstone, 9, TTL_MS);
    await cache.putIfNewer(`tenang:${FLUSH_STAGE}:v0:order:{old}`, 1, { old: true }, TTL_MS);
  });

  it('when --yes-i-know is missing, it exits 2 with the origin-load warning and changes nothing', async () => {
    // Prepare
    const before = await snapshot();

    // Act
    const result = await cli('--stage', FLUSH_STAGE, 'cache', 'flush');

    // Assess
    expect(result.code).toBe(2);
    expect(result.err).toContain('sends every read to DynamoDB at once');
    expect(result.err).toContain('cache invalidate --entity order:<id>');
    expect(await snapshot()).toEqual(before);
  });

  it('when --dry-run is given, it reports what it would warm and evict and changes nothing', async () => {
    // Prepare
    const before = await snapshot();

    // Act
    const result = await cli('--stage', FLUSH_STAGE, 'cache', 'flush', '--dry-run', '--json');

    // Assess
    expect(result.code).toBe(0);
    expect(JSON.parse(result.out)).toMatchObject({
      dryRun: true,
      prefix: `tenang:${FLUSH_STAGE}:`,
      hotKeys: [
        { entity: `order:${HOT.stale}`, version: 1, result: 'would-warm' },
        { entity: `order:${HOT.cold}`, version: 0, result: 'would-warm' },
        { entity: `order:${HOT.gone}`, result: 'absent' },
      ],
      // 30 cold values, the gone order's value and the old schema version's value.
      evicted: 32,
    });
    expect(await snapshot()).toEqual(before);
  });

  it('when confirmed, it warms the hot keys at their current version, then evicts every other cached value of the stage and keeps tombstones', async () => {
    // Act
    const from = invocations.length;
    const result = await cli('--stage', FLUSH_STAGE, 'cache', 'flush', '--yes-i-know', '--batch', '10');
    const read = newReader(FLUSH_STAGE, stores[FLUSH_STAGE] as DynamoDbOrderStore);
    const staleRead = seen(await read(get(HOT.stale)));
    const coldRead = seen(await read(get(HOT.cold)));

    // Assess
    expect(result.code).toBe(0);
    expect(result.err).toContain('warning: a full flush');
    expect(result.out).toContain(`warmed 2 of 3 hot key(s) from tenang-${FLUSH_STAGE}-orders`);
    expect(result.out).toContain(`order:${HOT.stale} ${hotKey(HOT.stale)}: warmed v1`);
    expect(result.out).toContain(`order:${HOT.gone} ${hotKey(HOT.gone)}: absent`);
    expect(result.out).toContain(`evicted 32 cached value(s) under tenang:${FLUSH_STAGE}:`);
    expect(await snapshot()).toEqual({
      [hotKey(HOT.cold)]: expect.stringMatching(/^v:0:/),
      [hotKey(HOT.stale)]: expect.stringMatching(/^v:1:/),
      [tombstone]: 't:9:',
    });
    expect(staleRead).toEqual({ xCache: 'hit', version: 1 });
    expect(coldRead).toEqual({ xCache: 'hit', version: 0 });
    expect(invocationsOf(FLUSH_STAGE, from)).toEqual([
      expect.objectContaining({ operation: 'flush', batch: 10, dryRun: false, confirmed: true }),
    ]);
  });
});
