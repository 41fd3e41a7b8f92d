/**
 * The notification consumer against moto (the dedup table, a standard queue with its DLQ
 * redrive) and the fake messaging provider (a real HTTP server with a ledger and an outage
 * knob). Handlers are invoked with SQS events built from real receives; settleBatch plays the
 * event source mapping's delete.
 */
import { CreateTableCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  SendMessageCommand,
  type QueueAttributeName,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { inFlightClaimSeconds, notificationSend } from '../../examples/reference/jobs/notification-send';
import { DynamoDbDedupStore } from '../../lib/adapters/aws/dynamodb-dedup-store';
import { createJobHandler } from '../../lib/adapters/define-job';
import { HttpMessagingProvider } from '../../examples/reference/domain/messaging-provider';
import { stageConfig } from '../../lib/adapters/lambda-env';
import { jobTypeByName, TABLE_KEYS, type ResolvedJobType } from '../../lib/config';
import { CircuitBreaker } from '../../lib/core/circuit-breaker';
import { makeEnvelope } from '../../lib/core/envelope';
import { type NotificationSendPayload } from '../../examples/reference/domain/payloads';
import { notificationKey } from '../../examples/reference/domain/notification';
import { TokenBucket } from '../../lib/core/token-bucket';
import { startFakeProvider, type FakeProvider } from '../../lib/local/fake-provider';
import { dynamoClient, sqsClient, uniqueName } from '../helpers/aws';
import { manualClock, type ManualClock } from '../helpers/manual-clock';
import { lambdaContext, receiveSqsEventOf, settleBatch } from '../helpers/sqs-events';

jest.setTimeout(60_000);

const STAGE = 'itest';
const BREAKER = { failureThreshold: 3, windowMs: 10_000, coolDownMs: 1_000 };

const SERVICE_NAME = 'notification-consumer';
let dynamo: DynamoDBClient;
let sqs: SQSClient;
let jobType: ResolvedJobType;
let dedupTable: string;
let provider: FakeProvider | undefined;
let queueUrl: string | undefined;
let dlqUrl: string | undefined;
let expiredUrl: string | undefined;

async function createQueue(name: string, attributes: Record<string, string>): Promise<string> {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  if (QueueUrl === undefined) throw new Error(`queue ${name} was not created`);
  return QueueUrl;
}

async function attribute(url: string, name: QueueAttributeName): Promise<string> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: [name] }),
  );
  const value = Attributes?.[name];
  if (value === undefined) throw new Error(`queue ${url} has no ${name}`);
  return value;
}

function required<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('the test fixture was not created (see beforeEach)');
  return value;
}

beforeAll(async () => {
  dynamo = dynamoClient();
  sqs = sqsClient();
  dedupTable = uniqueName('dedup');
  await dynamo.send(
    new CreateTableCommand({
      TableName: dedupTable,
      AttributeDefinitions: [{ AttributeName: TABLE_KEYS.dedup.partitionKey, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: TABLE_KEYS.dedup.partitionKey, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  jobType = jobTypeByName(stageConfig(STAGE, process.env.AWS_REGION), 'notification.send');
});

beforeEach(async () => {
  provider = await startFakeProvider({ kind: 'messages' });
  dlqUrl = await createQueue(uniqueName('notify-dlq'), {});
  expiredUrl = await createQueue(uniqueName('notify-expired'), {});
  queueUrl = await createQueue(uniqueName('notify'), {
    VisibilityTimeout: String(jobType.visibilityTimeoutSeconds),
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: await attribute(dlqUrl, 'QueueArn'),
      maxReceiveCount: jobType.maxReceiveCount,
    }),
  });
});

afterEach(async () => {
  await provider?.close();
  provider = undefined;
  for (const url of [queueUrl, dlqUrl, expiredUrl]) {
    if (url !== undefined) await sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
  }
  queueUrl = undefined;
  dlqUrl = undefined;
  expiredUrl = undefined;
});

afterAll(async () => {
  if (dedupTable !== undefined) {
    await dynamo.send(new DeleteTableCommand({ TableName: dedupTable })).catch(() => undefined);
  }
  dynamo?.destroy();
  sqs?.destroy();
});

/**
 * A handler over moto and the fake provider. The breaker runs on `breakerClock`, so the test
 * decides when its cool-down is over; `random` 0 makes retry backoffs 0 s (the failed messages
 * return at once) and deferrals exactly the cool-down.
 */
function newHandler(breakerClock: ManualClock): ReturnType<typeof createJobHandler> {
  const metrics = new Metrics({ namespace: 'tenang', serviceName: SERVICE_NAME });
  jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
  return createJobHandler(notificationSend, {
    jobType,
    queueUrl: required(queueUrl),
    dlqUrl: required(dlqUrl),
    expiredQueueUrl: required(expiredUrl),
    sqs,
    logger: new Logger({ serviceName: SERVICE_NAME, logLevel: 'SILENT' }),
    metrics,
    state: {
      dedup: new DynamoDbDedupStore(dynamo, dedupTable),
      provider: new HttpMessagingProvider({ baseUrl: required(provider).url, timeoutMs: 2_000 }),
      breaker: new CircuitBreaker({
        name: 'messaging-provider',
        ...BREAKER,
        limitInFlightToThreshold: true,
        clock: breakerClock,
      }),
      rate: new TokenBucket({ ratePerSecond: 100, burst: 100, clock: () => new Date() }),
      inFlightClaimSeconds: inFlightClaimSeconds(jobType),
    },
    isDegraded: () => Promise.resolve(false),
    random: () => 0,
  });
}

function payload(orderId: string): NotificationSendPayload {
  return { orderId, template: 'order-paid', recipient: 'ayu@example.com', orderVersion: 2 };
}

async function sendNotification(orderId: string, copy = 1, enqueuedAt = new Date()): Promise<void> {
  const envelope = makeEnvelope('notification.send', payload(orderId), {
    idempotencyKey: notificationKey(orderId, 'order-paid'),
    correlationId: `corr-${orderId}-${copy}`,
    now: enqueuedAt,
  });
  await sqs.send(
    new SendMessageCommand({ QueueUrl: required(queueUrl), MessageBody: JSON.stringify(envelope) }),
  );
}

/** Receives `count` messages, runs the handler on them and settles the batch like the ESM. */
async function deliver(
  handler: ReturnType<typeof createJobHandler>,
  count: number,
): Promise<{ receiveCounts: string[]; failed: number }> {
  const event = await receiveSqsEventOf(sqs, required(queueUrl), count, { deadlineMs: 15_000 });
  const response = await handler(event, lambdaContext(20_000, SERVICE_NAME));
  await settleBatch(sqs, required(queueUrl), event, response);
  return {
    receiveCounts: event.Records.map((r) => r.attributes.ApproximateReceiveCount).sort(),
    failed: response.batchItemFailures.length,
  };
}

describe('Integration: notification-consumer (moto + fake messaging provider)', () => {
  it('when a notification is delivered twice, it is sent once: one provider request, one ledger entry', async () => {
    // Prepare
    const orderId = uniqueName('order');
    const handler = newHandler(manualClock(new Date()));
    await sendNotification(orderId, 1);
    await sendNotification(orderId, 2);

    // Act: the two copies arrive in separate invocations, as with two pollers.
    const first = await deliver(handler, 1);
    const second = await deliver(handler, 1);

    // Assess
    expect([first.failed, second.failed]).toEqual([0, 0]);
    expect(required(provider).requestCount()).toBe(1);
    expect(required(provider).ledger()).toEqual([
      expect.objectContaining({ idempotencyKey: notificationKey(orderId, 'order-paid') }),
    ]);
    expect(await attribute(required(queueUrl), 'ApproximateNumberOfMessages')).toBe('0');
    expect(await attribute(required(dlqUrl), 'ApproximateNumberOfMessages')).toBe('0');
  });

  it('when the provider is down, the breaker opens and the consumer defers instead of hammering it; after the cool-down it sends each once', async () => {
    // Prepare
    const clock = manualClock(new Date());
    const handler = newHandler(clock);
    const orders = Array.from({ length: 8 }, () => uniqueName('order'));
    for (const orderId of orders) await sendNotification(orderId);
    required(provider).set({ outage: true });

    // Act 1: the first failures open the circuit; the rest of the batch is deferred.
    const outage = await deliver(handler, 8);
    const requestsAfterOpening = required(provider).requestCount();
    const delayed = await attribute(required(queueUrl), 'ApproximateNumberOfMessagesDelayed');

    // Act 2: every message comes back while the circuit is still open: none reaches the provider.
    const stillOpen = await deliver(handler, 8);
    const requestsWhileOpen = required(provider).requestCount();

    // Act 3: the provider recovers and the cool-down passes: the probe succeeds, the rest follow.
    required(provider).set({ outage: false });
    clock.advance(BREAKER.coolDownMs);
    const recovered = await deliver(handler, 8);

    // Assess
    expect(outage.failed).toBe(BREAKER.failureThreshold);
    expect(requestsAfterOpening).toBe(BREAKER.failureThreshold);
    expect(delayed).toBe(String(8 - BREAKER.failureThreshold));
    expect(stillOpen.failed).toBe(0);
    expect(requestsWhileOpen).toBe(BREAKER.failureThreshold);
    // Only the three that failed were received again; the deferred ones are fresh messages.
    expect(stillOpen.receiveCounts).toEqual(['1', '1', '1', '1', '1', '2', '2', '2']);
    expect(recovered.failed).toBe(0);
    expect(required(provider).requestCount()).toBe(BREAKER.failureThreshold + orders.length);
    const sentKeys = required(provider)
      .ledger()
      .map((entry) => entry.idempotencyKey)
      .sort();
    expect(sentKeys).toEqual(orders.map((orderId) => notificationKey(orderId, 'order-paid')).sort());
    expect(await attribute(required(queueUrl), 'ApproximateNumberOfMessages')).toBe('0');
    expect(await attribute(required(dlqUrl), 'ApproximateNumberOfMessages')).toBe('0');
  });
});

describe('notification-consumer: a backlog older than the useful age (B5, moto)', () => {
  it('when a drained backlog holds notifications past their useful age, those go to the side queue with their age and are not sent; the fresh ones are sent once; nothing reaches the DLQ', async () => {
    // Prepare: three notifications enqueued seven hours ago (useful for six), two just now.
    const usefulAge = jobType.usefulAgeSeconds ?? 0;
    const longAgo = new Date(Date.now() - (usefulAge + 3_600) * 1000);
    const stale = ['ord-s1', 'ord-s2', 'ord-s3'].map((id) => uniqueName(id));
    const fresh = ['ord-f1', 'ord-f2'].map((id) => uniqueName(id));
    for (const id of stale) await sendNotification(id, 1, longAgo);
    for (const id of fresh) await sendNotification(id);
    const handler = newHandler(manualClock());

    // Act
    const delivered = await deliver(handler, 5);
    const aside = await receiveSqsEventOf(sqs, required(expiredUrl), 3, { deadlineMs: 15_000 });

    // Assess
    expect(usefulAge).toBeGreaterThan(0);
    expect(delivered.failed).toBe(0);
    expect(
      required(provider)
        .ledger()
        .map((e) => e.idempotencyKey)
        .sort(),
    ).toEqual(fresh.map((id) => notificationKey(id, 'order-paid')).sort());
    expect(
      aside.Records.map(
        (r) => (JSON.parse(r.body) as { payload: { orderId: string } }).payload.orderId,
      ).sort(),
    ).toEqual([...stale].sort());
    for (const r of aside.Records) {
      expect(Number(r.messageAttributes['tenang-age-seconds']?.stringValue)).toBeGreaterThan(usefulAge);
      expect(r.messageAttributes['tenang-job-type']?.stringValue).toBe('notification.send');
    }
    expect(await attribute(required(queueUrl), 'ApproximateNumberOfMessages')).toBe('0');
    expect(await attribute(required(dlqUrl), 'ApproximateNumberOfMessages')).toBe('0');
  });
});
