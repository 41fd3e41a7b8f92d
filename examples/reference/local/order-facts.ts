/**
 * The order flow's facts, read back from the sources of truth once the pipeline has drained: the
 * orders' states, the seeded SKUs' stock and reservations, and the orders table's stream (tenang's
 * generic readers, given the reference's tables and keys).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { readItemStates, readStreamRecords } from 'tenang/local';
import { DynamoDbInventoryStore, REFERENCE_TABLE_KEYS } from '../domain';
import type { StockFact, StreamRecordFact } from './order-invariants';

/** Each order's state (strongly consistent); orders not found are absent. */
export function readOrderStates(
  dynamodb: DynamoDBClient,
  tableName: string,
  orderIds: readonly string[],
): Promise<Map<string, string>> {
  return readItemStates(dynamodb, tableName, orderIds, {
    partitionKey: REFERENCE_TABLE_KEYS.orders.partitionKey,
    attribute: 'state',
  });
}

/** Stock and reservations of the SKUs a scenario seeded. */
export async function readStock(
  dynamodb: DynamoDBClient,
  tableName: string,
  seeded: ReadonlyMap<string, number>,
): Promise<Map<string, StockFact>> {
  const store = new DynamoDbInventoryStore(dynamodb, tableName);
  const stock = new Map<string, StockFact>();
  for (const [sku, initial] of seeded) {
    const level = await store.get(sku);
    stock.set(sku, {
      seeded: initial,
      available: level?.available ?? 0,
      reservations: Object.fromEntries(
        Object.entries(level?.reservations ?? {}).map(([orderId, r]) => [orderId, r.quantity]),
      ),
    });
  }
  return stock;
}

/** Every record of the orders table's stream, each with the order it changed. */
export async function readOrderStream(
  streams: DynamoDBStreamsClient,
  streamArn: string,
): Promise<StreamRecordFact[]> {
  const key = REFERENCE_TABLE_KEYS.orders.partitionKey;
  return (await readStreamRecords(streams, streamArn)).map((r) => ({
    sequence: r.sequence,
    eventName: r.eventName,
    at: r.at,
    ...(r.keys[key] === undefined ? {} : { orderId: r.keys[key] }),
  }));
}
