/**
 * The chaos suite's workload: N jobs over K keys (SKUs), of the reference's three job types and
 * every job type the app declares beyond them with a `samplePayload`, each enqueued 1 to 3 times,
 * plus the poison messages the run injects. Deterministic per seed, so a failing seed replays the
 * same jobs.
 */

/** Job types of the reference pipeline, as the workload uses them. */
export const CHAOS_JOB_TYPES = ['payment.capture', 'notification.send', 'inventory.reserve'] as const;
/** One of them. */
export type ChaosJobType = (typeof CHAOS_JOB_TYPES)[number];

/** One job of the workload. */
export interface WorkloadJob {
  /** Unique within the run, e.g. `c1a2-j7`. */
  readonly id: string;
  /** One of CHAOS_JOB_TYPES, or a declared job type (WorkloadOptions.declaredJobTypes). */
  readonly type: string;
  /** The SKU the job touches (the key its lock or order line is on). */
  readonly key: string;
  /** The order the job is about: the order paid, notified or reserved for. */
  readonly orderId: string;
  /** How often the same job is enqueued (at-least-once producers). */
  readonly copies: 1 | 2 | 3;
  readonly quantity: number;
  readonly amountMinor: number;
}

/** A seeded workload. */
export interface Workload {
  readonly runId: string;
  readonly seed: number;
  readonly skus: readonly string[];
  readonly jobs: readonly WorkloadJob[];
}

/** Options of makeWorkload. */
export interface WorkloadOptions {
  readonly seed: number;
  readonly jobs: number;
  readonly keys: number;
  /** Makes every id unique to the run (orders, SKUs, payments). */
  readonly runId: string;
  /** Share of payment jobs; the rest split evenly. @default 0.4 */
  readonly paymentShare?: number;
  /**
   * Job types the app declares beyond the reference's (with a `samplePayload`): each gets an even
   * part of the non-payment share beside notifications and reservations. @default none
   */
  readonly declaredJobTypes?: readonly string[];
  /**
   * At least this many jobs of a type (while other jobs can be turned into it): the chaos runner
   * holds some back to send once a crash point is armed. @default none
   */
  readonly minimum?: Partial<Record<ChaosJobType, number>>;
}

/** A small, fast, seedable PRNG (mulberry32): the same seed gives the same workload. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** N jobs over K SKUs, each enqueued 1–3 times. */
export function makeWorkload(opts: WorkloadOptions): Workload {
  const random = seededRandom(opts.seed);
  const skus = Array.from({ length: Math.max(1, opts.keys) }, (_, i) => `sku-${opts.runId}-${i}`);
  const paymentShare = opts.paymentShare ?? 0.4;
  // Without declared job types the bounds are the reference's own: payment, then two halves.
  const others = ['notification.send', 'inventory.reserve', ...(opts.declaredJobTypes ?? [])];
  const typeOf = (r: number): string => {
    if (r < paymentShare) return 'payment.capture';
    let bound = paymentShare;
    for (const type of others) {
      bound += (1 - paymentShare) / others.length;
      if (r < bound) return type;
    }
    return others[others.length - 1] ?? 'inventory.reserve';
  };
  const jobs: WorkloadJob[] = [];
  for (let i = 0; i < opts.jobs; i += 1) {
    const type = typeOf(random());
    const copiesDraw = random();
    jobs.push({
      id: `${opts.runId}-j${i}`,
      type,
      key: skus[Math.floor(random() * skus.length)] ?? skus[0] ?? 'sku',
      orderId: `${opts.runId}-o${i}`,
      copies: copiesDraw < 0.5 ? 1 : copiesDraw < 0.8 ? 2 : 3,
      quantity: 1 + Math.floor(random() * 3),
      amountMinor: 500 + Math.floor(random() * 49_500),
    });
  }
  // Too few of a type drawn: the last jobs of a type with some to spare change type (still
  // deterministic per seed).
  const minimum = (type: string): number => opts.minimum?.[type as ChaosJobType] ?? 0;
  const count = (type: string): number => jobs.filter((j) => j.type === type).length;
  for (const type of CHAOS_JOB_TYPES) {
    for (let i = jobs.length - 1; i >= 0 && count(type) < minimum(type); i -= 1) {
      const job = jobs[i];
      if (job === undefined || job.type === type || count(job.type) <= minimum(job.type)) continue;
      jobs[i] = { ...job, type };
    }
  }
  return { runId: opts.runId, seed: opts.seed, skus, jobs };
}
