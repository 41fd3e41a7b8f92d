/** VersionedCache in memory, with the Redis adapter's rules, for unit and property tests. */
import { loadLockKey } from '../../lib/core/cache-keys';
import { admitsTombstone, admitsValue } from '../../lib/core/cache-policy';
import { CacheUnavailableError } from '../../lib/core/errors';
import type {
  CachedValue,
  CacheEntry,
  Landing,
  LandingMark,
  LoadLockAttempt,
  VersionedCache,
} from '../../lib/core/ports';

interface Stored {
  readonly entry: CacheEntry | { readonly kind: 'lock'; readonly token: string };
  readonly expiresAtMs: number;
}

/** Calls per method, for assertions on round trips. */
export type CacheCallCounts = Record<keyof VersionedCache, number>;

/** Options of InMemoryVersionedCache. */
export interface InMemoryVersionedCacheOptions {
  /**
   * Resolves after `ms`: how a wait for a landing runs out of time. Tests that move a fake clock
   * pass one that moves it. @default a real timer
   */
  readonly sleep?: (ms: number) => Promise<void>;
}

const realSleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    // Unref'd: a wait that a landing already ended must not keep a test process alive.
    setTimeout(resolve, ms).unref();
  });

/**
 * An in-memory VersionedCache; every method is atomic (JavaScript runs it without interleaving),
 * as the adapter's Lua scripts are in Redis. Values are stored as JSON, as in Redis. A key's
 * landing signal is a counter (the mark is its value) and the value the latest landing carried; it
 * wakes every wait, as the adapter's stream does, and does not expire.
 */
export class InMemoryVersionedCache implements VersionedCache {
  private readonly items = new Map<string, Stored>();
  private readonly landings = new Map<string, { readonly count: number; readonly found?: CachedValue }>();
  private readonly waiters = new Map<string, Set<() => void>>();
  private readonly sleep: (ms: number) => Promise<void>;
  /** While true, every call throws CacheUnavailableError (Redis down). */
  public down = false;
  public readonly calls: CacheCallCounts = {
    get: 0,
    putIfNewer: 0,
    fence: 0,
    tryLoadLock: 0,
    releaseLoadLock: 0,
    waitForLanding: 0,
  };

  /** @param nowMs the clock TTLs are judged by. */
  public constructor(
    private readonly nowMs: () => number = () => Date.now(),
    options: InMemoryVersionedCacheOptions = {},
  ) {
    this.sleep = options.sleep ?? realSleep;
  }

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

  public tryLoadLock(key: string, token: string, ttlMs: number): Promise<LoadLockAttempt> {
    return this.run('tryLoadLock', (): LoadLockAttempt => {
      const lock = loadLockKey(key);
      const found = this.value(key);
      if (this.live(lock) !== undefined) {
        return { acquired: false, since: String(this.landings.get(key)?.count ?? 0), ...found };
      }
      this.items.set(lock, { entry: { kind: 'lock', token }, expiresAtMs: this.nowMs() + ttlMs });
      return { acquired: true, ...found };
    });
  }

  public releaseLoadLock(key: string, token: string, _signalTtlMs: number): Promise<void> {
    return this.run('releaseLoadLock', () => {
      const lock = loadLockKey(key);
      const stored = this.live(lock);
      if (stored?.entry.kind === 'lock' && stored.entry.token === token) this.items.delete(lock);
      this.landings.set(key, { count: (this.landings.get(key)?.count ?? 0) + 1, ...this.value(key) });
      const woken = this.waiters.get(key);
      this.waiters.delete(key);
      for (const wake of woken ?? []) wake();
    });
  }

  public async waitForLanding(key: string, since: LandingMark, timeoutMs: number): Promise<Landing> {
    await this.run('waitForLanding', () => undefined);
    if ((this.landings.get(key)?.count ?? 0) <= Number(since)) {
      let wake: () => void = () => undefined;
      const landed = new Promise<true>((resolve) => {
        wake = () => resolve(true);
      });
      const waiting = this.waiters.get(key) ?? new Set();
      waiting.add(wake);
      this.waiters.set(key, waiting);
      const outcome = await Promise.race([landed, this.sleep(timeoutMs).then(() => false as const)]);
      waiting.delete(wake);
      if (!outcome) return { landed: false };
    }
    const found = this.landings.get(key)?.found;
    return found === undefined ? { landed: true } : { landed: true, found: copy(found) };
  }

  /** The live entry under `key`, for assertions (no call is counted). */
  public peek(key: string): CacheEntry | undefined {
    return this.entry(key);
  }

  /** Drops `key` as an expiry or eviction would. */
  public expire(key: string): void {
    this.items.delete(key);
  }

  /** Waits on `key` not yet ended by a landing or their time, for assertions. */
  public waiting(key: string): number {
    return this.waiters.get(key)?.size ?? 0;
  }

  /** `{ found }` when `key` holds a value (a copy, as Redis would send it), else nothing. */
  private value(key: string): { found?: CachedValue } {
    const entry = this.entry(key);
    return entry?.kind === 'value' ? { found: copy(entry) } : {};
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

function copy(found: CachedValue): CachedValue {
  return { kind: 'value', version: found.version, value: JSON.parse(JSON.stringify(found.value)) as unknown };
}
