/**
 * cache-invalidator (C2, C3, C5, X7): on every change of an order in the orders table's stream,
 * fences every cache key the change affects (lib/core/cache-keys.ts) with a tombstone at the new
 * version, so no reader can put an older value back. A Redis failure fails the record, so the
 * stream mapping retries it (bisecting the batch) until the cache converges; a record of an
 * entity this function does not know is logged and skipped, never retried forever.
 */
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Context, DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { readOrderChange, sequenceNumberOf } from '../../lib/adapters/aws/order-stream';
import { crashHookFrom, noCrash, type CrashHook } from '../../lib/adapters/crash';
import { parseFunctionEnv, stageConfig } from '../../lib/adapters/lambda-env';
import { observability } from '../../lib/adapters/powertools';
import {
  CACHE_ENV_SHAPE,
  cacheConnectionSettings,
  cacheEnvCheck,
  connectRedis,
} from '../../lib/adapters/redis/connect';
import { RedisCache } from '../../lib/adapters/redis/redis-cache';
import { StageSchema } from '../../lib/config/schema';
import * as z from '../../lib/config/zod';
import {
  cacheKeyspace,
  keysForOrderChange,
  type CacheKeyspace,
  type OrderKeyFields,
} from '../../lib/core/cache-keys';
import { invalidateKeys, type CachePolicySettings } from '../../lib/core/cache-policy';
import type { VersionedCache } from '../../lib/core/ports';

/** Powertools service name of this function. */
export const SERVICE_NAME = 'cache-invalidator';

/** The function's environment. */
export const CacheInvalidatorEnvSchema = z
  .object({
    ...CACHE_ENV_SHAPE,
    TENANG_STAGE: StageSchema.shape.name,
    /** Crash injection points (local platform and chaos tests only). */
    TENANG_CRASH_POINTS: z.optional(z.string()),
  })
  .check(cacheEnvCheck());
export type CacheInvalidatorEnv = z.infer<typeof CacheInvalidatorEnvSchema>;

/** What the handler needs; tests pass a Redis-backed or in-memory cache. */
export interface CacheInvalidatorDeps {
  readonly cache: VersionedCache;
  readonly keyspace: CacheKeyspace;
  readonly settings: CachePolicySettings;
  readonly logger: Logger;
  /** @default noCrash */
  readonly crash?: CrashHook;
}

/** The fields of an image the keys depend on; an image without them is not a readable order. */
const OrderKeyFieldsSchema = z.object({
  orderId: z.string().check(z.minLength(1)),
  version: z.int().check(z.nonnegative()),
});

function keyFields(image: Record<string, unknown> | undefined): OrderKeyFields | undefined | 'invalid' {
  if (image === undefined) return undefined;
  const parsed = OrderKeyFieldsSchema.safeParse(image);
  return parsed.success ? parsed.data : 'invalid';
}

/** A cache invalidator handler. */
export function createHandler(
  deps: CacheInvalidatorDeps,
): (event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse> {
  const crash = deps.crash ?? noCrash;

  async function invalidate(record: DynamoDBRecord): Promise<void> {
    const sequenceNumber = sequenceNumberOf(record);
    const change = readOrderChange(record);
    if (change.kind === 'unknown') {
      deps.logger.warn('stream record of an unknown entity; skipped', {
        sequenceNumber,
        reason: change.reason,
      });
      return;
    }
    const logger = deps.logger.createChild({
      persistentKeys: { orderId: change.orderId, correlationId: change.orderId, sequenceNumber },
    });
    const oldFields = keyFields(change.oldImage);
    const newFields = keyFields(change.newImage);
    if (oldFields === 'invalid' || newFields === 'invalid') {
      // A retry cannot repair the image; the reader refuses such an item too (CorruptOrderError).
      logger.error('order image without a valid orderId and version; skipped', {
        eventName: change.eventName,
      });
      return;
    }
    const invalidations = keysForOrderChange(deps.keyspace, oldFields, newFields);
    crash('before-invalidation');
    try {
      const results = await invalidateKeys(deps.cache, invalidations, deps.settings, () =>
        crash('during-invalidation'),
      );
      logger.info('cache keys invalidated', { eventName: change.eventName, keys: results });
    } catch (error) {
      logger.warn('invalidation failed; the record will be retried', { error: error as Error });
      throw error;
    }
  }

  return async (event, context) => {
    deps.logger.addContext(context);
    return processPartialResponse(event, invalidate, new BatchProcessor(EventType.DynamoDBStreams), {
      context,
      throwOnFullBatchFailure: false,
    });
  };
}

// Module scope: configuration fails at init; the connection lives across invocations.
const env = parseFunctionEnv(SERVICE_NAME, CacheInvalidatorEnvSchema);
const config = stageConfig(env.TENANG_STAGE, env.AWS_REGION);
const { logger } = observability(SERVICE_NAME);
const connection = connectRedis(cacheConnectionSettings(env), {
  commandTimeoutMs: config.stage.cache.commandTimeoutMs,
  onError: (error) => logger.warn('Redis connection error', { error: error.message }),
});

/** The deployed handler. */
export const handler = createHandler({
  cache: new RedisCache(connection.client, { ready: () => connection.ready() }),
  keyspace: cacheKeyspace(env.TENANG_STAGE),
  settings: config.stage.cache,
  logger,
  crash: crashHookFrom(env.TENANG_CRASH_POINTS),
});
