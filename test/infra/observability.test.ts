import * as fs from 'node:fs';
import * as path from 'node:path';
import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { METRIC, METRICS_NAMESPACE, RECONCILER_SERVICE, type PipelineConfig } from '../../lib/config';
import { parseMathExpression } from '../../lib/local/alarms/metric-math';
import { PERMISSION_DENIED_RUNBOOK } from '../../lib/adapters/aws/permission-denial';
import {
  Observability,
  RETRY_RATE_EXPRESSION,
  RUNBOOK,
  type MonitoredJobType,
  type MonitoredStreamConsumer,
  type ObservabilityProps,
} from '../../lib/infra/observability';
import {
  getAtt,
  logicalId,
  onlyResource,
  propertiesOf,
  propsErrorOf,
  ref,
  referenceConfig,
  resources,
  testStack,
  toText,
  type CfnResource,
} from './helpers';

const RUNBOOKS_DIR = path.join(__dirname, '..', '..', 'runbooks');
const config = referenceConfig();
const jobTypes = config.jobTypes.map((j) => [j.consumer, j] as const);
const streamConsumers = config.streamConsumers.map((s) => [s.consumer, s] as const);
const allConsumers = [
  ...config.jobTypes.map((j) => j.consumer),
  ...config.streamConsumers.map((s) => s.consumer),
];

/** A stand-in function: the alarms read only its name. */
function stubFunction(stack: Stack, id: string): lambda.Function {
  return new lambda.Function(stack, id, {
    runtime: lambda.Runtime.NODEJS_22_X,
    handler: 'index.handler',
    code: lambda.Code.fromInline('exports.handler = async () => undefined;'),
  });
}

/** Queues and functions for every job type and stream consumer of a config, in a stack. */
function monitoredResources(
  stack: Stack,
  pipeline: PipelineConfig,
): Pick<ObservabilityProps, 'jobTypes' | 'streamConsumers' | 'reconciler'> {
  const jobs: MonitoredJobType[] = pipeline.jobTypes.map((jobType) => ({
    jobType,
    queue: new sqs.Queue(stack, `Queue-${jobType.consumer}`),
    deadLetterQueue: new sqs.Queue(stack, `Dlq-${jobType.consumer}`),
    ...(jobType.expiredQueueName === undefined
      ? {}
      : { expiredQueue: new sqs.Queue(stack, `Expired-${jobType.consumer}`) }),
    consumer: stubFunction(stack, `Fn-${jobType.consumer}`),
  }));
  const streams: MonitoredStreamConsumer[] = pipeline.streamConsumers.map((streamConsumer) => ({
    streamConsumer,
    consumer: stubFunction(stack, `Fn-${streamConsumer.consumer}`),
    failureQueue: new sqs.Queue(stack, `Failures-${streamConsumer.consumer}`),
  }));
  return { jobTypes: jobs, streamConsumers: streams, reconciler: stubFunction(stack, 'Reconciler') };
}

function build(overrides: Partial<ObservabilityProps> = {}): {
  observability: Observability;
  props: ObservabilityProps;
} {
  const stack = testStack();
  const props: ObservabilityProps = {
    stageName: 'dev',
    topicName: config.stage.alarmTopic.name,
    ...monitoredResources(stack, config),
    ...overrides,
  };
  return { observability: new Observability(stack, 'Observability', props), props };
}

describe('Class: Observability', () => {
  let observability: Observability;
  let props: ObservabilityProps;
  let template: Template;
  beforeAll(() => {
    ({ observability, props } = build());
    template = Template.fromStack(Stack.of(observability));
  });
  const alarmNamed = (name: string): Record<string, unknown> =>
    onlyResource(template, 'AWS::CloudWatch::Alarm', { Properties: { AlarmName: `tenang-dev-${name}` } })[1]
      .Properties;
  const monitoredJob = (consumer: string): MonitoredJobType => {
    const found = props.jobTypes.find((m) => m.jobType.consumer === consumer);
    if (found === undefined) throw new Error(`no monitored job type for ${consumer}`);
    return found;
  };
  const monitoredStream = (consumer: string): MonitoredStreamConsumer => {
    const found = props.streamConsumers.find((m) => m.streamConsumer.consumer === consumer);
    if (found === undefined) throw new Error(`no monitored stream consumer for ${consumer}`);
    return found;
  };
  const topic = (): { Ref: string } => ref(observability.topic);
  const everyAlarm = (): [string, CfnResource][] => [
    ...resources(template, 'AWS::CloudWatch::Alarm'),
    ...resources(template, 'AWS::CloudWatch::CompositeAlarm'),
  ];

  describe('Job type alarms', () => {
    it.each(jobTypes)(
      'when %s is monitored, its oldest-message alarm fires at the latency objective with the derived periods',
      (consumer, jobType) => {
        // Act
        const alarm = alarmNamed(`${consumer}-oldest-age`);

        // Assess
        expect(alarm).toMatchObject({
          Namespace: 'AWS/SQS',
          MetricName: 'ApproximateAgeOfOldestMessage',
          Dimensions: [{ Name: 'QueueName', Value: getAtt(monitoredJob(consumer).queue, 'QueueName') }],
          Statistic: 'Maximum',
          Period: 60,
          Threshold: jobType.latencyObjectiveSeconds,
          EvaluationPeriods: jobType.alarms.evaluationPeriods,
          DatapointsToAlarm: jobType.alarms.datapointsToAlarm,
          ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        });
      },
    );

    it.each(jobTypes)('when %s is monitored, a message in its DLQ pages through the topic', (consumer) => {
      // Act
      const alarm = alarmNamed(`${consumer}-dlq`);

      // Assess
      expect(alarm).toMatchObject({
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: [
          { Name: 'QueueName', Value: getAtt(monitoredJob(consumer).deadLetterQueue, 'QueueName') },
        ],
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        AlarmActions: [topic()],
      });
    });

    it.each(jobTypes)(
      'when %s is monitored, its retry-rate alarm divides retries by attempts and fires at 10 %% by default',
      (consumer) => {
        // Act
        const alarm = alarmNamed(`${consumer}-retry-rate`);

        // Assess
        expect(alarm.Threshold).toBe(10);
        const metrics = alarm.Metrics as { Id: string; Expression?: string; MetricStat?: unknown }[];
        const expression = metrics.find((m) => m.Expression !== undefined)?.Expression;
        expect(expression).toBe(RETRY_RATE_EXPRESSION);
        // Only forms CloudWatch documents: the local evaluator refuses the others.
        expect(() => parseMathExpression(String(expression))).not.toThrow();
        const inputs = Object.fromEntries(
          metrics.filter((m) => m.MetricStat !== undefined).map((m) => [m.Id, m.MetricStat]),
        );
        const metric = (name: string): object => ({
          Metric: {
            Namespace: METRICS_NAMESPACE,
            MetricName: name,
            Dimensions: [{ Name: 'service', Value: consumer }],
          },
          Period: 60,
          Stat: 'Sum',
        });
        expect(inputs).toEqual({
          r: metric('JobRetried'),
          s: metric('JobSucceeded'),
          p: metric('JobFailedPermanently'),
        });
      },
    );

    it('when retryRatePercent is given, the retry-rate alarms fire at it', () => {
      // Prepare
      const { observability: custom } = build({ retryRatePercent: 25 });

      // Act
      const t = Template.fromStack(Stack.of(custom));

      // Assess
      t.hasResourceProperties('AWS::CloudWatch::Alarm', {
        AlarmName: 'tenang-dev-payment-consumer-retry-rate',
        Threshold: 25,
      });
    });

    it.each(jobTypes)('when %s is monitored, it alarms on its function errors and throttles', (consumer) => {
      // Prepare
      const fnName = [{ Name: 'FunctionName', Value: ref(monitoredJob(consumer).consumer) }];

      // Act
      const errors = alarmNamed(`${consumer}-errors`);
      const throttles = alarmNamed(`${consumer}-throttles`);

      // Assess
      expect(errors).toMatchObject({
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Dimensions: fnName,
        Threshold: 1,
      });
      expect(throttles).toMatchObject({
        Namespace: 'AWS/Lambda',
        MetricName: 'Throttles',
        Dimensions: fnName,
        Threshold: 1,
      });
    });
  });

  describe('Stream consumer alarms', () => {
    it.each(streamConsumers)(
      'when %s is monitored, its iterator-age alarm fires at the latency objective in milliseconds',
      (consumer, sc) => {
        // Act
        const alarm = alarmNamed(`${consumer}-iterator-age`);

        // Assess
        expect(alarm).toMatchObject({
          Namespace: 'AWS/Lambda',
          MetricName: 'IteratorAge',
          Dimensions: [{ Name: 'FunctionName', Value: ref(monitoredStream(consumer).consumer) }],
          Statistic: 'Maximum',
          Period: 60,
          Threshold: sc.latencyObjectiveSeconds * 1000,
          EvaluationPeriods: sc.alarms.evaluationPeriods,
          DatapointsToAlarm: sc.alarms.datapointsToAlarm,
        });
      },
    );

    it.each(streamConsumers)(
      'when %s is monitored, a record in its failure queue pages through the topic',
      (consumer) => {
        // Act
        const alarm = alarmNamed(`${consumer}-failures`);

        // Assess
        expect(alarm).toMatchObject({
          MetricName: 'ApproximateNumberOfMessagesVisible',
          Dimensions: [
            { Name: 'QueueName', Value: getAtt(monitoredStream(consumer).failureQueue, 'QueueName') },
          ],
          Threshold: 1,
          AlarmActions: [topic()],
        });
      },
    );
  });

  describe('Composite and pause alarms', () => {
    it('when the pipeline is monitored, there is one composite alarm per consumer', () => {
      // Act
      const names = resources(template, 'AWS::CloudWatch::CompositeAlarm').map(
        ([, c]) => c.Properties.AlarmName,
      );

      // Assess
      expect(allConsumers).toHaveLength(5);
      expect([...names].sort()).toEqual(allConsumers.map((c) => `tenang-dev-${c}`).sort());
    });

    it.each(allConsumers)(
      'when %s is paused, its composite is suppressed by its own paused alarm and still pages otherwise',
      (consumer) => {
        // Prepare
        const alarms = observability.alarms.get(consumer);
        if (alarms === undefined) throw new Error(`no alarms for ${consumer}`);

        // Act
        const composite = propertiesOf(template, alarms.composite);
        const paused = propertiesOf(template, alarms.paused);

        // Assess
        expect(composite.ActionsSuppressor).toEqual(getAtt(alarms.paused, 'Arn'));
        expect(composite.AlarmActions).toEqual([topic()]);
        expect(paused).toMatchObject({
          AlarmName: `tenang-dev-${consumer}-paused`,
          Namespace: METRICS_NAMESPACE,
          MetricName: 'Paused',
          Threshold: 1,
        });
        expect(paused.Dimensions).toEqual(
          expect.arrayContaining([
            { Name: 'service', Value: RECONCILER_SERVICE },
            { Name: 'consumer', Value: consumer },
          ]),
        );
      },
    );

    it.each(allConsumers)(
      'when %s is monitored, its composite fires when any of its children fires',
      (consumer) => {
        // Prepare
        const alarms = observability.alarms.get(consumer);
        if (alarms === undefined) throw new Error(`no alarms for ${consumer}`);

        // Act
        const rule = toText(propertiesOf(template, alarms.composite).AlarmRule);

        // Assess
        expect(alarms.children.length).toBeGreaterThanOrEqual(2);
        const expected = alarms.children.map((child) => `ALARM("\${${logicalId(child)}.Arn}")`).join(' OR ');
        expect(rule).toBe(`(${expected})`);
      },
    );

    it.each(allConsumers)(
      'when %s is monitored, the children of its composite have no actions of their own',
      (consumer) => {
        // Prepare
        const alarms = observability.alarms.get(consumer);
        if (alarms === undefined) throw new Error(`no alarms for ${consumer}`);

        // Act
        const silent = [...alarms.children, alarms.paused].map((a) => propertiesOf(template, a));

        // Assess
        for (const alarm of silent) {
          expect(alarm.AlarmActions).toBeUndefined();
          expect(alarm.OKActions).toBeUndefined();
          expect(alarm.InsufficientDataActions).toBeUndefined();
        }
      },
    );

    it.each(allConsumers)(
      'when %s stays paused past its expiry, its pause-overdue alarm pages',
      (consumer) => {
        // Act
        const alarm = alarmNamed(`${consumer}-pause-overdue`);

        // Assess
        expect(alarm).toMatchObject({
          Namespace: METRICS_NAMESPACE,
          MetricName: 'PauseOverdue',
          Threshold: 1,
          AlarmActions: [topic()],
        });
        expect(alarm.Dimensions).toEqual(
          expect.arrayContaining([
            { Name: 'service', Value: RECONCILER_SERVICE },
            { Name: 'consumer', Value: consumer },
          ]),
        );
      },
    );

    it('when the flag reconciler fails, an alarm pages', () => {
      // Act
      const alarm = alarmNamed('flag-reconciler-errors');

      // Assess
      expect(alarm).toMatchObject({
        MetricName: 'Errors',
        Dimensions: [{ Name: 'FunctionName', Value: ref(props.reconciler) }],
        AlarmActions: [topic()],
      });
    });
  });

  describe('Permission denied alarms', () => {
    it.each(allConsumers)(
      'when %s is denied an action once, its permission-denied alarm pages at once through the topic',
      (consumer) => {
        // Act
        const alarm = alarmNamed(`${consumer}-permission-denied`);

        // Assess
        expect(alarm).toMatchObject({
          Namespace: METRICS_NAMESPACE,
          MetricName: METRIC.permissionDenied,
          Dimensions: [{ Name: 'service', Value: consumer }],
          Statistic: 'Sum',
          Period: 60,
          Threshold: 1,
          EvaluationPeriods: 1,
          DatapointsToAlarm: 1,
          ComparisonOperator: 'GreaterThanOrEqualToThreshold',
          TreatMissingData: 'notBreaching',
          AlarmActions: [topic()],
          OKActions: [topic()],
        });
        expect(String(alarm.AlarmDescription)).toContain(`Runbook: runbooks/${RUNBOOK.permissionDenied}.md`);
      },
    );

    it.each(allConsumers)(
      'when %s is paused, its permission-denied alarm is not suppressed: it is a direct alarm, outside the composite',
      (consumer) => {
        // Prepare
        const alarms = observability.alarms.get(consumer);
        if (alarms === undefined) throw new Error(`no alarms for ${consumer}`);

        // Act
        const rule = toText(propertiesOf(template, alarms.composite).AlarmRule);

        // Assess
        expect(alarms.direct).toContain(alarms.permissionDenied);
        expect(alarms.children).not.toContain(alarms.permissionDenied);
        expect(rule).not.toContain(logicalId(alarms.permissionDenied));
        expect(propertiesOf(template, alarms.permissionDenied).ActionsSuppressor).toBeUndefined();
      },
    );

    it('when the alarms name the permission-denied runbook, the file exists and the runner names the same one', () => {
      // Assess
      expect(fs.existsSync(path.join(RUNBOOKS_DIR, `${RUNBOOK.permissionDenied}.md`))).toBe(true);
      expect(PERMISSION_DENIED_RUNBOOK).toBe(RUNBOOK.permissionDenied);
    });

    it("when the pipeline is monitored, the metric alarms are exactly each consumer's children, paused and direct alarms plus the reconciler's", () => {
      // Prepare
      const perConsumer = [...observability.alarms.values()].flatMap((a) => [
        ...a.children,
        a.paused,
        ...a.direct,
      ]);

      // Act
      const names = resources(template, 'AWS::CloudWatch::Alarm').map(([, a]) =>
        String(a.Properties.AlarmName),
      );

      // Assess
      expect(names).toHaveLength(perConsumer.length + 1);
      expect(new Set(perConsumer).size).toBe(perConsumer.length);
      expect(names.filter((n) => n.endsWith('-permission-denied')).sort()).toEqual(
        allConsumers.map((c) => `tenang-dev-${c}-permission-denied`).sort(),
      );
    });
  });

  describe('Runbooks and actions', () => {
    it('when the pipeline is monitored, every alarm and composite names a runbook file that exists', () => {
      // Act
      const described = everyAlarm().map(([id, alarm]) => ({
        id,
        runbook: /Runbook: runbooks\/([a-z0-9-]+)\.md/.exec(String(alarm.Properties.AlarmDescription))?.[1],
      }));

      // Assess
      expect(described.filter((a) => a.runbook === undefined).map((a) => a.id)).toEqual([]);
      const names = [...new Set(described.map((a) => String(a.runbook)))].sort();
      const missing = names.filter((name) => !fs.existsSync(path.join(RUNBOOKS_DIR, `${name}.md`)));
      expect(missing).toEqual([]);
    });

    it('when the pipeline is monitored, every alarm action goes to the one alarm topic', () => {
      // Act
      const actions = everyAlarm().flatMap(([, alarm]) =>
        ['AlarmActions', 'OKActions', 'InsufficientDataActions'].flatMap(
          (key) => (alarm.Properties[key] as unknown[] | undefined) ?? [],
        ),
      );

      // Assess
      template.resourceCountIs('AWS::SNS::Topic', 1);
      expect(actions.length).toBeGreaterThan(0);
      expect(actions.every((a) => JSON.stringify(a) === JSON.stringify(topic()))).toBe(true);
    });

    it('when the topic is created, it is encrypted with a rotating key that CloudWatch may use', () => {
      // Act
      const topicProperties = propertiesOf(template, observability.topic);
      const [keyId, key] = onlyResource(template, 'AWS::KMS::Key', {});

      // Assess
      expect(topicProperties).toMatchObject({
        TopicName: 'tenang-dev-alarms',
        KmsMasterKeyId: { 'Fn::GetAtt': [keyId, 'Arn'] },
      });
      expect(key.Properties.EnableKeyRotation).toBe(true);
      expect((key.Properties.KeyPolicy as { Statement: unknown[] }).Statement).toContainEqual({
        Effect: 'Allow',
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
        Resource: '*',
      });
    });
    it("when the topic enforces TLS, its topic policy still lets this account's CloudWatch alarms publish", () => {
      // A TopicPolicy replaces the topic's default policy: with only the TLS Deny in it, no alarm
      // could publish.
      const [, policy] = onlyResource(template, 'AWS::SNS::TopicPolicy', {});
      const statements = (policy.Properties.PolicyDocument as { Statement: Record<string, unknown>[] })
        .Statement;
      expect(policy.Properties.Topics).toEqual([ref(observability.topic)]);
      expect(statements).toContainEqual(
        expect.objectContaining({
          Effect: 'Allow',
          Principal: { Service: 'cloudwatch.amazonaws.com' },
          Action: 'sns:Publish',
          Condition: {
            StringEquals: { 'aws:SourceAccount': expect.anything() },
            ArnLike: { 'aws:SourceArn': expect.anything() },
          },
        }),
      );
      expect(
        toText(
          (statements.find((s) => s.Effect === 'Allow')?.Condition as Record<string, Record<string, unknown>>)
            .ArnLike?.['aws:SourceArn'],
        ),
      ).toMatch(/:cloudwatch:.*:alarm:\*$/);
      // The TLS-only Deny stays.
      expect(statements).toContainEqual(
        expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
      );
    });
  });

  describe('Dashboards', () => {
    it('when the pipeline is monitored, there is one dashboard per consumer', () => {
      // Act
      const names = resources(template, 'AWS::CloudWatch::Dashboard').map(
        ([, d]) => d.Properties.DashboardName,
      );

      // Assess
      expect([...names].sort()).toEqual(allConsumers.map((c) => `tenang-dev-${c}`).sort());
    });

    it('when payment-consumer is monitored, its dashboard body matches the snapshot', () => {
      // Prepare
      const dashboard = observability.dashboards.get('payment-consumer');
      if (dashboard === undefined) throw new Error('no payment-consumer dashboard');

      // Act
      const body: unknown = JSON.parse(toText(propertiesOf(template, dashboard).DashboardBody));

      // Assess
      expect(body).toMatchSnapshot();
    });

    it('when a job type declares a useful age, its dashboard graphs the jobs moved aside and its side queue; others do not', () => {
      // Prepare
      const text = (consumer: string): string => {
        const dashboard = observability.dashboards.get(consumer);
        if (dashboard === undefined) throw new Error(`no ${consumer} dashboard`);
        return JSON.stringify(propertiesOf(template, dashboard).DashboardBody);
      };

      // Act
      const notification = text('notification-consumer');
      const payment = text('payment-consumer');

      // Assess
      expect(notification).toContain('Past useful age (21600 s): moved aside');
      expect(notification).toContain(METRIC.jobExpired);
      expect(notification).toContain('Expirednotificationconsumer');
      expect(payment).not.toContain(METRIC.jobExpired);
    });
  });

  describe('Alarm delivery', () => {
    const CHATBOT = 'arn:aws:sns:eu-west-1:123456789012:chatbot-alarms';
    const templateOf = (deliverTo: ObservabilityProps['deliverTo']): Template =>
      Template.fromStack(Stack.of(build({ deliverTo }).observability));

    it('when deliverTo names an e-mail and an HTTPS endpoint, the topic gets one subscription of each', () => {
      // Act
      const t = templateOf([
        { email: 'on-call@example.com' },
        { https: 'https://events.pagerduty.com/x/enqueue' },
      ]);

      // Assess
      const subscriptions = resources(t, 'AWS::SNS::Subscription').map(([, r]) => [
        r.Properties.Protocol,
        r.Properties.Endpoint,
      ]);
      expect(subscriptions).toEqual([
        ['email', 'on-call@example.com'],
        ['https', 'https://events.pagerduty.com/x/enqueue'],
      ]);
    });

    it('when deliverTo names an existing topic, every alarm with actions notifies it as well as the stage topic', () => {
      // Act
      const t = templateOf([{ topicArn: CHATBOT }]);

      // Assess
      const withActions = [
        ...resources(t, 'AWS::CloudWatch::Alarm'),
        ...resources(t, 'AWS::CloudWatch::CompositeAlarm'),
      ].filter(([, r]) => r.Properties.AlarmActions !== undefined);
      expect(withActions.length).toBeGreaterThan(10);
      for (const [, r] of withActions) {
        expect(r.Properties.AlarmActions).toEqual([
          expect.objectContaining({ Ref: expect.any(String) }),
          CHATBOT,
        ]);
        expect(r.Properties.OKActions).toEqual(r.Properties.AlarmActions);
      }
      t.resourceCountIs('AWS::SNS::Subscription', 0);
    });

    it('when deliverTo is { none }, the topic carries the reason for the audit and has no subscription', () => {
      // Act
      const t = templateOf({ none: 'scratch stage, read on the dashboard' });

      // Assess
      const [[, topicResource] = []] = Object.entries(
        (t.toJSON() as { Resources: Record<string, { Type: string; Metadata?: Record<string, unknown> }> })
          .Resources,
      ).filter(([, r]) => r.Type === 'AWS::SNS::Topic');
      expect(topicResource?.Metadata?.['tenang:no-subscriber-reason']).toBe(
        'scratch stage, read on the dashboard',
      );
      t.resourceCountIs('AWS::SNS::Subscription', 0);
    });

    it('when deliverTo names more existing topics than CloudWatch allows actions, it fails naming the limit', () => {
      // Act
      const error = propsErrorOf(() =>
        build({ deliverTo: [1, 2, 3, 4, 5].map((i) => ({ topicArn: `${CHATBOT}-${i}` })) }),
      );

      // Assess
      expect(error.problems).toEqual([
        "deliverTo names 5 topics: with the stage's own an alarm would have 6 actions, CloudWatch allows 5",
      ]);
    });
  });

  describe('Validation', () => {
    it.each([0, 101])('when retryRatePercent is %i, it fails: (0, 100] only', (retryRatePercent) => {
      // Act
      const error = propsErrorOf(() => build({ retryRatePercent }));

      // Assess
      expect(error.message).toMatch(/^Invalid props for Observability/);
      expect(error.problems).toEqual(['retryRatePercent must be in (0, 100]']);
    });

    it('when no job type is monitored, it fails', () => {
      // Act
      const error = propsErrorOf(() => build({ jobTypes: [] }));

      // Assess
      expect(error.problems).toEqual(['at least one job type is monitored']);
    });

    it('when both rules are broken, it lists both problems in one ConstructPropsError', () => {
      // Act
      const error = propsErrorOf(() => build({ jobTypes: [], retryRatePercent: 0 }));

      // Assess
      expect(error.problems).toHaveLength(2);
    });
  });
});
