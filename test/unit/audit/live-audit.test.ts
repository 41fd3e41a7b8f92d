/**
 * The live audit (`tenang audit --live`) over a mocked account: the reader's API calls
 * (aws-sdk-client-mock, paginated answers) and the template rules over the live model.
 */
import {
  CloudFormationClient,
  CloudFormationServiceException,
  GetTemplateCommand,
  ListStackResourcesCommand,
  type StackResourceSummary,
} from '@aws-sdk/client-cloudformation';
import {
  CloudWatchClient,
  DescribeAlarmsCommand,
  type CompositeAlarm,
  type MetricAlarm,
} from '@aws-sdk/client-cloudwatch';
import { CloudWatchLogsClient, DescribeLogGroupsCommand } from '@aws-sdk/client-cloudwatch-logs';
import {
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  type TimeToLiveDescription,
} from '@aws-sdk/client-dynamodb';
import {
  GetAccountSettingsCommand,
  GetEventSourceMappingCommand,
  GetFunctionConfigurationCommand,
  LambdaClient,
  ListEventSourceMappingsCommand,
  type EventSourceMappingConfiguration,
  type FunctionConfiguration,
} from '@aws-sdk/client-lambda';
import { ListSubscriptionsByTopicCommand, SNSClient, type Subscription } from '@aws-sdk/client-sns';
import { GetQueueAttributesCommand, GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { run } from '../../../bin/tenang';
import { auditFailed, type ChecklistItem } from '../../../lib/audit/checklist';
import { LiveCoverageMissingError, auditLive, liveCoverage } from '../../../lib/audit/live-audit';
import { LiveStackNotFoundError, readLiveStack, type LiveAuditClients } from '../../../lib/audit/live-reader';
import { TEMPLATE_RULES, ruleId } from '../../../lib/audit/rules';

const REGION = 'eu-west-1';
const ACCOUNT = '123456789012';
const STACK = 'tenang-unit';
const WORKER_ESM = '11111111-1111-4111-8111-111111111111';
const RELAY_ESM = '22222222-2222-4222-8222-222222222222';
const RUNBOOK = 'Runbook: runbooks/backlog.md';

const queueUrl = (name: string): string => `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${name}`;
const queueArn = (name: string): string => `arn:aws:sqs:${REGION}:${ACCOUNT}:${name}`;
const functionArn = (name: string): string => `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${name}`;
const ORDERS_STREAM = `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/orders/stream/2026-01-01T00:00:00.000`;

/** Everything the mocked account answers. */
interface Account {
  resources: StackResourceSummary[];
  template: { Resources: Record<string, { Type: string; Metadata?: Record<string, unknown> }> };
  queues: Record<string, Record<string, string>>;
  functions: Record<string, FunctionConfiguration>;
  mappings: EventSourceMappingConfiguration[];
  tables: Record<string, TimeToLiveDescription>;
  metricAlarms: MetricAlarm[];
  compositeAlarms: CompositeAlarm[];
  /** ListSubscriptionsByTopic's answer per topic ARN; a topic not here is not found. */
  subscriptions: Record<string, Subscription[]>;
}

function resource(
  LogicalResourceId: string,
  ResourceType: string,
  PhysicalResourceId: string,
): StackResourceSummary {
  return {
    LogicalResourceId,
    ResourceType,
    PhysicalResourceId,
    ResourceStatus: 'CREATE_COMPLETE',
    LastUpdatedTimestamp: new Date('2026-01-01T00:00:00Z'),
  };
}

/** The topic the account's alarms notify (O3 asks that an alarm notifies someone). */
const ONCALL_TOPIC = 'arn:aws:sns:eu-west-1:123456789012:oncall';

function queueAlarm(name: string, queue: string, metricName: string, description = RUNBOOK): MetricAlarm {
  return {
    AlarmName: name,
    AlarmDescription: `${queue} needs attention. ${description}`,
    Namespace: 'AWS/SQS',
    MetricName: metricName,
    Dimensions: [{ Name: 'QueueName', Value: queue }],
    AlarmActions: [ONCALL_TOPIC],
  };
}

/**
 * A compliant account: queue `jobs` (DLQ `jobs-dlq`) feeds `worker`; the `orders` stream feeds
 * `relay`, whose failures go to `orders-failures`; `records` is an idempotency table only by use
 * (IDEMPOTENCY_TABLE), `locks` a lock table by name. The failures-depth alarm lives outside the
 * stack and an unrelated team's alarm (no runbook) is in the account.
 */
function goodAccount(): Account {
  return {
    resources: [
      resource('Jobs', 'AWS::SQS::Queue', queueUrl('jobs')),
      resource('JobsDlq', 'AWS::SQS::Queue', queueUrl('jobs-dlq')),
      resource('Failures', 'AWS::SQS::Queue', queueUrl('orders-failures')),
      resource('Worker', 'AWS::Lambda::Function', 'worker'),
      resource('Relay', 'AWS::Lambda::Function', 'relay'),
      resource('WorkerMapping', 'AWS::Lambda::EventSourceMapping', WORKER_ESM),
      resource('RelayMapping', 'AWS::Lambda::EventSourceMapping', RELAY_ESM),
      resource('Orders', 'AWS::DynamoDB::Table', 'orders'),
      resource('Records', 'AWS::DynamoDB::Table', 'records'),
      resource('Locks', 'AWS::DynamoDB::Table', 'locks'),
      resource('JobsAge', 'AWS::CloudWatch::Alarm', 'jobs-age'),
      resource('JobsDlqDepth', 'AWS::CloudWatch::Alarm', 'jobs-dlq-depth'),
      resource('WorkerHealth', 'AWS::CloudWatch::CompositeAlarm', 'worker-health'),
    ],
    template: {
      Resources: {
        Jobs: { Type: 'AWS::SQS::Queue', Metadata: { 'aws:cdk:path': 'tenang-unit/Jobs/Resource' } },
      },
    },
    queues: {
      jobs: {
        VisibilityTimeout: '180',
        RedrivePolicy: JSON.stringify({ deadLetterTargetArn: queueArn('jobs-dlq'), maxReceiveCount: 5 }),
        SqsManagedSseEnabled: 'true',
      },
      'jobs-dlq': { VisibilityTimeout: '30', SqsManagedSseEnabled: 'true' },
      'orders-failures': { VisibilityTimeout: '30', SqsManagedSseEnabled: 'true' },
    },
    functions: {
      worker: {
        FunctionName: 'worker',
        Timeout: 30,
        MemorySize: 512,
        Environment: { Variables: { IDEMPOTENCY_TABLE: 'records', LOG_LEVEL: 'INFO' } },
      },
      relay: { FunctionName: 'relay', Timeout: 60, MemorySize: 256, Environment: { Variables: {} } },
    },
    mappings: [
      {
        UUID: WORKER_ESM,
        EventSourceArn: queueArn('jobs'),
        FunctionArn: functionArn('worker'),
        State: 'Enabled',
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      },
      {
        UUID: RELAY_ESM,
        EventSourceArn: ORDERS_STREAM,
        FunctionArn: functionArn('relay'),
        State: 'Enabled',
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        BisectBatchOnFunctionError: true,
        MaximumRetryAttempts: 3,
        MaximumRecordAgeInSeconds: 3600,
        DestinationConfig: { OnFailure: { Destination: queueArn('orders-failures') } },
      },
    ],
    tables: {
      orders: { TimeToLiveStatus: 'DISABLED' },
      records: { TimeToLiveStatus: 'ENABLED', AttributeName: 'expiration' },
      locks: { TimeToLiveStatus: 'ENABLED', AttributeName: 'expiresAt' },
    },
    metricAlarms: [
      queueAlarm('jobs-age', 'jobs', 'ApproximateAgeOfOldestMessage'),
      {
        // Metric math, as a DLQ alarm that sums two statistics might be.
        AlarmName: 'jobs-dlq-depth',
        AlarmDescription: `A job failed for good. ${RUNBOOK}`,
        AlarmActions: [ONCALL_TOPIC],
        Metrics: [
          {
            Id: 'm',
            MetricStat: {
              Metric: {
                Namespace: 'AWS/SQS',
                MetricName: 'ApproximateNumberOfMessagesVisible',
                Dimensions: [{ Name: 'QueueName', Value: 'jobs-dlq' }],
              },
              Period: 60,
              Stat: 'Maximum',
            },
          },
        ],
      },
      queueAlarm('orders-failures-depth', 'orders-failures', 'ApproximateNumberOfMessagesVisible'),
      {
        AlarmName: 'other-team-cpu',
        AlarmDescription: 'CPU high',
        Namespace: 'AWS/EC2',
        MetricName: 'CPUUtilization',
        Dimensions: [{ Name: 'InstanceId', Value: 'i-0123' }],
      },
    ],
    compositeAlarms: [
      {
        AlarmName: 'worker-health',
        AlarmDescription: `worker is unhealthy. ${RUNBOOK}`,
        AlarmRule: 'ALARM(jobs-age)',
      },
      { AlarmName: 'other-team-health', AlarmDescription: 'no runbook', AlarmRule: 'ALARM(other-team-cpu)' },
    ],
    subscriptions: {
      [ONCALL_TOPIC]: [
        {
          SubscriptionArn: `${ONCALL_TOPIC}:0b6a5c1e-1111-4111-8111-111111111111`,
          Protocol: 'email',
          Endpoint: 'on-call@example.com',
          TopicArn: ONCALL_TOPIC,
        },
        // Pending alongside a confirmed one: the topic still delivers.
        {
          SubscriptionArn: 'PendingConfirmation',
          Protocol: 'https',
          Endpoint: 'https://hooks.example.com/a',
          TopicArn: ONCALL_TOPIC,
        },
      ],
    },
  };
}

const cfn = mockClient(CloudFormationClient);
const sqs = mockClient(SQSClient);
const lambda = mockClient(LambdaClient);
const dynamodb = mockClient(DynamoDBClient);
const cloudwatch = mockClient(CloudWatchClient);
// The preflight's clients (P5): the CLI's live audit reads them too.
const logs = mockClient(CloudWatchLogsClient);
const ssm = mockClient(SSMClient);
const sns = mockClient(SNSClient);

/** Splits a list into two pages joined by a token, so every list call must paginate. */
function pages<T>(items: readonly T[]): [T[], T[]] {
  const half = Math.ceil(items.length / 2);
  return [items.slice(0, half), items.slice(half)];
}

function mockAccount(account: Account): void {
  for (const m of [cfn, sqs, lambda, dynamodb, cloudwatch, sns]) m.reset();
  sns.on(ListSubscriptionsByTopicCommand).callsFake((input: { TopicArn: string; NextToken?: string }) => {
    const subscriptions = account.subscriptions[input.TopicArn];
    if (subscriptions === undefined)
      throw Object.assign(new Error('Topic does not exist'), { name: 'NotFoundException' });
    const [first, second] = pages(subscriptions);
    return input.NextToken === undefined
      ? { Subscriptions: first, NextToken: 's2' }
      : { Subscriptions: second };
  });
  const [resources1, resources2] = pages(account.resources);
  cfn
    .on(ListStackResourcesCommand, { StackName: STACK })
    .resolves({ StackResourceSummaries: resources1, NextToken: 'r2' })
    .on(ListStackResourcesCommand, { StackName: STACK, NextToken: 'r2' })
    .resolves({ StackResourceSummaries: resources2 });
  cfn
    .on(GetTemplateCommand, { StackName: STACK })
    .resolves({ TemplateBody: JSON.stringify(account.template) });
  sqs
    .on(GetQueueUrlCommand)
    .callsFake((input: { QueueName: string }) => ({ QueueUrl: queueUrl(input.QueueName) }));
  sqs.on(GetQueueAttributesCommand).callsFake((input: { QueueUrl: string }) => ({
    Attributes: account.queues[input.QueueUrl.slice(input.QueueUrl.lastIndexOf('/') + 1)],
  }));
  lambda
    .on(GetFunctionConfigurationCommand)
    .callsFake((input: { FunctionName: string }) => account.functions[input.FunctionName]);
  lambda.on(ListEventSourceMappingsCommand).callsFake((input: { FunctionName: string; Marker?: string }) => {
    const mine = account.mappings.filter((m) => m.FunctionArn === functionArn(input.FunctionName));
    // One empty first page with a marker: the reader must follow it.
    return input.Marker === undefined
      ? { EventSourceMappings: [], NextMarker: 'm2' }
      : { EventSourceMappings: mine };
  });
  lambda
    .on(GetEventSourceMappingCommand)
    .callsFake((input: { UUID: string }) => account.mappings.find((m) => m.UUID === input.UUID));
  dynamodb.on(DescribeTimeToLiveCommand).callsFake((input: { TableName: string }) => ({
    TimeToLiveDescription: account.tables[input.TableName],
  }));
  const [metric1, metric2] = pages(account.metricAlarms);
  cloudwatch
    .on(DescribeAlarmsCommand)
    .resolves({ MetricAlarms: metric1, CompositeAlarms: [], NextToken: 'a2' })
    .on(DescribeAlarmsCommand, { NextToken: 'a2' })
    .resolves({ MetricAlarms: metric2, CompositeAlarms: account.compositeAlarms });
  mockPreflight();
}

/**
 * The preflight's answers (P5): concurrency to spare (the template's mappings state no maximum
 * concurrency, so each counts 1,000), no table or log group found, every service offered.
 */
function mockPreflight(): void {
  for (const m of [logs, ssm]) m.reset();
  lambda.on(GetAccountSettingsCommand).resolves({
    AccountLimit: { ConcurrentExecutions: 10_000, UnreservedConcurrentExecutions: 10_000 },
  });
  dynamodb
    .on(DescribeTableCommand)
    .rejects(Object.assign(new Error('Requested resource not found'), { name: 'ResourceNotFoundException' }));
  logs.on(DescribeLogGroupsCommand).resolves({ logGroups: [] });
  ssm.on(GetParameterCommand).resolves({ Parameter: { Value: 'offered' } });
}

function clients(): LiveAuditClients {
  const config = { region: REGION };
  return {
    cloudformation: new CloudFormationClient(config),
    sqs: new SQSClient(config),
    lambda: new LambdaClient(config),
    cloudwatch: new CloudWatchClient(config),
    dynamodb: new DynamoDBClient(config),
    sns: new SNSClient(config),
  };
}

/** Reads the mocked account and audits it; items by rule id. */
async function auditAccount(account: Account): Promise<Record<string, ChecklistItem>> {
  mockAccount(account);
  const items = auditLive(await readLiveStack(clients(), STACK, () => undefined));
  return Object.fromEntries(items.map((i) => [i.ruleId, i]));
}

describe('Function: auditLive over readLiveStack', () => {
  it('when the account is compliant, every checkable rule passes and D4 says it is not checkable live', async () => {
    // Act
    const items = await auditAccount(goodAccount());

    // Assess
    const statuses = Object.fromEntries(Object.values(items).map((i) => [i.ruleId, i.status]));
    expect(statuses).toEqual({
      'Tenang-D2': 'pass',
      'Tenang-D3': 'pass',
      'Tenang-R3': 'pass',
      'Tenang-R6': 'pass',
      'Tenang-O3-QueueAge': 'pass',
      'Tenang-O3-DlqDepth': 'pass',
      'Tenang-I1': 'pass',
      'Tenang-L1': 'pass',
      'Tenang-D4': 'not-checkable',
      'Tenang-P1': 'pass',
      // Deploy readiness reads template-only facts (policies, deletion policies, users).
      'Tenang-F1-ValkeyAuth': 'not-checkable',
      'Tenang-F2-RetainOnCreate': 'not-checkable',
      'Tenang-F3-AlarmTopicPublish': 'not-checkable',
      'Tenang-F4-QueueSendGrant': 'not-checkable',
      'Tenang-F5-AlarmSubscriber': 'pass',
      'Tenang-F6-OperatorReach': 'not-checkable',
    });
    expect(items['Tenang-F5-AlarmSubscriber']?.why).toContain(
      'subscribed by subscription oncall email on-call@example.com',
    );
    expect(items['Tenang-D4']?.why).toMatch(/^not checkable live: /);
    expect(items['Tenang-D2']?.why).toBe(
      'queue jobs: visibility timeout 180 s ≥ 6 × function worker timeout 30 s + batching window 0 s = 180 s',
    );
    expect(items['Tenang-O3-DlqDepth']?.resources).toEqual(['queue jobs-dlq', 'queue orders-failures']);
    expect(auditFailed(Object.values(items))).toBe(false);
  });

  it("when the alarms' topic has only a subscription pending confirmation, F5 fails naming it and saying to confirm it", async () => {
    // Prepare: the e-mail was never confirmed (SNS lists it as PendingConfirmation).
    const account = goodAccount();
    const pending: Account = {
      ...account,
      subscriptions: {
        [ONCALL_TOPIC]: [
          {
            SubscriptionArn: 'PendingConfirmation',
            Protocol: 'email',
            Endpoint: 'on-call@example.com',
            TopicArn: ONCALL_TOPIC,
          },
        ],
      },
    };
    const none: Account = { ...account, subscriptions: { [ONCALL_TOPIC]: [] } };

    // Act
    const items = await auditAccount(pending);
    const empty = await auditAccount(none);

    // Assess
    const item = items['Tenang-F5-AlarmSubscriber'];
    expect(item?.status).toBe('fail');
    expect(item?.resources).toEqual(['topic oncall']);
    expect(item?.why).toContain('has no confirmed subscriber');
    expect(item?.why).toContain('subscription oncall email on-call@example.com is PendingConfirmation');
    expect(item?.why).toContain('"Confirm subscription" link');
    expect(empty['Tenang-F5-AlarmSubscriber']?.status).toBe('fail');
    expect(empty['Tenang-F5-AlarmSubscriber']?.why).toContain(
      'topic oncall (notified by alarm jobs-age, alarm jobs-dlq-depth, alarm orders-failures-depth) has no subscriber',
    );
    expect(auditFailed(Object.values(items))).toBe(true);
  });

  it('when a topic the alarms notify cannot be read, its subscribers are not judged and the reader says so', async () => {
    // Prepare
    const account: Account = { ...goodAccount(), subscriptions: {} };
    mockAccount(account);
    const progress: string[] = [];

    // Act
    const answers = await readLiveStack(clients(), STACK, (line) => progress.push(line));

    // Assess
    expect(answers.topics).toEqual([]);
    expect(progress).toContain(
      `topic ${ONCALL_TOPIC} is outside the stack and could not be read (NotFoundException): its subscribers are not checked`,
    );
    expect(auditLive(answers).find((i) => i.ruleId === 'Tenang-F5-AlarmSubscriber')?.status).toBe(
      'not-applicable',
    );
  });

  it('when a queue-age alarm has no actions of its own, it pages through the stack composite that names it, and fails without one', async () => {
    // Prepare: the age alarm pages only through worker-health (CDK's severity-keyed pattern).
    const paged = goodAccount();
    const age = { ...queueAlarm('jobs-age', 'jobs', 'ApproximateAgeOfOldestMessage'), AlarmActions: [] };
    const withComposite: Account = {
      ...paged,
      metricAlarms: paged.metricAlarms.map((a) => (a.AlarmName === 'jobs-age' ? age : a)),
      compositeAlarms: paged.compositeAlarms.map((c) =>
        c.AlarmName === 'worker-health' ? { ...c, AlarmActions: [ONCALL_TOPIC] } : c,
      ),
    };
    const silent: Account = {
      ...withComposite,
      compositeAlarms: paged.compositeAlarms.map((c) =>
        c.AlarmName === 'worker-health' ? { ...c, AlarmActions: [] } : c,
      ),
    };

    // Act
    const viaComposite = await auditAccount(withComposite);
    const nobody = await auditAccount(silent);

    // Assess
    expect(viaComposite['Tenang-O3-QueueAge']?.status).toBe('pass');
    expect(nobody['Tenang-O3-QueueAge']?.status).toBe('fail');
    expect(nobody['Tenang-O3-QueueAge']?.why).toContain('has no AlarmActions');
  });

  it('when the answers come in pages, it follows every page of every list call', async () => {
    // Act
    const items = await auditAccount(goodAccount());

    // Assess
    expect(cfn).toHaveReceivedCommandWith(ListStackResourcesCommand, { StackName: STACK, NextToken: 'r2' });
    expect(cloudwatch).toHaveReceivedCommandWith(DescribeAlarmsCommand, {
      AlarmTypes: ['MetricAlarm', 'CompositeAlarm'],
      NextToken: 'a2',
    });
    expect(lambda).toHaveReceivedCommandWith(ListEventSourceMappingsCommand, {
      FunctionName: 'worker',
      Marker: 'm2',
    });
    // Only on page two: the locks table, the relay mapping's source, the composite alarm.
    expect(items['Tenang-L1']?.why).toContain('table locks');
    expect(items['Tenang-R6']?.resources).toEqual([`mapping relay/${RELAY_ESM}`]);
    expect(items['Tenang-P1']?.why).toContain('alarm worker-health: names a runbook');
  });

  it('when alarms outside the stack do not watch its resources, P1 ignores them; one that watches a stack queue counts', async () => {
    // Act
    const items = await auditAccount(goodAccount());

    // Assess
    expect(items['Tenang-P1']?.resources).not.toContain('alarm other-team-cpu');
    expect(items['Tenang-P1']?.resources).not.toContain('alarm other-team-health');
    expect(items['Tenang-P1']?.resources).toContain('alarm orders-failures-depth');
  });

  it.each<{ rule: string; breaks: string; flaw: (a: Account) => void; why: string | RegExp }>([
    {
      rule: 'Tenang-D2',
      breaks: 'the visibility timeout is shorter than 6 × the function timeout',
      flaw: (a) => {
        a.queues.jobs = { ...a.queues.jobs, VisibilityTimeout: '30' };
      },
      why: "queue jobs: visibility timeout 30 s < 6 × function worker timeout 30 s + batching window 0 s = 180 s: set the queue's VisibilityTimeout to at least 180 s (or lower the function's Timeout)",
    },
    {
      rule: 'Tenang-D3',
      breaks: 'the SQS mapping does not report batch item failures',
      flaw: (a) => {
        a.mappings[0] = { ...a.mappings[0], FunctionResponseTypes: [] };
      },
      why: `mapping worker/${WORKER_ESM} (SQS): does not report batch item failures: add FunctionResponseTypes [ReportBatchItemFailures] (SAM: on the event; CDK: reportBatchItemFailures: true) and return batchItemFailures from the handler (Powertools BatchProcessor)`,
    },
    {
      rule: 'Tenang-R3',
      breaks: 'the source queue has no redrive policy',
      flaw: (a) => {
        a.queues.jobs = { VisibilityTimeout: '180' };
      },
      why: "queue jobs: no redrive policy (no DLQ): add RedrivePolicy { deadLetterTargetArn: <a DLQ's Arn>, maxReceiveCount: 2–20 }",
    },
    {
      rule: 'Tenang-R3',
      breaks: 'the redrive never retries',
      flaw: (a) => {
        a.queues.jobs = {
          VisibilityTimeout: '180',
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: queueArn('jobs-dlq'), maxReceiveCount: 1 }),
        };
      },
      why: 'queue jobs: maxReceiveCount 1 is not in [2, 20]: set maxReceiveCount between 2 (one retry) and 20',
    },
    {
      rule: 'Tenang-R6',
      breaks: 'the stream mapping retries forever (-1, as the API reports it)',
      flaw: (a) => {
        a.mappings[1] = { ...a.mappings[1], MaximumRetryAttempts: -1, BisectBatchOnFunctionError: false };
      },
      why: `mapping relay/${RELAY_ESM}: set BisectBatchOnFunctionError: true; MaximumRetryAttempts is -1 (infinite, the default): set it between 1 and 19`,
    },
    {
      rule: 'Tenang-O3-QueueAge',
      breaks: 'the oldest-message-age alarm was deleted',
      flaw: (a) => {
        a.metricAlarms = a.metricAlarms.filter((x) => x.AlarmName !== 'jobs-age');
      },
      why: /^queue jobs: has no ApproximateAgeOfOldestMessage alarm: add /,
    },
    {
      rule: 'Tenang-O3-DlqDepth',
      breaks: 'the DLQ depth alarm was deleted',
      flaw: (a) => {
        a.metricAlarms = a.metricAlarms.filter((x) => x.AlarmName !== 'jobs-dlq-depth');
      },
      why: /^queue jobs-dlq: has no ApproximateNumberOfMessagesVisible alarm: add /,
    },
    {
      rule: 'Tenang-I1',
      breaks: 'TTL is off on the table functions use as IDEMPOTENCY_TABLE',
      flaw: (a) => {
        a.tables.records = { TimeToLiveStatus: 'DISABLED' };
      },
      why: 'table records (a idempotency or dedup table: IDEMPOTENCY_TABLE): TTL not enabled: set TimeToLiveSpecification { Enabled: true, AttributeName: <the expiry attribute the code writes> }',
    },
    {
      rule: 'Tenang-L1',
      breaks: 'TTL is being switched off on the lock table',
      flaw: (a) => {
        a.tables.locks = { TimeToLiveStatus: 'DISABLING', AttributeName: 'expiresAt' };
      },
      why: /^table locks \(a lock table: .*\): TTL not enabled: set TimeToLiveSpecification/,
    },
    {
      rule: 'Tenang-P1',
      breaks: "an alarm's description names no runbook",
      flaw: (a) => {
        a.metricAlarms = a.metricAlarms.map((x) =>
          x.AlarmName === 'jobs-age' ? { ...x, AlarmDescription: 'jobs backlog' } : x,
        );
      },
      why: 'alarm jobs-age: names no runbook in its description',
    },
  ])('when $breaks, $rule fails and says why', async ({ rule, flaw, why }) => {
    // Prepare
    const account = goodAccount();
    flaw(account);

    // Act
    const items = await auditAccount(account);

    // Assess
    expect(items[rule]?.status).toBe('fail');
    if (typeof why === 'string') expect(items[rule]?.why).toBe(why);
    else expect(items[rule]?.why).toMatch(why);
    const others = Object.values(items).filter((i) => i.ruleId !== rule && i.status === 'fail');
    expect(others).toEqual([]);
    expect(auditFailed(Object.values(items))).toBe(true);
  });

  it('when a function runs on the 3 s default timeout, D4 still says not checkable rather than passing', async () => {
    // Prepare
    const account = goodAccount();
    account.functions.relay = { ...account.functions.relay, Timeout: 3, MemorySize: 128 };

    // Act
    const items = await auditAccount(account);

    // Assess
    expect(items['Tenang-D4']).toMatchObject({
      status: 'not-checkable',
      level: 'note',
      ruleLevel: 'error',
      resources: [],
    });
  });

  it('when a deployed mapping carries the tenang:stream-arn metadata, it is audited as the stream mapping it stands for', async () => {
    // Prepare: the emulator target attaches the stream mapping to its on-failure queue.
    const account = goodAccount();
    account.mappings[1] = { ...account.mappings[1], EventSourceArn: queueArn('orders-failures') };
    account.template.Resources.RelayMapping = {
      Type: 'AWS::Lambda::EventSourceMapping',
      Metadata: { 'tenang:stream-arn': { 'Fn::GetAtt': ['Orders', 'StreamArn'] } },
    };

    // Act
    const items = await auditAccount(account);

    // Assess
    expect(items['Tenang-R6']).toMatchObject({ status: 'pass', resources: [`mapping relay/${RELAY_ESM}`] });
    expect(items['Tenang-D2']?.resources).toEqual(['queue jobs']);
    expect(items['Tenang-R3']?.resources).toEqual(['queue jobs']);
  });

  it('when the same mapping has no such metadata, it is a queue mapping and the queue rules apply to its queue', async () => {
    // Prepare
    const account = goodAccount();
    account.mappings[1] = { ...account.mappings[1], EventSourceArn: queueArn('orders-failures') };

    // Act
    const items = await auditAccount(account);

    // Assess
    expect(items['Tenang-R6']?.status).toBe('not-applicable');
    expect(items['Tenang-R3']).toMatchObject({ status: 'fail', resources: ['queue orders-failures'] });
  });

  it('when a stack mapping belongs to a function outside the stack, it is read with GetEventSourceMapping', async () => {
    // Prepare
    const account = goodAccount();
    account.resources = account.resources.filter((r) => r.LogicalResourceId !== 'Worker');

    // Act
    const items = await auditAccount(account);

    // Assess
    expect(lambda).toHaveReceivedCommandWith(GetEventSourceMappingCommand, { UUID: WORKER_ESM });
    expect(items['Tenang-D3']?.resources).toContain(`mapping worker/${WORKER_ESM}`);
  });
});

describe('Function: readLiveStack', () => {
  it('when it reads, it reports each slow part as a progress line', async () => {
    // Prepare
    mockAccount(goodAccount());
    const progress: string[] = [];

    // Act
    await readLiveStack(clients(), STACK, (line) => progress.push(line));

    // Assess
    expect(progress).toEqual([
      `listing the resources of stack ${STACK}`,
      'reading the attributes of 3 queues',
      'reading 2 functions and their event source mappings',
      'reading the TTL settings of 3 tables',
      'reading the alarms of the account and region',
      'reading the subscriptions of the topics the alarms notify',
    ]);
  });

  it('when the stack does not exist, it throws LiveStackNotFoundError', async () => {
    // Prepare
    mockAccount(goodAccount());
    cfn.reset();
    cfn.on(ListStackResourcesCommand).rejects(
      new CloudFormationServiceException({
        name: 'ValidationError',
        $fault: 'client',
        $metadata: {},
        message: `Stack with id ${STACK} does not exist`,
      }),
    );

    // Act
    const read = readLiveStack(clients(), STACK, () => undefined);

    // Assess
    await expect(read).rejects.toThrow(LiveStackNotFoundError);
  });
});

describe('Function: liveCoverage', () => {
  it('when a rule is in TEMPLATE_RULES, it has a live decision', () => {
    for (const rule of TEMPLATE_RULES) expect(() => liveCoverage(rule)).not.toThrow();
  });

  it('when a rule has no live decision, it throws LiveCoverageMissingError', () => {
    expect(() => liveCoverage({ suffix: 'X9' })).toThrow(LiveCoverageMissingError);
  });

  it('when a rule is not checkable live, its reason says so', () => {
    const reasons = TEMPLATE_RULES.map(liveCoverage).flatMap((c) => (c.checkable ? [] : [c.reason]));
    expect(reasons.length).toBeGreaterThan(0);
    for (const reason of reasons) expect(reason).toMatch(/^not checkable live: /);
  });
});

describe('Command: audit --live', () => {
  const savedEnv = { ...process.env };

  async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await run(argv, { out: (t) => out.push(t), err: (t) => err.push(t) });
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  beforeEach(() => {
    Object.assign(process.env, { AWS_REGION: REGION, TENANG_STAGE: 'unit', TENANG_ACTOR: 'tester' });
  });

  afterAll(() => {
    process.env = savedEnv;
  });

  it('when the deployed stack breaks a rule, it prints the live checklist, names the rule and exits 1', async () => {
    // Prepare
    const account = goodAccount();
    account.queues.jobs = { ...account.queues.jobs, VisibilityTimeout: '60' };
    mockAccount(account);

    // Act
    const result = await cli('audit', '--live');

    // Assess
    expect(result.code).toBe(1);
    expect(result.out).toContain(`Audit of live stack ${STACK} (${REGION})`);
    expect(result.out).toMatch(/Tenang-D2\s+D2\s+fail\s+error\s+queue jobs: visibility timeout 60 s < 6 ×/);
    expect(result.out).toMatch(/Tenang-D4\s+D4\s+not-checkable\s+note\s+not checkable live/);
    expect(result.err).toContain('error: audit failed: Tenang-D2');
    expect(result.err).toContain(`audit --live: listing the resources of stack ${STACK}`);
  });

  it('when --json is given, the live checklist is JSON with the same item shape', async () => {
    // Prepare
    mockAccount(goodAccount());

    // Act
    const result = await cli('audit', '--live', '--json');

    // Assess
    const parsed = JSON.parse(result.out) as { source: string; failed: boolean; items: ChecklistItem[] };
    expect(parsed.source).toBe(`live stack ${STACK} (${REGION})`);
    expect(parsed.items.map((i) => i.ruleId)).toEqual(
      expect.arrayContaining([...TEMPLATE_RULES.map(ruleId), 'Tenang-P3-Owner', 'Tenang-P5-Concurrency']),
    );
    expect(parsed.items.filter((i) => i.status === 'fail' && i.level === 'error')).toEqual([]);
    expect(result.code).toBe(0);
  });

  it('when a fixed-name table of the template exists outside the deployed stack, Tenang-P5-RetainedResources fails and the audit exits 1', async () => {
    // Prepare: the deployed template names a retained table the stack does not hold.
    const account = goodAccount();
    Object.assign(account.template.Resources, {
      Archive: {
        Type: 'AWS::DynamoDB::Table',
        DeletionPolicy: 'RetainExceptOnCreate',
        Properties: { TableName: 'tenang-unit-archive' },
      },
    });
    mockAccount(account);
    dynamodb.on(DescribeTableCommand, { TableName: 'tenang-unit-archive' }).resolves({ Table: {} });

    // Act
    const result = await cli('audit', '--live', '--json');

    // Assess
    const parsed = JSON.parse(result.out) as { items: ChecklistItem[] };
    expect(parsed.items.find((i) => i.ruleId === 'Tenang-P5-RetainedResources')).toMatchObject({
      featureId: 'P5',
      status: 'fail',
      level: 'error',
      resources: ['table tenang-unit-archive'],
    });
    expect(result.code).toBe(1);
    expect(result.err).toContain('Tenang-P5-RetainedResources');
  });

  it('when the stack is not deployed, it exits 1 and says so', async () => {
    // Prepare
    mockAccount(goodAccount());
    cfn.reset();
    cfn.on(ListStackResourcesCommand).resolves({ StackResourceSummaries: [] });

    // Act
    const result = await cli('audit', '--live');

    // Assess
    expect(result.code).toBe(1);
    expect(result.err).toContain(
      `stack ${STACK} does not exist or has no resources: is stage "unit" deployed?`,
    );
  });

  it('when --live and --template are both given, it is a usage error (2) and nothing is read', async () => {
    // Prepare
    mockAccount(goodAccount());

    // Act
    const result = await cli('audit', '--live', '--template', 'cdk.out/x.template.json');

    // Assess
    expect(result.code).toBe(2);
    expect(result.err).toContain('--live');
    expect(cfn).not.toHaveReceivedCommand(ListStackResourcesCommand);
  });
});
