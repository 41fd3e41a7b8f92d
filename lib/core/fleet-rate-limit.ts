/**
 * A provider's rate limit kept for the whole fleet (R4), with the generic cell rate algorithm
 * (GCRA) on one shared record: the theoretical arrival time (TAT) of the next token. A token is
 * emitted every `1000 / ratePerSecond` ms; up to `burst` may be used ahead of their emission
 * time, and a caller may wait up to `maxWaitMs` for one. Over any interval t the fleet uses at
 * most `burst + ratePerSecond × t` tokens, however many instances take them.
 *
 * Why shared rather than a per-instance share (TokenBucket with perInstanceRate): a share is
 * `fleet rate ÷ maximum concurrency`, so one busy instance is held to a fifth of the provider's
 * limit (the reference's messaging: 10 of 50 a second) while the other four are idle, and every
 * batch larger than its burst waits. The shared record lets any instance use what the fleet has.
 *
 * Takes made in the same turn of the event loop (a batch's records, run at once) are answered
 * together with one store request: one conditional write per batch, not per message. When the
 * store cannot be reached (throttled, denied, down), the takes go to `fallback` — a per-instance
 * share, which keeps the fleet within the limit on its own — and `onStoreError` is told.
 */
import type { Clock } from './ports';
import type { TakeResult } from './token-bucket';

/** A rate limit that answers at once (a process's own bucket) or after a request (a shared one). */
export interface RateLimit {
  /**
   * Takes one token if it is free now or within `maxWaitMs`. @default maxWaitMs 0
   */
  take(maxWaitMs?: number): TakeResult | Promise<TakeResult>;
  /**
   * Whether a take with `maxWaitMs` would be refused for certain, from what this process has
   * already seen (no request): a caller can then skip work it would do beside the take.
   * @default - not known (absent)
   */
  knownSpent?(maxWaitMs?: number): boolean;
}

/** Where the fleet's TAT is kept, written only with conditions. */
export interface RateStore {
  /**
   * Sets the TAT to `tatMs` when there is none or it is at most `nowMs` (the limit is idle).
   * @returns whether it was set, and otherwise the TAT found
   */
  startIdle(request: {
    readonly nowMs: number;
    readonly tatMs: number;
  }): Promise<{ readonly set: true } | { readonly set: false; readonly tatMs: number }>;
  /**
   * Adds `incrementMs` to the TAT when it is at most `maxTatMs`.
   * @returns the TAT after the addition, or the TAT found when it was not added
   */
  advance(request: {
    readonly incrementMs: number;
    readonly maxTatMs: number;
  }): Promise<{ readonly advanced: boolean; readonly tatMs: number }>;
}

/** Options of FleetRateLimit. */
export interface FleetRateLimitOptions {
  readonly store: RateStore;
  /** Tokens per second for the whole fleet: the provider's limit. */
  readonly ratePerSecond: number;
  /** Tokens the fleet may use at once after a quiet period. */
  readonly burst: number;
  readonly clock: Clock;
  /** Answers the takes when the store fails: a per-instance share of the rate. */
  readonly fallback: RateLimit;
  /** Told when the store failed and the fallback answered. @default - ignored */
  readonly onStoreError?: (error: unknown) => void;
}

interface Pending {
  readonly maxWaitMs: number;
  readonly resolve: (result: TakeResult) => void;
}

/** Conditional writes tried per answer before the rest of the takes are refused (others moved the TAT). */
const ADVANCE_ATTEMPTS = 3;

/** A fleet-wide rate limit over a RateStore. */
export class FleetRateLimit implements RateLimit {
  private readonly intervalMs: number;
  private pending: Pending[] = [];
  /**
   * The TAT this instance last saw. The record's TAT only grows, so while this one is ahead of
   * the clock the limit is busy for certain, and the write for an idle limit would fail: it is
   * skipped, one request instead of two.
   */
  private lastTatMs = Number.NEGATIVE_INFINITY;

  public constructor(private readonly opts: FleetRateLimitOptions) {
    if (!(opts.ratePerSecond > 0) || !Number.isFinite(opts.ratePerSecond)) {
      throw new RangeError(`ratePerSecond must be a positive number, got ${opts.ratePerSecond}`);
    }
    if (!Number.isInteger(opts.burst) || opts.burst < 1) {
      throw new RangeError(`burst must be an integer of at least 1, got ${opts.burst}`);
    }
    this.intervalMs = 1000 / opts.ratePerSecond;
  }

  public take(maxWaitMs = 0): Promise<TakeResult> {
    return new Promise((resolve) => {
      this.pending.push({ maxWaitMs, resolve });
      // After this turn's other takes (setImmediate runs once the microtasks and I/O callbacks
      // of the turn are done), so a batch's records share one request.
      if (this.pending.length === 1) setImmediate(() => void this.flush());
    });
  }

  /**
   * True when the TAT this instance last saw already refuses a take now: the record's TAT only
   * grows, so the store would refuse it too (and take() answers it without a request).
   */
  public knownSpent(maxWaitMs = 0): boolean {
    const now = this.opts.clock().getTime();
    return this.lastTatMs > now && this.fitting(this.lastTatMs, now, maxWaitMs) <= 0;
  }

  /** Tokens usable within `maxWaitMs` of `now` after a TAT of `tat` (the burst's lead included). */
  private fitting(tat: number, now: number, maxWaitMs: number): number {
    const T = this.intervalMs;
    return Math.floor((now + this.opts.burst * T + maxWaitMs - tat) / T);
  }

  private async flush(): Promise<void> {
    const takes = this.pending;
    this.pending = [];
    let grants: TakeResult[];
    try {
      grants = await this.answer(takes.length, Math.max(...takes.map((t) => t.maxWaitMs)));
    } catch (error) {
      this.opts.onStoreError?.(error);
      for (const t of takes) t.resolve(await this.opts.fallback.take(t.maxWaitMs));
      return;
    }
    takes.forEach((t, i) => {
      const grant = grants[i] ?? { granted: false, retryAfterMs: this.intervalMs };
      // A token granted later than this caller would wait is not its: refused (the token is spent).
      t.resolve(
        grant.granted && grant.waitMs > t.maxWaitMs ? { granted: false, retryAfterMs: grant.waitMs } : grant,
      );
    });
  }

  /** The answers to `n` takes, in order: grants with their waits, then refusals. */
  private async answer(n: number, maxWaitMs: number): Promise<TakeResult[]> {
    const T = this.intervalMs;
    const { burst } = this.opts;
    const now = this.opts.clock().getTime();
    // Tokens are usable from their emission time less the burst's lead: the i-th (1-based)
    // after a TAT of `base` may be used at base + i×T − burst×T.
    const lead = burst * T;
    let tat = this.lastTatMs;
    if (tat <= now) {
      const idleGrant = Math.min(n, burst + Math.floor(maxWaitMs / T));
      const idle = await this.opts.store.startIdle({ nowMs: now, tatMs: now + idleGrant * T });
      if (idle.set) {
        this.lastTatMs = now + idleGrant * T;
        return this.grants(n, idleGrant, now, now, lead);
      }
      tat = idle.tatMs;
    }
    for (let attempt = 0; attempt < ADVANCE_ATTEMPTS; attempt += 1) {
      const k = Math.min(n, this.fitting(tat, now, maxWaitMs));
      if (k <= 0) break;
      const moved = await this.opts.store.advance({
        incrementMs: k * T,
        maxTatMs: now + lead + maxWaitMs - k * T,
      });
      tat = moved.tatMs;
      if (moved.advanced) {
        this.lastTatMs = moved.tatMs;
        return this.grants(n, k, moved.tatMs - k * T, now, lead);
      }
    }
    this.lastTatMs = Math.max(this.lastTatMs, tat);
    const retryAfterMs = Math.max(1, Math.ceil(Math.max(tat, now) + T - lead - now));
    return Array.from({ length: n }, () => ({ granted: false as const, retryAfterMs }));
  }

  private grants(n: number, k: number, base: number, now: number, lead: number): TakeResult[] {
    const T = this.intervalMs;
    return Array.from({ length: n }, (_, index): TakeResult => {
      const at = base + (index + 1) * T - lead;
      if (index < k) return { granted: true, waitMs: Math.max(0, Math.ceil(at - now)) };
      return { granted: false, retryAfterMs: Math.max(1, Math.ceil(base + (k + 1) * T - lead - now)) };
    });
  }
}
