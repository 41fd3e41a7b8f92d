/**
 * The payment capture as plain Powertools does it: the baseline the payment consumer's DynamoDB
 * calls are compared with (the payment integration test and the benchmark both use it).
 * makeIdempotent over DynamoDBPersistenceLayer claims the key (PutItem); the order is read to
 * check the capture guard before charging (GetItem); the PAID transition is its own write
 * (UpdateItem); Powertools completes the record (UpdateItem). A crash between the last two does
 * the work again on the next delivery — the window the payment consumer's transaction closes.
 * SQS batches go through Powertools' BatchProcessor, with none of tenang's failure policy: a
 * failed record is a batch item failure and returns after the queue's visibility timeout.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { DynamoDbOrderStore } from '../examples/reference/domain/dynamodb-order-store';
import { noCrash } from '../lib/adapters/crash';
import { type JobEnvelope } from '../lib/core/envelope';
import { type PaymentCapturePayload, parseReferenceEnvelope } from '../examples/reference/domain/payloads';
import {
  captureGuard,
  capturePayment,
  explainFailedGuard,
  satisfiesGuard,
  type CaptureResult,
  type PaymentProvider,
  type StagedTransition,
} from '../examples/reference/domain/payment';
import type { Clock } from '../lib/core/ports';

/** What the baseline needs. */
export interface BaselinePaymentDeps {
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
    {
      persistenceStore: new DynamoDBPersistenceLayer({
        tableName: deps.idempotencyTable,
        awsSdkV3Client: deps.dynamo,
      }),
      config,
      keyPrefix: deps.keyPrefix ?? 'baseline',
    },
  );
  return (job, context) => {
    config.registerLambdaContext(context);
    return capture({ idempotencyKey: job.idempotencyKey, payload: job.payload }, job);
  };
}

/** An SQS handler over the baseline capture: Powertools' BatchProcessor and its defaults. */
export function createBaselinePaymentHandler(
  deps: BaselinePaymentDeps,
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  const capture = createBaselineCapture(deps);
  const processor = new BatchProcessor(EventType.SQS);
  return (event, context) =>
    processPartialResponse(
      event,
      (record: SQSRecord) => capture(parseReferenceEnvelope(record.body, 'payment.capture'), context),
      processor,
      { context },
    );
}
