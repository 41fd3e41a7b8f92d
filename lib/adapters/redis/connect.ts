/**
 * The Redis connection of a cache-using function, from its environment:
 * - `REDIS_URL` when set (the local platform's Redis);
 * - else `CACHE_HOST`/`CACHE_PORT` with TLS (`CACHE_TLS`), and for `CACHE_AUTH=iam` an ElastiCache
 *   IAM token as the password of `CACHE_USER`, replaced before it expires.
 * A down Redis fails fast: no offline queue, one retry at most, a short command timeout (D4).
 * Blocking reads (a stampede's waiters, C4) run on connections of their own, opened on first use.
 */
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import Redis, { type RedisOptions } from 'ioredis';
import * as z from '../../config/zod';
import { CacheUnavailableError } from '../../core/errors';
import { environmentCredentials, IamTokenSource, type IamTokenTarget } from './elasticache-iam';

const nonEmpty = (): z.ZodMiniString<string> => z.string().check(z.minLength(1));

/** Variables every cache-using function reads (lib/infra/cache.ts sets them, the local platform sets REDIS_URL). */
export const CACHE_ENV_SHAPE = {
  AWS_REGION: z.optional(nonEmpty()),
  REDIS_URL: z.optional(
    z.string().check(z.regex(/^rediss?:\/\/\S+$/, 'must be a redis:// or rediss:// URL')),
  ),
  CACHE_AUTH: z.optional(z.enum(['iam', 'none'])),
  CACHE_HOST: z.optional(nonEmpty()),
  CACHE_PORT: z.optional(z.string().check(z.regex(/^\d{1,5}$/, 'must be a port number'))),
  CACHE_NAME: z.optional(nonEmpty()),
  CACHE_USER: z.optional(nonEmpty()),
  CACHE_TLS: z.optional(z.enum(['true', 'false'])),
};

/** The cache variables, parsed. */
export interface CacheEnv {
  readonly AWS_REGION?: string | undefined;
  readonly REDIS_URL?: string | undefined;
  readonly CACHE_AUTH?: 'iam' | 'none' | undefined;
  readonly CACHE_HOST?: string | undefined;
  readonly CACHE_PORT?: string | undefined;
  readonly CACHE_NAME?: string | undefined;
  readonly CACHE_USER?: string | undefined;
  readonly CACHE_TLS?: 'true' | 'false' | undefined;
}

/** The cross-variable rules: what must be set when REDIS_URL is not. Add it with `.check(...)`. */
export function cacheEnvCheck<T extends CacheEnv>(): z.core.$ZodCheck<T> {
  return z.superRefine((env: T, ctx) => {
    if (env.REDIS_URL !== undefined) return;
    const need = (name: keyof CacheEnv, why: string): void => {
      if (env[name] === undefined)
        ctx.addIssue({ code: 'custom', path: [name], message: `is not set (${why})` });
    };
    need('CACHE_HOST', 'needed when REDIS_URL is not set');
    need('CACHE_PORT', 'needed when REDIS_URL is not set');
    need('CACHE_AUTH', 'needed when REDIS_URL is not set');
    if (env.CACHE_AUTH === 'iam') {
      need('CACHE_NAME', 'needed for CACHE_AUTH=iam');
      need('CACHE_USER', 'needed for CACHE_AUTH=iam');
      need('AWS_REGION', 'needed for CACHE_AUTH=iam');
    }
  });
}

/** Where and how to connect. */
export type CacheConnectionSettings =
  | { readonly kind: 'url'; readonly url: string }
  | {
      readonly kind: 'endpoint';
      readonly host: string;
      readonly port: number;
      readonly tls: boolean;
      /** Undefined: no AUTH (CACHE_AUTH=none). */
      readonly iam: IamTokenTarget | undefined;
    };

/** Settings from a parsed environment (checked with cacheEnvCheck). */
export function cacheConnectionSettings(env: CacheEnv): CacheConnectionSettings {
  if (env.REDIS_URL !== undefined) return { kind: 'url', url: env.REDIS_URL };
  const required = (name: keyof CacheEnv): string => {
    const value = env[name];
    if (value === undefined)
      throw new Error(`${name} is not set; parse the environment with cacheEnvCheck first`);
    return value;
  };
  return {
    kind: 'endpoint',
    host: required('CACHE_HOST'),
    port: Number(required('CACHE_PORT')),
    tls: env.CACHE_TLS === 'true',
    iam:
      env.CACHE_AUTH === 'iam'
        ? {
            cacheName: required('CACHE_NAME'),
            userId: required('CACHE_USER'),
            region: required('AWS_REGION'),
            // lib/infra/cache.ts deploys ElastiCache Serverless only.
            serverless: true,
          }
        : undefined,
  };
}

/** Options of connectRedis. */
export interface RedisConnectionOptions {
  /** Per-command timeout, milliseconds (stage.cache.commandTimeoutMs). */
  readonly commandTimeoutMs: number;
  /** How long the first use waits for the first connection. @default max(1000, 4 × commandTimeoutMs) */
  readonly connectTimeoutMs?: number;
  /**
   * Credentials that sign IAM tokens. @default - the Lambda environment's (AWS_ACCESS_KEY_ID,
   * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)
   */
  readonly credentials?: AwsCredentialIdentityProvider;
  /** @default () => new Date() */
  readonly clock?: () => Date;
  /** Connection errors (they never carry the token). @default - ignored */
  readonly onError?: (error: Error) => void;
  /** At most one error is reported per interval: a down Redis is retried every ≤ 2 s. @default 10000 */
  readonly errorReportIntervalMs?: number;
  /** Blocking reads in flight at once, each on a connection of its own; more wait their turn. @default 4 */
  readonly maxBlockingClients?: number;
}

/** Blocking reads in flight at once unless the options say otherwise. */
const DEFAULT_MAX_BLOCKING_CLIENTS = 4;

/**
 * A lazily opened connection that is made ready (and re-authenticated) before each use, and the
 * connections its blocking reads run on.
 */
export class RedisConnection {
  /** The ioredis client; call `ready()` before using it. */
  public readonly client: Redis;
  private readonly firstConnects = new WeakMap<Redis, Promise<void>>();
  private readonly connectTimeoutMs: number;
  private readonly tokens: IamTokenSource | undefined;
  private readonly commandTimeoutMs: number;
  private readonly maxBlockingClients: number;
  private readonly reportError: (error: Error) => void;
  /** Every blocking client opened; the idle ones; the reads waiting for one. */
  private readonly blockingClients: Redis[] = [];
  private readonly idleBlockingClients: Redis[] = [];
  private readonly blockingTurns: ((client: Redis) => void)[] = [];

  public constructor(settings: CacheConnectionSettings, options: RedisConnectionOptions) {
    this.tokens =
      settings.kind === 'endpoint' && settings.iam !== undefined
        ? new IamTokenSource(settings.iam, options.credentials ?? environmentCredentials(), options.clock)
        : undefined;
    this.connectTimeoutMs = options.connectTimeoutMs ?? Math.max(1000, 4 * options.commandTimeoutMs);
    this.commandTimeoutMs = options.commandTimeoutMs;
    this.maxBlockingClients = Math.max(1, options.maxBlockingClients ?? DEFAULT_MAX_BLOCKING_CLIENTS);
    // disconnectTimeout is read by ioredis but missing from its types: how long a closing socket
    // may linger before it is destroyed (default 2 s, which keeps a test process alive).
    const common: RedisOptions & { disconnectTimeout: number } = {
      disconnectTimeout: options.commandTimeoutMs,
      lazyConnect: true,
      commandTimeout: options.commandTimeoutMs,
      connectTimeout: this.connectTimeoutMs,
      // A down Redis fails the command at once; the reader falls back to DynamoDB (C5).
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      autoResubscribe: false,
      // No CLIENT SETINFO round trips on connect: a cold start pays for every one.
      disableClientInfo: true,
      // Reconnect in the background with a capped backoff.
      retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
    };
    if (settings.kind === 'url') {
      this.client = new Redis(settings.url, common);
    } else {
      this.client = new Redis({
        ...common,
        host: settings.host,
        port: settings.port,
        tls: settings.tls ? {} : undefined,
        username: settings.iam?.userId,
      });
    }
    const onError = options.onError ?? ((): void => undefined);
    const interval = options.errorReportIntervalMs ?? 10_000;
    let lastReportMs = Number.NEGATIVE_INFINITY;
    this.reportError = (error: Error): void => {
      const now = Date.now();
      if (now - lastReportMs < interval) return;
      lastReportMs = now;
      onError(error);
    };
    // Without a listener ioredis prints every connection error to the console.
    this.client.on('error', this.reportError);
  }

  /**
   * Replaces a stale IAM token (so the next reconnect authenticates) and, on first use, waits for
   * the first connection for at most connectTimeoutMs. Afterwards a lost connection makes commands
   * fail fast while ioredis reconnects in the background.
   * @throws CacheUnavailableError when no token can be signed.
   */
  public async ready(): Promise<void> {
    await this.refreshToken();
    await this.connected(this.client);
  }

  /**
   * Runs `read`, a blocking command (XREAD BLOCK), on a connection of its own, and keeps that
   * connection for the next one. Why not the shared client: Redis answers a connection's commands
   * in order, so every other command of this process would queue behind the block (the order
   * reader's other reads included), and the shared client's commandTimeout would kill a block
   * longer than it. Why several: one blocked connection serves one wait at a time, so waits on
   * different keys each take one (a Lambda instance serves one invocation at a time, so it
   * usually opens one); past maxBlockingClients they wait their turn. These connections have no
   * commandTimeout: ioredis ends a blocking command that outlives its BLOCK by more than a
   * commandTimeout (blockingTimeout), as if it had timed out, so a lost Redis cannot hang a wait.
   * @throws CacheUnavailableError when no token can be signed.
   */
  public async withBlockingClient<R>(read: (client: Redis) => Promise<R>): Promise<R> {
    await this.refreshToken();
    const client = await this.blockingClient();
    try {
      await this.connected(client);
      return await read(client);
    } finally {
      const next = this.blockingTurns.shift();
      if (next === undefined) this.idleBlockingClients.push(client);
      else next(client);
    }
  }

  /** Closes the connection and those of its blocking reads. */
  public async close(): Promise<void> {
    await Promise.all([this.client, ...this.blockingClients].map((client) => closeClient(client)));
  }

  /** Replaces a stale IAM token on every client, so that each authenticates when it (re)connects. */
  private async refreshToken(): Promise<void> {
    if (this.tokens?.isStale() !== true) return;
    let token: string;
    try {
      token = await this.tokens.token();
    } catch (error) {
      throw new CacheUnavailableError('could not sign an ElastiCache IAM token', { cause: error });
    }
    for (const client of [this.client, ...this.blockingClients]) client.options.password = token;
  }

  private blockingClient(): Promise<Redis> {
    const idle = this.idleBlockingClients.pop();
    if (idle !== undefined) return Promise.resolve(idle);
    if (this.blockingClients.length >= this.maxBlockingClients) {
      return new Promise((resolve) => this.blockingTurns.push(resolve));
    }
    // A duplicate has the shared client's options (endpoint, TLS, user, current token).
    const client = this.client.duplicate({
      commandTimeout: undefined,
      blockingTimeout: this.commandTimeoutMs,
      blockingTimeoutGrace: this.commandTimeoutMs,
    });
    client.on('error', this.reportError);
    this.blockingClients.push(client);
    return Promise.resolve(client);
  }

  /** On first use, waits for `client`'s first connection for at most connectTimeoutMs. */
  private async connected(client: Redis): Promise<void> {
    if (client.status === 'ready') return;
    let first = this.firstConnects.get(client);
    if (first === undefined) {
      first = this.connectOnce(client);
      this.firstConnects.set(client, first);
    }
    await first;
  }

  private connectOnce(client: Redis): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        client.off('ready', done);
        resolve();
      };
      const timer = setTimeout(done, this.connectTimeoutMs);
      client.once('ready', done);
      // A failure is reported on 'error' and retried by the retry strategy.
      if (client.status === 'wait') client.connect().catch(() => undefined);
    });
  }
}

async function closeClient(client: Redis): Promise<void> {
  if (client.status === 'ready') {
    try {
      await client.quit();
      return;
    } catch {
      // fall through to a hard disconnect
    }
  }
  client.disconnect();
}

/** Opens (lazily) the connection described by `settings`. */
export function connectRedis(
  settings: CacheConnectionSettings,
  options: RedisConnectionOptions,
): RedisConnection {
  return new RedisConnection(settings, options);
}
