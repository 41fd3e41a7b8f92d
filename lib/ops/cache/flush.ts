/**
 * `cache flush` (C6), after the command's guard (--yes-i-know, the origin-load warning):
 * warms the config's hot keys (stage.cache.hotKeys) from the orders table with the reader's
 * version-checked write, then evicts every cached value of the stage, all schema versions, with
 * SCAN, keeping the warmed keys, tombstones and locks (the window of one load a scan leaves:
 * lib/ops/cache/invalidate.ts). lib/ops/commands/cache.ts prints the result.
 */
import type { PrefixEviction } from '../../adapters/redis/redis-cache';
import { cacheKeyspace } from '../../core/cache-keys';
import { ttlWithJitterMs } from '../../core/cache-policy';
import { CommandFailedError, type CliContext } from '../cli-context';
import { cacheTarget, withCache } from './connection';
import { cacheKeyOf, formatEntityRef, hotKeyRef, stageNamespace, type EntityRef } from './keys';
import { progressPrinter } from './messages';
import { EntitySource } from './source';

/** What warming did to one hot key. */
export interface HotKeyReport {
  readonly entity: string;
  readonly key: string;
  /** The version in the source of truth; undefined when absent or unreadable. */
  readonly version: number | undefined;
  /** superseded: the cache already held this version or something newer (a value or a tombstone). */
  readonly result: 'warmed' | 'superseded' | 'absent' | 'unreadable' | 'would-warm';
}

/** What `cache flush` did (the command's JSON, but for its `action`). */
export type FlushResult = {
  readonly stage: string;
  /** The stage's keyspace across schema versions (`tenang:<stage>:`). */
  readonly prefix: string;
  readonly dryRun: boolean;
  /** The orders table the hot keys were read from; undefined when the config names none. */
  readonly table: string | undefined;
  readonly hotKeys: readonly HotKeyReport[];
} & PrefixEviction;

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

/** Warms the hot keys, then evicts every other cached value of the stage; progress goes to stderr. */
export async function flush(
  ctx: CliContext,
  opts: { readonly batch: number; readonly dryRun: boolean },
): Promise<FlushResult> {
  const { dryRun } = opts;
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
  return { stage: ctx.stage, prefix: namespace, dryRun, table: source?.table, hotKeys, ...eviction };
}
