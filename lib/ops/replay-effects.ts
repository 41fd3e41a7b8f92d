/**
 * Whether a dead-lettered job's effect already happened, read from where each consumer records
 * it: payment.capture → its Powertools idempotency record (COMPLETED; on its order, where the
 * payment consumer keeps it, or on the idempotency table, where it kept it before) or the order's state;
 * notification.send → its dedup record (`done`); inventory.reserve → the reservation on the SKU.
 */
import { createHash } from 'node:crypto';
import { GetItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GUARDED_ITEM_RECORD_ATTR } from '../adapters/aws/transactional-persistence';
import { TABLE_KEYS } from '../config/tables';
import type { JobEnvelope } from '../core/envelope';
import { notificationKey } from '../core/notification';
import { paymentCaptureKey } from '../core/payment';
import type { EffectCheck } from '../core/replay';

/**
 * The payment capture's Powertools key prefix: the job runner keys records on the job type's name
 * (lib/adapters/define-job.ts jobIdempotencyKeyPrefix), not the function name, so records survive a redeploy.
 */
export const PAYMENT_IDEMPOTENCY_KEY_PREFIX = 'payment.capture';

/** States that prove a capture happened (PENDING → PAID, and what only follows it). */
const PAID_STATES: readonly string[] = ['PAID', 'RESERVED'];

/**
 * The `id` of the Powertools idempotency record of a payment: `<prefix>#<base64 md5 of the JSON
 * of the key>`, as BasePersistenceLayer.getHashedIdempotencyKey builds it with
 * eventKeyJmesPath 'idempotencyKey' and the default md5.
 */
export function paymentIdempotencyRecordId(paymentId: string): string {
  return idempotencyRecordId(PAYMENT_IDEMPOTENCY_KEY_PREFIX, paymentCaptureKey(paymentId));
}

/** The `id` of a Powertools idempotency record: `<prefix>#<base64 md5 of the key's JSON>`. */
export function idempotencyRecordId(prefix: string, key: string): string {
  return `${prefix}#${createHash('md5').update(JSON.stringify(key)).digest('base64')}`;
}

/** Tables the checks read. */
export interface EffectTables {
  readonly orders: string;
  readonly idempotency: string;
  readonly dedup: string;
  readonly inventory: string;
}

/** Checks effects with consistent reads. */
export class DynamoDbEffectChecker {
  /** Reads through `dynamodb`; `now` judges record expiry (TTL deletes late). */
  public constructor(
    private readonly dynamodb: DynamoDBClient,
    private readonly tables: EffectTables,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * Whether `job`'s effect happened: the reference job types by their own records; any other
   * (idempotent) job type by its Powertools idempotency record, which defineJob's runner keys on
   * the job type's name and the envelope's idempotency key.
   */
  public async check(job: JobEnvelope<string>): Promise<EffectCheck> {
    switch (job.type) {
      case 'payment.capture':
        return this.payment(job as JobEnvelope<'payment.capture'>);
      case 'notification.send':
        return this.notification(job as JobEnvelope<'notification.send'>);
      case 'inventory.reserve':
        return this.inventory(job as JobEnvelope<'inventory.reserve'>);
      default:
        return this.idempotencyRecord(job.type, job.idempotencyKey);
    }
  }

  private async idempotencyRecord(jobType: string, idempotencyKey: string): Promise<EffectCheck> {
    return (await this.completedRecord(idempotencyRecordId(jobType, idempotencyKey)))
      ? { done: true, evidence: `idempotency record of ${jobType} ${idempotencyKey} is COMPLETED` }
      : { done: false };
  }

  /** Whether the Powertools idempotency record `id` is COMPLETED and not past its expiry (TTL deletes late). */
  private async completedRecord(id: string): Promise<boolean> {
    const record = await this.get(this.tables.idempotency, TABLE_KEYS.idempotency.partitionKey, id);
    const expiry = Number(record?.[TABLE_KEYS.idempotency.ttl]?.N ?? Infinity);
    return record?.status?.S === 'COMPLETED' && expiry >= this.epoch();
  }

  private async get(
    table: string,
    key: string,
    value: string,
  ): Promise<Record<string, AttributeValue> | undefined> {
    const { Item } = await this.dynamodb.send(
      new GetItemCommand({ TableName: table, Key: { [key]: { S: value } }, ConsistentRead: true }),
    );
    return Item;
  }

  private epoch(): number {
    return Math.floor(this.now().getTime() / 1000);
  }

  private async payment(job: JobEnvelope<'payment.capture'>): Promise<EffectCheck> {
    if (await this.completedRecord(paymentIdempotencyRecordId(job.payload.paymentId))) {
      return {
        done: true,
        evidence: `idempotency record ${paymentCaptureKey(job.payload.paymentId)} is COMPLETED`,
      };
    }
    const order = await this.get(this.tables.orders, TABLE_KEYS.orders.partitionKey, job.payload.orderId);
    const onOrder = order?.[GUARDED_ITEM_RECORD_ATTR]?.M;
    if (
      onOrder?.id?.S === paymentIdempotencyRecordId(job.payload.paymentId) &&
      onOrder.status?.S === 'COMPLETED' &&
      Number(onOrder.expiration?.N ?? Infinity) >= this.epoch()
    ) {
      return {
        done: true,
        evidence: `idempotency record ${paymentCaptureKey(job.payload.paymentId)} on order ${job.payload.orderId} is COMPLETED`,
      };
    }
    const state = order?.state?.S;
    if (state !== undefined && PAID_STATES.includes(state)) {
      return { done: true, evidence: `order ${job.payload.orderId} is already ${state}` };
    }
    return { done: false };
  }

  private async notification(job: JobEnvelope<'notification.send'>): Promise<EffectCheck> {
    const key = notificationKey(job.payload.orderId, job.payload.template);
    const record = await this.get(this.tables.dedup, TABLE_KEYS.dedup.partitionKey, key);
    const expiry = Number(record?.[TABLE_KEYS.dedup.ttl]?.N ?? Infinity);
    // A record without status predates statuses and means done (DynamoDbDedupStore).
    if (record !== undefined && (record.status?.S ?? 'done') === 'done' && expiry >= this.epoch()) {
      return { done: true, evidence: `dedup record ${key} is done` };
    }
    return { done: false };
  }

  private async inventory(job: JobEnvelope<'inventory.reserve'>): Promise<EffectCheck> {
    const item = await this.get(this.tables.inventory, TABLE_KEYS.inventory.partitionKey, job.payload.sku);
    if (item?.reservations?.M?.[job.payload.orderId] !== undefined) {
      return {
        done: true,
        evidence: `SKU ${job.payload.sku} holds a reservation for order ${job.payload.orderId}`,
      };
    }
    return { done: false };
  }
}
