/**
 * Circuit breaker for an external provider (R4): closed → open after `failureThreshold`
 * failures within `windowMs`; open refuses every call for `coolDownMs`; then half-open lets
 * `halfOpenProbes` probe calls through: a success closes it, a failure opens it again.
 *
 * Per process: each Lambda instance keeps its own breaker. The event source mapping's maximum
 * concurrency bounds the instances, so during an outage the fleet sends at most
 * `failureThreshold × maxConcurrency` failing calls per window, then one probe per instance
 * per cool-down — retry storms are damped without any shared state.
 */
import { CircuitOpenError, classifyError } from './errors';
import type { Clock } from './ports';

/** The breaker's states. */
export type CircuitState = 'closed' | 'open' | 'half-open';

/** Options of CircuitBreaker. */
export interface CircuitBreakerOptions {
  /** Name of the protected dependency, for messages ("messaging-provider"). */
  readonly name: string;
  /** Failures within `windowMs` that open the circuit. */
  readonly failureThreshold: number;
  /** Sliding window over which failures are counted, ms. */
  readonly windowMs: number;
  /** How long the circuit stays open before a probe, ms. */
  readonly coolDownMs: number;
  /** Concurrent probe calls allowed while half-open. @default 1 */
  readonly halfOpenProbes?: number;
  readonly clock: Clock;
  /**
   * Which errors count as a failure of the dependency. A rejected request (4xx, bad input) says
   * the provider is up. @default transient errors only
   */
  readonly isFailure?: (error: unknown) => boolean;
  /**
   * Holds a call back while the calls in flight and the failures in the window together reach
   * `failureThreshold`, until one settles: calls run at once up to the threshold, yet no more
   * than `failureThreshold` of them can fail before the circuit opens, as when they run one after
   * another. While half-open, calls beyond the probes wait for the probes' outcome (closed: they
   * run; open again: refused) instead of being refused at once. A held call that finds the circuit
   * open is refused (CircuitOpenError) without being made. @default false: calls are never held back
   */
  readonly limitInFlightToThreshold?: boolean;
}

/** A point-in-time view of the breaker. */
export interface CircuitSnapshot {
  readonly state: CircuitState;
  /** Failures counted in the current window (closed) or since the last opening. */
  readonly recentFailures: number;
  /** Time until a call may be tried, ms; 0 when one may be tried now. */
  readonly retryAfterMs: number;
}

/** A per-process circuit breaker. */
export class CircuitBreaker {
  private failures: number[] = [];
  private openedAtMs: number | undefined;
  private probesInFlight = 0;
  private inFlight = 0;
  /** Calls held back by limitInFlightToThreshold, woken in order as calls settle. */
  private held: (() => void)[] = [];
  private readonly halfOpenProbes: number;
  private readonly isFailure: (error: unknown) => boolean;

  public constructor(private readonly opts: CircuitBreakerOptions) {
    for (const [field, value] of [
      ['failureThreshold', opts.failureThreshold],
      ['windowMs', opts.windowMs],
      ['coolDownMs', opts.coolDownMs],
      ['halfOpenProbes', opts.halfOpenProbes ?? 1],
    ] as const) {
      if (!Number.isInteger(value) || value < 1)
        throw new RangeError(`${field} must be a positive integer, got ${value}`);
    }
    this.halfOpenProbes = opts.halfOpenProbes ?? 1;
    this.isFailure = opts.isFailure ?? ((error) => classifyError(error) === 'transient');
  }

  /** The current state, window and wait. */
  public snapshot(): CircuitSnapshot {
    const now = this.opts.clock().getTime();
    const state = this.stateAt(now);
    if (state === 'closed') {
      return { state, recentFailures: this.failuresSince(now - this.opts.windowMs), retryAfterMs: 0 };
    }
    const reopensAt = (this.openedAtMs ?? now) + this.opts.coolDownMs;
    const retryAfterMs =
      state === 'open'
        ? reopensAt - now
        : this.probesInFlight >= this.halfOpenProbes
          ? this.opts.coolDownMs
          : 0;
    return { state, recentFailures: this.failures.length, retryAfterMs };
  }

  /**
   * Runs `call` through the breaker.
   * @throws CircuitOpenError (transient) without calling when the circuit is open, or half-open
   * with its probes already in flight; otherwise whatever `call` throws.
   */
  public async execute<T>(call: () => Promise<T>): Promise<T> {
    if (this.opts.limitInFlightToThreshold === true) {
      while (this.atThreshold() || this.probing()) await new Promise<void>((wake) => this.held.push(wake));
    }
    this.inFlight += 1;
    try {
      return await this.run(call);
    } finally {
      this.inFlight -= 1;
      // Every held call looks again, in the order they came: a failure may have opened the
      // circuit (each is then refused) or left the count where it was (they wait on).
      const held = this.held;
      this.held = [];
      for (const wake of held) wake();
    }
  }

  /** Half-open with its probes in flight: a held call waits for their outcome instead of being refused. */
  private probing(): boolean {
    return (
      this.stateAt(this.opts.clock().getTime()) === 'half-open' && this.probesInFlight >= this.halfOpenProbes
    );
  }

  /** Closed, with as many calls in flight and failures in the window as the threshold. */
  private atThreshold(): boolean {
    const now = this.opts.clock().getTime();
    return (
      this.stateAt(now) === 'closed' &&
      this.inFlight + this.failuresSince(now - this.opts.windowMs) >= this.opts.failureThreshold
    );
  }

  private async run<T>(call: () => Promise<T>): Promise<T> {
    const now = this.opts.clock().getTime();
    const state = this.stateAt(now);
    const probe = state === 'half-open';
    if (state === 'open' || (probe && this.probesInFlight >= this.halfOpenProbes)) {
      throw new CircuitOpenError(
        `${this.opts.name} circuit is ${state}; retry in ${this.snapshot().retryAfterMs} ms`,
      );
    }
    if (probe) this.probesInFlight += 1;
    try {
      const result = await call();
      this.onSuccess(probe);
      return result;
    } catch (error) {
      if (this.isFailure(error)) this.onFailure(probe);
      else this.onSuccess(probe);
      throw error;
    } finally {
      if (probe) this.probesInFlight -= 1;
    }
  }

  private stateAt(nowMs: number): CircuitState {
    if (this.openedAtMs === undefined) return 'closed';
    return nowMs < this.openedAtMs + this.opts.coolDownMs ? 'open' : 'half-open';
  }

  private failuresSince(sinceMs: number): number {
    // Strictly inside the window: a failure exactly windowMs old has left it.
    return this.failures.filter((at) => at > sinceMs).length;
  }

  private onSuccess(probe: boolean): void {
    // Closed: failures keep counting inside their window (a flaky provider still opens it).
    // Only a probe's success closes an opened circuit; a slow call from before does not.
    if (!probe) return;
    this.openedAtMs = undefined;
    this.failures = [];
  }

  private onFailure(probe: boolean): void {
    const now = this.opts.clock().getTime();
    if (probe) {
      this.openedAtMs = now;
      return;
    }
    if (this.openedAtMs !== undefined) return;
    this.failures = [...this.failures.filter((at) => at > now - this.opts.windowMs), now];
    if (this.failures.length >= this.opts.failureThreshold) this.openedAtMs = now;
  }
}
