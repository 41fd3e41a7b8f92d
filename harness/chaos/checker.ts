/**
 * The chaos checker, in the style of Jepsen's total-queue checker: after a full drain, every job
 * the workload enqueued (and every follow-up job the outbox owes for it) is classified ok, lost,
 * duplicated or unexpected, from the sources of truth — the providers' ledgers, the orders and
 * inventory tables, the DLQs and Redis — never from what the pipeline says about itself. Beside
 * it: DLQ = exactly the injected poison, the cache converged, no write accepted with a stale
 * fencing token, no lock released by a non-owner. A job of a type the app declares beyond the
 * reference's is judged by what holds for any job type (lib/local/scenario-declared-jobs.ts): one
 * call per idempotency key in each of its providers' ledgers and its idempotency record COMPLETED.
 * Pure: facts in, verdict out.
 */
import type { CacheEntry } from '../../lib/core/ports';
import { notificationKey } from '../../examples/reference/domain/notification';
import { paymentCaptureKey } from '../../examples/reference/domain/payment';
import type { LockTrace } from '../faults/fault-injection';
import type { DlqEntry } from '../../lib/local/report-model';
import {
  judgeDeclaredJob,
  type DeclaredJobFact,
  type ProviderCall,
} from '../../lib/local/scenario-declared-jobs';
import { everyDeclaredJobDone, type PoisonFact } from '../../lib/local/scenario-invariants';
import { PAID_STATES, type LedgerFact } from '../../examples/reference/local/order-invariants';

/** The template of the notifications the workload enqueues itself (the outbox sends order-paid). */
export const WORKLOAD_TEMPLATE = 'order-shipped';
/** The template of the outbox's notification when an order becomes PAID (lib/core/outbox.ts). */
export const OUTBOX_TEMPLATE = 'order-paid';

/** A job as it was enqueued: the workload's job with the ids it got at run time. */
export interface EnqueuedJob {
  readonly id: string;
  /** A reference job type (CHAOS_JOB_TYPES) or a declared one. */
  readonly type: string;
  readonly sku: string;
  readonly orderId: string;
  readonly quantity: number;
  /** payment.capture only. */
  readonly paymentId?: string;
  /** payment.capture only. */
  readonly amountMinor?: number;
  /** Declared job types only: the key every copy carries. */
  readonly idempotencyKey?: string;
  /** Times it was sent to its queue. */
  readonly copies: number;
}

/** A SKU's stock item as read back. */
export interface ChaosStockFact {
  readonly seeded: number;
  readonly available: number;
  /** The newest fence the item accepted. */
  readonly fence: number | undefined;
  readonly reservations: Readonly<Record<string, { readonly quantity: number; readonly fence: number }>>;
  /** The lock table's fence counter of the SKU's lock (the highest fence ever issued). */
  readonly lockFence: number | undefined;
}

/** A reservation the inventory consumer logged as accepted ('stock reserved'). */
export interface AcceptedWrite {
  readonly sku: string;
  readonly orderId: string;
  readonly fence: number;
  /** Epoch ms of the log line. */
  readonly at: number;
}

/** Everything the checker reads. */
export interface ChaosFacts {
  readonly jobs: readonly EnqueuedJob[];
  /** Payment provider ledger entries of this run. */
  readonly charges: readonly LedgerFact[];
  /** Messaging provider ledger entries of this run. */
  readonly messages: readonly LedgerFact[];
  /** State and version by order id (orders of payment jobs). */
  readonly orders: ReadonlyMap<string, { readonly state: string; readonly version: number }>;
  /** By SKU of the workload. */
  readonly stock: ReadonlyMap<string, ChaosStockFact>;
  /** Every dead letter of this run (job DLQs and stream on-failure queues). */
  readonly dlq: readonly DlqEntry[];
  readonly poison: readonly PoisonFact[];
  /** Each payment order's cache entry after the drain and the invalidation lag (undefined: absent). */
  readonly cache: ReadonlyMap<string, CacheEntry | undefined>;
  /** Lease operations the locks table answered, on this run's SKUs. */
  readonly lockTraces: readonly LockTrace[];
  readonly acceptedWrites: readonly AcceptedWrite[];
  /** Declared job types' jobs as read back (their idempotency records). @default none */
  readonly declaredJobs?: readonly DeclaredJobFact[];
  /** Side effects the declared providers' fakes recorded during the run. @default none */
  readonly declaredCalls?: readonly ProviderCall[];
  /** The providers each declared job type calls (`resources.providers`), by job type. @default none */
  readonly declaredProviders?: Readonly<Record<string, readonly string[]>>;
}

/** One job's (or owed follow-up's) classification. */
export type Outcome = 'ok' | 'lost' | 'duplicated';

/** The classification of one job or owed follow-up. */
export interface Classified {
  readonly id: string;
  /** The job type, or `outbox:<type>` for a follow-up the outbox owes a paid order. */
  readonly kind: string;
  readonly outcome: Outcome;
  readonly detail: string;
}

/** One rule's verdict. */
export interface RuleVerdict {
  readonly holds: boolean;
  readonly detail: string;
  readonly violations: readonly string[];
}

/** The checker's verdict. */
export interface ChaosVerdict {
  readonly classified: readonly Classified[];
  readonly counts: {
    readonly ok: number;
    readonly lost: number;
    readonly duplicated: number;
    readonly unexpected: number;
  };
  /** Effects no job accounts for (charges, messages, reservations). */
  readonly unexpected: readonly string[];
  readonly dlq: RuleVerdict;
  readonly cache: RuleVerdict;
  readonly fences: RuleVerdict;
  readonly locks: RuleVerdict;
  readonly stock: RuleVerdict;
  /** Every declared job's idempotency record COMPLETED (the scenario's everyDeclaredJobDone). */
  readonly declared: RuleVerdict;
  /** Every rule holds and nothing is lost, duplicated or unexpected. */
  readonly valid: boolean;
}

function countBy(items: readonly LedgerFact[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const { idempotencyKey } of items) counts.set(idempotencyKey, (counts.get(idempotencyKey) ?? 0) + 1);
  return counts;
}

function verdict(detail: string, violations: readonly string[]): RuleVerdict {
  return { holds: violations.length === 0, detail, violations };
}

function byEffects(id: string, kind: string, effects: number, what: string): Classified {
  const outcome: Outcome = effects === 0 ? 'lost' : effects > 1 ? 'duplicated' : 'ok';
  return { id, kind, outcome, detail: `${effects} ${what}` };
}

/** Classifies every job and owed follow-up; lists the effects none accounts for. */
function classify(facts: ChaosFacts): { classified: Classified[]; unexpected: string[] } {
  const charges = countBy(facts.charges);
  const messages = countBy(facts.messages);
  const expectedCharges = new Set<string>();
  const expectedMessages = new Set<string>();
  const expectedReservations = new Set<string>();
  const classified: Classified[] = [];
  const reservation = (sku: string, orderId: string) => facts.stock.get(sku)?.reservations[orderId];
  const declaredCalls = facts.declaredCalls ?? [];

  for (const job of facts.jobs) {
    if (job.idempotencyKey !== undefined) {
      const key = job.idempotencyKey;
      const fact = facts.declaredJobs?.find((f) => f.idempotencyKey === key);
      const judged =
        fact === undefined
          ? { outcome: 'lost' as const, detail: 'not read back' }
          : judgeDeclaredJob(fact, facts.declaredProviders?.[job.type] ?? [], declaredCalls);
      classified.push({ id: job.id, kind: job.type, ...judged });
    } else if (job.type === 'payment.capture') {
      const key = paymentCaptureKey(job.paymentId ?? '');
      expectedCharges.add(key);
      const n = charges.get(key) ?? 0;
      const order = facts.orders.get(job.orderId);
      const paid = order !== undefined && PAID_STATES.includes(order.state);
      if (n === 1 && !paid) {
        classified.push({
          id: job.id,
          kind: job.type,
          outcome: 'lost',
          detail: `charged once but the order is ${order?.state ?? 'missing'}`,
        });
      } else {
        classified.push(byEffects(job.id, job.type, n, `charge(s), order ${order?.state ?? 'missing'}`));
      }
      if (!paid) continue;
      // The outbox owes a paid order its notification and its reservation.
      const notified = notificationKey(job.orderId, OUTBOX_TEMPLATE);
      expectedMessages.add(notified);
      classified.push(
        byEffects(`${job.id}/notify`, 'outbox:notification.send', messages.get(notified) ?? 0, 'message(s)'),
      );
      expectedReservations.add(`${job.sku}|${job.orderId}`);
      const held = reservation(job.sku, job.orderId);
      classified.push({
        id: `${job.id}/reserve`,
        kind: 'outbox:inventory.reserve',
        outcome: held === undefined ? 'lost' : 'ok',
        detail: held === undefined ? 'no reservation' : `reserved ${held.quantity} at fence ${held.fence}`,
      });
    } else if (job.type === 'notification.send') {
      const key = notificationKey(job.orderId, WORKLOAD_TEMPLATE);
      expectedMessages.add(key);
      classified.push(byEffects(job.id, job.type, messages.get(key) ?? 0, 'message(s)'));
    } else {
      expectedReservations.add(`${job.sku}|${job.orderId}`);
      const held = reservation(job.sku, job.orderId);
      classified.push({
        id: job.id,
        kind: job.type,
        outcome: held === undefined ? 'lost' : 'ok',
        detail: held === undefined ? 'no reservation' : `reserved ${held.quantity} at fence ${held.fence}`,
      });
    }
  }

  const unexpected: string[] = [];
  for (const [key, n] of charges)
    if (!expectedCharges.has(key)) unexpected.push(`charge ${key} (${n}×) no job asked for`);
  for (const [key, n] of messages)
    if (!expectedMessages.has(key)) unexpected.push(`message ${key} (${n}×) no job asked for`);
  const declaredKeys = new Set(facts.jobs.map((j) => j.idempotencyKey));
  for (const call of declaredCalls)
    if (!declaredKeys.has(call.idempotencyKey))
      unexpected.push(`${call.provider} call ${call.idempotencyKey} no job asked for`);
  for (const [sku, s] of facts.stock) {
    for (const orderId of Object.keys(s.reservations)) {
      if (!expectedReservations.has(`${sku}|${orderId}`))
        unexpected.push(`reservation of ${sku} for ${orderId} no job asked for`);
    }
  }
  return { classified, unexpected };
}

/**
 * The DLQs hold exactly the injected poison, each dead-lettered as permanent. A poison message
 * dead-lettered more than once (delivered again before its delete) still counts as poison; the
 * copies are reported in the detail. One of those copies may have been moved by SQS itself
 * (maxReceiveCount) when the runner had already dead-lettered it as permanent: the chaos
 * visibility timeout is shorter than some function timeouts on purpose, so a slow batch's poison
 * is delivered again while the runner still holds it and each late delete meets a stale receipt
 * handle (ReceiptHandleIsInvalid) until SQS redrives it. Poison that reached its DLQ only by SQS's
 * redrive was never classified, and fails the rule.
 */
export function checkDlq(facts: ChaosFacts): RuleVerdict {
  const isPoison = (e: DlqEntry, p: PoisonFact): boolean =>
    e.source === p.jobType && p.body.startsWith(e.body);
  const violations: string[] = [];
  for (const p of facts.poison) {
    const found = facts.dlq.filter((e) => isPoison(e, p));
    if (found.length === 0) violations.push(`poison for ${p.jobType} not in its DLQ`);
    const classified = found.some((e) => e.errorKind === 'permanent');
    for (const e of found)
      if (e.errorKind !== 'permanent' && !(classified && e.errorKind === undefined))
        violations.push(`poison for ${p.jobType} dead-lettered as ${e.errorClass}, not permanent`);
  }
  const others = facts.dlq.filter((e) => !facts.poison.some((p) => isPoison(e, p)));
  for (const e of others) {
    violations.push(
      `unexpected dead letter in ${e.queue} (${e.source}): ${e.errorClass}: ${e.errorMessage ?? e.body.slice(0, 120)}`,
    );
  }
  const copies = facts.dlq.length - others.length - facts.poison.length;
  return verdict(
    `${facts.poison.length} poison injected, ${facts.dlq.length} dead letters${copies > 0 ? ` (${copies} extra copies of poison)` : ''}`,
    violations,
  );
}

/** Every touched order's cache entry is absent, a tombstone, or a value at the table's version. */
export function checkCache(facts: ChaosFacts): RuleVerdict {
  const violations: string[] = [];
  let values = 0;
  for (const [orderId, entry] of facts.cache) {
    if (entry === undefined || entry.kind === 'tombstone') continue;
    values += 1;
    const table = facts.orders.get(orderId);
    if (table === undefined)
      violations.push(`order ${orderId}: cached at v${entry.version} but not in the table`);
    else if (entry.version !== table.version)
      violations.push(
        `order ${orderId}: cached v${entry.version}, table v${table.version} (${table.state}): stale`,
      );
  }
  return verdict(`${facts.cache.size} orders, ${values} cached values`, violations);
}

/**
 * Fencing (L3), per SKU, from the stock item: no two accepted reservations share a fence (an
 * equal fence accepted twice); the item's fence is the highest reservation fence (a lower fence
 * accepted last would have set it lower); no fence is above what the lock ever issued; and every
 * reservation the consumer logged as accepted is in the item with the fence it logged. The log's
 * order is not used: a log line comes after the write and the lock release, so two processes'
 * lines do not order their writes.
 */
export function checkFences(facts: ChaosFacts): RuleVerdict {
  const violations: string[] = [];
  let writes = 0;
  for (const [sku, s] of facts.stock) {
    const fences = Object.values(s.reservations).map((r) => r.fence);
    writes += fences.length;
    if (new Set(fences).size !== fences.length)
      violations.push(`${sku}: two reservations accepted with one fence (${fences.join(', ')})`);
    if (fences.length === 0) continue;
    const max = Math.max(...fences);
    if (s.fence !== max)
      violations.push(`${sku}: item fence ${s.fence ?? 'none'}, highest reservation fence ${max}`);
    if (s.lockFence !== undefined && max > s.lockFence)
      violations.push(`${sku}: fence ${max} accepted, above the ${s.lockFence} the lock ever issued`);
  }
  for (const w of facts.acceptedWrites) {
    const held = facts.stock.get(w.sku)?.reservations[w.orderId];
    if (held === undefined)
      violations.push(`${w.sku}: ${w.orderId} logged as reserved at fence ${w.fence}, not in the item`);
    else if (held.fence !== w.fence)
      violations.push(`${w.sku}: ${w.orderId} logged at fence ${w.fence}, stored at ${held.fence}`);
  }
  return verdict(
    `${writes} fenced reservations on ${facts.stock.size} SKUs, ${facts.acceptedWrites.length} logged`,
    violations,
  );
}

/**
 * Lock releases (L1): every release the locks table accepted names the owner of the lease at
 * that moment. Each operation took effect somewhere between its request and its answer, so the
 * check uses real-time order only: a release by T is a violation when T never acquired the
 * resource, or another owner's acquire was answered after T's acquire was answered and before
 * T's release was sent (that acquire then certainly came between them).
 */
export function checkLockReleases(facts: ChaosFacts): RuleVerdict {
  const violations: string[] = [];
  const byResource = new Map<string, LockTrace[]>();
  for (const t of facts.lockTraces)
    if (t.ok) byResource.set(t.resource, [...(byResource.get(t.resource) ?? []), t]);
  let releases = 0;
  for (const [resource, list] of byResource) {
    const sorted = [...list].sort((a, b) => a.at - b.at);
    for (const r of sorted.filter((t) => t.op === 'release')) {
      releases += 1;
      const acquired = sorted.find((t) => t.op === 'acquire' && t.owner === r.owner && t.start <= r.at);
      if (acquired === undefined) {
        violations.push(`${resource}: released by ${r.owner}, which never acquired it`);
        continue;
      }
      const takeover = sorted.find(
        (t) => t.op === 'acquire' && t.owner !== r.owner && t.start > acquired.at && t.at < r.start,
      );
      if (takeover !== undefined)
        violations.push(`${resource}: released by ${r.owner} after ${takeover.owner} had acquired it`);
    }
  }
  const acquires = facts.lockTraces.filter((t) => t.ok && t.op === 'acquire').length;
  return verdict(`${acquires} accepted acquires, ${releases} accepted releases`, violations);
}

/** Stock conserved per SKU: what left `available` is what the reservations hold (no double decrement). */
export function checkStock(facts: ChaosFacts): RuleVerdict {
  const violations: string[] = [];
  for (const [sku, s] of facts.stock) {
    const held = Object.values(s.reservations).reduce((n, r) => n + r.quantity, 0);
    if (s.seeded - s.available !== held)
      violations.push(`${sku}: seeded ${s.seeded}, available ${s.available}, reservations hold ${held}`);
  }
  return verdict(`${facts.stock.size} SKUs`, violations);
}

/** Classifies every job and checks every rule. */
export function checkChaos(facts: ChaosFacts): ChaosVerdict {
  const { classified, unexpected } = classify(facts);
  const stock = checkStock(facts);
  const counts = {
    ok: classified.filter((c) => c.outcome === 'ok').length,
    lost: classified.filter((c) => c.outcome === 'lost').length,
    // A double decrement is a duplicated side effect no reservation map shows.
    duplicated: classified.filter((c) => c.outcome === 'duplicated').length + stock.violations.length,
    unexpected: unexpected.length,
  };
  const dlq = checkDlq(facts);
  const cache = checkCache(facts);
  const fences = checkFences(facts);
  const locks = checkLockReleases(facts);
  const declared = everyDeclaredJobDone({ declaredJobs: facts.declaredJobs ?? [] });
  return {
    classified,
    counts,
    unexpected,
    dlq,
    cache,
    fences,
    locks,
    stock,
    declared,
    valid:
      counts.lost === 0 &&
      counts.duplicated === 0 &&
      counts.unexpected === 0 &&
      dlq.holds &&
      cache.holds &&
      fences.holds &&
      locks.holds &&
      declared.holds,
  };
}

/** The violations of a verdict, one per line, for a failure message. */
export function describeViolations(v: ChaosVerdict): string[] {
  return [
    ...v.classified
      .filter((c) => c.outcome !== 'ok')
      .map((c) => `${c.outcome}: ${c.kind} ${c.id}: ${c.detail}`),
    ...v.unexpected.map((u) => `unexpected: ${u}`),
    ...v.stock.violations.map((s) => `duplicated (stock): ${s}`),
    ...v.dlq.violations.map((s) => `dlq: ${s}`),
    ...v.cache.violations.map((s) => `cache: ${s}`),
    ...v.fences.violations.map((s) => `fence: ${s}`),
    ...v.locks.violations.map((s) => `lock: ${s}`),
    ...v.declared.violations.map((s) => `declared: ${s}`),
  ];
}
