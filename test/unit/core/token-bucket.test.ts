import fc from 'fast-check';
import { perInstanceRate, TokenBucket } from '../../../lib/core/token-bucket';
import { manualClock, type ManualClock } from '../../helpers/manual-clock';

function bucket(clock: ManualClock, ratePerSecond = 10, burst = 5): TokenBucket {
  return new TokenBucket({ ratePerSecond, burst, clock });
}

describe('Class: TokenBucket', () => {
  describe('Method: take', () => {
    it('when the bucket is full, it grants a burst at once, then refuses and says when a token is free', () => {
      // Prepare
      const b = bucket(manualClock());

      // Act
      const burst = Array.from({ length: 5 }, () => b.take());
      const next = b.take();

      // Assess
      expect(burst).toEqual(Array.from({ length: 5 }, () => ({ granted: true, waitMs: 0 })));
      expect(next).toEqual({ granted: false, retryAfterMs: 100 });
    });

    it('when time passes, it refills at the rate', () => {
      // Prepare
      const clock = manualClock();
      const b = bucket(clock);
      for (let i = 0; i < 5; i += 1) b.take();

      // Act
      clock.advance(250);
      const granted = [b.take(), b.take(), b.take()].map((r) => r.granted);

      // Assess
      expect(granted).toEqual([true, true, false]);
    });

    it('when the bucket has been idle for long, it holds no more than the burst', () => {
      // Prepare
      const clock = manualClock();
      const b = bucket(clock);

      // Act
      clock.advance(3_600_000);

      // Assess
      expect(b.available()).toBe(5);
    });

    it('when the caller will wait long enough, it grants a token with the wait and queues later callers behind it', () => {
      // Prepare
      const b = bucket(manualClock());
      for (let i = 0; i < 5; i += 1) b.take();

      // Act
      const first = b.take(1_000);
      const second = b.take(1_000);
      const impatient = b.take(150);

      // Assess
      expect(first).toEqual({ granted: true, waitMs: 100 });
      expect(second).toEqual({ granted: true, waitMs: 200 });
      expect(impatient).toEqual({ granted: false, retryAfterMs: 300 });
    });

    it('when the clock steps back, it neither adds nor takes tokens', () => {
      // Prepare
      const clock = manualClock();
      const b = bucket(clock);
      b.take();
      const before = b.available();

      // Act
      clock.advance(-60_000);
      const after = b.available();

      // Assess
      expect(after).toBe(before);
    });
  });

  describe('Constructor', () => {
    it.each([
      [0, 5],
      [Number.NaN, 5],
      [10, 0.5],
    ])('when rate is %p and burst %p, it throws a RangeError', (rate, burst) => {
      // Act
      const build = (): TokenBucket => bucket(manualClock(), rate, burst);

      // Assess
      expect(build).toThrow(RangeError);
    });
  });
});

describe('Function: perInstanceRate', () => {
  it('when a fleet of maxConcurrency instances shares a provider limit, it gives each its share', () => {
    // Act
    const rate = perInstanceRate(50, 5);

    // Assess
    expect(rate).toBe(10);
  });

  it('when the concurrency is not a positive integer, it throws a RangeError', () => {
    // Act
    const compute = (): number => perInstanceRate(50, 0);

    // Assess
    expect(compute).toThrow(RangeError);
  });
});

describe('Property: token bucket', () => {
  const schedule = fc.array(
    fc.record({ advanceMs: fc.integer({ min: 0, max: 2_000 }), takes: fc.integer({ min: 0, max: 8 }) }),
    { maxLength: 50 },
  );

  it('when callers take at any pace, no interval sees more than burst + rate × its length', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 20 }),
        schedule,
        (rate, burst, steps) => {
          // Prepare
          const clock = manualClock();
          const b = bucket(clock, rate, burst);
          const grantedAt: number[] = [];

          // Act
          for (const step of steps) {
            clock.advance(step.advanceMs);
            for (let i = 0; i < step.takes; i += 1) if (b.take().granted) grantedAt.push(clock.ms());
          }

          // Assess: grants i..j happened within [t_i, t_j].
          for (let i = 0; i < grantedAt.length; i += 1) {
            for (let j = i; j < grantedAt.length; j += 1) {
              const span = (grantedAt[j] as number) - (grantedAt[i] as number);
              expect(j - i + 1).toBeLessThanOrEqual(burst + (rate * span) / 1000 + 1e-9);
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('when a take is refused, waiting exactly the time it names is enough for the next take', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 20 }),
        schedule,
        (rate, burst, steps) => {
          // Prepare
          const clock = manualClock();
          const b = bucket(clock, rate, burst);

          // Act / Assess
          for (const step of steps) {
            clock.advance(step.advanceMs);
            for (let i = 0; i < step.takes; i += 1) {
              const result = b.take();
              if (!result.granted) {
                clock.advance(result.retryAfterMs);
                expect(b.take().granted).toBe(true);
              }
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
