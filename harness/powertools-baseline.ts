/**
 * The reference app's job types as plain Powertools does them: the baselines and by-the-book
 * peers tenang's consumers are compared with (the payment integration test, the calls bench,
 * and, through the handler modules of harness/peers/, the cold-start and handler-time benches).
 * Each is written as the Powertools documentation shows it: Powertools' batch processor for the
 * queue's kind, makeIdempotent over a DynamoDBPersistenceLayer with registerLambdaContext,
 * Logger.addContext, Metrics published after the batch, a zod schema for the message, the
 * degrade flag through Powertools parameters where the job may be shed; and none of tenang's
 * failure policy: a failed record is a batch item failure and returns after the queue's
 * visibility timeout. The business work is the reference app's own (its stores, providers and
 * payload schemas), so a peer's outcome is the consumer's: the order PAID once, the notification
 * sent once, the stock reserved once.
 *
 * payment.capture: makeIdempotent claims the key (PutItem); the order is read to check the
 * capture guard before charging (GetItem); the PAID transition is its own write (UpdateItem);
 * Powertools completes the record (UpdateItem). A crash between the last two does the work again
 * on the next delivery — the window the payment consumer's single completion write closes.
 */
import {
  ConditionalCheckFailedException,
  UpdateItemCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import {
  BatchProcessor,
  EventType,
  processPartialResponse,
  SqsFifoPartialProcessorAsync,
} from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
// By the book: the Powertools documentation parses with classic zod (tenang's bundles use zod/mini).
// eslint-disable-next-line no-restricted-imports
import { z } from 'zod';
import { DynamoDbOrderStore } from '../examples/reference/domain/dynamodb-order-store';
import { notificationKey, type MessagingProvider } from '../examples/reference/domain/notification';
import { noCrash } from '../lib/adapters/crash';
import { type JobEnvelope } from '../lib/core/envelope';
import {
  PAYLOADS,
  type InventoryReservePayload,
  type JobTypeName,
  type NotificationSendPayload,
  type PaymentCapturePayload,
  type PayloadOf,
} from '../examples/reference/domain/payloads';
import {
  captureGuard,
  capturePayment,
  explainFailedGuard,
  satisfiesGuard,
  type CaptureResult,
  type PaymentProvider,
  type StagedTransition,
} from '../examples/reference/domain/payment';
import { REFERENCE_TABLE_KEYS } from '../examples/reference/domain/tables';
import type { Clock } from '../lib/core/ports';

/** An SQS batch handler, as Lambda calls it. */
export type SqsBatchHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

/** What every by-the-book handler may log and count with. */
export interface ByTheBookTools {
  /** @default none: nothing logged (the calls bench and the tests) */
  readonly logger?: Logger;
  /** @default none: nothing counted */
  readonly metrics?: Metrics;
  /**
   * Reads the degrade flag (getParameter with a maxAge); a degraded stage fails the records of a
   * job that may be shed, so they return after the visibility timeout. @default never degraded
   */
  readonly isDegraded?: () => Promise<boolean>;
}

/** The metric a by-the-book handler adds per job done. */
export const BY_THE_BOOK_JOB_METRIC = 'JobDone';

/**
 * The message schema of a reference job type as a by-the-book consumer writes it: classic zod
 * around the app's own payload schema.
 */
function envelopeSchema<T extends JobTypeName>(type: T) {
  return z.object({
    type: z.literal(type),
    version: z.number().int().min(1),
    idempotencyKey: z.string().min(1).max(256),
    correlationId: z.string().min(1).max(128),
    payload: PAYLOADS[type],
    enqueuedAt: z.iso.datetime({ offset: true }),
  });
}

/** Parses a record's body into a job of `type` (a ZodError fails the record). */
function recordParser<T extends JobTypeName>(type: T): (record: SQSRecord) => JobEnvelope<PayloadOf<T>> {
  const schema = envelopeSchema(type);
  return (record) => schema.parse(JSON.parse(record.body)) as JobEnvelope<PayloadOf<T>>;
}

/**
 * An SQS handler as the Powertools documentation writes one: SqsFifoPartialProcessorAsync on a
 * FIFO queue (one record after another, a failed record failing only its message group),
 * BatchProcessor on a standard one (its records at the same time); Logger.addContext first,
 * Metrics published after the batch, the degrade flag read once per non-empty batch.
 */
function sqsBatchHandler(
  queue: 'fifo' | 'standard',
  tools: ByTheBookTools,
  work: (record: SQSRecord, context: Context) => Promise<unknown>,
): SqsBatchHandler {
  const { logger, metrics, isDegraded } = tools;
  const processor = queue === 'fifo' ? new SqsFifoPartialProcessorAsync() : new BatchProcessor(EventType.SQS);
  return async (event, context) => {
    logger?.addContext(context);
    try {
      const degraded = isDegraded !== undefined && event.Records.length > 0 && (await isDegraded());
      const record = async (r: SQSRecord): Promise<void> => {
        if (degraded) throw new Error('the stage is degraded: this job waits');
        await work(r, context);
        metrics?.addMetric(BY_THE_BOOK_JOB_METRIC, MetricUnit.Count, 1);
      };
      return processor instanceof SqsFifoPartialProcessorAsync
        ? await processPartialResponse(event, record, processor, { context, skipGroupOnError: true })
        : await processPartialResponse(event, record, processor, { context });
    } finally {
      metrics?.publishStoredMetrics();
    }
  };
}

/** What makeIdempotent is given, as the documentation wires it: a DynamoDB persistence layer. */
function idempotencyOptions(
  deps: { readonly dynamo: DynamoDBClient; readonly idempotencyTable: string; readonly keyPrefix?: string },
  config: IdempotencyConfig,
): { persistenceStore: DynamoDBPersistenceLayer; config: IdempotencyConfig; keyPrefix: string } {
  return {
    persistenceStore: new DynamoDBPersistenceLayer({
      tableName: deps.idempotencyTable,
      awsSdkV3Client: deps.dynamo,
    }),
    config,
    // Records apart from tenang's own, which are keyed on the job type's name.
    keyPrefix: deps.keyPrefix ?? 'baseline',
  };
}

/** What the payment baseline needs. */
export interface BaselinePaymentDeps extends ByTheBookTools {
  /** Every DynamoDB call goes through it: the idempotency record's and the order's. */
  readonly dynamo: DynamoDBClient;
  readonly ordersTable: string;
  readonly idempotencyTable: string;
  readonly provider: PaymentProvider;
  /** Prefix of the idempotency records' keys. @default 'baseline' */
  readonly keyPrefix?: string;
  /** @default () => new Date() */
  readonly clock?: Clock;
}

/** The idempotent capture of one job in the given Lambda context. */
export type BaselineCapture = (
  job: JobEnvelope<PaymentCapturePayload>,
  context: Context,
) => Promise<CaptureResult>;

/** The capture as plain Powertools guards it: hashed on the job's key, validated on its payload. */
export function createBaselineCapture(deps: BaselinePaymentDeps): BaselineCapture {
  const clock = deps.clock ?? ((): Date => new Date());
  const orders = new DynamoDbOrderStore(deps.dynamo, deps.ordersTable, clock);
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'idempotencyKey',
    payloadValidationJmesPath: 'payload',
    throwOnNoIdempotencyKey: true,
  });
  const capture = makeIdempotent(
    async (
      _request: { idempotencyKey: string; payload: PaymentCapturePayload },
      job: JobEnvelope<PaymentCapturePayload>,
    ): Promise<CaptureResult> => {
      const order = await orders.get(job.payload.orderId);
      const guard = captureGuard(job);
      if (order === undefined || !satisfiesGuard(guard, order)) throw explainFailedGuard(guard, order);
      let staged: StagedTransition | undefined;
      const result = await capturePayment(job, {
        provider: deps.provider,
        crash: noCrash,
        clock,
        stageTransition: (t) => {
          staged = t;
        },
      });
      if (staged !== undefined) {
        await orders.transition(staged.orderId, staged.from, staged.to, order.version, staged.changes);
      }
      return result;
    },
    idempotencyOptions(deps, config),
  );
  return (job, context) => {
    config.registerLambdaContext(context);
    return capture({ idempotencyKey: job.idempotencyKey, payload: job.payload }, job);
  };
}

/** The payment queue's handler over the baseline capture (a FIFO queue: its processor). */
export function createBaselinePaymentHandler(deps: BaselinePaymentDeps): SqsBatchHandler {
  const capture = createBaselineCapture(deps);
  const parse = recordParser('payment.capture');
  return sqsBatchHandler('fifo', deps, (record, context) => capture(parse(record), context));
}

/** What the notification baseline needs. */
export interface BaselineNotificationDeps extends ByTheBookTools {
  /** The idempotency record's calls go through it. */
  readonly dynamo: DynamoDBClient;
  readonly idempotencyTable: string;
  readonly provider: MessagingProvider;
  /** @default 'baseline' */
  readonly keyPrefix?: string;
}

/**
 * The notification queue's handler: makeIdempotent on the notification's business key (one per
 * order and template, the key the consumer dedups on and hands the provider), then the send.
 */
export function createBaselineNotificationHandler(deps: BaselineNotificationDeps): SqsBatchHandler {
  const config = new IdempotencyConfig({ eventKeyJmesPath: 'key', throwOnNoIdempotencyKey: true });
  const send = makeIdempotent(
    async (
      request: { key: string },
      job: JobEnvelope<NotificationSendPayload>,
    ): Promise<{ messageId: string }> =>
      deps.provider.send(
        {
          to: job.payload.recipient,
          template: job.payload.template,
          orderId: job.payload.orderId,
          orderVersion: job.payload.orderVersion,
        },
        { idempotencyKey: request.key, correlationId: job.correlationId },
      ),
    idempotencyOptions(deps, config),
  );
  const parse = recordParser('notification.send');
  return sqsBatchHandler('standard', deps, (record, context) => {
    const job = parse(record);
    config.registerLambdaContext(context);
    return send({ key: notificationKey(job.payload.orderId, job.payload.template) }, job);
  });
}

/** What the stock reservation baseline needs. */
export interface BaselineInventoryDeps extends ByTheBookTools {
  readonly dynamo: DynamoDBClient;
  readonly inventoryTable: string;
  readonly idempotencyTable: string;
  /** @default 'baseline' */
  readonly keyPrefix?: string;
  /** @default () => new Date() */
  readonly clock?: Clock;
}

/**
 * The reservation queue's handler: makeIdempotent on the job's key, then one conditional
 * UpdateItem of the SKU's item (the inventory table's layout, DynamoDbInventoryStore's): stock
 * decremented and the order's reservation recorded, refused when the order holds one already or
 * the stock is short. Powertools has no lease lock; the conditional write alone keeps the count.
 */
export function createBaselineInventoryHandler(deps: BaselineInventoryDeps): SqsBatchHandler {
  const clock = deps.clock ?? ((): Date => new Date());
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'idempotencyKey',
    payloadValidationJmesPath: 'payload',
    throwOnNoIdempotencyKey: true,
  });
  const reserve = makeIdempotent(
    async (request: {
      idempotencyKey: string;
      payload: InventoryReservePayload;
    }): Promise<{ reserved: boolean }> => {
      const { orderId, sku, quantity } = request.payload;
      const at = clock().toISOString();
      try {
        await deps.dynamo.send(
          new UpdateItemCommand({
            TableName: deps.inventoryTable,
            Key: { [REFERENCE_TABLE_KEYS.inventory.partitionKey]: { S: sku } },
            UpdateExpression:
              'SET #available = #available - :q, #reservations.#order = :reservation, #updatedAt = :at',
            ConditionExpression:
              'attribute_exists(#available) AND attribute_not_exists(#reservations.#order) AND #available >= :q',
            ExpressionAttributeNames: {
              '#available': 'available',
              '#reservations': 'reservations',
              '#order': orderId,
              '#updatedAt': 'updatedAt',
            },
            ExpressionAttributeValues: {
              ':q': { N: String(quantity) },
              ':at': { S: at },
              ':reservation': { M: { quantity: { N: String(quantity) }, reservedAt: { S: at } } },
            },
            ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
          }),
        );
        return { reserved: true };
      } catch (error) {
        // The order's reservation is there already: done before, nothing to do.
        if (error instanceof ConditionalCheckFailedException && error.Item?.reservations?.M?.[orderId])
          return { reserved: false };
        throw error;
      }
    },
    idempotencyOptions(deps, config),
  );
  const parse = recordParser('inventory.reserve');
  return sqsBatchHandler('standard', deps, (record, context) => {
    const job = parse(record);
    config.registerLambdaContext(context);
    return reserve({ idempotencyKey: job.idempotencyKey, payload: job.payload });
  });
}

/** A variable a peer's module scope needs, or an error naming it. */
export function peerEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is not set`);
  return value;
}
