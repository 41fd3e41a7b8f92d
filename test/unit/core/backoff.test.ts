import fc from 'fast-check';
import { backoffCeilingSeconds, type RetryPolicy } from '../../../lib/config';
import { stageConfig } from '../../../lib/adapters/lambda-env';
import {
  PERMISSION_HOLD_BASE_SECONDS,
  SQS_MAX_VISIBILITY_SECONDS,
  decideRetry,
  fullJitterDelaySeconds,
  permissionHoldCeilingSeconds,
  permissionHoldSeconds,
  permissionHoldSecondsToRedrive,
  type RetryDecision,
} from '../../../lib/core/backoff';

/** The largest double below 1: the top of Math.random's range. */
const ALMOST_ONE = 1 - Number.EPSILON / 2;

/** Any policy the schema accepts (base ≥ 1, cap ≤ 12 h), including a base above the cap. */
const anyPolicy: fc.Arbitrary<RetryPolicy> = fc.record({
  baseDelaySeconds: fc.integer({ min: 1, max: 100_000 }),
  maxDelaySeconds: fc.integer({ min: 1, max: 43_200 }),
});
const anyFailedAttempt = fc.integer({ min: 1, max: 2_000 });
/** A uniform draw in [0, 1), as Math.random gives. */
const anyDraw = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

const POLICY: RetryPolicy = { baseDelaySeconds: 5, maxDelaySeconds: 300 };

describe('Function: fullJitterDelaySeconds', () => {
  it('when the attempt fails, the delay is a whole number within [0, min(cap, base × 2^(n-1))]', () => {
    fc.assert(
      fc.property(anyPolicy, anyFailedAttempt, anyDraw, (policy, attempt, draw) => {
        // Act
        const delay = fullJitterDelaySeconds(policy, attempt, () => draw);

        // Assess
        const ceiling = Math.min(policy.maxDelaySeconds, policy.baseDelaySeconds * 2 ** (attempt - 1));
        expect(Number.isInteger(delay)).toBe(true);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(ceiling);
      }),
    );
  });

  it('when random() returns 0, the delay is 0', () => {
    fc.assert(
      fc.property(anyPolicy, anyFailedAttempt, (policy, attempt) => {
        // Act
        const delay = fullJitterDelaySeconds(policy, attempt, () => 0);

        // Assess
        expect(delay).toBe(0);
      }),
    );
  });

  it('when random() returns the largest value below 1, the delay is exactly the ceiling', () => {
    fc.assert(
      fc.property(anyPolicy, anyFailedAttempt, (policy, attempt) => {
        // Act
        const delay = fullJitterDelaySeconds(policy, attempt, () => ALMOST_ONE);

        // Assess
        expect(delay).toBe(backoffCeilingSeconds(policy, attempt));
      }),
    );
  });

  it('when random() grows, the delay never shrinks (the draw alone decides where in the range it falls)', () => {
    fc.assert(
      fc.property(anyPolicy, anyFailedAttempt, anyDraw, anyDraw, (policy, attempt, a, b) => {
        // Prepare
        const [low, high] = a <= b ? [a, b] : [b, a];

        // Act
        const lowDelay = fullJitterDelaySeconds(policy, attempt, () => low);
        const highDelay = fullJitterDelaySeconds(policy, attempt, () => high);

        // Assess
        expect(lowDelay).toBeLessThanOrEqual(highDelay);
      }),
    );
  });

  it.each([
    { attempt: 1, ceiling: 5 },
    { attempt: 2, ceiling: 10 },
    { attempt: 3, ceiling: 20 },
    { attempt: 7, ceiling: 300 },
    { attempt: 1_100, ceiling: 300 },
  ])(
    'when attempt $attempt of a 5 s / 300 s policy fails, the ceiling is $ceiling s',
    ({ attempt, ceiling }) => {
      // Act
      const delay = fullJitterDelaySeconds(POLICY, attempt, () => ALMOST_ONE);

      // Assess
      expect(delay).toBe(ceiling);
    },
  );

  it('when the draws are uniform, every whole second from 0 to the ceiling can occur', () => {
    // Prepare: a 3 s ceiling; draws at the middle of each quarter of [0, 1).
    const policy: RetryPolicy = { baseDelaySeconds: 3, maxDelaySeconds: 60 };

    // Act
    const delays = [0.125, 0.375, 0.625, 0.875].map((draw) => fullJitterDelaySeconds(policy, 1, () => draw));

    // Assess
    expect(delays).toEqual([0, 1, 2, 3]);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])(
    'when the failed attempt is %p, it throws a RangeError',
    (attempt) => {
      // Act
      const act = (): number => fullJitterDelaySeconds(POLICY, attempt, () => 0.5);

      // Assess
      expect(act).toThrow(RangeError);
    },
  );
});

describe('Function: decideRetry', () => {
  it('when the attempt is below maxAttempts, it retries; at or above it, it dead-letters', () => {
    fc.assert(
      fc.property(
        anyPolicy,
        fc.integer({ min: 2, max: 50 }),
        fc.integer({ min: 1, max: 60 }),
        anyDraw,
        (policy, maxAttempts, attempt, draw) => {
          // Act
          const decision = decideRetry(policy, maxAttempts, attempt, () => draw);

          // Assess
          if (attempt >= maxAttempts) {
            expect(decision).toEqual({ action: 'dead-letter' });
          } else {
            expect(decision).toEqual({
              action: 'retry',
              delaySeconds: fullJitterDelaySeconds(policy, attempt, () => draw),
            });
          }
        },
      ),
    );
  });

  it('when a poison message fails every attempt, it is tried exactly maxAttempts times before the DLQ (R6)', () => {
    fc.assert(
      fc.property(anyPolicy, fc.integer({ min: 2, max: 50 }), anyDraw, (policy, maxAttempts, draw) => {
        // Prepare
        const decisions: RetryDecision[] = [];
        let attempts = 0;
        let deadLettered = false;

        // Act: deliver, fail, decide, until the message leaves the queue (bounded so a bug cannot hang).
        for (let receive = 1; receive <= maxAttempts + 10 && !deadLettered; receive += 1) {
          attempts += 1;
          const decision = decideRetry(policy, maxAttempts, receive, () => draw);
          decisions.push(decision);
          deadLettered = decision.action === 'dead-letter';
        }

        // Assess
        expect(deadLettered).toBe(true);
        expect(attempts).toBe(maxAttempts);
        expect(decisions.filter((d) => d.action === 'retry')).toHaveLength(maxAttempts - 1);
        for (const [index, decision] of decisions.slice(0, -1).entries()) {
          expect(decision.action === 'retry' && decision.delaySeconds).toBeLessThanOrEqual(
            backoffCeilingSeconds(policy, index + 1),
          );
        }
      }),
    );
  });

  it('when retries are decided, it draws randomness once per retry and never for a dead-letter', () => {
    // Prepare
    const random = jest.fn(() => 0.5);

    // Act
    const decisions = [1, 2, 3].map((attempt) => decideRetry(POLICY, 3, attempt, random));

    // Assess
    expect(random).toHaveBeenCalledTimes(2);
    expect(decisions).toEqual([
      { action: 'retry', delaySeconds: Math.floor(0.5 * 6) },
      { action: 'retry', delaySeconds: Math.floor(0.5 * 11) },
      { action: 'dead-letter' },
    ]);
  });

  it.each([0, -1, 1.5, Number.NaN])(
    'when the attempt is %p (below maxAttempts), it throws a RangeError',
    (attempt) => {
      // Act
      const act = (): RetryDecision => decideRetry(POLICY, 5, attempt, () => 0.5);

      // Assess
      expect(act).toThrow(RangeError);
    },
  );
});

describe('Function: permissionHoldSeconds', () => {
  it('when a receive is denied, the hold is a whole number within [ceiling/2, ceiling], ceiling = min(cap, 300 × 2^(n-1))', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2_000 }),
        anyDraw,
        fc.integer({ min: 1, max: SQS_MAX_VISIBILITY_SECONDS }),
        (attempt, draw, cap) => {
          // Act
          const hold = permissionHoldSeconds(attempt, () => draw, cap);

          // Assess
          const ceiling = Math.min(cap, PERMISSION_HOLD_BASE_SECONDS * 2 ** (attempt - 1));
          expect(Number.isInteger(hold)).toBe(true);
          expect(hold).toBeGreaterThanOrEqual(Math.ceil(ceiling / 2));
          expect(hold).toBeLessThanOrEqual(ceiling);
        },
      ),
    );
  });

  it('when the draws are at their ends, the first hold spans 150 to 300 s and the fifth 2400 to 4800 s', () => {
    // Act
    const first = [permissionHoldSeconds(1, () => 0), permissionHoldSeconds(1, () => ALMOST_ONE)];
    const fifth = [permissionHoldSeconds(5, () => 0), permissionHoldSeconds(5, () => ALMOST_ONE)];

    // Assess
    expect(first).toEqual([150, 300]);
    expect(fifth).toEqual([2_400, 4_800]);
  });

  it('when the attempt is late, the hold never exceeds SQS maximum visibility (12 h)', () => {
    // Act
    const hold = permissionHoldSeconds(40, () => ALMOST_ONE);

    // Assess
    expect(permissionHoldCeilingSeconds(40)).toBe(SQS_MAX_VISIBILITY_SECONDS);
    expect(hold).toBe(SQS_MAX_VISIBILITY_SECONDS);
  });

  it.each([0, -1, 1.5, Number.NaN])('when the attempt is %p, it refuses it', (attempt) => {
    expect(() => permissionHoldSeconds(attempt, () => 0)).toThrow(RangeError);
  });
});

describe("Permission holds with a compressed base (the local platform's drills)", () => {
  it('when the base is 20 s, the ceilings are 20, 40, 80 … and the hold keeps its equal jitter', () => {
    expect([1, 2, 3].map((a) => permissionHoldCeilingSeconds(a, SQS_MAX_VISIBILITY_SECONDS, 20))).toEqual([
      20, 40, 80,
    ]);
    expect(permissionHoldSeconds(1, () => 0, SQS_MAX_VISIBILITY_SECONDS, 20)).toBe(10);
    expect(permissionHoldSeconds(1, () => 0.9999, SQS_MAX_VISIBILITY_SECONDS, 20)).toBe(20);
  });
});

describe('Function: permissionHoldSecondsToRedrive', () => {
  it('when every receive of a reference job type is denied, SQS redrives it after the sum of its holds', () => {
    // Prepare
    const jobTypes = stageConfig('dev', 'eu-west-1').jobTypes;

    // Act
    const times = Object.fromEntries(
      jobTypes.map((j) => [
        j.name,
        {
          maxReceiveCount: j.maxReceiveCount,
          ...permissionHoldSecondsToRedrive(
            j.maxReceiveCount,
            SQS_MAX_VISIBILITY_SECONDS - j.visibilityTimeoutSeconds,
          ),
        },
      ]),
    );

    // Assess: the figures runbooks/permission-denied.md gives.
    expect(times).toEqual({
      'payment.capture': { maxReceiveCount: 5, shortest: 4_650, longest: 9_300 },
      'notification.send': { maxReceiveCount: 4, shortest: 2_250, longest: 4_500 },
      'inventory.reserve': { maxReceiveCount: 6, shortest: 9_450, longest: 18_900 },
    });
  });

  it('when the receive count is large, the holds reach the cap and each adds at most 12 h', () => {
    // Act
    const ten = permissionHoldSecondsToRedrive(10);

    // Assess: 300 × (2^8 − 1) over the first 8 receives, then two capped holds.
    expect(ten.longest).toBe(300 * 255 + 2 * SQS_MAX_VISIBILITY_SECONDS);
    expect(ten.shortest).toBe(150 * 255 + SQS_MAX_VISIBILITY_SECONDS);
  });
});
