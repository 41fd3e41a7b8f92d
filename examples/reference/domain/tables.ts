/**
 * Key layouts of the reference app's own tables, as its adapters read them (DynamoDbOrderStore,
 * DynamoDbInventoryStore, the order stream): its declaration spreads them into the tables
 * (`{ name: 'orders', ...REFERENCE_TABLE_KEYS.orders }`). Its lease-lock and dedup tables use the
 * kit's layouts (TABLE_KEYS in lib/config/tables.ts).
 */
export const REFERENCE_TABLE_KEYS = {
  /** Orders, the source of truth; keyed on the order id. */
  orders: { partitionKey: 'orderId' },
  /** Stock per SKU; writes carry the lock's fencing token (L3). */
  inventory: { partitionKey: 'sku' },
} as const;
