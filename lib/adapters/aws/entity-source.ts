/**
 * The source of truth of the cached entities (lib/core/cache-admin.ts's EntitySource): each
 * entity the declaration names in `stage.cache.entities`, read from its declared table by its key
 * attribute (strongly consistent, as a reader reads it) and fenced on its declared version
 * attribute. An item whose version is not an integer ≥ 0 is reported as unreadable, not thrown:
 * its cached copy must still go.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { EntityRef } from '../../core/cache-admin-keys';
import type { EntitySource, SourceState } from '../../core/cache-admin';
import { versionProblem, type CachedEntity } from '../../core/cache-keys';

/** One cached entity and the physical name of its table. */
export interface EntityTable {
  readonly entity: CachedEntity;
  /** The table's physical name (`tenang-<stage>-<table>`). */
  readonly tableName: string;
}

/** Reads the declared entities from their DynamoDB tables. */
export class DynamoDbEntitySource implements EntitySource {
  private readonly doc: DynamoDBDocumentClient;

  public constructor(
    client: DynamoDBClient,
    private readonly entities: readonly EntityTable[],
  ) {
    this.doc = DynamoDBDocumentClient.from(client);
  }

  public tableOf(entity: string): string {
    return this.entityTable(entity).tableName;
  }

  public async read(ref: EntityRef): Promise<SourceState> {
    const { entity, tableName } = this.entityTable(ref.entity);
    const { Item } = await this.doc.send(
      new GetCommand({ TableName: tableName, Key: { [entity.key]: ref.id }, ConsistentRead: true }),
    );
    if (Item === undefined) return { kind: 'absent' };
    const problem = versionProblem(Item[entity.version]);
    if (problem !== undefined) {
      // No one knows which versions readers may hold of such an item; its cached copy must still go.
      return {
        kind: 'unreadable',
        reason: `${entity.name} ${ref.id} in ${tableName} has no valid version: ${entity.version} ${problem}`,
      };
    }
    return { kind: 'present', version: Item[entity.version] as number, item: Item };
  }

  private entityTable(name: string): EntityTable {
    const found = this.entities.find((e) => e.entity.name === name);
    if (found === undefined) {
      // The operations resolve every reference against the declaration first: this is a bug.
      throw new Error(
        `no table for entity "${name}" (known: ${this.entities.map((e) => e.entity.name).join(', ') || 'none'})`,
      );
    }
    return found;
  }
}
