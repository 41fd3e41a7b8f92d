import fc from 'fast-check';
import { FleetRateLimit, type RateStore } from '../../../lib/core/fleet-rate-limit';
import { TokenBucket, type TakeResult } from '../../../lib/core/token-bucket';
import { manualClock, type ManualClock } from '../../helpers/manual-clock';

/** The RateStore's conditional writes on one record in memory, counting requests. */
class MemoryRateStore implements RateStore {
  public tat: number | undefined;
  public requests = 0;
  public failWith: Error | undefined;

  public startIdle(request: {
    nowMs: number;
    tatMs: number;
  }): Promise<{ set: true } | { set: false; tatMs: number }> {
    this.requests += 1;
    if (this.failWith !== undefined) return Promise.reject(this.failWith);
    if (this.tat === undefined || this.tat <= request.nowMs) {
      this.tat = request.tatMs;
      return Promise.resolve({ set: true });
    }
    return Promise.resolve({ set: false, tatMs: this.tat });
  }

  public advance(request: {
    incrementMs: number;
    maxTatMs: number;
  }): Promise<{ advanced: boolean; tatMs: number }> {
    this.requests += 1;
    if (this.failWith !== undefined) return Promise.reject(this.failWith);
    const tat = this.tat ?? 0;
    if (tat > request.maxTatMs) return Promise.resolve({ advanced: false, tatMs: tat });
    this.tat = tat + request.incrementMs;
    return Promise.resolve({ advanced: true, tatMs: this.tat });
  }
}

function limiter(
  store: RateStore,
  clock: ManualClock,
  opts: { rate?: number; burst?: number; onStoreError?: (e: unknown) => void } = {},
): FleetRateLimit {
  return new FleetRateLimit({
    store,
    ratePerSecond: opts.rate ?? 50,
    burst: opts.burst ?? 10,
    clock,
    fallback: new TokenBucket({ ratePerSecond: 10, burst: 2, clock }),
    ...(opts.onStoreError === undefined ? {} : { onStoreError: opts.onStoreError }),
  });
}

const takes = (l: FleetRateLimit, n: number, maxWaitMs: number): Promise<TakeResult[]> =>
  Promise.all(Array.from({ length: n }, () => l.take(maxWaitMs)));

describe('Class: FleetRateLimit', () => {
  it('when a batch takes its tokens in one turn from an idle limit, one store request grants them all at once up to the burst', async () => {
    // Prepare
    const store = new MemoryRateStore();
    const l = limiter(store, manualClock());

    // Act
    const results = await takes(l, 10, 1000);

    // Assess
    expect(store.requests).toBe(1);
    expect(results).toEqual(Array(10).fill({ granted: true, waitMs: 0 }));
  });

  it('when a batch takes more than the burst, the tokens past it wait one emission interval each', async () => {
    // Prepare: 50 a second, one token every 20 ms.
    const store = new MemoryRateStore();
    const l = limiter(store, manualClock(), { burst: 2 });

    // Act
    const results = await takes(l, 5, 1000);

    // Assess
    expect(results.map((r) => (r.granted ? r.waitMs : -1))).toEqual([0, 0, 20, 40, 60]);
  });

  it('when another instance spent the fleet rate, this one is granted only what fits its wait and refused the rest with a time to retry', async () => {
    // Prepare: two instances on one record; the first spends the burst and 100 ms ahead.
    const clock = manualClock();
    const store = new MemoryRateStore();
    await takes(limiter(store, clock), 15, 100);
    const other = limiter(store, clock);

    // Act
    const results = await takes(other, 3, 40);

    // Assess: the fleet's TAT is 300 ms ahead; usable from 100 ms; this one waits up to 40 ms.
    expect(store.requests).toBe(1 + 1);
    expect(results).toEqual([
      { granted: false, retryAfterMs: 120 },
      { granted: false, retryAfterMs: 120 },
      { granted: false, retryAfterMs: 120 },
    ]);
  });

  it('when the fleet is busy but has room within the wait, it advances the record and grants with waits', async () => {
    // Prepare
    const clock = manualClock();
    const store = new MemoryRateStore();
    await takes(limiter(store, clock), 10, 0);
    const other = limiter(store, clock);

    // Act
    const results = await takes(other, 3, 1000);

    // Assess: the burst is spent; the next tokens come every 20 ms.
    expect(results).toEqual([
      { granted: true, waitMs: 20 },
      { granted: true, waitMs: 40 },
      { granted: true, waitMs: 60 },
    ]);
  });

  it('when this instance last saw the limit busy, its next takes go straight to the busy write: one request', async () => {
    // Prepare: this instance spent the burst a moment ago.
    const clock = manualClock();
    const store = new MemoryRateStore();
    const l = limiter(store, clock);
    await takes(l, 10, 0);
    clock.advance(50);
    store.requests = 0;

    // Act
    const results = await takes(l, 2, 1000);

    // Assess: the TAT is 150 ms ahead, the burst's lead 200 ms: both are free now and later.
    expect(store.requests).toBe(1);
    expect(results).toEqual([
      { granted: true, waitMs: 0 },
      { granted: true, waitMs: 0 },
    ]);
  });

  it('when this instance has seen the fleet rate spent beyond a wait, it knows a take would be refused, until time frees a token', async () => {
    // Prepare: the burst and 100 ms ahead are spent (TAT 300 ms ahead: the next token is usable at 120 ms).
    const clock = manualClock();
    const store = new MemoryRateStore();
    const l = limiter(store, clock);
    const fresh = limiter(store, clock);
    await takes(l, 15, 100);
    store.requests = 0;

    // Act
    const before = [l.knownSpent(0), l.knownSpent(100), l.knownSpent(120), fresh.knownSpent(0)];
    const refused = await l.take(0);
    clock.advance(120);
    const later = l.knownSpent(0);

    // Assess: known without a request; a process that has seen nothing does not claim to know.
    expect(before).toEqual([true, true, false, false]);
    expect(refused.granted).toBe(false);
    expect(store.requests).toBe(0);
    expect(later).toBe(false);
  });

  it('when the store fails, the process answers from its own share and says why', async () => {
    // Prepare
    const store = new MemoryRateStore();
    store.failWith = new Error('ProvisionedThroughputExceededException');
    const errors: unknown[] = [];
    const l = limiter(store, manualClock(), { onStoreError: (e) => errors.push(e) });

    // Act: the fallback bucket holds 2 tokens and refills 10 a second.
    const results = await takes(l, 3, 0);

    // Assess
    expect(errors).toEqual([store.failWith]);
    expect(results).toEqual([
      { granted: true, waitMs: 0 },
      { granted: true, waitMs: 0 },
      { granted: false, retryAfterMs: 100 },
    ]);
  });

  it('when it is built with a rate or burst it cannot use, it throws', () => {
    const store = new MemoryRateStore();
    expect(() => limiter(store, manualClock(), { rate: 0 })).toThrow(RangeError);
    expect(() => limiter(store, manualClock(), { burst: 0.5 })).toThrow(RangeError);
  });

  it('when any number of instances take tokens at any times, the fleet never uses more than burst + rate × t in any t', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            instance: fc.integer({ min: 0, max: 2 }),
            advanceMs: fc.integer({ min: 0, max: 300 }),
            tokens: fc.integer({ min: 1, max: 12 }),
            maxWaitMs: fc.integer({ min: 0, max: 500 }),
          }),
          { minLength: 1, maxLength: 25 },
        ),
        async (steps) => {
          const clock = manualClock();
          const store = new MemoryRateStore();
          const rate = 50;
          const burst = 10;
          const fleet = [0, 1, 2].map(() => limiter(store, clock, { rate, burst }));
          const usedAt: number[] = [];
          for (const step of steps) {
            clock.advance(step.advanceMs);
            const now = clock.ms();
            const results = await takes(fleet[step.instance]!, step.tokens, step.maxWaitMs);
            for (const r of results) {
              if (!r.granted) continue;
              expect(r.waitMs).toBeLessThanOrEqual(step.maxWaitMs);
              usedAt.push(now + r.waitMs);
            }
          }
          usedAt.sort((a, b) => a - b);
          let worst = 0;
          for (let i = 0; i < usedAt.length; i += 1)
            for (let j = i; j < usedAt.length; j += 1) {
              const allowed = burst + Math.ceil((rate * (usedAt[j]! - usedAt[i]!)) / 1000);
              worst = Math.max(worst, j - i + 1 - allowed);
            }
          expect(worst).toBeLessThanOrEqual(0);
        },
      ),
      { numRuns: 100 },
    );
  });
});
