import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type * as ReaderModule from '../../../examples/reference/functions/order-reader';
import { InMemoryOrderStore } from '../../../harness/fakes/memory-order-store';
import { InMemoryVersionedCache } from '../../../harness/fakes/memory-versioned-cache';
import { METRIC } from '../../../lib/config/metrics';
import { cacheKeyspace } from '../../../lib/core/cache-keys';
import { orderCacheKey } from '../../../examples/reference/domain/order-cache';
import type { CachePolicySettings } from '../../../lib/core/cache-policy';
import { TransientError } from '../../../lib/core/errors';
import type { Order } from '../../../examples/reference/domain/order';

const ENV = {
  TENANG_STAGE: 'unit',
  AWS_REGION: 'eu-west-1',
  ORDERS_TABLE: 'tenang-unit-orders',
  REDIS_URL: 'redis://127.0.0.1:1',
  CACHE_AUTH: 'none',
};
const KS = cacheKeyspace('unit');
const SETTINGS: CachePolicySettings = { ttlSeconds: 300, ttlJitterRatio: 0.2, loadLockMs: 2_000 };

let reader: typeof ReaderModule;

beforeAll(async () => {
  const saved = { ...process.env };
  Object.assign(process.env, ENV);
  try {
    reader = await import('../../../examples/reference/functions/order-reader');
  } finally {
    process.env = saved;
  }
});

afterEach(() => {
  jest.restoreAllMocks();
});

function order(version = 1): Order {
  return {
    orderId: 'ord-1',
    state: 'PENDING',
    version,
    customerEmail: 'buyer@example.com',
    lines: [{ sku: 'sku-a', quantity: 1 }],
    amountMinor: 1250,
    currency: 'EUR',
    createdAt: '2030-06-01T11:00:00.000Z',
    updatedAt: '2030-06-01T11:00:00.000Z',
  };
}

function get(id: string | undefined): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: 'GET /orders/{id}',
    rawPath: `/orders/${id ?? ''}`,
    rawQueryString: '',
    headers: {},
    pathParameters: id === undefined ? undefined : { id },
    isBase64Encoded: false,
    requestContext: {
      accountId: '123456789012',
      apiId: 'api',
      domainName: 'api.example.com',
      domainPrefix: 'api',
      http: {
        method: 'GET',
        path: `/orders/${id ?? ''}`,
        protocol: 'HTTP/1.1',
        sourceIp: '127.0.0.1',
        userAgent: 'jest',
      },
      requestId: 'r-1',
      routeKey: 'GET /orders/{id}',
      stage: '$default',
      time: '01/Jun/2030:12:00:00 +0000',
      timeEpoch: 1_906_804_800_000,
    },
  };
}

function harness() {
  const cache = new InMemoryVersionedCache();
  const orders = new InMemoryOrderStore();
  const metrics = new Metrics({ namespace: 'tenang', serviceName: 'order-reader' });
  jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
  const addMetric = jest.spyOn(metrics, 'addMetric');
  const handle = reader.createHandler({
    cache,
    orders,
    keyspace: KS,
    settings: SETTINGS,
    logger: new Logger({ serviceName: 'order-reader', logLevel: 'SILENT' }),
    metrics,
  });
  const metricNames = (): string[] => addMetric.mock.calls.map(([name]) => name);
  return {
    cache,
    orders,
    handle: (e: APIGatewayProxyEventV2) => handle(e) as Promise<APIGatewayProxyStructuredResultV2>,
    metricNames,
  };
}

describe('Function: order-reader handler', () => {
  it('when the order is not cached, it answers from DynamoDB with X-Cache: miss, then from the cache with X-Cache: hit', async () => {
    // Prepare
    const h = harness();
    await h.orders.create(order(1));

    // Act
    const first = await h.handle(get('ord-1'));
    const second = await h.handle(get('ord-1'));

    // Assess
    expect(first.statusCode).toBe(200);
    expect(first.headers?.[reader.CACHE_HEADER]).toBe('miss');
    expect(second.headers?.[reader.CACHE_HEADER]).toBe('hit');
    expect(JSON.parse(second.body ?? '')).toEqual(order(1));
    expect(h.metricNames()).toEqual([METRIC.cacheMiss, METRIC.cacheHit]);
  });

  it('when the order does not exist, it answers 404 and caches nothing', async () => {
    // Prepare
    const h = harness();

    // Act
    const response = await h.handle(get('ord-missing'));

    // Assess
    expect(response.statusCode).toBe(404);
    expect(response.headers?.[reader.CACHE_HEADER]).toBe('miss');
    expect(h.cache.peek(orderCacheKey(KS, 'ord-missing'))).toBeUndefined();
  });

  it.each([
    ['has a space', 'ord 1'],
    ['is too long', 'x'.repeat(129)],
    ['has a brace (a Redis hash tag)', 'ord{1}'],
    ['is missing', undefined],
  ])('when the id %s, it answers 400 without touching the cache', async (_label, id) => {
    // Prepare
    const h = harness();

    // Act
    const response = await h.handle(get(id));

    // Assess
    expect(response.statusCode).toBe(400);
    expect(h.cache.calls.get).toBe(0);
  });

  it('when Redis is down, it serves the order from DynamoDB with X-Cache: bypass and counts a bypass', async () => {
    // Prepare
    const h = harness();
    await h.orders.create(order(1));
    h.cache.down = true;

    // Act
    const response = await h.handle(get('ord-1'));

    // Assess
    expect(response.statusCode).toBe(200);
    expect(response.headers?.[reader.CACHE_HEADER]).toBe('bypass');
    expect(JSON.parse(response.body ?? '')).toEqual(order(1));
    expect(h.metricNames()).toEqual([METRIC.cacheMiss, METRIC.cacheBypass]);
  });

  it('when DynamoDB fails transiently, it answers 503 with Retry-After', async () => {
    // Prepare
    const h = harness();
    jest.spyOn(h.orders, 'get').mockRejectedValue(new TransientError('throttled'));

    // Act
    const response = await h.handle(get('ord-1'));

    // Assess
    expect(response.statusCode).toBe(503);
    expect(response.headers?.['retry-after']).toBe('1');
  });

  it('when the read fails with a bug, it answers 500 without details', async () => {
    // Prepare
    const h = harness();
    jest.spyOn(h.orders, 'get').mockRejectedValue(new TypeError('boom'));

    // Act
    const response = await h.handle(get('ord-1'));

    // Assess
    expect(response.statusCode).toBe(500);
    expect(response.body).not.toContain('boom');
  });
});
