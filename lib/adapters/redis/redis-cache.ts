/**
 * VersionedCache over Redis/Valkey (ioredis). The version checks run in Lua scripts, so a check
 * and its write are one atomic step; every script touches one key, so it runs on a cluster too.
 *
 * An entry is stored as one string: `v:<version>:<json>` for a value, `t:<version>:` for a
 * tombstone. The rules are the core's (admitsValue / admitsTombstone); the scripts mirror them and
 * the adapter tests run the same contract against the in-memory fake and a real Redis.
 * Every Redis failure (timeout, connection lost, error reply) becomes CacheUnavailableError.
 */
import type { ChainableCommander, default as Redis } from 'ioredis';
import { CacheUnavailableError } from '../../core/errors';
import type { CacheEntry, EvictingCache, PrefixEviction, PrefixEvictionOptions } from '../../core/ports';

/** Parses the kind and version of a stored entry; anything else is not ours and may be replaced. */
const PARSE = `
local function parse(raw)
  if not raw then return nil, nil end
  local kind, version = string.match(raw, '^([vt]):(%d+):')
  if not kind then return nil, nil end
  return kind, tonumber(version)
end
`;

/** KEYS[1] entry; ARGV version, json, ttlMs. Mirrors admitsValue. */
const PUT_IF_NEWER = `${PARSE}
local kind, current = parse(redis.call('GET', KEYS[1]))
local version = tonumber(ARGV[1])
if kind == 'v' and current >= version then return 0 end
if kind == 't' and current > version then return 0 end
redis.call('SET', KEYS[1], 'v:' .. ARGV[1] .. ':' .. ARGV[2], 'PX', ARGV[3])
return 1
`;

/** KEYS[1] entry; ARGV version, ttlMs. Mirrors admitsTombstone. */
const FENCE = `${PARSE}
local kind, current = parse(redis.call('GET', KEYS[1]))
local version = tonumber(ARGV[1])
if kind == 'v' and current > version then return 0 end
if kind == 't' and current >= version then return 0 end
redis.call('SET', KEYS[1], 't:' .. ARGV[1] .. ':', 'PX', ARGV[2])
return 1
`;

/** KEYS[1] lock; ARGV token. Deletes the lock only for its owner. */
const UNLOCK = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/** KEYS[1] entry. Deletes a cached value; keeps tombstones (they still fence in-flight reads) and anything else. */
const EVICT_VALUE = `
local raw = redis.call('GET', KEYS[1])
if raw and string.sub(raw, 1, 2) == 'v:' then return redis.call('DEL', KEYS[1]) end
return 0
`;

interface TenangScripts {
  tenangPutIfNewer(key: string, version: string, json: string, ttlMs: string): Promise<number>;
  tenangFence(key: string, version: string, ttlMs: string): Promise<number>;
  tenangUnlock(key: string, token: string): Promise<number>;
  tenangEvictValue(key: string): Promise<number>;
}

/** A script queued on a pipeline returns the pipeline. */
interface TenangPipeline {
  tenangEvictValue(key: string): ChainableCommander;
}

const SCRIPTS: Readonly<Record<keyof TenangScripts, string>> = {
  tenangPutIfNewer: PUT_IF_NEWER,
  tenangFence: FENCE,
  tenangUnlock: UNLOCK,
  tenangEvictValue: EVICT_VALUE,
};

/** Decodes a stored entry; undefined for anything that is not one (foreign or corrupt data). */
export function decodeEntry(raw: string | null): CacheEntry | undefined {
  if (raw === null) return undefined;
  const match = /^([vt]):(\d+):/.exec(raw);
  if (match === null) return undefined;
  const version = Number(match[2]);
  if (match[1] === 't') return { kind: 'tombstone', version };
  try {
    return { kind: 'value', version, value: JSON.parse(raw.slice(match[0].length)) as unknown };
  } catch {
    return undefined;
  }
}

function versionArg(version: number): string {
  if (!Number.isSafeInteger(version) || version < 0) {
    throw new RangeError(`a cache version must be a non-negative safe integer, got ${version}`);
  }
  return String(version);
}

/** Options of RedisCache. */
export interface RedisCacheOptions {
  /** Runs before every command (RedisConnection.ready: first connect, IAM token refresh). @default none */
  readonly ready?: () => Promise<void>;
}

/** Redis-backed VersionedCache. */
export class RedisCache implements EvictingCache {
  private readonly redis: Redis & TenangScripts;
  private readonly ready: () => Promise<void>;

  public constructor(client: Redis, options: RedisCacheOptions = {}) {
    this.redis = client as Redis & TenangScripts;
    this.ready = options.ready ?? ((): Promise<void> => Promise.resolve());
  }

  public get(key: string): Promise<CacheEntry | undefined> {
    return this.call('GET', async () => decodeEntry(await this.redis.get(key)));
  }

  public async putIfNewer(
    key: string,
    version: number,
    value: unknown,
    ttlMs: number,
  ): Promise<'written' | 'fenced'> {
    const json = JSON.stringify(value);
    const v = versionArg(version);
    return this.call('put-if-newer', async () =>
      (await this.scripted('tenangPutIfNewer').tenangPutIfNewer(
        key,
        v,
        json,
        String(Math.max(1, Math.round(ttlMs))),
      )) === 1
        ? 'written'
        : 'fenced',
    );
  }

  public async fence(key: string, version: number, ttlMs: number): Promise<'fenced' | 'superseded'> {
    const v = versionArg(version);
    return this.call('fence', async () =>
      (await this.scripted('tenangFence').tenangFence(key, v, String(Math.max(1, Math.round(ttlMs))))) === 1
        ? 'fenced'
        : 'superseded',
    );
  }

  public tryLock(key: string, token: string, ttlMs: number): Promise<boolean> {
    return this.call(
      'lock',
      async () => (await this.redis.set(key, token, 'PX', Math.max(1, Math.round(ttlMs)), 'NX')) === 'OK',
    );
  }

  public unlock(key: string, token: string): Promise<void> {
    return this.call('unlock', async () => {
      await this.scripted('tenangUnlock').tenangUnlock(key, token);
    });
  }

  /**
   * Evicts every cached value whose key starts with `prefix` (C6: by entity, by prefix), walking
   * the keyspace with SCAN so Redis is never blocked. Tombstones stay: deleting them would let a
   * read in flight put back a value an invalidation has just fenced off.
   */
  public async evictByPrefix(prefix: string, options: PrefixEvictionOptions = {}): Promise<PrefixEviction> {
    if (prefix.length === 0) throw new RangeError('evictByPrefix needs a non-empty prefix');
    const match = `${prefix.replace(/[*?[\]\\]/g, (c) => `\\${c}`)}*`;
    let cursor = '0';
    let scanned = 0;
    let evicted = 0;
    do {
      const [next, keys] = await this.call('scan', () =>
        this.redis.scan(cursor, 'MATCH', match, 'COUNT', options.count ?? 500),
      );
      cursor = next;
      scanned += keys.length;
      const targets = options.keep === undefined ? keys : keys.filter((key) => !options.keep?.has(key));
      if (targets.length > 0) {
        // A pipeline takes the scripts defined when it is made.
        const pipeline = this.scripted('tenangEvictValue').pipeline();
        for (const key of targets) {
          if (options.dryRun === true) pipeline.get(key);
          else (pipeline as ChainableCommander & TenangPipeline).tenangEvictValue(key);
        }
        const results = await this.call('evict', () => pipeline.exec());
        for (const [error, reply] of results ?? []) {
          if (error !== null)
            throw new CacheUnavailableError(`Redis evict failed: ${error.message}`, { cause: error });
          // A dry run counts what EVICT_VALUE would delete: cached values only.
          if (options.dryRun === true ? typeof reply === 'string' && reply.startsWith('v:') : reply === 1)
            evicted += 1;
        }
      }
      options.onBatch?.({ scanned, evicted });
    } while (cursor !== '0');
    return { scanned, evicted };
  }

  /**
   * The client with `name`'s Lua script defined, on its first use: a function defines only the
   * scripts it runs (the invalidator one of four), as defining one hashes it and builds its
   * command class and functions, which a cold start would pay for every script.
   */
  private scripted(name: keyof TenangScripts): Redis & TenangScripts {
    if (!(name in this.redis)) this.redis.defineCommand(name, { numberOfKeys: 1, lua: SCRIPTS[name] });
    return this.redis;
  }

  private async call<R>(operation: string, command: () => Promise<R>): Promise<R> {
    await this.ready();
    try {
      return await command();
    } catch (error) {
      throw new CacheUnavailableError(
        `Redis ${operation} failed: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
  }
}
