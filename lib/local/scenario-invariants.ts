/**
 * The invariants a scenario checks once the pipeline has drained, over facts read from the
 * sources of truth (the providers' recording fakes, the idempotency records, the DLQs, the
 * alarm deliveries) rather than from what the pipeline says about itself. Pure: the facts come
 * in, verdicts go out. These hold for any app (checkJobInvariants: dead letters, drained queues,
 * alarms reaching a person, each job of the app's own job types done exactly once); an app's
 * scenario flow judges its own domain on top (lib/local/scenario-flow.ts ScenarioFlowRun.judge).
 */
import type { DenialRecord } from './iam/authorizer';
import type { DlqEntry, InvariantResult } from './report-model';
import { judgeDeclaredJob, type DeclaredJobFact, type ProviderCall } from './scenario-declared-jobs';

/** A message the scenario put straight on a queue, malformed on purpose. */
export interface PoisonFact {
  readonly jobType: string;
  readonly body: string;
}

/** The side effects the declared providers' fakes recorded, and which providers each job type calls. */
export interface DeclaredCallFacts {
  /** Each declared job type's `resources.providers`, by job type name. */
  readonly providersOf: Readonly<Record<string, readonly string[]>>;
  readonly calls: readonly ProviderCall[];
}

/** A job an incident delivered more than once: twice on purpose, or again after its consumer crashed. */
export interface RedeliveredJobFact {
  readonly jobType: string;
  readonly idempotencyKey: string;
  readonly how: 'duplicate' | 'crash';
}

/** What the invariants that hold for any app read. */
export interface JobInvariantFacts {
  /** Dead letters of this run. */
  readonly dlq: readonly DlqEntry[];
  readonly poison: readonly PoisonFact[];
  /** Messages visible, delayed or in flight per job type when the run ended. */
  readonly leftInQueues: Readonly<Record<string, number>>;
  /**
   * CloudWatch's part: how many alarm transitions owed their actions, and what became of each
   * notification the platform published to the alarm topic as cloudwatch.amazonaws.com.
   */
  readonly alarmNotifications: {
    readonly owed: number;
    readonly deliveries: readonly {
      readonly alarm: string;
      readonly target: string;
      readonly outcome: 'delivered' | 'failed';
      readonly error?: string;
      /** Who SNS delivered a published notification to, and the subscriptions still pending. */
      readonly fanOut?: {
        readonly subscribers: readonly { readonly endpoint: string; readonly outcome: string }[];
        readonly pending: readonly string[];
      };
    }[];
  };
  /**
   * Jobs the scenario sent for the app's own job types (lib/local/scenario-declared-jobs.ts) and
   * what became of each. @default none
   */
  readonly declaredJobs?: readonly DeclaredJobFact[];
  /**
   * The declared providers' calls: with them, each declared job is judged done exactly once
   * (declaredJobsDoneOnce). @default - not judged (the invariant is absent)
   */
  readonly declaredCalls?: DeclaredCallFacts;
  /** Declared jobs the generic incidents delivered more than once. @default none */
  readonly redelivered?: readonly RedeliveredJobFact[];
  /**
   * Requests the platform's IAM denied during the run (each function acts with its deployed
   * execution role). @default - IAM not enforced (TENANG_IAM=off): not judged
   */
  readonly iamDenials?: readonly Pick<DenialRecord, 'caller' | 'action' | 'resource'>[];
}

/** Violations listed per invariant; the rest are counted. */
export const VIOLATIONS_LISTED = 20;

/** An invariant's verdict: it holds without violations; the first VIOLATIONS_LISTED are listed. */
export function verdict(name: string, detail: string, violations: readonly string[]): InvariantResult {
  const listed = violations.slice(0, VIOLATIONS_LISTED);
  if (violations.length > VIOLATIONS_LISTED)
    listed.push(`… and ${violations.length - VIOLATIONS_LISTED} more`);
  return { name, holds: violations.length === 0, detail, violations: listed };
}

/** Every poison message reached its DLQ as a permanent error. */
export function poisonDeadLettered(facts: Pick<JobInvariantFacts, 'poison' | 'dlq'>): InvariantResult {
  const violations = facts.poison.flatMap((p) => {
    const found = facts.dlq.find((e) => e.source === p.jobType && e.body === p.body.slice(0, e.body.length));
    if (found === undefined) return [`${p.jobType}: poison message not in the DLQ`];
    return found.errorKind === 'permanent'
      ? []
      : [
          `${p.jobType}: dead-lettered as ${found.errorClass} (${found.errorKind ?? 'no kind'}), not as permanent`,
        ];
  });
  return verdict(
    'poison messages dead-lettered at once as permanent errors',
    `${facts.poison.length} poison messages`,
    violations,
  );
}

/** Nothing stuck: every queue drained. */
export function queuesDrained(facts: Pick<JobInvariantFacts, 'leftInQueues'>): InvariantResult {
  const violations = Object.entries(facts.leftInQueues)
    .filter(([, n]) => n > 0)
    .map(([jobType, n]) => `${jobType}: ${n} message(s) still queued or in flight`);
  return verdict(
    'nothing stuck: every queue drained',
    Object.keys(facts.leftInQueues).join(', '),
    violations,
  );
}

/**
 * Every alarm notification reached a person: CloudWatch (the platform, as
 * cloudwatch.amazonaws.com, judged by the topic and key policies) published each one, and SNS
 * handed each published one to at least one confirmed subscriber. A topic whose policy lets no
 * alarm publish pages nobody, and shows it only in the alarm history; a topic with no confirmed
 * subscriber takes every publish and tells no one.
 */
export function alarmsNotified(facts: Pick<JobInvariantFacts, 'alarmNotifications'>): InvariantResult {
  const { owed, deliveries } = facts.alarmNotifications;
  const failed = deliveries.filter((d) => d.outcome === 'failed');
  const violations = failed.map((d) => `${d.alarm} → ${d.target}: ${d.error ?? 'failed'}`);
  if (owed > 0 && deliveries.length === 0)
    violations.push(`${owed} alarm transition(s) owed notifications, but none was published`);
  const published = deliveries.filter((d) => d.outcome === 'delivered');
  const unread = published.filter((d) => !(d.fanOut?.subscribers ?? []).some((s) => s.outcome !== 'failed'));
  for (const d of unread) {
    const tried = (d.fanOut?.subscribers ?? []).map((s) => `${s.endpoint} failed`);
    const pending = (d.fanOut?.pending ?? []).map((p) => `${p} pending confirmation`);
    const why =
      d.fanOut === undefined
        ? 'who it reached is unknown'
        : [...tried, ...pending].join(', ') || 'the topic has no subscriber';
    violations.push(`${d.alarm} → ${d.target}: published, but no confirmed subscriber received it (${why})`);
  }
  return verdict(
    'every alarm notification reached its topic (CloudWatch may publish to it) and a confirmed subscriber',
    `${owed} transitions with actions, ${published.length} of ${deliveries.length} notifications published, ${published.length - unread.length} received by a subscriber`,
    violations,
  );
}

/** Every job sent for a declared job type that is idempotent left its completed record: it ran. */
export function everyDeclaredJobDone(facts: Pick<JobInvariantFacts, 'declaredJobs'>): InvariantResult {
  const jobs = facts.declaredJobs ?? [];
  const judged = jobs.filter((j) => j.done !== undefined);
  const violations = judged
    .filter((j) => j.done !== true)
    .map((j) => `${j.jobType} ${j.idempotencyKey}: no completed idempotency record`);
  const types = [...new Set(jobs.map((j) => j.jobType))];
  return verdict(
    "every job of the app's own job types ran (its idempotency record completed)",
    types.length === 0
      ? 'no job type of the app got jobs from its samplePayload'
      : `${judged.length} of ${jobs.length} jobs judged (${types.join(', ')})`,
    violations,
  );
}

/**
 * Every job sent for the app's own job types was done exactly once, the ones an incident delivered
 * twice or again after a crash included: one call per idempotency key at each of its job type's
 * providers (their recording fakes), and (idempotent job types) its idempotency record COMPLETED.
 */
export function declaredJobsDoneOnce(
  facts: Pick<JobInvariantFacts, 'declaredJobs' | 'declaredCalls' | 'redelivered'>,
): InvariantResult {
  const jobs = facts.declaredJobs ?? [];
  const { providersOf = {}, calls = [] } = facts.declaredCalls ?? {};
  const violations = jobs.flatMap((j) => {
    const v = judgeDeclaredJob(j, providersOf[j.jobType] ?? [], calls);
    return v.outcome === 'ok' ? [] : [`${j.jobType} ${j.idempotencyKey}: ${v.outcome} (${v.detail})`];
  });
  const redelivered = facts.redelivered ?? [];
  for (const r of redelivered)
    if (!jobs.some((j) => j.idempotencyKey === r.idempotencyKey))
      violations.push(`${r.jobType} ${r.idempotencyKey} (${r.how}): not among the jobs read back`);
  const types = [...new Set(jobs.map((j) => j.jobType))];
  const count = (how: RedeliveredJobFact['how']): number => redelivered.filter((r) => r.how === how).length;
  return verdict(
    "every job of the app's own job types done exactly once, delivered twice or redelivered after a crash too (one call per idempotency key at each provider)",
    `${jobs.length} jobs (${types.join(', ') || 'none'}); ${count('duplicate')} delivered twice, ${count('crash')} redelivered after a crash`,
    violations,
  );
}

/**
 * No request was denied by the deployed IAM policies. No incident of a scenario takes a permission
 * away, so a denial is a grant the app's code needs and its template lacks: on AWS the same call
 * fails the same way, and a retried or logged-and-skipped failure (a confirm, a release) would
 * pass every other invariant while the deployed function keeps failing it.
 */
export function noRequestDenied(facts: Pick<JobInvariantFacts, 'iamDenials'>): InvariantResult {
  const name = 'no request denied by the deployed IAM policies';
  if (facts.iamDenials === undefined) return verdict(name, 'IAM not enforced (TENANG_IAM=off)', []);
  const counts = new Map<string, number>();
  for (const d of facts.iamDenials) {
    const key = `${d.caller} ${d.action} ${d.resource}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const violations = [...counts].map(([key, n]) => `${key}: denied ${n} time(s)`);
  return verdict(name, `${facts.iamDenials.length} denied`, violations);
}

/** The invariants that hold for any app, in report order (declaredJobsDoneOnce when its facts are in). */
export function checkJobInvariants(facts: JobInvariantFacts): InvariantResult[] {
  return [
    poisonDeadLettered(facts),
    queuesDrained(facts),
    alarmsNotified(facts),
    everyDeclaredJobDone(facts),
    ...(facts.declaredCalls === undefined ? [] : [declaredJobsDoneOnce(facts)]),
    noRequestDenied(facts),
  ];
}
