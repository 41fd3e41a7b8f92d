import fc from 'fast-check';
import { backoffCeilingSeconds, type RetryPolicy } from '../../../lib/config';
import {
  BACKOFF_STRATEGIES,
  CONTENTION_PROTOCOLS,
  SIMULATION_MODEL,
  backoffDelay,
  callsPerAttempt,
  mulberry32,
  simulateBackoff,
  simulateContention,
  spread,
  type BackoffStrategyName,
  type ContentionModel,
  type ContentionProtocol,
} from '../../../bench/backoff';

const POLICY: RetryPolicy = { baseDelaySeconds: 10, maxDelaySeconds: 2_000 };
const MODEL: ContentionModel = { clients: 100, policy: POLICY };
const ONE_CALL: ContentionModel = { ...MODEL, protocol: 'write-returns-current' };
/** The emulator's conditions: one request at a time, 11.6 ms each, no network; base 10 ms, cap 1 s. */
const SERIALIZING: ContentionModel = {
  clients: 100,
  policy: { baseDelaySeconds: 10, maxDelaySeconds: 1_000 },
  networkMeanMs: 0,
  networkSdMs: 0,
  serviceMs: 11.6,
};

const anyStrategy = fc.constantFrom<BackoffStrategyName>(...BACKOFF_STRATEGIES);
const anyProtocol = fc.constantFrom<ContentionProtocol>(...CONTENTION_PROTOCOLS);
const anySeed = fc.integer({ min: 0, max: 2 ** 32 - 1 });
/** Small enough that a property runs many cases quickly, large enough to contend. */
const anyClients = fc.integer({ min: 1, max: 40 });
/** 0 is Brooker's server; above, a server that serializes requests. */
const anyServiceMs = fc.oneof(fc.constant(0), fc.double({ min: 0.1, max: 30, noNaN: true }));
const anyPolicy: fc.Arbitrary<RetryPolicy> = fc.record({
  baseDelaySeconds: fc.integer({ min: 1, max: 100 }),
  maxDelaySeconds: fc.integer({ min: 1, max: 5_000 }),
});

describe('Function: mulberry32', () => {
  it('when given the same seed, it gives the same sequence, within [0, 1)', () => {
    // Act
    const a = Array.from({ length: 1_000 }, mulberry32(42));
    const b = Array.from({ length: 1_000 }, mulberry32(42));

    // Assess
    expect(a).toEqual(b);
    expect(Math.min(...a)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...a)).toBeLessThan(1);
  });

  it('when given different seeds, the sequences differ', () => {
    // Act
    const a = Array.from({ length: 10 }, mulberry32(1));
    const b = Array.from({ length: 10 }, mulberry32(2));

    // Assess
    expect(a).not.toEqual(b);
  });
});

describe('Function: backoffDelay', () => {
  it('when there is no backoff, the delay is always 0', () => {
    // Act
    const delays = [1, 2, 10].map((attempt) => backoffDelay('none', POLICY)(attempt, () => 0.9));

    // Assess
    expect(delays).toEqual([0, 0, 0]);
  });

  it('when exponential without jitter, the delay is the ceiling whatever the draw', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 60 }), fc.double({ min: 0, max: 0.999 }), (attempt, draw) => {
        // Act
        const delay = backoffDelay('exponential', POLICY)(attempt, () => draw);

        // Assess
        expect(delay).toBe(backoffCeilingSeconds(POLICY, attempt));
      }),
    );
  });

  it('when full jitter, the delay is a whole number from 0 to the ceiling and moves with the draw', () => {
    // Act
    const low = backoffDelay('full-jitter', POLICY)(3, () => 0);
    const high = backoffDelay('full-jitter', POLICY)(3, () => 0.999_999);

    // Assess
    expect(low).toBe(0);
    expect(high).toBe(backoffCeilingSeconds(POLICY, 3));
  });
});

describe('Function: simulateContention', () => {
  it.each(BACKOFF_STRATEGIES)('when run twice with one seed (%s), the outcomes are identical', (strategy) => {
    // Act
    const first = simulateContention(strategy, MODEL, 7);
    const second = simulateContention(strategy, MODEL, 7);

    // Assess
    expect(second).toEqual(first);
  });

  it('when the seed changes, full jitter contends differently', () => {
    // Act
    const first = simulateContention('full-jitter', MODEL, 1);
    const second = simulateContention('full-jitter', MODEL, 2);

    // Assess
    expect(second.attemptsByClient).not.toEqual(first.attemptsByClient);
  });

  it.each(BACKOFF_STRATEGIES)(
    'when 100 clients contend (%s), every client commits exactly once',
    (strategy) => {
      // Act
      const outcome = simulateContention(strategy, MODEL, 3);

      // Assess
      expect(outcome.successes).toBe(100);
      expect(outcome.finalVersion).toBe(100);
      expect([...outcome.successRankByClient].sort((a, b) => a - b)).toEqual(
        Array.from({ length: 100 }, (_, i) => i + 1),
      );
      expect(outcome.completionMs).toBeGreaterThan(0);
    },
  );

  it.each(BACKOFF_STRATEGIES)('when one client is alone (%s), it makes one call', (strategy) => {
    // Act
    const outcome = simulateContention(strategy, { clients: 1, policy: POLICY }, 11);

    // Assess
    expect(outcome.attempts).toBe(1);
    expect(outcome.successes).toBe(1);
  });

  it('when any number of clients contend with any strategy and protocol, exactly N commit and the k-th to commit made at most k attempts', () => {
    fc.assert(
      fc.property(
        anyStrategy,
        anyProtocol,
        anyClients,
        anyPolicy,
        anyServiceMs,
        anySeed,
        (strategy, protocol, clients, policy, serviceMs, seed) => {
          // Act
          const outcome = simulateContention(strategy, { clients, policy, serviceMs, protocol }, seed);

          // Assess: a failure needs another client's commit inside the attempt's window (since its
          // read, or since the version it last learned), and one client's windows do not overlap,
          // so the k-th to commit failed at most k − 1 times.
          expect(outcome.successes).toBe(clients);
          expect(outcome.finalVersion).toBe(clients);
          for (const [i, attempts] of outcome.attemptsByClient.entries()) {
            expect(attempts).toBeGreaterThanOrEqual(1);
            expect(attempts).toBeLessThanOrEqual(outcome.successRankByClient[i] ?? 0);
          }
          expect(outcome.attempts).toBeLessThanOrEqual((clients * (clients + 1)) / 2);
          expect(outcome.calls).toBe(callsPerAttempt(protocol) * outcome.attempts);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('when a serializing server meets clients without backoff, the k-th to commit made k attempts and the server was never idle', () => {
    // Prepare: no network, so the server's queue alone orders the requests.
    const model: ContentionModel = {
      clients: 10,
      policy: POLICY,
      networkMeanMs: 0,
      networkSdMs: 0,
      serviceMs: 5,
    };

    // Act
    const outcome = simulateContention('none', model, 1);

    // Assess: 1 + 2 + … + 10 attempts, two requests each, 5 ms per request back to back.
    expect(outcome.attempts).toBe(55);
    expect(outcome.calls).toBe(110);
    expect(outcome.attemptsByClient).toEqual(outcome.successRankByClient);
    expect(outcome.completionMs).toBeCloseTo(2 * 55 * 5, 6);
  });

  it('when the server serializes, full jitter still lets every client commit once', () => {
    // Act
    const outcome = simulateContention('full-jitter', { clients: 100, policy: POLICY, serviceMs: 16 }, 5);

    // Assess
    expect(outcome.successes).toBe(100);
    expect(outcome.finalVersion).toBe(100);
  });

  it.each(BACKOFF_STRATEGIES)('when no protocol is given (%s), it is read-then-write', (strategy) => {
    // Act
    const implicit = simulateContention(strategy, MODEL, 4);
    const explicit = simulateContention(strategy, { ...MODEL, protocol: 'read-then-write' }, 4);

    // Assess
    expect(implicit).toEqual(explicit);
    expect(implicit.calls).toBe(2 * implicit.attempts);
  });

  it.each(BACKOFF_STRATEGIES)(
    'when run twice with one seed with write-returns-current (%s), the outcomes are identical',
    (strategy) => {
      // Act
      const first = simulateContention(strategy, ONE_CALL, 7);
      const second = simulateContention(strategy, ONE_CALL, 7);

      // Assess
      expect(second).toEqual(first);
    },
  );

  it.each(BACKOFF_STRATEGIES)(
    'when 100 clients contend with write-returns-current (%s), every client commits exactly once, one call per attempt',
    (strategy) => {
      // Act
      const outcome = simulateContention(strategy, ONE_CALL, 3);

      // Assess
      expect(outcome.successes).toBe(100);
      expect(outcome.finalVersion).toBe(100);
      expect([...outcome.successRankByClient].sort((a, b) => a - b)).toEqual(
        Array.from({ length: 100 }, (_, i) => i + 1),
      );
      expect(outcome.calls).toBe(outcome.attempts);
      expect(outcome.completionMs).toBeGreaterThan(0);
    },
  );

  it.each(BACKOFF_STRATEGIES)(
    'when one client is alone with write-returns-current (%s), its first write on version 0 commits',
    (strategy) => {
      // Act
      const outcome = simulateContention(strategy, { ...ONE_CALL, clients: 1 }, 11);

      // Assess
      expect(outcome.attempts).toBe(1);
      expect(outcome.calls).toBe(1);
      expect(outcome.finalVersion).toBe(1);
    },
  );

  it('when a serializing server meets clients without backoff with write-returns-current, they make N(N+1)/2 calls back to back', () => {
    // Prepare
    const model: ContentionModel = { ...SERIALIZING, protocol: 'write-returns-current' };

    // Act
    const outcome = simulateContention('none', model, 1);

    // Assess: every round, the first client to write commits and every later one carries the
    // version from before that commit: 100 + 99 + … + 1 writes, 11.6 ms each, never idle.
    expect(outcome.attempts).toBe(5_050);
    expect(outcome.calls).toBe(5_050);
    expect(outcome.attemptsByClient).toEqual(outcome.successRankByClient);
    expect(outcome.completionMs).toBeCloseTo(5_050 * 11.6, 6);
  });

  it.each([1, 2, 3, 4, 5])(
    'when a serializing server meets write-returns-current (seed %p), full jitter finishes before exponential without jitter',
    (seed) => {
      // Prepare
      const model: ContentionModel = { ...SERIALIZING, protocol: 'write-returns-current' };

      // Act
      const exponential = simulateContention('exponential', model, seed);
      const fullJitter = simulateContention('full-jitter', model, seed);

      // Assess
      expect(fullJitter.completionMs).toBeLessThan(exponential.completionMs);
      expect(fullJitter.calls).toBeLessThan(exponential.calls);
    },
  );

  it.each([0, -1, 2.5])('when clients is %p, it throws a RangeError', (clients) => {
    // Act
    const act = (): unknown => simulateContention('none', { clients, policy: POLICY }, 1);

    // Assess
    expect(act).toThrow(RangeError);
  });
});

describe('Function: simulateBackoff', () => {
  it('when the seeds are the same, the figures are the same, one per strategy in report order', () => {
    // Act
    const first = simulateBackoff(3);
    const second = simulateBackoff(3);

    // Assess
    expect(second).toEqual(first);
    expect(first.figures.map((f) => f.strategy)).toEqual(BACKOFF_STRATEGIES);
    for (const f of first.figures) {
      expect(f.calls.min).toBeLessThanOrEqual(f.calls.median);
      expect(f.calls.median).toBeLessThanOrEqual(f.calls.max);
    }
  });

  it('when given write-returns-current, the results name it and differ from read-then-write', () => {
    // Act
    const readThenWrite = simulateBackoff(3);
    const oneCall = simulateBackoff(3, { ...SIMULATION_MODEL, protocol: 'write-returns-current' });

    // Assess
    expect(readThenWrite.protocol).toBe('read-then-write');
    expect(oneCall.protocol).toBe('write-returns-current');
    expect(oneCall.figures).not.toEqual(readThenWrite.figures);
  });
});

describe('Function: callsPerAttempt', () => {
  it.each([
    { protocol: 'read-then-write' as const, expected: 2 },
    { protocol: 'write-returns-current' as const, expected: 1 },
  ])('when the protocol is $protocol, an attempt is $expected call(s)', ({ protocol, expected }) => {
    // Act
    const calls = callsPerAttempt(protocol);

    // Assess
    expect(calls).toBe(expected);
  });
});

describe('Function: spread', () => {
  it.each([
    { values: [3], expected: { median: 3, min: 3, max: 3 } },
    { values: [5, 1, 3], expected: { median: 3, min: 1, max: 5 } },
    { values: [4, 1, 2, 3], expected: { median: 2.5, min: 1, max: 4 } },
  ])('when given $values, it gives $expected', ({ values, expected }) => {
    // Act
    const result = spread(values);

    // Assess
    expect(result).toEqual(expected);
  });

  it('when given no values, it throws a RangeError', () => {
    // Act
    const act = (): unknown => spread([]);

    // Assess
    expect(act).toThrow(RangeError);
  });
});
