/**
 * Values computed from the declaration. They are never typed by hand, so they cannot drift
 * from what they are derived from.
 */
import { AWS_LIMITS, type JobType, type Stage, type StreamConsumer, type Table } from './schema';

/** AWS guidance: visibility timeout ≥ 6 × function timeout, plus the batching window (D2). */
export const VISIBILITY_TIMEOUT_FACTOR = 6;
/** The DLQ keeps messages as long as SQS allows, so it always outlives its source queue. */
export const DLQ_RETENTION_SECONDS = AWS_LIMITS.sqsRetentionSeconds.max;
/** Alarm period for queue and stream alarms, seconds. */
export const ALARM_PERIOD_SECONDS = 60;

/** Alarm settings derived from a latency objective and a criticality. */
export interface DerivedAlarmSettings {
  /** Oldest-message (or iterator) age that breaks the objective, seconds. */
  readonly ageThresholdSeconds: number;
  /** An early warning at half the objective. */
  readonly ageWarningSeconds: number;
  readonly periodSeconds: number;
  readonly evaluationPeriods: number;
  readonly datapointsToAlarm: number;
}

/** Everything a job type's infrastructure and runtime need, declared and derived. */
export interface ResolvedJobType extends JobType {
  readonly queueName: string;
  readonly dlqName: string;
  /** Side queue of jobs past their useful age; only when usefulAgeSeconds is declared. */
  readonly expiredQueueName: string | undefined;
  readonly visibilityTimeoutSeconds: number;
  readonly dlqRetentionSeconds: number;
  /** Total attempts per message, including the first: maxReceiveCount (one retry layer, R6). */
  readonly maxAttempts: number;
  /** Longest time a poison message can take to reach the DLQ, seconds. */
  readonly worstCaseSecondsToDlq: number;
  readonly pauseFlagName: string;
  readonly alarms: DerivedAlarmSettings;
  /** What the consumer depends on, for fact sheets: its providers and tables, then the declared extras. */
  readonly dependsOn: readonly string[];
}

/** A stream consumer with its derived values. */
export interface ResolvedStreamConsumer extends StreamConsumer {
  readonly pauseFlagName: string;
  readonly onFailureQueueName: string;
  readonly alarms: DerivedAlarmSettings;
  /** What the consumer depends on, for fact sheets: its stream, tables, queues and the cache. */
  readonly dependsOn: readonly string[];
}

/** A table with its physical name. */
export interface ResolvedTable extends Table {
  /** `tenang-<stage>-<name>`. */
  readonly tableName: string;
}

/** `invoice.issue` → `invoice-issue`. */
export function jobTypeSlug(name: string): string {
  return name.replace(/\./g, '-');
}

/** Visibility timeout for a queue whose consumer has this timeout and batching window (D2). */
export function deriveVisibilityTimeoutSeconds(
  functionTimeoutSeconds: number,
  windowSeconds: number,
): number {
  return VISIBILITY_TIMEOUT_FACTOR * functionTimeoutSeconds + windowSeconds;
}

/** Retry delay before attempt n+1 without jitter: min(cap, base × 2^(n-1)); the jitter only shortens it. */
export function backoffCeilingSeconds(retry: JobType['retry'], failedAttempt: number): number {
  return Math.min(retry.maxDelaySeconds, retry.baseDelaySeconds * 2 ** (failedAttempt - 1));
}

/**
 * Worst case from first receive to the DLQ. After each attempt the message comes back either
 * when its backoff ends (a failure reported within the timeout: at most timeout + ceiling) or
 * when the visibility timeout runs out (a crash or a timeout): whichever is later, every time.
 * If this exceeds the retention period, SQS deletes a poison message before it reaches the
 * DLQ: the job would be lost without a trace.
 */
export function deriveWorstCaseSecondsToDlq(job: JobType): number {
  const visibility = deriveVisibilityTimeoutSeconds(job.function.timeoutSeconds, job.batch.windowSeconds);
  let total = 0;
  for (let attempt = 1; attempt <= job.maxReceiveCount; attempt += 1) {
    total += Math.max(visibility, job.function.timeoutSeconds + backoffCeilingSeconds(job.retry, attempt));
  }
  return total;
}

/**
 * Alarm thresholds from the latency objective. Critical work alarms on the first breaching
 * minute; other work needs 2 of 3 so a short burst does not page anyone.
 */
export function deriveAlarmSettings(
  latencyObjectiveSeconds: number,
  criticality: JobType['criticality'],
): DerivedAlarmSettings {
  const critical = criticality === 'critical';
  return {
    ageThresholdSeconds: latencyObjectiveSeconds,
    ageWarningSeconds: Math.max(1, Math.floor(latencyObjectiveSeconds / 2)),
    periodSeconds: ALARM_PERIOD_SECONDS,
    evaluationPeriods: critical ? 1 : 3,
    datapointsToAlarm: critical ? 1 : 2,
  };
}

/** SSM parameter holding a consumer's pause flag (B4). */
export function pauseFlagName(stage: string, consumer: string): string {
  return `/tenang/${stage}/flags/pause/${consumer}`;
}

/** SSM parameter holding the stage's degrade flag (B3). */
export function degradeFlagName(stage: string): string {
  return `/tenang/${stage}/flags/degrade`;
}

/** Computes a job type's derived values. */
export function resolveJobType(stage: Stage, job: JobType): ResolvedJobType {
  const suffix = job.queue.kind === 'fifo' ? '.fifo' : '';
  const base = `tenang-${stage.name}-${jobTypeSlug(job.name)}`;
  return {
    ...job,
    queueName: `${base}${suffix}`,
    dlqName: `${base}-dlq${suffix}`,
    expiredQueueName: job.usefulAgeSeconds === undefined ? undefined : `${base}-expired${suffix}`,
    visibilityTimeoutSeconds: deriveVisibilityTimeoutSeconds(
      job.function.timeoutSeconds,
      job.batch.windowSeconds,
    ),
    dlqRetentionSeconds: DLQ_RETENTION_SECONDS,
    maxAttempts: job.maxReceiveCount,
    worstCaseSecondsToDlq: deriveWorstCaseSecondsToDlq(job),
    pauseFlagName: pauseFlagName(stage.name, job.consumer),
    alarms: deriveAlarmSettings(job.latencyObjectiveSeconds, job.criticality),
    dependsOn: [
      ...job.resources.providers.map((p) => `${p}-provider`),
      ...Object.keys(job.resources.tables).map((t) => `${t}-table`),
      ...job.dependencies,
    ],
  };
}

/** Computes a stream consumer's derived values; stream work is treated as critical for alarms. */
export function resolveStreamConsumer(stage: Stage, sc: StreamConsumer): ResolvedStreamConsumer {
  return {
    ...sc,
    pauseFlagName: pauseFlagName(stage.name, sc.consumer),
    onFailureQueueName: `tenang-${stage.name}-${sc.consumer}-failures`,
    alarms: deriveAlarmSettings(sc.latencyObjectiveSeconds, 'critical'),
    dependsOn: [
      `${sc.table}-table stream`,
      ...Object.keys(sc.resources.tables).map((t) => `${t}-table`),
      ...sc.resources.queues.map((q) => `${q} queue`),
      ...(sc.resources.cache ? ['cache'] : []),
    ],
  };
}

/** A table's physical name: `tenang-<stage>-<name>`. */
export function resolveTable(stage: Stage, table: Table): ResolvedTable {
  return { ...table, tableName: `tenang-${stage.name}-${table.name}` };
}

/** `invoice.issue` → `INVOICE_ISSUE`, `dead-letters` → `DEAD_LETTERS`. */
function variableStem(name: string): string {
  return name.toUpperCase().replace(/[.-]/g, '_');
}

/** The variable holding a table's name in a consumer's environment: `invoices` → `INVOICES_TABLE`. */
export function tableVariable(table: string): string {
  return `${variableStem(table)}_TABLE`;
}

/** The variable holding a job type's queue URL: `invoice.issue` → `INVOICE_ISSUE_QUEUE_URL`. */
export function queueUrlVariable(jobTypeName: string): string {
  return `${variableStem(jobTypeName)}_QUEUE_URL`;
}

/** The variable holding a provider's URL: `invoicing` → `INVOICING_PROVIDER_URL`. */
export function providerVariable(provider: string): string {
  return `${provider.toUpperCase()}_PROVIDER_URL`;
}
