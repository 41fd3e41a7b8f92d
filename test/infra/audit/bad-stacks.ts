/** A minimal worker-queue stack that passes every Tenang rule, and one variant per rule that breaks it. */
import { Duration, type Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sources from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';

/** What a variant changes in the compliant stack. */
export interface StackFlaws {
  readonly visibilitySeconds?: number;
  readonly omitTimeout?: boolean;
  readonly omitMemory?: boolean;
  readonly maxReceiveCount?: number;
  readonly noDlq?: boolean;
  readonly reportBatchItemFailures?: boolean;
  readonly ageAlarm?: boolean;
  readonly dlqAlarm?: boolean;
  readonly bisect?: boolean;
  readonly streamRetryAttempts?: number;
  readonly noOnFailure?: boolean;
  readonly idempotencyTtl?: boolean;
  readonly lockTtl?: boolean;
  readonly runbookInDescription?: boolean;
}

const RUNBOOK = 'Runbook: runbooks/backlog.md';

/** Builds the worker-queue stack into `stack`, with the given flaws. */
export function workerQueueStack(stack: Stack, flaws: StackFlaws = {}): Stack {
  const code = lambda.Code.fromInline('exports.handler = async () => ({ batchItemFailures: [] });');
  const fn = (id: string, env: Record<string, string> = {}): lambda.Function =>
    new lambda.Function(stack, id, {
      runtime: lambda.Runtime.NODEJS_22_X,
      handler: 'index.handler',
      code,
      timeout: flaws.omitTimeout === true ? undefined : Duration.seconds(10),
      memorySize: flaws.omitMemory === true ? undefined : 256,
      environment: env,
    });
  // O3 asks that the alarms page someone, F5 that someone reads the topic.
  const topic = new sns.Topic(stack, 'OnCall');
  new sns.Subscription(stack, 'OnCallMail', {
    topic,
    protocol: sns.SubscriptionProtocol.EMAIL,
    endpoint: 'on-call@example.com',
  });
  const oncall = new actions.SnsAction(topic);
  const alarm = (id: string, metric: cloudwatch.IMetric, description: string): cloudwatch.Alarm => {
    const created = new cloudwatch.Alarm(stack, id, {
      metric,
      threshold: 1,
      evaluationPeriods: 1,
      alarmDescription: flaws.runbookInDescription === false ? description : `${description} ${RUNBOOK}`,
    });
    created.addAlarmAction(oncall);
    return created;
  };

  // Named by use only: functions receive it as IDEMPOTENCY_TABLE.
  const records = new dynamodb.Table(stack, 'Records', {
    partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING },
    timeToLiveAttribute: flaws.idempotencyTtl === false ? undefined : 'expiration',
  });
  const locks = new dynamodb.Table(stack, 'Locks', {
    partitionKey: { name: 'resource', type: dynamodb.AttributeType.STRING },
    timeToLiveAttribute: flaws.lockTtl === false ? undefined : 'expiresAt',
  });
  const orders = new dynamodb.Table(stack, 'Orders', {
    partitionKey: { name: 'orderId', type: dynamodb.AttributeType.STRING },
    stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
  });

  const dlq = new sqs.Queue(stack, 'Dlq');
  const queue = new sqs.Queue(stack, 'Queue', {
    visibilityTimeout: Duration.seconds(flaws.visibilitySeconds ?? 60),
    deadLetterQueue:
      flaws.noDlq === true ? undefined : { queue: dlq, maxReceiveCount: flaws.maxReceiveCount ?? 5 },
  });
  const consumer = fn('Consumer', { IDEMPOTENCY_TABLE: records.tableName, LOCKS_TABLE: locks.tableName });
  consumer.addEventSource(
    new sources.SqsEventSource(queue, { reportBatchItemFailures: flaws.reportBatchItemFailures ?? true }),
  );
  if (flaws.ageAlarm !== false) alarm('QueueAge', queue.metricApproximateAgeOfOldestMessage(), 'Backlog.');
  if (flaws.dlqAlarm !== false)
    alarm('DlqDepth', dlq.metricApproximateNumberOfMessagesVisible(), 'DLQ not empty.');

  const failures = new sqs.Queue(stack, 'StreamFailures');
  const relay = fn('Relay');
  relay.addEventSource(
    new sources.DynamoEventSource(orders, {
      startingPosition: lambda.StartingPosition.TRIM_HORIZON,
      bisectBatchOnError: flaws.bisect ?? true,
      retryAttempts: flaws.streamRetryAttempts ?? 5,
      maxRecordAge: Duration.hours(1),
      reportBatchItemFailures: true,
      onFailure: flaws.noOnFailure === true ? undefined : new sources.SqsDlq(failures),
    }),
  );
  alarm('StreamFailuresDepth', failures.metricApproximateNumberOfMessagesVisible(), 'Stream records failed.');
  return stack;
}

/** One variant per rule: the flaws and the one rule id they must fail. */
export const BAD_VARIANTS: readonly (readonly [string, StackFlaws, string])[] = [
  [
    'a queue whose visibility timeout is below 6 × its consumer timeout',
    { visibilitySeconds: 30 },
    'Tenang-D2',
  ],
  ['an SQS mapping without ReportBatchItemFailures', { reportBatchItemFailures: false }, 'Tenang-D3'],
  ['a source queue without a DLQ', { noDlq: true, dlqAlarm: false }, 'Tenang-R3'],
  ['a source queue with maxReceiveCount 1', { maxReceiveCount: 1 }, 'Tenang-R3'],
  ['a source queue with maxReceiveCount 50', { maxReceiveCount: 50 }, 'Tenang-R3'],
  ['a stream mapping without bisect', { bisect: false }, 'Tenang-R6'],
  ['a stream mapping with unbounded retries', { streamRetryAttempts: -1 }, 'Tenang-R6'],
  ['a stream mapping without an on-failure destination', { noOnFailure: true }, 'Tenang-R6'],
  ['a source queue without an oldest-age alarm', { ageAlarm: false }, 'Tenang-O3-QueueAge'],
  ['a DLQ without a depth alarm', { dlqAlarm: false }, 'Tenang-O3-DlqDepth'],
  ['an idempotency table (by use) without TTL', { idempotencyTtl: false }, 'Tenang-I1'],
  ['a lock table without TTL', { lockTtl: false }, 'Tenang-L1'],
  ['functions without an explicit memory size', { omitMemory: true }, 'Tenang-D4'],
  ['functions without an explicit timeout', { omitTimeout: true }, 'Tenang-D4'],
  ['alarms whose description names no runbook', { runbookInDescription: false }, 'Tenang-P1'],
];
