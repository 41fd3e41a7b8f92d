/**
 * Alarms and dashboards (O1, O3, O4). Thresholds come from the pipeline config; every alarm's
 * description names its runbook file; all actions go to one encrypted SNS topic, whose
 * subscribers (or the existing topics also notified) the declaration names in deliverTo.
 *
 * Per consumer a composite alarm carries the page. Its actions are suppressed while the
 * consumer is deliberately paused (its Paused metric is 1), because a backlog is then expected;
 * a pause that outlives its expiry alarms by itself, and DLQ or on-failure depth alarms are
 * never suppressed: a message there needs a person whether or not the consumer is paused. Nor is
 * a denied permission (PermissionDenied): a missing grant stays missing while paused, and pausing
 * is that alarm's own mitigation.
 */
import { ArnFormat, Duration, Stack, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subs from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import {
  METRIC,
  METRICS_NAMESPACE,
  SERVICE_DIMENSION,
  flagMetricDimensions,
  type AlarmTopic,
  type DerivedAlarmSettings,
  type ResolvedJobType,
  type ResolvedStreamConsumer,
} from '../config';
import { NO_SUBSCRIBER_METADATA_KEY } from '../audit/deploy-readiness';
import { validateProps } from './validation';

/** CloudWatch: an alarm has at most 5 actions per state (PutMetricAlarm AlarmActions, OKActions). */
const MAX_ACTIONS_PER_STATE = 5;

/** Retry rate (%) of a job type from its retried (r), succeeded (s) and permanently failed (p) counts. */
export const RETRY_RATE_EXPRESSION =
  'IF(FILL(r, 0) + FILL(s, 0) + FILL(p, 0) > 0, 100 * FILL(r, 0) / (FILL(r, 0) + FILL(s, 0) + FILL(p, 0)), 0)';

/** Runbook files (runbooks/<name>.md) that alarms name, besides each consumer's own. */
export const RUNBOOK = {
  backlog: 'backlog',
  dlq: 'dlq-not-empty',
  retryStorm: 'retry-storm',
  pauseOverdue: 'pause-overdue',
  streamFailures: 'stream-failures',
  flagReconciler: 'flag-reconciler',
  permissionDenied: 'permission-denied',
} as const;

/** The description line that names a runbook. */
export function runbookLine(runbook: string): string {
  return `Runbook: runbooks/${runbook}.md`;
}

/** What one monitored job type brings. */
export interface MonitoredJobType {
  readonly jobType: ResolvedJobType;
  readonly queue: sqs.IQueue;
  readonly deadLetterQueue: sqs.IQueue;
  /** Side queue of jobs past their useful age (B5), for job types that declare one. */
  readonly expiredQueue?: sqs.IQueue;
  readonly consumer: lambda.IFunction;
}

/** What one monitored stream consumer brings. */
export interface MonitoredStreamConsumer {
  readonly streamConsumer: ResolvedStreamConsumer;
  readonly consumer: lambda.IFunction;
  readonly failureQueue: sqs.IQueue;
}

/** Props of Observability. */
export interface ObservabilityProps {
  readonly stageName: string;
  /** SNS topic name for every alarm action. */
  readonly topicName: string;
  /**
   * Who is told of every alarm (the declaration's stage.alarmTopic.deliverTo): e-mail and HTTPS
   * subscriptions of the topic, existing topics that every alarm also notifies, or `{ none }`
   * with the reason, written into the topic's metadata for the audit (Tenang-F5-AlarmSubscriber).
   * @default [] - no one: the synth refuses it (Tenang-F5-AlarmSubscriber)
   */
  readonly deliverTo?: AlarmTopic['deliverTo'];
  readonly jobTypes: readonly MonitoredJobType[];
  readonly streamConsumers: readonly MonitoredStreamConsumer[];
  /** The flag reconciler, whose failures leave pauses unenforced. */
  readonly reconciler: lambda.IFunction;
  /** Retries as a percentage of attempts that page. @default 10 */
  readonly retryRatePercent?: number;
}

/** The alarms of one consumer. */
export interface ConsumerAlarms {
  /** Pages; suppressed while the consumer is deliberately paused. */
  readonly composite: cloudwatch.CompositeAlarm;
  /** Children of the composite (no actions of their own). */
  readonly children: readonly cloudwatch.Alarm[];
  /** Never suppressed: DLQ / on-failure depth, pause overdue, permission denied. */
  readonly direct: readonly cloudwatch.Alarm[];
  /**
   * PermissionDenied ≥ 1: the deployment denies the consumer an action. Direct, never
   * suppressed: pausing is this alarm's mitigation, and the grant is missing all the same.
   */
  readonly permissionDenied: cloudwatch.Alarm;
  /** Paused ≥ 1: the composite's actions suppressor. */
  readonly paused: cloudwatch.Alarm;
}

/** The topic, every alarm and a dashboard per consumer. */
export class Observability extends Construct {
  /** All alarm actions go here. */
  public readonly topic: sns.Topic;
  /** Alarms keyed by consumer name. */
  public readonly alarms: ReadonlyMap<string, ConsumerAlarms>;
  /** Dashboards keyed by consumer name. */
  public readonly dashboards: ReadonlyMap<string, cloudwatch.Dashboard>;

  /** The stage's topic, then each existing topic of deliverTo. */
  private readonly actions: readonly actions.SnsAction[];
  private readonly prefix: string;

  public constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    validateProps('Observability', props, [
      (p) => {
        const rate = p.retryRatePercent ?? 10;
        return rate > 0 && rate <= 100 ? undefined : 'retryRatePercent must be in (0, 100]';
      },
      (p) => (p.jobTypes.length > 0 ? undefined : 'at least one job type is monitored'),
      (p) => {
        const topics = Array.isArray(p.deliverTo) ? p.deliverTo.filter((d) => d.topicArn !== undefined) : [];
        return topics.length + 1 <= MAX_ACTIONS_PER_STATE
          ? undefined
          : `deliverTo names ${topics.length} topics: with the stage's own an alarm would have ${topics.length + 1} actions, CloudWatch allows ${MAX_ACTIONS_PER_STATE}`;
      },
    ]);
    this.prefix = `tenang-${props.stageName}`;

    // CloudWatch can publish to an encrypted topic only with a customer-managed key it may use.
    const key = new kms.Key(this, 'TopicKey', {
      description: 'Encrypts the tenang alarm topic',
      enableKeyRotation: true,
    });
    key.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        resources: ['*'],
      }),
    );
    this.topic = new sns.Topic(this, 'AlarmTopic', {
      topicName: props.topicName,
      masterKey: key,
      enforceSSL: true,
    });
    // enforceSSL makes CDK write an AWS::SNS::TopicPolicy, which replaces the topic's default
    // policy: without this statement it holds only the TLS Deny, nothing lets CloudWatch publish,
    // and every alarm action fails ("is not authorized to perform: SNS:Publish"), seen only in
    // the alarm history. Scoped to this account's alarms (aws:SourceAccount, aws:SourceArn), as
    // the SNS documentation advises for service principals.
    const stack = Stack.of(this);
    this.topic.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['sns:Publish'],
        resources: [this.topic.topicArn],
        conditions: {
          StringEquals: { 'aws:SourceAccount': stack.account },
          ArnLike: {
            'aws:SourceArn': stack.formatArn({
              service: 'cloudwatch',
              resource: 'alarm',
              resourceName: '*',
              arnFormat: ArnFormat.COLON_RESOURCE_NAME,
            }),
          },
        },
      }),
    );
    const deliverTo = props.deliverTo ?? [];
    const existing: actions.SnsAction[] = [];
    if (Array.isArray(deliverTo)) {
      const subscribe = (subscription: sns.ITopicSubscription): void =>
        Validations.of(this.topic.addSubscription(subscription)).acknowledge({
          id: 'Serverless-SNSRedrivePolicy',
          reason:
            "An alarm notification: SNS retries the delivery itself, and a dead-letter queue of undelivered pages would need an alarm of its own, paging through this same topic; failed deliveries show in the topic's NumberOfNotificationsFailed metric.",
        });
      deliverTo.forEach((d, i) => {
        if (d.email !== undefined) subscribe(new subs.EmailSubscription(d.email));
        if (d.https !== undefined)
          subscribe(new subs.UrlSubscription(d.https, { protocol: sns.SubscriptionProtocol.HTTPS }));
        // An existing topic is notified directly: SNS cannot subscribe a topic to a topic.
        if (d.topicArn !== undefined)
          existing.push(new actions.SnsAction(sns.Topic.fromTopicArn(this, `DeliverTo${i}`, d.topicArn)));
      });
    } else {
      (this.topic.node.defaultChild as sns.CfnTopic).addMetadata(NO_SUBSCRIBER_METADATA_KEY, deliverTo.none);
    }
    this.actions = [new actions.SnsAction(this.topic), ...existing];

    const alarms = new Map<string, ConsumerAlarms>();
    const dashboards = new Map<string, cloudwatch.Dashboard>();
    for (const m of props.jobTypes) {
      alarms.set(m.jobType.consumer, this.jobTypeAlarms(m, props.retryRatePercent ?? 10));
      dashboards.set(m.jobType.consumer, this.jobTypeDashboard(m));
    }
    for (const m of props.streamConsumers) {
      alarms.set(m.streamConsumer.consumer, this.streamAlarms(m));
      dashboards.set(m.streamConsumer.consumer, this.streamDashboard(m));
    }
    this.alarms = alarms;
    this.dashboards = dashboards;

    this.alarm('flag-reconciler-errors', {
      metric: props.reconciler.metricErrors({ period: Duration.minutes(5) }),
      threshold: 1,
      evaluationPeriods: 1,
      description: 'The flag reconciler failed: pause flags may not be enforced on event source mappings.',
      runbook: RUNBOOK.flagReconciler,
      direct: true,
    });
  }

  private alarm(
    name: string,
    opts: {
      metric: cloudwatch.IMetric;
      threshold: number;
      evaluationPeriods: number;
      datapointsToAlarm?: number;
      description: string;
      runbook: string;
      direct: boolean;
    },
  ): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(this, `Alarm-${name}`, {
      alarmName: `${this.prefix}-${name}`,
      alarmDescription: `${opts.description} ${runbookLine(opts.runbook)}`,
      metric: opts.metric,
      threshold: opts.threshold,
      evaluationPeriods: opts.evaluationPeriods,
      datapointsToAlarm: opts.datapointsToAlarm ?? opts.evaluationPeriods,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    if (opts.direct) {
      alarm.addAlarmAction(...this.actions);
      alarm.addOkAction(...this.actions);
    }
    return alarm;
  }

  private customMetric(
    name: string,
    dimension: Record<string, string>,
    statistic: string,
  ): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: METRICS_NAMESPACE,
      metricName: name,
      dimensionsMap: dimension,
      statistic,
      period: Duration.minutes(1),
    });
  }

  private pauseAlarms(consumer: string): { paused: cloudwatch.Alarm; overdue: cloudwatch.Alarm } {
    const dims = flagMetricDimensions(consumer);
    const paused = this.alarm(`${consumer}-paused`, {
      metric: this.customMetric(METRIC.paused, dims, 'Maximum'),
      threshold: 1,
      evaluationPeriods: 1,
      description: `${consumer} is deliberately paused (its backlog alarms are suppressed meanwhile).`,
      runbook: RUNBOOK.pauseOverdue,
      direct: false,
    });
    const overdue = this.alarm(`${consumer}-pause-overdue`, {
      metric: this.customMetric(METRIC.pauseOverdue, dims, 'Maximum'),
      threshold: 1,
      evaluationPeriods: 1,
      description: `${consumer} is still paused after its pause expired: resume it or extend the pause with a reason.`,
      runbook: RUNBOOK.pauseOverdue,
      direct: true,
    });
    return { paused, overdue };
  }

  /**
   * A denied action pages at once (1 of 1 minute, one denial), paused or not: the jobs are held
   * (job types) or retried into the on-failure queue (stream consumers) rather than lost, but SQS
   * redrives a held message after maxReceiveCount receives and the stream gives records up, so the
   * time to react is bounded (runbooks/permission-denied.md gives it per job type).
   */
  private permissionDeniedAlarm(consumer: string, period: Duration): cloudwatch.Alarm {
    return this.alarm(`${consumer}-permission-denied`, {
      metric: this.customMetric(METRIC.permissionDenied, { [SERVICE_DIMENSION]: consumer }, 'Sum').with({
        period,
      }),
      threshold: 1,
      evaluationPeriods: 1,
      description: `${consumer} was denied an action it needs (a missing IAM grant or a policy): a deployment defect; its work is held, not dead-lettered.`,
      runbook: RUNBOOK.permissionDenied,
      direct: true,
    });
  }

  private composite(
    consumer: string,
    runbook: string,
    children: readonly cloudwatch.Alarm[],
    paused: cloudwatch.Alarm,
    settings: DerivedAlarmSettings,
  ): cloudwatch.CompositeAlarm {
    const composite = new cloudwatch.CompositeAlarm(this, `Composite-${consumer}`, {
      compositeAlarmName: `${this.prefix}-${consumer}`,
      alarmDescription: `${consumer} is unhealthy (backlog, retries, errors or throttles). ${runbookLine(runbook)}`,
      alarmRule: cloudwatch.AlarmRule.anyOf(...children),
      actionsSuppressor: paused,
      // A resumed consumer drains its backlog first: keep quiet for a few periods after a pause.
      actionsSuppressorExtensionPeriod: Duration.seconds(settings.periodSeconds * 5),
      actionsSuppressorWaitPeriod: Duration.seconds(settings.periodSeconds),
    });
    composite.addAlarmAction(...this.actions);
    composite.addOkAction(...this.actions);
    return composite;
  }

  private jobTypeAlarms(m: MonitoredJobType, retryRatePercent: number): ConsumerAlarms {
    const { jobType: j } = m;
    const s = j.alarms;
    const period = Duration.seconds(s.periodSeconds);
    const service = { [SERVICE_DIMENSION]: j.consumer };
    const oldest = this.alarm(`${j.consumer}-oldest-age`, {
      metric: m.queue.metricApproximateAgeOfOldestMessage({ period, statistic: 'Maximum' }),
      threshold: s.ageThresholdSeconds,
      evaluationPeriods: s.evaluationPeriods,
      datapointsToAlarm: s.datapointsToAlarm,
      description: `The oldest ${j.name} job is older than its ${j.latencyObjectiveSeconds} s objective.`,
      runbook: RUNBOOK.backlog,
      direct: false,
    });
    const retryRate = this.alarm(`${j.consumer}-retry-rate`, {
      metric: new cloudwatch.MathExpression({
        // IF as CloudWatch's metric math documents it (a scalar inside MAX's array is not):
        // no attempts in a period is a 0 % retry rate, not a division by zero.
        expression: RETRY_RATE_EXPRESSION,
        usingMetrics: {
          r: this.customMetric(METRIC.jobRetried, service, 'Sum'),
          s: this.customMetric(METRIC.jobSucceeded, service, 'Sum'),
          p: this.customMetric(METRIC.jobFailedPermanently, service, 'Sum'),
        },
        period,
        label: `${j.name} retry rate (%)`,
      }),
      threshold: retryRatePercent,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      description: `More than ${retryRatePercent}% of ${j.name} attempts are retries: a dependency is failing or a retry storm is building.`,
      runbook: RUNBOOK.retryStorm,
      direct: false,
    });
    const errors = this.alarm(`${j.consumer}-errors`, {
      metric: m.consumer.metricErrors({ period }),
      threshold: 1,
      evaluationPeriods: 1,
      description: `${j.consumer} failed as a whole (a bug or a timeout, not a job error).`,
      runbook: j.runbook,
      direct: false,
    });
    const throttles = this.alarm(`${j.consumer}-throttles`, {
      metric: m.consumer.metricThrottles({ period }),
      threshold: 1,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
      description: `${j.consumer} is throttled: account concurrency is exhausted.`,
      runbook: j.runbook,
      direct: false,
    });
    const dlq = this.alarm(`${j.consumer}-dlq`, {
      metric: m.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum' }),
      threshold: 1,
      evaluationPeriods: 1,
      description: `The ${j.name} DLQ holds messages.`,
      runbook: RUNBOOK.dlq,
      direct: true,
    });
    const { paused, overdue } = this.pauseAlarms(j.consumer);
    const permissionDenied = this.permissionDeniedAlarm(j.consumer, period);
    const children = [oldest, retryRate, errors, throttles];
    return {
      composite: this.composite(j.consumer, j.runbook, children, paused, s),
      children,
      direct: [dlq, overdue, permissionDenied],
      permissionDenied,
      paused,
    };
  }

  private streamAlarms(m: MonitoredStreamConsumer): ConsumerAlarms {
    const { streamConsumer: c } = m;
    const s = c.alarms;
    const period = Duration.seconds(s.periodSeconds);
    const iteratorAge = this.alarm(`${c.consumer}-iterator-age`, {
      metric: m.consumer.metric('IteratorAge', { period, statistic: 'Maximum' }),
      threshold: s.ageThresholdSeconds * 1000,
      evaluationPeriods: s.evaluationPeriods,
      datapointsToAlarm: s.datapointsToAlarm,
      description: `${c.consumer} is more than ${c.latencyObjectiveSeconds} s behind the ${c.table} stream.`,
      runbook: c.runbook,
      direct: false,
    });
    const errors = this.alarm(`${c.consumer}-errors`, {
      metric: m.consumer.metricErrors({ period }),
      threshold: 1,
      evaluationPeriods: 1,
      description: `${c.consumer} failed as a whole (a bug or a timeout).`,
      runbook: c.runbook,
      direct: false,
    });
    const failures = this.alarm(`${c.consumer}-failures`, {
      metric: m.failureQueue.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum' }),
      threshold: 1,
      evaluationPeriods: 1,
      description: `Stream records of ${c.consumer} exhausted their retries or aged out.`,
      runbook: RUNBOOK.streamFailures,
      direct: true,
    });
    const { paused, overdue } = this.pauseAlarms(c.consumer);
    const permissionDenied = this.permissionDeniedAlarm(c.consumer, period);
    const children = [iteratorAge, errors];
    return {
      composite: this.composite(c.consumer, c.runbook, children, paused, s),
      children,
      direct: [failures, overdue, permissionDenied],
      permissionDenied,
      paused,
    };
  }

  private jobTypeDashboard(m: MonitoredJobType): cloudwatch.Dashboard {
    const { jobType: j } = m;
    const period = Duration.minutes(1);
    const service = { [SERVICE_DIMENSION]: j.consumer };
    const dashboard = new cloudwatch.Dashboard(this, `Dashboard-${j.consumer}`, {
      dashboardName: `${this.prefix}-${j.consumer}`,
    });
    dashboard.addWidgets(
      new cloudwatch.TextWidget({
        markdown: `# ${j.name}\nOwner: ${j.owner} · criticality: ${j.criticality} · objective: ${j.latencyObjectiveSeconds} s · ${runbookLine(j.runbook)}\n\nPausing costs: ${j.pauseCost}`,
        width: 24,
        height: 2,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Queue depth',
        left: [
          m.queue.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum' }),
          m.queue.metricApproximateNumberOfMessagesNotVisible({ period, statistic: 'Maximum' }),
        ],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Oldest message age (s)',
        left: [m.queue.metricApproximateAgeOfOldestMessage({ period, statistic: 'Maximum' })],
        leftAnnotations: [{ value: j.alarms.ageThresholdSeconds, label: 'objective' }],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'DLQ depth',
        left: [m.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum' })],
        width: 8,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Outcomes',
        left: [
          this.customMetric(METRIC.jobSucceeded, service, 'Sum'),
          this.customMetric(METRIC.jobRetried, service, 'Sum'),
          this.customMetric(METRIC.jobFailedPermanently, service, 'Sum'),
          this.customMetric(METRIC.duplicateIgnored, service, 'Sum'),
        ],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Consumer',
        left: [m.consumer.metricErrors({ period }), m.consumer.metricThrottles({ period })],
        right: [m.consumer.metricDuration({ period, statistic: 'p99' })],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Paused / overdue',
        left: [
          this.customMetric(METRIC.paused, flagMetricDimensions(j.consumer), 'Maximum'),
          this.customMetric(METRIC.pauseOverdue, flagMetricDimensions(j.consumer), 'Maximum'),
        ],
        width: 8,
      }),
    );
    if (m.expiredQueue !== undefined) {
      dashboard.addWidgets(
        new cloudwatch.GraphWidget({
          title: `Past useful age (${j.usefulAgeSeconds ?? '?'} s): moved aside`,
          left: [this.customMetric(METRIC.jobExpired, service, 'Sum')],
          right: [m.expiredQueue.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum' })],
          width: 24,
        }),
      );
    }
    return dashboard;
  }

  private streamDashboard(m: MonitoredStreamConsumer): cloudwatch.Dashboard {
    const { streamConsumer: c } = m;
    const period = Duration.minutes(1);
    const dashboard = new cloudwatch.Dashboard(this, `Dashboard-${c.consumer}`, {
      dashboardName: `${this.prefix}-${c.consumer}`,
    });
    dashboard.addWidgets(
      new cloudwatch.TextWidget({
        markdown: `# ${c.consumer}\nOwner: ${c.owner} · objective: ${c.latencyObjectiveSeconds} s behind the stream · ${runbookLine(c.runbook)}\n\nPausing costs: ${c.pauseCost}`,
        width: 24,
        height: 2,
      }),
    );
    dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Iterator age (ms)',
        left: [m.consumer.metric('IteratorAge', { period, statistic: 'Maximum' })],
        leftAnnotations: [{ value: c.alarms.ageThresholdSeconds * 1000, label: 'objective' }],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Errors / on-failure depth',
        left: [
          m.consumer.metricErrors({ period }),
          m.failureQueue.metricApproximateNumberOfMessagesVisible({ period, statistic: 'Maximum' }),
        ],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Paused / overdue',
        left: [
          this.customMetric(METRIC.paused, flagMetricDimensions(c.consumer), 'Maximum'),
          this.customMetric(METRIC.pauseOverdue, flagMetricDimensions(c.consumer), 'Maximum'),
        ],
        width: 8,
      }),
    );
    return dashboard;
  }
}
