/**
 * The payment consumer against moto (DynamoDB, SQS FIFO) and the fake payment provider (real
 * HTTP): duplicates, a real crash between the charge and the completion, permanent errors to the
 * DLQ, the order's guard checked in the claim (no provider call when it fails), FIFO group
 * isolation and the DynamoDB calls each job costs. The idempotency record lives on the order
 * (GUARDED_ITEM_RECORD_ATTR): claim, completion and release are UpdateItems of the order.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { CreateTableCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type ChangeMessageVisibilityCommandInput,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { paymentCapture } from '../../examples/reference/jobs/payment-capture';
import { DLQ_ATTRIBUTE } from '../../lib/adapters/aws/sqs-job-runner';
import { DynamoDbOrderStore } from '../../examples/reference/domain/dynamodb-order-store';
import {
  GUARDED_ITEM_RECORD_ATTR,
  TransactionalDynamoDBPersistenceLayer,
} from '../../lib/adapters/aws/transactional-persistence';
import { createJobHandler, jobIdempotencyKeyPrefix } from '../../lib/adapters/define-job';
import { HttpPaymentProvider } from '../../examples/reference/domain/payment-provider';
import { stageConfig } from '../../lib/adapters/lambda-env';
import { jobTypeByName, METRIC, TABLE_KEYS, type ResolvedJobType } from '../../lib/config';
import { REFERENCE_TABLE_KEYS } from '../../examples/reference/domain/tables';
import type { Random } from '../../lib/core/backoff';
import { makeEnvelope } from '../../lib/core/envelope';
import { type PaymentCapturePayload, parseReferenceEnvelope } from '../../examples/reference/domain/payloads';
import type { Order } from '../../examples/reference/domain/order';
import { paymentCaptureKey } from '../../examples/reference/domain/payment';
import { startFakeProvider, type FakeProvider } from '../../lib/local/fake-provider';
import { pollUntil } from '../../lib/local/poll';
import { createBaselineCapture } from '../../harness/powertools-baseline';
import { dynamoClient, sqsClient, uniqueName } from '../helpers/aws';
import { countSdkCalls, type SdkCallLog } from '../helpers/dynamodb-calls';
import { lambdaContext, receiveSqsEvent, receiveSqsEventOf, settleBatch } from '../helpers/sqs-events';

jest.setTimeout(60_000);

const STAGE = 'itest';
const ROOT = path.join(__dirname, '..', '..');
const OUTCOME_METRICS: readonly string[] = [
  METRIC.jobSucceeded,
  METRIC.duplicateIgnored,
  METRIC.jobRetried,
  METRIC.jobFailedPermanently,
  METRIC.jobBug,
  METRIC.jobDeferred,
];

const SERVICE_NAME = 'payment-consumer';
let dynamo: DynamoDBClient;
let doc: DynamoDBDocumentClient;
let sqs: SQSClient;
let provider: FakeProvider;
let jobType: ResolvedJobType;
let ordersTable: string;
let idempotencyTable: string;
/** This test's queues (fresh per test, so a failed test leaves nothing for the next). */
let queueUrl: string;
let dlqUrl: string;
const clients: DynamoDBClient[] = [];

async function createTable(name: string, key: string): Promise<void> {
  await dynamo.send(
    new CreateTableCommand({
      TableName: name,
      AttributeDefinitions: [{ AttributeName: key, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
}

async function createFifoQueue(name: string, attributes: Record<string, string> = {}): Promise<string> {
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${name}.fifo`,
      Attributes: { FifoQueue: 'true', VisibilityTimeout: '30', ...attributes },
    }),
  );
  if (QueueUrl === undefined) throw new Error(`queue ${name} was not created`);
  return QueueUrl;
}

beforeAll(async () => {
  dynamo = dynamoClient();
  doc = DynamoDBDocumentClient.from(dynamo);
  sqs = sqsClient();
  provider = await startFakeProvider({ kind: 'charges' });
  ordersTable = uniqueName('orders');
  idempotencyTable = uniqueName('idempotency');
  await createTable(ordersTable, REFERENCE_TABLE_KEYS.orders.partitionKey);
  await createTable(idempotencyTable, TABLE_KEYS.idempotency.partitionKey);
  jobType = jobTypeByName(stageConfig(STAGE, process.env.AWS_REGION), 'payment.capture');
});

afterAll(async () => {
  await provider?.close();
  for (const table of [ordersTable, idempotencyTable]) {
    if (table !== undefined)
      await dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
  }
  for (const client of clients) client.destroy();
  dynamo?.destroy();
  sqs?.destroy();
});

beforeEach(async () => {
  dlqUrl = await createFifoQueue(uniqueName('pay-dlq'));
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }),
  );
  queueUrl = await createFifoQueue(uniqueName('pay'), {
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: Attributes?.QueueArn,
      maxReceiveCount: jobType.maxReceiveCount,
    }),
  });
  provider.set({ failingKeys: [] });
});

afterEach(async () => {
  jest.restoreAllMocks();
  for (const url of [queueUrl, dlqUrl]) await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
});

/** The environment the deployed function gets (lib/infra/pipeline-stack.ts). */
function consumerEnv(queue: string, dlq: string): Record<string, string> {
  return {
    TENANG_STAGE: STAGE,
    ORDERS_TABLE: ordersTable,
    IDEMPOTENCY_TABLE: idempotencyTable,
    PAYMENT_PROVIDER_URL: provider.url,
    QUEUE_URL: queue,
    DLQ_URL: dlq,
  };
}

interface Consumer {
  readonly handler: ReturnType<typeof createJobHandler>;
  /** The DynamoDB commands the consumer sent. */
  readonly calls: SdkCallLog;
  /** Outcome metrics (JobSucceeded, DuplicateIgnored, …) in the order they were recorded. */
  readonly outcomes: () => string[];
  /** ChangeMessageVisibility requests the consumer sent. */
  readonly visibilityChanges: ChangeMessageVisibilityCommandInput[];
  readonly persistence: TransactionalDynamoDBPersistenceLayer;
  /** UpdateItem requests sent, resends included (only with loseAnswerOfUpdate). */
  readonly updateRequests: () => number;
}

/**
 * Makes DynamoDB's answer to the `n`-th UpdateItem request (from 0) of `client` get lost once:
 * the request is applied, then the SDK sees a TimeoutError inside its retry loop and resends it,
 * as after a real network timeout (the chaos suite's ddb-lost-response, aimed at one request).
 * Returns how many UpdateItem requests were sent, resends included.
 */
function loseAnswerOfUpdate(client: DynamoDBClient, n: number): () => number {
  let seen = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const request = context.commandName === 'UpdateItemCommand' ? seen++ : -1;
      const result = await next(args);
      if (request === n) {
        throw Object.assign(new Error('Connection timed out (lost by the test)'), {
          name: 'TimeoutError',
          $metadata: {},
        });
      }
      return result;
    },
    { step: 'finalizeRequest', priority: 'low', name: 'loseAnswerOfUpdate' },
  );
  return () => seen;
}

/**
 * Makes the `n`-th UpdateItem command (from 0) of `client` fail on every attempt with a throttle
 * that the SDK's retries cannot overcome: the job's outcome is unknown to the consumer.
 */
function throttleUpdate(client: DynamoDBClient, n: number): void {
  let seen = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'UpdateItemCommand' && seen++ === n) {
        throw Object.assign(new Error('Rate of requests exceeds the allowed throughput (the test)'), {
          name: 'ProvisionedThroughputExceededException',
          $fault: 'client',
          $metadata: { httpStatusCode: 400 },
        });
      }
      return next(args);
    },
    { step: 'initialize', name: 'throttleUpdate' },
  );
}

/** A consumer over its own clients, as one Lambda instance would have. */
function newConsumer(
  opts: { random?: Random; loseAnswerOfUpdate?: number; throttleUpdate?: number } = {},
): Consumer {
  const client = dynamoClient();
  clients.push(client);
  if (opts.throttleUpdate !== undefined) throttleUpdate(client, opts.throttleUpdate);
  const updateRequests =
    opts.loseAnswerOfUpdate === undefined
      ? () => Number.NaN
      : loseAnswerOfUpdate(client, opts.loseAnswerOfUpdate);
  const calls = countSdkCalls(client);
  const consumerSqs = sqsClient();
  const visibilityChanges: ChangeMessageVisibilityCommandInput[] = [];
  consumerSqs.middlewareStack.add(
    (next, context) => (args) => {
      if (context.commandName === 'ChangeMessageVisibilityCommand') {
        visibilityChanges.push(args.input as ChangeMessageVisibilityCommandInput);
      }
      return next(args);
    },
    { step: 'initialize', name: 'recordVisibilityChanges' },
  );
  const metrics = new Metrics({ namespace: 'tenang', serviceName: SERVICE_NAME });
  jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
  const addMetric = jest.spyOn(metrics, 'addMetric');
  // As the job's setup builds it: the record on the order.
  const persistence = new TransactionalDynamoDBPersistenceLayer({
    tableName: idempotencyTable,
    awsSdkV3Client: client,
    guardedItemRecordAttr: GUARDED_ITEM_RECORD_ATTR,
  });
  const handler = createJobHandler(paymentCapture, {
    jobType,
    queueUrl,
    dlqUrl,
    sqs: consumerSqs,
    dynamodb: client,
    state: {
      orders: new DynamoDbOrderStore(client, ordersTable),
      persistence,
      provider: new HttpPaymentProvider({ baseUrl: provider.url, timeoutMs: 2_000 }),
    },
    logger: new Logger({ serviceName: SERVICE_NAME, logLevel: 'SILENT' }),
    metrics,
    random: opts.random,
  });
  return {
    handler,
    calls,
    outcomes: () =>
      addMetric.mock.calls.map(([name]) => name).filter((name) => OUTCOME_METRICS.includes(name)),
    visibilityChanges,
    persistence,
    updateRequests,
  };
}

/** Creates a PENDING order of 12.50 EUR. */
async function seedOrder(orderId: string, overrides: Partial<Order> = {}): Promise<Order> {
  const now = new Date().toISOString();
  const order: Order = {
    orderId,
    state: 'PENDING',
    version: 0,
    customerEmail: 'ana@example.com',
    lines: [{ sku: 'sku-1', quantity: 1 }],
    amountMinor: 1250,
    currency: 'EUR',
    createdAt: now,
    updatedAt: now,
    ...overrides,
  };
  if (!(await new DynamoDbOrderStore(dynamo, ordersTable).create(order)))
    throw new Error(`${orderId} exists`);
  return order;
}

async function readOrder(orderId: string): Promise<Order | undefined> {
  return new DynamoDbOrderStore(dynamo, ordersTable).get(orderId);
}

function captureJob(
  orderId: string,
  paymentId: string,
  overrides: Partial<PaymentCapturePayload> = {},
): string {
  const payload = { orderId, paymentId, amountMinor: 1250, currency: 'EUR', ...overrides };
  return JSON.stringify(
    makeEnvelope('payment.capture', payload, {
      idempotencyKey: paymentCaptureKey(paymentId),
      correlationId: uniqueName('corr'),
      now: new Date(),
    }),
  );
}

/** Sends `body` to the payments queue in `group`; every send is a new message (a fresh dedup id). */
async function send(body: string, group: string): Promise<void> {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: body,
      MessageGroupId: group,
      MessageDeduplicationId: uniqueName('dedup'),
    }),
  );
}

/** Runs `handler` on `event` inside a Lambda-like context, then settles the batch as the ESM would. */
async function runBatch(c: Consumer, event: SQSEvent, remainingMs = 20_000): Promise<SQSBatchResponse> {
  const response = await c.handler(event, lambdaContext(remainingMs));
  await settleBatch(sqs, queueUrl, event, response);
  return response;
}

const ledgerFor = (paymentId: string): readonly { id: string }[] =>
  provider.ledger().filter((e) => e.idempotencyKey === paymentCaptureKey(paymentId));

/** Powertools' key of a payment's idempotency record: prefix#md5 of the key's JSON. */
function recordKey(paymentId: string): string {
  const hash = createHash('md5')
    .update(JSON.stringify(paymentCaptureKey(paymentId)))
    .digest('base64');
  return `${jobIdempotencyKeyPrefix(paymentCapture.name)}#${hash}`;
}

/** The item of an order as stored, its idempotency record included (the order store strips it). */
async function rawOrder(orderId: string): Promise<Record<string, unknown> | undefined> {
  const { Item } = await doc.send(
    new GetCommand({ TableName: ordersTable, Key: { orderId }, ConsistentRead: true }),
  );
  return Item;
}

/** The idempotency record of a payment, on its order (undefined: none, or another payment's). */
async function idempotencyRecord(
  orderId: string,
  paymentId: string,
): Promise<Record<string, unknown> | undefined> {
  const record = (await rawOrder(orderId))?.[GUARDED_ITEM_RECORD_ATTR] as Record<string, unknown> | undefined;
  return record?.id === recordKey(paymentId) ? record : undefined;
}

/** Nothing of the payment on the idempotency table: the consumer no longer writes it. */
async function expectNothingOnIdempotencyTable(paymentId: string): Promise<void> {
  const { Item } = await doc.send(
    new GetCommand({ TableName: idempotencyTable, Key: { id: recordKey(paymentId) }, ConsistentRead: true }),
  );
  expect(Item).toBeUndefined();
}

/** The payment was charged exactly once and the order is PAID with that charge, its record COMPLETED. */
async function expectCapturedOnce(orderId: string, paymentId: string): Promise<void> {
  const charges = ledgerFor(paymentId);
  expect(charges).toHaveLength(1);
  const order = await readOrder(orderId);
  expect(order).toMatchObject({ state: 'PAID', version: 1, chargeId: charges[0]?.id });
  // The order as read never shows the record.
  expect(order).not.toHaveProperty(GUARDED_ITEM_RECORD_ATTR);
  expect(await idempotencyRecord(orderId, paymentId)).toMatchObject({ status: 'COMPLETED' });
  await expectNothingOnIdempotencyTable(paymentId);
}

async function queueDepth(url: string): Promise<{ visible: string; inFlight: string }> {
  const { Attributes = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return {
    visible: Attributes.ApproximateNumberOfMessages ?? '?',
    inFlight: Attributes.ApproximateNumberOfMessagesNotVisible ?? '?',
  };
}

describe('Job: payment.capture handler (integration)', () => {
  describe('Duplicate delivery (D1, I1, I2, Q2)', () => {
    it('when the same job arrives twice in one batch, it charges once and the second is duplicate_ignored', async () => {
      // Prepare
      const orderId = uniqueName('order');
      const paymentId = uniqueName('pay');
      await seedOrder(orderId);
      const body = captureJob(orderId, paymentId);
      await send(body, orderId);
      await send(body, orderId);
      const event = await receiveSqsEventOf(sqs, queueUrl, 2);
      const c = newConsumer();

      // Act
      const response = await runBatch(c, event);

      // Assess
      expect(response.batchItemFailures).toEqual([]);
      expect(c.outcomes()).toEqual([METRIC.jobSucceeded, METRIC.duplicateIgnored]);
      const charges = ledgerFor(paymentId);
      expect(charges).toHaveLength(1);
      expect(await readOrder(orderId)).toMatchObject({
        state: 'PAID',
        version: 1,
        paymentId,
        chargeId: charges[0]?.id,
      });
    });

    it('when the same job arrives again in a later batch, it charges once, makes no provider call and is duplicate_ignored', async () => {
      // Prepare
      const orderId = uniqueName('order');
      const paymentId = uniqueName('pay');
      await seedOrder(orderId);
      const body = captureJob(orderId, paymentId);
      await send(body, orderId);
      const first = newConsumer();
      await runBatch(first, await receiveSqsEventOf(sqs, queueUrl, 1));
      const requestsAfterFirst = provider.requestCount();
      await send(body, orderId);
      const second = newConsumer();

      // Act
      const response = await runBatch(second, await receiveSqsEventOf(sqs, queueUrl, 1));

      // Assess
      expect(response.batchItemFailures).toEqual([]);
      expect(first.outcomes()).toEqual([METRIC.jobSucceeded]);
      expect(second.outcomes()).toEqual([METRIC.duplicateIgnored]);
      expect(provider.requestCount()).toBe(requestsAfterFirst);
      expect(ledgerFor(paymentId)).toHaveLength(1);
      expect(await readOrder(orderId)).toMatchObject({ state: 'PAID', version: 1 });
    });

    it('when the idempotency record is gone (expired) and the order is PAID, the state guard ignores the job without a provider call', async () => {
      // Prepare
      const orderId = uniqueName('order');
      const paymentId = uniqueName('pay');
      await seedOrder(orderId);
      const body = captureJob(orderId, paymentId);
      await send(body, orderId);
      await runBatch(newConsumer(), await receiveSqsEventOf(sqs, queueUrl, 1));
      const record = await idempotencyRecord(orderId, paymentId);
      expect(record).toMatchObject({ status: 'COMPLETED' });
      await doc.send(
        new UpdateCommand({
          TableName: ordersTable,
          Key: { orderId },
          UpdateExpression: 'REMOVE #idem',
          ExpressionAttributeNames: { '#idem': GUARDED_ITEM_RECORD_ATTR },
        }),
      );
      const requestsBefore = provider.requestCount();
      await send(body, orderId);
      const c = newConsumer();

      // Act
      const response = await runBatch(c, await receiveSqsEventOf(sqs, queueUrl, 1));

      // Assess
      expect(response.batchItemFailures).toEqual([]);
      expect(c.outcomes()).toEqual([METRIC.duplicateIgnored]);
      expect(provider.requestCount()).toBe(requestsBefore);
      expect(await readOrder(orderId)).toMatchObject({ state: 'PAID', version: 1 });
    });
  });

  describe('Crash between the charge and the completion (I4)', () => {
    it('when the consumer is SIGKILLed after the charge, the redelivery after the in-progress expiry charges nothing new and the order is PAID once', async () => {
      // Prepare
      const orderId = uniqueName('order');
      const paymentId = uniqueName('pay');
      await seedOrder(orderId);
      await send(captureJob(orderId, paymentId), orderId);
      // Short visibility: the message comes back soon after the crash, like after a Lambda timeout.
      const event = await receiveSqsEventOf(sqs, queueUrl, 1, { visibilityTimeout: 4 });
      const dir = mkdtempSync(path.join(tmpdir(), 'tenang-crash-'));
      const eventFile = path.join(dir, 'event.json');
      writeFileSync(eventFile, JSON.stringify(event));
      const requestsBefore = provider.requestCount();

      // Act 1: the real module, in its own process, killed right after the provider answered.
      const child = await runChild(eventFile, {
        ...consumerEnv(queueUrl, dlqUrl),
        TENANG_CRASH_POINTS: 'after-side-effect',
        POWERTOOLS_LOG_LEVEL: 'SILENT',
        POWERTOOLS_METRICS_DISABLED: 'true',
      });
      rmSync(dir, { recursive: true, force: true });

      // Assess 1: charged, not completed, not PAID: exactly the crash window.
      expect(child.signal).toBe('SIGKILL');
      expect(child.stderr).toContain('injected crash at after-side-effect');
      expect(ledgerFor(paymentId)).toHaveLength(1);
      expect(await readOrder(orderId)).toMatchObject({ state: 'PENDING', version: 0 });
      const inProgress = await idempotencyRecord(orderId, paymentId);
      expect(inProgress).toMatchObject({ status: 'INPROGRESS' });

      // Act 2: the message returns; once the in-progress expiry has passed, a healthy consumer runs it.
      const expiry = Number(inProgress?.in_progress_expiration);
      const redelivered = await pollUntil(
        async () => {
          if (Date.now() <= expiry) return undefined;
          const again = await receiveSqsEvent(sqs, queueUrl, { waitTimeSeconds: 1 });
          return again.Records.length > 0 ? again : undefined;
        },
        {
          description: 'the message to return after the in-progress expiry',
          deadlineMs: 20_000,
          intervalMs: 200,
        },
      );
      const healthy = newConsumer();
      const response = await runBatch(healthy, redelivered);

      // Assess 2
      expect(redelivered.Records[0]?.attributes.ApproximateReceiveCount).toBe('2');
      expect(response.batchItemFailures).toEqual([]);
      expect(healthy.outcomes()).toEqual([METRIC.jobSucceeded]);
      // The replay reached the provider, which answered from its idempotency store.
      expect(provider.requestCount()).toBe(requestsBefore + 2);
      await expectCapturedOnce(orderId, paymentId);
    });
  });

  describe('A lost answer from DynamoDB (I4)', () => {
    it.each([
      {
        update: 0,
        which: 'claiming (INPROGRESS on the order, with its guard)',
        finds: 'its own INPROGRESS record (claim token), not another delivery in progress',
      },
      {
        update: 1,
        which: 'completing (COMPLETED + PAID)',
        finds: 'its own COMPLETED record on the PAID order (returned by the failed condition), not a refusal',
      },
    ])(
      'when the $which UpdateItem is applied but its answer is lost, the SDK’s resend finds $finds and the job succeeds once',
      async ({ update }) => {
        // Prepare: that UpdateItem is applied, its answer lost.
        const orderId = uniqueName('order');
        const paymentId = uniqueName('pay');
        await seedOrder(orderId);
        await send(captureJob(orderId, paymentId), orderId);
        const c = newConsumer({ loseAnswerOfUpdate: update });

        // Act
        const response = await runBatch(c, await receiveSqsEventOf(sqs, queueUrl, 1));

        // Assess: two calls, three requests (one resent), no read; done now, not retried or dead-lettered.
        expect(response.batchItemFailures).toEqual([]);
        expect(c.outcomes()).toEqual([METRIC.jobSucceeded]);
        expect(c.calls.calls()).toEqual(['UpdateItemCommand', 'UpdateItemCommand']);
        expect(c.updateRequests()).toBe(3);
        await expectCapturedOnce(orderId, paymentId);
        expect(await queueDepth(dlqUrl)).toEqual({ visible: '0', inFlight: '0' });
        expect(await queueDepth(queueUrl)).toEqual({ visible: '0', inFlight: '0' });
      },
    );
  });

  describe('A completion whose outcome is unknown (I4)', () => {
    it('when the completing UpdateItem fails for good, the redelivery waits for the record’s in-progress expiry instead of spending attempts, then completes once', async () => {
      // Prepare: the capture charges; its completion is throttled on every attempt, so the
      // INPROGRESS record stays until the invocation's deadline (4 s here).
      const orderId = uniqueName('order');
      const paymentId = uniqueName('pay');
      await seedOrder(orderId);
      await send(captureJob(orderId, paymentId), orderId);
      const first = newConsumer({ throttleUpdate: 1, random: () => 0 });
      await runBatch(first, await receiveSqsEventOf(sqs, queueUrl, 1), 4_000);
      const inProgress = await idempotencyRecord(orderId, paymentId);

      // Act 1: the redelivery (backoff 0 s) finds the INPROGRESS record.
      const second = newConsumer({ random: () => 0 });
      const redelivered = await receiveSqsEventOf(sqs, queueUrl, 1);
      const expiry = Number(inProgress?.in_progress_expiration);
      const leftMs = expiry - Date.now();
      const answer = await runBatch(second, redelivered);
      const waitedS = second.visibilityChanges.map((v) => v.VisibilityTimeout);

      // Act 2: once the record expired, the next delivery claims and completes it.
      await new Promise((r) => setTimeout(r, Math.max(0, expiry - Date.now()) + 200));
      const third = newConsumer();
      await runBatch(third, await receiveSqsEventOf(sqs, queueUrl, 1, { deadlineMs: 10_000 }));

      // Assess
      expect(first.outcomes()).toEqual([METRIC.jobRetried]);
      expect(inProgress).toMatchObject({ status: 'INPROGRESS' });
      expect(second.outcomes()).toEqual([METRIC.jobDeferred]);
      expect(answer.batchItemFailures).toHaveLength(1);
      expect(waitedS).toHaveLength(1);
      // The message is held until the record expires (a backoff with random 0 would be 0 s).
      expect(leftMs).toBeGreaterThan(1_000);
      expect(waitedS[0]).toBeGreaterThanOrEqual(Math.floor(leftMs / 1000));
      expect(third.outcomes()).toEqual([METRIC.jobSucceeded]);
      await expectCapturedOnce(orderId, paymentId);
      expect(await queueDepth(dlqUrl)).toEqual({ visible: '0', inFlight: '0' });
    });
  });

  describe('Permanent errors (R1, R3, D3)', () => {
    it('when a batch holds invalid jobs, each reaches the DLQ on its first attempt with the error attributes and its batch-mates succeed', async () => {
      // Prepare
      const good = uniqueName('order');
      await seedOrder(good);
      const goodPayment = uniqueName('pay');
      const invalidPayload = captureJob(uniqueName('order'), uniqueName('pay'), { amountMinor: -5 });
      const notJson = '{"type":"payment.capture",';
      const wrongKey = JSON.stringify({
        ...(JSON.parse(captureJob(uniqueName('order'), uniqueName('pay'))) as object),
        idempotencyKey: 'not-the-business-key',
      });
      const bad = [invalidPayload, notJson, wrongKey];
      await send(captureJob(good, goodPayment), good);
      for (const [i, body] of bad.entries()) await send(body, `bad-group-${i}`);
      const event = await receiveSqsEventOf(sqs, queueUrl, 4);
      const c = newConsumer();

      // Act
      const response = await runBatch(c, event);

      // Assess
      expect(response.batchItemFailures).toEqual([]);
      expect(c.outcomes().sort()).toEqual(
        [METRIC.jobSucceeded, ...bad.map(() => METRIC.jobFailedPermanently)].sort(),
      );
      expect(await readOrder(good)).toMatchObject({ state: 'PAID' });
      const dead = await receiveAll(dlqUrl, bad.length);
      expect(dead.map((m) => m.body).sort()).toEqual([...bad].sort());
      for (const message of dead) {
        expect(message.attributes).toMatchObject({
          [DLQ_ATTRIBUTE.errorClass]: 'ValidationError',
          [DLQ_ATTRIBUTE.errorKind]: 'permanent',
          [DLQ_ATTRIBUTE.attempts]: '1',
          [DLQ_ATTRIBUTE.jobType]: 'payment.capture',
        });
        expect(message.attributes[DLQ_ATTRIBUTE.firstFailureAt]).toMatch(/^\d{4}-\d\d-\d\dT/);
      }
      expect(await queueDepth(queueUrl)).toEqual({ visible: '0', inFlight: '0' });
    });

    it('when a job reuses a captured payment’s key with another amount, it reaches the DLQ at once and charges nothing', async () => {
      // Prepare
      const orderId = uniqueName('order');
      const paymentId = uniqueName('pay');
      await seedOrder(orderId);
      await send(captureJob(orderId, paymentId), orderId);
      await runBatch(newConsumer(), await receiveSqsEventOf(sqs, queueUrl, 1));
      const tampered = captureJob(orderId, paymentId, { amountMinor: 999 });
      await send(tampered, orderId);
      const c = newConsumer();

      // Act
      const response = await runBatch(c, await receiveSqsEventOf(sqs, queueUrl, 1));

      // Assess
      expect(response.batchItemFailures).toEqual([]);
      expect(c.outcomes()).toEqual([METRIC.jobFailedPermanently]);
      const [dead] = await receiveAll(dlqUrl, 1);
      expect(dead?.body).toBe(tampered);
      expect(dead?.attributes[DLQ_ATTRIBUTE.errorClass]).toBe('ValidationError');
      expect(dead?.attributes[DLQ_ATTRIBUTE.errorMessage]).toContain('different payload');
      expect(ledgerFor(paymentId)).toHaveLength(1);
    });
  });

  describe('The order’s guard, checked in the claim (I2)', () => {
    it('when the order is already PAID and there is no idempotency record, it is duplicate_ignored with one DynamoDB call and no provider call', async () => {
      // Prepare: paid by an earlier job whose record has expired (or was never this key's).
      const orderId = uniqueName('order');
      const paymentId = uniqueName('pay');
      await seedOrder(orderId, { state: 'PAID', version: 1, paymentId, chargeId: 'ch_earlier' });
      await send(captureJob(orderId, paymentId), orderId);
      const c = newConsumer();
      const requestsBefore = provider.requestCount();

      // Act
      const response = await runBatch(c, await receiveSqsEventOf(sqs, queueUrl, 1));

      // Assess
      expect(response.batchItemFailures).toEqual([]);
      expect(c.outcomes()).toEqual([METRIC.duplicateIgnored]);
      expect(provider.requestCount()).toBe(requestsBefore);
      expect(c.calls.calls()).toEqual(['UpdateItemCommand']);
      // The claim failed with the guard: no INPROGRESS record stays behind.
      expect(await idempotencyRecord(orderId, paymentId)).toBeUndefined();
      expect(await readOrder(orderId)).toMatchObject({ state: 'PAID', version: 1, chargeId: 'ch_earlier' });
      expect(c.persistence.stagedCount).toBe(0);
      expect(await queueDepth(queueUrl)).toEqual({ visible: '0', inFlight: '0' });
    });

    it.each([
      {
        label: 'the order is CANCELLED',
        seed: { state: 'CANCELLED', version: 1 } satisfies Partial<Order>,
        job: {},
        errorClass: 'IllegalTransitionError',
        calls: ['UpdateItemCommand'],
      },
      {
        label: 'the job’s amount differs from the order’s',
        seed: {},
        job: { amountMinor: 999 },
        errorClass: 'PaymentMismatchError',
        calls: ['UpdateItemCommand'],
      },
      {
        label: 'the job’s currency differs from the order’s',
        seed: {},
        job: { currency: 'USD' },
        errorClass: 'PaymentMismatchError',
        calls: ['UpdateItemCommand'],
      },
      {
        label: 'the order does not exist',
        seed: undefined,
        job: {},
        errorClass: 'OrderNotFoundError',
        // The failed claim returns no item: one read tells "missing" from "created since".
        calls: ['UpdateItemCommand', 'GetItemCommand'],
      },
    ])(
      'when $label, the job reaches the DLQ at once as $errorClass with no provider call and nothing written',
      async ({ seed, job, errorClass, calls }) => {
        // Prepare
        const orderId = uniqueName('order');
        const paymentId = uniqueName('pay');
        if (seed !== undefined) await seedOrder(orderId, seed);
        const before = await rawOrder(orderId);
        const body = captureJob(orderId, paymentId, job);
        await send(body, orderId);
        const c = newConsumer();
        const requestsBefore = provider.requestCount();

        // Act
        const response = await runBatch(c, await receiveSqsEventOf(sqs, queueUrl, 1));

        // Assess
        expect(response.batchItemFailures).toEqual([]);
        expect(c.outcomes()).toEqual([METRIC.jobFailedPermanently]);
        expect(provider.requestCount()).toBe(requestsBefore);
        expect(ledgerFor(paymentId)).toHaveLength(0);
        expect(c.calls.calls()).toEqual(calls);
        const [dead] = await receiveAll(dlqUrl, 1);
        expect(dead?.body).toBe(body);
        expect(dead?.attributes).toMatchObject({
          [DLQ_ATTRIBUTE.errorClass]: errorClass,
          [DLQ_ATTRIBUTE.errorKind]: 'permanent',
          [DLQ_ATTRIBUTE.attempts]: '1',
        });
        expect(await idempotencyRecord(orderId, paymentId)).toBeUndefined();
        expect(await rawOrder(orderId)).toEqual(before);
        expect(await queueDepth(queueUrl)).toEqual({ visible: '0', inFlight: '0' });
      },
    );
  });

  describe('Another payment of the same order in progress (I1, I2)', () => {
    it('when another payment’s live INPROGRESS record is on the order, the job waits for its in-progress expiry: no charge, the other record untouched', async () => {
      // Prepare: another capture of the order holds it (its invocation still running).
      const orderId = uniqueName('order');
      const paymentId = uniqueName('pay');
      await seedOrder(orderId);
      const theirs = {
        id: recordKey(uniqueName('pay-other')),
        status: 'INPROGRESS',
        expiration: Math.floor(Date.now() / 1000) + 3_600,
        in_progress_expiration: Date.now() + 9_000,
        claim_token: 'theirs',
      };
      await doc.send(
        new UpdateCommand({
          TableName: ordersTable,
          Key: { orderId },
          UpdateExpression: 'SET #idem = :record',
          ExpressionAttributeNames: { '#idem': GUARDED_ITEM_RECORD_ATTR },
          ExpressionAttributeValues: { ':record': theirs },
        }),
      );
      await send(captureJob(orderId, paymentId), orderId);
      const c = newConsumer({ random: () => 0 });
      const requestsBefore = provider.requestCount();

      // Act
      const response = await runBatch(c, await receiveSqsEventOf(sqs, queueUrl, 1));

      // Assess: one call, held about the other claim's remaining time, nothing written.
      expect(response.batchItemFailures).toHaveLength(1);
      expect(c.outcomes()).toEqual([METRIC.jobDeferred]);
      expect(c.calls.calls()).toEqual(['UpdateItemCommand']);
      expect(provider.requestCount()).toBe(requestsBefore);
      expect(c.visibilityChanges.map((v) => v.VisibilityTimeout)).toEqual([expect.any(Number) as unknown]);
      expect(c.visibilityChanges[0]?.VisibilityTimeout).toBeGreaterThanOrEqual(7);
      expect((await rawOrder(orderId))?.[GUARDED_ITEM_RECORD_ATTR]).toEqual(theirs);
      expect(await readOrder(orderId)).toMatchObject({ state: 'PENDING', version: 0 });
    });
  });

  describe('FIFO group isolation (D3, R2, X1)', () => {
    it('when one group fails transiently, only that group stops; other groups succeed and the failed message waits its backoff', async () => {
      // Prepare
      const [orderA, orderB] = [uniqueName('order'), uniqueName('order')];
      const [payA1, payA2, payB] = [uniqueName('pay'), uniqueName('pay'), uniqueName('pay')];
      await seedOrder(orderA);
      await seedOrder(orderB);
      provider.set({ failingKeys: [paymentCaptureKey(payA1)] });
      await send(captureJob(orderA, payA1), orderA);
      await send(captureJob(orderA, payA2), orderA);
      await send(captureJob(orderB, payB), orderB);
      const event = await receiveSqsEventOf(sqs, queueUrl, 3);
      const ids = (paymentId: string): string =>
        event.Records.find((r) => r.body.includes(paymentId))?.messageId ?? 'missing';
      // random 0.5 → the first retry waits floor(0.5 × (min(300, 5 × 2⁰) + 1)) = 3 s.
      const c = newConsumer({ random: () => 0.5 });
      const requestsBefore = provider.requestCount();

      // Act
      const response = await runBatch(c, event);

      // Assess
      expect(response.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(
        [ids(payA1), ids(payA2)].sort(),
      );
      expect(await readOrder(orderB)).toMatchObject({ state: 'PAID' });
      expect(await readOrder(orderA)).toMatchObject({ state: 'PENDING', version: 0 });
      expect(ledgerFor(payB)).toHaveLength(1);
      expect(ledgerFor(payA1)).toHaveLength(0);
      // A1 reached the provider and failed; A2 was never tried (its group had stopped).
      expect(provider.requestCount()).toBe(requestsBefore + 2);
      const a1 = event.Records.find((r) => r.messageId === ids(payA1));
      expect(c.visibilityChanges).toContainEqual({
        QueueUrl: queueUrl,
        ReceiptHandle: a1?.receiptHandle,
        VisibilityTimeout: 3,
      });
      expect(c.outcomes()).toEqual(expect.arrayContaining([METRIC.jobRetried, METRIC.jobSucceeded]));
      // Powertools deleted A1's record when the function failed, so its retry is not "in progress".
      expect(await idempotencyRecord(orderA, payA1)).toBeUndefined();
      expect(await rawOrder(orderA)).not.toHaveProperty(GUARDED_ITEM_RECORD_ATTR);
      expect(await idempotencyRecord(orderB, payB)).toMatchObject({ status: 'COMPLETED' });

      // Act 2: the group comes back after A1's backoff — not after the 30 s visibility timeout
      // that the skipped A2 was received with — and A1 first; the provider has recovered.
      const failedAt = Date.now();
      provider.set({ failingKeys: [] });
      const back = await pollUntil(
        async () => {
          const again = await receiveSqsEvent(sqs, queueUrl, { waitTimeSeconds: 1 });
          return again.Records.length > 0 ? again : undefined;
        },
        { description: 'group A to return after its backoff', deadlineMs: 15_000 },
      );
      const waitedMs = Date.now() - failedAt;
      const retry = newConsumer();
      const retried = await runBatch(retry, back);

      // Assess 2
      expect(waitedMs).toBeGreaterThanOrEqual(2_000);
      expect(back.Records[0]?.messageId).toBe(ids(payA1));
      expect(back.Records[0]?.attributes.ApproximateReceiveCount).toBe('2');
      expect(retried.batchItemFailures).toEqual([]);
      expect(await readOrder(orderA)).toMatchObject({ state: 'PAID', paymentId: payA1 });
      expect(ledgerFor(payA1)).toHaveLength(1);
    });
  });

  describe('DynamoDB calls per job (I4)', () => {
    it('when a job succeeds it costs two UpdateItems of the order (claim with its guard, completion with PAID) and no transaction, and a duplicate costs one', async () => {
      // Prepare
      const orderId = uniqueName('order');
      const paymentId = uniqueName('pay');
      await seedOrder(orderId);
      const body = captureJob(orderId, paymentId);
      await send(body, orderId);
      const c = newConsumer();

      // Act
      await runBatch(c, await receiveSqsEventOf(sqs, queueUrl, 1));
      const success = c.calls.calls();
      c.calls.reset();
      await send(body, orderId);
      await runBatch(c, await receiveSqsEventOf(sqs, queueUrl, 1));
      const duplicate = c.calls.calls();

      // Assess
      expect(success.length).toBeLessThanOrEqual(2);
      expect(success).toEqual(['UpdateItemCommand', 'UpdateItemCommand']);
      expect(duplicate.length).toBeLessThanOrEqual(1);
      expect(duplicate).toEqual(['UpdateItemCommand']);
      await expectNothingOnIdempotencyTable(paymentId);
      expect(c.outcomes()).toEqual([METRIC.jobSucceeded, METRIC.duplicateIgnored]);
      expect(await readOrder(orderId)).toMatchObject({ state: 'PAID', version: 1, paymentId });
    });

    it('when plain Powertools, a read and a separate business write do the same job, a success costs two calls more', async () => {
      // Prepare: the same core, guarded and completed the usual way (read the order, check the
      // guard, charge, write the order, then UpdateItem the record).
      const orderId = uniqueName('order');
      const paymentId = uniqueName('pay');
      await seedOrder(orderId);
      const client = dynamoClient();
      clients.push(client);
      const calls = countSdkCalls(client);
      const capture = createBaselineCapture({
        dynamo: client,
        ordersTable,
        idempotencyTable,
        provider: new HttpPaymentProvider({ baseUrl: provider.url, timeoutMs: 2_000 }),
      });
      const job = parseReferenceEnvelope(captureJob(orderId, paymentId), 'payment.capture');

      // Act
      await capture(job, lambdaContext(20_000));
      const success = calls.calls();
      calls.reset();
      await capture(job, lambdaContext(20_000));
      const duplicate = calls.calls();

      // Assess
      expect(success).toEqual(['PutItemCommand', 'GetItemCommand', 'UpdateItemCommand', 'UpdateItemCommand']);
      expect(duplicate).toEqual(['PutItemCommand']);
      expect(await readOrder(orderId)).toMatchObject({ state: 'PAID', version: 1 });
    });
  });
});

/** Receives `count` messages from `url` (left in flight) with their message attributes flattened. */
async function receiveAll(
  url: string,
  count: number,
): Promise<{ body: string; attributes: Record<string, string> }[]> {
  const received: { body: string; attributes: Record<string, string> }[] = [];
  await pollUntil(
    async () => {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: url,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageAttributeNames: ['All'],
        }),
      );
      for (const m of Messages) {
        received.push({
          body: m.Body ?? '',
          attributes: Object.fromEntries(
            Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue ?? '']),
          ),
        });
      }
      return received.length >= count ? true : undefined;
    },
    { description: `${count} messages in ${url}`, deadlineMs: 15_000 },
  );
  return received;
}

/** Runs the real handler module in a child process on the event in `eventFile`, with 1.5 s of "remaining time". */
function runChild(
  eventFile: string,
  env: Record<string, string>,
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    // node --import tsx, not the tsx CLI: the CLI runs the script in a grandchild and reports a
    // SIGKILL as exit code 137; here the killed process is the one we wait for.
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'test', 'helpers', 'run-payment-consumer.ts'), eventFile, '1500'],
      { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stdout.resume();
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve({ code, signal, stderr }));
  });
}
