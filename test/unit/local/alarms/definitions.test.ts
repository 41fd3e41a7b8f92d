import type { MetricAlarm } from '@aws-sdk/client-cloudwatch';
import {
  DEFAULT_PERIOD_SECONDS,
  periodScaler,
  toCompositeSpec,
  toMetricAlarmSpec,
} from '../../../../lib/local/alarms/definitions';
import { AlarmDefinitionError } from '../../../../lib/local/alarms/errors';
import { ARN, customAlarm, queueAlarm, retryRateAlarm } from './fixtures';

const TOPIC = 'arn:aws:sns:us-east-1:123456789012:alarms';

describe('Function: periodScaler', () => {
  it('when neither overrides, periods and durations are the declared seconds', () => {
    const s = periodScaler(undefined, 1);
    expect(s.periodMs(60)).toBe(60_000);
    expect(s.durationMs(300, 60)).toBe(300_000);
  });

  it('when a scale is given, it multiplies every period and duration', () => {
    const s = periodScaler(undefined, 1 / 30);
    expect(s.periodMs(60)).toBeCloseTo(2_000);
    expect(s.durationMs(300, 60)).toBeCloseTo(10_000);
  });

  it("when periodSeconds is given, every period becomes it and durations keep their ratio to the alarm's period", () => {
    const s = periodScaler(2, 1 / 30);
    expect(s.periodMs(60)).toBe(2_000);
    expect(s.periodMs(300)).toBe(2_000);
    expect(s.durationMs(300, 60)).toBe(10_000);
    expect(s.durationMs(300, 300)).toBe(2_000);
  });

  it.each([
    [0, 1, 'periodSeconds must be > 0'],
    [-1, 1, 'periodSeconds must be > 0'],
    [undefined, 0, 'periodScale must be > 0'],
    [undefined, Number.NaN, 'periodScale must be > 0'],
  ])('when periodSeconds is %s and periodScale %s, it fails loudly', (override, scale, message) => {
    expect(() => periodScaler(override, scale)).toThrow(AlarmDefinitionError);
    expect(() => periodScaler(override, scale)).toThrow(message);
  });
});

describe('Function: toMetricAlarmSpec', () => {
  const scaler = periodScaler(undefined, 1);

  it('when the alarm reads one metric, it keeps its rule, period, metric and statistic', () => {
    // Act
    const spec = toMetricAlarmSpec(
      customAlarm('retried', 'JobRetried', { EvaluationPeriods: 3, DatapointsToAlarm: 2, Period: 300 }),
      scaler,
    );

    // Assess
    expect(spec).toMatchObject({
      name: 'retried',
      alarmArn: ARN('retried'),
      motoState: 'OK',
      rule: {
        threshold: 1,
        comparisonOperator: 'GreaterThanOrEqualToThreshold',
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
        treatMissingData: 'notBreaching',
      },
      periodMs: 300_000,
      declaredPeriodSeconds: 300,
      queues: [],
      source: {
        kind: 'metric',
        metric: { namespace: 'tenang', name: 'JobRetried', dimensions: { service: 'payment-consumer' } },
        statistic: 'Sum',
      },
    });
  });

  it('when the alarm reads a queue metric, it names the queue to sample', () => {
    const spec = toMetricAlarmSpec(
      queueAlarm('dlq', 'orders-dlq', 'ApproximateNumberOfMessagesVisible', 1),
      scaler,
    );
    expect(spec.queues).toEqual(['orders-dlq']);
  });

  it('when the alarm has an ExtendedStatistic and no Period, it uses the percentile over the default period', () => {
    const spec = toMetricAlarmSpec(
      customAlarm('slow', 'Duration', { Statistic: undefined, ExtendedStatistic: 'p99', Period: undefined }),
      scaler,
    );
    expect(spec.source).toMatchObject({ kind: 'metric', statistic: 'p99' });
    expect(spec.declaredPeriodSeconds).toBe(DEFAULT_PERIOD_SECONDS);
  });

  it('when the alarm is metric math, it keeps each query, the one that returns data and the longest period', () => {
    // Act
    const spec = toMetricAlarmSpec(retryRateAlarm('retry-rate'), scaler);

    // Assess
    expect(spec.source.kind).toBe('math');
    if (spec.source.kind !== 'math') return;
    expect(spec.source.returnId).toBe('expr_1');
    expect([...spec.source.entries.keys()]).toEqual(['expr_1', 'r', 's', 'p']);
    expect(spec.source.entries.get('r')).toEqual({
      metric: { namespace: 'tenang', name: 'JobRetried', dimensions: { service: 'payment-consumer' } },
      stat: 'Sum',
    });
    expect(spec.source.entries.get('expr_1')?.expression?.kind).toBe('call');
    expect(spec.declaredPeriodSeconds).toBe(60);
    expect(spec.rule).toMatchObject({ threshold: 10, evaluationPeriods: 3, datapointsToAlarm: 2 });
  });

  it('when the alarm has actions, each state with a target owes actions; with ActionsEnabled false none do', () => {
    // Prepare
    const alarm = customAlarm('retried', 'JobRetried', { AlarmActions: [TOPIC], OKActions: [TOPIC] });

    // Act
    const enabled = toMetricAlarmSpec(alarm, scaler);
    const disabled = toMetricAlarmSpec({ ...alarm, ActionsEnabled: false }, scaler);

    // Assess
    expect([...enabled.actions].sort()).toEqual(['ALARM', 'OK']);
    expect(enabled.targets.get('ALARM')).toEqual([TOPIC]);
    expect(enabled.targets.get('INSUFFICIENT_DATA')).toEqual([]);
    expect([...disabled.actions]).toEqual([]);
    expect(disabled.targets.size).toBe(0);
  });

  it.each([
    ['ALARM', 'ALARM'],
    ['OK', 'OK'],
    ['INSUFFICIENT_DATA', 'INSUFFICIENT_DATA'],
    [undefined, 'INSUFFICIENT_DATA'],
  ] as const)("when moto's state is %s, it reads it as %s", (stateValue, expected) => {
    const spec = toMetricAlarmSpec(customAlarm('a', 'JobRetried', { StateValue: stateValue }), scaler);
    expect(spec.motoState).toBe(expected);
  });

  const retryRate = retryRateAlarm('bad');
  const queries = retryRate.Metrics ?? [];
  it.each([
    ['no Threshold', customAlarm('bad', 'X', { Threshold: undefined }), /no static Threshold/],
    [
      'a band operator',
      customAlarm('bad', 'X', { ComparisonOperator: 'LessThanLowerOrGreaterThanUpperThreshold' }),
      /comparison operator .* is not supported locally/,
    ],
    ['an unknown statistic', customAlarm('bad', 'X', { Statistic: 'tm90' as never }), /statistic tm90/],
    [
      'neither a metric nor Metrics',
      customAlarm('bad', 'X', { MetricName: undefined }),
      /neither a metric with a statistic nor Metrics/,
    ],
    [
      'two queries returning data',
      { ...retryRate, Metrics: queries.map((q) => ({ ...q, ReturnData: true })) },
      /more than one query returns data/,
    ],
    [
      'no query returning data',
      { ...retryRate, Metrics: queries.map((q) => ({ ...q, ReturnData: false })) },
      /no query returns data/,
    ],
    [
      'an expression reading an unknown id',
      { ...retryRate, Metrics: queries.filter((q) => q.Id !== 'p') },
      /query expr_1 reads unknown id p/,
    ],
    [
      'a query with neither an Expression nor a MetricStat',
      { ...retryRate, Metrics: [...queries, { Id: 'empty', ReturnData: false }] },
      /query empty has neither an Expression nor a MetricStat/,
    ],
  ] as [string, MetricAlarm, RegExp][])('when the alarm has %s, it fails loudly', (_what, alarm, message) => {
    expect(() => toMetricAlarmSpec(alarm, scaler)).toThrow(AlarmDefinitionError);
    expect(() => toMetricAlarmSpec(alarm, scaler)).toThrow(message);
  });
});

describe('Function: toCompositeSpec', () => {
  it('when given the composite CDK synthesizes, it reads the rule, the suppressor by name and the actions', () => {
    // Act
    const spec = toCompositeSpec({
      AlarmName: 'consumer',
      AlarmRule: `ALARM("${ARN('retried')}") OR ALARM("${ARN('errors')}")`,
      ActionsSuppressor: ARN('paused'),
      ActionsSuppressorWaitPeriod: 60,
      ActionsSuppressorExtensionPeriod: 300,
      AlarmActions: [TOPIC],
    });

    // Assess
    expect(spec).toEqual({
      name: 'consumer',
      rule: {
        kind: 'or',
        operands: [
          { kind: 'state', state: 'ALARM', alarm: 'retried' },
          { kind: 'state', state: 'ALARM', alarm: 'errors' },
        ],
      },
      suppressor: 'paused',
      waitSeconds: 60,
      extensionSeconds: 300,
      actions: new Set(['ALARM']),
      targets: new Map([
        ['ALARM', [TOPIC]],
        ['OK', []],
        ['INSUFFICIENT_DATA', []],
      ]),
    });
  });

  it('when there is no suppressor, there is none and no wait or extension', () => {
    const spec = toCompositeSpec({ AlarmName: 'c', AlarmRule: 'ALARM(a)' });
    expect(spec).toMatchObject({ suppressor: undefined, waitSeconds: 0, extensionSeconds: 0 });
    expect([...spec.actions]).toEqual([]);
  });

  it('when the rule cannot be parsed, it fails loudly', () => {
    expect(() => toCompositeSpec({ AlarmName: 'bad', AlarmRule: 'ALARM(a) XOR ALARM(b)' })).toThrow(
      AlarmDefinitionError,
    );
  });
});
