import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { IdempotencyPersistenceLayerError } from '@aws-lambda-powertools/idempotency';
import { DynamoDBServiceException } from '@aws-sdk/client-dynamodb';
import {
  ChangeMessageVisibilityCommand,
  SQSClient,
  SQSServiceException,
  SendMessageCommand,
  type SendMessageCommandInput,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import {
  DEFERRALS_ATTRIBUTE,
  DLQ_ATTRIBUTE,
  EXPIRED_ATTRIBUTE,
  createSqsJobRunner,
  type JobContext,
  type JobOutcome,
} from '../../../lib/adapters/aws/sqs-job-runner';
import { ProviderRejectedError, ProviderUnavailableError } from '../../../lib/adapters/http/provider-client';
import { PERMISSION_DENIED_RUNBOOK } from '../../../lib/adapters/aws/permission-denial';
import { stageConfig } from '../../../lib/adapters/lambda-env';
import { METRIC, backoffCeilingSeconds, type ResolvedJobType } from '../../../lib/config';
import { SQS_MAX_VISIBILITY_SECONDS, permissionHoldSeconds } from '../../../lib/core/backoff';
import { makeEnvelope, type JobEnvelope } from '../../../lib/core/envelope';
import { PAYLOADS, type JobTypeName, type PayloadOf } from '../../../examples/reference/domain/payloads';

const REGION = 'eu-west-1';
const ACCOUNT = '123456789012';
const CONFIG = stageConfig('test', REGION);
const NOW = new Date('2030-06-01T12:00:00.000Z');
const ENQUEUED_AT = new Date('2030-06-01T11:59:00.000Z');
const FIRST_RECEIVE = new Date('2030-06-01T11:59:30.000Z');

/** The reference config's job type `name`. */
function jobTypeOf(name: JobTypeName): ResolvedJobType {
  const jobType = CONFIG.jobTypes.find((j) => j.name === name);
  if (jobType === undefined) throw new Error(`the reference pipeline has no job type ${name}`);
  return jobType;
}
const queueUrl = (queueName: string): string => `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${queueName}`;

const NOTIFY = jobTypeOf('notification.send');
const PAYMENT = jobTypeOf('payment.capture');

/** A valid payload per job type, for `orderId`. */
function payloadOf<T extends JobTypeName>(type: T, orderId: string): PayloadOf<T> {
  const payloads: { readonly [K in JobTypeName]: PayloadOf<K> } = {
    'payment.capture': { orderId, paymentId: `pay-${orderId}`, amountMinor: 1999, currency: 'EUR' },
    'notification.send': { orderId, template: 'order-paid', recipient: 'ada@example.com', orderVersion: 2 },
    'inventory.reserve': { orderId, sku: 'SKU-1', quantity: 1 },
  };
  return payloads[type];
}

/** The JSON body of a valid job of `type` for `orderId`. */
function jobBody(type: JobTypeName, orderId = 'ord-1', enqueuedAt = ENQUEUED_AT): string {
  return JSON.stringify(
    makeEnvelope(type, payloadOf(type, orderId), {
      idempotencyKey: `${type}:${orderId}`,
      correlationId: `corr-${orderId}`,
      now: enqueuedAt,
    }),
  );
}

/** An SQS record the way Lambda delivers it; FIFO records carry their group and sequence. */
function sqsRecord(opts: {
  readonly jobType: ResolvedJobType;
  readonly messageId: string;
  readonly body: string;
  readonly attempt?: number;
  readonly groupId?: string;
  readonly messageAttributes?: SQSRecord['messageAttributes'];
}): SQSRecord {
  const fifo = opts.jobType.queue.kind === 'fifo';
  return {
    messageId: opts.messageId,
    receiptHandle: `receipt-${opts.messageId}`,
    body: opts.body,
    attributes: {
      ApproximateReceiveCount: String(opts.attempt ?? 1),
      SentTimestamp: String(ENQUEUED_AT.getTime()),
      SenderId: 'AROAEXAMPLE:ingress',
      ApproximateFirstReceiveTimestamp: String(FIRST_RECEIVE.getTime()),
      ...(fifo
        ? {
            SequenceNumber: `1860000000000000${opts.messageId.length}`,
            MessageGroupId: opts.groupId ?? 'ord-1',
            MessageDeduplicationId: `dedup-${opts.messageId}`,
          }
        : {}),
    },
    messageAttributes: opts.messageAttributes ?? {},
    md5OfBody: '0123456789abcdef0123456789abcdef',
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:${REGION}:${ACCOUNT}:${opts.jobType.queueName}`,
    awsRegion: REGION,
  };
}

const eventOf = (...records: SQSRecord[]): SQSEvent => ({ Records: records });

const lambdaContext: Context = {
  callbackWaitsForEmptyEventLoop: true,
  functionName: 'tenang-test-consumer',
  functionVersion: '$LATEST',
  invokedFunctionArn: `arn:aws:lambda:${REGION}:${ACCOUNT}:function:tenang-test-consumer`,
  memoryLimitInMB: '256',
  awsRequestId: 'request-1',
  logGroupName: '/aws/lambda/tenang-test-consumer',
  logStreamName: '2030/06/01/[$LATEST]abc',
  getRemainingTimeInMillis: () => 20_000,
  done: () => undefined,
  fail: () => undefined,
  succeed: () => undefined,
};

/** What the handler does per message id; a function may throw. Unlisted messages are done. */
type Behaviour = Record<string, () => JobOutcome | Promise<JobOutcome>>;

/** A seeded PRNG (mulberry32): deterministic draws in [0, 1). */
function seededRandom(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
const SEED = 42;

const sqsMock = mockClient(SQSClient);
let stdout: string[];
let stderr: string[];

/**
 * Builds the runner for `jobType` over the mocked SQS client, a Logger (silent unless
 * `logLevel` says, its lines then go to the captured stdout) and real Metrics.
 */
function runnerFor(
  jobType: ResolvedJobType,
  behaviour: Behaviour = {},
  { logLevel = 'SILENT' }: { readonly logLevel?: 'SILENT' | 'ERROR' } = {},
) {
  const calls: { job: JobEnvelope; ctx: JobContext }[] = [];
  const run = createSqsJobRunner<unknown>({
    jobType,
    expectedType: jobType.name,
    payloadSchema: PAYLOADS[jobType.name as JobTypeName],
    queueUrl: queueUrl(jobType.queueName),
    dlqUrl: queueUrl(jobType.dlqName),
    ...(jobType.expiredQueueName === undefined
      ? {}
      : { expiredQueueUrl: queueUrl(jobType.expiredQueueName) }),
    sqs: new SQSClient({ region: REGION }),
    logger: new Logger({ serviceName: jobType.consumer, logLevel }),
    metrics: new Metrics({ namespace: 'tenang', serviceName: jobType.consumer }),
    handle: async (job, ctx) => {
      calls.push({ job, ctx });
      const act = behaviour[ctx.messageId];
      return act === undefined ? { kind: 'done' } : act();
    },
    random: seededRandom(SEED),
    now: () => NOW,
  });
  return {
    run: (event: SQSEvent): Promise<SQSBatchResponse> => run(event, lambdaContext),
    handledIds: (): string[] => calls.map((c) => c.ctx.messageId),
    calls,
  };
}

/** The values of metric `name` in the EMF documents printed so far, in order. */
function metricValues(name: string): number[] {
  return stdout
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((doc) => '_aws' in doc && name in doc)
    .flatMap((doc) => doc[name] as number | number[]);
}

/** The sum of metric `name` over the EMF documents printed so far. */
const metricTotal = (name: string): number => metricValues(name).reduce((sum, v) => sum + v, 0);

/** The failed message ids of a batch response. */
const failedIds = (response: SQSBatchResponse): string[] =>
  response.batchItemFailures.map((f) => f.itemIdentifier);

/** The SendMessage inputs the runner sent. */
const sentMessages = (): SendMessageCommandInput[] =>
  sqsMock.commandCalls(SendMessageCommand).map((call) => call.args[0].input);

const string = (value: string) => ({ DataType: 'String', StringValue: value });
const number = (value: number) => ({ DataType: 'Number', StringValue: String(value) });

/** Whether SQS accepts `value` in a message or attribute: #x9 | #xA | #xD | #x20–#xD7FF | #xE000–#xFFFD | #x10000–#x10FFFF. */
const sqsAccepts = (value: string): boolean =>
  /^[\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]*$/u.test(value);

/** The string values of every attribute of every message sent. */
const sentAttributeValues = (): string[] =>
  sentMessages().flatMap((m) => Object.values(m.MessageAttributes ?? {}).map((a) => a.StringValue ?? ''));

/** IAM's denial wording, as every service returns it in the error message. */
const deniedMessage = (action: string, resource: string): string =>
  `User: arn:aws:sts::${ACCOUNT}:assumed-role/tenang-test-consumer-role/tenang-test-consumer is not authorized to perform: ${action} on resource: ${resource} because no identity-based policy allows the ${action} action`;

/** What SQS's SDK raises for a denial: its JSON protocol is query-compatible, so the error is named AccessDenied. */
function sqsDenied(action: string, queueName: string): SQSServiceException {
  return new SQSServiceException({
    name: 'AccessDenied',
    $fault: 'client',
    $metadata: { httpStatusCode: 403 },
    message: deniedMessage(action, `arn:aws:sqs:${REGION}:${ACCOUNT}:${queueName}`),
  });
}

/** What DynamoDB's SDK raises for a denial: AccessDeniedException, a 400 with a client fault. */
function dynamoDenied(action: string, table: string): DynamoDBServiceException {
  return new DynamoDBServiceException({
    name: 'AccessDeniedException',
    $fault: 'client',
    $metadata: { httpStatusCode: 400 },
    message: deniedMessage(action, `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${table}`),
  });
}

/** The hold the runner's first draw gives on receive `attempt` of `jobType` (seeded like the runner). */
const firstHold = (jobType: ResolvedJobType, attempt: number): number =>
  permissionHoldSeconds(
    attempt,
    seededRandom(SEED),
    SQS_MAX_VISIBILITY_SECONDS - jobType.visibilityTimeoutSeconds,
  );

/** The ERROR lines the runner logged (JSON lines; Powertools writes them to stderr). */
const errorLines = (): Record<string, unknown>[] =>
  [...stdout, ...stderr]
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((doc) => !('_aws' in doc) && doc.level === 'ERROR');

/** The visibility changes the runner made, as [receipt handle, seconds]. */
const visibilityChanges = (): [string | undefined, number | undefined][] =>
  sqsMock
    .commandCalls(ChangeMessageVisibilityCommand)
    .map((call) => [call.args[0].input.ReceiptHandle, call.args[0].input.VisibilityTimeout]);

const savedEnv = { ...process.env };

beforeEach(() => {
  sqsMock.reset();
  sqsMock.on(SendMessageCommand).resolves({ MessageId: 'sent-1' });
  sqsMock.on(ChangeMessageVisibilityCommand).resolves({});
  // Metrics are off in dev mode; these tests read what they emit.
  process.env.POWERTOOLS_DEV = 'false';
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
  stdout = [];
  jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout.push(
      ...chunk
        .toString()
        .split('\n')
        .filter((line) => line.trim().length > 0),
    );
    return true;
  });
  // Powertools warns on stderr about some settings, and writes ERROR lines there: keep the test
  // output clean and the lines for the tests that read them.
  stderr = [];
  jest.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr.push(...chunk.toString().split('\n'));
    return true;
  });
});

afterEach(() => {
  jest.restoreAllMocks();
  process.env = { ...savedEnv };
});

describe('Function: createSqsJobRunner', () => {
  describe('when a job succeeds', () => {
    it('when the record is valid and the handler is done, it counts JobSucceeded and reports no failure', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY);
      const record = sqsRecord({
        jobType: NOTIFY,
        messageId: 'm-1',
        body: jobBody('notification.send'),
        attempt: 2,
      });

      // Act
      const response = await runner.run(eventOf(record));

      // Assess
      expect(response).toEqual({ batchItemFailures: [] });
      expect(metricValues(METRIC.jobSucceeded)).toEqual([1]);
      expect(metricValues(METRIC.queueLatency)).toEqual([NOW.getTime() - ENQUEUED_AT.getTime()]);
      expect(runner.calls).toHaveLength(1);
      expect(runner.calls[0]?.job).toMatchObject({ type: 'notification.send', correlationId: 'corr-ord-1' });
      expect(runner.calls[0]?.ctx).toMatchObject({ attempt: 2, messageId: 'm-1', lambdaContext });
      expect(sqsMock.calls()).toHaveLength(0);
    });

    it('when the handler reports a duplicate, it counts DuplicateIgnored and reports no failure', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY, { 'm-1': () => ({ kind: 'duplicate_ignored' }) });

      // Act
      const response = await runner.run(
        eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('notification.send') })),
      );

      // Assess
      expect(failedIds(response)).toEqual([]);
      expect(metricValues(METRIC.duplicateIgnored)).toEqual([1]);
      expect(metricValues(METRIC.jobSucceeded)).toEqual([]);
    });
  });

  describe('when the input is bad (permanent)', () => {
    it('when one body is not JSON, it sends it to the DLQ with every error attribute, does not fail it, and its batch-mates succeed', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY);
      const badBody = '{"type":"notification.send",';
      const records = [
        sqsRecord({ jobType: NOTIFY, messageId: 'good-1', body: jobBody('notification.send', 'ord-1') }),
        sqsRecord({ jobType: NOTIFY, messageId: 'bad-2', body: badBody }),
        sqsRecord({ jobType: NOTIFY, messageId: 'good-3', body: jobBody('notification.send', 'ord-3') }),
      ];

      // Act
      const response = await runner.run(eventOf(...records));

      // Assess
      expect(failedIds(response)).toEqual([]);
      expect(runner.handledIds().sort()).toEqual(['good-1', 'good-3']);
      expect(sqsMock).toHaveReceivedCommandTimes(SendMessageCommand, 1);
      expect(sqsMock).not.toHaveReceivedCommand(ChangeMessageVisibilityCommand);
      const [sent] = sentMessages();
      expect(sent).toEqual({
        QueueUrl: queueUrl('tenang-test-notification-send-dlq'),
        MessageBody: badBody,
        MessageAttributes: {
          [DLQ_ATTRIBUTE.errorClass]: string('ValidationError'),
          [DLQ_ATTRIBUTE.errorKind]: string('permanent'),
          [DLQ_ATTRIBUTE.errorMessage]: {
            DataType: 'String',
            StringValue: expect.stringMatching(/^message body is not JSON: /),
          },
          [DLQ_ATTRIBUTE.attempts]: number(1),
          [DLQ_ATTRIBUTE.firstFailureAt]: string(FIRST_RECEIVE.toISOString()),
          [DLQ_ATTRIBUTE.lastFailureAt]: string(NOW.toISOString()),
          [DLQ_ATTRIBUTE.jobType]: string('notification.send'),
          [DLQ_ATTRIBUTE.sourceMessageId]: string('bad-2'),
        },
        MessageGroupId: undefined,
        MessageDeduplicationId: undefined,
      });
      expect(metricValues(METRIC.jobFailedPermanently)).toEqual([1]);
      expect(metricTotal(METRIC.jobSucceeded)).toBe(2);
    });

    it('when the body is a job of another queue, it dead-letters it as a ValidationError without calling the handler', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY);

      // Act
      const response = await runner.run(
        eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('inventory.reserve') })),
      );

      // Assess
      expect(failedIds(response)).toEqual([]);
      expect(runner.calls).toHaveLength(0);
      expect(sentMessages()[0]?.MessageAttributes?.[DLQ_ATTRIBUTE.errorMessage]?.StringValue).toContain(
        'type: expected notification.send, got inventory.reserve',
      );
    });

    it('when the handler throws a permanent error, it dead-letters the job with its class and correlation id', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY, {
        'm-1': () => {
          throw new ProviderRejectedError('https://messaging.example.com/messages: HTTP 422 bad recipient');
        },
      });

      // Act
      const response = await runner.run(
        eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('notification.send') })),
      );

      // Assess
      expect(failedIds(response)).toEqual([]);
      expect(sentMessages()[0]?.MessageAttributes).toMatchObject({
        [DLQ_ATTRIBUTE.errorClass]: string('ProviderRejectedError'),
        [DLQ_ATTRIBUTE.errorKind]: string('permanent'),
        [DLQ_ATTRIBUTE.errorMessage]: string(
          'https://messaging.example.com/messages: HTTP 422 bad recipient',
        ),
        [DLQ_ATTRIBUTE.correlationId]: string('corr-ord-1'),
      });
    });

    it('when the DLQ send itself fails, it reports the record as a failure instead of losing it', async () => {
      // Prepare
      sqsMock.on(SendMessageCommand).rejects(new Error('AccessDenied'));
      const runner = runnerFor(NOTIFY);

      // Act
      const response = await runner.run(
        eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: 'not json' })),
      );

      // Assess
      expect(failedIds(response)).toEqual(['m-1']);
    });
  });

  describe('when the DLQ attributes would carry characters SQS refuses', () => {
    it('when a non-JSON body makes the parser quote half an emoji, the error message sent is still valid for SQS', async () => {
      // Prepare: V8 quotes the first 10 UTF-16 units of the body, splitting the 5th rocket.
      const runner = runnerFor(NOTIFY);
      const body = `x${'🚀'.repeat(20)}`;

      // Act
      const response = await runner.run(eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body })));

      // Assess
      expect(failedIds(response)).toEqual([]);
      const message = sentMessages()[0]?.MessageAttributes?.[DLQ_ATTRIBUTE.errorMessage]?.StringValue ?? '';
      expect(message).toMatch(/^message body is not JSON: /);
      expect(sentAttributeValues().filter((v) => !sqsAccepts(v))).toEqual([]);
    });

    it('when the error message has control characters and is cut inside an emoji, it is cut at 256 and valid for SQS', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY, {
        'm-1': () => {
          throw new ProviderRejectedError(`HTTP 422 \u0000\u0007${'x'.repeat(244)}${'🚀'.repeat(20)}`);
        },
      });

      // Act
      await runner.run(
        eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('notification.send') })),
      );

      // Assess
      const message = sentMessages()[0]?.MessageAttributes?.[DLQ_ATTRIBUTE.errorMessage]?.StringValue ?? '';
      expect(message).toHaveLength(256);
      expect(message.startsWith('HTTP 422 ')).toBe(true);
      expect(sentAttributeValues().filter((v) => !sqsAccepts(v))).toEqual([]);
    });

    it('when the free-text correlation id holds a control character, the attribute sent is valid for SQS', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY, {
        'm-1': () => {
          throw new ProviderRejectedError('HTTP 400');
        },
      });
      const body = JSON.stringify({
        ...JSON.parse(jobBody('notification.send')),
        correlationId: 'corr\u0001-1',
      });

      // Act
      await runner.run(eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body })));

      // Assess
      expect(sentMessages()[0]?.MessageAttributes?.[DLQ_ATTRIBUTE.correlationId]).toEqual(
        string('corr\uFFFD-1'),
      );
      expect(sentAttributeValues().filter((v) => !sqsAccepts(v))).toEqual([]);
    });
  });

  describe('when the handler fails transiently', () => {
    it('when attempts remain, it delays the message by a full-jitter backoff within the ceiling and fails the record', async () => {
      // Prepare
      const attempt = 2;
      const runner = runnerFor(NOTIFY, {
        'm-1': () => {
          throw new ProviderUnavailableError('https://messaging.example.com/messages: HTTP 503');
        },
      });

      // Act
      const response = await runner.run(
        eventOf(
          sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('notification.send'), attempt }),
        ),
      );

      // Assess
      const ceiling = backoffCeilingSeconds(NOTIFY.retry, attempt);
      const expectedDelay = Math.floor(seededRandom(SEED)() * (ceiling + 1));
      expect(ceiling).toBe(20);
      expect(failedIds(response)).toEqual(['m-1']);
      expect(sqsMock).toHaveReceivedCommandTimes(ChangeMessageVisibilityCommand, 1);
      expect(sqsMock).toHaveReceivedCommandWith(ChangeMessageVisibilityCommand, {
        QueueUrl: queueUrl('tenang-test-notification-send'),
        ReceiptHandle: 'receipt-m-1',
        VisibilityTimeout: expectedDelay,
      });
      const delay = sqsMock.commandCalls(ChangeMessageVisibilityCommand)[0]?.args[0].input.VisibilityTimeout;
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThanOrEqual(ceiling);
      expect(sqsMock).not.toHaveReceivedCommand(SendMessageCommand);
      expect(metricValues(METRIC.jobRetried)).toEqual([1]);
    });

    it('when setting the delay fails, it still fails the record so the message returns after its visibility timeout', async () => {
      // Prepare
      sqsMock.on(ChangeMessageVisibilityCommand).rejects(new Error('ReceiptHandleIsInvalid'));
      const runner = runnerFor(NOTIFY, {
        'm-1': () => {
          throw new ProviderUnavailableError('timeout');
        },
      });

      // Act
      const response = await runner.run(
        eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('notification.send') })),
      );

      // Assess
      expect(failedIds(response)).toEqual(['m-1']);
    });

    it('when it is the last allowed attempt, it sends the message to the DLQ as transient instead of failing it', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY, {
        'm-1': () => {
          throw new ProviderUnavailableError('https://messaging.example.com/messages: HTTP 503');
        },
      });

      // Act
      const response = await runner.run(
        eventOf(
          sqsRecord({
            jobType: NOTIFY,
            messageId: 'm-1',
            body: jobBody('notification.send'),
            attempt: NOTIFY.maxAttempts,
          }),
        ),
      );

      // Assess
      expect(NOTIFY.maxAttempts).toBe(4);
      expect(failedIds(response)).toEqual([]);
      expect(sqsMock).not.toHaveReceivedCommand(ChangeMessageVisibilityCommand);
      expect(sentMessages()).toHaveLength(1);
      expect(sentMessages()[0]).toMatchObject({
        QueueUrl: queueUrl('tenang-test-notification-send-dlq'),
        MessageAttributes: {
          [DLQ_ATTRIBUTE.errorClass]: string('ProviderUnavailableError'),
          [DLQ_ATTRIBUTE.errorKind]: string('transient'),
          [DLQ_ATTRIBUTE.attempts]: number(4),
        },
      });
    });

    it('when a poison message fails transiently on every receive, it is handled exactly maxAttempts times and dead-lettered once (R6)', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY, {
        poison: () => {
          throw new ProviderUnavailableError('always down');
        },
      });
      const body = jobBody('notification.send');
      let receives = 0;
      let inQueue = true;

      // Act: redeliver while the runner reports it as a failure, as SQS would (bounded against a hang).
      while (inQueue && receives < NOTIFY.maxAttempts + 5) {
        receives += 1;
        const response = await runner.run(
          eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'poison', body, attempt: receives })),
        );
        inQueue = failedIds(response).includes('poison');
      }

      // Assess
      expect(receives).toBe(NOTIFY.maxAttempts);
      expect(runner.calls).toHaveLength(NOTIFY.maxAttempts);
      expect(sqsMock).toHaveReceivedCommandTimes(ChangeMessageVisibilityCommand, NOTIFY.maxAttempts - 1);
      expect(sqsMock).toHaveReceivedCommandTimes(SendMessageCommand, 1);
      const delays = sqsMock
        .commandCalls(ChangeMessageVisibilityCommand)
        .map((call) => call.args[0].input.VisibilityTimeout as number);
      delays.forEach((delay, i) =>
        expect(delay).toBeLessThanOrEqual(backoffCeilingSeconds(NOTIFY.retry, i + 1)),
      );
    });
  });

  describe('when sheddable work is past its useful age (B5)', () => {
    const usefulAge = NOTIFY.usefulAgeSeconds ?? 0;
    const agedBy = (seconds: number): Date => new Date(NOW.getTime() - seconds * 1000);

    it('when one notification is older than its useful age, it goes to the side queue with its age, is counted and not run, and its fresh batch-mate runs', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY);
      const stale = jobBody('notification.send', 'ord-old', agedBy(usefulAge + 1));
      const fresh = jobBody('notification.send', 'ord-new');

      // Act
      const response = await runner.run(
        eventOf(
          sqsRecord({ jobType: NOTIFY, messageId: 'm-old', body: stale }),
          sqsRecord({ jobType: NOTIFY, messageId: 'm-new', body: fresh }),
        ),
      );

      // Assess
      expect(usefulAge).toBeGreaterThan(NOTIFY.latencyObjectiveSeconds);
      expect(failedIds(response)).toEqual([]);
      expect(runner.handledIds()).toEqual(['m-new']);
      expect(sentMessages()).toEqual([
        {
          QueueUrl: queueUrl(NOTIFY.expiredQueueName ?? ''),
          MessageBody: stale,
          MessageAttributes: {
            [EXPIRED_ATTRIBUTE.ageSeconds]: number(usefulAge + 1),
            [EXPIRED_ATTRIBUTE.usefulAgeSeconds]: number(usefulAge),
            [EXPIRED_ATTRIBUTE.expiredAt]: string(NOW.toISOString()),
            [EXPIRED_ATTRIBUTE.jobType]: string('notification.send'),
            [EXPIRED_ATTRIBUTE.correlationId]: string('corr-ord-old'),
            [EXPIRED_ATTRIBUTE.sourceMessageId]: string('m-old'),
          },
        },
      ]);
      expect(metricValues(METRIC.jobExpired)).toEqual([1]);
      expect(metricTotal(METRIC.jobSucceeded)).toBe(1);
    });

    it('when a notification is exactly its useful age old, it still runs', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY);
      const body = jobBody('notification.send', 'ord-1', agedBy(usefulAge));

      // Act
      await runner.run(eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body })));

      // Assess
      expect(runner.handledIds()).toEqual(['m-1']);
      expect(sentMessages()).toEqual([]);
    });

    it('when the side queue refuses the job, the record fails and returns: nothing is dropped', async () => {
      // Prepare
      sqsMock.on(SendMessageCommand).rejects(new Error('AccessDenied'));
      const runner = runnerFor(NOTIFY);
      const body = jobBody('notification.send', 'ord-1', agedBy(usefulAge + 60));

      // Act
      const response = await runner.run(eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body })));

      // Assess
      expect(failedIds(response)).toEqual(['m-1']);
      expect(runner.handledIds()).toEqual([]);
      expect(metricValues(METRIC.jobExpired)).toEqual([]);
    });

    it('when critical work is a week old, it still runs: only declared sheddable work expires', async () => {
      // Prepare
      const runner = runnerFor(PAYMENT);
      const body = jobBody('payment.capture', 'ord-1', agedBy(7 * 86_400));

      // Act
      await runner.run(eventOf(sqsRecord({ jobType: PAYMENT, messageId: 'm-1', body })));

      // Assess
      expect(PAYMENT.usefulAgeSeconds).toBeUndefined();
      expect(runner.handledIds()).toEqual(['m-1']);
    });

    it('when a job type declares a useful age but the consumer has no side queue, building the runner fails naming EXPIRED_QUEUE_URL', () => {
      // Act
      const build = (): unknown =>
        createSqsJobRunner({
          jobType: NOTIFY,
          expectedType: 'notification.send',
          payloadSchema: PAYLOADS['notification.send'],
          queueUrl: queueUrl(NOTIFY.queueName),
          dlqUrl: queueUrl(NOTIFY.dlqName),
          sqs: new SQSClient({ region: REGION }),
          logger: new Logger({ serviceName: NOTIFY.consumer, logLevel: 'SILENT' }),
          metrics: new Metrics({ namespace: 'tenang', serviceName: NOTIFY.consumer }),
          handle: () => Promise.resolve({ kind: 'done' }),
        });

      // Assess
      expect(build).toThrow(/usefulAgeSeconds.*EXPIRED_QUEUE_URL/);
    });
  });

  describe('when the handler defers the job', () => {
    it('when the queue is standard, it re-sends the message to the source queue with a delay and one more deferral, and does not fail it', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY, {
        'm-1': () => ({ kind: 'deferred', delaySeconds: 30, reason: 'degraded' }),
      });
      const body = jobBody('notification.send');
      const record = sqsRecord({
        jobType: NOTIFY,
        messageId: 'm-1',
        body,
        attempt: 3,
        messageAttributes: {
          [DEFERRALS_ATTRIBUTE]: {
            dataType: 'Number',
            stringValue: '2',
            stringListValues: [],
            binaryListValues: [],
          },
          traceparent: {
            dataType: 'String',
            stringValue: '00-abc-def-01',
            stringListValues: [],
            binaryListValues: [],
          },
        },
      });

      // Act
      const response = await runner.run(eventOf(record));

      // Assess
      expect(failedIds(response)).toEqual([]);
      expect(sqsMock).not.toHaveReceivedCommand(ChangeMessageVisibilityCommand);
      expect(sentMessages()).toEqual([
        {
          QueueUrl: queueUrl('tenang-test-notification-send'),
          MessageBody: body,
          DelaySeconds: 30,
          MessageAttributes: {
            [DEFERRALS_ATTRIBUTE]: number(3),
            traceparent: string('00-abc-def-01'),
          },
        },
      ]);
      expect(metricValues(METRIC.jobDeferred)).toEqual([1]);
    });

    it('when the message was never deferred, it starts the count at 1', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY, {
        'm-1': () => ({ kind: 'deferred', delaySeconds: 5, reason: 'lock busy' }),
      });

      // Act
      await runner.run(
        eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('notification.send') })),
      );

      // Assess
      expect(sentMessages()[0]?.MessageAttributes?.[DEFERRALS_ATTRIBUTE]).toEqual(number(1));
    });

    it('when the delay asked for exceeds what SQS allows, it caps it at 900 s', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY, {
        'm-1': () => ({ kind: 'deferred', delaySeconds: 5_000, reason: 'paused' }),
      });

      // Act
      await runner.run(
        eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('notification.send') })),
      );

      // Assess
      expect(sentMessages()[0]?.DelaySeconds).toBe(900);
    });

    it('when the queue is FIFO, it holds the message by its visibility and fails the record', async () => {
      // Prepare
      const runner = runnerFor(PAYMENT, {
        'm-1': () => ({ kind: 'deferred', delaySeconds: 30, reason: 'lock busy' }),
      });

      // Act
      const response = await runner.run(
        eventOf(
          sqsRecord({
            jobType: PAYMENT,
            messageId: 'm-1',
            body: jobBody('payment.capture'),
            groupId: 'ord-1',
          }),
        ),
      );

      // Assess
      expect(failedIds(response)).toEqual(['m-1']);
      expect(sqsMock).toHaveReceivedCommandWith(ChangeMessageVisibilityCommand, {
        QueueUrl: queueUrl('tenang-test-payment-capture.fifo'),
        ReceiptHandle: 'receipt-m-1',
        VisibilityTimeout: 30,
      });
      expect(sqsMock).not.toHaveReceivedCommand(SendMessageCommand);
    });
  });

  describe('when the queue is FIFO', () => {
    /** A payment record of message group `group`. */
    const record = (messageId: string, group: string): SQSRecord =>
      sqsRecord({ jobType: PAYMENT, messageId, body: jobBody('payment.capture', group), groupId: group });

    it('when a record of group A fails, the later A records fail unprocessed and group B records succeed', async () => {
      // Prepare
      const runner = runnerFor(PAYMENT, {
        'a-1': () => {
          throw new ProviderUnavailableError('https://payments.example.com/charges: HTTP 503');
        },
      });

      // Act
      const response = await runner.run(
        eventOf(
          record('a-1', 'ord-a'),
          record('b-1', 'ord-b'),
          record('a-2', 'ord-a'),
          record('b-2', 'ord-b'),
        ),
      );

      // Assess
      expect(failedIds(response)).toEqual(['a-1', 'a-2']);
      expect(runner.handledIds()).toEqual(['a-1', 'b-1', 'b-2']);
    });

    it('when a batch holds several groups, the groups run at the same time and each group in order', async () => {
      // Prepare: a-1 waits until b-2 has run, which it could not if the groups ran one after another.
      let bDone: () => void = () => undefined;
      const b2Ran = new Promise<void>((resolve) => {
        bDone = resolve;
      });
      const runner = runnerFor(PAYMENT, {
        'a-1': async () => {
          await b2Ran;
          return { kind: 'done' };
        },
        'b-2': () => {
          bDone();
          return Promise.resolve({ kind: 'done' });
        },
      });

      // Act
      const response = await runner.run(
        eventOf(
          record('a-1', 'ord-a'),
          record('a-2', 'ord-a'),
          record('b-1', 'ord-b'),
          record('b-2', 'ord-b'),
        ),
      );

      // Assess: group B ran while a-1 waited; a-2 only after a-1.
      expect(failedIds(response)).toEqual([]);
      const order = runner.handledIds();
      expect(order.indexOf('b-2')).toBeLessThan(order.indexOf('a-2'));
      expect(order.indexOf('a-1')).toBeLessThan(order.indexOf('a-2'));
      expect(order.indexOf('b-1')).toBeLessThan(order.indexOf('b-2'));
    });

    it('when a record fails, its backoff is set and each group-mate skipped behind it is made visible at once', async () => {
      // Prepare
      const runner = runnerFor(PAYMENT, {
        'a-1': () => {
          throw new ProviderUnavailableError('https://payments.example.com/charges: HTTP 503');
        },
      });

      // Act
      await runner.run(
        eventOf(
          record('a-1', 'ord-a'),
          record('b-1', 'ord-b'),
          record('a-2', 'ord-a'),
          record('a-3', 'ord-a'),
        ),
      );

      // Assess: SQS keeps the order, since the failed head is still in flight and holds its group.
      const ceiling = backoffCeilingSeconds(PAYMENT.retry, 1);
      const backoff = Math.floor(seededRandom(SEED)() * (ceiling + 1));
      const changes = sqsMock
        .commandCalls(ChangeMessageVisibilityCommand)
        .map((call) => [call.args[0].input.ReceiptHandle, call.args[0].input.VisibilityTimeout]);
      expect(changes).toEqual([
        ['receipt-a-1', backoff],
        ['receipt-a-2', 0],
        ['receipt-a-3', 0],
      ]);
      expect(sqsMock).toHaveReceivedCommandWith(ChangeMessageVisibilityCommand, {
        QueueUrl: queueUrl('tenang-test-payment-capture.fifo'),
        ReceiptHandle: 'receipt-a-2',
      });
    });

    it('when a record is deferred, its group-mates skipped behind it are made visible at once too', async () => {
      // Prepare
      const runner = runnerFor(PAYMENT, {
        'a-1': () => ({ kind: 'deferred', delaySeconds: 30, reason: 'lock busy' }),
      });
      const record = (messageId: string): SQSRecord =>
        sqsRecord({
          jobType: PAYMENT,
          messageId,
          body: jobBody('payment.capture', 'ord-a'),
          groupId: 'ord-a',
        });

      // Act
      const response = await runner.run(eventOf(record('a-1'), record('a-2')));

      // Assess
      expect(failedIds(response)).toEqual(['a-1', 'a-2']);
      expect(
        sqsMock
          .commandCalls(ChangeMessageVisibilityCommand)
          .map((call) => [call.args[0].input.ReceiptHandle, call.args[0].input.VisibilityTimeout]),
      ).toEqual([
        ['receipt-a-1', 30],
        ['receipt-a-2', 0],
      ]);
    });

    it('when making a skipped record visible fails, it is still reported as failed and the failure is logged', async () => {
      // Prepare
      sqsMock
        .on(ChangeMessageVisibilityCommand, { ReceiptHandle: 'receipt-a-2' })
        .rejects(new Error('ReceiptHandleIsInvalid'));
      const warn = jest.spyOn(Logger.prototype, 'warn');
      const runner = runnerFor(PAYMENT, {
        'a-1': () => {
          throw new ProviderUnavailableError('https://payments.example.com/charges: HTTP 503');
        },
      });
      const record = (messageId: string): SQSRecord =>
        sqsRecord({
          jobType: PAYMENT,
          messageId,
          body: jobBody('payment.capture', 'ord-a'),
          groupId: 'ord-a',
        });

      // Act
      const response = await runner.run(eventOf(record('a-1'), record('a-2')));

      // Assess
      expect(failedIds(response)).toEqual(['a-1', 'a-2']);
      expect(warn).toHaveBeenCalledWith(
        'could not release a skipped FIFO message; it returns after its visibility timeout',
        expect.anything(),
      );
    });

    it('when no record fails, it changes no visibility', async () => {
      // Prepare
      const runner = runnerFor(PAYMENT);
      const record = (messageId: string): SQSRecord =>
        sqsRecord({
          jobType: PAYMENT,
          messageId,
          body: jobBody('payment.capture', 'ord-a'),
          groupId: 'ord-a',
        });

      // Act
      const response = await runner.run(eventOf(record('a-1'), record('a-2')));

      // Assess
      expect(failedIds(response)).toEqual([]);
      expect(sqsMock).not.toHaveReceivedCommand(ChangeMessageVisibilityCommand);
    });

    it('when a record of group A is dead-lettered, the later A records still run (the failed one left the queue)', async () => {
      // Prepare
      const runner = runnerFor(PAYMENT);
      const records = [
        sqsRecord({ jobType: PAYMENT, messageId: 'a-1', body: '{"broken"', groupId: 'ord-a' }),
        sqsRecord({
          jobType: PAYMENT,
          messageId: 'a-2',
          body: jobBody('payment.capture', 'ord-a'),
          groupId: 'ord-a',
        }),
      ];

      // Act
      const response = await runner.run(eventOf(...records));

      // Assess
      expect(failedIds(response)).toEqual([]);
      expect(runner.handledIds()).toEqual(['a-2']);
    });

    it('when a message is dead-lettered, the DLQ send carries its group and a deduplication id', async () => {
      // Prepare
      const runner = runnerFor(PAYMENT);
      const body = JSON.stringify({ ...JSON.parse(jobBody('payment.capture', 'ord-7')), version: 99 });

      // Act
      const response = await runner.run(
        eventOf(sqsRecord({ jobType: PAYMENT, messageId: 'm-7', body, groupId: 'ord-7', attempt: 1 })),
      );

      // Assess
      expect(failedIds(response)).toEqual([]);
      expect(sentMessages()).toEqual([
        expect.objectContaining({
          QueueUrl: queueUrl('tenang-test-payment-capture-dlq.fifo'),
          MessageBody: body,
          MessageGroupId: 'ord-7',
          MessageDeduplicationId: 'm-7',
          MessageAttributes: expect.objectContaining({
            [DLQ_ATTRIBUTE.errorClass]: string('ValidationError'),
            [DLQ_ATTRIBUTE.jobType]: string('payment.capture'),
          }),
        }),
      ]);
    });
  });

  describe('when the deployment denies an action (a permission error)', () => {
    const ordersTable = 'tenang-test-dedup';

    it('when the handler is denied a DynamoDB write, the job is held with the first hold, counted, logged once naming the action, and not dead-lettered', async () => {
      // Prepare
      const runner = runnerFor(
        NOTIFY,
        {
          'm-1': () => {
            throw dynamoDenied('dynamodb:UpdateItem', ordersTable);
          },
        },
        { logLevel: 'ERROR' },
      );

      // Act
      const response = await runner.run(
        eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('notification.send') })),
      );

      // Assess
      const hold = firstHold(NOTIFY, 1);
      expect(hold).toBeGreaterThanOrEqual(150);
      expect(hold).toBeLessThanOrEqual(300);
      expect(failedIds(response)).toEqual(['m-1']);
      expect(sqsMock).not.toHaveReceivedCommand(SendMessageCommand);
      expect(visibilityChanges()).toEqual([['receipt-m-1', hold]]);
      expect(metricValues(METRIC.permissionDenied)).toEqual([1]);
      expect(metricValues(METRIC.jobFailedPermanently)).toEqual([]);
      expect(metricValues(METRIC.jobRetried)).toEqual([]);
      const lines = errorLines();
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        service: NOTIFY.consumer,
        messageId: 'm-1',
        correlationId: 'corr-ord-1',
        deniedAction: 'dynamodb:UpdateItem',
        deniedResource: `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${ordersTable}`,
        errorCode: 'AccessDeniedException',
        held: true,
        holdSeconds: hold,
        attempt: 1,
      });
      expect(String(lines[0]?.message)).toContain(
        `dynamodb:UpdateItem on arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${ordersTable}`,
      );
      expect(String(lines[0]?.message)).toContain(`runbooks/${PERMISSION_DENIED_RUNBOOK}.md`);
    });

    it('when PermissionDenied is emitted, it carries the same dimensions as the other job metrics', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY, {
        'm-1': () => {
          throw dynamoDenied('dynamodb:UpdateItem', ordersTable);
        },
      });

      // Act
      await runner.run(
        eventOf(
          sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('notification.send') }),
          sqsRecord({ jobType: NOTIFY, messageId: 'm-2', body: jobBody('notification.send', 'ord-2') }),
        ),
      );

      // Assess
      const dimensionsOf = (name: string): unknown[] =>
        stdout
          .map(
            (line) =>
              JSON.parse(line) as {
                _aws?: { CloudWatchMetrics: { Dimensions: unknown; Metrics: { Name: string }[] }[] };
              },
          )
          .flatMap((doc) => doc._aws?.CloudWatchMetrics ?? [])
          .filter((m) => m.Metrics.some((metric) => metric.Name === name))
          .map((m) => m.Dimensions);
      expect(dimensionsOf(METRIC.permissionDenied)).toEqual(dimensionsOf(METRIC.jobSucceeded));
      expect(dimensionsOf(METRIC.permissionDenied)).toEqual([[['service']]]);
    });

    it('when it is the last allowed attempt, the job is still held, never sent to the DLQ nor deleted', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY, {
        'm-1': () => {
          throw dynamoDenied('dynamodb:UpdateItem', ordersTable);
        },
      });
      const attempt = NOTIFY.maxAttempts;

      // Act
      const response = await runner.run(
        eventOf(
          sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('notification.send'), attempt }),
        ),
      );

      // Assess
      expect(failedIds(response)).toEqual(['m-1']);
      expect(sqsMock).not.toHaveReceivedCommand(SendMessageCommand);
      expect(visibilityChanges()).toEqual([['receipt-m-1', firstHold(NOTIFY, attempt)]]);
      expect(firstHold(NOTIFY, attempt)).toBeGreaterThanOrEqual((300 * 2 ** (attempt - 1)) / 2);
      expect(metricValues(METRIC.permissionDenied)).toEqual([1]);
    });

    it('when one job of a batch is denied, its batch-mates still succeed', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY, {
        'm-2': () => {
          throw dynamoDenied('dynamodb:UpdateItem', ordersTable);
        },
      });

      // Act
      const response = await runner.run(
        eventOf(
          sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('notification.send', 'ord-1') }),
          sqsRecord({ jobType: NOTIFY, messageId: 'm-2', body: jobBody('notification.send', 'ord-2') }),
          sqsRecord({ jobType: NOTIFY, messageId: 'm-3', body: jobBody('notification.send', 'ord-3') }),
        ),
      );

      // Assess
      expect(failedIds(response)).toEqual(['m-2']);
      expect(runner.handledIds().sort()).toEqual(['m-1', 'm-2', 'm-3']);
      expect(metricTotal(METRIC.jobSucceeded)).toBe(2);
      expect(metricTotal(METRIC.permissionDenied)).toBe(1);
      expect(sqsMock).not.toHaveReceivedCommand(SendMessageCommand);
    });

    it("when Powertools' idempotency wraps the persistence layer's denial in its cause, the job is held too", async () => {
      // Prepare
      const runner = runnerFor(PAYMENT, {
        'm-1': () => {
          throw new IdempotencyPersistenceLayerError(
            'Failed to save in progress record to idempotency store',
            {
              cause: dynamoDenied('dynamodb:PutItem', 'tenang-test-idempotency'),
            },
          );
        },
      });

      // Act
      const response = await runner.run(
        eventOf(sqsRecord({ jobType: PAYMENT, messageId: 'm-1', body: jobBody('payment.capture') })),
      );

      // Assess
      expect(failedIds(response)).toEqual(['m-1']);
      expect(sqsMock).not.toHaveReceivedCommand(SendMessageCommand);
      expect(visibilityChanges()).toEqual([['receipt-m-1', firstHold(PAYMENT, 1)]]);
      expect(metricValues(METRIC.permissionDenied)).toEqual([1]);
    });

    it('when the deferral re-send (SendMessage to its own queue) is denied, the job is held, not dead-lettered', async () => {
      // Prepare
      sqsMock.on(SendMessageCommand).rejects(sqsDenied('sqs:SendMessage', NOTIFY.queueName));
      const runner = runnerFor(
        NOTIFY,
        { 'm-1': () => ({ kind: 'deferred', delaySeconds: 30, reason: 'lock busy' }) },
        { logLevel: 'ERROR' },
      );

      // Act
      const response = await runner.run(
        eventOf(
          sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('notification.send'), attempt: 2 }),
        ),
      );

      // Assess: one send, the deferral's, to the source queue; none to the DLQ.
      expect(failedIds(response)).toEqual(['m-1']);
      expect(sentMessages().map((m) => m.QueueUrl)).toEqual([queueUrl(NOTIFY.queueName)]);
      expect(visibilityChanges()).toEqual([['receipt-m-1', firstHold(NOTIFY, 2)]]);
      expect(metricValues(METRIC.permissionDenied)).toEqual([1]);
      expect(errorLines()).toEqual([
        expect.objectContaining({
          deniedAction: 'sqs:SendMessage',
          deniedResource: `arn:aws:sqs:${REGION}:${ACCOUNT}:${NOTIFY.queueName}`,
          errorCode: 'AccessDenied',
        }),
      ]);
    });

    it('when the deferral re-send is denied on the last attempt, the job is still held', async () => {
      // Prepare
      sqsMock.on(SendMessageCommand).rejects(sqsDenied('sqs:SendMessage', NOTIFY.queueName));
      const runner = runnerFor(NOTIFY, {
        'm-1': () => ({ kind: 'deferred', delaySeconds: 30, reason: 'lock busy' }),
      });

      // Act
      const response = await runner.run(
        eventOf(
          sqsRecord({
            jobType: NOTIFY,
            messageId: 'm-1',
            body: jobBody('notification.send'),
            attempt: NOTIFY.maxAttempts,
          }),
        ),
      );

      // Assess
      expect(failedIds(response)).toEqual(['m-1']);
      expect(sentMessages().map((m) => m.QueueUrl)).toEqual([queueUrl(NOTIFY.queueName)]);
      expect(visibilityChanges()).toEqual([['receipt-m-1', firstHold(NOTIFY, NOTIFY.maxAttempts)]]);
    });

    it('when a permanently failing job cannot be dead-lettered because the DLQ send is denied, it is held in its queue, not deleted', async () => {
      // Prepare
      sqsMock.on(SendMessageCommand).rejects(sqsDenied('sqs:SendMessage', NOTIFY.dlqName));
      const runner = runnerFor(NOTIFY, {}, { logLevel: 'ERROR' });

      // Act
      const response = await runner.run(
        eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: 'not json' })),
      );

      // Assess
      expect(failedIds(response)).toEqual(['m-1']);
      expect(sentMessages().map((m) => m.QueueUrl)).toEqual([queueUrl(NOTIFY.dlqName)]);
      expect(visibilityChanges()).toEqual([['receipt-m-1', firstHold(NOTIFY, 1)]]);
      expect(metricValues(METRIC.permissionDenied)).toEqual([1]);
      // Not counted as dead-lettered: it was not.
      expect(metricValues(METRIC.jobFailedPermanently)).toEqual([]);
      expect(errorLines()).toEqual([
        expect.objectContaining({
          deniedAction: 'sqs:SendMessage',
          deniedResource: `arn:aws:sqs:${REGION}:${ACCOUNT}:${NOTIFY.dlqName}`,
          errorClass: 'AccessDenied',
        }),
      ]);
      expect(String(errorLines()[0]?.message)).toContain('sending a failed job to the DLQ');
    });

    it('when the DLQ send is denied on the last attempt of a transient failure, the job is held, not deleted', async () => {
      // Prepare
      sqsMock.on(SendMessageCommand).rejects(sqsDenied('sqs:SendMessage', NOTIFY.dlqName));
      const runner = runnerFor(NOTIFY, {
        'm-1': () => {
          throw new ProviderUnavailableError('https://messaging.example.com/messages: HTTP 503');
        },
      });

      // Act
      const response = await runner.run(
        eventOf(
          sqsRecord({
            jobType: NOTIFY,
            messageId: 'm-1',
            body: jobBody('notification.send'),
            attempt: NOTIFY.maxAttempts,
          }),
        ),
      );

      // Assess
      expect(failedIds(response)).toEqual(['m-1']);
      expect(visibilityChanges()).toEqual([['receipt-m-1', firstHold(NOTIFY, NOTIFY.maxAttempts)]]);
      expect(metricValues(METRIC.permissionDenied)).toEqual([1]);
    });

    it('when the DLQ send of a bug on its last attempt is denied, the job is held, not deleted', async () => {
      // Prepare
      sqsMock.on(SendMessageCommand).rejects(sqsDenied('sqs:SendMessage', NOTIFY.dlqName));
      const runner = runnerFor(NOTIFY, {
        'm-1': () => {
          throw new TypeError('cannot read properties of undefined');
        },
      });

      // Act
      const response = await runner.run(
        eventOf(
          sqsRecord({
            jobType: NOTIFY,
            messageId: 'm-1',
            body: jobBody('notification.send'),
            attempt: NOTIFY.maxAttempts,
          }),
        ),
      );

      // Assess
      expect(failedIds(response)).toEqual(['m-1']);
      expect(visibilityChanges()).toEqual([['receipt-m-1', firstHold(NOTIFY, NOTIFY.maxAttempts)]]);
      expect(metricValues(METRIC.permissionDenied)).toEqual([1]);
      expect(metricValues(METRIC.jobBug)).toEqual([1]);
    });

    it('when the side queue send of an expired job is denied, the job is held, not dead-lettered', async () => {
      // Prepare
      sqsMock.on(SendMessageCommand).rejects(sqsDenied('sqs:SendMessage', NOTIFY.expiredQueueName ?? ''));
      const runner = runnerFor(NOTIFY);
      const aged = new Date(NOW.getTime() - ((NOTIFY.usefulAgeSeconds ?? 0) + 60) * 1000);

      // Act
      const response = await runner.run(
        eventOf(
          sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('notification.send', 'ord-1', aged) }),
        ),
      );

      // Assess
      expect(failedIds(response)).toEqual(['m-1']);
      expect(sentMessages().map((m) => m.QueueUrl)).toEqual([queueUrl(NOTIFY.expiredQueueName ?? '')]);
      expect(visibilityChanges()).toEqual([['receipt-m-1', firstHold(NOTIFY, 1)]]);
    });

    it('when the hold itself is denied too, the record still fails: the message returns after the visibility timeout, not dead-lettered', async () => {
      // Prepare
      sqsMock
        .on(ChangeMessageVisibilityCommand)
        .rejects(sqsDenied('sqs:ChangeMessageVisibility', NOTIFY.queueName));
      const runner = runnerFor(
        NOTIFY,
        {
          'm-1': () => {
            throw dynamoDenied('dynamodb:UpdateItem', ordersTable);
          },
        },
        { logLevel: 'ERROR' },
      );

      // Act
      const response = await runner.run(
        eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('notification.send') })),
      );

      // Assess
      expect(failedIds(response)).toEqual(['m-1']);
      expect(sqsMock).not.toHaveReceivedCommand(SendMessageCommand);
      expect(metricValues(METRIC.permissionDenied)).toEqual([1]);
      expect(errorLines()).toEqual([
        expect.objectContaining({
          deniedAction: 'dynamodb:UpdateItem',
          held: false,
          holdError: 'AccessDenied (sqs:ChangeMessageVisibility)',
        }),
      ]);
    });

    it('when a transient failure cannot set its retry delay because that is denied, the denial is counted and the record still fails', async () => {
      // Prepare
      sqsMock
        .on(ChangeMessageVisibilityCommand)
        .rejects(sqsDenied('sqs:ChangeMessageVisibility', NOTIFY.queueName));
      const runner = runnerFor(NOTIFY, {
        'm-1': () => {
          throw new ProviderUnavailableError('timeout');
        },
      });

      // Act
      const response = await runner.run(
        eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('notification.send') })),
      );

      // Assess
      expect(failedIds(response)).toEqual(['m-1']);
      expect(metricValues(METRIC.jobRetried)).toEqual([1]);
      expect(metricValues(METRIC.permissionDenied)).toEqual([1]);
    });

    it('when a FIFO record is denied, it is held and blocks its group like any retry; the other group succeeds', async () => {
      // Prepare
      const runner = runnerFor(PAYMENT, {
        'a-1': () => {
          throw dynamoDenied('dynamodb:TransactWriteItems', 'tenang-test-orders');
        },
      });
      const record = (messageId: string, group: string): SQSRecord =>
        sqsRecord({ jobType: PAYMENT, messageId, body: jobBody('payment.capture', group), groupId: group });

      // Act
      const response = await runner.run(
        eventOf(
          record('a-1', 'ord-a'),
          record('b-1', 'ord-b'),
          record('a-2', 'ord-a'),
          record('b-2', 'ord-b'),
        ),
      );

      // Assess
      expect(failedIds(response)).toEqual(['a-1', 'a-2']);
      expect(runner.handledIds()).toEqual(['a-1', 'b-1', 'b-2']);
      expect(visibilityChanges()).toEqual([
        ['receipt-a-1', firstHold(PAYMENT, 1)],
        ['receipt-a-2', 0],
      ]);
      expect(sqsMock).not.toHaveReceivedCommand(SendMessageCommand);
      expect(metricTotal(METRIC.jobSucceeded)).toBe(2);
    });

    it('when a FIFO deferral hold is denied, the job is held by the permission schedule instead of dead-lettered', async () => {
      // Prepare: the deferral's own visibility change is refused once, the permission hold is not.
      sqsMock
        .on(ChangeMessageVisibilityCommand)
        .rejectsOnce(sqsDenied('sqs:ChangeMessageVisibility', PAYMENT.queueName))
        .resolves({});
      const runner = runnerFor(PAYMENT, {
        'm-1': () => ({ kind: 'deferred', delaySeconds: 20, reason: 'in progress elsewhere' }),
      });

      // Act
      const response = await runner.run(
        eventOf(sqsRecord({ jobType: PAYMENT, messageId: 'm-1', body: jobBody('payment.capture') })),
      );

      // Assess
      expect(failedIds(response)).toEqual(['m-1']);
      expect(sqsMock).not.toHaveReceivedCommand(SendMessageCommand);
      expect(visibilityChanges()).toEqual([
        ['receipt-m-1', 20],
        ['receipt-m-1', firstHold(PAYMENT, 1)],
      ]);
      expect(metricValues(METRIC.permissionDenied)).toEqual([1]);
    });

    it('when a denied job is redelivered on every receive, the runner never dead-letters it and its holds grow', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY, {
        'm-1': () => {
          throw dynamoDenied('dynamodb:UpdateItem', ordersTable);
        },
      });
      const body = jobBody('notification.send');

      // Act: every receive SQS would make before its own redrive.
      for (let attempt = 1; attempt <= NOTIFY.maxAttempts; attempt += 1) {
        const response = await runner.run(
          eventOf(sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body, attempt })),
        );
        expect(failedIds(response)).toEqual(['m-1']);
      }

      // Assess
      expect(sqsMock).not.toHaveReceivedCommand(SendMessageCommand);
      const holds = visibilityChanges().map(([, seconds]) => seconds ?? 0);
      expect(holds).toHaveLength(NOTIFY.maxAttempts);
      holds.forEach((hold, i) => {
        const ceiling = 300 * 2 ** i;
        expect(hold).toBeGreaterThanOrEqual(ceiling / 2);
        expect(hold).toBeLessThanOrEqual(ceiling);
      });
      expect(metricTotal(METRIC.permissionDenied)).toBe(NOTIFY.maxAttempts);
    });
  });

  describe('when the handler throws an unexpected error (bug)', () => {
    it('when attempts remain, it fails the record without changing its visibility and counts a bug', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY, {
        'm-1': () => {
          throw new TypeError("Cannot read properties of undefined (reading 'id')");
        },
        'm-2': () => ({ kind: 'done' }),
      });

      // Act
      const response = await runner.run(
        eventOf(
          sqsRecord({ jobType: NOTIFY, messageId: 'm-1', body: jobBody('notification.send', 'ord-1') }),
          sqsRecord({ jobType: NOTIFY, messageId: 'm-2', body: jobBody('notification.send', 'ord-2') }),
        ),
      );

      // Assess
      expect(failedIds(response)).toEqual(['m-1']);
      expect(sqsMock).not.toHaveReceivedCommand(ChangeMessageVisibilityCommand);
      expect(sqsMock).not.toHaveReceivedCommand(SendMessageCommand);
      expect(metricValues(METRIC.jobBug)).toEqual([1]);
      expect(metricValues(METRIC.jobSucceeded)).toEqual([1]);
    });

    it('when it is the last allowed attempt, it dead-letters the message as a bug', async () => {
      // Prepare
      const runner = runnerFor(NOTIFY, {
        'm-1': () => {
          throw new TypeError('boom');
        },
      });

      // Act
      const response = await runner.run(
        eventOf(
          sqsRecord({
            jobType: NOTIFY,
            messageId: 'm-1',
            body: jobBody('notification.send'),
            attempt: NOTIFY.maxAttempts,
          }),
        ),
      );

      // Assess
      expect(failedIds(response)).toEqual([]);
      expect(sentMessages()[0]?.MessageAttributes).toMatchObject({
        [DLQ_ATTRIBUTE.errorClass]: string('TypeError'),
        [DLQ_ATTRIBUTE.errorKind]: string('bug'),
      });
    });
  });
});
