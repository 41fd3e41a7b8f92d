/**
 * The incidents a scenario plays on any app's job types, built from their declaration alone (the
 * job types that get traffic from their `samplePayload`, lib/local/scenario-declared-jobs.ts):
 * one job delivered twice with the same idempotency key, a consumer crash right after a job's
 * effect, and a malformed message among valid ones. Each is judged by what holds for any job type
 * — one call per idempotency key at each declared provider's fake, the idempotency record
 * COMPLETED, the poison in the job type's DLQ with its error class — and the DLQ's alarm, which
 * the poison trips, by the alarm invariant.
 */
import {
  SendMessageBatchCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { LocalPlatform } from './platform';
import type { IncidentRecord } from './report-model';
import { counterOf, REPORT_METRIC } from './report-model';
import {
  declaredJobMessage,
  judgeDeclaredJob,
  type DeclaredJob,
  type DeclaredJobIds,
} from './scenario-declared-jobs';
import { pause, readVisibilityTimeout } from './scenario-queues';
import type { JobInvariantFacts, PoisonFact, RedeliveredJobFact } from './scenario-invariants';
import { OBSERVED_EVENT, type FunctionOutputObserver } from './scenario-observer';
import type { ScenarioJobType } from './scenario-targets';

/** What a scenario can inject into any app's job types. */
export type JobIncidentKind = 'duplicate-delivery' | 'crash-after-effect' | 'malformed-message';

/** One generic incident of a scenario's plan; the scenario plays it on the job types it fits. */
export interface JobIncidentSpec {
  readonly kind: JobIncidentKind;
  /** When, seconds after traffic starts. */
  readonly atSeconds: number;
  /**
   * crash-after-effect: while the crash is armed, lower the job type's visibility timeout to its
   * function timeout + 5 s (from the deployed 6×), so the crashed batch returns within a short
   * run; restored as soon as the crash happened. @default false
   */
  readonly shortenVisibility?: boolean;
}

/** An incident and the job type it is played on. */
export interface PlannedJobIncident {
  readonly spec: JobIncidentSpec;
  readonly jobType: ScenarioJobType;
}

/**
 * Which job types each incident is played on: a malformed message on every one; a duplicate on
 * every idempotent one (a job type that is not idempotent promises nothing of a second
 * delivery); the crash on one idempotent job type, the one whose crashed batch comes back soonest
 * (shortest function timeout; a standard queue before a FIFO one, whose crashed message holds
 * its group until it returns).
 */
export function planJobIncidents(
  specs: readonly JobIncidentSpec[],
  jobTypes: readonly ScenarioJobType[],
): PlannedJobIncident[] {
  const idempotent = jobTypes.filter((j) => j.declared.idempotent);
  const crashTarget = [...idempotent].sort(
    (a, b) => a.functionTimeoutSeconds - b.functionTimeoutSeconds || Number(a.fifo) - Number(b.fifo),
  )[0];
  return specs.flatMap((spec) => {
    const on =
      spec.kind === 'malformed-message'
        ? jobTypes
        : spec.kind === 'duplicate-delivery'
          ? idempotent
          : crashTarget === undefined
            ? []
            : [crashTarget];
    return on.map((jobType) => ({ spec, jobType }));
  });
}

/** What the generic incidents act on. */
export interface JobIncidentContext {
  readonly platform: Pick<LocalPlatform, 'crashInvocations' | 'providers'>;
  readonly sqs: SQSClient;
  readonly observer: FunctionOutputObserver;
  readonly runId: string;
  readonly elapsedMs: () => number;
  readonly signal: AbortSignal;
  readonly log: (line: string) => void;
  /** A malformed message was sent; the invariants look for it in the DLQ. */
  readonly recordPoison: (poison: PoisonFact) => void;
  /** Jobs put straight on a queue (they count as jobs in). */
  readonly recordInjected: (jobType: string, count: number) => void;
  /** A declared job the incident sent: judged with the traffic's (done exactly once). */
  readonly track: (job: DeclaredJob) => void;
  /** Marks the incident as in progress (live status) or over. */
  readonly setActive: (title: string, active: boolean) => void;
}

/**
 * An incident's outcome: its record now, when a crashed batch returns, and after the drain the
 * jobs it delivered more than once (for the invariants) and observations once the facts are in.
 */
export interface JobIncidentOutcome {
  readonly record: IncidentRecord;
  /** Ms after the traffic's start by which the batch a crash left in flight is back on the queue. */
  readonly returnsByMs?: number;
  /** The declared jobs it delivered more than once (read after the drain). */
  readonly redelivered?: () => RedeliveredJobFact[];
  readonly after?: (facts: JobInvariantFacts) => string[];
}

/** The incident's title: what it does, on which job type. */
export function jobIncidentTitle(kind: JobIncidentKind, jobType: string): string {
  switch (kind) {
    case 'duplicate-delivery':
      return `${jobType}: one job delivered twice`;
    case 'crash-after-effect':
      return `${jobType}: consumer crash right after a job's effect`;
    case 'malformed-message':
      return `${jobType}: a malformed message among valid ones`;
  }
}

/** Runs one incident; an injection that fails is recorded, not thrown (the run goes on). */
export async function runJobIncident(
  planned: PlannedJobIncident,
  ctx: JobIncidentContext,
): Promise<JobIncidentOutcome> {
  const title = jobIncidentTitle(planned.spec.kind, planned.jobType.name);
  const startMs = ctx.elapsedMs();
  ctx.setActive(title, true);
  ctx.log(`incident: ${title} begins`);
  const made = (how: string, observed: string[]): IncidentRecord => ({
    kind: planned.spec.kind,
    title,
    startMs,
    endMs: ctx.elapsedMs(),
    how,
    observed,
    injected: true,
  });
  try {
    const outcome = await INJECT[planned.spec.kind](planned, ctx, made);
    ctx.log(`incident: ${title} over: ${outcome.record.observed.join('; ')}`);
    return outcome;
  } catch (error) {
    ctx.log(`incident: ${title} could not be injected: ${(error as Error).message}`);
    return {
      record: {
        kind: planned.spec.kind,
        title,
        startMs,
        endMs: ctx.elapsedMs(),
        how: 'injection failed',
        observed: [],
        injected: false,
        error: (error as Error).message,
      },
    };
  } finally {
    ctx.setActive(title, false);
  }
}

type Injector = (
  planned: PlannedJobIncident,
  ctx: JobIncidentContext,
  record: (how: string, observed: string[]) => IncidentRecord,
) => Promise<JobIncidentOutcome>;

/** The ids of the incident's job `tag` of `jobType`: unique to the run, like the traffic's. */
function incidentJob(
  ctx: JobIncidentContext,
  jobType: ScenarioJobType,
  tag: string,
): DeclaredJob & DeclaredJobIds {
  return {
    jobType: jobType.name,
    idempotencyKey: `${ctx.runId}:${jobType.name}:${tag}`,
    correlationId: `${ctx.runId}-${jobType.consumer}-${tag}`,
    group: tag,
  };
}

/** What became of job `key` by the final facts: "done once (1 call(s) to reports, idempotency record COMPLETED)". */
export function jobOutcomeLine(facts: JobInvariantFacts, jobType: ScenarioJobType, key: string): string {
  const fact = facts.declaredJobs?.find((j) => j.idempotencyKey === key);
  if (fact === undefined) return `${key}: not read back`;
  const verdict = judgeDeclaredJob(
    fact,
    jobType.declared.resources.providers,
    facts.declaredCalls?.calls ?? [],
  );
  return `${key}: ${verdict.outcome === 'ok' ? 'done once' : verdict.outcome} (${verdict.detail})`;
}

function duplicatesIgnored(ctx: JobIncidentContext, jobType: ScenarioJobType): number {
  return counterOf(ctx.observer.snapshot(), jobType.consumer, REPORT_METRIC.duplicateIgnored);
}

/** One job sent twice to its queue with the same idempotency key (a FIFO queue: two deduplication ids). */
const duplicateDelivery: Injector = async ({ jobType }, ctx, record) => {
  const job = incidentJob(ctx, jobType, 'duplicate');
  const ignoredBefore = duplicatesIgnored(ctx, jobType);
  await ctx.sqs.send(
    new SendMessageBatchCommand({
      QueueUrl: jobType.queueUrl,
      Entries: ['a', 'b'].map((copy) => {
        const m = declaredJobMessage(jobType.declared, jobType.queueUrl, {
          ...job,
          deduplicationId: `${job.idempotencyKey}:${copy}`,
        });
        return {
          Id: copy,
          MessageBody: m.MessageBody,
          MessageGroupId: m.MessageGroupId,
          MessageDeduplicationId: m.MessageDeduplicationId,
        };
      }),
    }),
  );
  ctx.track(job);
  ctx.recordInjected(jobType.name, 2);
  return {
    redelivered: () => [{ jobType: jobType.name, idempotencyKey: job.idempotencyKey, how: 'duplicate' }],
    record: record(
      `SendMessageBatch: the same ${jobType.name} job (its samplePayload, one idempotency key) twice to its ${jobType.fifo ? 'FIFO queue with two deduplication ids' : 'queue'}`,
      [`sent 2 copies of ${job.idempotencyKey}`],
    ),
    after: (facts) => [
      `after the drain: ${jobOutcomeLine(facts, jobType, job.idempotencyKey)}`,
      `${jobType.consumer} DuplicateIgnored +${duplicatesIgnored(ctx, jobType) - ignoredBefore} since`,
    ],
  };
};

/**
 * The pollers re-read a queue's visibility timeout every 5 s (lib/local/sqs-event-source.ts), and
 * a batch received before that keeps the old timeout: the crash is armed once they all use the new one.
 */
const ARM_AFTER_VISIBILITY_CHANGE_MS = 6_500;
/** How long the armed crash waits for an invocation to reach its point. */
const CRASH_WAIT_MS = 30_000;
/**
 * The point the crash is armed at. defineJob's runner reaches `after-commit` for every idempotent
 * job: its effect is made and its idempotency record COMPLETED, the message not yet acknowledged.
 * (`after-side-effect` is reached only where a job's own code calls `ctx.crash` there.)
 */
const CRASH_POINT = 'after-commit';

/** A consumer crash right after a fresh job's effect: the batch returns after its visibility timeout. */
const crashAfterEffect: Injector = async ({ spec, jobType }, ctx, record) => {
  const deployedVisibility = await readVisibilityTimeout(ctx.sqs, jobType.queueUrl);
  const shortened = jobType.functionTimeoutSeconds + 5;
  const setVisibility = (seconds: number): Promise<unknown> =>
    ctx.sqs.send(
      new SetQueueAttributesCommand({
        QueueUrl: jobType.queueUrl,
        Attributes: { VisibilityTimeout: String(seconds) },
      }),
    );
  if (spec.shortenVisibility === true) {
    await setVisibility(shortened);
    await pause(ARM_AFTER_VISIBILITY_CHANGE_MS, ctx.signal);
  }
  const job = incidentJob(ctx, jobType, 'crash');
  let crashedAtMs: number | undefined;
  let crashedAt = 0;
  // Invocations running side by side when the first reaches the point keep their arming: count them all.
  let crashes = 0;
  const onCrash = new Promise<void>((resolve) =>
    ctx.observer.onEvent((e) => {
      if (e.key !== OBSERVED_EVENT.crash || e.functionName !== jobType.functionName) return;
      crashes += 1;
      if (crashedAtMs !== undefined) return;
      crashedAtMs = ctx.elapsedMs();
      crashedAt = Date.now();
      resolve();
    }),
  );
  try {
    // Every invocation is armed until one reaches the point (one taking only a malformed message
    // never does); the fresh job gives the next one something to complete.
    ctx.platform.crashInvocations(jobType.functionName, [CRASH_POINT], 1, { untilReached: true });
    await ctx.sqs.send(new SendMessageCommand(declaredJobMessage(jobType.declared, jobType.queueUrl, job)));
    ctx.track(job);
    ctx.recordInjected(jobType.name, 1);
    // The wait ends at the crash, at its limit, or when the run is interrupted (no timer left behind).
    const waiting = new AbortController();
    const stopWaiting = (): void => waiting.abort();
    ctx.signal.addEventListener('abort', stopWaiting, { once: true });
    void onCrash.then(stopWaiting);
    await pause(CRASH_WAIT_MS, waiting.signal);
    ctx.signal.removeEventListener('abort', stopWaiting);
  } finally {
    ctx.platform.crashInvocations(jobType.functionName, [], 0);
    if (spec.shortenVisibility === true) await setVisibility(deployedVisibility);
  }
  if (crashedAtMs === undefined)
    throw new Error(`the armed crash never fired (no ${jobType.name} job reached ${CRASH_POINT})`);
  const visibility = spec.shortenVisibility === true ? shortened : deployedVisibility;
  // The job that completed when the process died: its redelivery finds its record COMPLETED and
  // is ignored as a duplicate (the batch's other jobs had not completed: they run again). The
  // duplicate incident's job is ignored as a duplicate for its own reason.
  const crashed = (): string[] => [
    ...new Set(
      ctx.observer
        .ignoredDuplicates(jobType.functionName)
        .filter((d) => d.at >= crashedAt && !d.idempotencyKey.endsWith(':duplicate'))
        .map((d) => d.idempotencyKey),
    ),
  ];
  const shortenedNote =
    spec.shortenVisibility === true
      ? `; the queue's visibility timeout was ${shortened} s (function timeout + 5 s) while armed, ${deployedVisibility} s as deployed`
      : '';
  return {
    record: record(
      `platform.crashInvocations(${jobType.consumer}, ['${CRASH_POINT}'], until reached): the process is SIGKILLed right after a job's effect and its idempotency record committed, before the message is acknowledged; a fresh ${jobType.name} job (${job.idempotencyKey}) sent once armed${shortenedNote}`,
      [
        `crashed at ${(crashedAtMs / 1000).toFixed(1)} s; the batch returns after the ${visibility} s visibility timeout`,
      ],
    ),
    returnsByMs: crashedAtMs + visibility * 1000,
    redelivered: () =>
      crashed().map((idempotencyKey) => ({ jobType: jobType.name, idempotencyKey, how: 'crash' as const })),
    after: (facts) => {
      const keys = crashed();
      return [
        ...(crashes > 1 ? [`${crashes} invocations running side by side were armed and crashed`] : []),
        ...(keys.length === 0
          ? [
              'no job of the crashed batch was found done on its redelivery (no duplicate_ignored since the crash)',
            ]
          : keys.map((key) => `redelivered, found done: ${jobOutcomeLine(facts, jobType, key)}`)),
      ];
    },
  };
};

/** A malformed message (an envelope without payload or idempotency key) sent between two valid jobs. */
const malformedMessage: Injector = async ({ jobType }, ctx, record) => {
  const mates = [1, 2].map((n) => incidentJob(ctx, jobType, `batch-mate-${n}`));
  const messages = mates.map((j) => declaredJobMessage(jobType.declared, jobType.queueUrl, j));
  const body = JSON.stringify({
    type: jobType.name,
    version: 1,
    poison: ctx.runId,
    note: 'no payload, no idempotency key',
  });
  // On a FIFO queue the poison sits in its batch-mates' group: they must not wait behind it.
  const group = messages[0]?.MessageGroupId;
  const entries = [
    { Id: 'mate1', message: messages[0] },
    {
      Id: 'poison',
      message: {
        MessageBody: body,
        ...(jobType.fifo
          ? { MessageGroupId: group ?? `poison-${ctx.runId}`, MessageDeduplicationId: `poison-${ctx.runId}` }
          : {}),
      },
    },
    { Id: 'mate2', message: messages[1] },
  ];
  await ctx.sqs.send(
    new SendMessageBatchCommand({
      QueueUrl: jobType.queueUrl,
      Entries: entries.map(({ Id, message }) => ({
        Id,
        MessageBody: message?.MessageBody,
        MessageGroupId: message?.MessageGroupId,
        MessageDeduplicationId: message?.MessageDeduplicationId,
      })),
    }),
  );
  for (const mate of mates) ctx.track(mate);
  ctx.recordPoison({ jobType: jobType.name, body });
  ctx.recordInjected(jobType.name, 3);
  return {
    record: record(
      `SendMessageBatch to the ${jobType.name} queue: an envelope of its type without payload or idempotency key, between two valid jobs (its samplePayload)`,
      ['sent 1 malformed message and 2 valid batch-mates'],
    ),
    after: (facts) => {
      const found = facts.dlq.find((e) => e.source === jobType.name && body.startsWith(e.body));
      return [
        found === undefined
          ? 'the malformed message is not in the DLQ'
          : `the malformed message dead-lettered as ${found.errorClass} (${found.errorKind ?? 'no kind'}) after ${found.attempts ?? '?'} attempt(s)`,
        ...mates.map((m) => `batch-mate ${jobOutcomeLine(facts, jobType, m.idempotencyKey)}`),
      ];
    },
  };
};

const INJECT: Readonly<Record<JobIncidentKind, Injector>> = {
  'duplicate-delivery': duplicateDelivery,
  'crash-after-effect': crashAfterEffect,
  'malformed-message': malformedMessage,
};
