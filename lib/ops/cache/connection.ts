/**
 * The cache commands' Redis (C6): reached with the functions' variables
 * (lib/adapters/redis/connect.ts) and owned by the command, which closes it: `run` destroys the
 * AWS clients only.
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
import { CacheUnavailableError } from '../../core/errors';
import { CommandFailedError, UsageError, type CliContext } from '../cli-context';
import { CONNECTION_HELP } from './messages';

/** How long the CLI waits for the first connection (TLS and IAM auth from an SSM session), milliseconds. */
const CLI_CONNECT_TIMEOUT_MS = 5_000;

const CacheCliEnvSchema = z.object({ ...CACHE_ENV_SHAPE }).check(cacheEnvCheck());

/** Where the connection goes, without credentials (a REDIS_URL may carry a password). */
function describeTarget(settings: CacheConnectionSettings): string {
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
      parseFunctionEnv('tenang cache', CacheCliEnvSchema, ctx.env ?? process.env),
    );
  } catch (error) {
    if (error instanceof FunctionEnvError) {
      throw new UsageError(
        `the cache connection is not configured:\n${error.problems.map((p) => `  - ${p}`).join('\n')}\n${CONNECTION_HELP}`,
      );
    }
    throw error;
  }
}

/** Runs `use` with a RedisCache on `settings` and closes the connection afterwards. */
export async function withCache<R>(
  ctx: CliContext,
  settings: CacheConnectionSettings,
  use: (cache: RedisCache) => Promise<R>,
): Promise<R> {
  const connection = connectRedis(settings, {
    // The functions' timeout (D4): a SCAN batch and its pipelined evictions take milliseconds.
    commandTimeoutMs: ctx.config.stage.cache.commandTimeoutMs,
    connectTimeoutMs: CLI_CONNECT_TIMEOUT_MS,
    // The CLI's credential chain (profile, SSO, instance role), not only the Lambda variables.
    credentials: () => ctx.clients.dynamodb.config.credentials(),
  });
  try {
    return await use(new RedisCache(connection.client, { ready: () => connection.ready() }));
  } catch (error) {
    if (error instanceof CacheUnavailableError) {
      throw new CommandFailedError(
        `cannot use the cache at ${describeTarget(settings)}: ${error.message}\n${CONNECTION_HELP}`,
      );
    }
    throw error;
  } finally {
    await connection.close();
  }
}
