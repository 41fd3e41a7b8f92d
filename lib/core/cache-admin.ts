/**
 * The operator's cache operations (C6), in one place: invalidation by entity (what `--key` and
 * `--entity` do) and by prefix, and the guarded flush that warms the hot keys first. The
 * cache-admin function (lambdas/cache-admin) runs them inside the cache's VPC for the CLI's
 * default path, and `tenang cache … --direct` runs the same functions from where it is; the CLI
 * prints the results either way. Its request and answer schemas are here too, so the CLI and the
 * function agree on them by construction.
 *
 * No invalidation here is a plain DEL (C3). A reader that loaded an old version just before a
 * delete writes it back just after it, and the stale value survives the invalidation. So:
 * - an entity's keys are fenced exactly as the cache invalidator fences them
 *   (lib/core/cache-keys.ts): a tombstone at the entity's current version, read from the source of
 *   truth with a strongly consistent read. A reader holding an older version can no longer write
 *   it back; a reader of the current version still can (an equal tombstone admits it). When the
 *   entity is gone, or its item cannot be read, no one knows which versions readers may hold, so
 *   the tombstone goes above them all (CEILING_VERSION). Reads of such an entity then skip the
 *   cache until the tombstone expires (tombstoneTtlMs), which is safe.
 * - a prefix and a flush evict cached values only (EvictingCache.evictByPrefix, SCAN in batches):
 *   tombstones stay and keep fencing the reads they fence. Those keys have no known version, so
 *   no tombstone can be raised for them: a read in flight when the scan passes its key may still
 *   write back what it loaded just before (a window of one load); every later change is fenced by
 *   the stream invalidator. Where that window matters, an entity invalidation fences at the
 *   source's version.
 * - a flush first warms the config's hot keys with the reader's version-checked write (it
 *   replaces older values, and an invalidation that races it wins), then evicts every cached value
 *   of the stage, all schema versions, keeping the warmed keys.
 * Two of these running at once is safe: every write is version-checked and an eviction of what
 * is already gone does nothing.
 */
import * as z from '../config/zod';
import {
  EntityRefTextSchema,
  cacheKeyOf,
  formatEntityRef,
  hotKeyRef,
  invalidationsFor,
  parseEntityRef,
  prefixProblem,
  stageNamespace,
  type EntityRef,
} from './cache-admin-keys';
import { cacheKeyspace, type CachedEntity } from './cache-keys';
import { invalidateKeys, tombstoneTtlMs, ttlWithJitterMs, type CachePolicySettings } from './cache-policy';
import { PermanentError, ValidationError } from './errors';
import type { CacheEntry, EvictingCache, PrefixEviction } from './ports';

// ---------------------------------------------------------------------------------------------
// Ports

/**
 * An entity as the source of truth has it now: present with its version (the declared version
 * attribute) and its item as stored, absent, or unreadable (no valid version) with the reason.
 */
export type SourceState =
  | { readonly kind: 'present'; readonly version: number; readonly item: Readonly<Record<string, unknown>> }
  | { readonly kind: 'absent' }
  | { readonly kind: 'unreadable'; readonly reason: string };

/**
 * The source of truth of the cached entities: each declared entity's table, read as a reader
 * reads it (strongly consistent).
 */
export interface EntitySource {
  /** The table `entity` is read from, for reports. */
  tableOf(entity: string): string;
  read(ref: EntityRef): Promise<SourceState>;
}

/** The cache settings the operations use (the stage's `cache`). */
export interface CacheAdminSettings extends CachePolicySettings {
  /** Keys warmed before a flush: `<entity>:<id>` or full cache keys of the stage. */
  readonly hotKeys: readonly string[];
  /** The cached entities (`stage.cache.entities`): the only ones an operation may name. */
  readonly entities: readonly CachedEntity[];
}

/** What every operation runs with. */
export interface CacheAdminDeps {
  readonly stage: string;
  readonly settings: CacheAdminSettings;
  readonly cache: EvictingCache;
  /** The source of truth, found when an operation first needs it (the CLI looks it up in the stack). */
  readonly source: () => Promise<EntitySource>;
  /** Warnings for the operator (the CLI prints them on stderr, the function answers them). */
  readonly warn: (text: string) => void;
  /** Running totals of a long scan under `what`. @default none */
  readonly progress?: (what: string) => (progress: PrefixEviction) => void;
  /** [0, 1): the TTL jitter of warmed values. */
  readonly random: () => number;
}

/** The operation was refused as asked (a prefix outside the stage, an invalid hot key): permanent. */
export class CacheAdminRefusedError extends PermanentError {}

/**
 * The refusal of an operation that needs the source of truth on a stage that has none: the
 * declaration names no cached entity (stage.cache.entities), so no table holds their versions.
 */
export function noEntitySource(stage: string): CacheAdminRefusedError {
  return new CacheAdminRefusedError(
    `stage ${stage} declares no cached entity (stage.cache.entities): no table is a source of truth to fence at`,
  );
}

/**
 * `text` (`<entity>:<id>`) as a reference to one of the declared entities.
 * @throws CacheAdminRefusedError naming what is wrong (an entity not declared, an invalid id)
 */
export function resolveEntityRef(entities: readonly CachedEntity[], text: string): EntityRef {
  const ref = parseEntityRef(entities, text);
  if (typeof ref === 'string') throw new CacheAdminRefusedError(ref);
  return ref;
}

// ---------------------------------------------------------------------------------------------
// Results

/** What an entity invalidation did to one key. */
export interface KeyInvalidationReport {
  readonly key: string;
  readonly fenceVersion: number;
  readonly before: string;
  readonly result: 'fenced' | 'superseded' | 'would-fence';
}

/** What an entity invalidation did. */
export interface EntityInvalidation {
  /** `order:123`. */
  readonly entity: string;
  readonly table: string;
  /** The entity's version in the source of truth, or why there is none. */
  readonly sourceVersion: number | 'absent' | 'unreadable';
  readonly tombstoneTtlSeconds: number;
  readonly dryRun: boolean;
  readonly keys: readonly KeyInvalidationReport[];
}

/** What a prefix invalidation did. */
export type PrefixInvalidation = { readonly prefix: string; readonly dryRun: boolean } & PrefixEviction;

/** What warming did to one hot key. */
export interface HotKeyReport {
  readonly entity: string;
  readonly key: string;
  /** The version in the source of truth; undefined when absent or unreadable. */
  readonly version: number | undefined;
  /** superseded: the cache already held this version or something newer (a value or a tombstone). */
  readonly result: 'warmed' | 'superseded' | 'absent' | 'unreadable' | 'would-warm';
}

/** What a flush did. */
export type FlushResult = {
  readonly stage: string;
  /** The stage's keyspace across schema versions (`tenang:<stage>:`). */
  readonly prefix: string;
  readonly dryRun: boolean;
  /** The source tables the hot keys were read from; empty when there was none to read. */
  readonly tables: readonly string[];
  readonly hotKeys: readonly HotKeyReport[];
} & PrefixEviction;

// ---------------------------------------------------------------------------------------------
// Operations

/** One entry as a report shows it: `value v3`, `tombstone v4` or `empty`. */
function describeEntry(entry: CacheEntry | undefined): string {
  return entry === undefined ? 'empty' : `${entry.kind} v${entry.version}`;
}

/** Fences every key of `ref` at its version in the source of truth (or above every version). */
export async function invalidateEntity(
  deps: CacheAdminDeps,
  ref: EntityRef,
  opts: { readonly dryRun: boolean },
): Promise<EntityInvalidation> {
  const keyspace = cacheKeyspace(deps.stage);
  // A reference the declaration does not know is refused before anything is read or written.
  resolveEntityRef(deps.settings.entities, formatEntityRef(ref));
  const source = await deps.source();
  // Read before fencing: a change after the read is fenced by the invalidator at a higher version.
  const state = await source.read(ref);
  if (state.kind === 'unreadable') deps.warn(`warning: ${state.reason}; fencing above every version`);
  const invalidations = invalidationsFor(keyspace, ref, state.kind === 'present' ? state.version : undefined);
  const { cache, settings } = deps;
  const before = await Promise.all(invalidations.map(async (i) => describeEntry(await cache.get(i.key))));
  const results = opts.dryRun ? undefined : await invalidateKeys(cache, invalidations, settings);
  return {
    entity: formatEntityRef(ref),
    table: source.tableOf(ref.entity),
    sourceVersion: state.kind === 'present' ? state.version : state.kind,
    tombstoneTtlSeconds: tombstoneTtlMs(settings) / 1000,
    dryRun: opts.dryRun,
    keys: invalidations.map((i, n) => ({
      key: i.key,
      fenceVersion: i.version,
      before: before[n] ?? 'empty',
      result: results?.[n]?.result ?? 'would-fence',
    })),
  };
}

/** Evicts the cached values under `prefix` (inside the stage's keyspace, not all of it). */
export async function invalidatePrefix(
  deps: CacheAdminDeps,
  prefix: string,
  opts: { readonly batch: number; readonly dryRun: boolean },
): Promise<PrefixInvalidation> {
  const problem = prefixProblem(deps.stage, prefix);
  if (problem !== undefined) throw new CacheAdminRefusedError(problem);
  const result = await deps.cache.evictByPrefix(prefix, {
    count: opts.batch,
    dryRun: opts.dryRun,
    onBatch: deps.progress?.(prefix),
  });
  return { prefix, dryRun: opts.dryRun, ...result };
}

/** The hot keys of the config; any invalid entry refuses the flush before anything is written. */
function hotKeyRefs(deps: CacheAdminDeps): EntityRef[] {
  const refs: EntityRef[] = [];
  const problems: string[] = [];
  for (const text of deps.settings.hotKeys) {
    const ref = hotKeyRef(deps.stage, text, deps.settings.entities);
    if (typeof ref === 'string') problems.push(`stage.cache.hotKeys: ${ref}`);
    else refs.push(ref);
  }
  if (problems.length > 0) {
    throw new CacheAdminRefusedError(
      `the hot keys cannot be warmed, nothing was flushed:\n  ${problems.join('\n  ')}`,
    );
  }
  return refs;
}

/** Warms the hot keys, then evicts every other cached value of the stage. */
export async function flush(
  deps: CacheAdminDeps,
  opts: { readonly batch: number; readonly dryRun: boolean },
): Promise<FlushResult> {
  const { dryRun } = opts;
  const { cache, settings } = deps;
  const keyspace = cacheKeyspace(deps.stage);
  const namespace = stageNamespace(deps.stage);
  const refs = hotKeyRefs(deps);
  const source = refs.length === 0 ? undefined : await deps.source();
  const states = source === undefined ? [] : await Promise.all(refs.map((ref) => source.read(ref)));
  // Warm first, with the reader's version-checked write: it replaces older values, and an
  // invalidation that races it wins. A hit through CacheAside would keep a stale value instead.
  const hotKeys: HotKeyReport[] = [];
  for (const [i, ref] of refs.entries()) {
    const state = states[i] ?? { kind: 'absent' };
    const key = cacheKeyOf(keyspace, ref);
    const entity = formatEntityRef(ref);
    if (state.kind !== 'present') {
      if (state.kind === 'unreadable') deps.warn(`warning: hot key ${entity}: ${state.reason}; not warmed`);
      hotKeys.push({ entity, key, version: undefined, result: state.kind });
      continue;
    }
    const { version } = state;
    const result = dryRun
      ? 'would-warm'
      : (await cache.putIfNewer(key, version, state.item, ttlWithJitterMs(settings, deps.random))) ===
          'written'
        ? 'warmed'
        : 'superseded';
    hotKeys.push({ entity, key, version, result });
  }
  // Warmed keys hold the current version (or newer, or a newer tombstone): the flush keeps them.
  const keep = new Set(hotKeys.filter((w) => w.version !== undefined).map((w) => w.key));
  const eviction = await cache.evictByPrefix(namespace, {
    keep,
    count: opts.batch,
    dryRun,
    onBatch: deps.progress?.(namespace),
  });
  const tables = source === undefined ? [] : [...new Set(refs.map((ref) => source.tableOf(ref.entity)))];
  return { stage: deps.stage, prefix: namespace, dryRun, tables, hotKeys, ...eviction };
}

// ---------------------------------------------------------------------------------------------
// The cache-admin function's request and answer

/** Keys per SCAN batch: Redis's COUNT hint, bounded so one round trip stays short. */
const BatchSchema = z.int().check(z.gte(1), z.lte(10_000));

/** Who asked, as the CLI saw it (written to the function's log beside the invocation). */
const RequestedBySchema = z.object({
  /** TENANG_ACTOR, else the OS user. */
  actor: z.string().check(z.minLength(1), z.maxLength(200)),
  /** The access key id of the CLI's AWS credentials (CloudTrail ties it to the identity). */
  accessKeyId: z.optional(z.string().check(z.maxLength(128))),
  /** Why, as the operator said (--reason). */
  reason: z.optional(z.string().check(z.maxLength(1000))),
});

/** What the cache-admin function is asked to do: one operation, validated at its boundary. */
export const CacheAdminRequestSchema = z.discriminatedUnion('operation', [
  z.object({
    operation: z.literal('invalidate-entity'),
    /** `order:123`. */
    entity: EntityRefTextSchema,
    dryRun: z.boolean(),
    requestedBy: RequestedBySchema,
  }),
  z.object({
    operation: z.literal('invalidate-prefix'),
    prefix: z.string().check(z.minLength(1), z.maxLength(1024)),
    batch: BatchSchema,
    dryRun: z.boolean(),
    requestedBy: RequestedBySchema,
  }),
  z.object({
    operation: z.literal('flush'),
    batch: BatchSchema,
    dryRun: z.boolean(),
    /**
     * The CLI's --yes-i-know, carried so a flush cannot be asked for by accident from anywhere
     * else either: without it only a dry run is done.
     */
    confirmed: z.boolean(),
    requestedBy: RequestedBySchema,
  }),
]);
/** A request as the CLI writes it (an entity as `order:123`). */
export type CacheAdminRequestInput = z.input<typeof CacheAdminRequestSchema>;
/** A request without who asked: what the CLI builds from its options (each operation's own fields). */
export type CacheAdminOperation = CacheAdminRequestInput extends infer R
  ? R extends unknown
    ? Omit<R, 'requestedBy'>
    : never
  : never;
/** A request as the function reads it (the entity as `<entity>:<id>`, resolved against the declaration when run). */
export type CacheAdminRequest = z.output<typeof CacheAdminRequestSchema>;

/** The function's answer: the operation's result and the warnings it raised, or why it refused. */
export type CacheAdminAnswer =
  | {
      readonly status: 'ok';
      readonly operation: 'invalidate-entity';
      readonly result: EntityInvalidation;
      readonly warnings: readonly string[];
    }
  | {
      readonly status: 'ok';
      readonly operation: 'invalidate-prefix';
      readonly result: PrefixInvalidation;
      readonly warnings: readonly string[];
    }
  | {
      readonly status: 'ok';
      readonly operation: 'flush';
      readonly result: FlushResult;
      readonly warnings: readonly string[];
    }
  | { readonly status: 'refused'; readonly message: string };

/**
 * Parses a request, its entity checked against the declared `entities`; a bad one is a
 * ValidationError naming each problem with its path.
 */
export function parseCacheAdminRequest(event: unknown, entities: readonly CachedEntity[]): CacheAdminRequest {
  const parsed = CacheAdminRequestSchema.safeParse(event);
  const problems = parsed.success
    ? []
    : parsed.error.issues.map((i) => `${i.path.length === 0 ? '(request)' : i.path.join('.')}: ${i.message}`);
  const entity =
    typeof event === 'object' && event !== null ? (event as { entity?: unknown }).entity : undefined;
  if (typeof entity === 'string' && !problems.some((p) => p.startsWith('entity:'))) {
    const ref = parseEntityRef(entities, entity);
    if (typeof ref === 'string') problems.push(`entity: ${ref}`);
  }
  if (parsed.success && problems.length === 0) return parsed.data;
  throw new ValidationError('invalid cache-admin request', problems);
}

/**
 * Runs one request. Refusals (a bad request, a prefix outside the stage, an invalid hot key, a
 * flush not confirmed) are answered, not thrown: retrying cannot change them. Anything else
 * (the cache or the table not answering) throws, and the caller sees a function error.
 */
export async function runCacheAdminRequest(
  deps: Omit<CacheAdminDeps, 'warn'>,
  event: unknown,
): Promise<CacheAdminAnswer> {
  const warnings: string[] = [];
  const withWarnings: CacheAdminDeps = { ...deps, warn: (text) => warnings.push(text) };
  try {
    const request = parseCacheAdminRequest(event, deps.settings.entities);
    switch (request.operation) {
      case 'invalidate-entity':
        return {
          status: 'ok',
          operation: request.operation,
          result: await invalidateEntity(
            withWarnings,
            resolveEntityRef(deps.settings.entities, request.entity),
            request,
          ),
          warnings,
        };
      case 'invalidate-prefix':
        return {
          status: 'ok',
          operation: request.operation,
          result: await invalidatePrefix(withWarnings, request.prefix, request),
          warnings,
        };
      case 'flush':
        if (!request.confirmed && !request.dryRun)
          throw new CacheAdminRefusedError(
            'a flush needs confirmed: true (the CLI sends it for --yes-i-know), or dryRun: true',
          );
        return {
          status: 'ok',
          operation: request.operation,
          result: await flush(withWarnings, request),
          warnings,
        };
    }
  } catch (error) {
    if (error instanceof CacheAdminRefusedError || error instanceof ValidationError)
      return { status: 'refused', message: error.message };
    throw error;
  }
}
