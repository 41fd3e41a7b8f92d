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

/** Options of DynamoDbDedupStore. */
export interface DynamoDbDedupStoreOptions {
  /**
   * How long a confirm may wait for this store's other open claims (taken and not yet confirmed
   * or given back) to be confirmed too, so that a batch's records, run at once, confirm in one
   * BatchWriteItem when the last of them is done. The batch ends no later for it: the last
   * confirm goes as soon as no claim is open. For callers whose claims are the records of one
   * batch; sequential callers (a claim, its work, its confirm, then the next) should not use it.
   * @default 0 (a confirm goes at once, or with those made while one is being written)
   */
  readonly gatherConfirmsMs?: number;
}

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
  /** Claims asked for or held, not yet confirmed or given back (gatherConfirmsMs only). */
  private openClaims = 0;
  private gatherTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly gatherConfirmsMs: number;

  public constructor(
    client: DynamoDBClient,
    private readonly tableName: string,
    private readonly clock: Clock = () => new Date(),
    opts: DynamoDbDedupStoreOptions = {},
  ) {
    this.doc = DynamoDBDocumentClient.from(client);
    const gather = opts.gatherConfirmsMs ?? 0;
    if (!(gather >= 0) || !Number.isFinite(gather)) {
      throw new RangeError(`gatherConfirmsMs must be a non-negative number, got ${gather}`);
    }
    this.gatherConfirmsMs = gather;
  }

  /**
   * One conditional put; when the key is held, the failed condition returns the record
   * (ReturnValuesOnConditionCheckFailure), so telling 'done' from 'in-flight' costs no read.
   */
  public async claim(key: string, ttlSeconds: number, owner?: string): Promise<ClaimResult> {
    if (this.gatherConfirmsMs === 0) return this.putClaim(key, ttlSeconds, owner);
    // Open from the request on, so a confirm made meanwhile waits for this claim's outcome.
    this.openClaims += 1;
    let held = false;
    try {
      const result = await this.putClaim(key, ttlSeconds, owner);
      held = result === 'claimed';
      return result;
    } finally {
      if (!held) this.closeClaim();
    }
  }

  private async putClaim(key: string, ttlSeconds: number, owner?: string): Promise<ClaimResult> {
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
   * records, run at once, confirm in a few requests rather than one each; with gatherConfirmsMs
   * they wait instead for the store's open claims and go in one request when the last is done.
   * Each caller's promise settles with its own item, and items DynamoDB leaves unprocessed are
   * written again.
   */
  public confirm(key: string, ttlSeconds: number): Promise<void> {
    const { partitionKey, ttl } = TABLE_KEYS.dedup;
    const item = { [partitionKey]: key, [STATUS]: 'done', [ttl]: this.nowEpoch() + ttlSeconds };
    return new Promise((resolve, reject) => {
      this.confirms.push({ item, resolve, reject });
      if (this.gatherConfirmsMs === 0) {
        if (!this.confirming) void this.writeConfirms();
        return;
      }
      this.closeClaim();
      if (this.openClaims > 0 && this.gatherTimer === undefined) {
        this.gatherTimer = setTimeout(() => this.writeGathered(), this.gatherConfirmsMs);
      }
    });
  }

  /** A claim is confirmed or given back; when none is left open, the gathered confirms go. */
  private closeClaim(): void {
    this.openClaims = Math.max(0, this.openClaims - 1);
    if (this.openClaims === 0 && this.confirms.length > 0) this.writeGathered();
  }

  /** Writes every gathered confirm now (25 to a request), beside any request still in flight. */
  private writeGathered(): void {
    clearTimeout(this.gatherTimer);
    this.gatherTimer = undefined;
    const gathered = this.confirms;
    this.confirms = [];
    for (let i = 0; i < gathered.length; i += BATCH_WRITE_MAX) {
      void this.writeBatch(gathered.slice(i, i + BATCH_WRITE_MAX));
    }
  }

  /** Writes the waiting confirms, a batch at a time, until none waits. */
  private async writeConfirms(): Promise<void> {
    this.confirming = true;
    try {
      while (this.confirms.length > 0) await this.writeBatch(this.confirms.splice(0, BATCH_WRITE_MAX));
    } finally {
      this.confirming = false;
    }
  }

  /** One PutItem for one confirm, a BatchWriteItem for more; settles each caller. */
  private async writeBatch(batch: readonly PendingConfirm[]): Promise<void> {
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
    if (this.gatherConfirmsMs > 0) this.closeClaim();
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
