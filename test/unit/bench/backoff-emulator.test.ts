import type { BackoffSimulationResults } from '../../../bench/backoff';
import {
  BACKOFF_TARGETS,
  backoffResultsByProtocol,
  ratioToExponential,
  type BackoffEmulatorResults,
  type BackoffResults,
  type LegacyBackoffResults,
} from '../../../bench/backoff-emulator';

const SPREAD = { median: 10, min: 9, max: 11 };
const FIGURES = [
  { strategy: 'none' as const, calls: SPREAD, timeMs: SPREAD },
  {
    strategy: 'exponential' as const,
    calls: { ...SPREAD, median: 200 },
    timeMs: { ...SPREAD, median: 1_000 },
  },
  { strategy: 'full-jitter' as const, calls: { ...SPREAD, median: 100 }, timeMs: { ...SPREAD, median: 400 } },
];
const SIMULATION: BackoffSimulationResults = {
  clients: 100,
  seeds: 3,
  policy: { baseDelaySeconds: 10, maxDelaySeconds: 1_000 },
  networkMeanMs: 0,
  networkSdMs: 0,
  serviceMs: 11.6,
  figures: FIGURES,
};
const EMULATOR: BackoffEmulatorResults = {
  clients: 100,
  runs: 3,
  policy: { baseDelaySeconds: 10, maxDelaySeconds: 1_000 },
  figures: FIGURES,
};

describe('Function: backoffResultsByProtocol', () => {
  it('when given results from before there were protocols, they are read-then-write', () => {
    // Prepare
    const legacy: LegacyBackoffResults = {
      simulation: SIMULATION,
      emulator: EMULATOR,
      emulatorModel: SIMULATION,
      targets: BACKOFF_TARGETS,
    };

    // Act
    const results = backoffResultsByProtocol(legacy);

    // Assess
    expect(results).toEqual({
      simulation: { 'read-then-write': SIMULATION },
      emulator: { 'read-then-write': EMULATOR },
      emulatorModel: { 'read-then-write': SIMULATION },
      targets: BACKOFF_TARGETS,
    });
  });

  it('when given per-protocol results with a protocol missing, they are kept as they are', () => {
    // Prepare
    const current: BackoffResults = {
      simulation: { 'read-then-write': SIMULATION, 'write-returns-current': SIMULATION },
      emulator: { 'write-returns-current': EMULATOR },
      emulatorModel: {},
      targets: BACKOFF_TARGETS,
    };

    // Act
    const results = backoffResultsByProtocol(current);

    // Assess
    expect(results).toEqual(current);
  });
});

describe('Function: ratioToExponential', () => {
  it('when full jitter has half the calls and 0.4 of the time, it gives those ratios', () => {
    // Act
    const calls = ratioToExponential(FIGURES, 'full-jitter', 'calls');
    const time = ratioToExponential(FIGURES, 'full-jitter', 'timeMs');

    // Assess
    expect(calls).toBe(0.5);
    expect(time).toBe(0.4);
  });
});
