/**
 * `tenang cache invalidate|flush` (C6): selective invalidation of a stage's cache by key, by
 * entity, by prefix, and by version bump; a full flush that is guarded (it warns about the origin
 * load, needs --yes-i-know and warms the hot keys first).
 *
 * No invalidation here is a plain DEL (C3). A reader that loaded an old version just before a
 * delete writes it back just after it, and the stale value survives the invalidation. So:
 * - `--key` and `--entity` fence the entity's keys (lib/core/cache-keys.ts) exactly as the cache
 *   invalidator does: a tombstone at the entity's current version, read from DynamoDB with a
 *   strongly consistent read. A reader holding an older version can no longer write it back;
 *   a reader of the current version still can (an equal tombstone admits it). When the entity
 *   is gone, or its item cannot be read, no one knows which versions readers may hold, so the
 *   tombstone goes above them all (CEILING_VERSION). Reads of such an entity then skip the cache
 *   until the tombstone expires (tombstoneTtlMs), which is safe.
 * - `--prefix` and `flush` evict cached values only (RedisCache.evictByPrefix, SCAN in batches):
 *   tombstones stay and keep fencing the reads they fence. Those keys have no known version, so
 *   no tombstone can be raised for them: a read in flight when the scan passes its key may still
 *   write back what it loaded just before (a window of one load); every later change is fenced
 *   by the stream invalidator. Where that window matters, `--entity` fences at the source's version.
 * - `--bump-version` writes nothing. CACHE_SCHEMA_VERSION is a code constant: the reader and the
 *   invalidator build every key from it, and the reader has no run-time namespace generation to
 *   raise. Bumping it is a change and a deploy. The command prints what to change, what happens
 *   to the old keys (they are never read again and expire), and how to cover the rollout window.
 *
 * The CLI reaches Redis with the functions' variables (lib/adapters/redis/connect.ts) and owns
 * that connection: `run` destroys the AWS clients only.
 */
import type { Command } from 'commander';
import { CorruptOrderError, DynamoDbOrderStore } from '../../adapters/aws/dynamodb-order-store';
import { FunctionEnvError, parseFunctionEnv } from '../../adapters/lambda-env';
import {
  CACHE_ENV_SHAPE,
  cacheConnectionSettings,
  cacheEnvCheck,
  connectRedis,
  type CacheConnectionSettings,
} from '../../adapters/redis/connect';
import { RedisCache, type PrefixEviction } from '../../adapters/redis/redis-cache';
import * as z from '../../config/zod';
import {
  CACHE_SCHEMA_VERSION,
  CACHED_ENTITIES,
  cacheKeyspace,
  keysForOrderChange,
  orderCacheKey,
  type CachedEntity,
  type CacheKeyspace,
  type KeyInvalidation,
} from '../../core/cache-keys';
import { invalidateKeys, tombstoneTtlMs, ttlWithJitterMs } from '../../core/cache-policy';
import { CacheUnavailableError } from '../../core/errors';
import { OrderSchema, type Order } from '../../core/order';
import type { CacheEntry } from '../../core/ports';
import { CommandFailedError, UsageError, type CliContext, type RegisterCommand } from '../cli-context';
import { CountSchema, nonEmpty, parseOptions } from '../options';
import { discoverResources, tableName } from '../pipeline-resources';

/** Where the schema version constant lives (printed by --bump-version). */
const SCHEMA_VERSION_FILE = 'lib/core/cache-keys.ts';

/**
 * Version of a tombstone above any version an entity can have had: used when the entity is gone
 * or unreadable, so no reader can put back any value it loaded before.
 */
export const CEILING_VERSION = Number.MAX_SAFE_INTEGER;

/** How long the CLI waits for the first connection (TLS and IAM auth from an SSM session), milliseconds. */
const CLI_CONNECT_TIMEOUT_MS = 5_000;
/** Progress of a long scan is printed at most this often, milliseconds. */
const PROGRESS_INTERVAL_MS = 1_000;

/** How to give the CLI a cache connection (help text and the missing-variables error). */
const CONNECTION_HELP = `The command talks to the stage's Redis with the same variables as the functions, so it must run
where it can reach the cache:
  - locally: REDIS_URL (the local platform's Redis, e.g. redis://127.0.0.1:6379);
  - on AWS the cache is in a VPC: run it inside that VPC (e.g. an SSM session on an instance that
    the cache's security group admits) with CACHE_HOST, CACHE_PORT, CACHE_TLS=true, CACHE_AUTH=iam,
    CACHE_NAME, CACHE_USER and AWS_REGION set as on the functions. The IAM token is signed with
    the CLI's AWS credentials, which need elasticache:Connect on the cache and its user.`;

/** The flush warning (printed before a flush, and as the refusal without --yes-i-know). */
function flushWarning(stage: string): string {
  return (
    `a full flush of stage ${stage} sends every read to DynamoDB at once: each key misses until ` +
    'it is loaded again (origin load, throttling risk on the orders table)'
  );
}

// ---------------------------------------------------------------------------------------------
// Entities and keys

/** An entity the cache holds, as `<entity>:<id>` names it (e.g. `order:123`). */
export interface EntityRef {
  readonly entity: CachedEntity;
  readonly id: string;
}

/** The cache key of each entity, as lib/core/cache-keys.ts builds it. */
const KEY_OF: { readonly [E in CachedEntity]: (keyspace: CacheKeyspace, id: string) => string } = {
  order: orderCacheKey,
};

/** The id rule of each entity (its source of truth's schema). */
const ID_OF: { readonly [E in CachedEntity]: z.ZodMiniType<string> } = {
  order: OrderSchema.shape.orderId,
};

const isCachedEntity = (name: string): name is CachedEntity =>
  (CACHED_ENTITIES as readonly string[]).includes(name);

/** Why `text` is not an entity reference, or undefined when it is one. */
function entityRefProblem(text: string): string | undefined {
  const colon = text.indexOf(':');
  if (colon <= 0) return `"${text}" is not <entity>:<id>, e.g. order:123`;
  const entity = text.slice(0, colon);
  if (!isCachedEntity(entity)) {
    return `unknown entity "${entity}"; cached entities: ${CACHED_ENTITIES.join(', ')}`;
  }
  if (!ID_OF[entity].safeParse(text.slice(colon + 1)).success) {
    return `"${text.slice(colon + 1)}" is not a valid ${entity} id`;
  }
  return undefined;
}

/** `<entity>:<id>`, e.g. `order:123`, checked against the cached entities and their id rules. */
export const EntityRefSchema = z.pipe(
  z.string().check(
    z.superRefine((text: string, ctx) => {
      const problem = entityRefProblem(text);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem, input: text });
    }),
  ),
  z.transform((text: string): EntityRef => {
    const colon = text.indexOf(':');
    return { entity: text.slice(0, colon) as CachedEntity, id: text.slice(colon + 1) };
  }),
);

/** `order:123`. */
export function formatEntityRef(ref: EntityRef): string {
  return `${ref.entity}:${ref.id}`;
}

/** The cache key of `ref` in `keyspace`. */
export function cacheKeyOf(keyspace: CacheKeyspace, ref: EntityRef): string {
  return KEY_OF[ref.entity](keyspace, ref.id);
}

/**
 * The entity whose cache key `key` is, or undefined. Inverts the key builders by building a key
 * around a marker, so the key format stays declared in lib/core/cache-keys.ts only.
 */
export function entityOfKey(keyspace: CacheKeyspace, key: string): EntityRef | undefined {
  const MARK = '\u0000';
  for (const entity of CACHED_ENTITIES) {
    const [head = '', tail = ''] = KEY_OF[entity](keyspace, MARK).split(MARK);
    if (key.length <= head.length + tail.length || !key.startsWith(head) || !key.endsWith(tail)) continue;
    const id = key.slice(head.length, key.length - tail.length);
    if (KEY_OF[entity](keyspace, id) === key && ID_OF[entity].safeParse(id).success) return { entity, id };
  }
  return undefined;
}

/** Every key of `stage`, of any schema version (`tenang:<stage>:`). */
export function stageNamespace(stage: string): string {
  const { prefix } = cacheKeyspace(stage);
  const version = `${CACHE_SCHEMA_VERSION}:`;
  if (!prefix.endsWith(version)) {
    throw new Error(
      `cacheKeyspace("${stage}") no longer ends with the schema version: update stageNamespace`,
    );
  }
  return prefix.slice(0, -version.length);
}

/** Why `prefix` may not be evicted with `--prefix` on `stage`, or undefined when it may. */
export function prefixProblem(stage: string, prefix: string): string | undefined {
  const namespace = stageNamespace(stage);
  if (!prefix.startsWith(namespace)) {
    return (
      `--prefix ${prefix} is outside stage ${stage}'s keyspace: it must start with ${namespace} ` +
      '(one Redis may serve several stages)'
    );
  }
  if (cacheKeyspace(stage).prefix.startsWith(prefix)) {
    return (
      `--prefix ${prefix} covers stage ${stage}'s whole keyspace: that is a full flush, ` +
      'use `tenang cache flush --yes-i-know` (guarded, warms the hot keys first)'
    );
  }
  return undefined;
}

/** The entity of `--key` on `stage`; a key that is not one is a usage error saying what to use. */
export function entityOfStageKey(stage: string, key: string): EntityRef {
  const namespace = stageNamespace(stage);
  const keyspace = cacheKeyspace(stage);
  if (!key.startsWith(namespace)) {
    throw new UsageError(`--key ${key} is outside stage ${stage}'s keyspace (${namespace}…)`);
  }
  if (!key.startsWith(keyspace.prefix)) {
    throw new UsageError(
      `--key ${key} is not under the current schema version (${keyspace.prefix}…): nothing reads it; ` +
        `evict old namespaces with --prefix ${namespace}<version>:`,
    );
  }
  const ref = entityOfKey(keyspace, key);
  if (ref === undefined) {
    const examples = CACHED_ENTITIES.map((e) => cacheKeyOf(keyspace, { entity: e, id: '<id>' })).join(', ');
    throw new UsageError(
      `--key ${key} is not the key of a cached entity (${examples}); load locks expire by ` +
        'themselves; use --prefix for anything else',
    );
  }
  return ref;
}

/**
 * The keys of `ref` and the version each is fenced at, as the invalidator would for a change:
 * the current version when the entity exists, else above every version it can have had.
 */
export function invalidationsFor(
  keyspace: CacheKeyspace,
  ref: EntityRef,
  currentVersion: number | undefined,
): KeyInvalidation[] {
  switch (ref.entity) {
    case 'order':
      return currentVersion === undefined
        ? // A removal whose last version is unknown: the tombstone goes one past the highest.
          keysForOrderChange(keyspace, { orderId: ref.id, version: CEILING_VERSION - 1 }, undefined)
        : keysForOrderChange(keyspace, undefined, { orderId: ref.id, version: currentVersion });
  }
}

/** A hot key of the config: an entity reference (`order:123`) or a cache key of the stage. */
export function hotKeyRef(stage: string, text: string): EntityRef | string {
  if (text.startsWith(stageNamespace(stage))) {
    return entityOfKey(cacheKeyspace(stage), text) ?? `"${text}" is not the key of a cached entity`;
  }
  const parsed = EntityRefSchema.safeParse(text);
  return parsed.success ? parsed.data : (parsed.error.issues[0]?.message ?? `"${text}" is not valid`);
}

// ---------------------------------------------------------------------------------------------
// Options

/** What `cache invalidate` acts on. */
export type InvalidateSelector =
  | { readonly kind: 'key'; readonly key: string }
  | { readonly kind: 'entity'; readonly ref: EntityRef }
  | { readonly kind: 'prefix'; readonly prefix: string }
  | { readonly kind: 'bump-version' };

const SELECTOR_FLAGS = ['--key', '--entity', '--prefix', '--bump-version'] as const;

/** Options of `cache invalidate`: exactly one selector. */
export const CacheInvalidateOptionsSchema = z.pipe(
  z
    .object({
      key: z.optional(nonEmpty('--key')),
      entity: z.optional(EntityRefSchema),
      prefix: z.optional(nonEmpty('--prefix')),
      bumpVersion: z.optional(z.boolean()),
      batch: z._default(CountSchema, 500),
      dryRun: z.optional(z.boolean()),
      json: z.optional(z.boolean()),
    })
    .check(
      z.superRefine((opts, ctx) => {
        const given = [opts.key, opts.entity, opts.prefix, opts.bumpVersion === true ? true : undefined]
          .map((value, i) => (value === undefined ? undefined : SELECTOR_FLAGS[i]))
          .filter((flag) => flag !== undefined);
        if (given.length !== 1) {
          ctx.addIssue({
            code: 'custom',
            input: opts,
            message: `choose exactly one of ${SELECTOR_FLAGS.join(', ')} (${
              given.length === 0 ? 'none given' : `got ${given.join(' and ')}`
            })`,
          });
        }
      }),
    ),
  z.transform((opts) => {
    const selector: InvalidateSelector =
      opts.key !== undefined
        ? { kind: 'key', key: opts.key }
        : opts.entity !== undefined
          ? { kind: 'entity', ref: opts.entity }
          : opts.prefix !== undefined
            ? { kind: 'prefix', prefix: opts.prefix }
            : { kind: 'bump-version' };
    return { selector, batch: opts.batch, dryRun: opts.dryRun === true, json: opts.json === true };
  }),
);
export type CacheInvalidateOptions = z.infer<typeof CacheInvalidateOptionsSchema>;

/** Options of `cache flush`. */
export const CacheFlushOptionsSchema = z.object({
  yesIKnow: z.optional(z.boolean()),
  batch: z._default(CountSchema, 500),
  dryRun: z.optional(z.boolean()),
  json: z.optional(z.boolean()),
});

// ---------------------------------------------------------------------------------------------
// Plans and reports

/** What changing the schema version takes (the answer of --bump-version). */
export interface BumpVersionPlan {
  readonly constant: 'CACHE_SCHEMA_VERSION';
  readonly file: string;
  readonly currentVersion: string;
  readonly nextVersion: string;
  readonly currentPrefix: string;
  readonly nextPrefix: string;
  /** Old values and tombstones are gone by then (value TTL with its maximum jitter). */
  readonly oldKeysExpireWithinSeconds: number;
  readonly steps: readonly string[];
}

/** The steps of a version bump of `stage`; nothing is written. */
export function bumpVersionPlan(
  stage: string,
  settings: { readonly ttlSeconds: number; readonly ttlJitterRatio: number },
): BumpVersionPlan {
  const match = /^v(\d+)$/.exec(CACHE_SCHEMA_VERSION);
  const nextVersion = match === null ? `${CACHE_SCHEMA_VERSION}-2` : `v${Number(match[1]) + 1}`;
  const namespace = stageNamespace(stage);
  const currentPrefix = cacheKeyspace(stage).prefix;
  const nextPrefix = `${namespace}${nextVersion}:`;
  const expiry = Math.ceil(settings.ttlSeconds * (1 + settings.ttlJitterRatio));
  return {
    constant: 'CACHE_SCHEMA_VERSION',
    file: SCHEMA_VERSION_FILE,
    currentVersion: CACHE_SCHEMA_VERSION,
    nextVersion,
    currentPrefix,
    nextPrefix,
    oldKeysExpireWithinSeconds: expiry,
    steps: [
      `set CACHE_SCHEMA_VERSION = '${nextVersion}' in ${SCHEMA_VERSION_FILE} and deploy stage ${stage}`,
      `${nextPrefix} starts empty: reads miss and load from DynamoDB, one load per key (the stampede lock), as after a flush without warm-up`,
      `keys under ${currentPrefix} are never read again and expire by themselves within ${expiry} s; to free the memory sooner, once deployed: tenang --stage ${stage} cache invalidate --prefix ${currentPrefix}`,
      `during the rollout the reader and the invalidator may run different versions, so a change then may not fence the new key: once every function runs ${nextVersion}, run tenang --stage ${stage} cache flush --yes-i-know (${nextPrefix} is nearly empty then)`,
    ],
  };
}

/** One entry as a report shows it: `value v3`, `tombstone v4` or `empty`. */
function describeEntry(entry: CacheEntry | undefined): string {
  return entry === undefined ? 'empty' : `${entry.kind} v${entry.version}`;
}

/** Prints a scan's running totals on `err`, at most once per `everyMs`. */
export function progressPrinter(
  err: (text: string) => void,
  now: () => Date,
  what: string,
  everyMs: number = PROGRESS_INTERVAL_MS,
): (progress: PrefixEviction) => void {
  let last = now().getTime();
  return (progress) => {
    const at = now().getTime();
    if (at - last < everyMs) return;
    last = at;
    err(`${what}: scanned ${progress.scanned} keys, evicted ${progress.evicted} values so far`);
  };
}

// ---------------------------------------------------------------------------------------------
// Redis and DynamoDB

const CacheCliEnvSchema = z.object({ ...CACHE_ENV_SHAPE }).check(cacheEnvCheck());

/** Where the connection goes, without credentials (a REDIS_URL may carry a password). */
function describeTarget(settings: CacheConnectionSettings): string {
  if (settings.kind === 'endpoint') return `${settings.host}:${settings.port}`;
  try {
    return new URL(settings.url).host;
  } catch {
    return 'REDIS_URL';
  }
}

/** The cache connection of the CLI's environment; missing variables are a usage error naming them. */
function cacheTarget(ctx: CliContext): CacheConnectionSettings {
  try {
    return cacheConnectionSettings(
      parseFunctionEnv('tenang cache', CacheCliEnvSchema, ctx.env ?? process.env),
    );
  } catch (error) {
    if (error instanceof FunctionEnvError) {
      throw new UsageError(
        `the cache connection is not configured:\n${error.problems.map((p) => `  - ${p}`).join('\n')}\n${CONNECTION_HELP}`,
      );
    }
    throw error;
  }
}

/** Runs `use` with a RedisCache on `settings` and closes the connection afterwards. */
async function withCache<R>(
  ctx: CliContext,
  settings: CacheConnectionSettings,
  use: (cache: RedisCache) => Promise<R>,
): Promise<R> {
  const connection = connectRedis(settings, {
    // The functions' timeout (D4): a SCAN batch and its pipelined evictions take milliseconds.
    commandTimeoutMs: ctx.config.stage.cache.commandTimeoutMs,
    connectTimeoutMs: CLI_CONNECT_TIMEOUT_MS,
    // The CLI's credential chain (profile, SSO, instance role), not only the Lambda variables.
    credentials: () => ctx.clients.dynamodb.config.credentials(),
  });
  try {
    return await use(new RedisCache(connection.client, { ready: () => connection.ready() }));
  } catch (error) {
    if (error instanceof CacheUnavailableError) {
      throw new CommandFailedError(
        `cannot use the cache at ${describeTarget(settings)}: ${error.message}\n${CONNECTION_HELP}`,
      );
    }
    throw error;
  } finally {
    await connection.close();
  }
}

/** An entity as the source of truth has it now. */
type SourceState =
  | { readonly kind: 'present'; readonly order: Order }
  | { readonly kind: 'absent' }
  | { readonly kind: 'unreadable'; readonly reason: string };

/** Reads entities from their source of truth with the order reader's loader (strongly consistent). */
class EntitySource {
  private constructor(
    private readonly orders: DynamoDbOrderStore,
    /** The orders table, for reports. */
    public readonly table: string,
  ) {}

  /** Finds the stage's orders table in its stack. */
  public static async discover(ctx: CliContext): Promise<EntitySource> {
    const table = tableName(ctx, await discoverResources(ctx), 'orders');
    return new EntitySource(new DynamoDbOrderStore(ctx.clients.dynamodb, table), table);
  }

  public async read(ref: EntityRef): Promise<SourceState> {
    switch (ref.entity) {
      case 'order':
        try {
          const order = await this.orders.get(ref.id);
          return order === undefined ? { kind: 'absent' } : { kind: 'present', order };
        } catch (error) {
          // The reader refuses such an item too; a cached copy of it must still go.
          if (error instanceof CorruptOrderError) return { kind: 'unreadable', reason: error.message };
          throw error;
        }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Actions

/** What `--key` / `--entity` did to one key. */
export interface KeyInvalidationReport {
  readonly key: string;
  readonly fenceVersion: number;
  readonly before: string;
  readonly result: 'fenced' | 'superseded' | 'would-fence';
}

async function invalidateEntity(
  ctx: CliContext,
  ref: EntityRef,
  opts: CacheInvalidateOptions,
): Promise<void> {
  const keyspace = cacheKeyspace(ctx.stage);
  const target = cacheTarget(ctx);
  const source = await EntitySource.discover(ctx);
  // Read before fencing: a change after the read is fenced by the invalidator at a higher version.
  const state = await source.read(ref);
  if (state.kind === 'unreadable') ctx.err(`warning: ${state.reason}; fencing above every version`);
  const invalidations = invalidationsFor(
    keyspace,
    ref,
    state.kind === 'present' ? state.order.version : undefined,
  );
  const settings = ctx.config.stage.cache;
  const keys = await withCache(ctx, target, async (cache): Promise<KeyInvalidationReport[]> => {
    const before = await Promise.all(invalidations.map(async (i) => describeEntry(await cache.get(i.key))));
    const results = opts.dryRun ? undefined : await invalidateKeys(cache, invalidations, settings);
    return invalidations.map((i, n) => ({
      key: i.key,
      fenceVersion: i.version,
      before: before[n] ?? 'empty',
      result: results?.[n]?.result ?? 'would-fence',
    }));
  });
  const sourceVersion = state.kind === 'present' ? state.order.version : state.kind;
  if (opts.json) {
    ctx.out(
      JSON.stringify(
        {
          action: 'invalidate',
          entity: formatEntityRef(ref),
          table: source.table,
          sourceVersion,
          tombstoneTtlSeconds: tombstoneTtlMs(settings) / 1000,
          dryRun: opts.dryRun,
          keys,
        },
        null,
        2,
      ),
    );
    return;
  }
  const seen =
    state.kind === 'present'
      ? `is at version ${state.order.version}`
      : state.kind === 'absent'
        ? 'does not exist'
        : 'cannot be read';
  ctx.out(`${formatEntityRef(ref)} ${seen} in ${source.table}`);
  for (const k of keys) {
    const fence = k.fenceVersion === CEILING_VERSION ? 'above every version' : `at version ${k.fenceVersion}`;
    const verb = {
      fenced: 'fenced',
      superseded: 'left (it already holds something newer)',
      'would-fence': '[dry run] would fence',
    }[k.result];
    ctx.out(`${verb} ${k.key} ${fence} (was: ${k.before})`);
  }
}

async function invalidatePrefix(
  ctx: CliContext,
  prefix: string,
  opts: CacheInvalidateOptions,
): Promise<void> {
  const problem = prefixProblem(ctx.stage, prefix);
  if (problem !== undefined) throw new UsageError(problem);
  const result = await withCache(ctx, cacheTarget(ctx), (cache) =>
    cache.evictByPrefix(prefix, {
      count: opts.batch,
      dryRun: opts.dryRun,
      onBatch: progressPrinter(ctx.err, ctx.now, prefix),
    }),
  );
  if (opts.json) {
    ctx.out(JSON.stringify({ action: 'invalidate', prefix, dryRun: opts.dryRun, ...result }, null, 2));
    return;
  }
  ctx.out(
    `${opts.dryRun ? '[dry run] would evict' : 'evicted'} ${result.evicted} cached value(s) under ${prefix} ` +
      `(${result.scanned} key(s) scanned; tombstones and locks kept)`,
  );
}

function printBumpVersion(ctx: CliContext, opts: CacheInvalidateOptions): void {
  const plan = bumpVersionPlan(ctx.stage, ctx.config.stage.cache);
  if (opts.json) {
    ctx.out(JSON.stringify({ action: 'bump-version', written: false, ...plan }, null, 2));
    return;
  }
  ctx.out(
    [
      `${plan.constant} is a code constant ('${plan.currentVersion}' in ${plan.file}): the reader and the`,
      'invalidator build every key from it, so a version bump is a deploy, not a Redis write. Nothing was changed.',
      `To move stage ${ctx.stage} from ${plan.currentPrefix}… to ${plan.nextPrefix}…, step by step:`,
      ...plan.steps.map((step, i) => `  ${i + 1}. ${step}`),
    ].join('\n'),
  );
}

/** What warming did to one hot key. */
export interface HotKeyReport {
  readonly entity: string;
  readonly key: string;
  /** The version in the source of truth; undefined when absent or unreadable. */
  readonly version: number | undefined;
  /** superseded: the cache already held this version or something newer (a value or a tombstone). */
  readonly result: 'warmed' | 'superseded' | 'absent' | 'unreadable' | 'would-warm';
}

/** The hot keys of the config; any invalid entry fails the flush before anything is written. */
function hotKeyRefs(ctx: CliContext): EntityRef[] {
  const refs: EntityRef[] = [];
  const problems: string[] = [];
  for (const text of ctx.config.stage.cache.hotKeys) {
    const ref = hotKeyRef(ctx.stage, text);
    if (typeof ref === 'string') problems.push(`stage.cache.hotKeys: ${ref}`);
    else refs.push(ref);
  }
  if (problems.length > 0) {
    throw new CommandFailedError(
      `the hot keys cannot be warmed, nothing was flushed:\n  ${problems.join('\n  ')}`,
    );
  }
  return refs;
}

async function flush(ctx: CliContext, opts: z.infer<typeof CacheFlushOptionsSchema>): Promise<void> {
  const dryRun = opts.dryRun === true;
  if (opts.yesIKnow !== true && !dryRun) {
    throw new UsageError(
      `${flushWarning(ctx.stage)}.\nPrefer invalidating what is stale: tenang cache invalidate --entity order:<id>, ` +
        `or --prefix ${cacheKeyspace(ctx.stage).prefix}<…>. To flush anyway, pass --yes-i-know ` +
        '(the hot keys of the config are warmed first; try --dry-run to see the counts).',
    );
  }
  ctx.err(`warning: ${flushWarning(ctx.stage)}`);
  const keyspace = cacheKeyspace(ctx.stage);
  const namespace = stageNamespace(ctx.stage);
  const refs = hotKeyRefs(ctx);
  const target = cacheTarget(ctx);
  const source = refs.length === 0 ? undefined : await EntitySource.discover(ctx);
  const states = source === undefined ? [] : await Promise.all(refs.map((ref) => source.read(ref)));
  const settings = ctx.config.stage.cache;
  const { hotKeys, eviction } = await withCache(ctx, target, async (cache) => {
    // Warm first, with the reader's version-checked write: it replaces older values, and an
    // invalidation that races it wins. A hit through CacheAside would keep a stale value instead.
    const warmed: HotKeyReport[] = [];
    for (const [i, ref] of refs.entries()) {
      const state = states[i] ?? { kind: 'absent' };
      const key = cacheKeyOf(keyspace, ref);
      const entity = formatEntityRef(ref);
      if (state.kind !== 'present') {
        if (state.kind === 'unreadable') ctx.err(`warning: hot key ${entity}: ${state.reason}; not warmed`);
        warmed.push({ entity, key, version: undefined, result: state.kind });
        continue;
      }
      const version = state.order.version;
      const result = dryRun
        ? 'would-warm'
        : (await cache.putIfNewer(key, version, state.order, ttlWithJitterMs(settings, Math.random))) ===
            'written'
          ? 'warmed'
          : 'superseded';
      warmed.push({ entity, key, version, result });
    }
    // Warmed keys hold the current version (or newer, or a newer tombstone): the flush keeps them.
    const keep = new Set(warmed.filter((w) => w.version !== undefined).map((w) => w.key));
    const evicted = await cache.evictByPrefix(namespace, {
      keep,
      count: opts.batch,
      dryRun,
      onBatch: progressPrinter(ctx.err, ctx.now, namespace),
    });
    return { hotKeys: warmed, eviction: evicted };
  });
  if (opts.json === true) {
    ctx.out(
      JSON.stringify(
        {
          action: 'flush',
          stage: ctx.stage,
          prefix: namespace,
          dryRun,
          table: source?.table,
          hotKeys,
          ...eviction,
        },
        null,
        2,
      ),
    );
    return;
  }
  const kept = hotKeys.filter((h) => h.version !== undefined).length;
  ctx.out(
    `${dryRun ? '[dry run] would warm' : 'warmed'} ${kept} of ${hotKeys.length} hot key(s)` +
      (source === undefined ? '' : ` from ${source.table}`),
  );
  for (const h of hotKeys) {
    ctx.out(`  ${h.entity} ${h.key}: ${h.result}${h.version === undefined ? '' : ` v${h.version}`}`);
  }
  ctx.out(
    `${dryRun ? '[dry run] would evict' : 'evicted'} ${eviction.evicted} cached value(s) under ${namespace} ` +
      `(${eviction.scanned} key(s) scanned; tombstones, locks and warmed hot keys kept)`,
  );
}

// ---------------------------------------------------------------------------------------------
// Registration

/** Registers `cache invalidate` and `cache flush`. */
export const register: RegisterCommand = (program: Command, context: () => CliContext): void => {
  const cache = program
    .command('cache')
    .description("Invalidate the stage's order cache selectively, or flush it (guarded)")
    .addHelpText('after', `\n${CONNECTION_HELP}`);

  cache
    .command('invalidate')
    .description('Invalidate one key, one entity, a prefix, or explain a schema version bump')
    .option('--key <key>', 'one cache key, e.g. tenang:prod:v1:order:{123}')
    .option('--entity <entity:id>', 'every key of one entity, e.g. order:123')
    .option('--prefix <prefix>', "every cached value under a prefix inside the stage's keyspace")
    .option('--bump-version', 'print how to move the stage to a new key namespace (writes nothing)')
    .option('--batch <n>', 'keys per SCAN batch (--prefix)', '500')
    .option('--dry-run', 'show what would be invalidated without writing')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
Choose exactly one of --key, --entity, --prefix, --bump-version.

--key and --entity read the entity's current version from the orders table (strongly consistent)
and leave a tombstone at that version, as the stream invalidator does: a reader that loaded an
older version cannot write it back, and the next read loads the current one. An entity that no
longer exists is fenced above every version until the tombstone expires (ttlSeconds).
--prefix evicts cached values with SCAN in batches (never KEYS), keeping tombstones and locks;
the prefix must lie inside the stage's keyspace (tenang:<stage>:), and one covering the whole
keyspace is refused (that is \`cache flush\`). Progress goes to stderr.
--bump-version writes nothing: the schema version is a code constant (CACHE_SCHEMA_VERSION in
${SCHEMA_VERSION_FILE}); it prints what to change and deploy, and what happens to the old keys.

${CONNECTION_HELP}

Examples:
  $ tenang --stage prod cache invalidate --entity order:123
  $ tenang --stage prod cache invalidate --key 'tenang:prod:v1:order:{123}' --dry-run
  $ tenang --stage prod cache invalidate --prefix 'tenang:prod:v1:order:{2026-01' --json
  $ tenang --stage prod cache invalidate --prefix tenang:prod:v0:
  $ tenang --stage prod cache invalidate --bump-version`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const opts = parseOptions(CacheInvalidateOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
      const { selector } = opts;
      switch (selector.kind) {
        case 'key':
          return invalidateEntity(ctx, entityOfStageKey(ctx.stage, selector.key), opts);
        case 'entity':
          return invalidateEntity(ctx, selector.ref, opts);
        case 'prefix':
          return invalidatePrefix(ctx, selector.prefix, opts);
        case 'bump-version':
          return printBumpVersion(ctx, opts);
      }
    });

  cache
    .command('flush')
    .description("Evict every cached value of the stage, after warming the config's hot keys")
    .option('--yes-i-know', 'confirm the origin load of a full flush')
    .option('--batch <n>', 'keys per SCAN batch', '500')
    .option('--dry-run', 'count what would be warmed and evicted without writing')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
A full flush sends every read to DynamoDB at once. Prefer \`cache invalidate --entity\` or
\`--prefix\`. With --yes-i-know the hot keys of the config (stage.cache.hotKeys: order:<id> or
full keys) are first loaded from the orders table and written with the version-checked write,
then every cached value under tenang:<stage>: (all schema versions) is evicted with SCAN, except
the warmed hot keys. Tombstones and locks stay; FLUSHALL/FLUSHDB are never used, since one Redis
may serve several stages. --dry-run needs no --yes-i-know and writes nothing.

${CONNECTION_HELP}

Examples:
  $ tenang --stage prod cache flush --dry-run
  $ tenang --stage prod cache flush --yes-i-know
  $ tenang --stage prod cache flush --yes-i-know --json`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const opts = parseOptions(CacheFlushOptionsSchema, cmd.optsWithGlobals());
      await flush(context(), opts);
    });
};
