/**
 * Decides a metric alarm's state from its last N datapoints: the threshold comparison, the
 * treatment of missing data and CloudWatch's M-of-N rule, with the state reason it gives.
 */
import { AlarmDefinitionError } from './errors';
import type { AlarmState } from './state';

/** What decides a metric alarm's state from its datapoints. */
export interface ThresholdRule {
  readonly threshold: number;
  readonly comparisonOperator: string;
  readonly evaluationPeriods: number;
  /** M of M-of-N. @default evaluationPeriods */
  readonly datapointsToAlarm?: number;
  /** @default 'missing' */
  readonly treatMissingData?: string;
}

const COMPARISONS: Record<string, { test: (v: number, t: number) => boolean; text: string }> = {
  GreaterThanOrEqualToThreshold: { test: (v, t) => v >= t, text: 'greater than or equal to' },
  GreaterThanThreshold: { test: (v, t) => v > t, text: 'greater than' },
  LessThanThreshold: { test: (v, t) => v < t, text: 'less than' },
  LessThanOrEqualToThreshold: { test: (v, t) => v <= t, text: 'less than or equal to' },
};

/** A CloudWatch static comparison operator's test and wording; throws for the others. */
export function comparison(operator: string): { test: (v: number, t: number) => boolean; text: string } {
  const c = COMPARISONS[operator];
  if (c === undefined)
    throw new AlarmDefinitionError(`comparison operator ${operator} is not supported locally`);
  return c;
}

function formatValue(v: number | undefined): string {
  return v === undefined ? '-' : String(Math.round(v * 1000) / 1000);
}

/**
 * A metric alarm's state from its last N datapoints (oldest first; undefined = missing), with
 * CloudWatch's rules: ALARM when at least M are breaching, missing ones counted as
 * `treatMissingData` says; `missing` goes to INSUFFICIENT_DATA and `ignore` keeps `current`
 * when every datapoint is missing.
 */
export function decideAlarmState(
  points: readonly (number | undefined)[],
  rule: ThresholdRule,
  current: AlarmState,
): { state: AlarmState; reason: string } {
  const { test, text } = comparison(rule.comparisonOperator);
  const m = rule.datapointsToAlarm ?? rule.evaluationPeriods;
  const treat = rule.treatMissingData ?? 'missing';
  if (!['missing', 'ignore', 'breaching', 'notBreaching'].includes(treat))
    throw new AlarmDefinitionError(`TreatMissingData ${treat} is not a CloudWatch value`);
  const shown = `[${points.map(formatValue).join(', ')}]`;
  const present = points.filter((p): p is number => p !== undefined);
  if (present.length === 0 && treat === 'missing') {
    return {
      state: 'INSUFFICIENT_DATA',
      reason: `Insufficient Data: no datapoints in the last ${points.length} period(s).`,
    };
  }
  if (present.length === 0 && treat === 'ignore') {
    return {
      state: current,
      reason: `No datapoints in the last ${points.length} period(s): state kept (ignore).`,
    };
  }
  const missingBreach = treat === 'breaching' ? points.length - present.length : 0;
  const breaching = present.filter((v) => test(v, rule.threshold)).length + missingBreach;
  const state: AlarmState = breaching >= m ? 'ALARM' : 'OK';
  const missingNote = present.length < points.length ? `; missing datapoints treated as ${treat}` : '';
  return {
    state,
    reason:
      `Threshold Crossed: ${breaching} out of the last ${points.length} datapoints ${shown} ` +
      `${breaching === 1 ? 'was' : 'were'} ${text} the threshold (${rule.threshold}) ` +
      `(minimum ${m} datapoint${m === 1 ? '' : 's'} for ALARM${missingNote}).`,
  };
}
