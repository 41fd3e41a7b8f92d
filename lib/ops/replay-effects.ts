/**
 * Whether a dead-lettered job's effect already happened, for `dlq replay` (R5, X3), by one rule
 * for every job type: its Powertools idempotency record on tenang's idempotency table is
 * COMPLETED and not past its expiry. The job runner keeps that record for every idempotent job
 * type whose job module leaves idempotency to it (`idempotency: 'record'`, defineJob's default),
 * keyed on the job type's name and the envelope's idempotency key (lib/adapters/define-job.ts).
 *
 * A job type that keeps itself idempotent another way has no record there, so its jobs are
 * replayed and its consumer's own guard drops what already happened: `idempotency: 'self'` (a
 * dedup claim, a fenced write) or a persistence layer of its own (e.g. a record kept on the item
 * it guards). The CLI cannot read those guards itself: it knows an app by its declaration, not by
 * its job modules' code. For example all three job types of the reference app are such, and each
 * guard makes the replay of a job already done a no-op: the payment capture claims on its order,
 * whose guard (PENDING, same amount) refuses an order already PAID before anything is charged;
 * the notification claims its (order, template) dedup key, kept `done` for the DLQ's retention
 * after the send; the reservation's write is conditional on the SKU holding none for the order.
 */
import { createHash } from 'node:crypto';
import { GetItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { jobIdempotencyKeyPrefix } from '../adapters/define-job';
import { TABLE_KEYS } from '../config/tables';
import type { JobEnvelope } from '../core/envelope';
import type { EffectCheck } from '../core/replay';

/** The `id` of a Powertools idempotency record: `<prefix>#<base64 md5 of the key's JSON>`. */
export function idempotencyRecordId(prefix: string, key: string): string {
  return `${prefix}#${createHash('md5').update(JSON.stringify(key)).digest('base64')}`;
}

/**
 * The `id` of the record the job runner keeps for a job of `jobType` with `idempotencyKey`, as
 * BasePersistenceLayer.getHashedIdempotencyKey builds it with eventKeyJmesPath 'idempotencyKey'
 * and the default md5.
 */
export function jobIdempotencyRecordId(jobType: string, idempotencyKey: string): string {
  return idempotencyRecordId(jobIdempotencyKeyPrefix(jobType), idempotencyKey);
}

/** Tables the check reads. */
export interface EffectTables {
  /** tenang's idempotency table (IDEMPOTENCY_TABLE). */
  readonly idempotency: string;
}

/** Checks effects with consistent reads. */
export class DynamoDbEffectChecker {
  /** Reads through `dynamodb`; `now` judges record expiry (TTL deletes late). */
  public constructor(
    private readonly dynamodb: DynamoDBClient,
    private readonly tables: EffectTables,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Whether `job`'s effect happened: its idempotency record is COMPLETED. */
  public async check(job: JobEnvelope): Promise<EffectCheck> {
    const { Item: record } = await this.dynamodb.send(
      new GetItemCommand({
        TableName: this.tables.idempotency,
        Key: {
          [TABLE_KEYS.idempotency.partitionKey]: { S: jobIdempotencyRecordId(job.type, job.idempotencyKey) },
        },
        ConsistentRead: true,
      }),
    );
    return completed(record, this.epoch())
      ? { done: true, evidence: `idempotency record of ${job.type} ${job.idempotencyKey} is COMPLETED` }
      : { done: false };
  }

  private epoch(): number {
    return Math.floor(this.now().getTime() / 1000);
  }
}

/** Whether a Powertools idempotency record is COMPLETED and not past its expiry (TTL deletes late). */
function completed(record: Record<string, AttributeValue> | undefined, epochSeconds: number): boolean {
  const expiry = Number(record?.[TABLE_KEYS.idempotency.ttl]?.N ?? Infinity);
  return record?.status?.S === 'COMPLETED' && expiry >= epochSeconds;
}
