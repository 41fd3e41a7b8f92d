import {
  consumerAdmission,
  DEGRADE_DEFER,
  degradeDeferSeconds,
  MAX_DEFER_SECONDS,
  waitDeferSeconds,
} from '../../../lib/core/deferral';

describe('Function: consumerAdmission', () => {
  it.each([
    ['critical', true, 'proceed'],
    ['deferrable', true, 'defer'],
    // Shed at the producer; a job already queued is deferred, never dropped (B3).
    ['sheddable', true, 'defer'],
    ['sheddable', false, 'proceed'],
    ['deferrable', false, 'proceed'],
  ] as const)(
    'when a consumer holds %s work and degraded is %p, it answers %s',
    (criticality, degraded, expected) => {
      // Act
      const decision = consumerAdmission(criticality, degraded);

      // Assess
      expect(decision).toBe(expected);
    },
  );
});

describe('Function: degradeDeferSeconds', () => {
  it('when randomness runs from 0 to almost 1, it spreads the delay over base … base + jitter', () => {
    // Act
    const lowest = degradeDeferSeconds(() => 0);
    const highest = degradeDeferSeconds(() => 0.999999);

    // Assess
    expect(lowest).toBe(DEGRADE_DEFER.baseSeconds);
    expect(highest).toBe(DEGRADE_DEFER.baseSeconds + DEGRADE_DEFER.jitterSeconds);
  });
});

describe('Function: waitDeferSeconds', () => {
  it.each([
    [0, 0, 1],
    [1, 0, 1],
    [6_000, 0, 6],
    [6_001, 0, 7],
    [6_000, 0.999, 7],
    [10 * 60 * 60 * 1000, 0.5, MAX_DEFER_SECONDS],
    [-5, 0, 1],
  ])('when the wait is %p ms and random is %p, it defers %p s', (waitMs, random, expected) => {
    // Act
    const seconds = waitDeferSeconds(waitMs, () => random);

    // Assess
    expect(seconds).toBe(expected);
  });
});
