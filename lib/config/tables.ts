/** Table key and TTL attribute names, shared by the infrastructure and the runtime. */
import type { TableInput } from './schema';

/**
 * Key and TTL attribute names of the tables the package's own code reads and writes: its
 * idempotency table, and the layouts its adapters expect (DynamoDbLockStore, DynamoDbDedupStore).
 * An app that uses an adapter declares its table with the adapter's layout
 * (`{ name: 'leases', ...TABLE_KEYS.locks }`), so the two cannot drift; `tenang lock` finds the
 * lease-lock tables by this layout.
 */
export const TABLE_KEYS = {
  /** Powertools idempotency's default layout. */
  idempotency: { partitionKey: 'id', ttl: 'expiration' },
  /** Lease locks with fencing counters (DynamoDbLockStore). */
  locks: { partitionKey: 'resource', ttl: 'expiresAtEpoch' },
  /** Claim-once records with a TTL (DynamoDbDedupStore). */
  dedup: { partitionKey: 'dedupKey', ttl: 'expiration' },
} as const;

/**
 * tenang's own table, always created and never declared by an app: the job runner keeps an
 * idempotent job's Powertools record there, and `dlq replay` reads it to skip what already
 * happened. Both depend on Powertools' layout (key `id`, TTL `expiration`), which a declared
 * table could get wrong without any check noticing until a duplicate ran twice; created always,
 * it costs nothing while unused (on-demand).
 */
export const IDEMPOTENCY_TABLE = {
  name: 'idempotency',
  ...TABLE_KEYS.idempotency,
} as const satisfies TableInput;
