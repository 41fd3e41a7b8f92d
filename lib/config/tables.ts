/** Table key and TTL attribute names, shared by the infrastructure and the runtime. */

/** Key and TTL attribute names the runtime shares with the infrastructure. */
export const TABLE_KEYS = {
  orders: { partitionKey: 'orderId' },
  /** Powertools idempotency's default layout. */
  idempotency: { partitionKey: 'id', ttl: 'expiration' },
  locks: { partitionKey: 'resource', ttl: 'expiresAtEpoch' },
  dedup: { partitionKey: 'dedupKey', ttl: 'expiration' },
  /** Stock per SKU; writes carry the lock's fencing token (L3). */
  inventory: { partitionKey: 'sku' },
} as const;
