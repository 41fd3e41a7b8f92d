/**
 * `--key` as the CLI reads it (C6): the entity whose cache key it is, or a usage error saying
 * what to use instead. Every other key rule lives in lib/core/cache-admin-keys.ts, which the
 * cache-admin function runs too; the function is only ever asked about entities.
 */
import { cacheKeyspace, type CachedEntity } from '../../core/cache-keys';
import { cacheKeyOf, entityOfKey, stageNamespace, type EntityRef } from '../../core/cache-admin-keys';
import { UsageError } from '../cli-context';

/**
 * The entity of `--key` on `stage`, among the declared `entities`; a key that is not one is a
 * usage error saying what to use.
 */
export function entityOfStageKey(stage: string, key: string, entities: readonly CachedEntity[]): EntityRef {
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
  const ref = entityOfKey(keyspace, key, entities);
  if (ref === undefined) {
    const examples =
      entities.length === 0
        ? 'none is declared in stage.cache.entities'
        : entities.map((e) => cacheKeyOf(keyspace, { entity: e.name, id: '<id>' })).join(', ');
    throw new UsageError(
      `--key ${key} is not the key of a cached entity (${examples}); load locks and ` +
        'landing signals expire by themselves; use --prefix for anything else',
    );
  }
  return ref;
}
