/** DedupStore over a DynamoDB table with a TTL attribute (conditional put; Q1). */
import {
  ConditionalCheckFailedException,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { DeleteCommand, DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { ClaimResult, Clock, DedupStore } from '../../core/ports';
import { TABLE_KEYS } from '../../config/tables';

/** The attribute holding a record's status, 'in-flight' or 'done' (a reserved word in expressions). */
const STATUS = 'status';
/** The attribute naming who holds an in-flight claim, when the claim named an owner. */
const OWNER = 'owner';

/**
 * Dedup records: `{ dedupKey, status, expiration }`; an expired record counts as absent (TTL
 * deletes late).
 */
export class DynamoDbDedupStore implements DedupStore {
  private readonly doc: DynamoDBDocumentClient;

  public constructor(
    client: DynamoDBClient,
    private readonly tableName: string,
    private readonly clock: Clock = () => new Date(),
  ) {
    this.doc = DynamoDBDocumentClient.from(client);
  }

  /**
   * One conditional put; when the key is held, the failed condition returns the record
   * (ReturnValuesOnConditionCheckFailure), so telling 'done' from 'in-flight' costs no read.
   */
  public async claim(key: string, ttlSeconds: number, owner?: string): Promise<ClaimResult> {
    const nowEpoch = this.nowEpoch();
    const { partitionKey, ttl } = TABLE_KEYS.dedup;
    const free = 'attribute_not_exists(#k) OR #ttl < :now';
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            [partitionKey]: key,
            [STATUS]: 'in-flight',
            [ttl]: nowEpoch + ttlSeconds,
            ...(owner === undefined ? {} : { [OWNER]: owner }),
          },
          ConditionExpression:
            owner === undefined ? free : `${free} OR (#status = :inFlight AND #owner = :owner)`,
          ExpressionAttributeNames: {
            '#k': partitionKey,
            '#ttl': ttl,
            ...(owner === undefined ? {} : { '#status': STATUS, '#owner': OWNER }),
          },
          ExpressionAttributeValues: {
            ':now': nowEpoch,
            ...(owner === undefined ? {} : { ':inFlight': 'in-flight', ':owner': owner }),
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return 'claimed';
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return heldStatus(key, error.Item);
      throw error;
    }
  }

  /** Rewrites the record as done with the longer expiry (unconditional put). */
  public async confirm(key: string, ttlSeconds: number): Promise<void> {
    const { partitionKey, ttl } = TABLE_KEYS.dedup;
    await this.doc.send(
      new PutCommand({
        TableName: this.tableName,
        Item: { [partitionKey]: key, [STATUS]: 'done', [ttl]: this.nowEpoch() + ttlSeconds },
      }),
    );
  }

  public async release(key: string): Promise<void> {
    await this.doc.send(
      new DeleteCommand({ TableName: this.tableName, Key: { [TABLE_KEYS.dedup.partitionKey]: key } }),
    );
  }

  private nowEpoch(): number {
    return Math.floor(this.clock().getTime() / 1000);
  }
}

/**
 * The status of the record that failed the claim's condition. The document client does not
 * unmarshall an exception's item, so it arrives as attribute values. A record without a status
 * predates statuses: those were 24 h producer records and confirmed claims, hence 'done'.
 */
function heldStatus(key: string, item: Record<string, AttributeValue> | undefined): ClaimResult {
  if (item === undefined) {
    // DynamoDB always returns the old item here; without it, in flight and done look alike.
    throw new Error(`dedup claim of ${key} failed its condition but returned no record (ALL_OLD)`);
  }
  const status = item[STATUS]?.S;
  if (status === undefined || status === 'done') return 'done';
  if (status === 'in-flight') return 'in-flight';
  throw new Error(`dedup record ${key} has an unknown status "${status}"`);
}
