/**
 * `cache invalidate --key|--entity|--prefix` (C6); lib/ops/commands/cache.ts prints the results.
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
 */
import type { PrefixEviction } from '../../adapters/redis/redis-cache';
import { cacheKeyspace } from '../../core/cache-keys';
import { invalidateKeys, tombstoneTtlMs } from '../../core/cache-policy';
import type { CacheEntry } from '../../core/ports';
import { UsageError, type CliContext } from '../cli-context';
import { cacheTarget, withCache } from './connection';
import { formatEntityRef, invalidationsFor, prefixProblem, type EntityRef } from './keys';
import { progressPrinter } from './messages';
import { EntitySource } from './source';

/** What `--key` / `--entity` did to one key. */
export interface KeyInvalidationReport {
  readonly key: string;
  readonly fenceVersion: number;
  readonly before: string;
  readonly result: 'fenced' | 'superseded' | 'would-fence';
}

/** What `--key` / `--entity` did (the command's JSON, but for its `action`). */
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

/** What `--prefix` did (the command's JSON, but for its `action`). */
export type PrefixInvalidation = { readonly prefix: string; readonly dryRun: boolean } & PrefixEviction;

/** One entry as a report shows it: `value v3`, `tombstone v4` or `empty`. */
function describeEntry(entry: CacheEntry | undefined): string {
  return entry === undefined ? 'empty' : `${entry.kind} v${entry.version}`;
}

/** Fences every key of `ref` at its version in the source of truth (or above every version). */
export async function invalidateEntity(
  ctx: CliContext,
  ref: EntityRef,
  opts: { readonly dryRun: boolean },
): Promise<EntityInvalidation> {
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
  return {
    entity: formatEntityRef(ref),
    table: source.table,
    sourceVersion: state.kind === 'present' ? state.order.version : state.kind,
    tombstoneTtlSeconds: tombstoneTtlMs(settings) / 1000,
    dryRun: opts.dryRun,
    keys,
  };
}

/** Evicts the cached values under `prefix` (inside the stage's keyspace, not all of it); progress goes to stderr. */
export async function invalidatePrefix(
  ctx: CliContext,
  prefix: string,
  opts: { readonly batch: number; readonly dryRun: boolean },
): Promise<PrefixInvalidation> {
  const problem = prefixProblem(ctx.stage, prefix);
  if (problem !== undefined) throw new UsageError(problem);
  const result = await withCache(ctx, cacheTarget(ctx), (cache) =>
    cache.evictByPrefix(prefix, {
      count: opts.batch,
      dryRun: opts.dryRun,
      onBatch: progressPrinter(ctx.err, ctx.now, prefix),
    }),
  );
  return { prefix, dryRun: opts.dryRun, ...result };
}
