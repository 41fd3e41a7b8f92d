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
 * item (ReturnValuesOnConditionCheckFailure) to say who holds the lock. `writeWithoutLease`, the
 * one-transaction path for a critical section that is a single conditional write, is one
 * TransactWriteItems of the lock item and the protected item.
 */
import {
  ConditionalCheckFailedException,
  GetItemCommand,
  ScanCommand,
  TransactionCanceledException,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
  type Update,
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

/** What `DynamoDbLockStore.writeWithoutLease` came to. */
export type UnleasedWriteResult =
  /** Both items written: the protected one with `fence`, the lock's fence advanced to it. */
  | { readonly kind: 'written'; readonly fence: number }
  /** A live lease holds the resource; nothing written. */
  | { readonly kind: 'busy'; readonly holder: LockHolder }
  /** The protected write's condition failed; `item` is that item as it was (undefined: none). */
  | {
      readonly kind: 'refused';
      readonly item: Item | undefined;
      readonly cause: TransactionCanceledException;
    }
  /** Cancelled for a reason this store cannot read as one of the above: take the lease path. */
  | { readonly kind: 'undecided'; readonly reason: string };

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

  /**
   * A critical section that is one conditional write, done without a lease: ONE TransactWriteItems
   * of (1) the lock item, which takes no lease but advances its fence to `nowMs`, on condition
   * that no live lease is held and its fence is below `nowMs`, and (2) `write(nowMs)`, the
   * protected item's Update, which must store that fence and refuse a fence it has seen already
   * (`attribute_not_exists(fence) OR fence < :t`), as a lease holder's write does.
   *
   * Why it keeps the lease lock's guarantees: the transaction is atomic with the check that no
   * lease is live, so no holder is inside its critical section (an expired holder may still be
   * running: a zombie); every fence issued before is ≤ the lock's fence < `nowMs`, so once the
   * protected item holds `nowMs` the zombie's write is refused; and every later acquire issues
   * `lock fence + 1 > nowMs`, so later holders' writes are accepted. A zombie's expired lease
   * fields stay on the lock item (it is still listed as an orphan, and its owner may still
   * release it): the transaction takes no lease and clears none. A fence above the clock (a writer
   * whose clock ran ahead, or more acquires than milliseconds) fails the condition: `undecided`,
   * and the lease path, whose fences count on from the lock's, does the work.
   *
   * Cost: one round trip instead of the lease path's three (acquire, write, release). DynamoDB
   * bills a transactional write two units per item: 2 items × 2 WRU = 4 WRU for items under
   * 1 KB, against the lease path's 3 (one per UpdateItem); a cancelled transaction is billed too.
   * IAM authorizes the transaction item by item (dynamodb:UpdateItem on each table), so it needs
   * no grant beyond the lease path's.
   *
   * A resend after a lost answer: the SDK fills ClientRequestToken once, before its retries, and
   * DynamoDB answers a repeated token (within 10 minutes) as the first call without writing again.
   * moto ignores the token: its resend is cancelled on the protected item's own condition, which
   * the caller reads from the item (a reservation already there is a duplicate).
   */
  public async writeWithoutLease(request: {
    readonly resource: string;
    readonly nowMs: number;
    readonly write: (fence: number) => Update;
  }): Promise<UnleasedWriteResult> {
    const fence = request.nowMs;
    try {
      await this.client.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            {
              Update: {
                TableName: this.tableName,
                Key: { [A.resource]: s(request.resource) },
                UpdateExpression: 'SET #fence = :now',
                ConditionExpression:
                  '(attribute_not_exists(#owner) OR #expiresAt < :now) AND ' +
                  '(attribute_not_exists(#fence) OR #fence < :now)',
                ExpressionAttributeNames: { '#owner': A.owner, '#fence': A.fence, '#expiresAt': A.expiresAt },
                ExpressionAttributeValues: { ':now': n(fence) },
                ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
              },
            },
            { Update: { ...request.write(fence), ReturnValuesOnConditionCheckFailure: 'ALL_OLD' } },
          ],
        }),
      );
      return { kind: 'written', fence };
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      // One reason per item, in order; 'None' where the item's condition held (or was not reached).
      const [lock, write] = error.CancellationReasons ?? [];
      const holder = lock?.Code === 'ConditionalCheckFailed' ? holderOf(lock.Item) : undefined;
      if (holder !== undefined && holder.expiresAtMs >= request.nowMs) return { kind: 'busy', holder };
      // What the protected item says (a duplicate, a missing item) holds whatever the lock said.
      if (write?.Code === 'ConditionalCheckFailed')
        return { kind: 'refused', item: write.Item, cause: error };
      const codes = (error.CancellationReasons ?? []).map((r) => r.Code ?? 'None').join(', ');
      const lockFence = num(lock?.Item, A.fence);
      return {
        kind: 'undecided',
        reason:
          lock?.Code === 'ConditionalCheckFailed' && lockFence !== undefined && lockFence >= fence
            ? `the lock's fence ${lockFence} is not below the clock's ${fence}`
            : `transaction cancelled (${codes})`,
      };
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
