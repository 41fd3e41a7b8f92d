/** DedupStore over a DynamoDB table with a TTL attribute (conditional put; Q1). */
import {
  ConditionalCheckFailedException,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { BatchWriteCommand, DeleteCommand, DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ClaimResult, Clock, DedupStore } from '../../core/ports';
import { TABLE_KEYS } from '../../config/tables';

/** The attribute holding a record's status, 'in-flight' or 'done' (a reserved word in expressions). */
const STATUS = 'status';
/** The attribute naming who holds an in-flight claim, when the claim named an owner. */
const OWNER = 'owner';
/** BatchWriteItem's most requests per call. */
const BATCH_WRITE_MAX = 25;
/** Rounds of BatchWriteItem for the items DynamoDB left unprocessed, before the rest fail. */
const UNPROCESSED_ROUNDS = 3;
/** The wait before the first retry of unprocessed items, doubled for each further one. */
const UNPROCESSED_BACKOFF_MS = 50;

interface PendingConfirm {
  readonly item: Record<string, unknown>;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Dedup records: `{ dedupKey, status, expiration }`; an expired record counts as absent (TTL
 * deletes late).
 */
export class DynamoDbDedupStore implements DedupStore {
  private readonly doc: DynamoDBDocumentClient;
  private confirms: PendingConfirm[] = [];
  private confirming = false;

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

  /**
   * Makes the claim a 'done' record (an unconditional put). Confirms made while another is being
   * written wait for it and then go together in one BatchWriteItem (up to 25), so a batch's
   * records, run at once, confirm in a few requests rather than one each; each caller's promise
   * settles with its own item, and items DynamoDB leaves unprocessed are written again.
   */
  public confirm(key: string, ttlSeconds: number): Promise<void> {
    const { partitionKey, ttl } = TABLE_KEYS.dedup;
    const item = { [partitionKey]: key, [STATUS]: 'done', [ttl]: this.nowEpoch() + ttlSeconds };
    return new Promise((resolve, reject) => {
      this.confirms.push({ item, resolve, reject });
      if (!this.confirming) void this.writeConfirms();
    });
  }

  /** Writes the waiting confirms, a batch at a time, until none waits. */
  private async writeConfirms(): Promise<void> {
    this.confirming = true;
    try {
      while (this.confirms.length > 0) {
        const batch = this.confirms.splice(0, BATCH_WRITE_MAX);
        try {
          if (batch.length === 1) {
            await this.doc.send(new PutCommand({ TableName: this.tableName, Item: batch[0]?.item }));
            batch[0]?.resolve();
          } else {
            await this.batchPut(batch);
          }
        } catch (error) {
          for (const c of batch) c.reject(error);
        }
      }
    } finally {
      this.confirming = false;
    }
  }

  /**
   * BatchWriteItem of `batch`'s items (one per key: a request may not name a key twice), then of
   * what it left unprocessed after a short backoff; settles each caller.
   */
  private async batchPut(batch: readonly PendingConfirm[]): Promise<void> {
    const { partitionKey } = TABLE_KEYS.dedup;
    const byKey = new Map<unknown, PendingConfirm[]>();
    for (const c of batch) byKey.set(c.item[partitionKey], [...(byKey.get(c.item[partitionKey]) ?? []), c]);
    let left = [...byKey.keys()];
    const itemOf = (key: unknown): Record<string, unknown> => byKey.get(key)?.at(-1)?.item ?? {};
    for (let round = 0; round < UNPROCESSED_ROUNDS && left.length > 0; round += 1) {
      if (round > 0) await sleep(UNPROCESSED_BACKOFF_MS * 2 ** (round - 1));
      const { UnprocessedItems } = await this.doc.send(
        new BatchWriteCommand({
          RequestItems: { [this.tableName]: left.map((key) => ({ PutRequest: { Item: itemOf(key) } })) },
        }),
      );
      const unprocessed = new Set(
        (UnprocessedItems?.[this.tableName] ?? []).map((r) => r.PutRequest?.Item?.[partitionKey] as unknown),
      );
      for (const key of left) if (!unprocessed.has(key)) for (const c of byKey.get(key) ?? []) c.resolve();
      left = left.filter((key) => unprocessed.has(key));
    }
    const error = new Error(`dedup confirm: DynamoDB left ${left.length} item(s) unprocessed`);
    for (const key of left) for (const c of byKey.get(key) ?? []) c.reject(error);
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
