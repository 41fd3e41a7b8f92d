/**
 * The cache's keys as the operator names them (C6): an entity as `<entity>:<id>` (`order:123`),
 * its cache key as lib/core/cache-keys.ts builds it and back, the stage's keyspace across schema
 * versions, the prefixes `--prefix` may evict, and the fence versions an invalidation plans.
 * Pure: no Redis, no AWS. The cache-admin operations (lib/core/cache-admin.ts) and the CLI's
 * option parsing (lib/ops/cache/keys.ts) both use it.
 */
import * as z from '../config/zod';
import {
  CACHE_SCHEMA_VERSION,
  CACHED_ENTITIES,
  cacheKeyspace,
  keysForOrderChange,
  orderCacheKey,
  type CachedEntity,
  type CacheKeyspace,
  type KeyInvalidation,
} from './cache-keys';
import { OrderSchema } from './order';

/**
 * Version of a tombstone above any version an entity can have had: used when the entity is gone
 * or unreadable, so no reader can put back any value it loaded before.
 */
export const CEILING_VERSION = Number.MAX_SAFE_INTEGER;

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
