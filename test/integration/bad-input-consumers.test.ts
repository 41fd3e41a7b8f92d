/**
 * The bad-input corpus (test/fixtures/bad-input/queue-messages.ts) through the real SQS consumers
 * against moto and the fake providers (R1, R3, X2, D3): each case is sent between two good jobs.
 * A rejected message reaches the DLQ on its first attempt with its error class and an error line
 * that names the problem (with its correlation id when it has one); an accepted one is processed
 * like any job. Either way its batch-mates are processed once, and nothing else changes: table
 * scans before and after differ only by the processed jobs' writes, and the providers' ledgers
 * only by their side effects.
 */
import { createHash } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { inventoryReserve, leaseTtlMs } from '../../examples/reference/jobs/inventory-reserve';
import { inFlightClaimSeconds, notificationSend } from '../../examples/reference/jobs/notification-send';
import { paymentCapture } from '../../examples/reference/jobs/payment-capture';
import { DynamoDbDedupStore } from '../../lib/adapters/aws/dynamodb-dedup-store';
import { DynamoDbInventoryStore } from '../../examples/reference/domain/dynamodb-inventory-store';
import { DynamoDbLockStore } from '../../lib/adapters/aws/dynamodb-lock-store';
import { DynamoDbOrderStore } from '../../examples/reference/domain/dynamodb-order-store';
import { DLQ_ATTRIBUTE } from '../../lib/adapters/aws/sqs-job-runner';
import {
  GUARDED_ITEM_RECORD_ATTR,
  TransactionalDynamoDBPersistenceLayer,
} from '../../lib/adapters/aws/transactional-persistence';
import { createJobHandler, jobIdempotencyKeyPrefix } from '../../lib/adapters/define-job';
import { HttpMessagingProvider } from '../../examples/reference/domain/messaging-provider';
import { HttpPaymentProvider } from '../../examples/reference/domain/payment-provider';
import { stageConfig } from '../../lib/adapters/lambda-env';
import { jobTypeByName, TABLE_KEYS, type ResolvedJobType } from '../../lib/config';
import { REFERENCE_TABLE_KEYS } from '../../examples/reference/domain/tables';
import { CircuitBreaker } from '../../lib/core/circuit-breaker';
import type { JobTypeName } from '../../examples/reference/domain/payloads';
import { skuLockResource } from '../../examples/reference/domain/inventory';
import { notificationKey } from '../../examples/reference/domain/notification';
import type { Order } from '../../examples/reference/domain/order';
import { paymentCaptureKey } from '../../examples/reference/domain/payment';
import { TokenBucket } from '../../lib/core/token-bucket';
import { startFakeProvider, type FakeProvider } from '../../lib/local/fake-provider';
import { pollUntil } from '../../lib/local/poll';
import {
  QUEUE_MESSAGE_CASES,
  validEnvelope,
  type MessageIds,
  type QueueMessageCase,
} from '../fixtures/bad-input';
import { dynamoClient, sqsClient, uniqueName } from '../helpers/aws';
import { captureLogs, type LogLine } from '../helpers/log-capture';
import { lambdaContext, receiveSqsEventOf, settleBatch } from '../helpers/sqs-events';

jest.setTimeout(60_000);

const STAGE = 'itest';

let dynamo: DynamoDBClient;
let doc: DynamoDBDocumentClient;
let sqs: SQSClient;
const tables: string[] = [];
const providers: FakeProvider[] = [];
/** Queues of the running test, deleted after it. */
let queues: string[] = [];

beforeAll(() => {
  dynamo = dynamoClient();
  doc = DynamoDBDocumentClient.from(dynamo);
  sqs = sqsClient();
});

afterEach(async () => {
  jest.restoreAllMocks();
  for (const url of queues) await sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
  queues = [];
});

afterAll(async () => {
  for (const provider of providers) await provider.close();
  for (const table of tables)
    await dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
  dynamo?.destroy();
  sqs?.destroy();
});

async function createTable(prefix: string, key: string): Promise<string> {
  const name = uniqueName(prefix);
  await dynamo.send(
    new CreateTableCommand({
      TableName: name,
      AttributeDefinitions: [{ AttributeName: key, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  tables.push(name);
  return name;
}

async function startProvider(kind: 'charges' | 'messages'): Promise<FakeProvider> {
  const provider = await startFakeProvider({ kind });
  providers.push(provider);
  return provider;
}

/** A job type's queue and its DLQ (with the deployed redrive), fresh for one test. */
/** The job type's queue, its DLQ and, when the job type declares a useful age, its side queue. */
async function createQueues(
  jobType: ResolvedJobType,
): Promise<{ queueUrl: string; dlqUrl: string; expiredQueueUrl?: string }> {
  const fifo = jobType.queue.kind === 'fifo';
  const create = async (name: string, attributes: Record<string, string>): Promise<string> => {
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({
        QueueName: fifo ? `${name}.fifo` : name,
        Attributes: fifo ? { FifoQueue: 'true', ...attributes } : attributes,
      }),
    );
    if (QueueUrl === undefined) throw new Error(`queue ${name} was not created`);
    queues.push(QueueUrl);
    return QueueUrl;
  };
  const dlqUrl = await create(uniqueName('bad-dlq'), {});
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }),
  );
  const queueUrl = await create(uniqueName('bad'), {
    VisibilityTimeout: String(jobType.visibilityTimeoutSeconds),
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: Attributes?.QueueArn,
      maxReceiveCount: jobType.maxReceiveCount,
    }),
  });
  if (jobType.usefulAgeSeconds === undefined) return { queueUrl, dlqUrl };
  return { queueUrl, dlqUrl, expiredQueueUrl: await create(uniqueName('bad-expired'), {}) };
}

/** Unique, valid ids for one message of `type`. */
function messageIds(type: JobTypeName): MessageIds {
  const orderId = uniqueName('order');
  const paymentId = uniqueName('pay');
  const sku = uniqueName('sku');
  const idempotencyKey = {
    'payment.capture': paymentCaptureKey(paymentId),
    'notification.send': notificationKey(orderId, 'order-paid'),
    'inventory.reserve': `inventory:${orderId}:${sku}`,
  }[type];
  return {
    orderId,
    paymentId,
    sku,
    idempotencyKey,
    correlationId: uniqueName('corr'),
    enqueuedAt: new Date().toISOString(),
  };
}

/** The three messages of a test: good, the case's, good. */
interface Batch {
  readonly good: readonly [MessageIds, MessageIds];
  readonly bad: MessageIds;
  readonly badBody: string;
  /** The ids of the jobs that must be processed: the good ones, and the bad one when accepted. */
  readonly processed: readonly MessageIds[];
}

function batchFor(c: QueueMessageCase): Batch {
  const good = [messageIds(c.queue), messageIds(c.queue)] as const;
  const run = messageIds(c.queue);
  const bad = c.ids?.(run) ?? run;
  return {
    good,
    bad,
    badBody: c.body(bad),
    processed: c.expect.outcome === 'accepted' ? [good[0], bad, good[1]] : good,
  };
}

/** Sends the batch in order (FIFO: one group, so the bad message sits mid-group). */
async function sendBatch(queueUrl: string, c: QueueMessageCase, batch: Batch, fifo: boolean): Promise<void> {
  const group = uniqueName('group');
  const bodies = [
    JSON.stringify(validEnvelope(c.queue, batch.good[0])),
    batch.badBody,
    JSON.stringify(validEnvelope(c.queue, batch.good[1])),
  ];
  for (const body of bodies) {
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: body,
        ...(fifo ? { MessageGroupId: group, MessageDeduplicationId: uniqueName('dedup') } : {}),
      }),
    );
  }
}

/** Receives the three messages, runs `handler` on them capturing its logs, and settles the batch like the ESM. */
async function deliver(
  queueUrl: string,
  handler: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>,
  batch: Batch,
): Promise<{ response: SQSBatchResponse; logs: LogLine[]; badRecord: SQSRecord }> {
  const event = await receiveSqsEventOf(sqs, queueUrl, 3, { deadlineMs: 15_000 });
  const badRecord = event.Records.find((r) => r.body === batch.badBody);
  if (badRecord === undefined) throw new Error('the bad message was not received');
  const { result: response, logs } = await captureLogs(() => handler(event, lambdaContext(20_000)));
  await settleBatch(sqs, queueUrl, event, response);
  return { response, logs, badRecord };
}

/** The dead letters now in `dlqUrl`: waits for `count`, then takes what one more receive finds. */
async function deadLetters(
  dlqUrl: string,
  count: number,
): Promise<{ body: string; attributes: Record<string, string> }[]> {
  const received: { body: string; attributes: Record<string, string> }[] = [];
  const receive = async (): Promise<void> => {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: dlqUrl,
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
  };
  await pollUntil(
    async () => {
      await receive();
      return received.length >= count ? true : undefined;
    },
    { description: `${count} dead letters in ${dlqUrl}`, deadlineMs: 15_000 },
  );
  return received;
}

async function visibleMessages(url: string): Promise<string> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
    }),
  );
  return `${Attributes?.ApproximateNumberOfMessages}+${Attributes?.ApproximateNumberOfMessagesNotVisible}`;
}

/** Every item of `table` by its key, as JSON (a small table of this test file only). */
async function scanTable(table: string, key: string): Promise<Map<string, string>> {
  const items = new Map<string, string>();
  let start: Record<string, unknown> | undefined;
  do {
    const page = await doc.send(
      new ScanCommand({ TableName: table, ConsistentRead: true, ExclusiveStartKey: start }),
    );
    for (const item of page.Items ?? []) items.set(String(item[key]), JSON.stringify(item));
    start = page.LastEvaluatedKey;
  } while (start !== undefined);
  return items;
}

/** Keys added, removed or changed between two scans, sorted. */
function changedKeys(before: Map<string, string>, after: Map<string, string>): string[] {
  return [...new Set([...before.keys(), ...after.keys()])]
    .filter((k) => before.get(k) !== after.get(k))
    .sort();
}

/**
 * The case's outcome at the queues and in the logs: a rejected message is dead-lettered once
 * with its context and one error line names its problem; an accepted one is done like its
 * batch-mates and logged with its ids verbatim. No record fails, and the queue is left empty.
 */
async function assessOutcome(
  c: QueueMessageCase,
  batch: Batch,
  queueUrl: string,
  dlqUrl: string,
  delivered: { response: SQSBatchResponse; logs: LogLine[]; badRecord: SQSRecord },
): Promise<void> {
  const { response, logs, badRecord } = delivered;
  expect(response.batchItemFailures).toEqual([]);
  expect(await visibleMessages(queueUrl)).toBe('0+0');
  const done = logs.filter((l) => l.message === 'job done');
  expect(done.map((l) => l.correlationId).sort()).toEqual(
    batch.processed.map((ids) => ids.correlationId).sort(),
  );
  for (const ids of batch.processed) {
    expect(done.find((l) => l.correlationId === ids.correlationId)).toMatchObject({
      idempotencyKey: ids.idempotencyKey,
    });
  }
  const errors = logs.filter((l) => l.level === 'ERROR');
  if (c.expect.outcome === 'accepted') {
    expect(errors).toEqual([]);
    expect(await visibleMessages(dlqUrl)).toBe('0+0');
    return;
  }
  const { errorClass, problem, correlated } = c.expect;
  expect(errors).toHaveLength(1);
  const [line] = errors;
  expect(line).toMatchObject({
    message: 'job failed; sent to the DLQ',
    errorClass,
    messageId: badRecord.messageId,
    attempt: 1,
  });
  expect((line?.error as { message?: string } | undefined)?.message).toMatch(problem);
  expect(line?.correlationId).toBe(correlated ? batch.bad.correlationId : undefined);
  const dead = await deadLetters(dlqUrl, 1);
  expect(dead).toHaveLength(1);
  expect(dead[0]?.body).toBe(batch.badBody);
  expect(dead[0]?.attributes).toMatchObject({
    [DLQ_ATTRIBUTE.errorClass]: errorClass,
    [DLQ_ATTRIBUTE.errorKind]: 'permanent',
    [DLQ_ATTRIBUTE.attempts]: '1',
    [DLQ_ATTRIBUTE.jobType]: c.queue,
    [DLQ_ATTRIBUTE.sourceMessageId]: badRecord.messageId,
  });
  expect(dead[0]?.attributes[DLQ_ATTRIBUTE.errorMessage]).toMatch(problem);
  expect(dead[0]?.attributes[DLQ_ATTRIBUTE.correlationId]).toBe(
    correlated ? batch.bad.correlationId : undefined,
  );
}

const casesOf = (type: JobTypeName): QueueMessageCase[] =>
  QUEUE_MESSAGE_CASES.filter((c) => c.queue === type);

const metricsFor = (serviceName: string): Metrics => {
  const metrics = new Metrics({ namespace: 'tenang', serviceName });
  jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
  return metrics;
};

describe('Bad input at the SQS consumers (integration)', () => {
  it('when the corpus is read, every job type has cases and every name is unique', () => {
    // Assess
    const names = QUEUE_MESSAGE_CASES.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
    for (const type of ['payment.capture', 'notification.send', 'inventory.reserve'] as const) {
      expect(casesOf(type).length).toBeGreaterThan(0);
    }
  });

  describe('Job: payment.capture handler', () => {
    let jobType: ResolvedJobType;
    let ordersTable: string;
    let idempotencyTable: string;
    let provider: FakeProvider;

    beforeAll(async () => {
      ordersTable = await createTable('bad-orders', REFERENCE_TABLE_KEYS.orders.partitionKey);
      idempotencyTable = await createTable('bad-idem', TABLE_KEYS.idempotency.partitionKey);
      provider = await startProvider('charges');
      jobType = jobTypeByName(stageConfig(STAGE, process.env.AWS_REGION), 'payment.capture');
    });

    /** Powertools' key of a payment's idempotency record: prefix#md5 of the key's JSON. */
    const idempotencyRecordKey = (ids: MessageIds): string =>
      `${jobIdempotencyKeyPrefix(paymentCapture.name)}#${createHash('md5')
        .update(JSON.stringify(paymentCaptureKey(ids.paymentId)))
        .digest('base64')}`;

    async function seedOrder(orderId: string): Promise<void> {
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
      };
      if (!(await new DynamoDbOrderStore(dynamo, ordersTable).create(order)))
        throw new Error(`${orderId} exists`);
    }

    it.each(casesOf('payment.capture'))(
      'when a FIFO group holds [good, $name, good], the middle one is $expect.outcome, its batch-mates are charged once and nothing else changes',
      async (c) => {
        // Prepare
        const { queueUrl, dlqUrl } = await createQueues(jobType);
        const batch = batchFor(c);
        for (const ids of [...batch.good, batch.bad]) await seedOrder(ids.orderId);
        const ordersBefore = await scanTable(ordersTable, REFERENCE_TABLE_KEYS.orders.partitionKey);
        const recordsBefore = await scanTable(idempotencyTable, TABLE_KEYS.idempotency.partitionKey);
        const ledgerBefore = provider.ledger().length;
        await sendBatch(queueUrl, c, batch, true);
        const handler = createJobHandler(paymentCapture, {
          jobType,
          queueUrl,
          dlqUrl,
          sqs,
          state: {
            orders: new DynamoDbOrderStore(dynamo, ordersTable),
            // As the job's setup builds it: the record on the order.
            persistence: new TransactionalDynamoDBPersistenceLayer({
              tableName: idempotencyTable,
              awsSdkV3Client: dynamo,
              guardedItemRecordAttr: GUARDED_ITEM_RECORD_ATTR,
            }),
            provider: new HttpPaymentProvider({ baseUrl: provider.url, timeoutMs: 2_000 }),
          },
          logger: new Logger({ serviceName: jobType.consumer, logLevel: 'INFO' }),
          metrics: metricsFor(jobType.consumer),
        });

        // Act
        const delivered = await deliver(queueUrl, handler, batch);

        // Assess
        await assessOutcome(c, batch, queueUrl, dlqUrl, delivered);
        const ordersAfter = await scanTable(ordersTable, REFERENCE_TABLE_KEYS.orders.partitionKey);
        expect(changedKeys(ordersBefore, ordersAfter)).toEqual(
          batch.processed.map((ids) => ids.orderId).sort(),
        );
        for (const ids of batch.processed) {
          expect(JSON.parse(ordersAfter.get(ids.orderId) ?? '{}')).toMatchObject({
            state: 'PAID',
            version: 1,
            paymentId: ids.paymentId,
            // Each processed payment's record COMPLETED on its order.
            [GUARDED_ITEM_RECORD_ATTR]: { id: idempotencyRecordKey(ids), status: 'COMPLETED' },
          });
        }
        // The records live on the orders: the idempotency table is not written.
        const recordsAfter = await scanTable(idempotencyTable, TABLE_KEYS.idempotency.partitionKey);
        expect(changedKeys(recordsBefore, recordsAfter)).toEqual([]);
        expect(
          provider
            .ledger()
            .slice(ledgerBefore)
            .map((e) => e.idempotencyKey)
            .sort(),
        ).toEqual(batch.processed.map((ids) => paymentCaptureKey(ids.paymentId)).sort());
      },
    );
  });

  describe('Job: notification.send handler', () => {
    let jobType: ResolvedJobType;
    let dedupTable: string;
    let provider: FakeProvider;

    beforeAll(async () => {
      dedupTable = await createTable('bad-dedup', TABLE_KEYS.dedup.partitionKey);
      provider = await startProvider('messages');
      jobType = jobTypeByName(stageConfig(STAGE, process.env.AWS_REGION), 'notification.send');
    });

    it.each(casesOf('notification.send'))(
      'when a batch holds [good, $name, good], the middle one is $expect.outcome, its batch-mates are sent once and nothing else changes',
      async (c) => {
        // Prepare
        const { queueUrl, dlqUrl, expiredQueueUrl } = await createQueues(jobType);
        const batch = batchFor(c);
        const dedupBefore = await scanTable(dedupTable, TABLE_KEYS.dedup.partitionKey);
        const ledgerBefore = provider.ledger().length;
        await sendBatch(queueUrl, c, batch, false);
        const clock = (): Date => new Date();
        const handler = createJobHandler(notificationSend, {
          jobType,
          queueUrl,
          dlqUrl,
          expiredQueueUrl,
          sqs,
          logger: new Logger({ serviceName: jobType.consumer, logLevel: 'INFO' }),
          metrics: metricsFor(jobType.consumer),
          state: {
            dedup: new DynamoDbDedupStore(dynamo, dedupTable),
            provider: new HttpMessagingProvider({ baseUrl: provider.url, timeoutMs: 2_000 }),
            breaker: new CircuitBreaker({
              name: 'messaging-provider',
              failureThreshold: 5,
              windowMs: 10_000,
              coolDownMs: 20_000,
              clock,
            }),
            rate: new TokenBucket({ ratePerSecond: 100, burst: 100, clock }),
            inFlightClaimSeconds: inFlightClaimSeconds(jobType),
          },
          isDegraded: () => Promise.resolve(false),
          random: () => 0,
        });

        // Act
        const delivered = await deliver(queueUrl, handler, batch);

        // Assess
        await assessOutcome(c, batch, queueUrl, dlqUrl, delivered);
        const keys = batch.processed.map((ids) => notificationKey(ids.orderId, 'order-paid')).sort();
        expect(changedKeys(dedupBefore, await scanTable(dedupTable, TABLE_KEYS.dedup.partitionKey))).toEqual(
          keys,
        );
        expect(
          provider
            .ledger()
            .slice(ledgerBefore)
            .map((e) => e.idempotencyKey)
            .sort(),
        ).toEqual(keys);
      },
    );
  });

  describe('Job: inventory.reserve handler', () => {
    let jobType: ResolvedJobType;
    let locksTable: string;
    let inventoryTable: string;

    beforeAll(async () => {
      locksTable = await createTable('bad-locks', TABLE_KEYS.locks.partitionKey);
      inventoryTable = await createTable('bad-stock', REFERENCE_TABLE_KEYS.inventory.partitionKey);
      jobType = jobTypeByName(stageConfig(STAGE, process.env.AWS_REGION), 'inventory.reserve');
    });

    it.each(casesOf('inventory.reserve'))(
      'when a batch holds [good, $name, good], the middle one is $expect.outcome, its batch-mates reserve once and nothing else changes',
      async (c) => {
        // Prepare: each message has a SKU of its own, stocked with 5.
        const { queueUrl, dlqUrl } = await createQueues(jobType);
        const batch = batchFor(c);
        const inventory = new DynamoDbInventoryStore(dynamo, inventoryTable);
        for (const ids of [...batch.good, batch.bad]) await inventory.seed(ids.sku, 5);
        const stockBefore = await scanTable(inventoryTable, REFERENCE_TABLE_KEYS.inventory.partitionKey);
        const locksBefore = await scanTable(locksTable, TABLE_KEYS.locks.partitionKey);
        await sendBatch(queueUrl, c, batch, false);
        const handler = createJobHandler(inventoryReserve, {
          jobType,
          queueUrl,
          dlqUrl,
          sqs,
          logger: new Logger({ serviceName: jobType.consumer, logLevel: 'INFO' }),
          metrics: metricsFor(jobType.consumer),
          state: {
            locks: new DynamoDbLockStore(dynamo, locksTable),
            inventory,
            leaseTtlMs: leaseTtlMs(jobType),
          },
          isDegraded: () => Promise.resolve(false),
          random: () => 0,
        });

        // Act
        const delivered = await deliver(queueUrl, handler, batch);

        // Assess
        await assessOutcome(c, batch, queueUrl, dlqUrl, delivered);
        const stockAfter = await scanTable(inventoryTable, REFERENCE_TABLE_KEYS.inventory.partitionKey);
        expect(changedKeys(stockBefore, stockAfter)).toEqual(batch.processed.map((ids) => ids.sku).sort());
        for (const ids of batch.processed) {
          expect(await inventory.get(ids.sku)).toMatchObject({
            available: 4,
            reservations: { [ids.orderId]: expect.objectContaining({ quantity: 1 }) },
          });
        }
        const processedLocks = batch.processed.map((ids) => skuLockResource(ids.sku));
        const locksAfter = await scanTable(locksTable, TABLE_KEYS.locks.partitionKey);
        for (const key of changedKeys(locksBefore, locksAfter)) expect(processedLocks).toContain(key);
      },
    );
  });
});
