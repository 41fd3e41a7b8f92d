/**
 * The cache's keys as the operator names them (C6): an entity as `<entity>:<id>` (`order:123`,
 * of the entities the declaration names in `stage.cache.entities`),
 * its cache key as lib/core/cache-keys.ts builds it and back, the stage's keyspace across schema
 * versions, the prefixes `--prefix` may evict, and the fence versions an invalidation plans.
 * Pure: no Redis, no AWS. The cache-admin operations (lib/core/cache-admin.ts) and the CLI's
 * option parsing (lib/ops/cache/keys.ts) both use it.
 */
import * as z from '../config/zod';
import {
  CACHE_SCHEMA_VERSION,
  cacheKeyspace,
  entityCacheKey,
  keysForKeyFieldsChange,
  type CachedEntity,
  type CacheKeyspace,
  type KeyInvalidation,
} from './cache-keys';

/**
 * Version of a tombstone above any version an entity can have had: used when the entity is gone
 * or unreadable, so no reader can put back any value it loaded before.
 */
export const CEILING_VERSION = Number.MAX_SAFE_INTEGER;

/** Longest id an entity reference may carry (DynamoDB's partition key holds at most 2048 bytes). */
export const MAX_ENTITY_ID_LENGTH = 1024;

/** An entity the cache holds, as `<entity>:<id>` names it (e.g. `order:123`). */
export interface EntityRef {
  /** The declared entity's name (`stage.cache.entities[].name`). */
  readonly entity: string;
  readonly id: string;
}

/** Why `id` is not an entity id, or undefined when it is one. */
function idProblem(entity: string, id: string): string | undefined {
  if (id.length === 0) return `the ${entity} id is empty`;
  if (id.length > MAX_ENTITY_ID_LENGTH) {
    return `"${id.slice(0, 40)}…" is not a valid ${entity} id: longer than ${MAX_ENTITY_ID_LENGTH} characters`;
  }
  return undefined;
}

/** The declared entities' names, for messages. */
function knownEntities(entities: readonly CachedEntity[]): string {
  return entities.length === 0
    ? 'none is declared (stage.cache.entities)'
    : `cached entities: ${entities.map((e) => e.name).join(', ')}`;
}

/** `text` as `<entity>:<id>` (the id may hold colons), or why it is not one, by syntax alone. */
function splitEntityRef(text: string): EntityRef | string {
  const colon = text.indexOf(':');
  if (colon <= 0) return `"${text}" is not <entity>:<id>, e.g. order:123`;
  return { entity: text.slice(0, colon), id: text.slice(colon + 1) };
}

/**
 * `text` as a reference to one of the declared `entities`, or why it is not one (not
 * `<entity>:<id>`, an entity not declared, an invalid id).
 */
export function parseEntityRef(entities: readonly CachedEntity[], text: string): EntityRef | string {
  const ref = splitEntityRef(text);
  if (typeof ref === 'string') return ref;
  if (!entities.some((e) => e.name === ref.entity)) {
    return `unknown entity "${ref.entity}"; ${knownEntities(entities)}`;
  }
  return idProblem(ref.entity, ref.id) ?? ref;
}

/**
 * `<entity>:<id>` (e.g. `order:123`) by syntax: which entities exist is the declaration's, so the
 * reference is checked against it where the declaration is known (parseEntityRef, resolveEntityRef).
 */
export const EntityRefTextSchema = z.string().check(
  z.superRefine((text: string, ctx) => {
    const ref = splitEntityRef(text);
    const problem = typeof ref === 'string' ? ref : idProblem(ref.entity, ref.id);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem, input: text });
  }),
);

/** `<entity>:<id>` by syntax (EntityRefTextSchema), as an EntityRef: not yet checked against the declaration. */
export const EntityRefSchema = z.pipe(
  EntityRefTextSchema,
  z.transform((text: string): EntityRef => splitEntityRef(text) as EntityRef),
);

/** `order:123`. */
export function formatEntityRef(ref: EntityRef): string {
  return `${ref.entity}:${ref.id}`;
}

/** The cache key of `ref` in `keyspace`. */
export function cacheKeyOf(keyspace: CacheKeyspace, ref: EntityRef): string {
  return entityCacheKey(keyspace, ref.entity, ref.id);
}

/**
 * The entity whose cache key `key` is, among the declared `entities`, or undefined. Inverts the
 * key builder by building a key around a marker, so the key format stays declared in
 * lib/core/cache-keys.ts only.
 */
export function entityOfKey(
  keyspace: CacheKeyspace,
  key: string,
  entities: readonly CachedEntity[],
): EntityRef | undefined {
  const MARK = '\u0000';
  for (const { name: entity } of entities) {
    const [head = '', tail = ''] = entityCacheKey(keyspace, entity, MARK).split(MARK);
    if (key.length <= head.length + tail.length || !key.startsWith(head) || !key.endsWith(tail)) continue;
    const id = key.slice(head.length, key.length - tail.length);
    if (entityCacheKey(keyspace, entity, id) === key && idProblem(entity, id) === undefined)
      return { entity, id };
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

/**
 * The keys of `ref` and the version each is fenced at, as the invalidator would for a change:
 * the current version when the entity exists, else above every version it can have had.
 */
export function invalidationsFor(
  keyspace: CacheKeyspace,
  ref: EntityRef,
  currentVersion: number | undefined,
): KeyInvalidation[] {
  return currentVersion === undefined
    ? // A removal whose last version is unknown: the tombstone goes one past the highest.
      keysForKeyFieldsChange(keyspace, ref.entity, { id: ref.id, version: CEILING_VERSION - 1 }, undefined)
    : keysForKeyFieldsChange(keyspace, ref.entity, undefined, { id: ref.id, version: currentVersion });
}

/** A hot key of the config: an entity reference (`order:123`) or a cache key of the stage. */
export function hotKeyRef(
  stage: string,
  text: string,
  entities: readonly CachedEntity[],
): EntityRef | string {
  if (text.startsWith(stageNamespace(stage))) {
    return entityOfKey(cacheKeyspace(stage), text, entities) ?? `"${text}" is not the key of a cached entity`;
  }
  return parseEntityRef(entities, text);
}
