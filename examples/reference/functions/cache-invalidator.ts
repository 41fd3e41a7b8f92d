/**
 * cache-invalidator (C2, C3, C5, X7): on every change of an order in the orders table's stream,
 * fences every cache key the change affects (keysForEntityChange, by the order's declared key and
 * version attributes) with a tombstone at the new
 * version, so no reader can put an older value back. A cache that does not answer is retried
 * inside the invocation with full-jitter backoff while time remains (a Redis blip is ridden out
 * there: the stream's own retries are immediate, and ten of them last about a second when Redis
 * refuses connections, after which the records would go to the on-failure queue); then the record
 * fails, so the stream mapping retries it (bisecting the batch) until the cache converges. A record
 * of an entity this function does not know is logged and skipped, never retried forever.
 */
import { stageNameSchema } from 'tenang/config';
import { ORDER_ENTITY, readOrderChange } from '../domain';
import {
  BatchProcessor,
  CACHE_ENV_SHAPE,
  CacheUnavailableError,
  cacheConnectionSettings,
  cacheEnvCheck,
  cacheKeyspace,
  connectRedis,
  crashHookFrom,
  EventType,
  invalidateKeys,
  InvalidEntityImageError,
  keysForEntityChange,
  noCrash,
  observability,
  parseFunctionEnv,
  processPartialResponse,
  RedisCache,
  reportPermissionDenial,
  sequenceNumberOf,
  stageConfig,
  type CacheKeyspace,
  type CachePolicySettings,
  type KeyInvalidation,
  type Context,
  type CrashHook,
  type DynamoDBBatchResponse,
  type DynamoDBRecord,
  type DynamoDBStreamEvent,
  type Logger,
  type Metrics,
  type VersionedCache,
} from 'tenang/runtime';
import * as z from 'tenang/zod';

/** Powertools service name of this function. */
export const SERVICE_NAME = 'cache-invalidator';

/** The function's environment. */
export const CacheInvalidatorEnvSchema = z
  .object({
    ...CACHE_ENV_SHAPE,
    TENANG_STAGE: stageNameSchema(),
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
  /**
   * Counts PermissionDenied when a failure is an access denial. The data path calls no AWS API
   * today (Redis only), so this guards what a change may add. @default none: nothing counted
   */
  readonly metrics?: Metrics;
  /** @default noCrash */
  readonly crash?: CrashHook;
  /** In-invocation retries of an unavailable cache. @default RIDE_OUT */
  readonly rideOut?: RideOutPolicy;
  /** @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
  /** @default Math.random */
  readonly random?: () => number;
}

/** How the invalidator retries a cache that does not answer, inside one invocation. */
export interface RideOutPolicy {
  /** First backoff ceiling, ms; doubles per failed attempt. */
  readonly baseMs: number;
  /** Largest backoff ceiling, ms. */
  readonly capMs: number;
  /** Time left for reporting the batch: no retry starts with less remaining, ms. */
  readonly reserveMs: number;
}

/** Up to ~8 s of a 10 s invocation spent riding out a Redis blip, backoff 100 ms doubling to 2 s. */
export const RIDE_OUT: RideOutPolicy = { baseMs: 100, capMs: 2_000, reserveMs: 2_000 };

/** A cache invalidator handler. */
export function createHandler(
  deps: CacheInvalidatorDeps,
): (event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse> {
  const crash = deps.crash ?? noCrash;

  const rideOut = deps.rideOut ?? RIDE_OUT;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const random = deps.random ?? Math.random;

  /** Runs `attempt` until it succeeds, fails otherwise, or less than the reserve remains. */
  async function withinInvocation<T>(
    context: Context,
    attempt: () => Promise<T>,
    logger: Logger,
  ): Promise<T> {
    for (let failed = 0; ; failed += 1) {
      try {
        return await attempt();
      } catch (error) {
        if (!(error instanceof CacheUnavailableError)) throw error;
        const delay = Math.floor(random() * Math.min(rideOut.capMs, rideOut.baseMs * 2 ** failed));
        if (context.getRemainingTimeInMillis() - delay < rideOut.reserveMs) throw error;
        if (failed === 0)
          logger.warn('cache unavailable; retrying within the invocation', { error: error.message });
        await sleep(delay);
      }
    }
  }

  async function invalidate(record: DynamoDBRecord, context: Context): Promise<void> {
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
    let invalidations: KeyInvalidation[];
    try {
      invalidations = keysForEntityChange(deps.keyspace, ORDER_ENTITY, change.oldImage, change.newImage);
    } catch (error) {
      if (!(error instanceof InvalidEntityImageError)) throw error;
      // A retry cannot repair the image; the reader refuses such an item too (CorruptOrderError).
      logger.error('order image without a valid orderId and version; skipped', {
        eventName: change.eventName,
        problems: error.problems,
      });
      return;
    }
    crash('before-invalidation');
    try {
      const results = await withinInvocation(
        context,
        () => invalidateKeys(deps.cache, invalidations, deps.settings, () => crash('during-invalidation')),
        logger,
      );
      logger.info('cache keys invalidated', { eventName: change.eventName, keys: results });
    } catch (error) {
      const denied =
        deps.metrics !== undefined &&
        reportPermissionDenial(error, {
          logger,
          metrics: deps.metrics,
          during: 'invalidating cache keys',
          extra: { note: "the record fails: the stream's retries, then the on-failure queue, keep it" },
        }) !== undefined;
      if (!denied) logger.warn('invalidation failed; the record will be retried', { error: error as Error });
      throw error;
    }
  }

  return async (event, context) => {
    deps.logger.addContext(context);
    try {
      return await processPartialResponse(
        event,
        (record: DynamoDBRecord) => invalidate(record, context),
        new BatchProcessor(EventType.DynamoDBStreams),
        {
          context,
          throwOnFullBatchFailure: false,
        },
      );
    } finally {
      // Most batches record no metric; publishing nothing would log a warning per batch.
      if (deps.metrics?.hasStoredMetrics() === true) deps.metrics.publishStoredMetrics();
    }
  };
}

// Module scope: configuration fails at init; the connection lives across invocations.
const env = parseFunctionEnv(SERVICE_NAME, CacheInvalidatorEnvSchema);
const config = stageConfig(env.TENANG_STAGE, env.AWS_REGION);
const { logger, metrics } = observability(SERVICE_NAME);
const connection = connectRedis(cacheConnectionSettings(env), {
  commandTimeoutMs: config.stage.cache.commandTimeoutMs,
  onError: (error) => logger.warn('Redis connection error', { error: error.message }),
});

/** The deployed handler. */
export const handler = createHandler({
  cache: new RedisCache(connection),
  keyspace: cacheKeyspace(env.TENANG_STAGE),
  settings: config.stage.cache,
  logger,
  metrics,
  crash: crashHookFrom(env.TENANG_CRASH_POINTS),
});
