/**
 * What `tenang status` reads (lib/ops/commands/status.ts prints it): per job type and stream
 * consumer, the backlog, the DLQ, whether the consumer is paused (the flag: desired) and whether
 * its mapping is enabled (actual), the degrade flag, alarms in ALARM and the retry rate.
 * Everything is read from the stack and CloudWatch.
 */
import {
  DescribeAlarmsCommand,
  GetMetricStatisticsCommand,
  type Dimension,
} from '@aws-sdk/client-cloudwatch';
import { GetParametersCommand } from '@aws-sdk/client-ssm';
import { queueCounts } from '../adapters/aws/queue-counts';
import { METRIC, METRICS_NAMESPACE, SERVICE_DIMENSION } from '../config';
import { readDegradeFlag, readPauseFlag } from '../core/flags';
import type { CliContext } from './cli-context';
import {
  consumers,
  discoverResources,
  mappingOf,
  queueUrl,
  type ConsumerEntry,
  type PipelineResources,
} from './pipeline-resources';

/** Window of the retry rate, as the retry-rate alarm reads it. */
export const RETRY_RATE_WINDOW_SECONDS = 300;
/** How far back a CloudWatch datapoint still counts as current. */
const CURRENT_DATAPOINT_SECONDS = 300;

/** One consumer's row. */
export interface ConsumerStatus {
  readonly consumer: string;
  readonly kind: 'queue' | 'stream';
  /** Job type (queue consumers). */
  readonly jobType: string | undefined;
  /** Visible messages (queue consumers). */
  readonly depth: number | undefined;
  readonly inFlight: number | undefined;
  /** CloudWatch's ApproximateAgeOfOldestMessage (queue) or IteratorAge (stream), seconds; undefined: no datapoint. */
  readonly oldestAgeSeconds: number | undefined;
  /** DLQ (queue) or on-failure queue (stream) depth. */
  readonly dlqDepth: number | undefined;
  /**
   * Jobs moved to the side queue past their useful age (B5), for job types that declare one;
   * undefined for the others, and for a stack deployed before it had the side queue.
   */
  readonly expiredDepth: number | undefined;
  /** The flag says paused. */
  readonly paused: boolean;
  readonly pauseReason: string | undefined;
  readonly pauseUntil: string | undefined;
  readonly pauseOverdue: boolean;
  readonly pauseSetBy: string | undefined;
  readonly flagInvalid: string | undefined;
  /** The mapping's State from the Lambda API. */
  readonly mappingState: string;
  /** The flag and the mapping disagree (a reconcile is pending or failing). */
  readonly drift: boolean;
  readonly alarms: readonly string[];
  /** JobRetried / attempts over the last 5 minutes, percent; undefined: no data. */
  readonly retryRatePercent: number | undefined;
}

/** The whole status. */
export interface PipelineStatus {
  readonly stage: string;
  readonly stackName: string;
  readonly at: string;
  readonly degraded: boolean;
  readonly degradeReason: string | undefined;
  readonly consumers: readonly ConsumerStatus[];
}

/** The newest datapoint's statistic within the last few minutes, as a CloudWatch graph would show it. */
async function latestDatapoint(
  context: CliContext,
  namespace: string,
  metricName: string,
  dimensions: Dimension[],
  statistic: 'Maximum' | 'Sum',
): Promise<number | undefined> {
  const now = context.now();
  const { Datapoints = [] } = await context.clients.cloudwatch.send(
    new GetMetricStatisticsCommand({
      Namespace: namespace,
      MetricName: metricName,
      Dimensions: dimensions,
      StartTime: new Date(now.getTime() - CURRENT_DATAPOINT_SECONDS * 1000),
      EndTime: now,
      Period: 60,
      Statistics: [statistic],
    }),
  );
  const latest = [...Datapoints].sort(
    (a, b) => (b.Timestamp?.getTime() ?? 0) - (a.Timestamp?.getTime() ?? 0),
  )[0];
  return latest?.[statistic];
}

/** Sum of a custom metric of a consumer over the retry-rate window; undefined: no datapoint. */
async function windowSum(
  context: CliContext,
  consumer: string,
  metricName: string,
): Promise<number | undefined> {
  const now = context.now();
  const { Datapoints = [] } = await context.clients.cloudwatch.send(
    new GetMetricStatisticsCommand({
      Namespace: METRICS_NAMESPACE,
      MetricName: metricName,
      Dimensions: [{ Name: SERVICE_DIMENSION, Value: consumer }],
      StartTime: new Date(now.getTime() - RETRY_RATE_WINDOW_SECONDS * 1000),
      EndTime: now,
      Period: 60,
      Statistics: ['Sum'],
    }),
  );
  if (Datapoints.length === 0) return undefined;
  return Datapoints.reduce((n, d) => n + (d.Sum ?? 0), 0);
}

/** Retried / (retried + succeeded + failed permanently + bugs), percent; undefined without data. */
export function retryRate(sums: {
  retried: number | undefined;
  succeeded: number | undefined;
  failedPermanently: number | undefined;
  bugs: number | undefined;
}): number | undefined {
  const retried = sums.retried ?? 0;
  const attempts = retried + (sums.succeeded ?? 0) + (sums.failedPermanently ?? 0) + (sums.bugs ?? 0);
  return attempts === 0 ? undefined : Math.round((1000 * retried) / attempts) / 10;
}

/** Alarm names in ALARM under the stage prefix, by consumer (`tenang-<stage>-<consumer>[-…]`). */
async function alarmsInAlarm(context: CliContext): Promise<string[]> {
  const names: string[] = [];
  let NextToken: string | undefined;
  do {
    const page = await context.clients.cloudwatch.send(
      new DescribeAlarmsCommand({
        AlarmNamePrefix: `tenang-${context.stage}-`,
        StateValue: 'ALARM',
        AlarmTypes: ['MetricAlarm', 'CompositeAlarm'],
        NextToken,
      }),
    );
    // The state is checked here too: moto ignores StateValue when AlarmNamePrefix is given.
    for (const a of [...(page.MetricAlarms ?? []), ...(page.CompositeAlarms ?? [])])
      if (a.AlarmName !== undefined && a.StateValue === 'ALARM') names.push(a.AlarmName);
    NextToken = page.NextToken;
  } while (NextToken !== undefined);
  return names;
}

async function consumerStatus(
  context: CliContext,
  resources: PipelineResources,
  entry: ConsumerEntry,
  flags: ReadonlyMap<string, string>,
  alarms: readonly string[],
): Promise<ConsumerStatus> {
  const now = context.now();
  const flagName = entry.kind === 'queue' ? entry.jobType.pauseFlagName : entry.stream.pauseFlagName;
  const raw = flags.get(flagName);
  const flag = readPauseFlag(raw, now);
  let setBy: string | undefined;
  try {
    setBy = raw === undefined ? undefined : ((JSON.parse(raw) as { setBy?: string }).setBy ?? undefined);
  } catch {
    setBy = undefined;
  }
  const mapping = mappingOf(context, resources, entry.consumer);
  const prefix = `tenang-${context.stage}-${entry.consumer}`;
  const mine = alarms.filter((a) => a === prefix || a.startsWith(`${prefix}-`));
  const mappingEnabled = mapping.state === 'Enabled' || mapping.state === 'Enabling';
  const common = {
    consumer: entry.consumer,
    paused: flag.paused,
    pauseReason: flag.reason,
    pauseUntil: flag.until?.toISOString(),
    pauseOverdue: flag.overdue,
    pauseSetBy: setBy,
    flagInvalid: flag.invalid,
    mappingState: mapping.state,
    drift: mappingEnabled === flag.paused,
    alarms: mine,
  };
  if (entry.kind === 'queue') {
    const j = entry.jobType;
    const expiredUrl =
      j.expiredQueueName === undefined ? undefined : resources.queueUrls.get(j.expiredQueueName);
    const [counts, dlq, expired, age, retried, succeeded, failedPermanently, bugs] = await Promise.all([
      queueCounts(context.clients.sqs, queueUrl(resources, j.queueName)),
      queueCounts(context.clients.sqs, queueUrl(resources, j.dlqName)),
      expiredUrl === undefined ? undefined : queueCounts(context.clients.sqs, expiredUrl),
      latestDatapoint(
        context,
        'AWS/SQS',
        'ApproximateAgeOfOldestMessage',
        [{ Name: 'QueueName', Value: j.queueName }],
        'Maximum',
      ),
      windowSum(context, j.consumer, METRIC.jobRetried),
      windowSum(context, j.consumer, METRIC.jobSucceeded),
      windowSum(context, j.consumer, METRIC.jobFailedPermanently),
      windowSum(context, j.consumer, METRIC.jobBug),
    ]);
    return {
      ...common,
      kind: 'queue',
      jobType: j.name,
      depth: counts.visible,
      inFlight: counts.inFlight,
      oldestAgeSeconds: age,
      dlqDepth: dlq.visible + dlq.inFlight,
      expiredDepth: expired === undefined ? undefined : expired.visible + expired.inFlight,
      retryRatePercent: retryRate({ retried, succeeded, failedPermanently, bugs }),
    };
  }
  const s = entry.stream;
  const [failures, iteratorAgeMs] = await Promise.all([
    queueCounts(context.clients.sqs, queueUrl(resources, s.onFailureQueueName)),
    latestDatapoint(
      context,
      'AWS/Lambda',
      'IteratorAge',
      [{ Name: 'FunctionName', Value: mapping.functionName }],
      'Maximum',
    ),
  ]);
  return {
    ...common,
    kind: 'stream',
    jobType: undefined,
    depth: undefined,
    inFlight: undefined,
    oldestAgeSeconds: iteratorAgeMs === undefined ? undefined : iteratorAgeMs / 1000,
    dlqDepth: failures.visible + failures.inFlight,
    expiredDepth: undefined,
    retryRatePercent: undefined,
  };
}

/** Reads the whole pipeline's status. */
export async function readPipelineStatus(context: CliContext): Promise<PipelineStatus> {
  const resources = await discoverResources(context);
  const entries = consumers(context);
  const names = [
    context.config.degradeFlagName,
    ...entries.map((e) => (e.kind === 'queue' ? e.jobType.pauseFlagName : e.stream.pauseFlagName)),
  ];
  const flags = new Map<string, string>();
  for (let i = 0; i < names.length; i += 10) {
    const { Parameters = [] } = await context.clients.ssm.send(
      new GetParametersCommand({ Names: names.slice(i, i + 10) }),
    );
    for (const p of Parameters) if (p.Name !== undefined && p.Value !== undefined) flags.set(p.Name, p.Value);
  }
  const degrade = readDegradeFlag(flags.get(context.config.degradeFlagName));
  const alarms = await alarmsInAlarm(context);
  return {
    stage: context.stage,
    stackName: context.stackName,
    at: context.now().toISOString(),
    degraded: degrade.degraded,
    degradeReason: degrade.reason,
    consumers: await Promise.all(entries.map((e) => consumerStatus(context, resources, e, flags, alarms))),
  };
}
