/**
 * Cache figures against the real Redis: loader calls, Redis commands and p99 latency per hot-key
 * expiry with 500 readers spread over several processes (each process holds several simulated
 * instances: their own connections and single-flight), naive cache-aside against ours, in rounds
 * that interleave the protections; and Redis round trips per cache hit.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { landingSignalKey, loadLockKey } from '../lib/core/cache-keys';
import { spread } from './backoff';
import {
  measureStampede,
  stampedeKey,
  type StampedeOptions,
  type StampedeProtection,
  type StampedeResult,
} from '../harness/stampede';

/** Latency of one load from the source of truth during the stampede, ms. */
const LOADER_LATENCY_MS = 200;

/** One protection's stampedes over several processes, one a round. */
export interface StampedeFigure {
  readonly protection: StampedeProtection;
  readonly processes: number;
  readonly instancesPerProcess: number;
  /** Readers of one stampede. */
  readonly readers: number;
  /** Loader calls of one stampede: the most in any round. */
  readonly loaderCalls: number;
  /** Every command the processes sent while their readers ran (StampedeResult.cacheCommands): the most in any round. */
  readonly redisCommands: number;
  /** The slowest process's p99 read latency, ms: the median over the rounds. */
  readonly p99Ms: number;
  /** The slowest process's p99 read latency of each round, ms (absent in older results). */
  readonly p99MsByRound?: readonly number[];
  /** How long after the common instant the latest process started reading, ms: the most in any round (absent in older results). */
  readonly lateStartMs?: number;
}

/** The cache section of the report. */
export interface CacheResults {
  readonly stampede: readonly StampedeFigure[];
  /** Redis round trips per read of a warm key (target 1). */
  readonly roundTripsPerHit: number;
  readonly hitReads: number;
}

/** What a stampede worker (bench/stampede-worker.ts) tells the bench over its IPC channel. */
export type StampedeWorkerMessage =
  { readonly kind: 'connected' } | { readonly kind: 'result'; readonly result: StampedeResult };

/** What the bench tells a stampede worker: the epoch ms at which its readers start. */
export interface StampedeStartMessage {
  readonly kind: 'start';
  readonly at: number;
}

/** How long after the last worker has connected every worker starts reading, ms. */
const START_MARGIN_MS = 250;

async function stampedeOverProcesses(
  redisUrl: string,
  protection: StampedeProtection,
  processes: number,
  readersPerProcess: number,
  instancesPerProcess: number,
  keyPrefix: string,
): Promise<StampedeResult[]> {
  const options: StampedeOptions = {
    redisUrl,
    readers: readersPerProcess,
    instances: instancesPerProcess,
    protection,
    keyPrefix,
    keepKey: true,
    // A load slow enough that every process's readers overlap it (a busy table under a stampede).
    loaderLatencyMs: LOADER_LATENCY_MS,
  };
  const workers = Array.from({ length: processes }, () =>
    fork(path.join(__dirname, 'stampede-worker.ts'), [JSON.stringify(options)], {
      execArgv: ['--import', 'tsx'],
      env: process.env,
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    }),
  );
  // A barrier, not a fixed delay: tsx's start-up on a busy machine takes anywhere from one to many
  // seconds, and a process that started reading late would find the key loaded.
  const connected = workers.map((worker) => workerSays(worker, 'connected'));
  const results = workers.map((worker) => workerSays(worker, 'result'));
  try {
    await Promise.all(connected);
    const start: StampedeStartMessage = { kind: 'start', at: Date.now() + START_MARGIN_MS };
    for (const worker of workers) worker.send(start);
    return (await Promise.all(results)).map((message) => message.result);
  } finally {
    for (const worker of workers) if (worker.exitCode === null) worker.kill();
    const { default: Redis } = await import('ioredis');
    const client = new Redis(redisUrl);
    const key = stampedeKey(keyPrefix);
    await client.del(key, loadLockKey(key), landingSignalKey(key));
    client.disconnect();
  }
}

/** The first message of `kind` from `worker`; rejects if it exits before saying it. */
function workerSays<K extends StampedeWorkerMessage['kind']>(
  worker: ChildProcess,
  kind: K,
): Promise<Extract<StampedeWorkerMessage, { kind: K }>> {
  let stderr = '';
  worker.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve, reject) => {
    const onMessage = (message: StampedeWorkerMessage): void => {
      if (message.kind !== kind) return;
      worker.off('message', onMessage);
      worker.off('exit', onExit);
      resolve(message as Extract<StampedeWorkerMessage, { kind: K }>);
    };
    const onExit = (code: number | null): void => {
      worker.off('message', onMessage);
      reject(new Error(`a stampede worker exited (${code}) before saying ${kind}: ${stderr.trim()}`));
    };
    worker.on('message', onMessage);
    worker.once('exit', onExit);
  });
}

/** What one stampede over several processes cost. */
interface StampedeRound {
  readonly readers: number;
  readonly loaderCalls: number;
  readonly redisCommands: number;
  readonly p99Ms: number;
  readonly lateStartMs: number;
}

function round(results: readonly StampedeResult[]): StampedeRound {
  return {
    readers: results.reduce((s, r) => s + r.readers, 0),
    loaderCalls: results.reduce((s, r) => s + r.loaderCalls, 0),
    redisCommands: results.reduce((s, r) => s + r.cacheCommands, 0),
    p99Ms: Math.max(...results.map((r) => r.latencyMs.p99)),
    lateStartMs: Math.max(...results.map((r) => r.lateByMs)),
  };
}

function figure(
  protection: StampedeProtection,
  sizes: CacheSizes,
  rounds: readonly StampedeRound[],
): StampedeFigure {
  return {
    protection,
    processes: sizes.processes,
    instancesPerProcess: sizes.instancesPerProcess,
    readers: Math.max(...rounds.map((r) => r.readers)),
    loaderCalls: Math.max(...rounds.map((r) => r.loaderCalls)),
    redisCommands: Math.max(...rounds.map((r) => r.redisCommands)),
    p99Ms: spread(rounds.map((r) => r.p99Ms)).median,
    p99MsByRound: rounds.map((r) => r.p99Ms),
    lateStartMs: Math.max(...rounds.map((r) => r.lateStartMs)),
  };
}

/** How big the cache section's experiments are. */
export interface CacheSizes {
  readonly processes: number;
  readonly instancesPerProcess: number;
  readonly readersPerProcess: number;
  /**
   * Stampedes per protection, the protections interleaved (in a rotating order): a latency on a
   * shared machine moves between runs, so the p99 is the median over the rounds.
   */
  readonly rounds: number;
  /** Warm reads, one at a time, for the round trips per hit. */
  readonly warmReads: number;
}

/** The report's sizes: 500 readers over 10 processes of 5 simulated instances each, 5 rounds. */
export const CACHE_SIZES: CacheSizes = {
  processes: 10,
  instancesPerProcess: 5,
  readersPerProcess: 50,
  rounds: 5,
  warmReads: 50,
};

const PROTECTIONS: readonly StampedeProtection[] = ['none', 'single-flight', 'full'];

/** Measures the stampede (by default 50 instances × 10 readers over 10 processes, 5 rounds) and warm reads. */
export async function measureCache(opts: {
  redisUrl: string;
  log: (line: string) => void;
  /** @default CACHE_SIZES; the test's smoke passes smaller ones */
  sizes?: CacheSizes;
}): Promise<CacheResults> {
  const sizes = opts.sizes ?? CACHE_SIZES;
  const { processes, instancesPerProcess, readersPerProcess, warmReads: reads } = sizes;
  const rounds = new Map<StampedeProtection, StampedeRound[]>(PROTECTIONS.map((p) => [p, []]));
  for (let n = 0; n < sizes.rounds; n += 1) {
    // A rotating order, so that no protection always runs first (or right after another).
    for (let i = 0; i < PROTECTIONS.length; i += 1) {
      const protection = PROTECTIONS[(n + i) % PROTECTIONS.length] as StampedeProtection;
      const prefix = `tenang:bench:${randomBytes(4).toString('hex')}:`;
      const r = round(
        await stampedeOverProcesses(
          opts.redisUrl,
          protection,
          processes,
          readersPerProcess,
          instancesPerProcess,
          prefix,
        ),
      );
      opts.log(
        `stampede round ${n + 1} ${protection}: ${r.loaderCalls} loader calls for ${r.readers} readers, ${r.redisCommands} Redis commands, p99 ${r.p99Ms.toFixed(0)} ms, last process started ${r.lateStartMs.toFixed(0)} ms late`,
      );
      rounds.get(protection)?.push(r);
    }
  }
  const stampede = PROTECTIONS.map((p) => figure(p, sizes, rounds.get(p) ?? []));
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
