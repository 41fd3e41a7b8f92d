/**
 * Every cache key, and which keys each entity change affects, declared in one place (C2, C6).
 * The invalidator, the reader and the CLI all derive keys from here, so a key added for a new
 * read path cannot be forgotten by the invalidation.
 */

/**
 * Version of the cached shape. Bump it when the cached value's format changes: every key moves to
 * a new namespace, so old-format entries are never read again and simply expire (C6 version bump).
 */
export const CACHE_SCHEMA_VERSION = 'v1';

/** The namespace of one stage's cache keys. */
export interface CacheKeyspace {
  /** Prefix of every key, e.g. `tenang:prod:v1:`. */
  readonly prefix: string;
}

/** The entities that have cache keys. */
export const CACHED_ENTITIES = ['order'] as const;
export type CachedEntity = (typeof CACHED_ENTITIES)[number];

/** One key an entity change makes stale, with the version its tombstone fences below. */
export interface KeyInvalidation {
  readonly key: string;
  /** Cached values with a version below this are stale; readers may write back this version or newer. */
  readonly version: number;
}

/** The part of an order image the cache keys depend on. */
export interface OrderKeyFields {
  readonly orderId: string;
  readonly version: number;
}

/** The keyspace of `stage` (one Redis may serve several stages and test runs locally). */
export function cacheKeyspace(stage: string): CacheKeyspace {
  return { prefix: `tenang:${stage}:${CACHE_SCHEMA_VERSION}:` };
}

/**
 * Key of one order. The id is a Redis hash tag, so the entry and its load lock share a slot on a
 * clustered cache.
 */
export function orderCacheKey(keyspace: CacheKeyspace, orderId: string): string {
  return `${entityPrefix(keyspace, 'order')}{${orderId}}`;
}

/** Prefix of every key of `entity` (selective invalidation by entity, C6). */
export function entityPrefix(keyspace: CacheKeyspace, entity: CachedEntity): string {
  return `${keyspace.prefix}${entity}:`;
}

/** The short load lock that guards `key` against a stampede across processes (C4). */
export function loadLockKey(key: string): string {
  return `${key}:lock`;
}

/**
 * The keys an order change affects and the version each must be fenced at.
 * - insert or modify: the new image's version; a reader that loaded it may write it back;
 * - remove: one past the removed version, so no in-flight read can put the deleted order back.
 * An unchanged id is the rule (it is the partition key); a changed one invalidates both.
 * A modify that leaves the id and the version as they were affects no key: every change a reader
 * sees raises the version, so such a write (a payment's idempotency record claimed or released
 * on the order) left the cached order as it is.
 */
export function keysForOrderChange(
  keyspace: CacheKeyspace,
  oldImage: OrderKeyFields | undefined,
  newImage: OrderKeyFields | undefined,
): KeyInvalidation[] {
  if (
    oldImage !== undefined &&
    newImage !== undefined &&
    oldImage.orderId === newImage.orderId &&
    oldImage.version === newImage.version
  ) {
    return [];
  }
  const byKey = new Map<string, number>();
  const add = (orderId: string, version: number): void => {
    const key = orderCacheKey(keyspace, orderId);
    byKey.set(key, Math.max(version, byKey.get(key) ?? -1));
  };
  if (newImage !== undefined) add(newImage.orderId, newImage.version);
  if (oldImage !== undefined && (newImage === undefined || newImage.orderId !== oldImage.orderId)) {
    add(oldImage.orderId, oldImage.version + 1);
  }
  return [...byKey].map(([key, version]) => ({ key, version }));
}
