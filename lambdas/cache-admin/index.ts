/**
 * Cache admin (C6): the `tenang cache invalidate|flush` operations, run inside the cache's VPC
 * with the cache clients' security group, so an operator reaches the cache with AWS credentials
 * alone (lambda:InvokeFunction on this function): the cache sits in isolated subnets that
 * nothing outside the VPC can reach. The handler is thin: it parses the request at the boundary
 * (lib/core/cache-admin.ts's schema) and runs the same operations the CLI's `--direct` path runs.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { newDynamoDbClient } from '../../lib/adapters/aws/clients';
import { DynamoDbEntitySource, type EntityTable } from '../../lib/adapters/aws/entity-source';
import { parseFunctionEnv, stageConfig } from '../../lib/adapters/lambda-env';
import {
  CACHE_ENV_SHAPE,
  cacheConnectionSettings,
  cacheEnvCheck,
  connectRedis,
} from '../../lib/adapters/redis/connect';
import { RedisCache } from '../../lib/adapters/redis/redis-cache';
import { CACHE_ADMIN_SERVICE } from '../../lib/config/metrics';
import { tableVariable } from '../../lib/config/derive';
import { cachedEntitySources, type CachedEntitySource } from '../../lib/config/load';
import { stageNameSchema } from '../../lib/config/schema';
import * as z from '../../lib/config/zod';
import {
  noEntitySource,
  runCacheAdminRequest,
  type CacheAdminAnswer,
  type CacheAdminDeps,
  type EntitySource,
} from '../../lib/core/cache-admin';
import type { EvictingCache } from '../../lib/core/ports';

/** Powertools service name of this function. */
export const SERVICE_NAME = CACHE_ADMIN_SERVICE;

/** Scan progress is logged at most this often, milliseconds. */
const PROGRESS_LOG_INTERVAL_MS = 5_000;

/**
 * The function's environment: the cache variables every cache client gets. The stack also sets
 * `<NAME>_TABLE` for each cached entity's table (stage.cache.entities), read by entityTables.
 */
export const CacheAdminEnvSchema = z
  .object({
    ...CACHE_ENV_SHAPE,
    TENANG_STAGE: stageNameSchema(),
  })
  .check(cacheEnvCheck());

/** What the handler runs with. */
export interface CacheAdminHandlerDeps {
  readonly stage: string;
  readonly settings: CacheAdminDeps['settings'];
  readonly cache: EvictingCache;
  /** Undefined when the deployment has no entities' table: entity operations are then refused. */
  readonly source: EntitySource | undefined;
  readonly logger: Logger;
  /** @default Math.random */
  readonly random?: () => number;
}

/** The handler over `deps` (tests build it with their own cache and table). */
export function createHandler(
  deps: CacheAdminHandlerDeps,
): (event: unknown, context?: Context) => Promise<CacheAdminAnswer> {
  const { logger } = deps;
  const source = (): Promise<EntitySource> =>
    deps.source === undefined ? Promise.reject(noEntitySource(deps.stage)) : Promise.resolve(deps.source);
  return async (event, context) => {
    if (context !== undefined) logger.addContext(context);
    // Who asked and why, as the CLI says (its own audit trail records the caller's identity too).
    const request = typeof event === 'object' && event !== null ? (event as Record<string, unknown>) : {};
    logger.info('Cache admin request', { operation: request.operation, requestedBy: request.requestedBy });
    let lastProgress = 0;
    const answer = await runCacheAdminRequest(
      {
        stage: deps.stage,
        settings: deps.settings,
        cache: deps.cache,
        source,
        random: deps.random ?? Math.random,
        progress: (what) => (p) => {
          if (Date.now() - lastProgress < PROGRESS_LOG_INTERVAL_MS) return;
          lastProgress = Date.now();
          logger.info('Scan progress', { prefix: what, scanned: p.scanned, evicted: p.evicted });
        },
      },
      event,
    ).catch((error: unknown) => {
      logger.error('Cache admin request failed', { error });
      throw error;
    });
    if (answer.status === 'refused') logger.warn('Cache admin request refused', { message: answer.message });
    else logger.info('Cache admin request done', { operation: answer.operation, warnings: answer.warnings });
    return answer;
  };
}

// Module scope: configuration fails at init; the client and the connection live across invocations.
const env = parseFunctionEnv(SERVICE_NAME, CacheAdminEnvSchema);
const config = stageConfig(env.TENANG_STAGE, env.AWS_REGION);
const logger = new Logger({ serviceName: SERVICE_NAME });
const connection = connectRedis(cacheConnectionSettings(env), {
  commandTimeoutMs: config.stage.cache.commandTimeoutMs,
  onError: (error) => logger.warn('Redis connection error', { error: error.message }),
});

/**
 * Each declared cached entity with its table's physical name, from the `<NAME>_TABLE` variable
 * the stack sets from the same declaration.
 * @throws Error naming the variables missing (a deployment bug: the stack and the bundle disagree)
 */
export function entityTables(
  sources: readonly CachedEntitySource[],
  variables: Readonly<Record<string, string | undefined>>,
): EntityTable[] {
  const missing = sources.map((s) => tableVariable(s.table.name)).filter((v) => !(variables[v] ?? ''));
  if (missing.length > 0) {
    throw new Error(
      `the bundled declaration caches entities whose table variables are not set: ${[...new Set(missing)].join(', ')}`,
    );
  }
  return sources.map((s) => ({
    entity: s.entity,
    tableName: variables[tableVariable(s.table.name)] as string,
  }));
}

/** The entities' source, when the declaration names cached entities. */
function entitySource(tables: readonly EntityTable[]): EntitySource | undefined {
  return tables.length === 0 ? undefined : new DynamoDbEntitySource(newDynamoDbClient(), tables);
}

/** The deployed handler. */
export const handler = createHandler({
  stage: env.TENANG_STAGE,
  settings: config.stage.cache,
  cache: new RedisCache(connection),
  source: entitySource(entityTables(cachedEntitySources(config), process.env)),
  logger,
});
