/**
 * The data model of a scenario report: what the local platform observed during a run (samples of
 * queues, streams, metric counters and alarms), what the incidents did, and which invariants held.
 * The HTML report and the JSON beside it are two views of one ScenarioReport; everything here is
 * pure so that the report can be built (and tested) from synthetic samples.
 */

/** Bumped when a field changes meaning, so readers of old JSON files can tell. */
export const REPORT_SCHEMA_VERSION = 2;

/** One job type's queue at one instant. */
export interface QueueSample {
  /** Visible plus delayed messages. */
  readonly depth: number;
  /** Received and not yet deleted (ApproximateNumberOfMessagesNotVisible). */
  readonly inFlight: number;
  /** Estimated age of the oldest message, seconds (lib/local/alarms/oldest-message.ts OldestMessageTracker: depth and deletes, no receive). */
  readonly oldestAgeSeconds: number;
  /** Messages in the job type's dead-letter queue. */
  readonly dlq: number;
  /** The event source mapping is disabled (the pause flag holds it). */
  readonly paused: boolean;
}

/** One stream consumer at one instant. */
export interface StreamSample {
  /** Cumulative retried batches. */
  readonly retries: number;
  /** Messages in its on-failure queue. */
  readonly onFailure: number;
  readonly iteratorAgeMs: number;
  readonly paused: boolean;
}

/** Cumulative counters by service, then metric name (EMF metrics the functions emitted). */
export type Counters = Readonly<Record<string, Readonly<Record<string, number>>>>;

/** The pipeline at one instant. */
export interface PipelineSample {
  /** Milliseconds since the run started. */
  readonly atMs: number;
  /** By job type name. */
  readonly queues: Readonly<Record<string, QueueSample>>;
  /** By stream consumer name. */
  readonly streams: Readonly<Record<string, StreamSample>>;
  readonly counters: Counters;
  readonly degraded: boolean;
  /** Names of the alarms in ALARM state. */
  readonly alarmsInAlarm: readonly string[];
}

/** A job type as the report names it. */
export interface ReportedJobType {
  /** e.g. invoice.issue */
  readonly name: string;
  /** Its consumer, which is also the metrics' service dimension, e.g. invoice-consumer. */
  readonly consumer: string;
}

/** What one incident did. */
export interface IncidentRecord {
  readonly kind: string;
  readonly title: string;
  /** Milliseconds since the run started. */
  readonly startMs: number;
  readonly endMs: number;
  /** How it was injected, in a sentence. */
  readonly how: string;
  /** What the pipeline did about it. */
  readonly observed: readonly string[];
  /** False when the injection itself failed (the run then tested less than it claims). */
  readonly injected: boolean;
  readonly error?: string;
}

/** One dead-lettered message, as read from a DLQ or an on-failure queue at the end of the run. */
export interface DlqEntry {
  /** Queue name. */
  readonly queue: string;
  /** Job type or stream consumer the queue belongs to. */
  readonly source: string;
  /** tenang-error-class, or the stream mapping's condition (RetryAttemptsExhausted…). */
  readonly errorClass: string;
  readonly errorKind?: string;
  readonly errorMessage?: string;
  readonly attempts?: number;
  /** The job payload's top-level string fields (the app's ids), when the body is a job envelope. */
  readonly payloadFields?: Readonly<Record<string, string>>;
  /** The body, cut to a few hundred characters. */
  readonly body: string;
  /** ISO-8601, when it reached the queue. */
  readonly sentAt: string;
}

/** A queue's dead letters grouped by error class. */
export interface DlqSummary {
  readonly queue: string;
  readonly source: string;
  readonly total: number;
  readonly byErrorClass: Readonly<Record<string, number>>;
  /** The first entries, for reading. */
  readonly entries: readonly DlqEntry[];
}

/** An alarm changing state. */
export interface AlarmTransition {
  readonly atMs: number;
  readonly alarm: string;
  readonly from: string;
  readonly to: string;
  readonly reason?: string;
}

/** The alarm section. */
export interface AlarmSection {
  /** Where states came from (the platform's evaluator, or CloudWatch DescribeAlarms). */
  readonly source: string;
  readonly note: string;
  readonly timeline: readonly AlarmTransition[];
  readonly final: readonly { readonly alarm: string; readonly state: string }[];
}

/** Jobs of one type that went in and came out. */
export interface JobAccounting {
  readonly jobType: string;
  /** Jobs put on the queue (by the traffic, by the app's flow, or injected). */
  readonly in: number;
  readonly succeeded: number;
  readonly duplicatesIgnored: number;
  /** Entries of this run in the job type's DLQ. */
  readonly deadLettered: number;
  readonly retried: number;
  /** Deferred (re-sent with a delay): not an outcome, the job came back later. */
  readonly deferred: number;
  /** Visible, delayed or in flight when the run ended. */
  readonly leftInQueue: number;
}

/** Duplicates the pipeline absorbed, by where. */
export interface DuplicatesPrevented {
  /** Jobs a consumer found already done (DuplicateIgnored). */
  readonly consumerDuplicatesIgnored: number;
  /** Those the app's scenario flow's own parts absorbed, by where (FlowReport.duplicates). */
  readonly flow: readonly { readonly where: string; readonly count: number }[];
  readonly total: number;
}

/** What a fake provider saw: every request (replays, failures) and the side effects it made. */
export interface ProviderTotals {
  readonly requests: number;
  readonly effects: number;
}

/** One invariant's verdict. */
export interface InvariantResult {
  readonly name: string;
  readonly holds: boolean;
  /** What was checked, e.g. "212 payment keys". */
  readonly detail: string;
  /** The first violations, one line each. */
  readonly violations: readonly string[];
}

/** A chart of an app's scenario flow, aligned on the report's samples. */
export interface FlowChart {
  /** Its id in the page (data-chart). */
  readonly id: string;
  readonly title: string;
  readonly unit: string;
  /** One value per sample; null where there is none. */
  readonly values: readonly (number | null)[];
  /** The axis's top. @default the highest value */
  readonly yMax?: number;
  /** Values are ratios shown as percentages. @default false */
  readonly percent?: boolean;
}

/** An app's scenario flow's parts of the report (lib/local/scenario-flow.ts), in generic form. */
export interface FlowReport {
  /** The flow's name. */
  readonly name: string;
  /** What the run's rate counts, e.g. "orders/s". */
  readonly rateUnit: string;
  /** Rows of the report's head table. */
  readonly facts: readonly { readonly label: string; readonly value: string }[];
  /** Duplicates the flow's own parts absorbed, by where (beside the consumers' DuplicateIgnored). */
  readonly duplicates: readonly { readonly where: string; readonly count: number }[];
  readonly charts: readonly FlowChart[];
  /** Lines of the summary printed when the run ends. */
  readonly summary: readonly string[];
}

/** Time series for the charts, all aligned on tSeconds. */
export interface ReportSeries {
  readonly tSeconds: readonly number[];
  /** By job type. */
  readonly depth: Readonly<Record<string, readonly number[]>>;
  readonly inFlight: Readonly<Record<string, readonly number[]>>;
  readonly oldestAgeSeconds: Readonly<Record<string, readonly number[]>>;
  /** DLQ depth by job type, on-failure depth by stream consumer. */
  readonly dlq: Readonly<Record<string, readonly number[]>>;
  /** Retries within each interval, by job type and stream consumer (the first point is 0). */
  readonly retries: Readonly<Record<string, readonly number[]>>;
}

/** Scenario metadata. */
export interface ScenarioMeta {
  readonly name: string;
  readonly description: string;
  readonly durationSeconds: number;
  readonly ratePerSecond: number;
  readonly stage: string;
  /** Which Redis the run used and how it was taken down. */
  readonly redis: string;
  readonly startedAt: string;
  readonly endedAt: string;
  readonly interrupted: boolean;
}

/** How long each phase took, ms. */
export interface RunTimings {
  readonly provisionMs: number;
  readonly runMs: number;
  readonly drainMs: number;
  readonly collectMs: number;
  readonly totalMs: number;
}

/** A complete report. */
export interface ScenarioReport {
  readonly schemaVersion: typeof REPORT_SCHEMA_VERSION;
  readonly scenario: ScenarioMeta;
  readonly timings: RunTimings;
  readonly jobTypes: readonly ReportedJobType[];
  readonly streamConsumers: readonly string[];
  readonly incidents: readonly IncidentRecord[];
  readonly series: ReportSeries;
  readonly jobs: readonly JobAccounting[];
  readonly duplicatesPrevented: DuplicatesPrevented;
  /** By provider: the app's scenario flow's, and each one the app's job types declare. */
  readonly providers: Readonly<Record<string, ProviderTotals>>;
  readonly dlq: readonly DlqSummary[];
  readonly alarms: AlarmSection;
  readonly invariants: readonly InvariantResult[];
  /** The app's scenario flow's parts, when the run had one (lib/local/scenario-flow.ts). */
  readonly flow?: FlowReport;
  /** Every invariant holds, every incident was injected and the run was not interrupted. */
  readonly ok: boolean;
}

/** Metric names the report reads (lib/config/metrics.ts METRIC values). */
export const REPORT_METRIC = {
  succeeded: 'JobSucceeded',
  retried: 'JobRetried',
  deferred: 'JobDeferred',
  duplicateIgnored: 'DuplicateIgnored',
  cacheHit: 'CacheHit',
  cacheMiss: 'CacheMiss',
  cacheBypass: 'CacheBypass',
} as const;

/** A counter's value, 0 when never emitted. */
export function counterOf(counters: Counters, service: string, metric: string): number {
  return counters[service]?.[metric] ?? 0;
}

/** Sum of a metric over every service. */
export function counterTotal(counters: Counters, metric: string): number {
  return Object.values(counters).reduce((sum, byMetric) => sum + (byMetric[metric] ?? 0), 0);
}

/** Differences between consecutive values; the first element is 0. Counter resets count as 0. */
export function perInterval(cumulative: readonly number[]): number[] {
  return cumulative.map((v, i) => (i === 0 ? 0 : Math.max(0, v - (cumulative[i - 1] ?? 0))));
}

/** Derives the chart series from the samples. */
export function deriveSeries(
  samples: readonly PipelineSample[],
  jobTypes: readonly ReportedJobType[],
  streamConsumers: readonly string[],
): ReportSeries {
  const pick = (f: (q: QueueSample) => number): Record<string, number[]> =>
    Object.fromEntries(
      jobTypes.map((j) => [
        j.name,
        samples.map((s) => {
          const q = s.queues[j.name];
          return q === undefined ? 0 : f(q);
        }),
      ]),
    );
  const dlq: Record<string, number[]> = pick((q) => q.dlq);
  const retries: Record<string, number[]> = {};
  for (const j of jobTypes) {
    retries[j.name] = perInterval(
      samples.map((s) => counterOf(s.counters, j.consumer, REPORT_METRIC.retried)),
    );
  }
  for (const c of streamConsumers) {
    dlq[c] = samples.map((s) => s.streams[c]?.onFailure ?? 0);
    retries[c] = perInterval(samples.map((s) => s.streams[c]?.retries ?? 0));
  }
  return {
    tSeconds: samples.map((s) => Math.round(s.atMs / 100) / 10),
    depth: pick((q) => q.depth),
    inFlight: pick((q) => q.inFlight),
    oldestAgeSeconds: pick((q) => q.oldestAgeSeconds),
    dlq,
    retries,
  };
}

/** How many DLQ entries a summary lists in full. */
export const DLQ_ENTRIES_LISTED = 20;

/** Groups dead letters by queue, then error class; queues keep the order of `queues`. */
export function summarizeDlq(
  queues: readonly { readonly queue: string; readonly source: string }[],
  entries: readonly DlqEntry[],
): DlqSummary[] {
  return queues.map(({ queue, source }) => {
    const mine = entries.filter((e) => e.queue === queue);
    const byErrorClass: Record<string, number> = {};
    for (const e of mine) byErrorClass[e.errorClass] = (byErrorClass[e.errorClass] ?? 0) + 1;
    return { queue, source, total: mine.length, byErrorClass, entries: mine.slice(0, DLQ_ENTRIES_LISTED) };
  });
}

/** Everything a report is built from. */
export interface ReportInput {
  readonly scenario: ScenarioMeta;
  readonly timings: RunTimings;
  readonly jobTypes: readonly ReportedJobType[];
  readonly streamConsumers: readonly string[];
  readonly samples: readonly PipelineSample[];
  readonly incidents: readonly IncidentRecord[];
  /** Jobs put on each job type's queue during the run. */
  readonly jobsIn: Readonly<Record<string, number>>;
  readonly dlqQueues: readonly { readonly queue: string; readonly source: string }[];
  readonly dlqEntries: readonly DlqEntry[];
  readonly providers: Readonly<Record<string, ProviderTotals>>;
  readonly alarms: AlarmSection;
  readonly invariants: readonly InvariantResult[];
  /** The app's scenario flow's parts, when the run had one. @default - none */
  readonly flow?: FlowReport;
}

const EMPTY_SAMPLE: PipelineSample = {
  atMs: 0,
  queues: {},
  streams: {},
  counters: {},
  degraded: false,
  alarmsInAlarm: [],
};

/** Builds the report. */
export function buildReport(input: ReportInput): ScenarioReport {
  const last = input.samples[input.samples.length - 1] ?? EMPTY_SAMPLE;
  const counters = last.counters;
  const dlq = summarizeDlq(input.dlqQueues, input.dlqEntries);
  const jobs = input.jobTypes.map((j): JobAccounting => {
    const q = last.queues[j.name];
    return {
      jobType: j.name,
      in: input.jobsIn[j.name] ?? 0,
      succeeded: counterOf(counters, j.consumer, REPORT_METRIC.succeeded),
      duplicatesIgnored: counterOf(counters, j.consumer, REPORT_METRIC.duplicateIgnored),
      deadLettered: dlq.find((d) => d.source === j.name)?.total ?? 0,
      retried: counterOf(counters, j.consumer, REPORT_METRIC.retried),
      deferred: counterOf(counters, j.consumer, REPORT_METRIC.deferred),
      leftInQueue: q === undefined ? 0 : q.depth + q.inFlight,
    };
  });
  const consumerDuplicatesIgnored = input.jobTypes.reduce(
    (sum, j) => sum + counterOf(counters, j.consumer, REPORT_METRIC.duplicateIgnored),
    0,
  );
  const flowDuplicates = input.flow?.duplicates ?? [];
  const duplicatesPrevented: DuplicatesPrevented = {
    consumerDuplicatesIgnored,
    flow: flowDuplicates,
    total: consumerDuplicatesIgnored + flowDuplicates.reduce((sum, d) => sum + d.count, 0),
  };
  const ok =
    !input.scenario.interrupted &&
    input.invariants.length > 0 &&
    input.invariants.every((i) => i.holds) &&
    input.incidents.every((i) => i.injected);
  return {
    schemaVersion: REPORT_SCHEMA_VERSION,
    scenario: input.scenario,
    timings: input.timings,
    jobTypes: input.jobTypes,
    streamConsumers: input.streamConsumers,
    incidents: input.incidents,
    series: deriveSeries(input.samples, input.jobTypes, input.streamConsumers),
    jobs,
    duplicatesPrevented,
    providers: input.providers,
    dlq,
    alarms: input.alarms,
    invariants: input.invariants,
    ...(input.flow === undefined ? {} : { flow: input.flow }),
    ok,
  };
}
