/**
 * The source of truth of the cached entities (lib/core/cache-admin.ts's EntitySource): the
 * orders table, read with the order reader's loader (strongly consistent). An item the reader
 * would refuse is reported as unreadable, not thrown: its cached copy must still go.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ENTITY_TABLES, type EntityRef } from '../../core/cache-admin-keys';
import type { EntitySource, SourceState } from '../../core/cache-admin';
import { CorruptOrderError, DynamoDbOrderStore } from './dynamodb-order-store';

/** The declared table that holds the cached orders (`orders`). */
export const ENTITY_TABLE = ENTITY_TABLES.order;

/** Reads entities from DynamoDB as the order reader does. */
export class DynamoDbEntitySource implements EntitySource {
  private readonly orders: DynamoDbOrderStore;

  public constructor(
    client: DynamoDBClient,
    /** The orders table's name. */
    public readonly table: string,
  ) {
    this.orders = new DynamoDbOrderStore(client, table);
  }

  public async read(ref: EntityRef): Promise<SourceState> {
    switch (ref.entity) {
      case 'order':
        try {
          const order = await this.orders.get(ref.id);
          return order === undefined ? { kind: 'absent' } : { kind: 'present', order };
        } catch (error) {
          // The reader refuses such an item too; a cached copy of it must still go.
          if (error instanceof CorruptOrderError) return { kind: 'unreadable', reason: error.message };
          throw error;
        }
    }
  }
}
