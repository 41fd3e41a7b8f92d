/**
 * The source of truth of the cached entities (lib/core/cache-admin.ts's EntitySource): the
 * declared table whose stream invalidates the cache (cacheSourceTable in lib/config/load.ts),
 * read as the order reader reads it (strongly consistent, checked against the order's schema). An
 * item the reader would refuse is reported as unreadable, not thrown: its cached copy must still go.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { EntityRef } from '../../core/cache-admin-keys';
import type { EntitySource, SourceState } from '../../core/cache-admin';
import { CorruptOrderError, parseStoredOrder } from '../../core/order';

/** Reads entities from DynamoDB as the order reader does. */
export class DynamoDbEntitySource implements EntitySource {
  private readonly doc: DynamoDBDocumentClient;

  public constructor(
    client: DynamoDBClient,
    /** The source table's name. */
    public readonly table: string,
    /** Its partition key attribute (the entity's id), as the table is declared. */
    private readonly partitionKey: string,
  ) {
    this.doc = DynamoDBDocumentClient.from(client);
  }

  public async read(ref: EntityRef): Promise<SourceState> {
    switch (ref.entity) {
      case 'order': {
        const { Item } = await this.doc.send(
          new GetCommand({
            TableName: this.table,
            Key: { [this.partitionKey]: ref.id },
            ConsistentRead: true,
          }),
        );
        if (Item === undefined) return { kind: 'absent' };
        try {
          return { kind: 'present', order: parseStoredOrder(ref.id, Item) };
        } catch (error) {
          // The reader refuses such an item too; a cached copy of it must still go.
          if (error instanceof CorruptOrderError) return { kind: 'unreadable', reason: error.message };
          throw error;
        }
      }
    }
  }
}
