/** Table key and TTL attribute names, shared by the infrastructure and the runtime. */
import type { TableInput } from './schema';

/**
 * Key and TTL attribute names of the tables the package's own code reads and writes: its
 * idempotency table, and the layouts its adapters expect (DynamoDbOrderStore, DynamoDbLockStore,
 * DynamoDbDedupStore, DynamoDbInventoryStore). An app that uses an adapter declares its table
 * with the adapter's layout (`{ name: 'locks', ...TABLE_KEYS.locks }`), so the two cannot drift.
 */
export const TABLE_KEYS = {
  orders: { partitionKey: 'orderId' },
  /** Powertools idempotency's default layout. */
  idempotency: { partitionKey: 'id', ttl: 'expiration' },
  locks: { partitionKey: 'resource', ttl: 'expiresAtEpoch' },
  dedup: { partitionKey: 'dedupKey', ttl: 'expiration' },
  /** Stock per SKU; writes carry the lock's fencing token (L3). */
  inventory: { partitionKey: 'sku' },
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
