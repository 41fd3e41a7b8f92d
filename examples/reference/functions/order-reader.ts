/**
 * order-reader (C1, C4, C5): `GET /orders/{id}` through the cache. A cached order is a hit; a miss
 * loads DynamoDB (strongly consistent) and writes back under the version fence; when Redis is
 * down or slow the order is served from DynamoDB as a bypass. `X-Cache` says which.
 */
import { stageNameSchema } from 'tenang/config';
import { DynamoDbOrderStore, orderCacheKey, OrderSchema, type Order, type OrderStore } from '../domain';
import {
  CACHE_ENV_SHAPE,
  CacheAside,
  cacheConnectionSettings,
  cacheEnvCheck,
  cacheKeyspace,
  classifyError,
  connectRedis,
  errorClassName,
  METRIC,
  MetricUnit,
  newDynamoDbClient,
  observability,
  parseFunctionEnv,
  RedisCache,
  stageConfig,
  type APIGatewayProxyEventV2,
  type APIGatewayProxyStructuredResultV2,
  type CachedEntityCodec,
  type CacheKeyspace,
  type CachePolicyEvent,
  type CachePolicySettings,
  type CacheSource,
  type Clock,
  type Context,
  type Logger,
  type Metrics,
  type VersionedCache,
} from 'tenang/runtime';
import * as z from 'tenang/zod';

/** Powertools service name of this function. */
export const SERVICE_NAME = 'order-reader';

/** Response header naming where the order came from. */
export const CACHE_HEADER = 'X-Cache';

/** The function's environment. */
export const OrderReaderEnvSchema = z
  .object({
    ...CACHE_ENV_SHAPE,
    TENANG_STAGE: stageNameSchema(),
    ORDERS_TABLE: z.string().check(z.minLength(1)),
  })
  .check(cacheEnvCheck());
export type OrderReaderEnv = z.infer<typeof OrderReaderEnvSchema>;

/** An order id as the API accepts it (the envelope's id rule). */
const ORDER_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Orders as the cache stores them: validated on the way out, versioned by `version`. */
export const ORDER_CODEC: CachedEntityCodec<Order> = {
  parse: (raw) => {
    const parsed = OrderSchema.safeParse(raw);
    return parsed.success ? parsed.data : undefined;
  },
  version: (order) => order.version,
};

/** What the handler needs; tests pass fakes or clients bound to the emulator. */
export interface OrderReaderDeps {
  readonly cache: VersionedCache;
  readonly orders: Pick<OrderStore, 'get'>;
  readonly keyspace: CacheKeyspace;
  readonly settings: CachePolicySettings;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** @default () => new Date() */
  readonly clock?: Clock;
  /** @default Math.random */
  readonly random?: () => number;
}

type Response = APIGatewayProxyStructuredResultV2;

function json(statusCode: number, body: unknown, headers: Record<string, string> = {}): Response {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers },
    body: JSON.stringify(body),
  };
}

function logPolicyEvent(logger: Logger, event: CachePolicyEvent): void {
  switch (event.kind) {
    case 'cache-unavailable':
      logger.warn('cache unavailable; serving from DynamoDB', {
        cacheKey: event.key,
        during: event.during,
        error: event.error.message,
      });
      return;
    case 'write-back-fenced':
      logger.info('write-back refused: the cache holds a newer version or invalidation', {
        cacheKey: event.key,
        version: event.version,
      });
      return;
    case 'lock-wait-expired':
      logger.info('waited for another loader too long; loading', {
        cacheKey: event.key,
        waitedMs: event.waitedMs,
      });
  }
}

/** An order reader handler. */
export function createHandler(
  deps: OrderReaderDeps,
): (event: APIGatewayProxyEventV2, context?: Context) => Promise<Response> {
  const cacheAside = new CacheAside<Order>(deps.settings, ORDER_CODEC, {
    cache: deps.cache,
    clock: deps.clock ?? ((): Date => new Date()),
    random: deps.random ?? Math.random,
    onEvent: (event) => logPolicyEvent(deps.logger, event),
  });

  function count(source: CacheSource): void {
    deps.metrics.addMetric(source === 'hit' ? METRIC.cacheHit : METRIC.cacheMiss, MetricUnit.Count, 1);
    if (source === 'bypass') deps.metrics.addMetric(METRIC.cacheBypass, MetricUnit.Count, 1);
  }

  return async (event, context) => {
    if (context !== undefined) deps.logger.addContext(context);
    const orderId = event.pathParameters?.id;
    if (orderId === undefined || !ORDER_ID.test(orderId)) {
      return json(400, { message: 'the order id must be 1-128 letters, digits or . _ : -' });
    }
    const logger = deps.logger.createChild({ persistentKeys: { orderId, correlationId: orderId } });
    try {
      const read = await cacheAside.read(orderCacheKey(deps.keyspace, orderId), () =>
        deps.orders.get(orderId),
      );
      count(read.source);
      const headers = { [CACHE_HEADER]: read.source };
      if (read.value === undefined) return json(404, { message: 'order not found' }, headers);
      logger.debug('order read', { source: read.source, version: read.value.version });
      return json(200, read.value, headers);
    } catch (error) {
      // Only the DynamoDB load can throw here: the cache's failures are bypasses.
      if (classifyError(error) === 'transient') {
        logger.warn('orders table unavailable', { errorClass: errorClassName(error), error: error as Error });
        return json(503, { message: 'try again shortly' }, { 'retry-after': '1' });
      }
      logger.error('order read failed', { errorClass: errorClassName(error), error: error as Error });
      return json(500, { message: 'internal error' });
    } finally {
      deps.metrics.publishStoredMetrics();
    }
  };
}

// Module scope: configuration fails at init; clients and the connection live across invocations.
const env = parseFunctionEnv(SERVICE_NAME, OrderReaderEnvSchema);
const config = stageConfig(env.TENANG_STAGE, env.AWS_REGION);
const { logger, metrics } = observability(SERVICE_NAME);
const connection = connectRedis(cacheConnectionSettings(env), {
  commandTimeoutMs: config.stage.cache.commandTimeoutMs,
  onError: (error) => logger.warn('Redis connection error', { error: error.message }),
});
/** DynamoDB client with the standard SDK timeouts, well under the function's 5 s (D4). */
const dynamo = newDynamoDbClient();

/** The deployed handler. */
export const handler = createHandler({
  cache: new RedisCache(connection),
  orders: new DynamoDbOrderStore(dynamo, env.ORDERS_TABLE),
  keyspace: cacheKeyspace(env.TENANG_STAGE),
  settings: config.stage.cache,
  logger,
  metrics,
});
