import fc from 'fast-check';
import { CircuitBreaker, type CircuitBreakerOptions } from '../../../lib/core/circuit-breaker';
import { CircuitOpenError, classifyError, PermanentError, TransientError } from '../../../lib/core/errors';
import { manualClock, type ManualClock } from '../../helpers/manual-clock';

const SETTINGS = { name: 'messaging-provider', failureThreshold: 3, windowMs: 10_000, coolDownMs: 20_000 };

function breaker(clock: ManualClock, overrides: Partial<CircuitBreakerOptions> = {}): CircuitBreaker {
  return new CircuitBreaker({ ...SETTINGS, clock, ...overrides });
}

const fail = (): Promise<never> => Promise.reject(new TransientError('provider unavailable'));
const succeed = (): Promise<string> => Promise.resolve('ok');

/** Runs `call` through `cb` and returns what came of it, without throwing. */
async function attempt(
  cb: CircuitBreaker,
  call: () => Promise<unknown>,
): Promise<'ok' | 'failed' | 'refused'> {
  try {
    await cb.execute(call);
    return 'ok';
  } catch (error) {
    return error instanceof CircuitOpenError ? 'refused' : 'failed';
  }
}

describe('Class: CircuitBreaker', () => {
  describe('Method: execute', () => {
    it('when the dependency answers, it passes calls and results through while closed', async () => {
      // Prepare
      const cb = breaker(manualClock());

      // Act
      const result = await cb.execute(succeed);

      // Assess
      expect(result).toBe('ok');
      expect(cb.snapshot()).toEqual({ state: 'closed', recentFailures: 0, retryAfterMs: 0 });
    });

    it('when failures reach the threshold within the window, it opens and refuses without calling', async () => {
      // Prepare
      const clock = manualClock();
      const cb = breaker(clock);
      for (let i = 0; i < 3; i += 1) {
        await attempt(cb, fail);
        clock.advance(1_000);
      }
      const call = jest.fn(succeed);

      // Act
      const error = await cb.execute(call).catch((e: unknown) => e);

      // Assess
      expect(error).toBeInstanceOf(CircuitOpenError);
      expect(classifyError(error)).toBe('transient');
      expect(call).not.toHaveBeenCalled();
      expect(cb.snapshot()).toMatchObject({ state: 'open', retryAfterMs: 19_000 });
    });

    it('when failures are spread wider than the window, it stays closed', async () => {
      // Prepare
      const clock = manualClock();
      const cb = breaker(clock);

      // Act
      for (let i = 0; i < 6; i += 1) {
        await attempt(cb, fail);
        clock.advance(5_000);
      }

      // Assess
      expect(cb.snapshot().state).toBe('closed');
    });

    it('when a call fails permanently (the provider refused the request), it does not count as a failure', async () => {
      // Prepare
      const cb = breaker(manualClock());

      // Act
      for (let i = 0; i < 5; i += 1) {
        await attempt(cb, () => Promise.reject(new PermanentError('400 bad recipient')));
      }

      // Assess
      expect(cb.snapshot()).toMatchObject({ state: 'closed', recentFailures: 0 });
    });

    it('when some calls succeed between failures in the window, the failures still open it', async () => {
      // Prepare
      const cb = breaker(manualClock());

      // Act
      for (const call of [fail, succeed, fail, succeed, fail]) await attempt(cb, call);

      // Assess
      expect(cb.snapshot().state).toBe('open');
    });

    it('when the cool-down has passed, it lets one probe through; a success closes the circuit', async () => {
      // Prepare
      const clock = manualClock();
      const cb = breaker(clock);
      for (let i = 0; i < 3; i += 1) await attempt(cb, fail);
      clock.advance(20_000);

      // Act
      const before = cb.snapshot().state;
      const probe = await attempt(cb, succeed);

      // Assess
      expect(before).toBe('half-open');
      expect(probe).toBe('ok');
      expect(cb.snapshot()).toEqual({ state: 'closed', recentFailures: 0, retryAfterMs: 0 });
    });

    it('when the probe fails, it opens again for a full cool-down', async () => {
      // Prepare
      const clock = manualClock();
      const cb = breaker(clock);
      for (let i = 0; i < 3; i += 1) await attempt(cb, fail);
      clock.advance(25_000);

      // Act
      const probe = await attempt(cb, fail);

      // Assess
      expect(probe).toBe('failed');
      expect(cb.snapshot()).toMatchObject({ state: 'open', retryAfterMs: 20_000 });
    });

    it('when a probe is in flight, it refuses other calls until the probe settles', async () => {
      // Prepare
      const clock = manualClock();
      const cb = breaker(clock);
      for (let i = 0; i < 3; i += 1) await attempt(cb, fail);
      clock.advance(20_000);
      let finishProbe: (value: string) => void = () => undefined;
      const probe = cb.execute(() => new Promise<string>((resolve) => (finishProbe = resolve)));
      const other = jest.fn(succeed);

      // Act
      const concurrent = await attempt(cb, other);
      finishProbe('ok');
      await probe;

      // Assess
      expect(concurrent).toBe('refused');
      expect(other).not.toHaveBeenCalled();
      expect(cb.snapshot().state).toBe('closed');
    });

    it('when a slow call that started before the opening succeeds, it does not close the circuit', async () => {
      // Prepare
      const clock = manualClock();
      const cb = breaker(clock);
      let finishSlow: (value: string) => void = () => undefined;
      const slow = cb.execute(() => new Promise<string>((resolve) => (finishSlow = resolve)));
      for (let i = 0; i < 3; i += 1) await attempt(cb, fail);

      // Act
      finishSlow('late');
      await slow;

      // Assess
      expect(cb.snapshot().state).toBe('open');
    });
  });

  describe('Constructor', () => {
    it.each([['failureThreshold'], ['windowMs'], ['coolDownMs'], ['halfOpenProbes']])(
      'when %s is not a positive integer, it throws a RangeError',
      (field) => {
        // Act
        const build = (): CircuitBreaker => breaker(manualClock(), { [field]: 0 });

        // Assess
        expect(build).toThrow(RangeError);
      },
    );
  });
});

describe('Property: circuit breaker', () => {
  type Step = { readonly advanceMs: number; readonly outcome: 'ok' | 'fail' };
  const steps = fc.array(
    fc.record({ advanceMs: fc.integer({ min: 0, max: 30_000 }), outcome: fc.constantFrom('ok', 'fail') }),
    { maxLength: 60 },
  ) as fc.Arbitrary<Step[]>;

  it('when the dependency always fails, it calls it at most `threshold` times per window before opening, then at most once per cool-down', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 30_000 }), { maxLength: 80 }), async (gaps) => {
        // Prepare
        const clock = manualClock();
        const cb = breaker(clock);
        const calls: number[] = [];
        let openedAt: number | undefined;

        // Act
        for (const gap of gaps) {
          clock.advance(gap);
          await attempt(cb, () => {
            calls.push(clock.ms());
            return fail();
          });
          if (openedAt === undefined && cb.snapshot().state === 'open') openedAt = clock.ms();
        }

        // Assess
        const beforeOpen = calls.filter((at) => openedAt === undefined || at <= openedAt);
        for (const at of beforeOpen) {
          const inWindow = beforeOpen.filter((other) => other > at - SETTINGS.windowMs && other <= at);
          expect(inWindow.length).toBeLessThanOrEqual(SETTINGS.failureThreshold);
        }
        const afterOpen = calls.filter((at) => openedAt !== undefined && at > openedAt);
        let previous = openedAt ?? 0;
        for (const at of afterOpen) {
          expect(at - previous).toBeGreaterThanOrEqual(SETTINGS.coolDownMs);
          previous = at;
        }
      }),
      { numRuns: 300 },
    );
  });

  it('when the dependency never fails, it never refuses a call', async () => {
    await fc.assert(
      fc.asyncProperty(steps, async (schedule) => {
        // Prepare
        const clock = manualClock();
        const cb = breaker(clock);

        // Act
        const results: string[] = [];
        for (const step of schedule) {
          clock.advance(step.advanceMs);
          results.push(await attempt(cb, succeed));
        }

        // Assess
        expect(results.filter((r) => r !== 'ok')).toEqual([]);
      }),
      { numRuns: 200 },
    );
  });

  it('when it refuses a call, it never reaches the dependency, and it says how long to wait', async () => {
    await fc.assert(
      fc.asyncProperty(steps, async (schedule) => {
        // Prepare
        const clock = manualClock();
        const cb = breaker(clock);

        // Act / Assess
        for (const step of schedule) {
          clock.advance(step.advanceMs);
          const wait = cb.snapshot().retryAfterMs;
          let reached = false;
          const result = await attempt(cb, () => {
            reached = true;
            return step.outcome === 'ok' ? succeed() : fail();
          });
          expect(result === 'refused').toBe(!reached);
          expect(result === 'refused').toBe(wait > 0);
        }
      }),
      { numRuns: 300 },
    );
  });
  describe('Option: limitInFlightToThreshold', () => {
    /** A call that settles when told to, counting how many are in flight. */
    function gate(): {
      call: () => Promise<string>;
      settle: (ok: boolean) => void;
      inFlight: () => number;
      most: () => number;
    } {
      const pending: ((ok: boolean) => void)[] = [];
      let inFlight = 0;
      let most = 0;
      return {
        call: () => {
          inFlight += 1;
          most = Math.max(most, inFlight);
          return new Promise<string>((resolve, reject) => {
            pending.push((ok) => {
              inFlight -= 1;
              if (ok) resolve('ok');
              else reject(new TransientError('provider unavailable'));
            });
          });
        },
        settle: (ok) => pending.shift()?.(ok),
        inFlight: () => inFlight,
        most: () => most,
      };
    }
    const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

    it('when more calls come than the threshold while the dependency is healthy, it runs the threshold at once and the rest as calls settle', async () => {
      // Prepare
      const cb = breaker(manualClock(), { limitInFlightToThreshold: true });
      const g = gate();

      // Act
      const results = Array.from({ length: 7 }, () => attempt(cb, g.call));
      await turn();
      const atOnce = g.inFlight();
      while (g.inFlight() > 0) {
        g.settle(true);
        await turn();
      }

      // Assess
      expect(atOnce).toBe(3);
      expect(await Promise.all(results)).toEqual(Array(7).fill('ok'));
      expect(g.most()).toBe(3);
    });

    it('when the dependency fails every call, at most the threshold are made before the circuit opens, and the held ones are refused', async () => {
      // Prepare
      const cb = breaker(manualClock(), { limitInFlightToThreshold: true });
      const g = gate();

      // Act
      const results = Array.from({ length: 10 }, () => attempt(cb, g.call));
      await turn();
      while (g.inFlight() > 0) {
        g.settle(false);
        await turn();
      }
      const outcomes = await Promise.all(results);

      // Assess
      expect(outcomes.filter((o) => o === 'failed')).toHaveLength(3);
      expect(outcomes.filter((o) => o === 'refused')).toHaveLength(7);
      expect(cb.snapshot().state).toBe('open');
    });

    it('when failures are counted in the window, fewer calls run at once: in flight plus failures stay within the threshold', async () => {
      // Prepare: one failure already counted.
      const cb = breaker(manualClock(), { limitInFlightToThreshold: true });
      await attempt(cb, fail);
      const g = gate();

      // Act
      const results = Array.from({ length: 4 }, () => attempt(cb, g.call));
      await turn();
      const atOnce = g.inFlight();
      while (g.inFlight() > 0) {
        g.settle(true);
        await turn();
      }

      // Assess
      expect(atOnce).toBe(2);
      expect(await Promise.all(results)).toEqual(Array(4).fill('ok'));
    });

    it('when half-open, calls beyond the probe wait for its outcome: they run once it succeeds', async () => {
      // Prepare: opened by three failures, then cooled down.
      const clock = manualClock();
      const cb = breaker(clock, { limitInFlightToThreshold: true });
      for (let i = 0; i < 3; i += 1) await attempt(cb, fail);
      clock.advance(SETTINGS.coolDownMs);
      const g = gate();

      // Act
      const results = Array.from({ length: 4 }, () => attempt(cb, g.call));
      await turn();
      const duringProbe = g.inFlight();
      while (g.inFlight() > 0) {
        g.settle(true);
        await turn();
      }

      // Assess
      expect(duringProbe).toBe(1);
      expect(await Promise.all(results)).toEqual(Array(4).fill('ok'));
      expect(cb.snapshot().state).toBe('closed');
    });

    it('when it is not set, calls are never held back', async () => {
      // Prepare
      const cb = breaker(manualClock());
      const g = gate();

      // Act
      const results = Array.from({ length: 7 }, () => attempt(cb, g.call));
      await turn();
      const atOnce = g.inFlight();
      while (g.inFlight() > 0) g.settle(true);
      await Promise.all(results);

      // Assess
      expect(atOnce).toBe(7);
    });
  });
});
