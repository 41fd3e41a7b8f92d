/**
 * The cache commands' direct path (`--direct`, C6): the CLI itself connects to the stage's Redis
 * with the functions' variables (lib/adapters/redis/connect.ts) and runs the cache-admin
 * operations (lib/core/cache-admin.ts) in process; the command owns the connection and closes it
 * (`run` destroys the AWS clients only). On AWS this works only from inside the cache's VPC; the
 * default path invokes the cache-admin function instead (./invoke.ts).
 */
import { FunctionEnvError, parseFunctionEnv } from '../../adapters/lambda-env';
import {
  CACHE_ENV_SHAPE,
  cacheConnectionSettings,
  cacheEnvCheck,
  connectRedis,
  type CacheConnectionSettings,
} from '../../adapters/redis/connect';
import { RedisCache } from '../../adapters/redis/redis-cache';
import * as z from '../../config/zod';
import {
  runCacheAdminRequest,
  type CacheAdminAnswer,
  type CacheAdminRequestInput,
} from '../../core/cache-admin';
import { CacheUnavailableError } from '../../core/errors';
import { CommandFailedError, UsageError, type CliContext } from '../cli-context';
import { DIRECT_HELP, progressPrinter } from './messages';
import { discoverEntitySource } from './source';

/** How long the CLI waits for the first connection (TLS and IAM auth), milliseconds. */
const CLI_CONNECT_TIMEOUT_MS = 5_000;

const CacheCliEnvSchema = z.object({ ...CACHE_ENV_SHAPE }).check(cacheEnvCheck());

/** Where the connection goes, without credentials (a REDIS_URL may carry a password). */
export function describeTarget(settings: CacheConnectionSettings): string {
  if (settings.kind === 'endpoint') return `${settings.host}:${settings.port}`;
  try {
    return new URL(settings.url).host;
  } catch {
    return 'REDIS_URL';
  }
}

/** The cache connection of the CLI's environment; missing variables are a usage error naming them. */
export function cacheTarget(ctx: CliContext): CacheConnectionSettings {
  try {
    return cacheConnectionSettings(
      parseFunctionEnv('tenang cache --direct', CacheCliEnvSchema, ctx.env ?? process.env),
    );
  } catch (error) {
    if (error instanceof FunctionEnvError) {
      throw new UsageError(
        `the cache connection of --direct is not configured:\n${error.problems.map((p) => `  - ${p}`).join('\n')}\n${DIRECT_HELP}`,
      );
    }
    throw error;
  }
}

/** Runs `request` here, on a connection to `settings` that is closed afterwards; progress goes to stderr. */
export async function runDirect(
  ctx: CliContext,
  settings: CacheConnectionSettings,
  request: CacheAdminRequestInput,
): Promise<CacheAdminAnswer> {
  const connection = connectRedis(settings, {
    // The functions' timeout (D4): a SCAN batch and its pipelined evictions take milliseconds.
    commandTimeoutMs: ctx.config.stage.cache.commandTimeoutMs,
    connectTimeoutMs: CLI_CONNECT_TIMEOUT_MS,
    // The CLI's credential chain (profile, SSO, instance role), not only the Lambda variables.
    credentials: () => ctx.clients.dynamodb.config.credentials(),
  });
  try {
    return await runCacheAdminRequest(
      {
        stage: ctx.stage,
        settings: ctx.config.stage.cache,
        cache: new RedisCache(connection),
        source: () => discoverEntitySource(ctx),
        progress: (what) => progressPrinter(ctx.err, ctx.now, what),
        random: Math.random,
      },
      request,
    );
  } catch (error) {
    if (error instanceof CacheUnavailableError) {
      throw new CommandFailedError(
        `cannot use the cache at ${describeTarget(settings)}: ${error.message}\n${DIRECT_HELP}`,
      );
    }
    throw error;
  } finally {
    await connection.close();
  }
}
