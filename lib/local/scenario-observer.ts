/**
 * What a scenario watches while it runs: the lines the functions print (EMF metrics, a few log
 * events) and, once per interval, the queues, streams, flags and alarms, sampled into
 * PipelineSamples for the live status and the report. Nothing here receives a message: the
 * queues are read through their attributes only, so sampling never raises a receive count.
 */
import { queueCounts } from '../adapters/aws/queue-counts';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { GetParameterCommand, type SSMClient } from '@aws-sdk/client-ssm';
import { parseEmf } from './alarms/emf';
import { OldestMessageTracker } from './alarms/oldest-message';
import type { AlarmStatus } from './alarms/state';
import type { Counters, PipelineSample, QueueSample, StreamSample } from './report-model';
import type { SqsEventSource } from './sqs-event-source';
import type { StreamEventSource } from './stream-event-source';

/** Namespace of tenang's own metrics (lib/config/metrics.ts). */
const TENANG_NAMESPACE = 'tenang';

/** Log events a scenario counts, by the message its functions log. */
export const OBSERVED_EVENT = {
  /** The crash hook killed the process (lib/adapters/crash.ts). */
  crash: 'crash',
  /** A consumer deferred a job because a provider's circuit is open (it logs that its circuit is open). */
  circuitOpen: 'circuit-open',
  /** The outbox relay enqueued a follow-up; suffixed with its job type. */
  followUpPrefix: 'follow-up:',
} as const;

/** A job a consumer found already done (the runner's duplicate_ignored line). */
export interface IgnoredDuplicate {
  readonly idempotencyKey: string;
  /** The delivery's receive count. */
  readonly attempt: number | undefined;
  /** Epoch ms when the line was seen. */
  readonly at: number;
}

/** An event seen in a function's output. */
export interface ObservedEvent {
  readonly key: string;
  readonly functionName: string;
  readonly line: string;
}

/**
 * Counts the EMF metrics (by service dimension and name) and the log events of every function
 * line. Lines that are not JSON are only checked for the crash hook's message.
 */
export class FunctionOutputObserver {
  private readonly counters = new Map<string, Map<string, number>>();
  private readonly events = new Map<string, number>();
  private readonly lastSequence = new Map<string, bigint>();
  private readonly listeners: ((event: ObservedEvent) => void)[] = [];
  private readonly ignored = new Map<string, IgnoredDuplicate[]>();

  public constructor(private readonly now: () => number = Date.now) {}

  /** The FunctionHost output callback. */
  public readonly onLine = (line: string, functionName: string): void => {
    if (line.includes('injected crash at')) this.emit(OBSERVED_EVENT.crash, functionName, line);
    if (!line.startsWith('{')) return;
    let samples: ReturnType<typeof parseEmf> = [];
    try {
      samples = parseEmf(line);
    } catch {
      // The platform's alarm evaluator reports malformed EMF; counting it twice helps nobody.
    }
    for (const s of samples) {
      if (s.namespace !== TENANG_NAMESPACE) continue;
      const service = s.dimensions.service ?? functionName;
      const byMetric = this.counters.get(service) ?? new Map<string, number>();
      byMetric.set(s.name, (byMetric.get(s.name) ?? 0) + s.value);
      this.counters.set(service, byMetric);
    }
    if (samples.length > 0) return;
    let doc: {
      message?: unknown;
      jobType?: unknown;
      sequenceNumber?: unknown;
      idempotencyKey?: unknown;
      attempt?: unknown;
    };
    try {
      doc = JSON.parse(line) as typeof doc;
    } catch {
      return;
    }
    if (typeof doc.sequenceNumber === 'string' && /^\d+$/.test(doc.sequenceNumber)) {
      const seen = BigInt(doc.sequenceNumber);
      if (seen > (this.lastSequence.get(functionName) ?? -1n)) this.lastSequence.set(functionName, seen);
    }
    const message = typeof doc.message === 'string' ? doc.message : '';
    if (message === 'follow-up enqueued' || message === 'follow-up deferred by degrade mode') {
      this.emit(`${OBSERVED_EVENT.followUpPrefix}${String(doc.jobType)}`, functionName, line);
    } else if (/\bcircuit is open\b/.test(message)) {
      this.emit(OBSERVED_EVENT.circuitOpen, functionName, line);
    } else if (message.startsWith('duplicate_ignored') && typeof doc.idempotencyKey === 'string') {
      const seen: IgnoredDuplicate = {
        idempotencyKey: doc.idempotencyKey,
        attempt: typeof doc.attempt === 'number' ? doc.attempt : undefined,
        at: this.now(),
      };
      this.ignored.set(functionName, [...(this.ignored.get(functionName) ?? []), seen]);
    }
  };

  /** The jobs `functionName` found already done (duplicate_ignored), in the order seen. */
  public ignoredDuplicates(functionName: string): readonly IgnoredDuplicate[] {
    return this.ignored.get(functionName) ?? [];
  }

  /** Calls `listener` on every event. */
  public onEvent(listener: (event: ObservedEvent) => void): void {
    this.listeners.push(listener);
  }

  /** How often `key` was seen. */
  public eventCount(key: string): number {
    return this.events.get(key) ?? 0;
  }

  /** The highest stream sequence number a function logged (stream consumers log each record's). */
  public highestSequence(functionName: string): bigint | undefined {
    return this.lastSequence.get(functionName);
  }

  /** The cumulative counters now. */
  public snapshot(): Counters {
    return Object.fromEntries(
      [...this.counters].map(([service, byMetric]) => [service, Object.fromEntries(byMetric)]),
    );
  }

  private emit(key: string, functionName: string, line: string): void {
    this.events.set(key, (this.events.get(key) ?? 0) + 1);
    for (const l of this.listeners) l({ key, functionName, line });
  }
}

/** A job type's queues as the sampler reads them. */
export interface SampledJobType {
  readonly name: string;
  readonly queueUrl: string;
  readonly dlqUrl: string;
  /** Its event source mapping (deletes counted, Enabled state). */
  readonly source: SqsEventSource;
}

/** A stream consumer as the sampler reads it. */
export interface SampledStream {
  readonly consumer: string;
  readonly onFailureUrl: string | undefined;
  readonly source: StreamEventSource;
}

/** What the sampler reads. */
export interface SamplerDeps {
  readonly sqs: SQSClient;
  readonly ssm: SSMClient;
  readonly jobTypes: readonly SampledJobType[];
  readonly streams: readonly SampledStream[];
  /** A mapping's Enabled state (the local Lambda control plane). */
  readonly isEnabled: (uuid: string) => boolean;
  readonly degradeFlagName: string;
  readonly observer: FunctionOutputObserver;
  /** Current alarm states (the platform's evaluator). */
  readonly alarmStates: () => readonly AlarmStatus[];
  /** Milliseconds since the run started. */
  readonly elapsedMs: () => number;
  readonly log: (line: string) => void;
}

export { queueCounts };

/** Samples the pipeline on demand and on an interval. */
export class PipelineSampler {
  public readonly samples: PipelineSample[] = [];
  private readonly trackers = new Map<string, OldestMessageTracker>();
  private degraded = false;
  private degradeReadAt = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | undefined;
  private inProgress: Promise<PipelineSample | undefined> | undefined;
  private lastError = '';

  public constructor(private readonly deps: SamplerDeps) {}

  /** Samples every `everyMs` and hands each sample to `onSample`. */
  public start(everyMs: number, onSample: (sample: PipelineSample) => void): void {
    if (this.timer !== undefined) return;
    const once = (): void => {
      if (this.inProgress !== undefined) return; // a slow emulator: skip, never pile up
      this.inProgress = this.sample().finally(() => (this.inProgress = undefined));
      void this.inProgress.then((s) => (s === undefined ? undefined : onSample(s)));
    };
    once();
    this.timer = setInterval(once, everyMs);
  }

  /** Stops the interval and waits for a sample in progress. */
  public async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.inProgress;
  }

  /** The latest sample, if any. */
  public latest(): PipelineSample | undefined {
    return this.samples[this.samples.length - 1];
  }

  /** Takes one sample now (undefined when the emulator did not answer; the error is logged once). */
  public async sample(): Promise<PipelineSample | undefined> {
    try {
      const sample = await this.read();
      this.samples.push(sample);
      this.lastError = '';
      return sample;
    } catch (error) {
      const message = `sampling failed: ${(error as Error).message}`;
      if (message !== this.lastError) this.deps.log(message);
      this.lastError = message;
      return undefined;
    }
  }

  private async read(): Promise<PipelineSample> {
    const atMs = this.deps.elapsedMs();
    const now = Date.now();
    const queues: Record<string, QueueSample> = {};
    await Promise.all(
      this.deps.jobTypes.map(async (j) => {
        // Deletes first: a delete racing the depth read then looks like a later arrival (see the tracker).
        const deleted = j.source.stats.deleted;
        const [main, dlq] = await Promise.all([
          queueCounts(this.deps.sqs, j.queueUrl),
          queueCounts(this.deps.sqs, j.dlqUrl),
        ]);
        const depth = main.visible + main.delayed;
        let tracker = this.trackers.get(j.name);
        if (tracker === undefined) {
          tracker = new OldestMessageTracker();
          this.trackers.set(j.name, tracker);
        }
        queues[j.name] = {
          depth,
          inFlight: main.inFlight,
          oldestAgeSeconds: tracker.observe(now, depth + main.inFlight, deleted),
          dlq: dlq.visible + dlq.inFlight + dlq.delayed,
          paused: !this.deps.isEnabled(j.source.spec.uuid),
        };
      }),
    );
    const streams: Record<string, StreamSample> = {};
    await Promise.all(
      this.deps.streams.map(async (s) => {
        const onFailure =
          s.onFailureUrl === undefined ? undefined : await queueCounts(this.deps.sqs, s.onFailureUrl);
        streams[s.consumer] = {
          retries: s.source.stats.retries,
          onFailure: onFailure === undefined ? 0 : onFailure.visible + onFailure.inFlight + onFailure.delayed,
          iteratorAgeMs: s.source.stats.iteratorAgeMs,
          paused: !this.deps.isEnabled(s.source.spec.uuid),
        };
      }),
    );
    return {
      atMs,
      queues,
      streams,
      counters: this.deps.observer.snapshot(),
      degraded: await this.readDegraded(now),
      alarmsInAlarm: this.deps
        .alarmStates()
        .filter((a) => a.state === 'ALARM')
        .map((a) => a.name),
    };
  }

  /** The degrade flag, read at most every 5 s (it changes by hand, rarely). */
  private async readDegraded(now: number): Promise<boolean> {
    if (now - this.degradeReadAt < 5_000) return this.degraded;
    this.degradeReadAt = now;
    try {
      const { Parameter } = await this.deps.ssm.send(
        new GetParameterCommand({ Name: this.deps.degradeFlagName }),
      );
      const value = JSON.parse(Parameter?.Value ?? '{}') as { degraded?: unknown };
      this.degraded = value.degraded === true;
    } catch {
      // A missing or unreadable flag is "not degraded", as the functions read it.
      this.degraded = false;
    }
    return this.degraded;
  }
}
