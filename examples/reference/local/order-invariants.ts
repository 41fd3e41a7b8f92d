/**
 * The order flow's invariants, checked once the pipeline has drained over facts read from the
 * sources of truth (the payment and messaging providers' ledgers, the orders and inventory
 * tables, the orders stream read back, the DLQs) rather than from what the pipeline says about
 * itself: charges, PAID orders, their notifications and reservations, stock, the stream. Pure:
 * the facts come in, verdicts go out. The kit's invariants that hold for any app follow them in
 * the report (tenang/local checkJobInvariants).
 */
import { notificationKey, paymentCaptureKey } from '../domain';
import { verdict, type InvariantResult, type JobInvariantFacts } from 'tenang/local';
import type { AcceptedPayment } from './traffic';

/** One side effect in a provider's ledger (the local platform's fake provider's LedgerEntry). */
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

/** What the order flow's invariants read besides. */
export interface OrderFlowFacts {
  readonly jobTypes: InvariantJobTypes;
  readonly accepted: readonly AcceptedPayment[];
  /** Payment ids the client gave up on without a definite answer (TrafficGenerator.unsettled). @default none */
  readonly unsettled?: readonly string[];
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

/** Everything the order flow's invariants read: its facts and those of any app (the dead letters). */
export interface InvariantFacts extends JobInvariantFacts, OrderFlowFacts {}

/** Order states that mean the payment was captured (PAID or only reachable after it). */
export const PAID_STATES: readonly string[] = ['PAID', 'RESERVED'];

/** The notification template the outbox sends when an order is paid (the outbox's follow-ups, domain/order-follow-ups.ts). */
const PAID_TEMPLATE = 'order-paid';

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

/**
 * Exactly one charge per accepted payment key, at most one per payment the client gave up on
 * without a definite answer, and no charge nobody asked for.
 */
export function exactlyOneChargePerKey(facts: InvariantFacts): InvariantResult {
  const payments = distinctPayments(facts.accepted);
  const expected = new Set(payments.map((p) => paymentCaptureKey(p.paymentId)));
  const unsettled = new Set(
    (facts.unsettled ?? []).map((id) => paymentCaptureKey(id)).filter((key) => !expected.has(key)),
  );
  const charged = countBy(facts.charges, (c) => c.idempotencyKey);
  const violations: string[] = [];
  for (const key of expected) {
    const n = charged.get(key) ?? 0;
    if (n !== 1) violations.push(`${key}: charged ${n} times`);
  }
  let unsettledCharged = 0;
  for (const [key, n] of charged) {
    if (unsettled.has(key)) {
      unsettledCharged += 1;
      if (n > 1) violations.push(`${key}: charged ${n} times (a payment the client gave up on unanswered)`);
    } else if (!expected.has(key))
      violations.push(`${key}: charged ${n} time(s) but no payment with this key was accepted`);
  }
  return verdict(
    'exactly one charge per payment key (provider ledger)',
    `${expected.size} accepted payment keys, ${facts.charges.length} charges${unsettled.size > 0 ? `; ${unsettled.size} payment(s) given up unanswered (timeouts, 5xx), ${unsettledCharged} of them charged once` : ''}`,
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
    facts.dlq
      .filter((e) => e.source === facts.jobTypes.notification)
      .map((e) => e.payloadFields?.orderId ?? ''),
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
      .map((e) => `${e.payloadFields?.orderId ?? ''}|${e.payloadFields?.sku ?? ''}`),
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

/** The order flow's invariants, in report order (the kit's generic ones follow). */
export function checkOrderFlowInvariants(facts: InvariantFacts): InvariantResult[] {
  return [
    exactlyOneChargePerKey(facts),
    everyAcceptedPaymentPaid(facts),
    everyPaidOrderNotified(facts),
    noNotificationTwice(facts),
    everyPaidOrderReserved(facts),
    stockConserved(facts),
    streamFullyDelivered(facts),
  ];
}
