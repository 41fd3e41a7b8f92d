import {
  CloudWatchClient,
  DescribeAlarmsCommand,
  PutMetricDataCommand,
  SetAlarmStateCommand,
  type MetricAlarm,
  type PutCompositeAlarmCommandInput,
} from '@aws-sdk/client-cloudwatch';
import { GetQueueAttributesCommand, GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import {
  AlarmEvaluator,
  defaultIntervalMs,
  type AlarmEvaluatorDeps,
} from '../../../../lib/local/alarms/evaluator';
import { AlarmEvaluationError } from '../../../../lib/local/alarms/errors';
import type { InvokeResult } from '../../../../lib/local/function-host';
import { manualClock, type ManualClock } from '../../../helpers/manual-clock';
import { ARN, customAlarm, queueAlarm, retryRateAlarm } from './fixtures';

/** A Powertools EMF line, as the payment consumer prints it. */
function emf(service: string, values: Record<string, number | number[]>): string {
  return JSON.stringify({
    _aws: {
      Timestamp: 1,
      CloudWatchMetrics: [
        {
          Namespace: 'tenang',
          Dimensions: [['service']],
          Metrics: Object.keys(values).map((Name) => ({ Name, Unit: 'Count' })),
        },
      ],
    },
    service,
    ...values,
  });
}

function pausedLine(consumer: string, paused: 0 | 1): string {
  return JSON.stringify({
    _aws: {
      Timestamp: 1,
      CloudWatchMetrics: [
        {
          Namespace: 'tenang',
          Dimensions: [['service', 'consumer']],
          Metrics: [{ Name: 'Paused', Unit: 'Count' }],
        },
      ],
    },
    service: 'flag-reconciler',
    consumer,
    Paused: paused,
  });
}

const ok = (durationMs = 5): InvokeResult => ({ status: 'ok', result: null, durationMs, coldStart: false });
const failed = (status: 'error' | 'timeout' | 'crash'): InvokeResult => ({
  status,
  errorType: 'Error',
  errorMessage: 'boom',
  durationMs: 5,
  coldStart: false,
});

describe('Class: AlarmEvaluator', () => {
  const cloudwatch = mockClient(CloudWatchClient);
  const sqs = mockClient(SQSClient);
  let alarms: MetricAlarm[];
  let depths: Map<string, { visible: number; inFlight: number }>;
  let clock: ManualClock;

  function evaluator(overrides: Partial<AlarmEvaluatorDeps> = {}): AlarmEvaluator {
    return new AlarmEvaluator({
      cloudwatch: new CloudWatchClient({ region: 'us-east-1' }),
      sqs: new SQSClient({ region: 'us-east-1' }),
      now: () => clock.ms(),
      publishMetrics: false,
      ...overrides,
    });
  }

  /** Moves to the start of the next period (periods are aligned to the epoch). */
  function nextPeriod(periodMs = 60_000): void {
    clock.advance(periodMs - (clock.ms() % periodMs));
  }

  function stateOf(name: string): string | undefined {
    return alarms.find((a) => a.AlarmName === name)?.StateValue;
  }

  beforeEach(() => {
    cloudwatch.reset();
    sqs.reset();
    alarms = [];
    depths = new Map();
    clock = manualClock('2030-06-01T12:00:00.000Z');
    cloudwatch.on(DescribeAlarmsCommand).callsFake(() => ({ MetricAlarms: alarms.map((a) => ({ ...a })) }));
    cloudwatch.on(SetAlarmStateCommand).callsFake((input: { AlarmName: string; StateValue: string }) => {
      const alarm = alarms.find((a) => a.AlarmName === input.AlarmName);
      if (alarm !== undefined) alarm.StateValue = input.StateValue as MetricAlarm['StateValue'];
      return {};
    });
    cloudwatch.on(PutMetricDataCommand).resolves({});
    sqs
      .on(GetQueueUrlCommand)
      .callsFake((input: { QueueName: string }) => ({ QueueUrl: `http://sqs/${input.QueueName}` }));
    sqs.on(GetQueueAttributesCommand).callsFake((input: { QueueUrl: string }) => {
      const d = depths.get(input.QueueUrl.split('/').pop() ?? '') ?? { visible: 0, inFlight: 0 };
      return {
        Attributes: {
          ApproximateNumberOfMessages: String(d.visible),
          ApproximateNumberOfMessagesNotVisible: String(d.inFlight),
          ApproximateNumberOfMessagesDelayed: '0',
        },
      };
    });
  });

  describe('Method: evaluateNow', () => {
    it('when M of the last N periods breach, it sets ALARM in the emulator with a reason, and OK once fewer do', async () => {
      // Prepare: 2 of 3, like the non-critical backlog alarms
      alarms = [customAlarm('retried', 'JobRetried', { EvaluationPeriods: 3, DatapointsToAlarm: 2 })];
      const e = evaluator();

      // Act: breach, no breach, breach
      e.recordOutput(emf('payment-consumer', { JobRetried: 1 }), 'fn');
      nextPeriod();
      await e.evaluateNow();
      const afterOne = stateOf('retried');
      e.recordOutput(emf('payment-consumer', { JobRetried: 0 }), 'fn');
      nextPeriod();
      e.recordOutput(emf('payment-consumer', { JobRetried: [1, 1] }), 'fn');
      nextPeriod();
      await e.evaluateNow();
      const afterThree = stateOf('retried');
      nextPeriod();
      nextPeriod();
      await e.evaluateNow();

      // Assess
      expect(afterOne).toBe('OK');
      expect(afterThree).toBe('ALARM');
      expect(stateOf('retried')).toBe('OK');
      const timeline = e.timeline();
      expect(timeline.map((t) => [t.from, t.to])).toEqual([
        ['OK', 'ALARM'],
        ['ALARM', 'OK'],
      ]);
      expect(timeline[0]?.reason).toContain('2 out of the last 3 datapoints [1, 0, 2]');
      expect(timeline[0]?.at).toEqual(new Date('2030-06-01T12:03:00.000Z'));
      expect(cloudwatch.commandCalls(SetAlarmStateCommand)[0]?.args[0].input).toMatchObject({
        AlarmName: 'retried',
        StateValue: 'ALARM',
        StateReason: expect.stringContaining('Threshold Crossed') as unknown,
      });
    });

    it('when the state does not change, it calls no SetAlarmState', async () => {
      // Prepare
      alarms = [customAlarm('retried', 'JobRetried')];
      const e = evaluator();

      // Act
      nextPeriod();
      await e.evaluateNow();
      nextPeriod();
      await e.evaluateNow();

      // Assess
      expect(cloudwatch.commandCalls(SetAlarmStateCommand)).toHaveLength(0);
      expect(e.timeline()).toEqual([]);
    });

    it('when periods are missing and TreatMissingData is notBreaching, they count as not breaching', async () => {
      // Prepare: one breaching period, then nothing, 2 of 3 needed
      alarms = [
        customAlarm('not-breaching', 'JobRetried', { EvaluationPeriods: 3, DatapointsToAlarm: 2 }),
        customAlarm('breaching', 'JobRetried', {
          EvaluationPeriods: 3,
          DatapointsToAlarm: 2,
          TreatMissingData: 'breaching',
        }),
        customAlarm('missing', 'JobSucceeded', { TreatMissingData: 'missing' }),
      ];
      const e = evaluator();

      // Act
      e.recordOutput(emf('payment-consumer', { JobRetried: 3 }), 'fn');
      nextPeriod();
      nextPeriod();
      await e.evaluateNow();

      // Assess
      expect(stateOf('not-breaching')).toBe('OK');
      expect(stateOf('breaching')).toBe('ALARM');
      expect(stateOf('missing')).toBe('INSUFFICIENT_DATA');
    });

    it('when the retry rate expression crosses its threshold in 2 of 3 periods, it goes to ALARM', async () => {
      // Prepare
      alarms = [retryRateAlarm('retry-rate')];
      const e = evaluator();

      // Act: 20 % retries, then only successes, then 50 %
      e.recordOutput(emf('payment-consumer', { JobRetried: 2, JobSucceeded: 8 }), 'fn');
      nextPeriod();
      e.recordOutput(emf('payment-consumer', { JobSucceeded: 5 }), 'fn');
      nextPeriod();
      await e.evaluateNow();
      const afterTwo = stateOf('retry-rate');
      e.recordOutput(emf('payment-consumer', { JobRetried: 1, JobSucceeded: 1 }), 'fn');
      nextPeriod();
      await e.evaluateNow();

      // Assess
      expect(afterTwo).toBe('OK');
      expect(stateOf('retry-rate')).toBe('ALARM');
      expect(e.timeline()[0]?.reason).toContain('[20, 0, 50]');
    });

    it('when an alarm cannot be evaluated locally, it evaluates the others and then throws naming it', async () => {
      // Prepare
      const broken = retryRateAlarm('broken');
      broken.Metrics = [
        { Id: 'e', Expression: 'RATE(r)', ReturnData: true },
        ...(broken.Metrics ?? []).slice(1),
      ];
      alarms = [broken, customAlarm('retried', 'JobRetried')];
      const e = evaluator();
      e.recordOutput(emf('payment-consumer', { JobRetried: 1 }), 'fn');
      nextPeriod();

      // Act
      const evaluation = e.evaluateNow();

      // Assess
      await expect(evaluation).rejects.toThrow(AlarmEvaluationError);
      await expect(evaluation).rejects.toThrow(/function RATE is not supported locally/);
      expect(stateOf('retried')).toBe('ALARM');
    });

    it('when a DLQ holds a message, its depth alarm goes to ALARM after the period, and OK after it is emptied', async () => {
      // Prepare
      alarms = [queueAlarm('dlq', 'orders-dlq', 'ApproximateNumberOfMessagesVisible', 1)];
      const e = evaluator();

      // Act: one message from 12:00 to 12:01, sampled at each evaluation
      const states: string[] = [];
      depths.set('orders-dlq', { visible: 1, inFlight: 0 });
      for (let minute = 0; minute < 4; minute += 1) {
        await e.evaluateNow();
        states.push(stateOf('dlq') ?? '');
        if (minute === 1) {
          depths.set('orders-dlq', { visible: 0, inFlight: 0 });
          await e.evaluateNow();
        }
        nextPeriod();
      }

      // Assess: the period 12:01 still saw the message before it was deleted
      expect(states).toEqual(['OK', 'ALARM', 'ALARM', 'OK']);
    });

    it('when a backlog stays longer than the threshold, the oldest-age alarm fires, and clears once drained', async () => {
      // Prepare: threshold 120 s, 1 of 1
      alarms = [queueAlarm('oldest', 'orders', 'ApproximateAgeOfOldestMessage', 120)];
      const e = evaluator();
      depths.set('orders', { visible: 3, inFlight: 0 });

      // Act: observe every 30 s for 3 minutes, then drain
      const states: string[] = [];
      for (let i = 0; i < 6; i += 1) {
        await e.evaluateNow();
        states.push(stateOf('oldest') ?? '');
        clock.advance(30_000);
      }
      depths.set('orders', { visible: 0, inFlight: 0 });
      await e.evaluateNow();
      const atDrain = stateOf('oldest');
      nextPeriod();
      await e.evaluateNow();

      // Assess: ages 0 30 | 60 90 | 120 150 by period; 12:02 is judged once complete, at 12:03
      expect(states).toEqual(['OK', 'OK', 'OK', 'OK', 'OK', 'OK']);
      expect(atDrain).toBe('ALARM');
      expect(e.timeline()[0]?.reason).toContain('[150]');
      expect(stateOf('oldest')).toBe('OK');
    });

    it('when invocations fail, the function Errors alarm fires; successes publish zero datapoints', async () => {
      // Prepare
      alarms = [
        customAlarm('errors', 'Errors', {
          Namespace: 'AWS/Lambda',
          Dimensions: [{ Name: 'FunctionName', Value: 'tenang-dev-payment' }],
        }),
      ];
      const e = evaluator();

      // Act
      e.recordInvocation('tenang-dev-payment', ok());
      nextPeriod();
      await e.evaluateNow();
      const afterSuccess = stateOf('errors');
      e.recordInvocation('tenang-dev-payment', failed('timeout'));
      nextPeriod();
      await e.evaluateNow();

      // Assess
      expect(afterSuccess).toBe('OK');
      expect(e.timeline()[0]?.reason).toContain('[1]');
      expect(stateOf('errors')).toBe('ALARM');
    });

    it("when a stream consumer is invoked, it records the mapping's IteratorAge", async () => {
      // Prepare
      alarms = [
        customAlarm('iterator-age', 'IteratorAge', {
          Namespace: 'AWS/Lambda',
          Dimensions: [{ Name: 'FunctionName', Value: 'tenang-dev-relay' }],
          Statistic: 'Maximum',
          Threshold: 30_000,
        }),
      ];
      const e = evaluator({ iteratorAgeMs: (fn) => (fn === 'tenang-dev-relay' ? 45_000 : undefined) });

      // Act
      e.recordInvocation('tenang-dev-relay', ok());
      nextPeriod();
      await e.evaluateNow();

      // Assess
      expect(stateOf('iterator-age')).toBe('ALARM');
    });

    it('when periodSeconds is set, a 60-s alarm is evaluated over periods of that length', async () => {
      // Prepare
      alarms = [customAlarm('retried', 'JobRetried')];
      const e = evaluator({ periodSeconds: 2 });

      // Act
      e.recordOutput(emf('payment-consumer', { JobRetried: 1 }), 'fn');
      nextPeriod(2_000);
      await e.evaluateNow();
      const fired = stateOf('retried');
      nextPeriod(2_000);
      await e.evaluateNow();

      // Assess
      expect(fired).toBe('ALARM');
      expect(stateOf('retried')).toBe('OK');
    });

    it('when a period completes, it publishes its datapoints as statistic sets', async () => {
      // Prepare
      alarms = [queueAlarm('dlq', 'orders-dlq', 'ApproximateNumberOfMessagesVisible', 1)];
      const e = evaluator({ publishMetrics: true });
      e.recordOutput(emf('payment-consumer', { JobSucceeded: [1, 1, 1] }), 'fn');

      // Act
      nextPeriod();
      await e.evaluateNow();
      nextPeriod();
      await e.evaluateNow();

      // Assess: the first period once, the second only with the queue sample
      const data = cloudwatch
        .commandCalls(PutMetricDataCommand)
        .flatMap((c) =>
          (c.args[0].input.MetricData ?? []).map((d) => ({ ns: c.args[0].input.Namespace, ...d })),
        );
      const succeeded = data.filter((d) => d.MetricName === 'JobSucceeded');
      expect(succeeded).toEqual([
        {
          ns: 'tenang',
          MetricName: 'JobSucceeded',
          Dimensions: [{ Name: 'service', Value: 'payment-consumer' }],
          Timestamp: new Date('2030-06-01T12:00:00.000Z'),
          StatisticValues: { SampleCount: 3, Sum: 3, Minimum: 1, Maximum: 1 },
        },
      ]);
      expect(data.filter((d) => d.MetricName === 'ApproximateNumberOfMessagesVisible')).toHaveLength(1);
    });
  });

  describe('Method: recordOutput', () => {
    it('when a line is not EMF, it records nothing and logs nothing', async () => {
      // Prepare
      const log: string[] = [];
      alarms = [customAlarm('retried', 'JobRetried')];
      const e = evaluator({ log: (l) => log.push(l) });

      // Act
      e.recordOutput('{"level":"INFO","message":"job done"}', 'fn');
      e.recordOutput('plain text mentioning "_aws"', 'fn');
      nextPeriod();
      await e.evaluateNow();

      // Assess
      expect(stateOf('retried')).toBe('OK');
      expect(log).toEqual([]);
    });

    it('when an EMF document is malformed, it logs it with the function name', () => {
      // Prepare
      const log: string[] = [];
      const e = evaluator({ log: (l) => log.push(l) });

      // Act
      e.recordOutput(
        emf('payment-consumer', { JobRetried: 'many' as unknown as number }),
        'tenang-dev-payment',
      );

      // Assess
      expect(log).toHaveLength(1);
      expect(log[0]).toMatch(/^tenang-dev-payment: metric JobRetried: value "many" is not a number/);
    });
  });

  describe('Method: states (composite alarms)', () => {
    const composite: PutCompositeAlarmCommandInput = {
      AlarmName: 'consumer',
      AlarmRule: `(ALARM("${ARN('retried')}") OR ALARM("${ARN('errors')}"))`,
      ActionsSuppressor: ARN('paused'),
      ActionsSuppressorWaitPeriod: 60,
      ActionsSuppressorExtensionPeriod: 300,
      AlarmActions: ['arn:aws:sns:us-east-1:123456789012:alarms'],
    };

    function compositeAlarms(): MetricAlarm[] {
      return [
        customAlarm('retried', 'JobRetried'),
        customAlarm('errors', 'JobFailedBug'),
        customAlarm('paused', 'Paused', {
          Dimensions: [
            { Name: 'consumer', Value: 'payment-consumer' },
            { Name: 'service', Value: 'flag-reconciler' },
          ],
          Statistic: 'Maximum',
        }),
      ];
    }

    it('when a child alarm fires and no suppressor comes, it goes to ALARM and sends its actions after the wait period', async () => {
      // Prepare
      alarms = compositeAlarms();
      const e = evaluator({ compositeAlarms: [composite] });
      await e.evaluateNow();

      // Act: still unhealthy a minute later
      e.recordOutput(emf('payment-consumer', { JobRetried: 1 }), 'fn');
      nextPeriod();
      await e.evaluateNow();
      const held = e.actions();
      e.recordOutput(emf('payment-consumer', { JobRetried: 1 }), 'fn');
      clock.advance(60_000);
      await e.evaluateNow();

      // Assess
      expect(e.states().find((s) => s.name === 'consumer')).toEqual({
        name: 'consumer',
        state: 'ALARM',
        kind: 'composite',
        suppressed: false,
      });
      expect(held.filter((a) => a.state === 'ALARM')).toEqual([]);
      expect(e.actions().filter((a) => a.state === 'ALARM')).toEqual([
        expect.objectContaining({
          alarm: 'consumer',
          outcome: 'sent',
          at: new Date('2030-06-01T12:02:00.000Z'),
        }),
      ]);
      expect(
        e
          .timeline()
          .filter((t) => t.kind === 'composite')
          .map((t) => t.to),
      ).toEqual(['OK', 'ALARM']);
    });

    it('when the consumer is paused, the composite goes to ALARM with its actions suppressed until the extension after the pause ends', async () => {
      // Prepare: paused, and the backlog builds
      alarms = compositeAlarms();
      const e = evaluator({ compositeAlarms: [composite] });
      e.recordOutput(pausedLine('payment-consumer', 1), 'reconciler');
      e.recordOutput(emf('payment-consumer', { JobRetried: 1 }), 'fn');
      nextPeriod();
      await e.evaluateNow();
      const whilePaused = e.states().find((s) => s.name === 'consumer');

      // Act: resumed at 12:01 (Paused 0), still unhealthy; extension is 300 s
      for (let minute = 1; minute <= 7; minute += 1) {
        e.recordOutput(pausedLine('payment-consumer', 0), 'reconciler');
        e.recordOutput(emf('payment-consumer', { JobRetried: 1 }), 'fn');
        nextPeriod();
        await e.evaluateNow();
      }

      // Assess
      expect(whilePaused).toEqual({ name: 'consumer', state: 'ALARM', kind: 'composite', suppressed: true });
      expect(stateOf('paused')).toBe('OK');
      const pausedLeft = e.timeline().find((t) => t.alarm === 'paused' && t.from === 'ALARM');
      expect(pausedLeft?.at).toEqual(new Date('2030-06-01T12:02:00.000Z'));
      const sent = e.actions().filter((a) => a.alarm === 'consumer' && a.state === 'ALARM');
      expect(sent).toEqual([
        expect.objectContaining({ outcome: 'sent', at: new Date('2030-06-01T12:07:00.000Z') }),
      ]);
    });

    it('when the composite recovers while its actions are suppressed, they are recorded as suppressed, never sent', async () => {
      // Prepare
      alarms = compositeAlarms();
      const e = evaluator({ compositeAlarms: [composite] });
      e.recordOutput(pausedLine('payment-consumer', 1), 'reconciler');
      e.recordOutput(emf('payment-consumer', { JobRetried: 1 }), 'fn');
      nextPeriod();
      await e.evaluateNow();

      // Act: still paused, healthy again
      e.recordOutput(pausedLine('payment-consumer', 1), 'reconciler');
      nextPeriod();
      await e.evaluateNow();

      // Assess
      expect(e.actions().filter((a) => a.state === 'ALARM')).toEqual([
        expect.objectContaining({ alarm: 'consumer', outcome: 'suppressed' }),
      ]);
    });

    it('when a rule cannot be parsed, the constructor refuses it', () => {
      // Act
      const create = (): AlarmEvaluator =>
        evaluator({ compositeAlarms: [{ AlarmName: 'bad', AlarmRule: 'ALARM(a) XOR ALARM(b)' }] });

      // Assess
      expect(create).toThrow(/bad: alarm rule "ALARM\(a\) XOR ALARM\(b\)": unexpected "XOR"/);
    });

    it('when a rule names an alarm that does not exist, the evaluation says so', async () => {
      // Prepare
      alarms = compositeAlarms();
      const e = evaluator({ compositeAlarms: [{ AlarmName: 'orphan', AlarmRule: 'ALARM("gone")' }] });

      // Act
      const evaluation = e.evaluateNow();

      // Assess
      await expect(evaluation).rejects.toThrow(/orphan: no alarm named gone/);
    });
  });

  describe('Method: start', () => {
    it('when started, it evaluates in the background until stopped', async () => {
      // Prepare
      alarms = [customAlarm('retried', 'JobRetried')];
      const e = evaluator({ intervalMs: 10 });

      // Act
      e.start();
      const deadline = Date.now() + 2_000;
      while (cloudwatch.commandCalls(DescribeAlarmsCommand).length < 3 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10));
      await e.stop();
      const calls = cloudwatch.commandCalls(DescribeAlarmsCommand).length;
      await new Promise((r) => setTimeout(r, 50));

      // Assess
      expect(calls).toBeGreaterThanOrEqual(3);
      expect(cloudwatch.commandCalls(DescribeAlarmsCommand)).toHaveLength(calls);
    });

    it.each([
      ['the deployed 60 s periods', 5_000, 60, undefined],
      ['periods scaled by 1/12 (5 s)', 1_000, 60, 1 / 12],
      ['a 120 s period', 5_000, 120, undefined],
      ['a 24 s period', 2_000, 24, undefined],
    ])(
      'when started without an interval on %s, it evaluates every %d ms: a twelfth of the shortest period within 1–5 s',
      async (_what, expectedMs, period, periodScale) => {
        // Prepare
        jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
        try {
          alarms = [customAlarm('retried', 'JobRetried', { Period: period })];
          const e = evaluator(periodScale === undefined ? {} : { periodScale });
          const evaluations = (): number => cloudwatch.commandCalls(DescribeAlarmsCommand).length;

          // Act
          e.start();
          await jest.advanceTimersByTimeAsync(0);
          const first = evaluations();
          await jest.advanceTimersByTimeAsync(expectedMs - 1);
          const beforeInterval = evaluations();
          await jest.advanceTimersByTimeAsync(1);
          const atInterval = evaluations();
          const stopped = e.stop();
          await jest.advanceTimersByTimeAsync(0);
          await stopped;

          // Assess
          expect({ first, beforeInterval, atInterval }).toEqual({
            first: 1,
            beforeInterval: 1,
            atInterval: 2,
          });
        } finally {
          jest.useRealTimers();
        }
      },
    );
  });

  describe('Function: defaultIntervalMs', () => {
    it.each([
      [undefined, 1_000],
      [2_000, 1_000],
      [12_000, 1_000],
      [24_000, 2_000],
      [60_000, 5_000],
      [3_600_000, 5_000],
      [Number.NaN, 1_000],
    ])('when the shortest period is %p ms, the interval is %p ms', (shortest, expected) => {
      // Act / Assess
      expect(defaultIntervalMs(shortest)).toBe(expected);
    });
  });
});
