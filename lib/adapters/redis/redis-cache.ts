/**
 * VersionedCache over Redis/Valkey (ioredis). The version checks run in Lua scripts, so a check
 * and its write are one atomic step. Every key a script touches is in its KEYS, and a script's
 * keys share one hash slot (an entry, its load lock and its landing signal share the entry's hash
 * tag: lib/core/cache-keys.ts), so each runs on a cluster too.
 *
 * An entry is stored as one string: `v:<version>:<json>` for a value, `t:<version>:` for a
 * tombstone. The rules are the core's (admitsValue / admitsTombstone); the scripts mirror them and
 * the adapter tests run the same contract against the in-memory fake and a real Redis.
 * Every Redis failure (timeout, connection lost, error reply) becomes CacheUnavailableError.
 */
import type { ChainableCommander, default as Redis } from 'ioredis';
import { landingSignalKey, loadLockKey } from '../../core/cache-keys';
import { CacheUnavailableError } from '../../core/errors';
import type {
  CachedValue,
  CacheEntry,
  EvictingCache,
  Landing,
  LandingMark,
  LoadLockAttempt,
  PrefixEviction,
  PrefixEvictionOptions,
} from '../../core/ports';

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

/*
 * How a stampede's waiters are woken when the value lands (C4), within what ElastiCache Serverless
 * for Valkey accepts:
 * - https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/SupportedCommands.html: XADD,
 *   XREVRANGE and XREAD ("blocks until a message is available otherwise") are supported, as are
 *   BLPOP and its kin, PUBLISH/SUBSCRIBE (run as sharded pub/sub) and SPUBLISH/SSUBSCRIBE, and
 *   EVAL/EVALSHA; FUNCTION/FCALL, PSUBSCRIBE, CLIENT UNBLOCK and MONITOR are not.
 * - https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/RedisConfiguration.html: a serverless
 *   cache is always cluster mode (cluster-enabled yes) and has no keyspace events.
 * - https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/BestPractices.Clients.Redis.LuaScripts.html:
 *   a script must be given its keys ("Lua scripts without any input keys are not supported"),
 *   and cluster mode refuses a script whose keys lie in different hash slots (CROSSSLOT).
 * So a landing is an entry XADDed to a per-key stream (MAXLEN 1, with a PEXPIRE) by the script
 * that releases the load lock, and a waiter blocks in XREAD. XREAD wakes every reader blocked on
 * the stream, where BLPOP wakes one; and a stream keeps the landing, where a PUBLISH before the
 * waiter's SUBSCRIBE is lost. The failed lock attempt returns the stream's last id in the same
 * script, and the waiter reads after that id: a landing between its attempt and its XREAD is
 * returned at once, never missed. The landing carries the entry as the releasing script read it,
 * so a waiter needs no GET after it (a tombstone written before the release is what it carries).
 */

/** Returns a stored entry if it is a value, else '' (a tombstone, nothing, or not ours). */
const VALUE_OF = `
local function value_of(raw)
  if raw and string.sub(raw, 1, 2) == 'v:' then return raw end
  return ''
end
`;

/**
 * KEYS[1] entry, KEYS[2] lock, KEYS[3] landing signal; ARGV token, ttlMs. Takes the lock if it
 * is free; returns {1 if taken, the signal's last id ('0-0' for none: every later entry is after
 * it) when not, the entry if it holds a value}.
 */
const TRY_LOAD_LOCK = `${VALUE_OF}
local found = value_of(redis.call('GET', KEYS[1]))
if redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2], 'NX') then return {1, '', found} end
local last = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)[1]
if last then return {0, last[1], found} end
return {0, '0-0', found}
`;

/**
 * KEYS[1] entry, KEYS[2] lock, KEYS[3] landing signal; ARGV token, signalTtlMs. Deletes the lock
 * only for its owner, then signals a landing either way (the caller's write-back is over), with
 * the entry if it holds a value.
 */
const RELEASE_LOAD_LOCK = `${VALUE_OF}
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
redis.call('XADD', KEYS[3], 'MAXLEN', '1', '*', 'entry', value_of(redis.call('GET', KEYS[1])))
redis.call('PEXPIRE', KEYS[3], ARGV[2])
return 1
`;

/**
 * KEYS[1] entry; ARGV[1] '1' for a dry run. Deletes a cached value (a dry run only says it would);
 * keeps tombstones (they still fence in-flight reads), locks, landing signals and anything else.
 */
const EVICT_VALUE = `
if redis.call('TYPE', KEYS[1]).ok ~= 'string' then return 0 end
local raw = redis.call('GET', KEYS[1])
if not raw or string.sub(raw, 1, 2) ~= 'v:' then return 0 end
if ARGV[1] == '1' then return 1 end
return redis.call('DEL', KEYS[1])
`;

interface TenangScripts {
  tenangPutIfNewer(key: string, version: string, json: string, ttlMs: string): Promise<number>;
  tenangFence(key: string, version: string, ttlMs: string): Promise<number>;
  tenangTryLoadLock(
    entry: string,
    lock: string,
    signal: string,
    token: string,
    ttlMs: string,
  ): Promise<[0 | 1, string, string]>;
  tenangReleaseLoadLock(
    entry: string,
    lock: string,
    signal: string,
    token: string,
    signalTtlMs: string,
  ): Promise<number>;
  tenangEvictValue(key: string, dryRun: '0' | '1'): Promise<number>;
}

/** A script queued on a pipeline returns the pipeline. */
interface TenangPipeline {
  tenangEvictValue(key: string, dryRun: '0' | '1'): ChainableCommander;
}

const SCRIPTS: Readonly<Record<keyof TenangScripts, { readonly keys: number; readonly lua: string }>> = {
  tenangPutIfNewer: { keys: 1, lua: PUT_IF_NEWER },
  tenangFence: { keys: 1, lua: FENCE },
  tenangTryLoadLock: { keys: 3, lua: TRY_LOAD_LOCK },
  tenangReleaseLoadLock: { keys: 3, lua: RELEASE_LOAD_LOCK },
  tenangEvictValue: { keys: 1, lua: EVICT_VALUE },
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

/** `{ found }` when `raw` is a stored value, else nothing. */
function foundValue(raw: string | null | undefined): { found?: CachedValue } {
  const entry = decodeEntry(raw === undefined || raw === '' ? null : raw);
  return entry?.kind === 'value' ? { found: entry } : {};
}

function ttlArg(ttlMs: number): string {
  return String(Math.max(1, Math.round(ttlMs)));
}

/** What RedisCache runs on: a RedisConnection (lib/adapters/redis/connect.ts). */
export interface RedisCacheConnection {
  /** The shared client. */
  readonly client: Redis;
  /** Runs before every command on the shared client (first connect, IAM token refresh). */
  ready(): Promise<void>;
  /** Runs a blocking read on a connection of its own (a wait for a landing). */
  withBlockingClient<R>(read: (client: Redis) => Promise<R>): Promise<R>;
}

/** Redis-backed VersionedCache. */
export class RedisCache implements EvictingCache {
  private scriptsDefined = false;

  public constructor(private readonly connection: RedisCacheConnection) {}

  /**
   * The shared client, with the scripts defined on it at the first command rather than at
   * construction: defining one hashes its Lua and generates its functions, which a cold start
   * that sends no command (an empty batch, a refused request) then never pays for.
   */
  private get redis(): Redis & TenangScripts {
    const client = this.connection.client;
    if (!this.scriptsDefined) {
      for (const [name, { keys, lua }] of Object.entries(SCRIPTS)) {
        if (!(name in client)) client.defineCommand(name, { numberOfKeys: keys, lua });
      }
      this.scriptsDefined = true;
    }
    return client as Redis & TenangScripts;
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
      (await this.redis.tenangPutIfNewer(key, v, json, ttlArg(ttlMs))) === 1 ? 'written' : 'fenced',
    );
  }

  public async fence(key: string, version: number, ttlMs: number): Promise<'fenced' | 'superseded'> {
    const v = versionArg(version);
    return this.call('fence', async () =>
      (await this.redis.tenangFence(key, v, ttlArg(ttlMs))) === 1 ? 'fenced' : 'superseded',
    );
  }

  public tryLoadLock(key: string, token: string, ttlMs: number): Promise<LoadLockAttempt> {
    return this.call('lock', async (): Promise<LoadLockAttempt> => {
      const [acquired, since, raw] = await this.redis.tenangTryLoadLock(
        key,
        loadLockKey(key),
        landingSignalKey(key),
        token,
        ttlArg(ttlMs),
      );
      const found = foundValue(raw);
      return acquired === 1 ? { acquired: true, ...found } : { acquired: false, since, ...found };
    });
  }

  public releaseLoadLock(key: string, token: string, signalTtlMs: number): Promise<void> {
    return this.call('unlock', async () => {
      await this.redis.tenangReleaseLoadLock(
        key,
        loadLockKey(key),
        landingSignalKey(key),
        token,
        ttlArg(signalTtlMs),
      );
    });
  }

  public waitForLanding(key: string, since: LandingMark, timeoutMs: number): Promise<Landing> {
    const deadline = Date.now() + timeoutMs;
    return this.call('wait', () =>
      this.connection.withBlockingClient(async (client): Promise<Landing> => {
        // The time spent waiting for a free blocking connection counts.
        const blockMs = Math.ceil(deadline - Date.now());
        if (blockMs < 1) return { landed: false };
        const read = await client.xread('BLOCK', blockMs, 'STREAMS', landingSignalKey(key), since);
        if (read === null) return { landed: false };
        // [[stream, [[id, ['entry', raw]], …]]]: MAXLEN 1 leaves the latest landing only.
        const fields = read[0]?.[1].at(-1)?.[1] ?? [];
        const at = fields.indexOf('entry');
        return { landed: true, ...foundValue(at < 0 ? undefined : fields[at + 1]) };
      }),
    );
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
        const pipeline = this.redis.pipeline();
        const dryRun = options.dryRun === true ? '1' : '0';
        for (const key of targets)
          (pipeline as ChainableCommander & TenangPipeline).tenangEvictValue(key, dryRun);
        const results = await this.call('evict', () => pipeline.exec());
        for (const [error, reply] of results ?? []) {
          if (error !== null)
            throw new CacheUnavailableError(`Redis evict failed: ${error.message}`, { cause: error });
          if (reply === 1) evicted += 1;
        }
      }
      options.onBatch?.({ scanned, evicted });
    } while (cursor !== '0');
    return { scanned, evicted };
  }

  private async call<R>(operation: string, command: () => Promise<R>): Promise<R> {
    await this.connection.ready();
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
