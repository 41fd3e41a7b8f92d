/**
 * Cache figures against the real Redis: loader calls per hot-key expiry with 500 readers spread
 * over several processes (each process holds several simulated instances: its own connections
 * and single-flight), naive cache-aside against ours; and Redis round trips per cache hit.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { promisify } from 'node:util';
import {
  measureStampede,
  type StampedeOptions,
  type StampedeProtection,
  type StampedeResult,
} from '../harness/stampede';

const run = promisify(execFile);

/** Latency of one load from the source of truth during the stampede, ms. */
const LOADER_LATENCY_MS = 200;

/** One stampede over several processes. */
export interface StampedeFigure {
  readonly protection: StampedeProtection;
  readonly processes: number;
  readonly instancesPerProcess: number;
  readonly readers: number;
  readonly loaderCalls: number;
  readonly redisCommands: number;
  readonly p99Ms: number;
}

/** The cache section of the report. */
export interface CacheResults {
  readonly stampede: readonly StampedeFigure[];
  /** Redis round trips per read of a warm key (target 1). */
  readonly roundTripsPerHit: number;
  readonly hitReads: number;
}

async function stampedeOverProcesses(
  redisUrl: string,
  protection: StampedeProtection,
  processes: number,
  readersPerProcess: number,
  instancesPerProcess: number,
  keyPrefix: string,
  keepKey: boolean,
  startDelayMs: number,
): Promise<StampedeResult[]> {
  // Every process connects first and then waits for this instant (CacheSizes.startDelayMs).
  const startAt = Date.now() + startDelayMs;
  const worker = path.join(__dirname, 'stampede-worker.ts');
  return Promise.all(
    Array.from({ length: processes }, async () => {
      const options: StampedeOptions = {
        redisUrl,
        readers: readersPerProcess,
        instances: instancesPerProcess,
        protection,
        keyPrefix,
        keepKey: true,
        startAt,
        // A load slow enough that every process's readers overlap it (a busy table under a stampede).
        loaderLatencyMs: LOADER_LATENCY_MS,
      };
      const { stdout } = await run(process.execPath, ['--import', 'tsx', worker, JSON.stringify(options)], {
        env: process.env,
      });
      return JSON.parse(stdout) as StampedeResult;
    }),
  ).finally(async () => {
    if (keepKey) return;
    const { default: Redis } = await import('ioredis');
    const client = new Redis(redisUrl);
    await client.del(`${keyPrefix}hot:{item-1}`, `${keyPrefix}hot:{item-1}:lock`);
    client.disconnect();
  });
}

function figure(
  protection: StampedeProtection,
  processes: number,
  instances: number,
  results: readonly StampedeResult[],
): StampedeFigure {
  return {
    protection,
    processes,
    instancesPerProcess: instances,
    readers: results.reduce((s, r) => s + r.readers, 0),
    loaderCalls: results.reduce((s, r) => s + r.loaderCalls, 0),
    redisCommands: results.reduce((s, r) => s + r.cacheCommands, 0),
    p99Ms: Math.max(...results.map((r) => r.latencyMs.p99)),
  };
}

/** How big the cache section's experiments are. */
export interface CacheSizes {
  readonly processes: number;
  readonly instancesPerProcess: number;
  readonly readersPerProcess: number;
  /** Warm reads, one at a time, for the round trips per hit. */
  readonly warmReads: number;
  /**
   * How long after launch every process starts reading, all at once: tsx's start-up on a busy
   * 2-core machine takes seconds, and a process that started late would find the key loaded.
   */
  readonly startDelayMs: number;
}

/** The report's sizes: 500 readers over 10 processes of 5 simulated instances each. */
export const CACHE_SIZES: CacheSizes = {
  processes: 10,
  instancesPerProcess: 5,
  readersPerProcess: 50,
  warmReads: 50,
  startDelayMs: 10_000,
};

/** Measures the stampede (by default 50 instances × 10 readers over 10 processes) and warm reads. */
export async function measureCache(opts: {
  redisUrl: string;
  log: (line: string) => void;
  /** @default CACHE_SIZES; the test's smoke passes smaller ones */
  sizes?: CacheSizes;
}): Promise<CacheResults> {
  const sizes = opts.sizes ?? CACHE_SIZES;
  const { processes, instancesPerProcess, readersPerProcess, warmReads: reads } = sizes;
  const stampede: StampedeFigure[] = [];
  for (const protection of ['none', 'single-flight', 'full'] as const) {
    const prefix = `tenang:bench:${randomBytes(4).toString('hex')}:`;
    const results = await stampedeOverProcesses(
      opts.redisUrl,
      protection,
      processes,
      readersPerProcess,
      instancesPerProcess,
      prefix,
      false,
      sizes.startDelayMs,
    );
    const f = figure(protection, processes, instancesPerProcess, results);
    opts.log(
      `stampede ${protection}: ${f.loaderCalls} loader calls for ${f.readers} readers, ${f.redisCommands} Redis commands`,
    );
    stampede.push(f);
  }
  // Warm reads, one at a time (concurrent reads would share one GET through single-flight).
  const prefix = `tenang:bench:${randomBytes(4).toString('hex')}:`;
  let hits = 0;
  let commands = 0;
  for (let i = 0; i <= reads; i += 1) {
    const r = await measureStampede({
      redisUrl: opts.redisUrl,
      readers: 1,
      instances: 1,
      keyPrefix: prefix,
      keepKey: i < reads,
    });
    // The first read fills the key; the rest are hits.
    if (i > 0) {
      hits += r.sources.hit;
      commands += r.cacheCommands;
    }
  }
  opts.log(`warm reads: ${hits} hits, ${commands} Redis commands`);
  return { stampede, roundTripsPerHit: hits === 0 ? Number.NaN : commands / hits, hitReads: hits };
}
