import fc from 'fast-check';
import {
  ALARM_PERIOD_SECONDS,
  AWS_LIMITS,
  DLQ_RETENTION_SECONDS,
  jobTypeSchema,
  stageSchema,
  streamConsumerSchema,
  backoffCeilingSeconds,
  degradeFlagName,
  deriveAlarmSettings,
  deriveVisibilityTimeoutSeconds,
  deriveWorstCaseSecondsToDlq,
  jobTypeSlug,
  pauseFlagName,
  resolveJobType,
  resolveStreamConsumer,
  type JobTypeInput,
  type RetryPolicy,
} from '../../../lib/config';
import { fifoJobTypeInput, jobTypeInput, stageInput, streamConsumerInput } from './builders';

const stage = stageSchema().parse(stageInput({ name: 'dev' }));
const jobType = (overrides: Partial<JobTypeInput> = {}) => jobTypeSchema().parse(jobTypeInput(overrides));

/** Any timeout and batching window the schema accepts. */
const validTimeout = fc.integer({
  min: AWS_LIMITS.lambdaTimeoutSeconds.min,
  max: AWS_LIMITS.lambdaTimeoutSeconds.max,
});
const validWindow = fc.integer({ min: 0, max: AWS_LIMITS.sqsBatchingWindowSeconds.max });
/** Any positive base and cap, including a base above the cap (the loader rejects it, the math must not break). */
const anyRetryPolicy: fc.Arbitrary<RetryPolicy> = fc.record({
  baseDelaySeconds: fc.integer({ min: 1, max: 100_000 }),
  maxDelaySeconds: fc.integer({ min: 1, max: AWS_LIMITS.sqsVisibilityTimeoutSeconds.max }),
});
const failedAttempt = fc.integer({ min: 1, max: 50 });

describe('Function: deriveVisibilityTimeoutSeconds', () => {
  it('when the function times out at 30 s with no window, it derives 6 × 30 = 180 s', () => {
    // Prepare
    const timeoutSeconds = 30;

    // Act
    const visibility = deriveVisibilityTimeoutSeconds(timeoutSeconds, 0);

    // Assess
    expect(visibility).toBe(180);
  });

  it('when there is a batching window, it adds the window to 6 × the timeout', () => {
    // Prepare
    const timeoutSeconds = 20;
    const windowSeconds = 2;

    // Act
    const visibility = deriveVisibilityTimeoutSeconds(timeoutSeconds, windowSeconds);

    // Assess
    expect(visibility).toBe(6 * 20 + 2);
  });

  it('when given any valid timeout and window, it is at least 6 × the timeout', () => {
    fc.assert(
      fc.property(validTimeout, validWindow, (timeoutSeconds, windowSeconds) => {
        // Act
        const visibility = deriveVisibilityTimeoutSeconds(timeoutSeconds, windowSeconds);

        // Assess
        expect(visibility).toBeGreaterThanOrEqual(6 * timeoutSeconds);
        expect(visibility).toBeGreaterThanOrEqual(timeoutSeconds + windowSeconds);
      }),
    );
  });

  it('when given any timeout and window the schema accepts, it stays within the SQS maximum', () => {
    fc.assert(
      fc.property(validTimeout, validWindow, (timeoutSeconds, windowSeconds) => {
        // Act
        const visibility = deriveVisibilityTimeoutSeconds(timeoutSeconds, windowSeconds);

        // Assess
        expect(visibility).toBeLessThanOrEqual(AWS_LIMITS.sqsVisibilityTimeoutSeconds.max);
      }),
    );
  });
});

describe('Function: backoffCeilingSeconds', () => {
  it('when attempts keep failing, it doubles from the base delay until it reaches the cap', () => {
    // Prepare
    const retry = { baseDelaySeconds: 5, maxDelaySeconds: 300 };

    // Act
    const ceilings = [1, 2, 3, 4, 5, 6, 7, 8].map((attempt) => backoffCeilingSeconds(retry, attempt));

    // Assess
    expect(ceilings).toEqual([5, 10, 20, 40, 80, 160, 300, 300]);
  });

  it('when the base delay equals the cap, it is the cap for every attempt', () => {
    // Prepare
    const retry = { baseDelaySeconds: 60, maxDelaySeconds: 60 };

    // Act
    const ceilings = [1, 2, 10].map((attempt) => backoffCeilingSeconds(retry, attempt));

    // Assess
    expect(ceilings).toEqual([60, 60, 60]);
  });

  it('when given any retry policy, its ceilings never decrease and never exceed the cap', () => {
    fc.assert(
      fc.property(anyRetryPolicy, failedAttempt, (retry, attempt) => {
        // Act
        const ceiling = backoffCeilingSeconds(retry, attempt);
        const next = backoffCeilingSeconds(retry, attempt + 1);

        // Assess
        expect(next).toBeGreaterThanOrEqual(ceiling);
        expect(ceiling).toBeLessThanOrEqual(retry.maxDelaySeconds);
        expect(next).toBeLessThanOrEqual(retry.maxDelaySeconds);
      }),
    );
  });

  it('when given any retry policy, the next ceiling is double the last one, capped', () => {
    fc.assert(
      fc.property(anyRetryPolicy, failedAttempt, (retry, attempt) => {
        // Act
        const ceiling = backoffCeilingSeconds(retry, attempt);
        const next = backoffCeilingSeconds(retry, attempt + 1);

        // Assess
        expect(next).toBe(Math.min(retry.maxDelaySeconds, 2 * ceiling));
      }),
    );
  });
});

describe('Function: deriveWorstCaseSecondsToDlq', () => {
  it('when the visibility timeout outlasts every backoff, it counts one visibility timeout per attempt', () => {
    // Prepare
    const job = jobType({
      function: { timeoutSeconds: 30, memoryMb: 256 },
      maxReceiveCount: 5,
      retry: { baseDelaySeconds: 5, maxDelaySeconds: 30 },
    });

    // Act
    const worstCase = deriveWorstCaseSecondsToDlq(job);

    // Assess
    // Visibility 6 × 30 = 180 s beats timeout + any ceiling (at most 30 + 30).
    expect(worstCase).toBe(5 * 180);
  });

  it('when a backoff outlasts the visibility timeout, it counts timeout + backoff for that attempt', () => {
    // Prepare
    const job = jobType({
      function: { timeoutSeconds: 10, memoryMb: 256 },
      maxReceiveCount: 2,
      retry: { baseDelaySeconds: 100, maxDelaySeconds: 100 },
    });

    // Act
    const worstCase = deriveWorstCaseSecondsToDlq(job);

    // Assess
    // Visibility is 60 s; each attempt can take 10 s and then wait 100 s.
    expect(worstCase).toBe(2 * (10 + 100));
  });

  it('when only some backoffs outlast the visibility timeout, it takes the longer wait per attempt', () => {
    // Prepare
    const job = jobType({
      function: { timeoutSeconds: 10, memoryMb: 256 },
      maxReceiveCount: 3,
      retry: { baseDelaySeconds: 30, maxDelaySeconds: 200 },
    });

    // Act
    const worstCase = deriveWorstCaseSecondsToDlq(job);

    // Assess
    // Ceilings 30, 60, 120 against a 60 s visibility timeout.
    expect(worstCase).toBe(60 + (10 + 60) + (10 + 120));
  });
});

describe('Function: deriveAlarmSettings', () => {
  it('when the work is critical, it alarms at the objective on 1 of 1 breaching minutes', () => {
    // Prepare
    const objective = 120;

    // Act
    const alarms = deriveAlarmSettings(objective, 'critical');

    // Assess
    expect(alarms).toEqual({
      ageThresholdSeconds: 120,
      ageWarningSeconds: 60,
      periodSeconds: ALARM_PERIOD_SECONDS,
      evaluationPeriods: 1,
      datapointsToAlarm: 1,
    });
  });

  it.each(['deferrable', 'sheddable'] as const)(
    'when the work is %s, it alarms at the objective on 2 of 3 breaching minutes',
    (criticality) => {
      // Prepare
      const objective = 900;

      // Act
      const alarms = deriveAlarmSettings(objective, criticality);

      // Assess
      expect(alarms).toEqual({
        ageThresholdSeconds: 900,
        ageWarningSeconds: 450,
        periodSeconds: ALARM_PERIOD_SECONDS,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
      });
    },
  );

  it('when the objective is odd, it rounds the half-objective warning down', () => {
    // Prepare
    const objective = 121;

    // Act
    const alarms = deriveAlarmSettings(objective, 'deferrable');

    // Assess
    expect(alarms.ageWarningSeconds).toBe(60);
  });

  it('when the objective is 1 s, it keeps the warning at 1 s rather than 0', () => {
    // Prepare
    const objective = 1;

    // Act
    const alarms = deriveAlarmSettings(objective, 'critical');

    // Assess
    expect(alarms.ageWarningSeconds).toBe(1);
  });
});

describe('Function: pauseFlagName', () => {
  it('when given a stage and a consumer, it names the SSM parameter under the stage flags', () => {
    // Act
    const name = pauseFlagName('dev', 'payment-consumer');

    // Assess
    expect(name).toBe('/tenang/dev/flags/pause/payment-consumer');
  });
});

describe('Function: degradeFlagName', () => {
  it('when given a stage, it names the stage degrade SSM parameter', () => {
    // Act
    const name = degradeFlagName('prod');

    // Assess
    expect(name).toBe('/tenang/prod/flags/degrade');
  });
});

describe('Function: jobTypeSlug', () => {
  it('when the name has several dots, it replaces every dot with a hyphen', () => {
    // Act
    const slug = jobTypeSlug('order.line.ship');

    // Assess
    expect(slug).toBe('order-line-ship');
  });
});

describe('Function: resolveJobType', () => {
  it('when the queue is standard, it names the queue and DLQ without a .fifo suffix', () => {
    // Prepare
    const job = jobType({ name: 'notification.send' });

    // Act
    const resolved = resolveJobType(stage, job);

    // Assess
    expect(resolved.queueName).toBe('tenang-dev-notification-send');
    expect(resolved.dlqName).toBe('tenang-dev-notification-send-dlq');
  });

  it('when sheddable work declares a useful age, it names its side queue; without one, there is none', () => {
    // Prepare
    const expiring = jobType({
      name: 'notification.send',
      criticality: 'sheddable',
      usefulAgeSeconds: 3_600,
    });
    const lasting = jobType({ name: 'notification.send', criticality: 'sheddable' });

    // Act
    const [withAge, withoutAge] = [resolveJobType(stage, expiring), resolveJobType(stage, lasting)];

    // Assess
    expect(withAge.expiredQueueName).toBe('tenang-dev-notification-send-expired');
    expect(withoutAge.expiredQueueName).toBeUndefined();
  });

  it('when the queue is FIFO, it names both the queue and the DLQ with a .fifo suffix', () => {
    // Prepare
    const job = jobTypeSchema().parse(fifoJobTypeInput({ name: 'payment.capture' }));

    // Act
    const resolved = resolveJobType(stage, job);

    // Assess
    expect(resolved.queueName).toBe('tenang-dev-payment-capture.fifo');
    expect(resolved.dlqName).toBe('tenang-dev-payment-capture-dlq.fifo');
  });

  it('when resolved, it derives visibility, DLQ retention, attempts, worst case, pause flag and alarms', () => {
    // Prepare
    const job = jobType({
      consumer: 'ship-consumer',
      function: { timeoutSeconds: 20, memoryMb: 256 },
      batch: { size: 5, windowSeconds: 3, maxConcurrency: 2 },
      maxReceiveCount: 4,
      retry: { baseDelaySeconds: 10, maxDelaySeconds: 600 },
      criticality: 'sheddable',
      latencyObjectiveSeconds: 900,
    });

    // Act
    const resolved = resolveJobType(stage, job);

    // Assess
    expect(resolved).toMatchObject({
      visibilityTimeoutSeconds: 6 * 20 + 3,
      dlqRetentionSeconds: AWS_LIMITS.sqsRetentionSeconds.max,
      maxAttempts: 4,
      worstCaseSecondsToDlq: 4 * (6 * 20 + 3),
      pauseFlagName: '/tenang/dev/flags/pause/ship-consumer',
      alarms: {
        ageThresholdSeconds: 900,
        ageWarningSeconds: 450,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
      },
    });
  });

  it('when resolved, it keeps every declared field', () => {
    // Prepare
    const job = jobType();

    // Act
    const resolved = resolveJobType(stage, job);

    // Assess
    expect(resolved).toMatchObject(job);
  });

  it('when the job type has no declared retention, its DLQ keeps messages longer than the source queue', () => {
    // Prepare
    const job = jobType();

    // Act
    const resolved = resolveJobType(stage, job);

    // Assess
    expect(resolved.dlqRetentionSeconds).toBe(DLQ_RETENTION_SECONDS);
    expect(resolved.dlqRetentionSeconds).toBeGreaterThan(resolved.queue.retentionSeconds);
  });
});

describe('Function: resolveStreamConsumer', () => {
  it('when resolved, it derives the pause flag, the on-failure queue name and critical 1-of-1 alarms', () => {
    // Prepare
    const consumer = streamConsumerSchema().parse(
      streamConsumerInput({ consumer: 'outbox-relay', latencyObjectiveSeconds: 300 }),
    );

    // Act
    const resolved = resolveStreamConsumer(stage, consumer);

    // Assess
    expect(resolved.pauseFlagName).toBe('/tenang/dev/flags/pause/outbox-relay');
    expect(resolved.onFailureQueueName).toBe('tenang-dev-outbox-relay-failures');
    expect(resolved.alarms).toEqual({
      ageThresholdSeconds: 300,
      ageWarningSeconds: 150,
      periodSeconds: ALARM_PERIOD_SECONDS,
      evaluationPeriods: 1,
      datapointsToAlarm: 1,
    });
  });
});
