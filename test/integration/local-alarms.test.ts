/**
 * The local alarm evaluator against moto: real queues, alarms created with PutMetricAlarm, states
 * set with SetAlarmState and read back with DescribeAlarms. Periods are 2 s so each case takes a
 * few seconds.
 */
import {
  CloudWatchClient,
  DeleteAlarmsCommand,
  DescribeAlarmsCommand,
  GetMetricStatisticsCommand,
  PutMetricAlarmCommand,
  type PutMetricAlarmCommandInput,
} from '@aws-sdk/client-cloudwatch';
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { RETRY_RATE_EXPRESSION } from '../../lib/infra/observability';
import { AlarmEvaluator } from '../../lib/local/alarms/evaluator';
import { pollUntil } from '../../lib/local/poll';
import { sqsClient, uniqueName } from '../helpers/aws';

jest.setTimeout(60_000);

const PERIOD_SECONDS = 2;
const DEADLINE_MS = 20_000;

function cloudwatchClient(): CloudWatchClient {
  const endpoint = process.env.AWS_ENDPOINT_URL;
  const region = process.env.AWS_REGION;
  if (endpoint === undefined || region === undefined)
    throw new Error('AWS_ENDPOINT_URL and AWS_REGION are set by the integration globalSetup');
  return new CloudWatchClient({ endpoint, region });
}

describe('Class: AlarmEvaluator (moto)', () => {
  let sqs: SQSClient;
  let cloudwatch: CloudWatchClient;
  let prefix: string;
  let evaluator: AlarmEvaluator;
  const queues: string[] = [];
  const alarms: string[] = [];

  async function queue(): Promise<{ name: string; url: string }> {
    const name = uniqueName('alarmq');
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({ QueueName: name, Attributes: { VisibilityTimeout: '30' } }),
    );
    if (QueueUrl === undefined) throw new Error('no queue url');
    queues.push(QueueUrl);
    return { name, url: QueueUrl };
  }

  async function alarm(
    suffix: string,
    props: Omit<PutMetricAlarmCommandInput, 'AlarmName'>,
  ): Promise<string> {
    const name = `${prefix}${suffix}`;
    await cloudwatch.send(new PutMetricAlarmCommand({ AlarmName: name, ...props }));
    alarms.push(name);
    return name;
  }

  function queueAlarm(
    queueName: string,
    metric: string,
    threshold: number,
  ): Omit<PutMetricAlarmCommandInput, 'AlarmName'> {
    return {
      Namespace: 'AWS/SQS',
      MetricName: metric,
      Dimensions: [{ Name: 'QueueName', Value: queueName }],
      Statistic: 'Maximum',
      Period: 60,
      EvaluationPeriods: 1,
      DatapointsToAlarm: 1,
      Threshold: threshold,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    };
  }

  /** Polls moto's DescribeAlarms until the alarm is in `state`; returns when it saw it. */
  async function waitForState(name: string, state: string): Promise<number> {
    return pollUntil(
      async () => {
        const { MetricAlarms = [] } = await cloudwatch.send(
          new DescribeAlarmsCommand({ AlarmNames: [name] }),
        );
        return MetricAlarms[0]?.StateValue === state ? Date.now() : undefined;
      },
      { description: `${name} in ${state}`, deadlineMs: DEADLINE_MS, intervalMs: 100 },
    );
  }

  async function drain(url: string): Promise<number> {
    let deleted = 0;
    for (;;) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }),
      );
      if (Messages.length === 0) return deleted;
      for (const m of Messages) {
        await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
        deleted += 1;
      }
    }
  }

  beforeAll(() => {
    sqs = sqsClient();
    cloudwatch = cloudwatchClient();
  });

  beforeEach(() => {
    // Each case evaluates only its own alarms: the emulator may hold others.
    prefix = `${uniqueName('alarms')}-`;
    evaluator = new AlarmEvaluator({
      cloudwatch,
      sqs,
      alarmNamePrefix: prefix,
      periodSeconds: PERIOD_SECONDS,
      intervalMs: 250,
    });
  });

  afterEach(async () => {
    await evaluator.stop();
  });

  afterAll(async () => {
    if (alarms.length > 0) await cloudwatch.send(new DeleteAlarmsCommand({ AlarmNames: alarms }));
    await Promise.all(queues.map((QueueUrl) => sqs.send(new DeleteQueueCommand({ QueueUrl }))));
    sqs.destroy();
    cloudwatch.destroy();
  });

  it('when a message lands in a DLQ, its depth alarm goes to ALARM in moto, and back to OK once it is deleted', async () => {
    // Prepare
    const dlq = await queue();
    const name = await alarm('dlq', queueAlarm(dlq.name, 'ApproximateNumberOfMessagesVisible', 1));
    evaluator.start();
    await waitForState(name, 'OK');

    // Act
    await sqs.send(new SendMessageCommand({ QueueUrl: dlq.url, MessageBody: '{"poison":true}' }));
    await waitForState(name, 'ALARM');
    expect(await drain(dlq.url)).toBe(1);
    await waitForState(name, 'OK');

    // Assess
    const { MetricAlarms = [] } = await cloudwatch.send(new DescribeAlarmsCommand({ AlarmNames: [name] }));
    expect(MetricAlarms[0]?.StateReason).toMatch(/^Threshold Crossed: 0 out of the last 1 datapoints \[0\]/);
    expect(evaluator.timeline().map((t) => [t.alarm, t.from, t.to])).toEqual([
      [name, 'OK', 'ALARM'],
      [name, 'ALARM', 'OK'],
    ]);
    expect(evaluator.states()).toEqual([{ name, state: 'OK', kind: 'metric' }]);
    // The datapoints are in moto too.
    const stats = await cloudwatch.send(
      new GetMetricStatisticsCommand({
        Namespace: 'AWS/SQS',
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: [{ Name: 'QueueName', Value: dlq.name }],
        StartTime: new Date(Date.now() - 10 * 60_000),
        EndTime: new Date(Date.now() + 60_000),
        Period: 60,
        Statistics: ['Maximum'],
      }),
    );
    expect(Math.max(...(stats.Datapoints ?? []).map((d) => d.Maximum ?? 0))).toBe(1);
  });

  it('when a backlog is older than the threshold, the oldest-age alarm fires no earlier than that, and clears once drained', async () => {
    // Prepare: 3 s objective
    const q = await queue();
    const name = await alarm('oldest-age', queueAlarm(q.name, 'ApproximateAgeOfOldestMessage', 3));
    evaluator.start();
    await waitForState(name, 'OK');

    // Act
    const sentAt = Date.now();
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: q.url,
        Entries: [1, 2, 3].map((n) => ({ Id: String(n), MessageBody: `job ${n}` })),
      }),
    );
    const firedAt = await waitForState(name, 'ALARM');
    expect(await drain(q.url)).toBe(3);
    await waitForState(name, 'OK');

    // Assess
    expect(firedAt - sentAt).toBeGreaterThanOrEqual(3_000);
    const fired = evaluator.timeline().find((t) => t.to === 'ALARM');
    expect(fired?.at.getTime()).toBeGreaterThanOrEqual(sentAt + 3_000);
    expect(fired?.reason).toMatch(
      /1 out of the last 1 datapoints \[[\d.]+\] was greater than or equal to the threshold \(3\)/,
    );
  });

  it('when functions print EMF retries, the metric-math retry-rate alarm goes to ALARM in moto', async () => {
    // Prepare: tenang's retry-rate alarm, 1 of 1
    const stat = (Id: string, MetricName: string) => ({
      Id,
      ReturnData: false,
      MetricStat: {
        Metric: { Namespace: 'tenang', MetricName, Dimensions: [{ Name: 'service', Value: prefix }] },
        Period: 60,
        Stat: 'Sum',
      },
    });
    const name = await alarm('retry-rate', {
      EvaluationPeriods: 1,
      DatapointsToAlarm: 1,
      Threshold: 10,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
      Metrics: [
        {
          Id: 'expr_1',
          Expression: RETRY_RATE_EXPRESSION,
          ReturnData: true,
        },
        stat('r', 'JobRetried'),
        stat('s', 'JobSucceeded'),
        stat('p', 'JobFailedPermanently'),
      ],
    });
    evaluator.start();
    await waitForState(name, 'OK');

    // Act: a Powertools document with 1 retry in 4 attempts, every 200 ms until it fires
    const line = JSON.stringify({
      _aws: {
        Timestamp: Date.now(),
        CloudWatchMetrics: [
          {
            Namespace: 'tenang',
            Dimensions: [['service']],
            Metrics: [
              { Name: 'JobRetried', Unit: 'Count' },
              { Name: 'JobSucceeded', Unit: 'Count' },
            ],
          },
        ],
      },
      service: prefix,
      JobRetried: 1,
      JobSucceeded: [1, 1, 1],
    });
    const emitter = setInterval(() => evaluator.recordOutput(line, 'tenang-test-consumer'), 200);
    try {
      await waitForState(name, 'ALARM');
    } finally {
      clearInterval(emitter);
    }

    // Assess: 25 % in each period
    expect(evaluator.timeline().find((t) => t.to === 'ALARM')?.reason).toContain('[25]');
  });
});
