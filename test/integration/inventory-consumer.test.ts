/**
 * The inventory consumer against moto (DynamoDB locks and inventory tables, a standard queue
 * with its DLQ redrive): handlers are invoked with SQS events built from real receives, and the
 * event source mapping's delete is played by settleBatch.
 */
import { CreateTableCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { SQSEvent } from 'aws-lambda';
import { inventoryReserve, leaseTtlMs } from '../../examples/reference/jobs/inventory-reserve';
import { createJobHandler } from '../../lib/adapters/define-job';
import {
  DynamoDbInventoryStore,
  DynamoDbUnleasedReservation,
} from '../../examples/reference/domain/dynamodb-inventory-store';
import { DynamoDbLockStore } from '../../lib/adapters/aws/dynamodb-lock-store';
import { DEFERRALS_ATTRIBUTE, DLQ_ATTRIBUTE } from '../../lib/adapters/aws/sqs-job-runner';
import { stageConfig } from '../../lib/adapters/lambda-env';
import { jobTypeByName, METRIC, TABLE_KEYS, type ResolvedJobType } from '../../lib/config';
import { REFERENCE_TABLE_KEYS } from '../../examples/reference/domain/tables';
import { makeEnvelope } from '../../lib/core/envelope';
import { skuLockResource } from '../../examples/reference/domain/inventory';
import { LeaseLock, withLease } from '../../lib/core/lease-lock';
import { pollUntil } from '../../lib/local/poll';
import { dynamoClient, sqsClient, uniqueName } from '../helpers/aws';
import { lambdaContext, receiveSqsEvent, settleBatch } from '../helpers/sqs-events';

jest.setTimeout(60_000);

const STAGE = 'itest';
/**
 * The rival's lease: short, so each deferral takes a few seconds, yet long enough that its
 * heartbeat (every fifth of it) keeps it alive through 2 s of CPU starvation: with a 1 s lease a
 * clean-clone CI run, its low-priority lane on a loaded machine, lost it, so the job reserved a
 * round early and no third delivery came.
 */
const RIVAL_TTL_MS = 2_500;

const SERVICE_NAME = 'inventory-consumer';
let dynamo: DynamoDBClient;
let sqs: SQSClient;
let jobType: ResolvedJobType;
let locksTable: string;
let inventoryTable: string;
let queueUrl: string | undefined;
let dlqUrl: string | undefined;

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

async function createQueue(name: string, attributes: Record<string, string>): Promise<string> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  if (QueueUrl === undefined) throw new Error(`queue ${name} was not created`);
  return QueueUrl;
}

async function attribute(url: string, name: 'QueueArn' | 'ApproximateNumberOfMessages'): Promise<string> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: [name] }),
  );
  const value = Attributes?.[name];
  if (value === undefined) throw new Error(`queue ${url} has no ${name}`);
  return value;
}

function required(url: string | undefined): string {
  if (url === undefined) throw new Error('the queues were not created (see beforeEach)');
  return url;
}

beforeAll(async () => {
  dynamo = dynamoClient();
  sqs = sqsClient();
  locksTable = uniqueName('locks');
  inventoryTable = uniqueName('inventory');
  await createTable(locksTable, TABLE_KEYS.locks.partitionKey);
  await createTable(inventoryTable, REFERENCE_TABLE_KEYS.inventory.partitionKey);
  jobType = jobTypeByName(stageConfig(STAGE, process.env.AWS_REGION), 'inventory.reserve');
});

beforeEach(async () => {
  // Fresh queues per test, with the deployed visibility timeout and redrive.
  dlqUrl = await createQueue(uniqueName('inventory-dlq'), {});
  queueUrl = await createQueue(uniqueName('inventory'), {
    VisibilityTimeout: String(jobType.visibilityTimeoutSeconds),
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: await attribute(dlqUrl, 'QueueArn'),
      maxReceiveCount: jobType.maxReceiveCount,
    }),
  });
});

afterEach(async () => {
  for (const url of [queueUrl, dlqUrl]) {
    if (url !== undefined) await sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
  }
  queueUrl = undefined;
  dlqUrl = undefined;
});

afterAll(async () => {
  for (const table of [locksTable, inventoryTable]) {
    if (table !== undefined)
      await dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
  }
  dynamo?.destroy();
  sqs?.destroy();
});

/**
 * A handler over the moto tables with a real clock; `random` 0 makes deferrals exactly the
 * lease's remainder. `unleased`: with the lease-free path, as the job's setup builds it.
 */
function newHandler(metrics: Metrics, unleased: boolean): ReturnType<typeof createJobHandler> {
  const locks = new DynamoDbLockStore(dynamo, locksTable);
  return createJobHandler(inventoryReserve, {
    jobType,
    queueUrl: required(queueUrl),
    dlqUrl: required(dlqUrl),
    sqs,
    logger: new Logger({ serviceName: SERVICE_NAME, logLevel: 'SILENT' }),
    metrics,
    state: {
      locks,
      inventory: new DynamoDbInventoryStore(dynamo, inventoryTable),
      ...(unleased ? { unleased: new DynamoDbUnleasedReservation(locks, inventoryTable) } : {}),
      leaseTtlMs: leaseTtlMs(jobType),
    },
    isDegraded: () => Promise.resolve(false),
    random: () => 0,
  });
}

function silentMetrics(): Metrics {
  const metrics = new Metrics({ namespace: 'tenang', serviceName: SERVICE_NAME });
  jest.spyOn(metrics, 'addMetric');
  jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
  return metrics;
}

async function sendReservation(sku: string, orderId: string, quantity: number): Promise<void> {
  const envelope = makeEnvelope(
    'inventory.reserve',
    { orderId, sku, quantity },
    { idempotencyKey: `inventory:${orderId}:${sku}`, correlationId: `corr-${orderId}`, now: new Date() },
  );
  await sqs.send(
    new SendMessageCommand({ QueueUrl: required(queueUrl), MessageBody: JSON.stringify(envelope) }),
  );
}

/** Waits for the next message (a deferred one is delayed) and returns it as a one-record event. */
async function nextEvent(deadlineMs = 10_000): Promise<SQSEvent> {
  return pollUntil(
    async () => {
      const event = await receiveSqsEvent(sqs, required(queueUrl), { maxMessages: 10, waitTimeSeconds: 1 });
      return event.Records.length > 0 ? event : undefined;
    },
    { description: 'the next inventory message', deadlineMs },
  );
}

describe.each([
  ['the lease path', false],
  ['the lease-free path (as deployed)', true],
])('Integration: inventory-consumer (moto), %s', (_path, unleased) => {
  it('when the SKU lock is busy, it delays the message without raising its receive count, and reserves once the lock is free', async () => {
    // Prepare
    const sku = uniqueName('sku');
    const inventory = new DynamoDbInventoryStore(dynamo, inventoryTable);
    await inventory.seed(sku, 5);
    const rival = new LeaseLock({
      store: new DynamoDbLockStore(dynamo, locksTable),
      clock: () => new Date(),
      newToken: () => 'rival-owner',
    });
    await sendReservation(sku, 'order-1', 2);
    const metrics = silentMetrics();
    const handler = newHandler(metrics, unleased);
    const seen: { receiveCount: string; deferrals: string | undefined }[] = [];

    // Act: three deliveries while the rival holds the SKU (its heartbeat keeps the short lease
    // alive), then one after it lets go.
    const rivalHold = await withLease(
      rival,
      skuLockResource(sku),
      { ttlMs: RIVAL_TTL_MS, heartbeatMs: RIVAL_TTL_MS / 5 },
      async () => {
        for (let round = 0; round < 3; round += 1) {
          const event = await nextEvent();
          const record = event.Records[0];
          seen.push({
            receiveCount: record?.attributes.ApproximateReceiveCount ?? '?',
            deferrals: record?.messageAttributes[DEFERRALS_ATTRIBUTE]?.stringValue,
          });
          const response = await handler(event, lambdaContext(30_000, SERVICE_NAME));
          expect(response.batchItemFailures).toEqual([]);
          await settleBatch(sqs, required(queueUrl), event, response);
        }
      },
    );
    const last = await nextEvent();
    const final = await handler(last, lambdaContext(30_000, SERVICE_NAME));
    await settleBatch(sqs, required(queueUrl), last, final);

    // Assess
    expect(rivalHold.lost).toBe(false);
    expect(seen).toEqual([
      { receiveCount: '1', deferrals: undefined },
      { receiveCount: '1', deferrals: '1' },
      { receiveCount: '1', deferrals: '2' },
    ]);
    expect(last.Records[0]?.attributes.ApproximateReceiveCount).toBe('1');
    expect(final.batchItemFailures).toEqual([]);
    const level = await inventory.get(sku);
    expect(level?.available).toBe(3);
    // Either way no lease is left, and the lock's fence is at least the one the stock accepted
    // (the lease-free path advanced it to exactly that).
    const lock = await new DynamoDbLockStore(dynamo, locksTable).get(skuLockResource(sku));
    expect(lock?.holder).toBeUndefined();
    if (unleased) expect(lock?.fence).toBe(level?.fence);
    else expect(lock?.fence).toBeGreaterThanOrEqual(level?.fence ?? Infinity);
    expect(metrics.addMetric).toHaveBeenCalledWith(METRIC.lockContention, 'Count', 1);
    expect(
      jest.mocked(metrics.addMetric).mock.calls.filter(([name]) => name === METRIC.lockContention),
    ).toHaveLength(3);
    expect(await attribute(required(queueUrl), 'ApproximateNumberOfMessages')).toBe('0');
    expect(await attribute(required(dlqUrl), 'ApproximateNumberOfMessages')).toBe('0');
  });

  it('when stock is short, it dead-letters the message at once with the error class', async () => {
    // Prepare
    const sku = uniqueName('sku');
    await new DynamoDbInventoryStore(dynamo, inventoryTable).seed(sku, 1);
    await sendReservation(sku, 'order-1', 2);
    const handler = newHandler(silentMetrics(), unleased);

    // Act
    const event = await nextEvent();
    const response = await handler(event, lambdaContext(30_000, SERVICE_NAME));
    await settleBatch(sqs, required(queueUrl), event, response);

    // Assess
    const dead = await pollUntil(
      async () => (await receiveSqsEvent(sqs, required(dlqUrl), { waitTimeSeconds: 1 })).Records[0],
      { description: 'the message in the DLQ', deadlineMs: 10_000 },
    );
    expect(dead.messageAttributes[DLQ_ATTRIBUTE.errorClass]?.stringValue).toBe('InsufficientStockError');
    expect(dead.messageAttributes[DLQ_ATTRIBUTE.attempts]?.stringValue).toBe('1');
    expect(await attribute(required(queueUrl), 'ApproximateNumberOfMessages')).toBe('0');
  });
});
