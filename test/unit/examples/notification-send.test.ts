import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import {
  ChangeMessageVisibilityCommand,
  SendMessageCommand,
  SQSClient,
  type SendMessageCommandInput,
} from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { inFlightClaimSeconds, notificationSend } from '../../../examples/reference/jobs/notification-send';
import { createJobHandler, jobHandler } from '../../../lib/adapters/define-job';
import { InMemoryDedupStore } from '../../../harness/fakes/memory-dedup-store';
import { FunctionEnvError, stageConfig } from '../../../lib/adapters/lambda-env';
import { jobTypeByName, METRIC } from '../../../lib/config';
import { CircuitBreaker } from '../../../lib/core/circuit-breaker';
import type { NotificationSendPayload } from '../../../examples/reference/domain/payloads';
import { TransientError } from '../../../lib/core/errors';
import type { MessagingProvider, OutgoingMessage } from '../../../examples/reference/domain/notification';
import { TokenBucket } from '../../../lib/core/token-bucket';
import { jobRecord, sqsEvent } from '../../helpers/job-records';
import { manualClock, type ManualClock } from '../../helpers/manual-clock';
import { lambdaContext } from '../../helpers/sqs-events';

const ENV = {
  QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-unit-notification-send',
  DLQ_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-unit-notification-send-dlq',
  EXPIRED_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-unit-notification-send-expired',
};
const JOB_TYPE = jobTypeByName(stageConfig('unit', 'eu-west-1'), 'notification.send');
const SERVICE_NAME = 'notification-consumer';
const sqsMock = mockClient(SQSClient);

afterEach(() => {
  jest.restoreAllMocks();
});

beforeEach(() => {
  sqsMock.reset();
  sqsMock.on(SendMessageCommand).resolves({ MessageId: 'resent' });
  sqsMock.on(ChangeMessageVisibilityCommand).resolves({});
});

/** A provider port that records calls, how many overlap, and answers as told. */
class RecordingProvider implements MessagingProvider {
  public readonly calls: OutgoingMessage[] = [];
  public maxInFlight = 0;
  public fail = false;
  private inFlight = 0;

  public async send(message: OutgoingMessage): Promise<{ messageId: string }> {
    this.calls.push(message);
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    await new Promise((resolve) => setImmediate(resolve));
    this.inFlight -= 1;
    if (this.fail) throw new TransientError('HTTP 503');
    return { messageId: `msg-${this.calls.length}` };
  }
}

interface Fixture {
  readonly clock: ManualClock;
  readonly dedup: InMemoryDedupStore;
  readonly provider: RecordingProvider;
  readonly breaker: CircuitBreaker;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly handler: ReturnType<typeof createJobHandler>;
}

function fixture(opts: { degraded?: () => Promise<boolean> } = {}): Fixture {
  const clock = manualClock();
  const dedup = new InMemoryDedupStore(clock);
  const provider = new RecordingProvider();
  const breaker = new CircuitBreaker({
    name: 'messaging-provider',
    failureThreshold: 2,
    windowMs: 10_000,
    coolDownMs: 20_000,
    limitInFlightToThreshold: true,
    clock,
  });
  const logger = new Logger({ serviceName: SERVICE_NAME, logLevel: 'SILENT' });
  const metrics = new Metrics({ namespace: 'tenang', serviceName: SERVICE_NAME });
  jest.spyOn(metrics, 'addMetric');
  jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
  const handler = createJobHandler(notificationSend, {
    jobType: JOB_TYPE,
    queueUrl: ENV.QUEUE_URL,
    dlqUrl: ENV.DLQ_URL,
    expiredQueueUrl: ENV.EXPIRED_QUEUE_URL,
    sqs: new SQSClient({ region: 'eu-west-1' }),
    logger,
    metrics,
    state: {
      dedup,
      provider,
      breaker,
      rate: new TokenBucket({ ratePerSecond: 100, burst: 100, clock }),
      inFlightClaimSeconds: inFlightClaimSeconds(JOB_TYPE),
      sleep: () => Promise.resolve(),
    },
    isDegraded: opts.degraded ?? (() => Promise.resolve(false)),
    random: () => 0,
    clock,
  });
  return { clock, dedup, provider, breaker, metrics, logger, handler };
}

function notification(messageId: string, orderId = 'order-1'): ReturnType<typeof jobRecord> {
  const payload: NotificationSendPayload = {
    orderId,
    template: 'order-paid',
    recipient: 'ayu@example.com',
    orderVersion: 2,
  };
  return jobRecord({ type: 'notification.send', payload, messageId });
}

function resent(): SendMessageCommandInput[] {
  return sqsMock.commandCalls(SendMessageCommand).map((call) => call.args[0].input);
}

describe('Job: notification.send (createJobHandler)', () => {
  it('when a new notification arrives, it sends it once and the record succeeds', async () => {
    // Prepare
    const { handler, provider, metrics } = fixture();

    // Act
    const response = await handler(sqsEvent(notification('m-1')), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(provider.calls).toHaveLength(1);
    expect(metrics.addMetric).toHaveBeenCalledWith(METRIC.jobSucceeded, 'Count', 1);
  });

  it('when the same notification is delivered twice, it sends once and reports the second as a duplicate', async () => {
    // Prepare
    const { handler, provider, metrics } = fixture();

    // Act
    await handler(sqsEvent(notification('m-1')), lambdaContext());
    const second = await handler(sqsEvent(notification('m-2')), lambdaContext());

    // Assess
    expect(second.batchItemFailures).toEqual([]);
    expect(provider.calls).toHaveLength(1);
    expect(metrics.addMetric).toHaveBeenCalledWith(METRIC.duplicateIgnored, 'Count', 1);
  });

  it('when another delivery of the notification holds an in-flight claim, it defers the message for about that claim instead of dropping it', async () => {
    // Prepare
    const { handler, provider, dedup, metrics } = fixture();
    const claimSeconds = inFlightClaimSeconds(JOB_TYPE);
    await dedup.claim('notification:order-1:order-paid', claimSeconds);

    // Act
    const response = await handler(sqsEvent(notification('m-2')), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(provider.calls).toHaveLength(0);
    expect(resent()).toEqual([
      expect.objectContaining({ QueueUrl: ENV.QUEUE_URL, DelaySeconds: claimSeconds }),
    ]);
    expect(metrics.addMetric).toHaveBeenCalledWith(METRIC.jobDeferred, 'Count', 1);
    expect(metrics.addMetric).not.toHaveBeenCalledWith(METRIC.duplicateIgnored, 'Count', 1);
  });

  it('when the stage is degraded, it defers the notification (never sheds it) without calling the provider', async () => {
    // Prepare
    const { handler, provider, dedup } = fixture({ degraded: () => Promise.resolve(true) });

    // Act
    const response = await handler(sqsEvent(notification('m-1')), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(provider.calls).toHaveLength(0);
    expect(dedup.claims.size).toBe(0);
    expect(resent()).toEqual([expect.objectContaining({ QueueUrl: ENV.QUEUE_URL, DelaySeconds: 60 })]);
  });

  it('when the degrade flag cannot be read, it treats the stage as not degraded and sends', async () => {
    // Prepare
    const { handler, provider } = fixture({ degraded: () => Promise.reject(new Error('SSM down')) });
    // The job's logger is a child of the handler's (it carries the correlation id).
    const warn = jest.spyOn(Logger.prototype, 'warn');

    // Act
    await handler(sqsEvent(notification('m-1')), lambdaContext());

    // Assess
    expect(provider.calls).toHaveLength(1);
    expect(warn).toHaveBeenCalledWith(
      expect.stringContaining('could not read the degrade flag'),
      expect.anything(),
    );
  });

  it('when the provider is down, it fails the first records, then defers the rest while the circuit is open', async () => {
    // Prepare
    const { handler, provider } = fixture();
    provider.fail = true;
    const records = ['m-1', 'm-2', 'm-3', 'm-4', 'm-5'].map((id, i) => notification(id, `order-${i}`));

    // Act
    const response = await handler(sqsEvent(...records), lambdaContext());

    // Assess
    expect(provider.calls).toHaveLength(2);
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-1' }, { itemIdentifier: 'm-2' }]);
    expect(sqsMock).toHaveReceivedCommandTimes(ChangeMessageVisibilityCommand, 2);
    expect(resent()).toHaveLength(3);
    expect(resent().every((input) => input.QueueUrl === ENV.QUEUE_URL && input.DelaySeconds === 20)).toBe(
      true,
    );
  });

  it('when a batch arrives, it calls the provider for its records at once, never more than the breaker may see fail', async () => {
    // Prepare: the fixture's breaker opens after 2 failures.
    const { handler, provider } = fixture();
    const records = ['m-1', 'm-2', 'm-3', 'm-4'].map((id, i) => notification(id, `order-${i}`));

    // Act
    const response = await handler(sqsEvent(...records), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(provider.calls).toHaveLength(4);
    expect(provider.maxInFlight).toBe(2);
  });
});

describe('Function: inFlightClaimSeconds', () => {
  it('when derived from the reference job type, it outlasts the function timeout and expires before a crashed message returns', () => {
    // Act
    const seconds = inFlightClaimSeconds(JOB_TYPE);

    // Assess
    expect(seconds).toBeGreaterThan(JOB_TYPE.function.timeoutSeconds);
    expect(seconds).toBeLessThan(JOB_TYPE.visibilityTimeoutSeconds - JOB_TYPE.function.timeoutSeconds);
  });
});

describe('Function: handler (notification.send)', () => {
  it('when it runs without its environment, it fails naming every missing variable', async () => {
    // Prepare
    const saved = { ...process.env };
    for (const name of ['QUEUE_URL', 'DLQ_URL', 'DEDUP_TABLE', 'MESSAGING_PROVIDER_URL'])
      delete process.env[name];
    Object.assign(process.env, { TENANG_STAGE: 'unit', AWS_REGION: 'eu-west-1' });

    // Act
    let error: unknown;
    try {
      await jobHandler(notificationSend)(sqsEvent(notification('m-1')), lambdaContext());
    } catch (thrown) {
      error = thrown;
    } finally {
      process.env = saved;
    }

    // Assess
    expect(error).toBeInstanceOf(FunctionEnvError);
    expect((error as FunctionEnvError).problems).toEqual([
      'QUEUE_URL: is not set',
      'DLQ_URL: is not set',
      'DEDUP_TABLE: is not set',
      'MESSAGING_PROVIDER_URL: is not set',
    ]);
  });
});
