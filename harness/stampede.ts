/**
 * The hot-key stampede (C4), measured against a real Redis: many readers of one expired key,
 * spread over simulated function instances (each with its own Redis connections and its own
 * in-process single-flight), all asking at once. The loader stands in for DynamoDB with a fixed
 * latency and counts its calls. The integration tests and the benchmark both call this.
 */
import { randomBytes } from 'node:crypto';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { setTimeout as sleepMs } from 'node:timers/promises';
import { stageConfig } from '../lib/adapters/lambda-env';
import { connectRedis, type RedisConnection } from '../lib/adapters/redis/connect';
import { RedisCache } from '../lib/adapters/redis/redis-cache';
import {
  CacheAside,
  type CachedEntityCodec,
  type CachePolicySettings,
  type CacheSource,
} from '../lib/core/cache-policy';
import { landingSignalKey, loadLockKey } from '../lib/core/cache-keys';
import type { CacheEntry, Landing, LandingMark, LoadLockAttempt, VersionedCache } from '../lib/core/ports';

/**
 * What guards the key:
 * - `full`: in-process single-flight plus the cross-process load lock (what the reader ships);
 * - `single-flight`: in-process single-flight only (every instance loads once);
 * - `none`: plain cache-aside, every reader that misses loads.
 */
export type StampedeProtection = 'full' | 'single-flight' | 'none';

/** Options of measureStampede. */
export interface StampedeOptions {
  /** Redis to run against. */
  readonly redisUrl: string;
  /** @default 500 */
  readonly readers?: number;
  /** Simulated function instances (connections, in-process flights). @default 10 */
  readonly instances?: number;
  /** Latency of one load from the source of truth, ms. @default 20 */
  readonly loaderLatencyMs?: number;
  /** @default 'full' */
  readonly protection?: StampedeProtection;
  /** @default - the reference pipeline's stage cache settings */
  readonly settings?: CachePolicySettings & { readonly commandTimeoutMs?: number };
  /** Key prefix; the key is deleted afterwards unless keepKey. @default - a random `tenang:stampede:<hex>:` */
  readonly keyPrefix?: string;
  /** Leave the key in Redis (several processes share one stampede, or a warm read follows). @default false */
  readonly keepKey?: boolean;
  /**
   * Epoch ms at which the readers start, after connecting, or what gives it once connected (lines
   * up several processes, however long each took to start). @default now
   */
  readonly startAt?: number | (() => Promise<number>);
}

/** What a stampede cost. */
export interface StampedeResult {
  readonly protection: StampedeProtection;
  readonly readers: number;
  readonly instances: number;
  /** Loads that reached the source of truth: the number that matters. */
  readonly loaderCalls: number;
  /**
   * Redis commands sent while the readers ran, on every connection (the blocking reads' too),
   * script fallbacks (EVAL after NOSCRIPT) included: each is a round trip.
   */
  readonly cacheCommands: number;
  /** cacheCommands by command name (evalsha, get, xread…). */
  readonly commandsByName: Readonly<Record<string, number>>;
  readonly sources: Readonly<Record<CacheSource, number>>;
  /** Per-read latency, ms. */
  readonly latencyMs: LatencyPercentiles;
  /** From the first read to the last answer, ms. */
  readonly wallMs: number;
  /** How long after `startAt` the readers started (a process that arrived late finds the key loaded), ms. */
  readonly lateByMs: number;
}

interface HotValue {
  readonly version: number;
  readonly payload: string;
}

const CODEC: CachedEntityCodec<HotValue> = {
  parse: (raw) => (typeof (raw as HotValue | null)?.version === 'number' ? (raw as HotValue) : undefined),
  version: (value) => value.version,
};

/** A cache whose load lock is always free and costs no command: single-flight alone. */
class LocklessCache implements VersionedCache {
  public constructor(private readonly inner: VersionedCache) {}

  public get(key: string): Promise<CacheEntry | undefined> {
    return this.inner.get(key);
  }

  public putIfNewer(
    key: string,
    version: number,
    value: unknown,
    ttlMs: number,
  ): Promise<'written' | 'fenced'> {
    return this.inner.putIfNewer(key, version, value, ttlMs);
  }

  public fence(key: string, version: number, ttlMs: number): Promise<'fenced' | 'superseded'> {
    return this.inner.fence(key, version, ttlMs);
  }

  public tryLoadLock(): Promise<LoadLockAttempt> {
    return Promise.resolve({ acquired: true });
  }

  public releaseLoadLock(): Promise<void> {
    return Promise.resolve();
  }

  public waitForLanding(_key: string, _since: LandingMark, _timeoutMs: number): Promise<Landing> {
    return Promise.reject(new Error('nobody waits: the lock is always free'));
  }
}

/**
 * Counts the Redis commands this process sends from now until `stop()`: ioredis publishes each
 * command it writes, on any connection, to the `ioredis:command` tracing channel.
 */
function countRedisCommands(): { stop(): Record<string, number> } {
  const counts: Record<string, number> = {};
  const channel = 'tracing:ioredis:command:start';
  const onCommand = (context: unknown): void => {
    const name = (context as { command?: unknown }).command;
    const command = typeof name === 'string' ? name : 'unknown';
    counts[command] = (counts[command] ?? 0) + 1;
  };
  subscribe(channel, onCommand);
  return {
    stop: () => {
      unsubscribe(channel, onCommand);
      return counts;
    },
  };
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, index)] ?? 0;
}

/** The median, the 99th percentile (nearest rank) and the maximum of some latencies. */
export interface LatencyPercentiles {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** p50, p99 and max of `values`, ms; 0 each when there are none. */
export function latencyPercentiles(values: readonly number[]): LatencyPercentiles {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? 0 };
}

/** The hot key of a stampede under `prefix`: its id is a hash tag, as an entity's is. */
export function stampedeKey(prefix: string): string {
  return `${prefix}hot:{item-1}`;
}

/** Redis command timeout of the simulated instances unless the settings give one. */
export const STAMPEDE_COMMAND_TIMEOUT_MS = 5_000;

/** Runs one stampede on a fresh (absent, i.e. expired) key and reports what it cost. */
export async function measureStampede(options: StampedeOptions): Promise<StampedeResult> {
  const readers = options.readers ?? 500;
  const instanceCount = options.instances ?? 10;
  const latency = options.loaderLatencyMs ?? 20;
  const protection = options.protection ?? 'full';
  const reference = stageConfig('bench', 'us-east-1').stage.cache;
  const settings = options.settings ?? reference;
  // The measurement counts loader calls: on a loaded machine 500 readers' commands can queue past
  // the functions' short timeout, which would turn a slow answer into a failed read, not a count.
  const commandTimeoutMs = options.settings?.commandTimeoutMs ?? STAMPEDE_COMMAND_TIMEOUT_MS;
  const prefix = options.keyPrefix ?? `tenang:stampede:${randomBytes(4).toString('hex')}:`;
  const key = stampedeKey(prefix);

  let loaderCalls = 0;
  const load = async (): Promise<HotValue> => {
    loaderCalls += 1;
    await sleepMs(latency);
    return { version: 1, payload: 'x'.repeat(512) };
  };

  const connections: RedisConnection[] = [];
  const instances = Array.from({ length: instanceCount }, () => {
    const connection = connectRedis({ kind: 'url', url: options.redisUrl }, { commandTimeoutMs });
    connections.push(connection);
    const redis = new RedisCache(connection);
    const cache = protection === 'full' ? redis : new LocklessCache(redis);
    const policy = new CacheAside<HotValue>(settings, CODEC, {
      cache,
      clock: () => new Date(),
      random: Math.random,
    });
    return { cache, policy };
  });

  const naiveRead = async (cache: VersionedCache): Promise<CacheSource> => {
    const entry = await cache.get(key);
    if (entry?.kind === 'value') return 'hit';
    const value = await load();
    await cache.putIfNewer(key, value.version, value, settings.ttlSeconds * 1000);
    return 'miss';
  };

  try {
    // Connect every instance first, the connection its waits block on included (a warm Lambda
    // instance has both): the stampede measures reads, not cold connections.
    await Promise.all(
      connections.map(async (c) => {
        await c.ready();
        if (protection === 'full') await c.withBlockingClient(() => Promise.resolve());
      }),
    );
    const startAt =
      typeof options.startAt === 'function' ? await options.startAt() : (options.startAt ?? Date.now());
    await sleepMs(Math.max(0, startAt - Date.now()));
    const lateByMs = Math.max(0, Date.now() - startAt);
    const sources: Record<CacheSource, number> = { hit: 0, miss: 0, bypass: 0 };
    const counting = countRedisCommands();
    const latencies: number[] = [];
    const started = performance.now();
    await Promise.all(
      Array.from({ length: readers }, async (_, i) => {
        const instance = instances[i % instanceCount];
        if (instance === undefined) throw new Error('no instance');
        const t0 = performance.now();
        const source =
          protection === 'none'
            ? await naiveRead(instance.cache)
            : (await instance.policy.read(key, load)).source;
        latencies.push(performance.now() - t0);
        sources[source] += 1;
      }),
    );
    const wallMs = performance.now() - started;
    const commandsByName = counting.stop();
    return {
      protection,
      readers,
      instances: instanceCount,
      loaderCalls,
      cacheCommands: Object.values(commandsByName).reduce((sum, n) => sum + n, 0),
      commandsByName,
      sources,
      latencyMs: latencyPercentiles(latencies),
      wallMs,
      lateByMs,
    };
  } finally {
    const first = connections[0];
    if (first !== undefined && options.keepKey !== true) {
      await first.client.del(key, loadLockKey(key), landingSignalKey(key)).catch(() => undefined);
    }
    await Promise.all(connections.map((c) => c.close()));
  }
}
