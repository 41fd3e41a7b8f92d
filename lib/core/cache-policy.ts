/**
 * Cache-aside over a VersionedCache (C1, C3, C4, C5, X7).
 *
 * - Reads: a cached value is a hit; otherwise the source of truth is loaded and written back
 *   with a jittered TTL, so keys written together do not expire together (C1).
 * - Stampede (C4): concurrent reads of one key in a process share one flight; across processes a
 *   short lock (SET NX PX) lets one caller load while the others wait for the landing its release
 *   signals, which hands them the value: they are woken when the value lands, not after a pause.
 *   A caller that waited too long loads by itself: a read is never failed by the protection.
 * - Staleness (C3): the write-back is version-checked in the cache (atomically), and an
 *   invalidation leaves a tombstone at the version it invalidated, so a reader that loaded an old
 *   version can never overwrite a newer value or a newer invalidation.
 * - Redis down (C5): any CacheUnavailableError turns the read into a `bypass` served by the
 *   loader, without a write-back.
 */
import type { Random } from './backoff';
import type { KeyInvalidation } from './cache-keys';
import { CacheUnavailableError } from './errors';
import type { CachedValue, CacheEntry, Clock, Landing, LoadLockAttempt, VersionedCache } from './ports';

/** Where a read was served from: the cache, the source of truth after a miss, or the source of truth because the cache was unavailable. */
export type CacheSource = 'hit' | 'miss' | 'bypass';

/** The outcome of a read. */
export interface CacheRead<T> {
  readonly source: CacheSource;
  /** Undefined when the source of truth has no such entity. */
  readonly value: T | undefined;
}

/** Loads an entity from the source of truth; undefined when it does not exist. */
export type Loader<T> = () => Promise<T | undefined>;

/** How a cached entity is checked and versioned. */
export interface CachedEntityCodec<T> {
  /** The value if `raw` is a valid cached entity; undefined makes it a miss (e.g. an old format). */
  parse(raw: unknown): T | undefined;
  /** The entity's version (incremented by every write of the source of truth). */
  version(value: T): number;
}

/** The stage's cache settings (lib/config: stage.cache) the policy uses. */
export interface CachePolicySettings {
  /** Base TTL of a cached value, seconds. */
  readonly ttlSeconds: number;
  /** Jitter as a fraction of the TTL, added at random. */
  readonly ttlJitterRatio: number;
  /** Lifetime of the load lock, milliseconds. */
  readonly loadLockMs: number;
  /** How long a caller that lost the lock waits for the winner's value. @default loadLockMs */
  readonly lockWaitMs?: number;
}

/** Something worth a log line; the policy itself never logs. */
export type CachePolicyEvent =
  | {
      readonly kind: 'cache-unavailable';
      readonly key: string;
      readonly during: string;
      readonly error: CacheUnavailableError;
    }
  | { readonly kind: 'write-back-fenced'; readonly key: string; readonly version: number }
  | { readonly kind: 'lock-wait-expired'; readonly key: string; readonly waitedMs: number };

/** The ports of the policy. */
export interface CachePolicyPorts {
  readonly cache: VersionedCache;
  readonly clock: Clock;
  readonly random: Random;
  /** @default - events are dropped */
  readonly onEvent?: (event: CachePolicyEvent) => void;
}

/** TTL of a written-back value: the base TTL plus up to `ttlJitterRatio` of it, in milliseconds. */
export function ttlWithJitterMs(settings: CachePolicySettings, random: Random): number {
  const base = settings.ttlSeconds * 1000;
  return Math.round(base * (1 + settings.ttlJitterRatio * random()));
}

/**
 * TTL of a tombstone, milliseconds. It must outlive every read in flight when it is written (a
 * reader's load and write-back take at most its function timeout, seconds); the value TTL is far
 * longer than that.
 */
export function tombstoneTtlMs(settings: CachePolicySettings): number {
  return settings.ttlSeconds * 1000;
}

/**
 * The write-back rule, applied atomically by the cache: a value at `version` replaces nothing
 * newer. An equal tombstone admits it (the reader loaded the version the invalidation announced).
 */
export function admitsValue(current: CacheEntry | undefined, version: number): boolean {
  if (current === undefined) return true;
  return current.kind === 'value' ? current.version < version : current.version <= version;
}

/**
 * The invalidation rule, applied atomically by the cache: a tombstone at `version` replaces values
 * up to its version (an equal value is dropped too, to be safe against a writer that forgot to
 * bump the version) and older tombstones. Together the two rules never lower an entry's version.
 */
export function admitsTombstone(current: CacheEntry | undefined, version: number): boolean {
  if (current === undefined) return true;
  return current.kind === 'value' ? current.version <= version : current.version < version;
}

/** A random lock owner token: only its owner may release the lock. */
function lockToken(random: Random): string {
  const part = (): string => Math.floor(random() * 2 ** 52).toString(36);
  return `${part()}${part()}`;
}

/** Cache-aside reads of one entity type. */
export class CacheAside<T> {
  /** Single-flight: reads of a key in progress in this process. */
  private readonly flights = new Map<string, Promise<CacheRead<T>>>();
  private readonly lockWaitMs: number;

  public constructor(
    private readonly settings: CachePolicySettings,
    private readonly codec: CachedEntityCodec<T>,
    private readonly ports: CachePolicyPorts,
  ) {
    this.lockWaitMs = settings.lockWaitMs ?? settings.loadLockMs;
  }

  /**
   * Reads `key`, loading with `load` on a miss. Concurrent reads of one key in this process share
   * one cache look-up and at most one load. Throws only what `load` throws.
   *
   * Limits, by design: a read that joins a flight started before an invalidation gets that
   * flight's value (stale by at most one load); an entity that does not exist is not cached, so
   * concurrent reads of a missing hot key load one after another under the lock.
   */
  public read(key: string, load: Loader<T>): Promise<CacheRead<T>> {
    const running = this.flights.get(key);
    if (running !== undefined) return running;
    const flight = this.readOnce(key, load).finally(() => this.flights.delete(key));
    this.flights.set(key, flight);
    return flight;
  }

  private async readOnce(key: string, load: Loader<T>): Promise<CacheRead<T>> {
    const looked = await this.look(key);
    if (looked === 'unavailable') return this.bypass(load);
    if (looked !== undefined) return { source: 'hit', value: looked };
    return this.loadGuarded(key, load);
  }

  /** The usable cached value, undefined for a miss, or 'unavailable'. */
  private async look(key: string): Promise<T | undefined | 'unavailable'> {
    let entry: CacheEntry | undefined;
    try {
      entry = await this.ports.cache.get(key);
    } catch (error) {
      return this.unavailable(error, key, 'get');
    }
    return entry?.kind === 'value' ? this.codec.parse(entry.value) : undefined;
  }

  /**
   * Loads under the cross-process lock. The lock attempt also reports the value the key holds: a
   * holder that wrote back and released between this caller's miss and its attempt is a hit, not
   * a second load. While another caller holds the lock, waits for the landing its release signals
   * (from the mark the failed attempt returned, so a landing in between is not missed); the
   * landing carries the value the key held at that instant, else (the holder found no entity, was
   * fenced off or failed) the lock is tried again.
   */
  private async loadGuarded(key: string, load: Loader<T>): Promise<CacheRead<T>> {
    const token = lockToken(this.ports.random);
    const started = this.now();
    for (;;) {
      let attempt: LoadLockAttempt;
      try {
        attempt = await this.ports.cache.tryLoadLock(key, token, this.settings.loadLockMs);
      } catch (error) {
        this.unavailable(error, key, 'lock');
        return this.bypass(load);
      }
      const landed = this.usable(attempt.found);
      if (attempt.acquired) {
        try {
          if (landed !== undefined) return { source: 'hit', value: landed };
          return await this.loadAndWriteBack(key, load);
        } finally {
          await this.release(key, token);
        }
      }
      if (landed !== undefined) return { source: 'hit', value: landed };
      const waited = this.now() - started;
      if (waited >= this.lockWaitMs) {
        // The holder is slow or gone: load anyway. The versioned write-back keeps this safe.
        this.ports.onEvent?.({ kind: 'lock-wait-expired', key, waitedMs: waited });
        return this.loadAndWriteBack(key, load);
      }
      let landing: Landing;
      try {
        landing = await this.ports.cache.waitForLanding(key, attempt.since, this.lockWaitMs - waited);
      } catch (error) {
        this.unavailable(error, key, 'wait');
        return this.bypass(load);
      }
      // What the key held when the holder released is safe to return: this read began before
      // that instant, and a tombstone written before it is what the landing carries instead.
      const value = landing.landed ? this.usable(landing.found) : undefined;
      if (value !== undefined) return { source: 'hit', value };
      // Nothing usable landed, or the time ran out: the next attempt may take the lock (or find
      // it expired), else the wait has expired.
    }
  }

  /** The cached value if `found` holds one the codec accepts. */
  private usable(found: CachedValue | undefined): T | undefined {
    return found === undefined ? undefined : this.codec.parse(found.value);
  }

  private async loadAndWriteBack(key: string, load: Loader<T>): Promise<CacheRead<T>> {
    const value = await load();
    if (value !== undefined) await this.writeBack(key, value);
    return { source: 'miss', value };
  }

  private async writeBack(key: string, value: T): Promise<void> {
    const version = this.codec.version(value);
    try {
      const result = await this.ports.cache.putIfNewer(
        key,
        version,
        value,
        ttlWithJitterMs(this.settings, this.ports.random),
      );
      if (result === 'fenced') this.ports.onEvent?.({ kind: 'write-back-fenced', key, version });
    } catch (error) {
      // The value was loaded; the reader still gets it.
      this.unavailable(error, key, 'write-back');
    }
  }

  private async release(key: string, token: string): Promise<void> {
    try {
      // The signal outlives every wait that may still start from a mark taken before it.
      await this.ports.cache.releaseLoadLock(key, token, this.lockWaitMs);
    } catch (error) {
      // The lock expires by itself after loadLockMs; its waiters stop waiting by lockWaitMs.
      this.unavailable(error, key, 'unlock');
    }
  }

  private async bypass(load: Loader<T>): Promise<CacheRead<T>> {
    return { source: 'bypass', value: await load() };
  }

  /** Reports a cache failure; anything but CacheUnavailableError is a bug and is rethrown. */
  private unavailable(error: unknown, key: string, during: string): 'unavailable' {
    if (!(error instanceof CacheUnavailableError)) throw error;
    this.ports.onEvent?.({ kind: 'cache-unavailable', key, during, error });
    return 'unavailable';
  }

  private now(): number {
    return this.ports.clock().getTime();
  }
}

/** What an invalidation did to one key. */
export interface KeyInvalidationResult extends KeyInvalidation {
  /** 'fenced' when a tombstone was written; 'superseded' when the key already held something newer. */
  readonly result: 'fenced' | 'superseded';
}

/**
 * Writes a tombstone for every key an entity change affects (C2, C3). Throws CacheUnavailableError
 * when the cache does not answer, so the change is retried until it converges (C5).
 * `afterKey` runs after each key is fenced (crash injection, tracing).
 */
export async function invalidateKeys(
  cache: VersionedCache,
  invalidations: readonly KeyInvalidation[],
  settings: CachePolicySettings,
  afterKey: (key: string) => void = () => undefined,
): Promise<KeyInvalidationResult[]> {
  const results: KeyInvalidationResult[] = [];
  for (const invalidation of invalidations) {
    const result = await cache.fence(invalidation.key, invalidation.version, tombstoneTtlMs(settings));
    results.push({ ...invalidation, result });
    afterKey(invalidation.key);
  }
  return results;
}
