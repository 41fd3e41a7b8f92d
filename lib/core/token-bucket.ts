/**
 * Token bucket rate limit for an external provider (R4): `ratePerSecond` tokens refill
 * continuously up to `burst`. `take(maxWaitMs)` either grants a token now, grants one that the
 * caller must wait for (the bucket goes into debt, so waiters queue up fairly), or refuses and
 * says how long until a token would be free — the consumer then defers the job instead of
 * holding a Lambda instance idle.
 *
 * Per process: each Lambda instance keeps its own bucket, so the fleet-wide rate is bounded by
 * `ratePerSecond × maxConcurrency` of the event source mapping (B2). Derive the per-instance
 * rate from the provider's limit with perInstanceRate().
 */
import type { Clock } from './ports';

/** Rounding slack of the refill arithmetic, in tokens. */
const TOKEN_EPSILON = 1e-9;

/** Options of TokenBucket. */
export interface TokenBucketOptions {
  /** Tokens added per second. */
  readonly ratePerSecond: number;
  /** Most tokens held at once: the largest burst allowed after a quiet period. */
  readonly burst: number;
  readonly clock: Clock;
}

/** The outcome of take(). */
export type TakeResult =
  /** A token is the caller's; act after `waitMs` (0: at once). */
  | { readonly granted: true; readonly waitMs: number }
  /** No token: one would be free after `retryAfterMs`, longer than the caller would wait. */
  | { readonly granted: false; readonly retryAfterMs: number };

/**
 * The per-instance rate that keeps a fleet of `maxConcurrency` instances within `fleetRatePerSecond`.
 */
export function perInstanceRate(fleetRatePerSecond: number, maxConcurrency: number): number {
  if (!(fleetRatePerSecond > 0) || !Number.isInteger(maxConcurrency) || maxConcurrency < 1) {
    throw new RangeError(
      `need a positive fleet rate and an integer concurrency ≥ 1, got ${fleetRatePerSecond} and ${maxConcurrency}`,
    );
  }
  return fleetRatePerSecond / maxConcurrency;
}

/** A per-process token bucket. */
export class TokenBucket {
  private tokens: number;
  private updatedAtMs: number;

  public constructor(private readonly opts: TokenBucketOptions) {
    if (!(opts.ratePerSecond > 0) || !Number.isFinite(opts.ratePerSecond)) {
      throw new RangeError(`ratePerSecond must be a positive number, got ${opts.ratePerSecond}`);
    }
    if (!(opts.burst >= 1) || !Number.isFinite(opts.burst)) {
      throw new RangeError(`burst must be at least 1, got ${opts.burst}`);
    }
    this.tokens = opts.burst;
    this.updatedAtMs = opts.clock().getTime();
  }

  /** Tokens available now (negative while callers wait on debt). */
  public available(): number {
    this.refill();
    return this.tokens;
  }

  /**
   * Takes one token if it is free now or within `maxWaitMs`.
   * @param maxWaitMs how long the caller is willing to wait. @default 0
   */
  public take(maxWaitMs = 0): TakeResult {
    this.refill();
    // Refill arithmetic is floating point: a token that is 1e-12 short after waiting the exact
    // time this bucket named is a whole token.
    const missing = 1 - this.tokens;
    const waitMs = missing <= TOKEN_EPSILON ? 0 : Math.ceil((missing / this.opts.ratePerSecond) * 1000);
    if (waitMs > maxWaitMs) return { granted: false, retryAfterMs: waitMs };
    this.tokens -= 1;
    return { granted: true, waitMs };
  }

  private refill(): void {
    const now = this.opts.clock().getTime();
    // A clock that steps back adds nothing (and takes nothing away).
    const elapsedMs = Math.max(0, now - this.updatedAtMs);
    this.tokens = Math.min(this.opts.burst, this.tokens + (elapsedMs / 1000) * this.opts.ratePerSecond);
    this.updatedAtMs = Math.max(this.updatedAtMs, now);
  }
}
