import { DynamoDBServiceException } from '@aws-sdk/client-dynamodb';
import {
  SendMessageCommand,
  SQSClient,
  SQSServiceException,
  type SendMessageCommandInput,
} from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import type * as IngressModule from '../../../examples/reference/functions/ingress';
import { InMemoryDedupStore } from '../../../harness/fakes/memory-dedup-store';
import { InMemoryOrderStore } from '../../../harness/fakes/memory-order-store';
import { jobTypeByName, METRIC, type Criticality, type ResolvedJobType } from '../../../lib/config';
import { stageConfig } from '../../../lib/adapters/lambda-env';
import { parseReferenceEnvelope } from '../../../examples/reference/domain/payloads';
import type { Order } from '../../../examples/reference/domain/order';
import { httpApiEvent, responseJson } from '../../helpers/http-events';
import { manualClock } from '../../helpers/manual-clock';

const NOW = new Date('2030-06-01T12:00:00.000Z');
const QUEUE_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-unit-payment-capture.fifo';
const ENV = {
  TENANG_STAGE: 'unit',
  AWS_REGION: 'eu-west-1',
  ORDERS_TABLE: 'tenang-unit-orders',
  DEDUP_TABLE: 'tenang-unit-dedup',
  PAYMENT_QUEUE_URL: QUEUE_URL,
  DEGRADE_FLAG: '/tenang/unit/flags/degrade',
};

const sqsMock = mockClient(SQSClient);
let ingress: typeof IngressModule;

beforeAll(async () => {
  const saved = { ...process.env };
  Object.assign(process.env, ENV);
  try {
    ingress = await import('../../../examples/reference/functions/ingress');
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

interface Harness {
  readonly handle: (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyStructuredResultV2>;
  readonly orders: InMemoryOrderStore;
  readonly dedup: InMemoryDedupStore;
  readonly flagReads: () => number;
  readonly metrics: Metrics;
}

function harness(
  opts: {
    criticality?: Criticality;
    queueKind?: 'fifo' | 'standard';
    degraded?: boolean | Error;
    logLevel?: 'SILENT' | 'INFO';
    clock?: () => Date;
  } = {},
): Harness {
  const clock = opts.clock ?? ((): Date => NOW);
  const base = jobTypeByName(stageConfig('unit', 'eu-west-1'), 'payment.capture');
  const jobType: ResolvedJobType = {
    ...base,
    criticality: opts.criticality ?? base.criticality,
    queue: opts.queueKind === 'standard' ? { kind: 'standard', retentionSeconds: 345_600 } : base.queue,
  };
  const orders = new InMemoryOrderStore(() => NOW);
  const dedup = new InMemoryDedupStore(clock);
  let reads = 0;
  const metrics = new Metrics({ namespace: 'tenang', serviceName: 'ingress' });
  jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
  jest.spyOn(metrics, 'addMetric');
  let ids = 0;
  const handle = ingress.createHandler({
    paymentJobType: jobType,
    paymentQueueUrl: QUEUE_URL,
    sqs: new SQSClient({ region: 'eu-west-1' }),
    orders,
    dedup,
    degradeFlag: {
      isDegraded: () => {
        reads += 1;
        const value = opts.degraded ?? false;
        return value instanceof Error ? Promise.reject(value) : Promise.resolve(value);
      },
    },
    logger: new Logger({ serviceName: 'ingress', logLevel: opts.logLevel ?? 'SILENT' }),
    metrics,
    clock,
    newId: () => `order-${(ids += 1)}`,
  });
  return { handle: (event) => handle(event), orders, dedup, flagReads: () => reads, metrics };
}

/** An event for `method path`; `/orders/{id}…` paths carry the id as a path parameter, like API Gateway. */
function httpEvent(
  method: string,
  path: string,
  opts: { body?: string; headers?: Record<string, string>; base64?: boolean } = {},
): APIGatewayProxyEventV2 {
  const id = /^\/orders\/([^/]+)/.exec(path)?.[1];
  return httpApiEvent(method, path, { ...opts, ...(id === undefined ? {} : { pathParameters: { id } }) });
}

const ORDER_BODY = {
  customerEmail: 'ana@example.com',
  lines: [{ sku: 'sku-1', quantity: 2 }],
  amountMinor: 1250,
  currency: 'EUR',
};

function storedOrder(overrides: Partial<Order> = {}): Order {
  return {
    orderId: 'order-1',
    state: 'PENDING',
    version: 0,
    ...ORDER_BODY,
    createdAt: NOW.toISOString(),
    updatedAt: NOW.toISOString(),
    ...overrides,
  };
}

const paymentBody = (overrides: Record<string, unknown> = {}): string =>
  JSON.stringify({ paymentId: 'pay-1', amountMinor: 1250, currency: 'EUR', ...overrides });

function pay(key: string | undefined, body = paymentBody(), orderId = 'order-1'): APIGatewayProxyEventV2 {
  return httpEvent('POST', `/orders/${orderId}/payments`, {
    body,
    headers: key === undefined ? {} : { 'idempotency-key': key },
  });
}

const bodyOf = responseJson;

const sent = (): SendMessageCommandInput[] =>
  sqsMock.commandCalls(SendMessageCommand).map((c) => c.args[0].input);

describe('Function: ingress handler', () => {
  describe('Route: POST /orders', () => {
    it('when the body is a valid order, it stores a PENDING order at version 0 and answers 201 with it', async () => {
      // Prepare
      const h = harness();

      // Act
      const response = await h.handle(httpEvent('POST', '/orders', { body: JSON.stringify(ORDER_BODY) }));

      // Assess
      const expected = storedOrder();
      expect(response.statusCode).toBe(201);
      expect(response.headers?.location).toBe('/orders/order-1');
      expect(bodyOf(response)).toEqual(expected);
      expect(h.orders.orders.get('order-1')).toEqual(expected);
    });

    it('when the body tries to set the id, state or version, they are not taken from it', async () => {
      // Prepare
      const h = harness();
      const body = JSON.stringify({
        ...ORDER_BODY,
        orderId: 'mine',
        state: 'PAID',
        version: 7,
        chargeId: 'ch_x',
      });

      // Act
      const response = await h.handle(httpEvent('POST', '/orders', { body }));

      // Assess
      expect(response.statusCode).toBe(201);
      expect(h.orders.orders.get('order-1')).toEqual(storedOrder());
    });

    it('when the body is base64-encoded, it decodes it first', async () => {
      // Prepare
      const h = harness();

      // Act
      const response = await h.handle(
        httpEvent('POST', '/orders', { body: JSON.stringify(ORDER_BODY), base64: true }),
      );

      // Assess
      expect(response.statusCode).toBe(201);
    });

    it('when fields are invalid, it answers 400 naming every bad field and stores nothing', async () => {
      // Prepare
      const h = harness();
      const body = JSON.stringify({
        customerEmail: 'not-an-email',
        lines: [],
        amountMinor: -1,
        currency: 'euro',
      });

      // Act
      const response = await h.handle(httpEvent('POST', '/orders', { body }));

      // Assess
      expect(response.statusCode).toBe(400);
      const problems = bodyOf(response).problems as string[];
      expect(problems.map((p) => p.split(':')[0])).toEqual([
        'body.customerEmail',
        'body.lines',
        'body.amountMinor',
        'body.currency',
      ]);
      expect(bodyOf(response).error).toBe('invalid order');
      expect(h.orders.orders.size).toBe(0);
    });

    it('when the body is not JSON, it answers 400 with the problem', async () => {
      // Prepare
      const h = harness();

      // Act
      const response = await h.handle(httpEvent('POST', '/orders', { body: '{"customerEmail":' }));

      // Assess
      expect(response.statusCode).toBe(400);
      expect(bodyOf(response)).toEqual({
        error: 'invalid request body',
        problems: [expect.stringMatching(/^body: is not JSON/) as unknown],
      });
    });

    it('when the body is missing, it answers 400', async () => {
      // Prepare
      const h = harness();

      // Act
      const response = await h.handle(httpEvent('POST', '/orders'));

      // Assess
      expect(response.statusCode).toBe(400);
      expect(bodyOf(response).problems).toEqual(['body: is required']);
    });

    it('when it logs, it never writes the request body (the customer e-mail)', async () => {
      // Prepare
      const lines: string[] = [];
      jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
        lines.push(chunk.toString());
        return true;
      });
      const h = harness({ logLevel: 'INFO' });

      // Act
      await h.handle(httpEvent('POST', '/orders', { body: JSON.stringify(ORDER_BODY) }));

      // Assess
      const output = lines.join('');
      expect(output).toContain('order created');
      expect(output).not.toContain('ana@example.com');
    });
  });

  describe('Route: POST /orders/{id}/payments', () => {
    it('when the request is valid, it sends one payment.capture job to the FIFO queue (group = order, dedup id from the key) and answers 202', async () => {
      // Prepare
      const h = harness();
      await h.orders.create(storedOrder());
      const event = pay('key-1');
      event.headers['x-correlation-id'] = 'corr-42';

      // Act
      const response = await h.handle(event);

      // Assess
      const jobId = ingress.paymentJobId('order-1', 'key-1');
      expect(response.statusCode).toBe(202);
      expect(bodyOf(response)).toEqual({
        jobId,
        orderId: 'order-1',
        paymentId: 'pay-1',
        status: 'accepted',
        duplicate: false,
      });
      const [message] = sent();
      expect(sent()).toHaveLength(1);
      expect(message).toMatchObject({
        QueueUrl: QUEUE_URL,
        MessageGroupId: 'order-1',
        MessageDeduplicationId: jobId,
      });
      expect(message?.DelaySeconds).toBeUndefined();
      const envelope = parseReferenceEnvelope(message?.MessageBody ?? '', 'payment.capture');
      expect(envelope).toMatchObject({
        idempotencyKey: 'payment:pay-1:capture',
        correlationId: 'corr-42',
        payload: { orderId: 'order-1', paymentId: 'pay-1', amountMinor: 1250, currency: 'EUR' },
        enqueuedAt: NOW.toISOString(),
      });
    });

    it('when the same Idempotency-Key comes again, it answers 202 with the same job id and sends nothing', async () => {
      // Prepare
      const h = harness();
      await h.orders.create(storedOrder());
      const first = await h.handle(pay('key-1'));

      // Act
      const second = await h.handle(pay('key-1'));

      // Assess
      expect(second.statusCode).toBe(202);
      expect(bodyOf(second).jobId).toBe(bodyOf(first).jobId);
      expect(bodyOf(second).duplicate).toBe(true);
      expect(sent()).toHaveLength(1);
    });

    it('when the job is sent, it confirms the key as done for 24 h', async () => {
      // Prepare
      const h = harness();
      await h.orders.create(storedOrder());

      // Act
      const response = await h.handle(pay('key-1'));

      // Assess
      expect(response.statusCode).toBe(202);
      expect(h.dedup.claims.get(`payment.capture:${ingress.paymentJobId('order-1', 'key-1')}`)).toEqual({
        status: 'done',
        expiration: Math.floor(NOW.getTime() / 1000) + ingress.PRODUCER_DEDUP_TTL_SECONDS,
      });
    });

    it('when a request with the same Idempotency-Key is still in flight, it answers 409 with Retry-After and sends nothing', async () => {
      // Prepare: the first request claimed the key and has not sent yet (or died doing so).
      const h = harness();
      await h.orders.create(storedOrder());
      const jobId = ingress.paymentJobId('order-1', 'key-1');
      await h.dedup.claim(`payment.capture:${jobId}`, ingress.IN_FLIGHT_CLAIM_SECONDS);

      // Act
      const response = await h.handle(pay('key-1'));

      // Assess
      expect(response.statusCode).toBe(409);
      expect(response.headers).toMatchObject({
        'content-type': 'application/json',
        'retry-after': String(ingress.IN_FLIGHT_CLAIM_SECONDS),
      });
      expect(bodyOf(response)).toEqual({
        error: 'a request with this Idempotency-Key is in progress; retry later',
        jobId,
        orderId: 'order-1',
        retryAfterSeconds: ingress.IN_FLIGHT_CLAIM_SECONDS,
      });
      expect(sent()).toHaveLength(0);
    });

    it('when the request that claimed the key died before sending, a retry after its claim expires sends the job once', async () => {
      // Prepare: a request claimed the key, then its process stopped inside SendMessage.
      const clock = manualClock(NOW);
      const h = harness({ clock });
      await h.orders.create(storedOrder());
      sqsMock.on(SendMessageCommand).callsFakeOnce(() => new Promise(() => undefined));
      void h.handle(pay('key-1'));
      await new Promise((resolve) => setImmediate(resolve));

      // Act
      clock.advance(1_000);
      const early = await h.handle(pay('key-1'));
      clock.advance(ingress.IN_FLIGHT_CLAIM_SECONDS * 1000);
      const late = await h.handle(pay('key-1'));
      const repeat = await h.handle(pay('key-1'));

      // Assess
      expect([early.statusCode, late.statusCode, repeat.statusCode]).toEqual([409, 202, 202]);
      expect([bodyOf(late).duplicate, bodyOf(repeat).duplicate]).toEqual([false, true]);
      expect(bodyOf(late).jobId).toBe(ingress.paymentJobId('order-1', 'key-1'));
      // The first call never reached SQS; the one after expiry is the only delivery.
      expect(sent()).toHaveLength(2);
    });

    it('when confirming the key fails after the send, it still answers 202 and logs the failure', async () => {
      // Prepare
      const h = harness();
      await h.orders.create(storedOrder());
      jest.spyOn(h.dedup, 'confirm').mockRejectedValueOnce(new Error('DynamoDB unreachable'));
      const error = jest.spyOn(Logger.prototype, 'error');

      // Act
      const response = await h.handle(pay('key-1'));

      // Assess
      expect(response.statusCode).toBe(202);
      expect(bodyOf(response).duplicate).toBe(false);
      expect(sent()).toHaveLength(1);
      expect(error).toHaveBeenCalledWith(
        'dedup claim not confirmed: a repeat after the in-flight window will be sent again',
        expect.anything(),
      );
    });

    it('when another Idempotency-Key comes, it is another job', async () => {
      // Prepare
      const h = harness();
      await h.orders.create(storedOrder());
      const first = await h.handle(pay('key-1'));

      // Act
      const second = await h.handle(pay('key-2'));

      // Assess
      expect(bodyOf(second).jobId).not.toBe(bodyOf(first).jobId);
      expect(sent()).toHaveLength(2);
    });

    it('when the Idempotency-Key header is missing, it answers 400 and sends nothing', async () => {
      // Prepare
      const h = harness();
      await h.orders.create(storedOrder());

      // Act
      const response = await h.handle(pay(undefined));

      // Assess
      expect(response.statusCode).toBe(400);
      expect(bodyOf(response)).toEqual({
        error: 'Idempotency-Key header is required',
        problems: ['headers.idempotency-key: is required'],
      });
      expect(sent()).toHaveLength(0);
    });

    it('when the header is spelled in another case, it is found', async () => {
      // Prepare
      const h = harness();
      await h.orders.create(storedOrder());
      const event = pay(undefined);
      event.headers['Idempotency-Key'] = 'key-1';

      // Act
      const response = await h.handle(event);

      // Assess
      expect(response.statusCode).toBe(202);
    });

    it('when the Idempotency-Key holds spaces or control characters, it answers 400', async () => {
      // Prepare
      const h = harness();

      // Act
      const response = await h.handle(pay('key with spaces'));

      // Assess
      expect(response.statusCode).toBe(400);
      expect(bodyOf(response).problems).toEqual([
        'headers.idempotency-key: must be 1 to 255 visible ASCII characters',
      ]);
    });

    it('when the body and the path are invalid, it answers 400 naming each problem', async () => {
      // Prepare
      const h = harness();

      // Act
      const response = await h.handle(
        pay('key-1', JSON.stringify({ paymentId: 'has space', amountMinor: 0, currency: 'eur' }), 'bad%20id'),
      );

      // Assess
      expect(response.statusCode).toBe(400);
      expect((bodyOf(response).problems as string[]).map((p) => p.split(':')[0])).toEqual([
        'path.id',
        'body.paymentId',
        'body.amountMinor',
        'body.currency',
      ]);
      expect(sent()).toHaveLength(0);
    });

    it('when the body is not JSON, it answers 400 with the problem', async () => {
      // Prepare
      const h = harness();

      // Act
      const response = await h.handle(pay('key-1', 'paymentId=pay-1'));

      // Assess
      expect(response.statusCode).toBe(400);
      expect((bodyOf(response).problems as string[])[0]).toMatch(/^body: is not JSON/);
    });

    it('when the order does not exist, it answers 404 and claims nothing', async () => {
      // Prepare
      const h = harness();

      // Act
      const response = await h.handle(pay('key-1'));

      // Assess
      expect(response.statusCode).toBe(404);
      expect(h.dedup.claims.size).toBe(0);
    });

    it('when the amount or currency differ from the order, it answers 400 naming both', async () => {
      // Prepare
      const h = harness();
      await h.orders.create(storedOrder());

      // Act
      const response = await h.handle(pay('key-1', paymentBody({ amountMinor: 999, currency: 'USD' })));

      // Assess
      expect(response.statusCode).toBe(400);
      expect(bodyOf(response).problems).toEqual([
        "body.amountMinor: the order's amount is 1250",
        "body.currency: the order's currency is EUR",
      ]);
      expect(sent()).toHaveLength(0);
    });

    it('when SQS fails transiently, it gives the claim back and answers 503, so the retry is sent', async () => {
      // Prepare
      const h = harness();
      await h.orders.create(storedOrder());
      const throttled = Object.assign(new Error('slow down'), { name: 'RequestThrottled' });
      sqsMock.on(SendMessageCommand).rejectsOnce(throttled).resolves({ MessageId: 'm-2' });

      // Act
      const failed = await h.handle(pay('key-1'));
      const retried = await h.handle(pay('key-1'));

      // Assess
      expect(failed.statusCode).toBe(503);
      expect(failed.headers?.['retry-after']).toBe('1');
      expect(retried.statusCode).toBe(202);
      expect(bodyOf(retried).duplicate).toBe(false);
      expect(sqsMock).toHaveReceivedCommandTimes(SendMessageCommand, 2);
    });

    it('when the send is denied (a missing grant), it answers 503 "temporarily unavailable" with Retry-After, counts it, and gives the claim back', async () => {
      // Prepare
      const h = harness();
      await h.orders.create(storedOrder());
      const denied = new SQSServiceException({
        name: 'AccessDenied',
        $fault: 'client',
        $metadata: { httpStatusCode: 403 },
        message: `User: arn:aws:sts::123456789012:assumed-role/r/ingress is not authorized to perform: sqs:SendMessage on resource: arn:aws:sqs:eu-west-1:123456789012:tenang-unit-payment-capture.fifo because no identity-based policy allows the sqs:SendMessage action`,
      });
      sqsMock.on(SendMessageCommand).rejectsOnce(denied).resolves({ MessageId: 'm-2' });

      // Act
      const failed = await h.handle(pay('key-1'));
      const retried = await h.handle(pay('key-1'));

      // Assess: never a 400 (the client did nothing wrong) nor a 500.
      expect(failed.statusCode).toBe(503);
      expect(bodyOf(failed)).toEqual({ error: 'temporarily unavailable; retry later' });
      expect(failed.headers?.['retry-after']).toBe(String(ingress.PERMISSION_DENIED_RETRY_AFTER_SECONDS));
      expect(h.metrics.addMetric).toHaveBeenCalledWith(METRIC.permissionDenied, 'Count', 1);
      expect(retried.statusCode).toBe(202);
      expect(sqsMock).toHaveReceivedCommandTimes(SendMessageCommand, 2);
    });

    it('when the orders table read is denied, it answers 503, not 400 or 500, and sends nothing', async () => {
      // Prepare
      const h = harness();
      jest.spyOn(h.orders, 'get').mockRejectedValue(
        new DynamoDBServiceException({
          name: 'AccessDeniedException',
          $fault: 'client',
          $metadata: { httpStatusCode: 400 },
          message:
            'User: arn:aws:sts::123456789012:assumed-role/r/ingress is not authorized to perform: dynamodb:GetItem on resource: arn:aws:dynamodb:eu-west-1:123456789012:table/tenang-unit-orders because no identity-based policy allows the dynamodb:GetItem action',
        }),
      );

      // Act
      const response = await h.handle(pay('key-1'));

      // Assess
      expect(response.statusCode).toBe(503);
      expect(bodyOf(response)).toEqual({ error: 'temporarily unavailable; retry later' });
      expect(h.metrics.addMetric).toHaveBeenCalledWith(METRIC.permissionDenied, 'Count', 1);
      expect(sent()).toHaveLength(0);
    });

    it('when SQS fails with an unexpected error, it answers 500 without details', async () => {
      // Prepare
      const h = harness();
      await h.orders.create(storedOrder());
      sqsMock.on(SendMessageCommand).rejects(new Error('QueueUrl is malformed'));

      // Act
      const response = await h.handle(pay('key-1'));

      // Assess
      expect(response.statusCode).toBe(500);
      expect(bodyOf(response)).toEqual({ error: 'internal error' });
    });
  });

  describe('Degrade mode (B3)', () => {
    it('when degraded, critical work (payment.capture) is accepted and the flag is not even read', async () => {
      // Prepare
      const h = harness({ degraded: true });
      await h.orders.create(storedOrder());

      // Act
      const response = await h.handle(pay('key-1'));

      // Assess
      expect(response.statusCode).toBe(202);
      expect(h.flagReads()).toBe(0);
      expect(sent()).toHaveLength(1);
    });

    it('when degraded, sheddable work is refused with 503 and Retry-After, counted, and not sent', async () => {
      // Prepare
      const h = harness({ criticality: 'sheddable', degraded: true });
      await h.orders.create(storedOrder());

      // Act
      const response = await h.handle(pay('key-1'));

      // Assess
      expect(response.statusCode).toBe(503);
      expect(response.headers?.['retry-after']).toBe(String(ingress.SHED_RETRY_AFTER_SECONDS));
      expect(h.metrics.addMetric).toHaveBeenCalledWith(METRIC.jobShed, 'Count', 1);
      expect(sent()).toHaveLength(0);
      expect(h.dedup.claims.size).toBe(0);
    });

    it('when the flag cannot be read, sheddable work is accepted (unreadable means not degraded)', async () => {
      // Prepare
      const h = harness({ criticality: 'sheddable', degraded: new Error('SSM unreachable') });
      await h.orders.create(storedOrder());

      // Act
      const response = await h.handle(pay('key-1'));

      // Assess
      expect(response.statusCode).toBe(202);
      expect(h.flagReads()).toBe(1);
    });

    it('when not degraded, sheddable work is accepted', async () => {
      // Prepare
      const h = harness({ criticality: 'sheddable', degraded: false });
      await h.orders.create(storedOrder());

      // Act
      const response = await h.handle(pay('key-1'));

      // Assess
      expect(response.statusCode).toBe(202);
    });

    it('when degraded, deferrable work on a FIFO queue is sent without a delay (FIFO has none; its consumer defers)', async () => {
      // Prepare
      const h = harness({ criticality: 'deferrable', degraded: true });
      await h.orders.create(storedOrder());

      // Act
      const response = await h.handle(pay('key-1'));

      // Assess
      expect(response.statusCode).toBe(202);
      expect(sent()[0]?.DelaySeconds).toBeUndefined();
    });
  });

  describe('Degrade mode on a standard queue', () => {
    it('when degraded, deferrable work is sent with a delay and no FIFO fields', async () => {
      // Prepare
      const h = harness({ criticality: 'deferrable', queueKind: 'standard', degraded: true });
      await h.orders.create(storedOrder());

      // Act
      const response = await h.handle(pay('key-1'));

      // Assess
      expect(response.statusCode).toBe(202);
      expect(sent()[0]).toMatchObject({ DelaySeconds: ingress.DEFER_DELAY_SECONDS });
      expect(sent()[0]?.MessageGroupId).toBeUndefined();
      expect(sent()[0]?.MessageDeduplicationId).toBeUndefined();
      expect(h.metrics.addMetric).toHaveBeenCalledWith(METRIC.jobDeferred, 'Count', 1);
    });
  });

  describe('Unknown routes', () => {
    it.each([
      ['GET', '/orders/order-1'],
      ['DELETE', '/orders/order-1'],
      ['POST', '/customers'],
      ['GET', '/orders'],
    ])('when %s %s arrives, it answers 404', async (method, path) => {
      // Prepare
      const h = harness();

      // Act
      const response = await h.handle(httpEvent(method, path));

      // Assess
      expect(response.statusCode).toBe(404);
    });
  });
});
