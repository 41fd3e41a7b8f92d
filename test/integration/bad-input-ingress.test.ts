/**
 * The bad-input corpus (test/fixtures/bad-input/http-requests.ts) through the ingress against
 * moto (R1): a rejected request answers 400 (413, 404) with a JSON body naming the problem and
 * changes nothing — no message enqueued, no order, no dedup record; an accepted one is answered
 * like any request and its odd values are stored verbatim, or not at all.
 */
import { CreateTableCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type * as IngressModule from '../../examples/reference/functions/ingress';
import { DynamoDbDedupStore } from '../../lib/adapters/aws/dynamodb-dedup-store';
import { DynamoDbOrderStore } from '../../examples/reference/domain/dynamodb-order-store';
import { stageConfig } from '../../lib/adapters/lambda-env';
import { jobTypeByName, TABLE_KEYS, type ResolvedJobType } from '../../lib/config';
import { REFERENCE_TABLE_KEYS } from '../../examples/reference/domain/tables';
import { parseReferenceEnvelope } from '../../examples/reference/domain/payloads';
import type { Order } from '../../examples/reference/domain/order';
import { HTTP_REQUEST_CASES, type HttpRequestCase, type RequestIds } from '../fixtures/bad-input';
import { dynamoClient, sqsClient, uniqueName } from '../helpers/aws';
import { httpApiEvent, responseJson } from '../helpers/http-events';
import { captureLogs } from '../helpers/log-capture';
import { lambdaContext } from '../helpers/sqs-events';

jest.setTimeout(60_000);

const STAGE = 'itest';
const CONTEXT = lambdaContext(9_000, 'ingress-bad-input-test');

let ingress: typeof IngressModule;
let dynamo: DynamoDBClient;
let doc: DynamoDBDocumentClient;
let sqs: SQSClient;
let jobType: ResolvedJobType;
let ordersTable: string;
let dedupTable: string;
/** The payments queue of the running test. */
let queueUrl: string | undefined;

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
  return name;
}

beforeAll(async () => {
  dynamo = dynamoClient();
  doc = DynamoDBDocumentClient.from(dynamo);
  sqs = sqsClient();
  ordersTable = await createTable('bad-http-orders', REFERENCE_TABLE_KEYS.orders.partitionKey);
  dedupTable = await createTable('bad-http-dedup', TABLE_KEYS.dedup.partitionKey);
  jobType = jobTypeByName(stageConfig(STAGE, process.env.AWS_REGION), 'payment.capture');
  // The module's scope reads the environment, as in Lambda; the tests build their own handlers.
  const saved = { ...process.env };
  Object.assign(process.env, {
    TENANG_STAGE: STAGE,
    ORDERS_TABLE: ordersTable,
    DEDUP_TABLE: dedupTable,
    PAYMENT_QUEUE_URL: 'http://localhost/unused.fifo',
    DEGRADE_FLAG: `/tenang/${STAGE}/flags/degrade`,
  });
  try {
    ingress = await import('../../examples/reference/functions/ingress');
  } finally {
    process.env = saved;
  }
});

beforeEach(async () => {
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({
      QueueName: `${uniqueName('bad-http-pay')}.fifo`,
      Attributes: { FifoQueue: 'true', VisibilityTimeout: '30' },
    }),
  );
  queueUrl = QueueUrl;
});

afterEach(async () => {
  jest.restoreAllMocks();
  if (queueUrl !== undefined)
    await sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl })).catch(() => undefined);
  queueUrl = undefined;
});

afterAll(async () => {
  for (const table of [ordersTable, dedupTable]) {
    if (table !== undefined)
      await dynamo.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
  }
  dynamo?.destroy();
  sqs?.destroy();
});

function required(url: string | undefined): string {
  if (url === undefined) throw new Error('the queue was not created (see beforeEach)');
  return url;
}

/** An ingress over the moto tables and this test's queue; payments are critical, so the flag is never read. */
function newIngress(): ReturnType<typeof IngressModule.createHandler> {
  const metrics = new Metrics({ namespace: 'tenang', serviceName: ingress.SERVICE_NAME });
  jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
  return ingress.createHandler({
    paymentJobType: jobType,
    paymentQueueUrl: required(queueUrl),
    sqs,
    orders: new DynamoDbOrderStore(dynamo, ordersTable),
    dedup: new DynamoDbDedupStore(dynamo, dedupTable),
    degradeFlag: { isDegraded: () => Promise.resolve(false) },
    logger: new Logger({ serviceName: ingress.SERVICE_NAME, logLevel: 'INFO' }),
    metrics,
  });
}

/** Ids of one request, with its PENDING order of 12.50 EUR in the table. */
async function requestIds(): Promise<RequestIds> {
  const now = new Date().toISOString();
  const order: Order = {
    orderId: uniqueName('order'),
    state: 'PENDING',
    version: 0,
    customerEmail: 'ana@example.com',
    lines: [{ sku: 'sku-1', quantity: 2 }],
    amountMinor: 1250,
    currency: 'EUR',
    createdAt: now,
    updatedAt: now,
  };
  if (!(await new DynamoDbOrderStore(dynamo, ordersTable).create(order))) throw new Error('order exists');
  return {
    orderId: order.orderId,
    paymentId: uniqueName('pay'),
    idempotencyKey: uniqueName('key'),
    requestId: uniqueName('req'),
  };
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

/** The bodies of every message in the queue (received and left in flight). */
async function enqueued(): Promise<string[]> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: required(queueUrl),
      AttributeNames: ['ApproximateNumberOfMessages'],
    }),
  );
  if (Attributes?.ApproximateNumberOfMessages === '0') return [];
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({ QueueUrl: required(queueUrl), MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
  );
  return Messages.map((m) => m.Body ?? '');
}

describe('Function: ingress handler with bad input (integration)', () => {
  it('when the corpus is read, every name is unique', () => {
    // Assess
    const names = HTTP_REQUEST_CASES.map((c) => c.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it.each(HTTP_REQUEST_CASES)(
    'when the request is $name, it answers $expect.status ($expect.outcome) with a JSON body and changes nothing else',
    async (c: HttpRequestCase) => {
      // Prepare
      const ids = await requestIds();
      const request = c.request(ids);
      const ordersBefore = await scanTable(ordersTable, REFERENCE_TABLE_KEYS.orders.partitionKey);
      const dedupBefore = await scanTable(dedupTable, TABLE_KEYS.dedup.partitionKey);
      const handle = newIngress();

      // Act
      const { result: response, logs } = await captureLogs(() =>
        handle(
          httpApiEvent(request.method, request.path, {
            body: request.body,
            headers: request.headers,
            base64: request.base64,
            pathParameters: request.pathParameters,
            requestId: ids.requestId,
          }),
          CONTEXT,
        ),
      );

      // Assess
      expect(response.statusCode).toBe(c.expect.status);
      expect(response.headers?.['content-type']).toBe('application/json');
      const answer = responseJson(response);
      expect(logs.filter((l) => l.level === 'ERROR')).toEqual([]);
      const ordersAfter = await scanTable(ordersTable, REFERENCE_TABLE_KEYS.orders.partitionKey);
      const dedupAfter = await scanTable(dedupTable, TABLE_KEYS.dedup.partitionKey);
      const messages = await enqueued();

      if (c.expect.outcome === 'rejected') {
        expect(answer.error).toEqual(
          typeof c.expect.error === 'string' ? c.expect.error : expect.stringMatching(c.expect.error),
        );
        if (c.expect.problems === undefined) {
          expect(answer).not.toHaveProperty('problems');
        } else {
          const problems = answer.problems as string[];
          for (const problem of c.expect.problems)
            expect(problems).toContainEqual(expect.stringMatching(problem));
        }
        expect(changedKeys(ordersBefore, ordersAfter)).toEqual([]);
        expect(changedKeys(dedupBefore, dedupAfter)).toEqual([]);
        expect(messages).toEqual([]);
        return;
      }

      if (c.expect.status === 201) {
        expect(changedKeys(ordersBefore, ordersAfter)).toEqual([answer.orderId]);
        expect(JSON.parse(ordersAfter.get(String(answer.orderId)) ?? '{}')).toMatchObject({
          state: 'PENDING',
          ...c.expect.stored,
        });
        expect(changedKeys(dedupBefore, dedupAfter)).toEqual([]);
        expect(messages).toEqual([]);
        return;
      }

      expect(answer).toMatchObject({ orderId: ids.orderId, paymentId: ids.paymentId, duplicate: false });
      expect(changedKeys(ordersBefore, ordersAfter)).toEqual([]);
      expect(changedKeys(dedupBefore, dedupAfter)).toEqual([`payment.capture:${String(answer.jobId)}`]);
      expect(messages).toHaveLength(1);
      const envelope = parseReferenceEnvelope(messages[0] ?? '', 'payment.capture');
      expect(envelope).toMatchObject(c.expect.enqueued?.(ids) ?? {});
      expect(logs).toContainEqual(
        expect.objectContaining({ message: 'payment job enqueued', correlationId: envelope.correlationId }),
      );
      // The raw Idempotency-Key is hashed: it is stored nowhere, sent nowhere.
      const rawKey = Object.entries(request.headers ?? {}).find(
        ([k]) => k.toLowerCase() === 'idempotency-key',
      )?.[1];
      expect(rawKey).toBeDefined();
      expect([...dedupAfter.values(), ...messages].join('\n')).not.toContain(rawKey);
    },
  );
});
