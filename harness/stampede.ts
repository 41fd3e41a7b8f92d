/**
 * The hot-key stampede (C4), measured against a real Redis: many readers of one expired key,
 * spread over simulated function instances (each with its own Redis connection and its own
 * in-process single-flight), all asking at once. The loader stands in for DynamoDB with a fixed
 * latency and counts its calls. The integration tests and the benchmark both call this.
 */
import { randomBytes } from 'node:crypto';
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
import type { CacheEntry, VersionedCache } from '../lib/core/ports';

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
  /** Epoch ms at which the readers start, after connecting (lines up several processes). @default now */
  readonly startAt?: number;
}

/** What a stampede cost. */
export interface StampedeResult {
  readonly protection: StampedeProtection;
  readonly readers: number;
  readonly instances: number;
  /** Loads that reached the source of truth: the number that matters. */
  readonly loaderCalls: number;
  /** Redis commands over all readers (round trips). */
  readonly cacheCommands: number;
  readonly sources: Readonly<Record<CacheSource, number>>;
  /** Per-read latency, ms. */
  readonly latencyMs: LatencyPercentiles;
  /** From the first read to the last answer, ms. */
  readonly wallMs: number;
}

interface HotValue {
  readonly version: number;
  readonly payload: string;
}

const CODEC: CachedEntityCodec<HotValue> = {
  parse: (raw) => (typeof (raw as HotValue | null)?.version === 'number' ? (raw as HotValue) : undefined),
  version: (value) => value.version,
};

/** Counts every call that reaches the cache. */
class CountingCache implements VersionedCache {
  public calls = 0;

  public constructor(
    private readonly inner: VersionedCache,
    private readonly lockAlwaysFree: boolean,
  ) {}

  public get(key: string): Promise<CacheEntry | undefined> {
    this.calls += 1;
    return this.inner.get(key);
  }

  public putIfNewer(
    key: string,
    version: number,
    value: unknown,
    ttlMs: number,
  ): Promise<'written' | 'fenced'> {
    this.calls += 1;
    return this.inner.putIfNewer(key, version, value, ttlMs);
  }

  public fence(key: string, version: number, ttlMs: number): Promise<'fenced' | 'superseded'> {
    this.calls += 1;
    return this.inner.fence(key, version, ttlMs);
  }

  public tryLock(key: string, token: string, ttlMs: number): Promise<boolean> {
    if (this.lockAlwaysFree) return Promise.resolve(true);
    this.calls += 1;
    return this.inner.tryLock(key, token, ttlMs);
  }

  public unlock(key: string, token: string): Promise<void> {
    if (this.lockAlwaysFree) return Promise.resolve();
    this.calls += 1;
    return this.inner.unlock(key, token);
  }
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
  const key = `${prefix}hot:{item-1}`;

  let loaderCalls = 0;
  const load = async (): Promise<HotValue> => {
    loaderCalls += 1;
    await sleepMs(latency);
    return { version: 1, payload: 'x'.repeat(512) };
  };

  const connections: RedisConnection[] = [];
  const counters: CountingCache[] = [];
  const instances = Array.from({ length: instanceCount }, () => {
    const connection = connectRedis({ kind: 'url', url: options.redisUrl }, { commandTimeoutMs });
    connections.push(connection);
    const counting = new CountingCache(
      new RedisCache(connection.client, { ready: () => connection.ready() }),
      protection !== 'full',
    );
    counters.push(counting);
    const policy = new CacheAside<HotValue>(settings, CODEC, {
      cache: counting,
      clock: () => new Date(),
      random: Math.random,
      sleep: (ms) => sleepMs(ms),
    });
    return { counting, policy };
  });

  const naiveRead = async (cache: VersionedCache): Promise<CacheSource> => {
    const entry = await cache.get(key);
    if (entry?.kind === 'value') return 'hit';
    const value = await load();
    await cache.putIfNewer(key, value.version, value, settings.ttlSeconds * 1000);
    return 'miss';
  };

  try {
    // Connect every instance first: the stampede measures reads, not cold connections.
    await Promise.all(connections.map((c) => c.ready()));
    if (options.startAt !== undefined) await sleepMs(Math.max(0, options.startAt - Date.now()));
    const sources: Record<CacheSource, number> = { hit: 0, miss: 0, bypass: 0 };
    const latencies: number[] = [];
    const started = performance.now();
    await Promise.all(
      Array.from({ length: readers }, async (_, i) => {
        const instance = instances[i % instanceCount];
        if (instance === undefined) throw new Error('no instance');
        const t0 = performance.now();
        const source =
          protection === 'none'
            ? await naiveRead(instance.counting)
            : (await instance.policy.read(key, load)).source;
        latencies.push(performance.now() - t0);
        sources[source] += 1;
      }),
    );
    const wallMs = performance.now() - started;
    return {
      protection,
      readers,
      instances: instanceCount,
      loaderCalls,
      cacheCommands: counters.reduce((sum, c) => sum + c.calls, 0),
      sources,
      latencyMs: latencyPercentiles(latencies),
      wallMs,
    };
  } finally {
    const first = connections[0];
    if (first !== undefined && options.keepKey !== true) {
      await first.client.del(key, `${key}:lock`).catch(() => undefined);
    }
    await Promise.all(connections.map((c) => c.close()));
  }
}
