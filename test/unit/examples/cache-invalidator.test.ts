import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import type * as InvalidatorModule from '../../../examples/reference/functions/cache-invalidator';
import { InMemoryVersionedCache } from '../../../harness/fakes/memory-versioned-cache';
import { cacheKeyspace } from '../../../lib/core/cache-keys';
import { orderCacheKey } from '../../../examples/reference/domain/order-cache';
import type { CachePolicySettings } from '../../../lib/core/cache-policy';
import { METRIC } from '../../../lib/config/metrics';
import { CacheUnavailableError, PermissionDeniedError } from '../../../lib/core/errors';
import { streamRecord } from '../../helpers/dynamodb-stream';
import { lambdaContext } from '../../helpers/sqs-events';

const ENV = {
  TENANG_STAGE: 'unit',
  AWS_REGION: 'eu-west-1',
  REDIS_URL: 'redis://127.0.0.1:1',
  CACHE_AUTH: 'none',
};
const KS = cacheKeyspace('unit');
const SETTINGS: CachePolicySettings = { ttlSeconds: 300, ttlJitterRatio: 0.2, loadLockMs: 2_000 };
const CONTEXT = lambdaContext(10_000, 'cache-invalidator-test');

let invalidator: typeof InvalidatorModule;

async function withEnv<T>(env: Record<string, string>, action: () => Promise<T>): Promise<T> {
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    return await action();
  } finally {
    process.env = saved;
  }
}

beforeAll(async () => {
  // The module builds a lazy Redis connection at init; nothing connects until a command runs.
  invalidator = await withEnv(ENV, () => import('../../../examples/reference/functions/cache-invalidator'));
});

afterEach(() => {
  jest.restoreAllMocks();
});

function order(id: string, version: number, state = 'PENDING'): Record<string, unknown> {
  return {
    orderId: id,
    state,
    version,
    customerEmail: 'buyer@example.com',
    lines: [{ sku: 'sku-a', quantity: 1 }],
    amountMinor: 1250,
    currency: 'EUR',
    createdAt: '2030-06-01T11:00:00.000Z',
    updatedAt: '2030-06-01T11:00:00.000Z',
  };
}

function modify(id: string, from: number, to: number, seq: string): DynamoDBStreamEvent['Records'][number] {
  return streamRecord({
    eventName: 'MODIFY',
    keys: { orderId: id },
    oldImage: order(id, from),
    newImage: order(id, to, 'PAID'),
    sequenceNumber: seq,
  });
}

/**
 * The handler over `cache`, in an invocation of 10 s whose clock only moves when the handler
 * sleeps (its in-invocation retries), so "Redis down for the whole invocation" takes no time.
 */
function harness(cache: InMemoryVersionedCache = new InMemoryVersionedCache(), metrics?: Metrics) {
  const logger = new Logger({ serviceName: 'cache-invalidator', logLevel: 'SILENT' });
  const crash = jest.fn();
  let remainingMs = 10_000;
  const sleeps: number[] = [];
  const onSleep: { run?: () => void } = {};
  const handle = invalidator.createHandler({
    cache,
    keyspace: KS,
    settings: SETTINGS,
    logger,
    ...(metrics === undefined ? {} : { metrics }),
    crash,
    random: () => 0.5,
    sleep: (ms) => {
      sleeps.push(ms);
      remainingMs -= ms;
      onSleep.run?.();
      return Promise.resolve();
    },
  });
  const context = { ...CONTEXT, getRemainingTimeInMillis: () => remainingMs };
  return {
    cache,
    logger,
    crash,
    sleeps,
    onSleep,
    handle: (event: DynamoDBStreamEvent) => handle(event, context),
  };
}

describe('Function: cache-invalidator handler', () => {
  it('when an order is modified, it fences its key at the new version, replacing the cached older value', async () => {
    // Prepare
    const h = harness();
    const key = orderCacheKey(KS, 'o-1');
    await h.cache.putIfNewer(key, 1, order('o-1', 1), 60_000);

    // Act
    const response = await h.handle({ Records: [modify('o-1', 1, 2, '100')] });

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(h.cache.peek(key)).toEqual({ kind: 'tombstone', version: 2 });
  });

  it('when an order is inserted, its key is fenced at its first version', async () => {
    // Prepare
    const h = harness();

    // Act
    await h.handle({
      Records: [
        streamRecord({
          eventName: 'INSERT',
          keys: { orderId: 'o-2' },
          newImage: order('o-2', 0),
          sequenceNumber: '1',
        }),
      ],
    });

    // Assess
    expect(h.cache.peek(orderCacheKey(KS, 'o-2'))).toEqual({ kind: 'tombstone', version: 0 });
  });

  it('when an order is removed, its key is fenced one past the removed version', async () => {
    // Prepare
    const h = harness();
    const key = orderCacheKey(KS, 'o-3');
    await h.cache.putIfNewer(key, 4, order('o-3', 4), 60_000);

    // Act
    await h.handle({
      Records: [
        streamRecord({
          eventName: 'REMOVE',
          keys: { orderId: 'o-3' },
          oldImage: order('o-3', 4),
          sequenceNumber: '7',
        }),
      ],
    });

    // Assess
    expect(h.cache.peek(key)).toEqual({ kind: 'tombstone', version: 5 });
  });

  it('when an old record is redelivered after a newer value was cached, it leaves the newer value and succeeds', async () => {
    // Prepare
    const h = harness();
    const key = orderCacheKey(KS, 'o-1');
    await h.cache.putIfNewer(key, 5, order('o-1', 5), 60_000);

    // Act
    const response = await h.handle({ Records: [modify('o-1', 1, 2, '100')] });

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(h.cache.peek(key)).toEqual(expect.objectContaining({ kind: 'value', version: 5 }));
  });

  it('when Redis fails for one record, only that record is reported as a batch item failure', async () => {
    // Prepare
    const cache = new InMemoryVersionedCache();
    const failingKey = orderCacheKey(KS, 'o-bad');
    const fence = cache.fence.bind(cache);
    jest
      .spyOn(cache, 'fence')
      .mockImplementation((key, version, ttl) =>
        key === failingKey ? Promise.reject(new CacheUnavailableError('timeout')) : fence(key, version, ttl),
      );
    const h = harness(cache);

    // Act
    const response = await h.handle({
      Records: [modify('o-1', 1, 2, '100'), modify('o-bad', 1, 2, '200'), modify('o-3', 1, 2, '300')],
    });

    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: '200' }] });
    expect(cache.peek(orderCacheKey(KS, 'o-3'))).toEqual({ kind: 'tombstone', version: 2 });
  });

  it('when Redis stays down for the whole invocation, it backs off within it, then every record fails so the mapping retries the batch', async () => {
    // Prepare
    const cache = new InMemoryVersionedCache();
    cache.down = true;
    const h = harness(cache);

    // Act
    const response = await h.handle({ Records: [modify('o-1', 1, 2, '100'), modify('o-2', 3, 4, '101')] });

    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: '100' }, { itemIdentifier: '101' }] });
    // Each record: ceilings 100, 200, 400 … capped at 2 s, half of each (random 0.5), until 2 s
    // remain; the two records back off side by side.
    expect(h.sleeps.slice(0, 10)).toEqual([50, 50, 100, 100, 200, 200, 400, 400, 800, 800]);
    expect(h.sleeps.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(10_000 - invalidator.RIDE_OUT.reserveMs);
  });

  it('when Redis comes back within the invocation, the records are fenced and nothing is reported failed', async () => {
    // Prepare: Redis refuses until the handler has backed off three times.
    const cache = new InMemoryVersionedCache();
    cache.down = true;
    const h = harness(cache);
    h.onSleep.run = () => {
      if (h.sleeps.length >= 3) cache.down = false;
    };

    // Act
    const response = await h.handle({ Records: [modify('o-1', 1, 2, '100')] });

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    expect(cache.peek(orderCacheKey(KS, 'o-1'))).toEqual({ kind: 'tombstone', version: 2 });
  });

  it('when the failure is not the cache being unavailable, it is not retried within the invocation', async () => {
    // Prepare
    const cache = new InMemoryVersionedCache();
    jest.spyOn(cache, 'fence').mockRejectedValue(new TypeError('a bug'));
    const h = harness(cache);

    // Act
    const response = await h.handle({ Records: [modify('o-1', 1, 2, '100')] });

    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: '100' }] });
    expect(h.sleeps).toEqual([]);
  });

  it('when a record fails on a denied permission, it fails the record (the stream retries it) and counts PermissionDenied', async () => {
    // Prepare
    const cache = new InMemoryVersionedCache();
    jest
      .spyOn(cache, 'fence')
      .mockRejectedValue(
        new PermissionDeniedError('the cache refused this function', { action: 'elasticache:Connect' }),
      );
    const metrics = new Metrics({ namespace: 'tenang', serviceName: 'cache-invalidator' });
    const publish = jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
    const addMetric = jest.spyOn(metrics, 'addMetric');
    const h = harness(cache, metrics);

    // Act
    const response = await h.handle({ Records: [modify('o-1', 1, 2, '100')] });

    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: '100' }] });
    expect(addMetric.mock.calls.map(([name]) => name)).toEqual([METRIC.permissionDenied]);
    expect(publish).toHaveBeenCalledTimes(1);
    expect(h.sleeps).toEqual([]);
  });

  it('when a batch succeeds, it publishes no metrics (no empty EMF document per batch)', async () => {
    // Prepare
    const metrics = new Metrics({ namespace: 'tenang', serviceName: 'cache-invalidator' });
    const publish = jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
    const h = harness(new InMemoryVersionedCache(), metrics);

    // Act
    await h.handle({ Records: [modify('o-1', 1, 2, '100')] });

    // Assess
    expect(publish).not.toHaveBeenCalled();
  });

  it('when a record is of an unknown entity, it is logged and skipped, not retried', async () => {
    // Prepare
    const h = harness();
    const warn = jest.spyOn(h.logger, 'warn');

    // Act
    const response = await h.handle({
      Records: [
        streamRecord({
          eventName: 'MODIFY',
          keys: { sku: 'sku-a' },
          oldImage: { sku: 'sku-a' },
          newImage: { sku: 'sku-a' },
          sequenceNumber: '9',
        }),
      ],
    });

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(warn).toHaveBeenCalledWith(
      'stream record of an unknown entity; skipped',
      expect.objectContaining({ sequenceNumber: '9' }),
    );
    expect(h.cache.calls.fence).toBe(0);
  });

  it('when an order image has no valid version, it is skipped without a retry', async () => {
    // Prepare
    const h = harness();

    // Act
    const response = await h.handle({
      Records: [
        streamRecord({
          eventName: 'MODIFY',
          keys: { orderId: 'o-1' },
          oldImage: { orderId: 'o-1' },
          newImage: { orderId: 'o-1', version: 'two' },
          sequenceNumber: '5',
        }),
      ],
    });

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(h.cache.calls.fence).toBe(0);
  });

  it('when a key is fenced, the crash hook is offered the during-invalidation point', async () => {
    // Prepare
    const h = harness();

    // Act
    await h.handle({ Records: [modify('o-1', 1, 2, '100')] });

    // Assess
    expect(h.crash).toHaveBeenCalledWith('during-invalidation');
  });
});

describe('Module: cache-invalidator environment', () => {
  it('when neither REDIS_URL nor the cache endpoint is set, loading fails with a FunctionEnvError naming them', async () => {
    // Act
    const loading = withEnv({ TENANG_STAGE: 'unit', REDIS_URL: '' }, () => {
      delete process.env.REDIS_URL;
      return jest.isolateModulesAsync(async () => {
        await import('../../../examples/reference/functions/cache-invalidator');
      });
    });

    // Assess
    await expect(loading).rejects.toMatchObject({
      name: 'FunctionEnvError',
      problems: expect.arrayContaining([expect.stringMatching(/^CACHE_HOST: is not set/)]) as unknown,
    });
  });
});
