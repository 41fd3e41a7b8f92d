/**
 * Every cache key, and which keys each entity change affects, declared in one place (C2, C6).
 * The invalidator, the reader and the CLI all derive keys from here, so a key added for a new
 * read path cannot be forgotten by the invalidation. The kit knows no entity of its own: the
 * cached entities are the app's, declared in `stage.cache.entities` (name, table, key and version
 * attributes), and every function here takes the entity it works on.
 */
import { ValidationError } from './errors';

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

/**
 * A cached entity as the declaration names it (`stage.cache.entities`): its name in cache keys
 * and in `<entity>:<id>`, the table that is its source of truth, the attribute holding its id (the
 * table's partition key) and the one holding its version (an integer ≥ 0 every write raises).
 */
export interface CachedEntity {
  readonly name: string;
  readonly table: string;
  readonly key: string;
  readonly version: string;
}

/** One key an entity change makes stale, with the version its tombstone fences below. */
export interface KeyInvalidation {
  readonly key: string;
  /** Cached values with a version below this are stale; readers may write back this version or newer. */
  readonly version: number;
}

/** The part of an entity image the cache keys depend on: its id and its version. */
export interface EntityKeyFields {
  readonly id: string;
  readonly version: number;
}

/** An image of an item (a stream record's old or new image, unmarshalled). */
export type EntityImage = Readonly<Record<string, unknown>>;

/** The keyspace of `stage` (one Redis may serve several stages and test runs locally). */
export function cacheKeyspace(stage: string): CacheKeyspace {
  return { prefix: `tenang:${stage}:${CACHE_SCHEMA_VERSION}:` };
}

/**
 * Key of one entity. The id is a Redis hash tag, so the entry, its load lock and its landing
 * signal share a slot on a clustered cache.
 */
export function entityCacheKey(keyspace: CacheKeyspace, entity: string, id: string): string {
  return `${entityPrefix(keyspace, entity)}{${id}}`;
}

/** Prefix of every key of `entity` (selective invalidation by entity, C6). */
export function entityPrefix(keyspace: CacheKeyspace, entity: string): string {
  return `${keyspace.prefix}${entity}:`;
}

/**
 * The short load lock that guards `key` against a stampede across processes (C4). A suffix keeps
 * the entry's hash tag, so a script may touch both on a clustered cache.
 */
export function loadLockKey(key: string): string {
  return `${key}:lock`;
}

/**
 * The signal a load lock's release leaves on `key` for the callers waiting on it (C4); the same
 * hash tag as the entry and its lock.
 */
export function landingSignalKey(key: string): string {
  return `${key}:landed`;
}

/** Why `value` is not an entity version (an integer ≥ 0), or undefined when it is one. */
export function versionProblem(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return undefined;
  return `must be an integer ≥ 0, got ${value === undefined ? 'nothing' : JSON.stringify(value)}`;
}

/** An image that has no valid id or version by the entity's declared attributes: a retry cannot repair it. */
export class InvalidEntityImageError extends ValidationError {}

/**
 * The id and version of `image` by the entity's declared key and version attributes; undefined
 * when there is no image.
 * @throws InvalidEntityImageError when the id is not a non-empty string or the version not an integer ≥ 0
 */
export function entityKeyFields(
  entity: Pick<CachedEntity, 'name' | 'key' | 'version'>,
  image: EntityImage | undefined,
): EntityKeyFields | undefined {
  if (image === undefined) return undefined;
  const id = image[entity.key];
  const version = image[entity.version];
  const problems: string[] = [];
  if (typeof id !== 'string' || id.length === 0) {
    problems.push(
      `${entity.key}: must be a non-empty string, got ${id === undefined ? 'nothing' : JSON.stringify(id)}`,
    );
  }
  const bad = versionProblem(version);
  if (bad !== undefined) problems.push(`${entity.version}: ${bad}`);
  if (problems.length > 0) {
    throw new InvalidEntityImageError(`${entity.name} image without a valid id and version`, problems);
  }
  return { id: id as string, version: version as number };
}

/**
 * The keys a change of `entity` affects and the version each must be fenced at.
 * - insert or modify: the new image's version; a reader that loaded it may write it back;
 * - remove: one past the removed version, so no in-flight read can put the deleted entity back.
 * An unchanged id is the rule (it is the partition key); a changed one invalidates both.
 * A modify that leaves the id and the version as they were affects no key: every change a reader
 * sees raises the version, so such a write (e.g. an idempotency record claimed or released on
 * the item) left the cached entity as it is.
 */
export function keysForKeyFieldsChange(
  keyspace: CacheKeyspace,
  entity: string,
  oldFields: EntityKeyFields | undefined,
  newFields: EntityKeyFields | undefined,
): KeyInvalidation[] {
  if (
    oldFields !== undefined &&
    newFields !== undefined &&
    oldFields.id === newFields.id &&
    oldFields.version === newFields.version
  ) {
    return [];
  }
  const byKey = new Map<string, number>();
  const add = (id: string, version: number): void => {
    const key = entityCacheKey(keyspace, entity, id);
    byKey.set(key, Math.max(version, byKey.get(key) ?? -1));
  };
  if (newFields !== undefined) add(newFields.id, newFields.version);
  if (oldFields !== undefined && (newFields === undefined || newFields.id !== oldFields.id)) {
    add(oldFields.id, oldFields.version + 1);
  }
  return [...byKey].map(([key, version]) => ({ key, version }));
}

/**
 * The keys a change of `entity` from `oldImage` to `newImage` affects (either undefined for an
 * insert or a remove), read by the entity's declared key and version attributes; the fencing
 * rules are keysForKeyFieldsChange's.
 * @throws InvalidEntityImageError when an image has no valid id or version
 */
export function keysForEntityChange(
  keyspace: CacheKeyspace,
  entity: Pick<CachedEntity, 'name' | 'key' | 'version'>,
  oldImage: EntityImage | undefined,
  newImage: EntityImage | undefined,
): KeyInvalidation[] {
  return keysForKeyFieldsChange(
    keyspace,
    entity.name,
    entityKeyFields(entity, oldImage),
    entityKeyFields(entity, newImage),
  );
}
