/**
 * Ports the core needs; adapters implement them (lib/adapters/aws, redis, http, fakes).
 * No port module imports an adapter.
 */

/** Time. */
export type Clock = () => Date;

/**
 * What claiming a dedup key found: 'claimed' (it was free, or its record had expired), 'done' (a
 * confirmed record: the guarded work happened) or 'in-flight' (another attempt's unexpired claim:
 * that attempt is still working, or died and its claim has not expired yet).
 */
export type ClaimResult = 'claimed' | 'done' | 'in-flight';

/**
 * Producer-side and consumer-side dedup records (Q1), with a TTL. A claim is short and marked
 * in flight while the guarded work runs, so a dead attempt's claim expires and its work is
 * retried instead of being taken for done; confirm makes it a long 'done' record. An expired
 * record counts as absent.
 */
export interface DedupStore {
  /**
   * Claims `key` as in flight for `ttlSeconds`, in one conditional write. With `owner`, an
   * in-flight claim held by the same owner is taken over ('claimed'): for callers whose owner is
   * only ever worked on by one attempt at a time, so a claim of theirs still in flight belongs to
   * an attempt that has ended (a stream record: Lambda delivers a shard's records to one
   * invocation at a time, so the record's redelivery means its previous attempt is over).
   */
  claim(key: string, ttlSeconds: number, owner?: string): Promise<ClaimResult>;
  /** Marks `key` done for `ttlSeconds` from now: the guarded work succeeded. */
  confirm(key: string, ttlSeconds: number): Promise<void>;
  /** Gives a claim back (the work it guarded failed and must be retried). */
  release(key: string): Promise<void>;
}

/**
 * What a cache key holds (C1, C3, X7): a value at an entity version, or a tombstone written by an
 * invalidation that fences off every version below its own.
 */
export type CacheEntry =
  | { readonly kind: 'value'; readonly version: number; readonly value: unknown }
  | { readonly kind: 'tombstone'; readonly version: number };

/**
 * A cache whose writes are ordered by entity version, so a slow reader can never put back a value
 * older than a newer value or a newer invalidation. Every method throws CacheUnavailableError
 * when the cache does not answer in time.
 */
export interface VersionedCache {
  /** The entry under `key`, or undefined (absent, expired or unreadable). */
  get(key: string): Promise<CacheEntry | undefined>;
  /**
   * Stores `value` at `version` unless the key holds a value at ≥ `version` or a tombstone at
   * > `version`; atomic. 'fenced' when it did not write.
   */
  putIfNewer(key: string, version: number, value: unknown, ttlMs: number): Promise<'written' | 'fenced'>;
  /**
   * Writes a tombstone at `version` unless the key holds a value at > `version` or a tombstone at
   * ≥ `version`; atomic. 'superseded' when something newer was already there.
   */
  fence(key: string, version: number, ttlMs: number): Promise<'fenced' | 'superseded'>;
  /**
   * Takes the short load lock of entry `key` for `ttlMs` (SET NX PX) if it is free, and reports
   * the value the key holds, if any (a holder may have written back since this caller looked).
   * When another caller holds the lock, says where the key's landing signal stands, in the same
   * atomic step: a landing after the attempt is after that mark, so a wait from it misses none.
   */
  tryLoadLock(key: string, token: string, ttlMs: number): Promise<LoadLockAttempt>;
  /**
   * Releases the load lock of `key` if `token` still owns it, and signals a landing on `key` that
   * carries what the key holds at that instant and stays readable for `signalTtlMs`: every caller
   * waiting on the key wakes, whoever holds the lock now.
   */
  releaseLoadLock(key: string, token: string, signalTtlMs: number): Promise<void>;
  /**
   * Waits until a landing on `key` after `since` is signalled, at most `timeoutMs` (at once if one
   * already was), and says what the key held when the latest one was signalled.
   */
  waitForLanding(key: string, since: LandingMark, timeoutMs: number): Promise<Landing>;
}

/** A cache entry that holds a value. */
export type CachedValue = Extract<CacheEntry, { readonly kind: 'value' }>;

/** Where a key's landing signal stood; opaque outside the cache that gave it. */
export type LandingMark = string;

/**
 * What a load-lock attempt found: whether the lock is now this caller's (else `since` marks the
 * landing signal), and the value the key held, if any.
 */
export type LoadLockAttempt =
  | { readonly acquired: true; readonly found?: CachedValue }
  | { readonly acquired: false; readonly since: LandingMark; readonly found?: CachedValue };

/**
 * What a wait for a landing saw: none before its time ran out, or a landing and the value the key
 * held when it was signalled, if any (none: the holder found no entity, was fenced off, or failed).
 */
export type Landing = { readonly landed: false } | { readonly landed: true; readonly found?: CachedValue };

/** Options of a prefix eviction. */
export interface PrefixEvictionOptions {
  /** SCAN COUNT hint: keys looked at per round trip. @default 500 */
  readonly count?: number;
  /** Keys to leave alone, e.g. the hot keys a flush has just warmed. @default none */
  readonly keep?: ReadonlySet<string>;
  /** Count the values that would be evicted without deleting any. @default false */
  readonly dryRun?: boolean;
  /** Called after each SCAN batch with the running totals (progress of a long scan). @default none */
  readonly onBatch?: (progress: PrefixEviction) => void;
}

/** Result of a prefix eviction. */
export interface PrefixEviction {
  /** Keys under the prefix that SCAN returned. */
  readonly scanned: number;
  /** Cached values deleted (tombstones and locks are kept). */
  readonly evicted: number;
}

/** A VersionedCache that can also evict every cached value under a prefix (the operator's cache admin). */
export interface EvictingCache extends VersionedCache {
  /** Evicts the values under `prefix` with SCAN in batches, keeping tombstones and locks. */
  evictByPrefix(prefix: string, options?: PrefixEvictionOptions): Promise<PrefixEviction>;
}
