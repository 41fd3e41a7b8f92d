/**
 * The ingress against moto: the deployed module (its scope reads the environment) over real
 * DynamoDB tables and a real FIFO queue, then the payment consumer on what it enqueued.
 */
import { CreateTableCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type * as IngressModule from '../../examples/reference/functions/ingress';
import { paymentCapture } from '../../examples/reference/jobs/payment-capture';
import { createJobHandler } from '../../lib/adapters/define-job';
import { DynamoDbDedupStore } from '../../lib/adapters/aws/dynamodb-dedup-store';
import { DynamoDbOrderStore } from '../../examples/reference/domain/dynamodb-order-store';
import { stageConfig } from '../../lib/adapters/lambda-env';
import { jobTypeByName, TABLE_KEYS } from '../../lib/config';
import { REFERENCE_TABLE_KEYS } from '../../examples/reference/domain/tables';
import { parseReferenceEnvelope } from '../../examples/reference/domain/payloads';
import { paymentCaptureKey } from '../../examples/reference/domain/payment';
import { startFakeProvider, type FakeProvider } from '../../lib/local/fake-provider';
import { dynamoClient, sqsClient, uniqueName } from '../helpers/aws';
import { httpApiEvent, responseJson } from '../helpers/http-events';
import { lambdaContext, receiveSqsEvent, receiveSqsEventOf, settleBatch } from '../helpers/sqs-events';

jest.setTimeout(60_000);

const STAGE = 'itest';

let ingress: typeof IngressModule;
let dynamo: DynamoDBClient;
let sqs: SQSClient;
let provider: FakeProvider;
let ordersTable: string;
let dedupTable: string;
let idempotencyTable: string;
let queueUrl: string;
let dlqUrl: string;

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

async function createFifoQueue(name: string): Promise<string> {
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${name}.fifo`,
      Attributes: { FifoQueue: 'true', VisibilityTimeout: '30' },
    }),
  );
  if (QueueUrl === undefined) throw new Error(`queue ${name} was not created`);
  return QueueUrl;
}

beforeAll(async () => {
  dynamo = dynamoClient();
  sqs = sqsClient();
  provider = await startFakeProvider({ kind: 'charges' });
  ordersTable = uniqueName('orders');
  dedupTable = uniqueName('dedup');
  idempotencyTable = uniqueName('idempotency');
  await createTable(ordersTable, REFERENCE_TABLE_KEYS.orders.partitionKey);
  await createTable(dedupTable, TABLE_KEYS.dedup.partitionKey);
  await createTable(idempotencyTable, TABLE_KEYS.idempotency.partitionKey);
  queueUrl = await createFifoQueue(uniqueName('pay'));
  dlqUrl = await createFifoQueue(uniqueName('pay-dlq'));
  const saved = { ...process.env };
  // The ingress's environment in lib/infra/pipeline-stack.ts; the flag does not exist (not degraded).
  Object.assign(process.env, {
    TENANG_STAGE: STAGE,
    ORDERS_TABLE: ordersTable,
    DEDUP_TABLE: dedupTable,
    PAYMENT_QUEUE_URL: queueUrl,
    DEGRADE_FLAG: `/tenang/${uniqueName('stage')}/flags/degrade`,
    POWERTOOLS_LOG_LEVEL: 'SILENT',
    POWERTOOLS_METRICS_DISABLED: 'true',
  });
  try {
    ingress = await import('../../examples/reference/functions/ingress');
  } finally {
    process.env = saved;
  }
});

afterAll(async () => {
  await provider?.close();
  for (const table of [ordersTable, dedupTable, idempotencyTable]) {
    if (table !== undefined)
      await dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
  }
  for (const url of [queueUrl, dlqUrl]) {
    if (url !== undefined) await sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch(() => undefined);
  }
  dynamo?.destroy();
  sqs?.destroy();
});

const CONTEXT = lambdaContext(9_000, 'ingress-test');

async function createOrder(): Promise<string> {
  const response = await ingress.handler(
    httpApiEvent('POST', '/orders', {
      body: JSON.stringify({
        customerEmail: 'ana@example.com',
        lines: [{ sku: 'sku-1', quantity: 2 }],
        amountMinor: 1250,
        currency: 'EUR',
      }),
    }),
    CONTEXT,
  );
  expect(response.statusCode).toBe(201);
  return responseJson(response).orderId as string;
}

function pay(
  orderId: string,
  key: string | undefined,
  body?: string,
): Promise<{ status?: number; json: Record<string, unknown> }> {
  return ingress
    .handler(
      httpApiEvent('POST', `/orders/${orderId}/payments`, {
        pathParameters: { id: orderId },
        headers: key === undefined ? {} : { 'Idempotency-Key': key },
        body: body ?? JSON.stringify({ paymentId: `pay-${orderId}`, amountMinor: 1250, currency: 'EUR' }),
      }),
      CONTEXT,
    )
    .then((r) => ({ status: r.statusCode, json: responseJson(r) }));
}

/** Every message now in the queue (received, then left in flight). */
async function drain(): Promise<{ body: string; group?: string; dedupId?: string; receipt: string }[]> {
  const messages: { body: string; group?: string; dedupId?: string; receipt: string }[] = [];
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        MessageSystemAttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) return messages;
    messages.push(
      ...Messages.map((m) => ({
        body: m.Body ?? '',
        group: m.Attributes?.MessageGroupId,
        dedupId: m.Attributes?.MessageDeduplicationId,
        receipt: m.ReceiptHandle ?? '',
      })),
    );
  }
}

describe('Function: ingress handler (integration)', () => {
  it('when a payment is requested twice with the same Idempotency-Key, one message reaches the queue and both answers carry its job id', async () => {
    // Prepare
    const orderId = await createOrder();
    const key = uniqueName('click');

    // Act
    const first = await pay(orderId, key);
    const second = await pay(orderId, key);

    // Assess
    expect([first.status, second.status]).toEqual([202, 202]);
    expect(second.json.jobId).toBe(first.json.jobId);
    expect([first.json.duplicate, second.json.duplicate]).toEqual([false, true]);
    const messages = await drain();
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ group: orderId, dedupId: first.json.jobId });
    expect(parseReferenceEnvelope(messages[0]?.body ?? '', 'payment.capture')).toMatchObject({
      idempotencyKey: paymentCaptureKey(`pay-${orderId}`),
      payload: { orderId, paymentId: `pay-${orderId}`, amountMinor: 1250, currency: 'EUR' },
    });
    for (const m of messages)
      await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.receipt }));
  });

  it('when the repeat comes after SQS has forgotten the first message (deleted, or past 5 minutes), still nothing is sent', async () => {
    // Prepare: moto, like SQS after its 5-minute window, no longer dedups a deleted message.
    const orderId = await createOrder();
    const key = uniqueName('webhook');
    const first = await pay(orderId, key);
    const [sent] = await drain();
    await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: sent?.receipt }));

    // Act
    const resent = await pay(orderId, key);

    // Assess
    expect(resent.status).toBe(202);
    expect(resent.json).toMatchObject({ jobId: first.json.jobId, duplicate: true });
    expect(await drain()).toEqual([]);
  });

  it('when a request with the same Idempotency-Key is still in flight, it answers 409 with Retry-After and sends nothing', async () => {
    // Prepare: another request claimed the key in the real dedup table and has not sent yet.
    const orderId = await createOrder();
    const key = uniqueName('inflight');
    const jobId = ingress.paymentJobId(orderId, key);
    await new DynamoDbDedupStore(dynamo, dedupTable).claim(
      `payment.capture:${jobId}`,
      ingress.IN_FLIGHT_CLAIM_SECONDS,
    );

    // Act
    const response = await ingress.handler(
      httpApiEvent('POST', `/orders/${orderId}/payments`, {
        pathParameters: { id: orderId },
        headers: { 'Idempotency-Key': key },
        body: JSON.stringify({ paymentId: `pay-${orderId}`, amountMinor: 1250, currency: 'EUR' }),
      }),
      CONTEXT,
    );

    // Assess
    expect(response.statusCode).toBe(409);
    expect(response.headers?.['retry-after']).toBe(String(ingress.IN_FLIGHT_CLAIM_SECONDS));
    expect(responseJson(response)).toMatchObject({ jobId, orderId });
    expect(await drain()).toEqual([]);
  });

  it('when the Idempotency-Key header is missing, it answers 400 and sends nothing', async () => {
    // Prepare
    const orderId = await createOrder();

    // Act
    const response = await pay(orderId, undefined);

    // Assess
    expect(response.status).toBe(400);
    expect(response.json).toEqual({
      error: 'Idempotency-Key header is required',
      problems: ['headers.idempotency-key: is required'],
    });
    expect(await drain()).toEqual([]);
  });

  it('when the body is not JSON, it answers 400 with the problem and sends nothing', async () => {
    // Prepare
    const orderId = await createOrder();

    // Act
    const response = await pay(orderId, uniqueName('key'), '{"paymentId": "pay-1", amountMinor');

    // Assess
    expect(response.status).toBe(400);
    expect(response.json.error).toBe('invalid request body');
    expect(response.json.problems).toEqual([expect.stringMatching(/^body: is not JSON/)]);
    expect(await drain()).toEqual([]);
  });

  it('when the order does not exist, it answers 404', async () => {
    // Act
    const response = await pay(uniqueName('missing'), uniqueName('key'));

    // Assess
    expect(response.status).toBe(404);
  });

  it('when the payment consumer runs on what the ingress enqueued, the order is PAID once', async () => {
    // Prepare
    const orderId = await createOrder();
    const key = uniqueName('checkout');
    await pay(orderId, key);
    await pay(orderId, key);
    const client = dynamoClient();
    const metrics = new Metrics({ namespace: 'tenang', serviceName: 'payment-consumer' });
    jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
    // Built by the job's own setup from its declared tables and provider, as deployed.
    const handler = createJobHandler(paymentCapture, {
      jobType: jobTypeByName(stageConfig(STAGE, process.env.AWS_REGION), 'payment.capture'),
      queueUrl,
      dlqUrl,
      sqs,
      dynamodb: client,
      tables: { orders: ordersTable, idempotency: idempotencyTable },
      providerUrls: { payment: provider.url },
      logger: new Logger({ serviceName: 'payment-consumer', logLevel: 'SILENT' }),
      metrics,
    });
    const event = await receiveSqsEventOf(sqs, queueUrl, 1);

    // Act
    const response = await handler(event, lambdaContext(20_000));
    await settleBatch(sqs, queueUrl, event, response);

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(await new DynamoDbOrderStore(dynamo, ordersTable).get(orderId)).toMatchObject({
      state: 'PAID',
      version: 1,
      paymentId: `pay-${orderId}`,
    });
    expect(
      provider.ledger().filter((e) => e.idempotencyKey === paymentCaptureKey(`pay-${orderId}`)),
    ).toHaveLength(1);
    expect((await receiveSqsEvent(sqs, queueUrl, { waitTimeSeconds: 1 })).Records).toEqual([]);
    client.destroy();
    jest.restoreAllMocks();
  });
});
