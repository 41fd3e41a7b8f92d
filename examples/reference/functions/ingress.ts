/**
 * ingress (Q1, B3): the HTTP API's producer (payload v2).
 * - `POST /orders` creates a PENDING order at version 0 → 201.
 * - `POST /orders/{id}/payments` with an `Idempotency-Key` header enqueues a payment.capture job
 *   on the FIFO payments queue → 202. Producer-side dedup: a record keyed on the header lives
 *   24 h once the job is sent, so double clicks and webhook re-sends long after SQS's 5-minute
 *   FIFO dedup window answer 202 with the same job id and send nothing. A repeat that arrives
 *   while the first request is still sending (or died before it could) answers 409 with
 *   Retry-After, like Stripe, and sends nothing; once that claim expires a retry sends.
 * `GET /orders/{id}` belongs to the order-reader; every other route is 404. Bad input answers 400
 * with a JSON body naming each problem; a body over MAX_BODY_BYTES answers 413.
 */
import { createHash, randomUUID } from 'node:crypto';

import { stageNameSchema, jobTypeByName, type ResolvedJobType } from 'tenang/config';
import {
  InventoryReservePayload,
  OrderLineSchema,
  OrderSchema,
  PaymentCapturePayload,
  paymentCaptureKey,
  DynamoDbDedupStore,
  DynamoDbOrderStore,
  type DedupStore,
  type Order,
  type OrderStore,
} from '../domain';
import {
  admit,
  classifyError,
  errorClassName,
  makeEnvelope,
  METRIC,
  MetricUnit,
  newDynamoDbClient,
  newSqsClient,
  newSsmClient,
  observability,
  parseFunctionEnv,
  reportPermissionDenial,
  SendMessageCommand,
  SsmDegradeFlag,
  stageConfig,
  type APIGatewayProxyEventV2,
  type APIGatewayProxyStructuredResultV2,
  type Clock,
  type Context,
  type Logger,
  type Metrics,
  type SQSClient,
} from 'tenang/runtime';
import * as z from 'tenang/zod';

/** Powertools service name of this function. */
export const SERVICE_NAME = 'ingress';

/** How long a payment request's Idempotency-Key collapses repeats (Stripe keeps keys 24 h too). */
export const PRODUCER_DEDUP_TTL_SECONDS = 24 * 60 * 60;

/**
 * How long a key is claimed while its job is being sent: twice the function's 10 s timeout
 * (the Ingress construct of tenang/infra), so no live request loses it; a request that died frees it by then.
 */
export const IN_FLIGHT_CLAIM_SECONDS = 20;

/** What a shed request is told to wait before trying again. */
export const SHED_RETRY_AFTER_SECONDS = 30;

/**
 * What a request refused because the deployment denies an action is told to wait: a fixed grant
 * takes a deploy, so a client retrying every second only adds load.
 */
export const PERMISSION_DENIED_RETRY_AFTER_SECONDS = 60;

/** How long deferred work waits on a standard queue in degrade mode (SQS allows 900 s at most). */
export const DEFER_DELAY_SECONDS = 300;

const nonEmpty = (): z.ZodMiniString<string> => z.string().check(z.minLength(1));

/** The function's environment. */
export const IngressEnvSchema = z.object({
  TENANG_STAGE: stageNameSchema(),
  AWS_REGION: nonEmpty(),
  ORDERS_TABLE: nonEmpty(),
  DEDUP_TABLE: nonEmpty(),
  PAYMENT_QUEUE_URL: z.url(),
  DEGRADE_FLAG: z.string().check(z.startsWith('/')),
});
export type IngressEnv = z.infer<typeof IngressEnvSchema>;

/**
 * Largest request body accepted, in bytes. The largest valid order (50 lines) is about 5 KB; a
 * body past this is refused with 413 before it is parsed.
 */
export const MAX_BODY_BYTES = 64 * 1024;

/**
 * A line as the ingress accepts it: its SKU must also be a valid inventory.reserve SKU, or the
 * paid order's reservation would be refused by the inventory consumer long after this 201.
 */
const OrderLineBody = z.object({
  sku: InventoryReservePayload.shape.sku.check(z.maxLength(64)),
  quantity: OrderLineSchema.shape.quantity,
});

/** `POST /orders` body. */
export const CreateOrderBody = z.object({
  customerEmail: OrderSchema.shape.customerEmail,
  lines: z.array(OrderLineBody).check(z.minLength(1), z.maxLength(50)),
  amountMinor: PaymentCapturePayload.shape.amountMinor,
  currency: OrderSchema.shape.currency,
});

/** `POST /orders/{id}/payments` body; the order id comes from the path. */
export const CapturePaymentBody = z.object({
  paymentId: PaymentCapturePayload.shape.paymentId,
  amountMinor: PaymentCapturePayload.shape.amountMinor,
  currency: PaymentCapturePayload.shape.currency,
});

/** Visible ASCII, like Stripe's keys; it is hashed before it reaches SQS or DynamoDB. */
const IDEMPOTENCY_KEY = /^[\x21-\x7E]{1,255}$/;
const CORRELATION_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** What the handler needs; tests pass fakes or clients bound to the emulator. */
export interface IngressDeps {
  /** The payment.capture job type (queue kind, group field, criticality). */
  readonly paymentJobType: ResolvedJobType;
  readonly paymentQueueUrl: string;
  readonly sqs: SQSClient;
  readonly orders: Pick<OrderStore, 'create' | 'get'>;
  readonly dedup: DedupStore;
  readonly degradeFlag: { isDegraded(): Promise<boolean> };
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** @default () => new Date() */
  readonly clock?: Clock;
  /** @default randomUUID */
  readonly newId?: () => string;
}

type Response = APIGatewayProxyStructuredResultV2;

function json(statusCode: number, body: unknown, headers: Record<string, string> = {}): Response {
  return {
    statusCode,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  };
}

function badRequest(error: string, problems: readonly string[]): Response {
  return json(400, { error, problems });
}

function issues(error: z.core.$ZodError, prefix: string): string[] {
  return error.issues.map((i) => `${[prefix, ...i.path.map(String)].join('.')}: ${i.message}`);
}

/** The request body as JSON, or the answer that refuses it. */
function readJson(
  event: APIGatewayProxyEventV2,
): { ok: true; value: unknown } | { ok: false; answer: Response } {
  if (event.body === undefined || event.body === '') {
    return { ok: false, answer: badRequest('invalid request body', ['body: is required']) };
  }
  const text = event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
  const size = Buffer.byteLength(text, 'utf8');
  if (size > MAX_BODY_BYTES) {
    return {
      ok: false,
      answer: json(413, {
        error: 'request body too large',
        problems: [`body: ${size} bytes exceeds ${MAX_BODY_BYTES}`],
      }),
    };
  }
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (cause) {
    return {
      ok: false,
      answer: badRequest('invalid request body', [`body: is not JSON (${(cause as Error).message})`]),
    };
  }
}

/** A header's value; API Gateway (v2) lowercases names, local callers may not. */
function header(event: APIGatewayProxyEventV2, name: string): string | undefined {
  const headers = event.headers ?? {};
  const found = Object.keys(headers).find((k) => k.toLowerCase() === name);
  return found === undefined ? undefined : headers[found];
}

/** Known routes, matched on method and path (works for a `$default` route and for local invocations). */
type Route =
  { readonly name: 'create-order' } | { readonly name: 'capture-payment'; readonly orderId: string };

function route(event: APIGatewayProxyEventV2): Route | undefined {
  const method = event.requestContext?.http?.method ?? '';
  const path = event.rawPath ?? '';
  if (method !== 'POST') return undefined;
  if (/^\/orders\/?$/.test(path)) return { name: 'create-order' };
  const match = /^\/orders\/([^/]+)\/payments\/?$/.exec(path);
  if (match?.[1] === undefined) return undefined;
  return { name: 'capture-payment', orderId: event.pathParameters?.id ?? decodeSegment(match[1]) };
}

/** A path segment, percent-decoded when it can be (a malformed one is kept as sent and fails validation). */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Job id and FIFO dedup id of a payment request: the same key for the same order always gives the same id. */
export function paymentJobId(orderId: string, idempotencyKey: string): string {
  return createHash('sha256').update(`${orderId}\n${idempotencyKey}`).digest('hex');
}

/** An ingress handler. */
export function createHandler(
  deps: IngressDeps,
): (event: APIGatewayProxyEventV2, context?: Context) => Promise<Response> {
  const clock = deps.clock ?? ((): Date => new Date());
  const newId = deps.newId ?? randomUUID;
  const jobType = deps.paymentJobType;
  const fifo = jobType.queue.kind === 'fifo';

  async function isDegraded(logger: Logger): Promise<boolean> {
    try {
      return await deps.degradeFlag.isDegraded();
    } catch (error) {
      // An unreadable flag never stops work (B3): the stage counts as not degraded.
      logger.warn('degrade flag unreadable; treated as not degraded', { error: error as Error });
      return false;
    }
  }

  async function createOrder(event: APIGatewayProxyEventV2, logger: Logger): Promise<Response> {
    const body = readJson(event);
    if (!body.ok) return body.answer;
    const parsed = CreateOrderBody.safeParse(body.value);
    if (!parsed.success) return badRequest('invalid order', issues(parsed.error, 'body'));
    const now = clock().toISOString();
    const { customerEmail, lines, amountMinor, currency } = parsed.data;
    const order: Order = {
      orderId: newId(),
      state: 'PENDING',
      version: 0,
      customerEmail,
      lines,
      amountMinor,
      currency,
      createdAt: now,
      updatedAt: now,
    };
    if (!(await deps.orders.create(order))) throw new Error(`order id ${order.orderId} is already taken`);
    logger.info('order created', { orderId: order.orderId });
    return json(201, order, { location: `/orders/${encodeURIComponent(order.orderId)}` });
  }

  async function capturePayment(
    event: APIGatewayProxyEventV2,
    orderId: string,
    correlationId: string,
    parentLogger: Logger,
  ): Promise<Response> {
    const key = header(event, 'idempotency-key');
    if (key === undefined || key === '') {
      return badRequest('Idempotency-Key header is required', ['headers.idempotency-key: is required']);
    }
    if (!IDEMPOTENCY_KEY.test(key)) {
      return badRequest('invalid Idempotency-Key header', [
        'headers.idempotency-key: must be 1 to 255 visible ASCII characters',
      ]);
    }
    const body = readJson(event);
    if (!body.ok) return body.answer;
    const problems: string[] = [];
    const parsedId = PaymentCapturePayload.shape.orderId.safeParse(orderId);
    if (!parsedId.success) problems.push(...issues(parsedId.error, 'path.id'));
    const parsedBody = CapturePaymentBody.safeParse(body.value);
    if (!parsedBody.success) problems.push(...issues(parsedBody.error, 'body'));
    if (!parsedBody.success || problems.length > 0) return badRequest('invalid payment request', problems);
    const payload: PaymentCapturePayload = { orderId, ...parsedBody.data };
    const jobId = paymentJobId(orderId, key);
    const logger = parentLogger.createChild({
      persistentKeys: { idempotencyKey: paymentCaptureKey(payload.paymentId), jobId, orderId },
    });

    // Critical work is admitted whatever the flag says, so it never waits on SSM.
    const degraded = jobType.criticality === 'critical' ? false : await isDegraded(logger);
    const admission = admit(jobType.criticality, degraded);
    if (admission === 'shed') {
      deps.metrics.addMetric(METRIC.jobShed, MetricUnit.Count, 1);
      logger.warn('request shed: the stage is degraded');
      return json(
        503,
        { error: 'degraded: this request is not accepted now', retryAfterSeconds: SHED_RETRY_AFTER_SECONDS },
        { 'retry-after': String(SHED_RETRY_AFTER_SECONDS) },
      );
    }

    const order = await deps.orders.get(orderId);
    if (order === undefined) return json(404, { error: `order ${orderId} not found` });
    const mismatch: string[] = [];
    if (order.amountMinor !== payload.amountMinor) {
      mismatch.push(`body.amountMinor: the order's amount is ${order.amountMinor}`);
    }
    if (order.currency !== payload.currency) {
      mismatch.push(`body.currency: the order's currency is ${order.currency}`);
    }
    if (mismatch.length > 0) return badRequest('payment does not match the order', mismatch);

    const dedupKey = `payment.capture:${jobId}`;
    const claim = await deps.dedup.claim(dedupKey, IN_FLIGHT_CLAIM_SECONDS);
    if (claim === 'done') {
      logger.info('duplicate payment request: answered with the first job id, nothing sent');
      return json(202, { jobId, orderId, paymentId: payload.paymentId, status: 'accepted', duplicate: true });
    }
    if (claim === 'in-flight') {
      // Not 202: the first request may still fail, and a 202 here would promise a job that never comes.
      logger.info('payment request with this key in progress: answered 409, nothing sent');
      return json(
        409,
        {
          error: 'a request with this Idempotency-Key is in progress; retry later',
          jobId,
          orderId,
          retryAfterSeconds: IN_FLIGHT_CLAIM_SECONDS,
        },
        { 'retry-after': String(IN_FLIGHT_CLAIM_SECONDS) },
      );
    }
    const envelope = makeEnvelope('payment.capture', payload, {
      idempotencyKey: paymentCaptureKey(payload.paymentId),
      correlationId,
      now: clock(),
    });
    const deferred = admission === 'defer' && !fifo;
    try {
      await deps.sqs.send(
        new SendMessageCommand({
          QueueUrl: deps.paymentQueueUrl,
          MessageBody: JSON.stringify(envelope),
          ...(fifo
            ? {
                MessageGroupId: String(payload[(jobType.queue.groupBy ?? 'orderId') as keyof typeof payload]),
                MessageDeduplicationId: jobId,
              }
            : {}),
          // FIFO queues have no per-message delay: deferrable FIFO work is deferred by its consumer.
          ...(deferred ? { DelaySeconds: DEFER_DELAY_SECONDS } : {}),
        }),
      );
    } catch (error) {
      // Not sent: give the key back so the client's retry is sent at once.
      await deps.dedup.release(dedupKey).catch((releaseError: unknown) =>
        logger.warn('dedup claim not released: retries answer 409 until it expires', {
          error: releaseError as Error,
        }),
      );
      throw error;
    }
    try {
      await deps.dedup.confirm(dedupKey, PRODUCER_DEDUP_TTL_SECONDS);
    } catch (confirmError) {
      // The job is sent: answer 202. The claim stays in flight until it expires; a repeat after
      // that sends again, which the FIFO dedup id (5 minutes) and the consumer's idempotency absorb.
      const denied = reportPermissionDenial(confirmError, {
        logger,
        metrics: deps.metrics,
        during: 'confirming a dedup claim',
        extra: { note: 'the job is sent; a repeat after the in-flight window will be sent again' },
      });
      if (denied === undefined) {
        logger.error('dedup claim not confirmed: a repeat after the in-flight window will be sent again', {
          error: confirmError as Error,
        });
      }
    }
    if (deferred) deps.metrics.addMetric(METRIC.jobDeferred, MetricUnit.Count, 1);
    logger.info(deferred ? 'payment job enqueued, deferred' : 'payment job enqueued');
    return json(202, { jobId, orderId, paymentId: payload.paymentId, status: 'accepted', duplicate: false });
  }

  return async (event, context) => {
    const given = header(event, 'x-correlation-id');
    const correlationId =
      given !== undefined && CORRELATION_ID.test(given)
        ? given
        : (event.requestContext?.requestId ?? newId());
    const logger = deps.logger.createChild({ persistentKeys: { correlationId } });
    if (context !== undefined) logger.addContext(context);
    const matched = route(event);
    try {
      if (matched === undefined) {
        return json(404, {
          error: `no route ${event.requestContext?.http?.method ?? '?'} ${event.rawPath ?? '?'}`,
        });
      }
      if (matched.name === 'create-order') return await createOrder(event, logger);
      return await capturePayment(event, matched.orderId, correlationId, logger);
    } catch (error) {
      const kind = classifyError(error);
      if (kind === 'deployment') {
        // The deployment denies an action (a missing grant): not the client's fault, never a 400
        // or a 500. A payment's dedup claim is given back when its send fails, so a retry with
        // the same Idempotency-Key is sent as soon as the grant is fixed.
        reportPermissionDenial(error, { logger, metrics: deps.metrics, during: 'handling a request' });
        return json(
          503,
          { error: 'temporarily unavailable; retry later' },
          { 'retry-after': String(PERMISSION_DENIED_RETRY_AFTER_SECONDS) },
        );
      }
      if (kind === 'transient') {
        logger.warn('request failed on a transient error', { errorClass: errorClassName(error) });
        return json(503, { error: 'temporarily unavailable; retry' }, { 'retry-after': '1' });
      }
      logger.error('request failed', { error: error as Error });
      return json(500, { error: 'internal error' });
    } finally {
      // Most requests record no metric; publishing nothing would log a warning per request.
      if (deps.metrics.hasStoredMetrics()) deps.metrics.publishStoredMetrics();
    }
  };
}

/** Builds the handler's dependencies from the environment. */
export function depsFromEnv(env: IngressEnv): IngressDeps {
  const { logger, metrics } = observability(SERVICE_NAME);
  const dynamo = newDynamoDbClient();
  return {
    paymentJobType: jobTypeByName(stageConfig(env.TENANG_STAGE, env.AWS_REGION), 'payment.capture'),
    paymentQueueUrl: env.PAYMENT_QUEUE_URL,
    sqs: newSqsClient(),
    orders: new DynamoDbOrderStore(dynamo, env.ORDERS_TABLE),
    dedup: new DynamoDbDedupStore(dynamo, env.DEDUP_TABLE),
    degradeFlag: new SsmDegradeFlag(newSsmClient(), env.DEGRADE_FLAG),
    logger,
    metrics,
  };
}

// Module scope: the environment fails at init, and clients live across invocations.
/** The deployed handler. */
export const handler = createHandler(depsFromEnv(parseFunctionEnv(SERVICE_NAME, IngressEnvSchema)));
