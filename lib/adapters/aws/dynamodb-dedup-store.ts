/** DedupStore over a DynamoDB table with a TTL attribute (conditional put; Q1). */
import { ConditionalCheckFailedException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Clock, DedupStore } from '../../core/ports';
import { TABLE_KEYS } from '../../config/tables';

/** Dedup records: `{ dedupKey, expiration }`; an expired record counts as absent (TTL deletes late). */
export class DynamoDbDedupStore implements DedupStore {
  private readonly doc: DynamoDBDocumentClient;

  public constructor(
    client: DynamoDBClient,
    private readonly tableName: string,
    private readonly clock: Clock = () => new Date(),
  ) {
    this.doc = DynamoDBDocumentClient.from(client);
  }

  public async claim(key: string, ttlSeconds: number): Promise<'claimed' | 'duplicate'> {
    const nowEpoch = Math.floor(this.clock().getTime() / 1000);
    const { partitionKey, ttl } = TABLE_KEYS.dedup;
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: { [partitionKey]: key, [ttl]: nowEpoch + ttlSeconds },
          ConditionExpression: 'attribute_not_exists(#k) OR #ttl < :now',
          ExpressionAttributeNames: { '#k': partitionKey, '#ttl': ttl },
          ExpressionAttributeValues: { ':now': nowEpoch },
        }),
      );
      return 'claimed';
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return 'duplicate';
      throw error;
    }
  }

  /**
   * Keeps a claim for `ttlSeconds` from now (unconditional put): a short in-progress claim
   * becomes a long "done" record once the guarded work succeeded.
   */
  public async confirm(key: string, ttlSeconds: number): Promise<void> {
    const nowEpoch = Math.floor(this.clock().getTime() / 1000);
    const { partitionKey, ttl } = TABLE_KEYS.dedup;
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { [partitionKey]: key, [ttl]: nowEpoch + ttlSeconds },
      }),
    );
  }

  public async release(key: string): Promise<void> {
    await this.doc.send(
      new DeleteCommand({ TableName: this.tableName, Key: { [TABLE_KEYS.dedup.partitionKey]: key } }),
    );
  }
}
