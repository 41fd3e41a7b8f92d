import {
  SendMessageCommand,
  SQSClient,
  SQSServiceException,
  type SendMessageCommandInput,
} from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import type * as RelayModule from '../../../examples/reference/functions/outbox-relay';
import { InMemoryDedupStore } from '../../../harness/fakes/memory-dedup-store';
import { stageConfig } from '../../../lib/adapters/lambda-env';
import { METRIC } from '../../../lib/config/metrics';
import { DEGRADE_DEFER } from '../../../lib/core/deferral';
import { parseReferenceEnvelope } from '../../../examples/reference/domain/payloads';
import { streamRecord } from '../../helpers/dynamodb-stream';
import { manualClock } from '../../helpers/manual-clock';
import { lambdaContext } from '../../helpers/sqs-events';

const NOTIFY_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-unit-notification-send';
const INVENTORY_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-unit-inventory-reserve';
const ENV = {
  TENANG_STAGE: 'unit',
  AWS_REGION: 'eu-west-1',
  NOTIFICATION_SEND_QUEUE_URL: NOTIFY_URL,
  INVENTORY_RESERVE_QUEUE_URL: INVENTORY_URL,
  DEGRADE_FLAG: '/tenang/unit/flags/degrade',
  DEDUP_TABLE: 'tenang-unit-dedup',
};
const NOW = new Date('2030-06-01T12:00:00.000Z');
const CONTEXT = lambdaContext(15_000, 'outbox-relay-test');

const sqsMock = mockClient(SQSClient);
let relay: typeof RelayModule;

beforeAll(async () => {
  const saved = { ...process.env };
  Object.assign(process.env, ENV);
  try {
    relay = await import('../../../examples/reference/functions/outbox-relay');
  } finally {
    process.env = saved;
  }
});

beforeEach(() => {
  sqsMock.reset();
  sqsMock.on(SendMessageCommand).resolves({ MessageId: 'm-1' });
});

afterEach(() => {
  jest.restoreAllMocks();
});

function order(
  state: string,
  version: number,
  lines = [
    { sku: 'sku-a', quantity: 2 },
    { sku: 'sku-b', quantity: 1 },
  ],
) {
  return {
    orderId: 'ord-1',
    state,
    version,
    customerEmail: 'buyer@example.com',
    lines,
    amountMinor: 1250,
    currency: 'EUR',
    createdAt: '2030-06-01T11:00:00.000Z',
    updatedAt: '2030-06-01T11:59:00.000Z',
  };
}

function paid(seq = '100'): DynamoDBRecord {
  return streamRecord({
    eventName: 'MODIFY',
    keys: { orderId: 'ord-1' },
    oldImage: order('PENDING', 2),
    newImage: { ...order('PAID', 3), paymentId: 'pay-1' },
    sequenceNumber: seq,
  });
}

/** The follow-ups of paid(): the notification and a reservation per line. */
const ALL_FOLLOW_UPS = [
  'order:ord-1:v3:notification.send:order-paid',
  'order:ord-1:v3:inventory.reserve:0:sku-a',
  'order:ord-1:v3:inventory.reserve:1:sku-b',
];

/** Idempotency keys of the sends after the first one (which a dead invocation never finished). */
function keysSentAfterTheDeadSend(): string[] {
  return sends()
    .slice(1)
    .map((s) => JSON.parse(s.MessageBody ?? '{}').idempotencyKey as string);
}

function harness(opts: { degraded?: boolean | Error; clock?: () => Date } = {}) {
  const clock = opts.clock ?? ((): Date => NOW);
  const dedup = new InMemoryDedupStore(clock);
  const metrics = new Metrics({ namespace: 'tenang', serviceName: 'outbox-relay' });
  jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
  const addMetric = jest.spyOn(metrics, 'addMetric');
  const logger = new Logger({ serviceName: 'outbox-relay', logLevel: 'SILENT' });
  const degraded = opts.degraded ?? false;
  const handle = relay.createHandler({
    dedup,
    enqueue: relay.sqsEnqueue(new SQSClient({ region: 'eu-west-1' }), {
      'notification.send': NOTIFY_URL,
      'inventory.reserve': INVENTORY_URL,
    }),
    criticalityOf: relay.criticalityFrom(stageConfig('unit', 'eu-west-1')),
    isDegraded: () => (degraded instanceof Error ? Promise.reject(degraded) : Promise.resolve(degraded)),
    functionTimeoutSeconds: 15,
    logger,
    metrics,
    random: () => 0,
    clock,
  });
  return {
    dedup,
    logger,
    handle: (event: DynamoDBStreamEvent) => handle(event, CONTEXT),
    metricNames: (): string[] => addMetric.mock.calls.map(([name]) => name),
  };
}

function sends(): SendMessageCommandInput[] {
  return sqsMock.commandCalls(SendMessageCommand).map((call) => call.args[0].input);
}

describe('Function: outbox-relay handler', () => {
  it('when an order becomes PAID, it enqueues one notification and one reservation per line on their queues', async () => {
    // Prepare
    const h = harness();

    // Act
    const response = await h.handle({ Records: [paid()] });

    // Assess
    expect(response).toEqual({ batchItemFailures: [] });
    const sent = sends();
    expect(sent.map((s) => s.QueueUrl)).toEqual([NOTIFY_URL, INVENTORY_URL, INVENTORY_URL]);
    expect(sent.map((s) => s.DelaySeconds)).toEqual([undefined, undefined, undefined]);
    const notification = parseReferenceEnvelope(sent[0]?.MessageBody ?? '', 'notification.send');
    expect(notification.payload).toEqual({
      orderId: 'ord-1',
      template: 'order-paid',
      recipient: 'buyer@example.com',
      orderVersion: 3,
    });
    expect(notification.idempotencyKey).toBe('order:ord-1:v3:notification.send:order-paid');
    expect(notification.correlationId).toBe('ord-1');
    expect(parseReferenceEnvelope(sent[2]?.MessageBody ?? '', 'inventory.reserve').payload).toEqual({
      orderId: 'ord-1',
      sku: 'sku-b',
      quantity: 1,
    });
  });

  it('when the same stream record is delivered twice, the follow-ups are enqueued once', async () => {
    // Prepare
    const h = harness();
    await h.handle({ Records: [paid()] });

    // Act
    const again = await h.handle({ Records: [paid()] });

    // Assess
    expect(again.batchItemFailures).toEqual([]);
    expect(sends()).toHaveLength(3);
    expect(h.metricNames().filter((n) => n === METRIC.duplicateIgnored)).toHaveLength(3);
  });

  it('when an order is inserted as PAID, it has follow-ups too', async () => {
    // Prepare
    const h = harness();

    // Act
    await h.handle({
      Records: [
        streamRecord({
          eventName: 'INSERT',
          keys: { orderId: 'ord-1' },
          newImage: order('PAID', 0),
          sequenceNumber: '1',
        }),
      ],
    });

    // Assess
    expect(sends()).toHaveLength(3);
  });

  it.each([
    ['PAID → RESERVED', 'PAID', 'RESERVED'],
    ['PAID → PAID (another field changed)', 'PAID', 'PAID'],
    ['PENDING → PAYMENT_FAILED', 'PENDING', 'PAYMENT_FAILED'],
  ])('when the change is %s, nothing is enqueued', async (_label, from, to) => {
    // Prepare
    const h = harness();

    // Act
    await h.handle({
      Records: [
        streamRecord({
          eventName: 'MODIFY',
          keys: { orderId: 'ord-1' },
          oldImage: order(from, 3),
          newImage: order(to, 4),
          sequenceNumber: '1',
        }),
      ],
    });

    // Assess
    expect(sends()).toHaveLength(0);
  });

  it('when degraded, the notification is shed (counted and logged) and the reservations are enqueued with a delay', async () => {
    // Prepare
    const h = harness({ degraded: true });
    // Children of the handler's logger carry the order's keys; every logger shares the prototype.
    const warn = jest.spyOn(Logger.prototype, 'warn');

    // Act
    const response = await h.handle({ Records: [paid()] });

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(sends().map((s) => [s.QueueUrl, s.DelaySeconds])).toEqual([
      [INVENTORY_URL, DEGRADE_DEFER.baseSeconds],
      [INVENTORY_URL, DEGRADE_DEFER.baseSeconds],
    ]);
    expect(h.metricNames()).toEqual([METRIC.jobShed, METRIC.jobDeferred, METRIC.jobDeferred]);
    expect(warn).toHaveBeenCalledWith('follow-up shed by degrade mode; it is not enqueued', {
      jobType: 'notification.send',
      idempotencyKey: 'order:ord-1:v3:notification.send:order-paid',
    });
  });

  it('when the degrade flag cannot be read, it enqueues everything (nothing is lost)', async () => {
    // Prepare
    const h = harness({ degraded: new Error('SSM throttled') });

    // Act
    await h.handle({ Records: [paid()] });

    // Assess
    expect(sends()).toHaveLength(3);
  });

  it('when SQS fails on one follow-up, the record fails and its retry enqueues only what is missing', async () => {
    // Prepare
    const h = harness();
    sqsMock
      .on(SendMessageCommand)
      .resolvesOnce({ MessageId: 'm-1' })
      .rejectsOnce(Object.assign(new Error('throttled'), { name: 'RequestThrottled' }))
      .resolves({ MessageId: 'm-2' });

    // Act
    const first = await h.handle({ Records: [paid('100')] });
    const retry = await h.handle({ Records: [paid('100')] });

    // Assess
    expect(first).toEqual({ batchItemFailures: [{ itemIdentifier: '100' }] });
    expect(retry).toEqual({ batchItemFailures: [] });
    const delivered = sends()
      .filter((_, i) => i !== 1)
      .map((s) => JSON.parse(s.MessageBody ?? '{}').idempotencyKey as string);
    expect(delivered).toEqual([
      'order:ord-1:v3:notification.send:order-paid',
      'order:ord-1:v3:inventory.reserve:0:sku-a',
      'order:ord-1:v3:inventory.reserve:1:sku-b',
    ]);
  });

  it('when the relay is denied sending to a queue, the record fails for the stream to retry, and the denial is counted', async () => {
    // Prepare: the role may send notifications but not reservations.
    const h = harness();
    const denied = new SQSServiceException({
      name: 'AccessDenied',
      $fault: 'client',
      $metadata: { httpStatusCode: 403 },
      message:
        'User: arn:aws:sts::123456789012:assumed-role/r/outbox-relay is not authorized to perform: sqs:SendMessage on resource: arn:aws:sqs:eu-west-1:123456789012:tenang-unit-inventory-reserve because no identity-based policy allows the sqs:SendMessage action',
    });
    sqsMock.on(SendMessageCommand, { QueueUrl: INVENTORY_URL }).rejects(denied);

    // Act
    const first = await h.handle({ Records: [paid('100')] });
    sqsMock.on(SendMessageCommand, { QueueUrl: INVENTORY_URL }).resolves({ MessageId: 'm-2' });
    const retry = await h.handle({ Records: [paid('100')] });

    // Assess
    expect(first).toEqual({ batchItemFailures: [{ itemIdentifier: '100' }] });
    expect(h.metricNames().filter((n) => n === METRIC.permissionDenied)).toEqual([METRIC.permissionDenied]);
    expect(retry).toEqual({ batchItemFailures: [] });
    const delivered = sends()
      .filter((s) => s.QueueUrl === NOTIFY_URL)
      .map((s) => JSON.parse(s.MessageBody ?? '{}').idempotencyKey as string);
    expect(delivered).toEqual(['order:ord-1:v3:notification.send:order-paid']);
  });

  it("when the relay dies between claiming a follow-up and sending it, the same record's immediate retry takes the claim over and sends each follow-up once", async () => {
    // Prepare: the first invocation claims the notification, then its process stops inside SendMessage.
    const clock = manualClock(NOW);
    const h = harness({ clock });
    sqsMock.on(SendMessageCommand).callsFakeOnce(() => new Promise(() => undefined));
    void h.handle({ Records: [paid('100')] });
    await new Promise((resolve) => setImmediate(resolve));

    // Act: the mapping retries at once, well within the 15 s claim.
    clock.advance(1_000);
    const retry = await h.handle({ Records: [paid('100')] });
    const again = await h.handle({ Records: [paid('100')] });

    // Assess
    expect([retry, again]).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
    // The first send never reached SQS; the retry's three are the only deliveries.
    expect(keysSentAfterTheDeadSend()).toEqual(ALL_FOLLOW_UPS);
  });

  it('when another stream record of the change holds a claim, the record fails within that claim and one after it sends each follow-up once', async () => {
    // Prepare: record 99 (the same change, e.g. replayed from a copy) claims, then its process stops.
    const clock = manualClock(NOW);
    const h = harness({ clock });
    sqsMock.on(SendMessageCommand).callsFakeOnce(() => new Promise(() => undefined));
    void h.handle({ Records: [paid('99')] });
    await new Promise((resolve) => setImmediate(resolve));
    const warn = jest.spyOn(Logger.prototype, 'warn');

    // Act
    clock.advance(10_000);
    const early = await h.handle({ Records: [paid('100')] });
    clock.advance(6_000);
    const late = await h.handle({ Records: [paid('100')] });
    const again = await h.handle({ Records: [paid('100')] });

    // Assess
    expect(early).toEqual({ batchItemFailures: [{ itemIdentifier: '100' }] });
    expect(warn).toHaveBeenCalledWith(
      'follow-up claimed by another stream record; the record is retried until that claim expires',
      { dedupKey: 'outbox:order:ord-1:v3:notification.send:order-paid' },
    );
    expect([late, again]).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
    expect(keysSentAfterTheDeadSend()).toEqual(ALL_FOLLOW_UPS);
  });

  it('when a PAID image is not a valid order, the record fails loudly instead of losing its follow-ups', async () => {
    // Prepare
    const h = harness();
    const broken = streamRecord({
      eventName: 'MODIFY',
      keys: { orderId: 'ord-1' },
      oldImage: order('PENDING', 2),
      newImage: { ...order('PAID', 3), lines: [] },
      sequenceNumber: '77',
    });

    // Act
    const response = await h.handle({ Records: [broken, paid('78')] });

    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: '77' }] });
    expect(sends()).toHaveLength(3);
  });

  it('when a record is of an unknown entity, it is logged and skipped', async () => {
    // Prepare
    const h = harness();
    const warn = jest.spyOn(h.logger, 'warn');

    // Act
    const response = await h.handle({
      Records: [
        streamRecord({
          eventName: 'INSERT',
          keys: { sku: 'x' },
          newImage: { sku: 'x' },
          sequenceNumber: '3',
        }),
      ],
    });

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(warn).toHaveBeenCalledWith('stream record of an unknown entity; skipped', expect.anything());
  });
});
