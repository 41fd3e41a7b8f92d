/** VersionedCache in memory, with the Redis adapter's rules, for unit and property tests. */
import { admitsTombstone, admitsValue } from '../../lib/core/cache-policy';
import { CacheUnavailableError } from '../../lib/core/errors';
import type { CacheEntry, VersionedCache } from '../../lib/core/ports';

interface Stored {
  readonly entry: CacheEntry | { readonly kind: 'lock'; readonly token: string };
  readonly expiresAtMs: number;
}

/** Calls per method, for assertions on round trips. */
export type CacheCallCounts = Record<keyof VersionedCache, number>;

/**
 * An in-memory VersionedCache; every method is atomic (JavaScript runs it without interleaving),
 * as the adapter's Lua scripts are in Redis. Values are stored as JSON, as in Redis.
 */
export class InMemoryVersionedCache implements VersionedCache {
  private readonly items = new Map<string, Stored>();
  /** While true, every call throws CacheUnavailableError (Redis down). */
  public down = false;
  public readonly calls: CacheCallCounts = { get: 0, putIfNewer: 0, fence: 0, tryLock: 0, unlock: 0 };

  /** @param nowMs the clock TTLs are judged by. */
  public constructor(private readonly nowMs: () => number = () => Date.now()) {}

  public get(key: string): Promise<CacheEntry | undefined> {
    return this.run('get', () => this.entry(key));
  }

  public putIfNewer(
    key: string,
    version: number,
    value: unknown,
    ttlMs: number,
  ): Promise<'written' | 'fenced'> {
    return this.run('putIfNewer', () => {
      if (!admitsValue(this.entry(key), version)) return 'fenced';
      const copy: unknown = JSON.parse(JSON.stringify(value));
      this.set(key, { kind: 'value', version, value: copy }, ttlMs);
      return 'written';
    });
  }

  public fence(key: string, version: number, ttlMs: number): Promise<'fenced' | 'superseded'> {
    return this.run('fence', () => {
      if (!admitsTombstone(this.entry(key), version)) return 'superseded';
      this.set(key, { kind: 'tombstone', version }, ttlMs);
      return 'fenced';
    });
  }

  public tryLock(key: string, token: string, ttlMs: number): Promise<boolean> {
    return this.run('tryLock', () => {
      if (this.live(key) !== undefined) return false;
      this.items.set(key, { entry: { kind: 'lock', token }, expiresAtMs: this.nowMs() + ttlMs });
      return true;
    });
  }

  public unlock(key: string, token: string): Promise<void> {
    return this.run('unlock', () => {
      const stored = this.live(key);
      if (stored?.entry.kind === 'lock' && stored.entry.token === token) this.items.delete(key);
    });
  }

  /** The live entry under `key`, for assertions (no call is counted). */
  public peek(key: string): CacheEntry | undefined {
    return this.entry(key);
  }

  /** Drops `key` as an expiry or eviction would. */
  public expire(key: string): void {
    this.items.delete(key);
  }

  private entry(key: string): CacheEntry | undefined {
    const stored = this.live(key);
    return stored === undefined || stored.entry.kind === 'lock' ? undefined : stored.entry;
  }

  private live(key: string): Stored | undefined {
    const stored = this.items.get(key);
    if (stored === undefined) return undefined;
    if (stored.expiresAtMs <= this.nowMs()) {
      this.items.delete(key);
      return undefined;
    }
    return stored;
  }

  private set(key: string, entry: CacheEntry, ttlMs: number): void {
    this.items.set(key, { entry, expiresAtMs: this.nowMs() + ttlMs });
  }

  private run<R>(method: keyof VersionedCache, action: () => R): Promise<R> {
    this.calls[method] += 1;
    if (this.down) return Promise.reject(new CacheUnavailableError(`cache is down (${method})`));
    return Promise.resolve(action());
  }
}
