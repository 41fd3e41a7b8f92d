/**
 * Consumer processes that died during a run without a planned crash: an operator's `kill -9` of
 * a function process during `npm start`, the OOM killer, an instance killed at its timeout. Like
 * the Lambda service, the platform then leaves the invocation's whole batch in flight until the
 * queue's visibility timeout runs out (lib/local/sqs-event-source.ts), so before the scenario
 * judges "nothing stuck" it waits for that batch to come back and be done, up to the visibility
 * timeout after the death plus a poll, and reports the wait.
 *
 * What it reads: the SQS pollers' line for an invocation that did not return ("<function>:
 * crash|timeout|init-error: <type>: <message>", the platform's log) and the crash hook's line
 * for a planned crash or hang ("[tenang] injected crash at <point>", the function's output).
 * Per function, the deaths beyond the planned ones are unplanned; the latest death is the one
 * whose batch comes back last.
 */
import { INJECTED_POINT_LINE } from '../adapters/crash';
import type { IncidentRecord, PipelineSample } from './report-model';

/** How a poller reports an invocation whose execution environment ended (InvokeResult.status). */
const DEATH_LINE = /^(\S+): (crash|timeout|init-error): ([^:]+): (.*)$/;

/**
 * After the visibility timeout, the time until the batch is seen again: one long poll of the
 * pollers (1 s) and one sample of the queues (1 s).
 */
export const REDELIVERY_POLL_MS = 2_000;

/** The report's incident kind for an unplanned death. */
export const UNPLANNED_DEATH_KIND = 'unplanned-process-death';

/** One invocation whose process ended, as its poller reported it. */
export interface ProcessDeath {
  readonly functionName: string;
  readonly status: 'crash' | 'timeout' | 'init-error';
  /** e.g. "the execution environment exited (SIGKILL)". */
  readonly reason: string;
  /** Epoch ms when the poller got the result. */
  readonly at: number;
}

/** A function's deaths beyond its planned crashes. */
export interface UnplannedDeaths {
  readonly functionName: string;
  readonly count: number;
  /** The latest death (planned or not: which one was unplanned the lines do not tell). */
  readonly last: ProcessDeath;
}

/** Watches the platform's log and the functions' output for process deaths. */
export class ProcessDeathWatch {
  private readonly deaths = new Map<string, ProcessDeath[]>();
  private readonly planned = new Map<string, number>();

  public constructor(private readonly now: () => number = Date.now) {}

  /** The platform log's tap. */
  public readonly onPlatformLine = (line: string): void => {
    const m = DEATH_LINE.exec(line);
    if (m === null) return;
    const [, functionName = '', status, , reason = ''] = m;
    const death: ProcessDeath = {
      functionName,
      status: status as ProcessDeath['status'],
      reason,
      at: this.now(),
    };
    this.deaths.set(functionName, [...(this.deaths.get(functionName) ?? []), death]);
  };

  /** The function output's tap: a planned crash or hang announces itself before the process dies. */
  public readonly onFunctionLine = (line: string, functionName: string): void => {
    if (INJECTED_POINT_LINE.test(line))
      this.planned.set(functionName, (this.planned.get(functionName) ?? 0) + 1);
  };

  /** Every death of `functionName` so far, planned or not. */
  public deathsOf(functionName: string): readonly ProcessDeath[] {
    return this.deaths.get(functionName) ?? [];
  }

  /** The functions among `functionNames` that died more often than planned, now. */
  public unplanned(functionNames: Iterable<string>): UnplannedDeaths[] {
    const found: UnplannedDeaths[] = [];
    for (const functionName of functionNames) {
      const deaths = this.deathsOf(functionName);
      const count = deaths.length - (this.planned.get(functionName) ?? 0);
      const last = deaths[deaths.length - 1];
      if (count > 0 && last !== undefined) found.push({ functionName, count, last });
    }
    return found;
  }
}

/** A queue consumer the scenario may wait for. */
export interface WaitedConsumer {
  /** The consumer's name in the config, e.g. `payment-consumer`. */
  readonly consumer: string;
  readonly functionName: string;
  readonly jobType: string;
  /** The queue's visibility timeout, s. */
  readonly visibilityTimeoutSeconds: number;
}

/** The scenario's wait for one consumer's in-flight batch after an unplanned death. */
export interface RedeliveryWaitRecord {
  readonly consumer: string;
  readonly functionName: string;
  readonly jobType: string;
  /** Unplanned deaths of the consumer's processes during the run. */
  readonly deaths: number;
  readonly lastDeath: ProcessDeath;
  readonly visibilityTimeoutSeconds: number;
  /** Epoch ms: the latest death + the visibility timeout + REDELIVERY_POLL_MS. */
  readonly returnsBy: number;
  /** Epoch ms when nothing of the job type was in flight any more, after the drain began and the death. */
  readonly clearedAt: number | undefined;
  /** How long the drain waited for it: from the drain's start until it cleared (or until the drain ended). */
  readonly waitedMs: number;
}

/**
 * Waits, during the drain, for the in-flight batches of consumers whose process died
 * unexpectedly: deadline() says until when the drain must keep going for them, observe() marks
 * each cleared once its queue has nothing in flight.
 */
export class RedeliveryWait {
  private readonly state = new Map<string, { last: ProcessDeath; count: number; clearedAt?: number }>();
  private endedAt: number | undefined;

  public constructor(
    private readonly watch: ProcessDeathWatch,
    private readonly consumers: readonly WaitedConsumer[],
    private readonly drainStart: number,
    private readonly log: (line: string) => void,
    /** Epoch ms of the traffic's start, for the "at … s" of messages. */
    private readonly runStart: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes up deaths seen since the last call (announcing each); returns the latest time a batch returns by. */
  public returnsBy(): number {
    const byFunction = new Map(this.consumers.map((c) => [c.functionName, c]));
    for (const u of this.watch.unplanned(byFunction.keys())) {
      const known = this.state.get(u.functionName);
      if (known !== undefined && known.last === u.last) continue;
      const consumer = byFunction.get(u.functionName);
      if (consumer === undefined) continue;
      // A newer death: its batch is in flight again, whatever was cleared before.
      this.state.set(u.functionName, { last: u.last, count: u.count });
      this.log(
        `${consumer.consumer}: ${u.count === 1 ? 'a process' : `${u.count} processes`} died without a planned crash (last at ${this.seconds(u.last.at)} s, ${u.last.status}: ${u.last.reason}); its batch stays in flight for the ${consumer.visibilityTimeoutSeconds} s visibility timeout of ${consumer.jobType}: waiting for it until ${this.seconds(this.returnsAt(u.functionName))} s before judging`,
      );
    }
    return Math.max(0, ...[...this.state.keys()].map((fn) => this.returnsAt(fn)));
  }

  /** Marks consumers whose queue has nothing in flight any more. */
  public observe(sample: PipelineSample | undefined): void {
    if (sample === undefined) return;
    const at = this.now();
    for (const c of this.consumers) {
      const s = this.state.get(c.functionName);
      if (s === undefined || s.clearedAt !== undefined) continue;
      const q = sample.queues[c.jobType];
      if (q !== undefined && q.inFlight === 0 && at >= Math.max(this.drainStart, s.last.at)) s.clearedAt = at;
    }
  }

  /** Ends the wait: one line per consumer waited for, and what it came to. */
  public finish(): RedeliveryWaitRecord[] {
    this.endedAt ??= this.now();
    const ended = this.endedAt;
    return [...this.state].flatMap(([functionName, s]) => {
      const c = this.consumers.find((x) => x.functionName === functionName);
      if (c === undefined) return [];
      const record: RedeliveryWaitRecord = {
        consumer: c.consumer,
        functionName,
        jobType: c.jobType,
        deaths: s.count,
        lastDeath: s.last,
        visibilityTimeoutSeconds: c.visibilityTimeoutSeconds,
        returnsBy: this.returnsAt(functionName),
        clearedAt: s.clearedAt,
        waitedMs: Math.max(0, (s.clearedAt ?? ended) - this.drainStart),
      };
      this.log(waitLine(record));
      return [record];
    });
  }

  private returnsAt(functionName: string): number {
    const s = this.state.get(functionName);
    const c = this.consumers.find((x) => x.functionName === functionName);
    if (s === undefined || c === undefined) return 0;
    return s.last.at + c.visibilityTimeoutSeconds * 1000 + REDELIVERY_POLL_MS;
  }

  private seconds(at: number): string {
    return ((at - this.runStart) / 1000).toFixed(1);
  }
}

/** The sentence that reports one wait. */
export function waitLine(r: RedeliveryWaitRecord): string {
  const waited = `${(r.waitedMs / 1000).toFixed(1)} s`;
  return r.clearedAt !== undefined
    ? `waited ${waited} for ${r.jobType}'s in-flight batch after ${r.consumer}'s unplanned death: redelivered and done before judging`
    : `waited ${waited} for ${r.jobType}'s in-flight batch after ${r.consumer}'s unplanned death: still in flight when the drain ended`;
}

/** The report's incident record of one wait (not injected by the scenario: it happened to it). */
export function redeliveryIncident(r: RedeliveryWaitRecord, runStart: number): IncidentRecord {
  const at = (ms: number): string => `${((ms - runStart) / 1000).toFixed(1)} s`;
  return {
    kind: UNPLANNED_DEATH_KIND,
    title: `${r.consumer} process died (not planned)`,
    startMs: r.lastDeath.at - runStart,
    endMs: (r.clearedAt ?? r.returnsBy) - runStart,
    how: 'not injected by the scenario: a function process ended without its crash hook (an operator’s kill -9, the OOM killer, a timeout); the batch it held stays in flight until the visibility timeout',
    observed: [
      `${r.deaths} unplanned death(s), the last at ${at(r.lastDeath.at)}: ${r.lastDeath.status}: ${r.lastDeath.reason}`,
      `${r.jobType} visibility timeout ${r.visibilityTimeoutSeconds} s: the batch was due back by ${at(r.returnsBy)}`,
      waitLine(r),
    ],
    injected: true,
  };
}
