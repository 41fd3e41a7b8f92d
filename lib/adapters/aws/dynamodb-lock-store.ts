/**
 * LockStore over the locks table (L1–L4): one item per resource,
 * `{ resource, fence, owner?, acquiredAt?, expiresAt?, expiresAtEpoch? }`.
 *
 * The item outlives its leases: a release clears only the lease fields, so the fence counter
 * keeps increasing. A lease that is never released (its holder crashed) keeps its
 * `expiresAtEpoch`, and TTL may sweep the whole item later; the fence of a new item therefore
 * starts from the clock (epoch ms), above every fence the swept item could have issued — a
 * counter restarting at 1 would make the protected resource refuse every write after a sweep.
 *
 * Every operation is one conditional UpdateItem; a failed condition comes back with the old
 * item (ReturnValuesOnConditionCheckFailure) to say who holds the lock.
 */
import {
  ConditionalCheckFailedException,
  GetItemCommand,
  ScanCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { TABLE_KEYS } from '../../config/tables';
import type {
  AcquireResult,
  LockHolder,
  LockRecord,
  LockReleaseResult,
  LockStore,
} from '../../core/lease-lock';

type Item = Record<string, AttributeValue>;

/** Attribute names of a lock item. */
const A = {
  resource: TABLE_KEYS.locks.partitionKey,
  ttl: TABLE_KEYS.locks.ttl,
  owner: 'owner',
  fence: 'fence',
  acquiredAt: 'acquiredAt',
  expiresAt: 'expiresAt',
} as const;

const NAMES = {
  '#owner': A.owner,
  '#fence': A.fence,
  '#acquiredAt': A.acquiredAt,
  '#expiresAt': A.expiresAt,
  '#ttl': A.ttl,
};

const n = (value: number): AttributeValue => ({ N: String(value) });
const s = (value: string): AttributeValue => ({ S: value });

function num(item: Item | undefined, name: string): number | undefined {
  const value = item?.[name]?.N;
  return value === undefined ? undefined : Number(value);
}

function holderOf(item: Item | undefined): LockHolder | undefined {
  const ownerToken = item?.[A.owner]?.S;
  const fence = num(item, A.fence);
  const expiresAtMs = num(item, A.expiresAt);
  if (ownerToken === undefined || fence === undefined || expiresAtMs === undefined) return undefined;
  return { ownerToken, fence, expiresAtMs, acquiredAtMs: num(item, A.acquiredAt) ?? expiresAtMs };
}

function recordOf(item: Item): LockRecord {
  return { resource: item[A.resource]?.S ?? '', fence: num(item, A.fence) ?? 0, holder: holderOf(item) };
}

/** The lease-lock records of one locks table. */
export class DynamoDbLockStore implements LockStore {
  public constructor(
    private readonly client: DynamoDBClient,
    private readonly tableName: string,
  ) {}

  public async tryAcquire(request: {
    resource: string;
    ownerToken: string;
    nowMs: number;
    expiresAtMs: number;
  }): Promise<AcquireResult> {
    try {
      const { Attributes } = await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { [A.resource]: s(request.resource) },
          UpdateExpression:
            'SET #owner = :owner, #acquiredAt = :now, #expiresAt = :exp, #ttl = :ttl, ' +
            '#fence = if_not_exists(#fence, :now) + :one',
          ConditionExpression: 'attribute_not_exists(#owner) OR #expiresAt < :now',
          ExpressionAttributeNames: NAMES,
          ExpressionAttributeValues: {
            ':owner': s(request.ownerToken),
            ':now': n(request.nowMs),
            ':exp': n(request.expiresAtMs),
            ':ttl': n(Math.ceil(request.expiresAtMs / 1000)),
            ':one': n(1),
          },
          ReturnValues: 'ALL_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      const fence = num(Attributes, A.fence);
      if (fence === undefined) throw new Error(`lock ${request.resource}: UpdateItem returned no fence`);
      return { acquired: true, fence };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) {
        const holder = holderOf(error.Item);
        // The lease is held by this very request's token (new for every acquire): an earlier
        // attempt of it was applied, its answer lost, and the SDK resent it. It is ours.
        if (holder?.ownerToken === request.ownerToken) return { acquired: true, fence: holder.fence };
        return { acquired: false, holder };
      }
      throw error;
    }
  }

  public async extend(request: {
    resource: string;
    ownerToken: string;
    fence: number;
    nowMs: number;
    expiresAtMs: number;
  }): Promise<boolean> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { [A.resource]: s(request.resource) },
          UpdateExpression: 'SET #expiresAt = :exp, #ttl = :ttl',
          ConditionExpression: '#owner = :owner AND #fence = :fence AND #expiresAt >= :now',
          ExpressionAttributeNames: {
            '#owner': A.owner,
            '#fence': A.fence,
            '#expiresAt': A.expiresAt,
            '#ttl': A.ttl,
          },
          ExpressionAttributeValues: {
            ':owner': s(request.ownerToken),
            ':fence': n(request.fence),
            ':now': n(request.nowMs),
            ':exp': n(request.expiresAtMs),
            ':ttl': n(Math.ceil(request.expiresAtMs / 1000)),
          },
        }),
      );
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  public release(request: { resource: string; ownerToken: string }): Promise<LockReleaseResult> {
    return this.clearLease(request.resource, '#owner = :owner', { ':owner': s(request.ownerToken) });
  }

  public releaseExpired(request: {
    resource: string;
    ownerToken: string;
    nowMs: number;
  }): Promise<LockReleaseResult> {
    return this.clearLease(request.resource, '#owner = :owner AND #expiresAt < :now', {
      ':owner': s(request.ownerToken),
      ':now': n(request.nowMs),
    });
  }

  public async get(resource: string): Promise<LockRecord | undefined> {
    const { Item } = await this.client.send(
      new GetItemCommand({
        TableName: this.tableName,
        Key: { [A.resource]: s(resource) },
        ConsistentRead: true,
      }),
    );
    return Item === undefined ? undefined : recordOf(Item);
  }

  public async listHeld(): Promise<readonly LockRecord[]> {
    const records: LockRecord[] = [];
    let startKey: Item | undefined;
    do {
      const page = await this.client.send(
        new ScanCommand({
          TableName: this.tableName,
          FilterExpression: 'attribute_exists(#owner)',
          ExpressionAttributeNames: { '#owner': A.owner },
          ConsistentRead: true,
          ExclusiveStartKey: startKey,
        }),
      );
      records.push(...(page.Items ?? []).map(recordOf));
      startKey = page.LastEvaluatedKey;
    } while (startKey !== undefined);
    return records;
  }

  /** Clears the lease fields under `condition`; the fence stays. */
  private async clearLease(
    resource: string,
    condition: string,
    values: Record<string, AttributeValue>,
  ): Promise<LockReleaseResult> {
    try {
      await this.client.send(
        new UpdateItemCommand({
          TableName: this.tableName,
          Key: { [A.resource]: s(resource) },
          UpdateExpression: 'REMOVE #owner, #acquiredAt, #expiresAt, #ttl',
          ConditionExpression: condition,
          ExpressionAttributeNames: {
            '#owner': A.owner,
            '#acquiredAt': A.acquiredAt,
            '#expiresAt': A.expiresAt,
            '#ttl': A.ttl,
          },
          ExpressionAttributeValues: values,
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return { released: true };
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException)
        return { released: false, holder: holderOf(error.Item) };
      throw error;
    }
  }
}
