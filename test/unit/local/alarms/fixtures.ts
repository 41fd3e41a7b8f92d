/** Metric alarm definitions as DescribeAlarms returns them, shared by the alarm evaluation tests. */
import type { MetricAlarm } from '@aws-sdk/client-cloudwatch';
import { RETRY_RATE_EXPRESSION } from '../../../../lib/infra/observability';

const RETRY_RATE = RETRY_RATE_EXPRESSION;
/** The ARN of the alarm `name`, as CDK writes it into composite rules. */
export const ARN = (name: string): string => `arn:aws:cloudwatch:us-east-1:123456789012:alarm:${name}`;

/** A 1-of-1 Sum alarm on a tenang metric of the payment consumer (threshold 1, notBreaching). */
export function customAlarm(name: string, metric: string, overrides: Partial<MetricAlarm> = {}): MetricAlarm {
  return {
    AlarmName: name,
    AlarmArn: ARN(name),
    StateValue: 'OK',
    Namespace: 'tenang',
    MetricName: metric,
    Dimensions: [{ Name: 'service', Value: 'payment-consumer' }],
    Statistic: 'Sum',
    Period: 60,
    EvaluationPeriods: 1,
    DatapointsToAlarm: 1,
    Threshold: 1,
    ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    TreatMissingData: 'notBreaching',
    Metrics: [],
    ...overrides,
  };
}

/** tenang's retry rate alarm: the metric math expression over three custom metrics, 2 of 3. */
export function retryRateAlarm(name: string): MetricAlarm {
  const stat = (Id: string, MetricName: string): NonNullable<MetricAlarm['Metrics']>[number] => ({
    Id,
    ReturnData: false,
    MetricStat: {
      Metric: {
        Namespace: 'tenang',
        MetricName,
        Dimensions: [{ Name: 'service', Value: 'payment-consumer' }],
      },
      Period: 60,
      Stat: 'Sum',
    },
  });
  return {
    AlarmName: name,
    AlarmArn: ARN(name),
    StateValue: 'OK',
    EvaluationPeriods: 3,
    DatapointsToAlarm: 2,
    Threshold: 10,
    ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    TreatMissingData: 'notBreaching',
    Dimensions: [],
    Metrics: [
      { Id: 'expr_1', Expression: RETRY_RATE, ReturnData: true },
      stat('r', 'JobRetried'),
      stat('s', 'JobSucceeded'),
      stat('p', 'JobFailedPermanently'),
    ],
  };
}

/** A Maximum alarm on one of a queue's AWS/SQS metrics. */
export function queueAlarm(name: string, queue: string, metric: string, threshold: number): MetricAlarm {
  return customAlarm(name, metric, {
    Namespace: 'AWS/SQS',
    Dimensions: [{ Name: 'QueueName', Value: queue }],
    Statistic: 'Maximum',
    Threshold: threshold,
  });
}
