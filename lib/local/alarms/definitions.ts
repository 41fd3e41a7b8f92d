/**
 * Reads alarm definitions into what local evaluation needs: a metric alarm as DescribeAlarms
 * returns it, a composite alarm as it was put, and the period scaling that shortens every
 * declared period and suppressor duration. Whatever cannot be evaluated locally throws here.
 */
import type { MetricAlarm, PutCompositeAlarmCommandInput } from '@aws-sdk/client-cloudwatch';
import { alarmNameOf, parseAlarmRule, type RuleNode } from './composite-rules';
import { AlarmDefinitionError } from './errors';
import { mathReferences, parseMathExpression, type MathNode } from './metric-math';
import { aggregate, type MetricId } from './metric-store';
import type { AlarmState } from './state';
import { comparison, type ThresholdRule } from './thresholds';

/** Declared seconds → evaluation milliseconds, under the periodSeconds / periodScale override. */
export interface PeriodScaler {
  periodMs(declaredPeriodSeconds: number): number;
  durationMs(declaredSeconds: number, declaredPeriodSeconds: number): number;
}

/**
 * The scaler for a `periodSeconds` override (every period becomes that many seconds, durations in
 * proportion to their alarm's period) or a `periodScale` factor; throws unless they are > 0.
 */
export function periodScaler(override: number | undefined, scale: number): PeriodScaler {
  if (override !== undefined && !(override > 0)) throw new AlarmDefinitionError('periodSeconds must be > 0');
  if (!(scale > 0)) throw new AlarmDefinitionError('periodScale must be > 0');
  return {
    periodMs: (declared) => (override ?? declared * scale) * 1000,
    durationMs: (seconds, declaredPeriod) =>
      (override === undefined ? seconds * scale : (seconds * override) / declaredPeriod) * 1000,
  };
}

/** One query of a metric math alarm: a metric with its statistic, or an expression over other queries. */
export interface MathEntry {
  readonly metric?: MetricId;
  readonly stat?: string;
  readonly expression?: MathNode;
}

/** A metric alarm as evaluation needs it. */
export interface MetricAlarmSpec {
  readonly name: string;
  readonly rule: ThresholdRule;
  readonly periodMs: number;
  readonly declaredPeriodSeconds: number;
  readonly source:
    | { readonly kind: 'metric'; readonly metric: MetricId; readonly statistic: string }
    | { readonly kind: 'math'; readonly entries: ReadonlyMap<string, MathEntry>; readonly returnId: string };
  readonly queues: readonly string[];
  readonly actions: ReadonlySet<AlarmState>;
  /** Each state's action ARNs. */
  readonly targets: ReadonlyMap<AlarmState, readonly string[]>;
  readonly alarmArn?: string;
  readonly motoState: AlarmState;
}

/** A composite alarm as evaluation needs it. */
export interface CompositeSpec {
  readonly name: string;
  readonly rule: RuleNode;
  readonly suppressor: string | undefined;
  readonly waitSeconds: number;
  readonly extensionSeconds: number;
  readonly actions: ReadonlySet<AlarmState>;
  /** Each state's action ARNs. */
  readonly targets: ReadonlyMap<AlarmState, readonly string[]>;
}

/** The default period, seconds: of alarms that declare none, of published metrics, of suppressors. */
export const DEFAULT_PERIOD_SECONDS = 60;

function toDimensions(
  list: readonly { Name?: string; Value?: string }[] | undefined,
): Record<string, string> {
  const dims: Record<string, string> = {};
  for (const d of list ?? []) dims[d.Name ?? ''] = d.Value ?? '';
  return dims;
}

function actionTargets(a: {
  ActionsEnabled?: boolean;
  AlarmActions?: readonly string[];
  OKActions?: readonly string[];
  InsufficientDataActions?: readonly string[];
}): Map<AlarmState, readonly string[]> {
  const targets = new Map<AlarmState, readonly string[]>();
  if (a.ActionsEnabled === false) return targets;
  targets.set('ALARM', a.AlarmActions ?? []);
  targets.set('OK', a.OKActions ?? []);
  targets.set('INSUFFICIENT_DATA', a.InsufficientDataActions ?? []);
  return targets;
}

/** The states whose transitions owe actions: those with at least one target. */
function stateActions(targets: ReadonlyMap<AlarmState, readonly string[]>): Set<AlarmState> {
  return new Set([...targets].filter(([, t]) => t.length > 0).map(([state]) => state));
}

function asState(value: string | undefined): AlarmState {
  return value === 'ALARM' || value === 'OK' ? value : 'INSUFFICIENT_DATA';
}

/** Builds what evaluation needs from a DescribeAlarms entry; throws for what it cannot evaluate. */
export function toMetricAlarmSpec(a: MetricAlarm, scaler: PeriodScaler): MetricAlarmSpec {
  const name = a.AlarmName ?? '';
  if (a.Threshold === undefined)
    throw new AlarmDefinitionError(
      `${name}: no static Threshold (anomaly detection is not supported locally)`,
    );
  comparison(a.ComparisonOperator ?? '');
  const rule: ThresholdRule = {
    threshold: a.Threshold,
    comparisonOperator: a.ComparisonOperator ?? '',
    evaluationPeriods: a.EvaluationPeriods ?? 1,
    datapointsToAlarm: a.DatapointsToAlarm,
    treatMissingData: a.TreatMissingData,
  };
  const queues: string[] = [];
  const noteQueue = (m: MetricId): void => {
    if (m.namespace === 'AWS/SQS' && m.dimensions.QueueName !== undefined)
      queues.push(m.dimensions.QueueName);
  };
  const common = {
    name,
    rule,
    actions: stateActions(actionTargets(a)),
    targets: actionTargets(a),
    alarmArn: a.AlarmArn,
    motoState: asState(a.StateValue),
    queues,
  };
  if ((a.Metrics ?? []).length === 0) {
    const statistic = a.ExtendedStatistic ?? a.Statistic;
    if (statistic === undefined || a.MetricName === undefined || a.Namespace === undefined)
      throw new AlarmDefinitionError(`${name}: neither a metric with a statistic nor Metrics`);
    aggregate([0], statistic);
    const metric = { namespace: a.Namespace, name: a.MetricName, dimensions: toDimensions(a.Dimensions) };
    noteQueue(metric);
    const declared = a.Period ?? DEFAULT_PERIOD_SECONDS;
    return {
      ...common,
      periodMs: scaler.periodMs(declared),
      declaredPeriodSeconds: declared,
      source: { kind: 'metric', metric, statistic },
    };
  }
  const entries = new Map<string, MathEntry>();
  let returnId: string | undefined;
  let declared = a.Period ?? 0;
  for (const q of a.Metrics ?? []) {
    const id = q.Id ?? '';
    if (q.ReturnData !== false) {
      if (returnId !== undefined) throw new AlarmDefinitionError(`${name}: more than one query returns data`);
      returnId = id;
    }
    if (q.Expression !== undefined) {
      entries.set(id, { expression: parseMathExpression(q.Expression) });
    } else if (q.MetricStat?.Metric !== undefined) {
      const m = q.MetricStat.Metric;
      const metric = {
        namespace: m.Namespace ?? '',
        name: m.MetricName ?? '',
        dimensions: toDimensions(m.Dimensions),
      };
      const stat = q.MetricStat.Stat ?? '';
      aggregate([0], stat);
      noteQueue(metric);
      declared = Math.max(declared, q.MetricStat.Period ?? 0);
      entries.set(id, { metric, stat });
    } else {
      throw new AlarmDefinitionError(`${name}: query ${id} has neither an Expression nor a MetricStat`);
    }
  }
  if (returnId === undefined) throw new AlarmDefinitionError(`${name}: no query returns data`);
  for (const [id, entry] of entries) {
    for (const ref of entry.expression === undefined ? [] : mathReferences(entry.expression))
      if (!entries.has(ref)) throw new AlarmDefinitionError(`${name}: query ${id} reads unknown id ${ref}`);
  }
  const period = declared > 0 ? declared : DEFAULT_PERIOD_SECONDS;
  return {
    ...common,
    periodMs: scaler.periodMs(period),
    declaredPeriodSeconds: period,
    source: { kind: 'math', entries, returnId },
  };
}

/** Builds what evaluation needs from a composite alarm definition; throws for a rule it cannot read. */
export function toCompositeSpec(c: PutCompositeAlarmCommandInput): CompositeSpec {
  return {
    name: c.AlarmName ?? '',
    rule: parseAlarmRule(c.AlarmRule ?? ''),
    suppressor: c.ActionsSuppressor === undefined ? undefined : alarmNameOf(c.ActionsSuppressor),
    waitSeconds: c.ActionsSuppressorWaitPeriod ?? 0,
    extensionSeconds: c.ActionsSuppressorExtensionPeriod ?? 0,
    actions: stateActions(actionTargets(c)),
    targets: actionTargets(c),
  };
}
