/**
 * `cache invalidate --bump-version` (C6) writes nothing: CACHE_SCHEMA_VERSION is a code constant,
 * the reader and the invalidator build every key from it, so a bump is a change and a deploy.
 * This is the plan the command prints: what to change, what happens to the old keys, and how to
 * cover the rollout window.
 */
import { CACHE_SCHEMA_VERSION, cacheKeyspace } from '../../core/cache-keys';
import { stageNamespace } from '../../core/cache-admin-keys';

/** Where the schema version constant lives (printed by --bump-version). */
export const SCHEMA_VERSION_FILE = 'lib/core/cache-keys.ts';

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
