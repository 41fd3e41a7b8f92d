/**
 * A fleet-wide rate limit's one record (FleetRateLimit) in a DynamoDB table: the item `key`
 * holds the theoretical arrival time `tat` (epoch ms) and is written only with conditional
 * UpdateItems, so concurrent instances never both spend the same tokens. One request per batch's
 * takes when the limit is idle, two when the fleet is busy. The item's TTL is set a day ahead
 * at each write, so a limit no longer used goes away.
 */
import {
  ConditionalCheckFailedException,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import type { RateStore } from '../../core/fleet-rate-limit';

const TAT = 'tat';
const DAY_SECONDS = 24 * 60 * 60;

const n = (value: number): AttributeValue => ({ N: String(value) });

function tatOf(item: Record<string, AttributeValue> | undefined, key: string): number {
  const value = item?.[TAT]?.N;
  if (value === undefined) throw new Error(`rate limit ${key}: the item returned has no ${TAT}`);
  return Number(value);
}

/** The record of a FleetRateLimit in `tableName`, under `key` in its partition key `keyAttribute`. */
export class DynamoDbRateStore implements RateStore {
  public constructor(
    private readonly client: DynamoDBClient,
    private readonly opts: {
      readonly tableName: string;
      readonly keyAttribute: string;
      readonly key: string;
      /** The table's TTL attribute. */
      readonly ttlAttribute: string;
      /** @default Date.now */
      readonly nowMs?: () => number;
    },
  ) {}

  public async startIdle(request: {
    nowMs: number;
    tatMs: number;
  }): Promise<{ readonly set: true } | { readonly set: false; readonly tatMs: number }> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          ...this.target(),
          UpdateExpression: 'SET #tat = :tat, #ttl = :ttl',
          ConditionExpression: 'attribute_not_exists(#tat) OR #tat <= :now',
          ExpressionAttributeNames: { '#tat': TAT, '#ttl': this.opts.ttlAttribute },
          ExpressionAttributeValues: {
            ':tat': n(request.tatMs),
            ':now': n(request.nowMs),
            ':ttl': this.ttl(),
          },
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { set: true };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException)
        return { set: false, tatMs: tatOf(error.Item, this.opts.key) };
      throw error;
    }
  }

  public async advance(request: {
    incrementMs: number;
    maxTatMs: number;
  }): Promise<{ readonly advanced: boolean; readonly tatMs: number }> {
    try {
      const { Attributes } = await this.client.send(
        new UpdateItemCommand({
          ...this.target(),
          UpdateExpression: 'SET #tat = #tat + :inc, #ttl = :ttl',
          ConditionExpression: '#tat <= :max',
          ExpressionAttributeNames: { '#tat': TAT, '#ttl': this.opts.ttlAttribute },
          ExpressionAttributeValues: {
            ':inc': n(request.incrementMs),
            ':max': n(request.maxTatMs),
            ':ttl': this.ttl(),
          },
          ReturnValues: 'UPDATED_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { advanced: true, tatMs: tatOf(Attributes, this.opts.key) };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException)
        return { advanced: false, tatMs: tatOf(error.Item, this.opts.key) };
      throw error;
    }
  }

  private target(): { TableName: string; Key: Record<string, AttributeValue> } {
    return { TableName: this.opts.tableName, Key: { [this.opts.keyAttribute]: { S: this.opts.key } } };
  }

  private ttl(): AttributeValue {
    return n(Math.floor((this.opts.nowMs ?? Date.now)() / 1000) + DAY_SECONDS);
  }
}
