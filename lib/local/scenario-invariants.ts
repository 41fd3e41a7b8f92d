/**
 * The invariants a scenario checks once the pipeline has drained, over facts read from the
 * sources of truth (the providers' ledgers, the orders and inventory tables, the idempotency
 * records, the DLQs) rather than from what the pipeline says about itself. Pure: the facts come
 * in, verdicts go out. Two sets: what holds for any app (checkJobInvariants: dead letters,
 * drained queues, alarms reaching a person, each job of the app's own job types done exactly
 * once), and the reference's order flow's on top (checkInvariants: charges, PAID orders, their
 * notifications and reservations, stock, the orders stream), which a pipeline without the order
 * flow does not get at all.
 */
import { notificationKey } from '../../examples/reference/domain/notification';
import { paymentCaptureKey } from '../../examples/reference/domain/payment';
import type { DlqEntry, InvariantResult } from './report-model';
import type { AcceptedPayment } from './traffic';
import { judgeDeclaredJob, type DeclaredJobFact, type ProviderCall } from './scenario-declared-jobs';

/** One side effect in a provider's ledger (lib/local/fake-provider.ts LedgerEntry). */
export interface LedgerFact {
  readonly idempotencyKey: string;
}

/** A SKU's stock at the end, and what was seeded. */
export interface StockFact {
  readonly seeded: number;
  readonly available: number;
  /** Reserved quantity by order id. */
  readonly reservations: Readonly<Record<string, number>>;
}

/** A message the scenario put straight on a queue, malformed on purpose. */
export interface PoisonFact {
  readonly jobType: string;
  readonly body: string;
}

/** One record of the orders table's stream, read back at the end. */
export interface StreamRecordFact {
  /** Numeric string. */
  readonly sequence: string;
  readonly eventName: string;
  /** ISO-8601. */
  readonly at: string;
  readonly orderId?: string;
}

/** A stream consumer and the highest sequence number it logged having received. */
export interface StreamConsumerFact {
  readonly consumer: string;
  /** Undefined when it logged none. */
  readonly highestSeen: bigint | undefined;
}

/** Job type names as the facts use them. */
export interface InvariantJobTypes {
  readonly payment: string;
  readonly notification: string;
  readonly inventory: string;
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
}

/** What the order flow's invariants read besides. */
export interface OrderFlowFacts {
  readonly jobTypes: InvariantJobTypes;
  readonly accepted: readonly AcceptedPayment[];
  readonly charges: readonly LedgerFact[];
  readonly messages: readonly LedgerFact[];
  /** Order state by order id; an order not found is absent. */
  readonly orderStates: ReadonlyMap<string, string>;
  /** By SKU, for the SKUs the scenario seeded. */
  readonly stock: ReadonlyMap<string, StockFact>;
  /** The orders stream read back, and what its consumers saw. */
  readonly stream: {
    readonly records: readonly StreamRecordFact[];
    /** Consumers that log every record they receive (the cache invalidator does). */
    readonly consumers: readonly StreamConsumerFact[];
  };
}

/** Everything the invariants of a pipeline with the order flow read. */
export interface InvariantFacts extends JobInvariantFacts, OrderFlowFacts {}

/** Order states that mean the payment was captured (PAID or only reachable after it). */
export const PAID_STATES: readonly string[] = ['PAID', 'RESERVED'];

/** The notification template the outbox sends when an order is paid (lib/core/outbox.ts). */
const PAID_TEMPLATE = 'order-paid';

/** Violations listed per invariant; the rest are counted. */
export const VIOLATIONS_LISTED = 20;

function verdict(name: string, detail: string, violations: readonly string[]): InvariantResult {
  const listed = violations.slice(0, VIOLATIONS_LISTED);
  if (violations.length > VIOLATIONS_LISTED)
    listed.push(`… and ${violations.length - VIOLATIONS_LISTED} more`);
  return { name, holds: violations.length === 0, detail, violations: listed };
}

function countBy<T>(items: readonly T[], key: (item: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return counts;
}

/** Accepted payments with one entry per payment id (a payment accepted twice is one payment). */
function distinctPayments(accepted: readonly AcceptedPayment[]): AcceptedPayment[] {
  const byId = new Map<string, AcceptedPayment>();
  for (const p of accepted) if (!byId.has(p.paymentId)) byId.set(p.paymentId, p);
  return [...byId.values()];
}

/** Exactly one charge per accepted payment key, and no charge nobody accepted. */
export function exactlyOneChargePerKey(facts: InvariantFacts): InvariantResult {
  const payments = distinctPayments(facts.accepted);
  const expected = new Set(payments.map((p) => paymentCaptureKey(p.paymentId)));
  const charged = countBy(facts.charges, (c) => c.idempotencyKey);
  const violations: string[] = [];
  for (const key of expected) {
    const n = charged.get(key) ?? 0;
    if (n !== 1) violations.push(`${key}: charged ${n} times`);
  }
  for (const [key, n] of charged) {
    if (!expected.has(key))
      violations.push(`${key}: charged ${n} time(s) but no payment with this key was accepted`);
  }
  return verdict(
    'exactly one charge per payment key (provider ledger)',
    `${expected.size} accepted payment keys, ${facts.charges.length} charges`,
    violations,
  );
}

/** Every accepted payment's order ends PAID. */
export function everyAcceptedPaymentPaid(facts: InvariantFacts): InvariantResult {
  const payments = distinctPayments(facts.accepted);
  const violations = payments.flatMap((p) => {
    const state = facts.orderStates.get(p.orderId);
    return state !== undefined && PAID_STATES.includes(state)
      ? []
      : [`order ${p.orderId} (payment ${p.paymentId}, via ${p.via}) is ${state ?? 'missing'}`];
  });
  return verdict('every accepted payment ends PAID', `${payments.length} accepted payments`, violations);
}

/** Paid orders among the accepted ones, once each. */
function paidOrders(facts: InvariantFacts): AcceptedPayment[] {
  const byOrder = new Map<string, AcceptedPayment>();
  for (const p of facts.accepted) {
    const state = facts.orderStates.get(p.orderId);
    if (state !== undefined && PAID_STATES.includes(state) && !byOrder.has(p.orderId))
      byOrder.set(p.orderId, p);
  }
  return [...byOrder.values()];
}

/** Every PAID order got its notification, or its notification job is in the DLQ. */
export function everyPaidOrderNotified(facts: InvariantFacts): InvariantResult {
  const sent = new Set(facts.messages.map((m) => m.idempotencyKey));
  const dead = new Set(
    facts.dlq.filter((e) => e.source === facts.jobTypes.notification).map((e) => e.orderId ?? ''),
  );
  let explained = 0;
  const orders = paidOrders(facts);
  const violations = orders.flatMap((p) => {
    if (sent.has(notificationKey(p.orderId, PAID_TEMPLATE))) return [];
    if (dead.has(p.orderId)) {
      explained += 1;
      return [];
    }
    return [`order ${p.orderId}: no notification sent and none in the DLQ`];
  });
  return verdict(
    'every PAID order got its notification or a DLQ entry explaining why',
    `${orders.length} paid orders, ${explained} explained by a DLQ entry`,
    violations,
  );
}

/** No notification key was sent twice. */
export function noNotificationTwice(facts: InvariantFacts): InvariantResult {
  const violations = [...countBy(facts.messages, (m) => m.idempotencyKey)]
    .filter(([, n]) => n > 1)
    .map(([key, n]) => `${key}: sent ${n} times`);
  return verdict(
    'no notification sent twice (messaging ledger)',
    `${facts.messages.length} messages`,
    violations,
  );
}

/** Every PAID order holds a reservation per line, or the line's job is in the DLQ. */
export function everyPaidOrderReserved(facts: InvariantFacts): InvariantResult {
  const dead = new Set(
    facts.dlq
      .filter((e) => e.source === facts.jobTypes.inventory)
      .map((e) => `${e.orderId ?? ''}|${e.sku ?? ''}`),
  );
  let lines = 0;
  let explained = 0;
  const orders = paidOrders(facts);
  const violations = orders.flatMap((p) =>
    p.lines.flatMap((line) => {
      lines += 1;
      if (facts.stock.get(line.sku)?.reservations[p.orderId] !== undefined) return [];
      if (dead.has(`${p.orderId}|${line.sku}`)) {
        explained += 1;
        return [];
      }
      return [`order ${p.orderId}: no reservation of ${line.sku} and none in the DLQ`];
    }),
  );
  return verdict(
    'every PAID order got its reservations or a DLQ entry explaining why',
    `${orders.length} paid orders, ${lines} lines, ${explained} explained by a DLQ entry`,
    violations,
  );
}

/** Stock is conserved: what left `available` is exactly what the reservations hold. */
export function stockConserved(facts: InvariantFacts): InvariantResult {
  const violations: string[] = [];
  for (const [sku, s] of facts.stock) {
    const reserved = Object.values(s.reservations).reduce((a, b) => a + b, 0);
    if (s.seeded - s.available !== reserved) {
      violations.push(`${sku}: seeded ${s.seeded}, available ${s.available}, reservations hold ${reserved}`);
    }
  }
  return verdict('stock conserved (no double decrement)', `${facts.stock.size} SKUs`, violations);
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
 * Every record of the orders stream reached the stream consumers: none has a sequence number
 * above the highest one each consumer logged. A change that never reaches them is a follow-up
 * never relayed and a cache key never invalidated.
 */
export function streamFullyDelivered(facts: Pick<OrderFlowFacts, 'stream'>): InvariantResult {
  const violations = facts.stream.consumers.flatMap((c) => {
    const missed = facts.stream.records.filter(
      (r) => c.highestSeen === undefined || BigInt(r.sequence) > c.highestSeen,
    );
    const first = missed[0];
    if (first === undefined) return [];
    return [
      `${c.consumer}: ${missed.length} of ${facts.stream.records.length} record(s) never received, from sequence ${first.sequence} (${first.eventName} of order ${first.orderId ?? '?'} at ${first.at}) on`,
    ];
  });
  return verdict(
    'every order change reached the stream consumers (stream read back)',
    `${facts.stream.records.length} stream records, ${facts.stream.consumers.map((c) => c.consumer).join(', ')}`,
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
      ? 'no declared job types beyond the order flow'
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

/** The invariants that hold for any app, in report order (declaredJobsDoneOnce when its facts are in). */
export function checkJobInvariants(facts: JobInvariantFacts): InvariantResult[] {
  return [
    poisonDeadLettered(facts),
    queuesDrained(facts),
    alarmsNotified(facts),
    everyDeclaredJobDone(facts),
    ...(facts.declaredCalls === undefined ? [] : [declaredJobsDoneOnce(facts)]),
  ];
}

/** Every invariant of a pipeline with the order flow, in report order. */
export function checkInvariants(facts: InvariantFacts): InvariantResult[] {
  return [
    exactlyOneChargePerKey(facts),
    everyAcceptedPaymentPaid(facts),
    everyPaidOrderNotified(facts),
    noNotificationTwice(facts),
    everyPaidOrderReserved(facts),
    stockConserved(facts),
    poisonDeadLettered(facts),
    queuesDrained(facts),
    streamFullyDelivered(facts),
    alarmsNotified(facts),
    everyDeclaredJobDone(facts),
    ...(facts.declaredCalls === undefined ? [] : [declaredJobsDoneOnce(facts)]),
  ];
}
