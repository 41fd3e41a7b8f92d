import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  DynamoDBClient,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { ChangeMessageVisibilityCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import {
  DynamoDBDocumentClient,
  GetCommand,
  TransactWriteCommand,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { SQSRecord } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { paymentCapture } from '../../../examples/reference/jobs/payment-capture';
import { DynamoDbOrderStore } from '../../../examples/reference/domain/dynamodb-order-store';
import { DLQ_ATTRIBUTE } from '../../../lib/adapters/aws/sqs-job-runner';
import {
  GUARDED_ITEM_RECORD_ATTR,
  TransactionalDynamoDBPersistenceLayer,
} from '../../../lib/adapters/aws/transactional-persistence';
import { createJobHandler } from '../../../lib/adapters/define-job';
import { stageConfig } from '../../../lib/adapters/lambda-env';
import { jobTypeByName, METRIC } from '../../../lib/config';
import { makeEnvelope } from '../../../lib/core/envelope';
import type { Order } from '../../../examples/reference/domain/order';
import { paymentCaptureKey, type PaymentProvider } from '../../../examples/reference/domain/payment';
import { jobRecord, sqsEvent } from '../../helpers/job-records';
import { lambdaContext } from '../../helpers/sqs-events';

const ENV = {
  ORDERS_TABLE: 'tenang-unit-orders',
  IDEMPOTENCY_TABLE: 'tenang-unit-idempotency',
  QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-unit-payment-capture.fifo',
  DLQ_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-unit-payment-capture-dlq.fifo',
};
const SERVICE_NAME = 'payment-consumer';

const JOB_TYPE = jobTypeByName(stageConfig('unit', 'eu-west-1'), 'payment.capture');
const NOW = new Date('2030-06-01T12:00:00.000Z');
const ddbMock = mockClient(DynamoDBClient);
const docMock = mockClient(DynamoDBDocumentClient);
const sqsMock = mockClient(SQSClient);

function storedOrder(overrides: Partial<Order> = {}): Order {
  return {
    orderId: 'order-1',
    state: 'PENDING',
    version: 0,
    customerEmail: 'ana@example.com',
    lines: [{ sku: 'sku-1', quantity: 2 }],
    amountMinor: 1250,
    currency: 'EUR',
    createdAt: NOW.toISOString(),
    updatedAt: NOW.toISOString(),
    ...overrides,
  };
}

/** A FIFO record of a capture of order-1 for 12.50 EUR. */
function captureRecord(messageId = 'm-1'): SQSRecord {
  const payload = { orderId: 'order-1', paymentId: 'pay-1', amountMinor: 1250, currency: 'EUR' };
  const record = jobRecord({ type: 'payment.capture', payload, messageId });
  const body = JSON.stringify(
    makeEnvelope('payment.capture', payload, {
      idempotencyKey: paymentCaptureKey('pay-1'),
      correlationId: `corr-${messageId}`,
      now: NOW,
    }),
  );
  return {
    ...record,
    body,
    attributes: { ...record.attributes, MessageGroupId: 'order-1', SequenceNumber: '1' },
  };
}

/** The claim's failure when the order's guard failed on `order` (it holds no record). */
const orderCheckFailed = (order: Order): ConditionalCheckFailedException =>
  new ConditionalCheckFailedException({
    message: 'The conditional request failed',
    $metadata: {},
    Item: marshall(order),
  });

interface HandlerFixture {
  readonly handler: ReturnType<typeof createJobHandler>;
  readonly persistence: TransactionalDynamoDBPersistenceLayer;
  readonly provider: jest.Mocked<PaymentProvider>;
  readonly outcomes: () => string[];
}

function handlerFixture(): HandlerFixture {
  const client = new DynamoDBClient({ region: 'eu-west-1' });
  // As the job's setup builds it: the record on the order.
  const persistence = new TransactionalDynamoDBPersistenceLayer({
    tableName: ENV.IDEMPOTENCY_TABLE,
    awsSdkV3Client: client,
    guardedItemRecordAttr: GUARDED_ITEM_RECORD_ATTR,
  });
  const provider = { capture: jest.fn().mockResolvedValue({ chargeId: 'ch_1', replayed: false }) };
  const metrics = new Metrics({ namespace: 'tenang', serviceName: SERVICE_NAME });
  jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
  const addMetric = jest.spyOn(metrics, 'addMetric');
  const handler = createJobHandler(paymentCapture, {
    jobType: JOB_TYPE,
    queueUrl: ENV.QUEUE_URL,
    dlqUrl: ENV.DLQ_URL,
    sqs: new SQSClient({ region: 'eu-west-1' }),
    dynamodb: client,
    state: { orders: new DynamoDbOrderStore(client, ENV.ORDERS_TABLE, () => NOW), persistence, provider },
    logger: new Logger({ serviceName: SERVICE_NAME, logLevel: 'SILENT' }),
    metrics,
    clock: () => NOW,
    random: () => 0,
  });
  const outcomes = new Set<string>([
    METRIC.jobSucceeded,
    METRIC.duplicateIgnored,
    METRIC.jobRetried,
    METRIC.jobFailedPermanently,
    METRIC.jobBug,
    METRIC.jobDeferred,
  ]);
  return {
    handler,
    persistence,
    provider,
    outcomes: () => addMetric.mock.calls.map(([name]) => name).filter((name) => outcomes.has(name)),
  };
}

describe('Job: payment.capture (createJobHandler)', () => {
  beforeEach(() => {
    ddbMock.reset();
    docMock.reset();
    sqsMock.reset();
    ddbMock.on(PutItemCommand).resolves({});
    ddbMock.on(UpdateItemCommand).resolves({});
    ddbMock.on(DeleteItemCommand).resolves({});
    docMock.on(TransactWriteCommand).resolves({});
    docMock.on(UpdateCommand).resolves({});
    sqsMock.on(SendMessageCommand).resolves({ MessageId: 'dead' });
    sqsMock.on(ChangeMessageVisibilityCommand).resolves({});
  });

  afterEach(() => {
    jest.restoreAllMocks();
  });

  it('when the order is PENDING for the job’s sum, it claims on the order with its guard, charges once and completes with PAID on the order: two UpdateItems, no transaction', async () => {
    // Prepare
    const { handler, provider, outcomes, persistence } = handlerFixture();

    // Act
    const response = await handler(sqsEvent(captureRecord()), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(outcomes()).toEqual([METRIC.jobSucceeded]);
    expect(provider.capture).toHaveBeenCalledTimes(1);
    const [claim, completion] = docMock.commandCalls(UpdateCommand).map((c) => c.args[0].input);
    expect(claim).toMatchObject({
      TableName: ENV.ORDERS_TABLE,
      Key: { orderId: 'order-1' },
      UpdateExpression: 'SET #idem = :idem_record',
      ExpressionAttributeNames: {
        '#idem': 'idempotency',
        '#g0': 'state',
        '#g1': 'amountMinor',
        '#g2': 'currency',
      },
      ExpressionAttributeValues: {
        ':g0': 'PENDING',
        ':g1': 1250,
        ':g2': 'EUR',
        ':idem_record': expect.objectContaining({ status: 'INPROGRESS' }) as unknown,
      },
    });
    expect(claim?.ConditionExpression).toMatch(
      /^attribute_exists\(#idem_item_key\) AND \(#g0 = :g0 AND #g1 = :g1 AND #g2 = :g2\) AND /,
    );
    expect(completion).toMatchObject({
      TableName: ENV.ORDERS_TABLE,
      Key: { orderId: 'order-1' },
      ConditionExpression:
        '(#w0 = :w0) AND #idem.#idem_claim = :idem_claim AND #idem.#idem_status = :idem_inprogress',
      ExpressionAttributeNames: expect.objectContaining({ '#w0': 'state' }) as unknown,
      ExpressionAttributeValues: expect.objectContaining({
        ':w0': 'PENDING',
        ':w1': 'PAID',
        ':idem_record': expect.objectContaining({ status: 'COMPLETED' }) as unknown,
      }) as unknown,
    });
    expect(Object.values(completion?.ExpressionAttributeValues ?? {})).toContain('ch_1');
    expect(completion?.UpdateExpression).toMatch(/^SET #w0 = :w1, .*, #idem = :idem_record$/);
    expect(docMock.calls()).toHaveLength(2);
    expect(ddbMock.calls()).toHaveLength(0);
    expect(persistence.stagedCount).toBe(0);
  });

  it.each(['PAID', 'RESERVED'] as const)(
    'when the claim finds the order %s, it is duplicate_ignored with one call and no provider call',
    async (state) => {
      // Prepare
      const { handler, provider, outcomes, persistence } = handlerFixture();
      docMock.on(UpdateCommand).rejectsOnce(orderCheckFailed(storedOrder({ state, version: 1 })));

      // Act
      const response = await handler(sqsEvent(captureRecord()), lambdaContext());

      // Assess
      expect(response.batchItemFailures).toEqual([]);
      expect(outcomes()).toEqual([METRIC.duplicateIgnored]);
      expect(provider.capture).not.toHaveBeenCalled();
      expect(docMock.calls()).toHaveLength(1);
      expect(ddbMock.calls()).toHaveLength(0);
      expect(sqsMock).toHaveReceivedCommandTimes(SendMessageCommand, 0);
      expect(persistence.stagedCount).toBe(0);
    },
  );

  it.each([
    { order: storedOrder({ state: 'CANCELLED', version: 1 }), errorClass: 'IllegalTransitionError' },
    { order: storedOrder({ amountMinor: 999 }), errorClass: 'PaymentMismatchError' },
  ])(
    'when the claim finds the order failing the guard, it dead-letters the job as $errorClass without charging',
    async ({ order, errorClass }) => {
      // Prepare
      const { handler, provider, outcomes } = handlerFixture();
      docMock.on(UpdateCommand).rejectsOnce(orderCheckFailed(order));

      // Act
      const response = await handler(sqsEvent(captureRecord()), lambdaContext());

      // Assess
      expect(response.batchItemFailures).toEqual([]);
      expect(outcomes()).toEqual([METRIC.jobFailedPermanently]);
      expect(provider.capture).not.toHaveBeenCalled();
      const dead = sqsMock.commandCalls(SendMessageCommand)[0]?.args[0].input;
      expect(dead?.QueueUrl).toBe(ENV.DLQ_URL);
      expect(dead?.MessageAttributes?.[DLQ_ATTRIBUTE.errorClass]?.StringValue).toBe(errorClass);
      expect(docMock).toHaveReceivedCommandTimes(GetCommand, 0);
    },
  );

  it('when another payment of the order holds it (a live INPROGRESS record of another key), the job waits for that claim’s in-progress expiry without charging', async () => {
    // Prepare
    const { handler, provider, outcomes } = handlerFixture();
    const theirs = {
      id: 'payment.capture#another-payment',
      status: 'INPROGRESS',
      expiration: Math.floor(NOW.getTime() / 1000) + 86_400,
      in_progress_expiration: NOW.getTime() + 7_000,
      claim_token: 'theirs',
    };
    docMock.on(UpdateCommand).rejectsOnce(
      new ConditionalCheckFailedException({
        message: 'The conditional request failed',
        $metadata: {},
        Item: marshall({ ...storedOrder(), [GUARDED_ITEM_RECORD_ATTR]: theirs }),
      }),
    );

    // Act
    const response = await handler(sqsEvent(captureRecord()), lambdaContext());

    // Assess: held for the other claim's remaining 7 s, not retried at once or dead-lettered.
    expect(response.batchItemFailures).toHaveLength(1);
    expect(outcomes()).toEqual([METRIC.jobDeferred]);
    expect(provider.capture).not.toHaveBeenCalled();
    expect(sqsMock).toHaveReceivedCommandWith(ChangeMessageVisibilityCommand, { VisibilityTimeout: 7 });
    expect(sqsMock).toHaveReceivedCommandTimes(SendMessageCommand, 0);
    expect(docMock.calls()).toHaveLength(1);
  });

  it('when the job was claimed without its guard checked (a bug), it charges nothing and fails loudly', async () => {
    // Prepare
    const { handler, provider, outcomes, persistence } = handlerFixture();
    jest.spyOn(persistence, 'preconditionHeld').mockReturnValue(false);

    // Act
    const response = await handler(sqsEvent(captureRecord()), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toHaveLength(1);
    expect(outcomes()).toEqual([METRIC.jobBug]);
    expect(provider.capture).not.toHaveBeenCalled();
    // The claim, then its release: the record removed from the order.
    expect(docMock.commandCalls(UpdateCommand).map((c) => c.args[0].input.UpdateExpression)).toEqual([
      'SET #idem = :idem_record',
      'REMOVE #idem',
    ]);
    expect(ddbMock).toHaveReceivedCommandTimes(DeleteItemCommand, 0);
  });
});
