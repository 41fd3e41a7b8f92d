/**
 * The outbox relay against moto (D6, Q1, B3): orders written to a real table with a stream, the
 * stream's real records delivered to the relay, follow-ups enqueued on real SQS queues with dedup
 * records in a real table and the degrade flag in SSM.
 */
import { CreateTableCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { DeleteParameterCommand, PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import type * as RelayModule from '../../examples/reference/functions/outbox-relay';
import { DynamoDbDedupStore } from '../../lib/adapters/aws/dynamodb-dedup-store';
import { DynamoDbOrderStore } from '../../examples/reference/domain/dynamodb-order-store';
import { SsmDegradeFlag } from '../../lib/adapters/aws/ssm-degrade-flag';
import { stageConfig } from '../../lib/adapters/lambda-env';
import { METRIC } from '../../lib/config/metrics';
import { TABLE_KEYS } from '../../lib/config/tables';
import { REFERENCE_TABLE_KEYS } from '../../examples/reference/domain/tables';
import { type JobEnvelope } from '../../lib/core/envelope';
import { parseReferenceEnvelope } from '../../examples/reference/domain/payloads';
import type { Order } from '../../examples/reference/domain/order';
import type { Enqueue } from '../../lib/core/outbox';
import { pollUntil } from '../../lib/local/poll';
import { dynamoClient, sqsClient, uniqueName } from '../helpers/aws';
import { StreamTail, streamsClient } from '../helpers/dynamodb-stream';
import { lambdaContext } from '../helpers/sqs-events';

jest.setTimeout(60_000);

const CONTEXT = lambdaContext(15_000, 'outbox-relay-test');

let relay: typeof RelayModule;
let dynamo: DynamoDBClient;
let streams: DynamoDBStreamsClient;
let sqs: SQSClient;
let ssm: SSMClient;
let ordersTable: string;
let dedupTable: string;
let store: DynamoDbOrderStore;
const queues: { notification: string; inventory: string } = { notification: '', inventory: '' };
const parameters: string[] = [];

beforeAll(async () => {
  dynamo = dynamoClient();
  streams = streamsClient();
  sqs = sqsClient();
  ssm = new SSMClient({ endpoint: process.env.AWS_ENDPOINT_URL, region: process.env.AWS_REGION });
  ordersTable = uniqueName('it-outbox-orders');
  dedupTable = uniqueName('it-outbox-dedup');
  await dynamo.send(
    new CreateTableCommand({
      TableName: ordersTable,
      AttributeDefinitions: [{ AttributeName: REFERENCE_TABLE_KEYS.orders.partitionKey, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: REFERENCE_TABLE_KEYS.orders.partitionKey, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
      StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
    }),
  );
  await dynamo.send(
    new CreateTableCommand({
      TableName: dedupTable,
      AttributeDefinitions: [{ AttributeName: TABLE_KEYS.dedup.partitionKey, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: TABLE_KEYS.dedup.partitionKey, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  store = new DynamoDbOrderStore(dynamo, ordersTable);
  for (const name of ['notification', 'inventory'] as const) {
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: uniqueName(`it-outbox-${name}`) }),
    );
    if (QueueUrl === undefined) throw new Error('queue not created');
    queues[name] = QueueUrl;
  }
  const saved = { ...process.env };
  Object.assign(process.env, {
    TENANG_STAGE: 'it',
    NOTIFICATION_SEND_QUEUE_URL: queues.notification,
    INVENTORY_RESERVE_QUEUE_URL: queues.inventory,
    DEGRADE_FLAG: '/tenang/it/flags/degrade',
    DEDUP_TABLE: dedupTable,
  });
  try {
    relay = await import('../../examples/reference/functions/outbox-relay');
  } finally {
    process.env = saved;
  }
});

afterAll(async () => {
  for (const url of [queues.notification, queues.inventory]) {
    if (url !== '') await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
  }
  for (const table of [ordersTable, dedupTable])
    await dynamo.send(new DeleteTableCommand({ TableName: table }));
  for (const name of parameters)
    await ssm.send(new DeleteParameterCommand({ Name: name })).catch(() => undefined);
  dynamo.destroy();
  streams.destroy();
  sqs.destroy();
  ssm.destroy();
});

/**
 * A relay over the real tables, queues and a degrade flag of its own; `clock` moves the dedup
 * records' time, `enqueue` replaces SQS (a relay that dies while sending).
 */
async function newRelay(
  degraded: boolean,
  opts: { clock?: () => Date; enqueue?: Enqueue } = {},
): Promise<{
  handle: (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse>;
  metricNames: () => string[];
}> {
  const flagName = `/tenang/it/${uniqueName('degrade')}`;
  parameters.push(flagName);
  await ssm.send(
    new PutParameterCommand({
      Name: flagName,
      Type: 'String',
      Value: JSON.stringify({ degraded, reason: 'test' }),
    }),
  );
  const flag = new SsmDegradeFlag(ssm, flagName);
  const metrics = new Metrics({ namespace: 'tenang', serviceName: 'outbox-relay' });
  jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
  const addMetric = jest.spyOn(metrics, 'addMetric');
  const handle = relay.createHandler({
    dedup: new DynamoDbDedupStore(dynamo, dedupTable, opts.clock),
    enqueue:
      opts.enqueue ??
      relay.sqsEnqueue(sqs, {
        'notification.send': queues.notification,
        'inventory.reserve': queues.inventory,
      }),
    criticalityOf: relay.criticalityFrom(stageConfig('it', process.env.AWS_REGION)),
    isDegraded: () => flag.isDegraded(),
    functionTimeoutSeconds: 15,
    logger: new Logger({ serviceName: 'outbox-relay', logLevel: 'SILENT' }),
    metrics,
    clock: opts.clock,
  });
  return {
    handle: (event) => handle(event, CONTEXT),
    metricNames: () => addMetric.mock.calls.map(([name]) => name),
  };
}

function newOrder(orderId: string): Order {
  const now = new Date().toISOString();
  return {
    orderId,
    state: 'PENDING',
    version: 0,
    customerEmail: 'buyer@example.com',
    lines: [
      { sku: 'sku-a', quantity: 2 },
      { sku: 'sku-b', quantity: 1 },
    ],
    amountMinor: 1250,
    currency: 'EUR',
    createdAt: now,
    updatedAt: now,
  };
}

/** Creates an order, pays it, and returns the stream's real records of both writes. */
async function paidOrderEvent(orderId: string): Promise<DynamoDBStreamEvent> {
  const tail = await StreamTail.open(dynamo, streams, ordersTable);
  await store.create(newOrder(orderId));
  await store.transition(orderId, 'PENDING', 'PAID', 0, { paymentId: `pay-${orderId}` });
  return tail.readAtLeast(2);
}

/** Receives (and leaves in flight) every visible message of `queueUrl` that belongs to `orderId`. */
/** Starts a relay on `event` whose process stops inside its first send; true once it holds its claim. */
async function deadRelayHolding(event: DynamoDBStreamEvent, start: number): Promise<boolean> {
  let sending = false;
  const dead = await newRelay(false, {
    clock: () => new Date(start),
    enqueue: () => {
      sending = true;
      return new Promise<void>(() => undefined);
    },
  });
  void dead.handle(event);
  await pollUntil(() => Promise.resolve(sending ? true : undefined), {
    description: 'the dead relay to reach its send',
    deadlineMs: 10_000,
    intervalMs: 10,
  });
  return sending;
}

async function drain(queueUrl: string, orderId: string): Promise<JobEnvelope[]> {
  const found: JobEnvelope[] = [];
  let emptyReceives = 0;
  while (emptyReceives < 2) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 0,
        VisibilityTimeout: 60,
      }),
    );
    if (Messages.length === 0) emptyReceives += 1;
    for (const message of Messages) {
      const envelope = JSON.parse(message.Body ?? '{}') as JobEnvelope;
      if (envelope.correlationId === orderId) found.push(envelope);
    }
  }
  return found;
}

async function delayedCount(queueUrl: string): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: ['ApproximateNumberOfMessagesDelayed'],
    }),
  );
  return Number(Attributes?.ApproximateNumberOfMessagesDelayed ?? '0');
}

describe('Outbox relay (moto)', () => {
  it('when the same stream records are delivered twice, the follow-ups are enqueued exactly once', async () => {
    // Prepare
    const orderId = uniqueName('ord');
    const event = await paidOrderEvent(orderId);
    const r = await newRelay(false);

    // Act
    const first = await r.handle(event);
    const second = await r.handle(event);
    const notifications = await drain(queues.notification, orderId);
    const reservations = await drain(queues.inventory, orderId);

    // Assess
    expect(event.Records.map((rec) => rec.eventName)).toEqual(['INSERT', 'MODIFY']);
    expect([first.batchItemFailures, second.batchItemFailures]).toEqual([[], []]);
    expect(
      notifications.map((e) => parseReferenceEnvelope(JSON.stringify(e), 'notification.send').payload),
    ).toEqual([{ orderId, template: 'order-paid', recipient: 'buyer@example.com', orderVersion: 1 }]);
    expect(
      reservations.map((e) => parseReferenceEnvelope(JSON.stringify(e), 'inventory.reserve').payload),
    ).toEqual([
      { orderId, sku: 'sku-a', quantity: 2 },
      { orderId, sku: 'sku-b', quantity: 1 },
    ]);
    expect(r.metricNames().filter((n) => n === METRIC.duplicateIgnored)).toHaveLength(3);
  });

  it('when the relay dies between claiming a follow-up and sending it, the immediate redelivery of the same record takes the claim over and enqueues each follow-up exactly once', async () => {
    // Prepare: the dead relay claims the notification (for the 15 s function timeout), then its
    // process stops inside the send.
    const orderId = uniqueName('ord');
    const event = await paidOrderEvent(orderId);
    const start = Date.now();
    const dead = await deadRelayHolding(event, start);

    // Act: the mapping's immediate retry (1 s later, well within the claim), then a duplicate delivery.
    const retry = await (await newRelay(false, { clock: () => new Date(start + 1_000) })).handle(event);
    const again = await (await newRelay(false, { clock: () => new Date(start + 2_000) })).handle(event);
    const notifications = await drain(queues.notification, orderId);
    const reservations = await drain(queues.inventory, orderId);

    // Assess
    expect(dead).toBe(true);
    expect([retry.batchItemFailures, again.batchItemFailures]).toEqual([[], []]);
    expect(notifications.map((e) => e.idempotencyKey)).toEqual([
      `order:${orderId}:v1:notification.send:order-paid`,
    ]);
    expect(reservations.map((e) => e.idempotencyKey)).toEqual([
      `order:${orderId}:v1:inventory.reserve:0:sku-a`,
      `order:${orderId}:v1:inventory.reserve:1:sku-b`,
    ]);
  });

  it('when a follow-up is claimed by another stream record, the record fails transiently within that claim and enqueues exactly once after it', async () => {
    // Prepare: a dead relay of the same change under other sequence numbers holds the claim.
    const orderId = uniqueName('ord');
    const event = await paidOrderEvent(orderId);
    const start = Date.now();
    const other = structuredClone(event);
    for (const r of other.Records)
      if (r.dynamodb) r.dynamodb.SequenceNumber = `9${r.dynamodb.SequenceNumber ?? ''}`;
    const dead = await deadRelayHolding(other, start);
    const modify = event.Records[1]?.dynamodb?.SequenceNumber;

    // Act
    const early = await (await newRelay(false, { clock: () => new Date(start + 10_000) })).handle(event);
    const late = await (await newRelay(false, { clock: () => new Date(start + 16_000) })).handle(event);
    const again = await (await newRelay(false, { clock: () => new Date(start + 17_000) })).handle(event);
    const notifications = await drain(queues.notification, orderId);
    const reservations = await drain(queues.inventory, orderId);

    // Assess
    expect(dead).toBe(true);
    expect(early.batchItemFailures).toEqual([{ itemIdentifier: modify }]);
    expect([late.batchItemFailures, again.batchItemFailures]).toEqual([[], []]);
    expect(notifications).toHaveLength(1);
    expect(reservations).toHaveLength(2);
  });

  it('when the stage is degraded, the notification is shed and counted, and the reservations are enqueued delayed', async () => {
    // Prepare
    const orderId = uniqueName('ord');
    const event = await paidOrderEvent(orderId);
    const r = await newRelay(true);
    const delayedBefore = await delayedCount(queues.inventory);

    // Act
    const response = await r.handle(event);
    const notifications = await drain(queues.notification, orderId);
    const reservationsVisibleNow = await drain(queues.inventory, orderId);
    const delayedAfter = await delayedCount(queues.inventory);

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(notifications).toEqual([]);
    expect(reservationsVisibleNow).toEqual([]);
    expect(delayedAfter - delayedBefore).toBe(2);
    expect(r.metricNames()).toEqual([METRIC.jobShed, METRIC.jobDeferred, METRIC.jobDeferred]);
  });
});
