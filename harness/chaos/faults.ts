/**
 * The chaos suite's faults and the named matrix of fault configurations. The numbers are the
 * reliability issue's: (1) before the side effect; (2) after the side effect, before the
 * idempotency record completes; (3) after completion, before the delete; (4) during stream
 * invalidation; (5) Redis down; (6) DynamoDB throttling and timeouts; (7) provider timeouts and
 * 5xx; (8) function timeout.
 */
import fc from 'fast-check';
import { INJECTED_POINT_LINE } from '../../lib/adapters/crash';

/** One fault the runner knows how to inject. */
export type FaultKind =
  /** (1) payment consumer process killed before it calls the provider. */
  | 'crash-before-side-effect'
  /** (2) killed after the provider charged, before the idempotency record and PAID commit. */
  | 'crash-after-side-effect'
  /**
   * (1) inventory consumer process killed holding the SKU's lease, before the stock write. The
   * lease-free path holds no lease, so the run sets the fences ahead (runner.ts setFencesAhead)
   * and every reservation takes the lease path.
   */
  | 'crash-holding-lock'
  /** (3) killed after the record completed with the transition, before the handler answered. */
  | 'crash-after-commit'
  /** (3) every consumer's poller loses the ack of a successful batch (no DeleteMessageBatch). */
  | 'lost-ack'
  /** (4) cache invalidator killed in the middle of a batch of invalidations. */
  | 'crash-during-invalidation'
  /** (5) the platform's redis-server stopped, restarted empty later. */
  | 'redis-down'
  /** (6) DynamoDB requests of every function throttled (ProvisionedThroughputExceeded). */
  | 'ddb-throttle'
  /** (6) DynamoDB requests of every function time out, unsent or after being applied. */
  | 'ddb-timeout'
  /** (7) providers slower than their clients' timeouts. */
  | 'provider-timeout'
  /** (7) providers answer 5xx, before and after the side effect. */
  | 'provider-5xx'
  /** (8) payment consumer hangs after the charge until the platform kills it at its timeout. */
  | 'payment-function-timeout'
  /** (8) cache invalidator hangs mid-batch until its timeout. */
  | 'invalidator-function-timeout';

/** The fault number of each kind. */
export const FAULT_NUMBER: Readonly<Record<FaultKind, number>> = {
  'crash-before-side-effect': 1,
  'crash-holding-lock': 1,
  'crash-after-side-effect': 2,
  'crash-after-commit': 3,
  'lost-ack': 3,
  'crash-during-invalidation': 4,
  'redis-down': 5,
  'ddb-throttle': 6,
  'ddb-timeout': 6,
  'provider-timeout': 7,
  'provider-5xx': 7,
  'payment-function-timeout': 8,
  'invalidator-function-timeout': 8,
};

/** A named combination of faults. */
export interface FaultConfig {
  readonly name: string;
  readonly faults: readonly FaultKind[];
}

/** The matrix: every fault alone, then combinations that stack them on one step. */
export const FAULT_CONFIGS: readonly FaultConfig[] = [
  { name: 'baseline', faults: [] },
  { name: 'crash-before-effect', faults: ['crash-before-side-effect'] },
  { name: 'crash-after-effect', faults: ['crash-after-side-effect'] },
  { name: 'crash-after-commit', faults: ['crash-after-commit'] },
  { name: 'crash-holding-lock', faults: ['crash-holding-lock'] },
  { name: 'lost-ack', faults: ['lost-ack'] },
  { name: 'crash-mid-invalidation', faults: ['crash-during-invalidation'] },
  { name: 'redis-down', faults: ['redis-down'] },
  { name: 'ddb-throttle', faults: ['ddb-throttle'] },
  { name: 'ddb-timeout', faults: ['ddb-timeout'] },
  { name: 'provider-timeout', faults: ['provider-timeout'] },
  { name: 'provider-5xx', faults: ['provider-5xx'] },
  { name: 'payment-timeout', faults: ['payment-function-timeout'] },
  { name: 'invalidator-timeout', faults: ['invalidator-function-timeout'] },
  {
    name: 'crashes-every-step',
    faults: ['crash-before-side-effect', 'crash-after-side-effect', 'crash-after-commit', 'lost-ack'],
  },
  { name: 'effect-crash+provider-5xx', faults: ['crash-after-side-effect', 'provider-5xx'] },
  { name: 'redis-down+mid-invalidation', faults: ['redis-down', 'crash-during-invalidation'] },
  { name: 'ddb-throttle+timeout+lost-ack', faults: ['ddb-throttle', 'ddb-timeout', 'lost-ack'] },
  {
    name: 'everything',
    faults: [
      'crash-after-side-effect',
      'lost-ack',
      'crash-during-invalidation',
      'redis-down',
      'ddb-throttle',
      'provider-5xx',
    ],
  },
];

/**
 * The configurations `npm test` runs (CI size): every combination, and each fault alone only
 * where no combination holds it. Every fault of the matrix is in one of them (a unit test checks
 * it) and must show it fired; the singles the combinations cover run with
 * `CHAOS_CONFIGS=all` (`npm run test:chaos`) and in `npm run chaos`. Chosen to keep `npm test`
 * inside 25 minutes on a 2-core machine: 11 configurations instead of 19.
 */
export const CI_FAULT_CONFIG_NAMES: readonly string[] = [
  'baseline',
  'crash-holding-lock',
  'provider-timeout',
  'provider-5xx',
  'payment-timeout',
  'invalidator-timeout',
  'crashes-every-step',
  'effect-crash+provider-5xx',
  'redis-down+mid-invalidation',
  'ddb-throttle+timeout+lost-ack',
  'everything',
];

/** Timing and intensity of one run's faults, drawn by fast-check per seed. */
export interface FaultPlan {
  /** Seed of the workload (jobs, keys, copies). */
  readonly workloadSeed: number;
  /** When the faults start, ms after the first job was enqueued. */
  readonly startAfterMs: number;
  /** How long window faults (Redis down, throttling, provider faults) last, ms. */
  readonly windowMs: number;
  /** Crash faults: invocations crashed per armed point. */
  readonly crashes: number;
  /** Lost acks: batches per queue. */
  readonly lostAcks: number;
  /** DynamoDB throttling rate while on. */
  readonly throttleRate: number;
  /** DynamoDB timeout rate while on (half unsent, half applied with the answer lost). */
  readonly timeoutRate: number;
  /** Provider 5xx rate while on. */
  readonly errorRate: number;
  /**
   * SDK faults: besides their rates, each function instance's forcedAt-th DynamoDB request (a lost
   * answer), the next (a timeout) and the one after (a throttle) are hit for sure, so they fire.
   */
  readonly forcedAt: number;
}

/**
 * The fault plan arbitrary. Bounded so the faults stay within the retry budget the pipeline is
 * designed for (maxReceiveCount, stream retries): beyond it, a job in the DLQ is the designed
 * outcome, not a bug, and the checker's "DLQ = poison only" rule would not apply.
 */
export function faultPlanArbitrary(): fc.Arbitrary<FaultPlan> {
  return fc.record({
    workloadSeed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
    startAfterMs: fc.integer({ min: 0, max: 1_500 }),
    windowMs: fc.integer({ min: 2_000, max: 5_000 }),
    crashes: fc.integer({ min: 1, max: 2 }),
    lostAcks: fc.integer({ min: 1, max: 3 }),
    throttleRate: fc.double({ min: 0.05, max: 0.3, noNaN: true }),
    timeoutRate: fc.double({ min: 0.02, max: 0.1, noNaN: true }),
    errorRate: fc.double({ min: 0.1, max: 0.4, noNaN: true }),
    forcedAt: fc.integer({ min: 1, max: 4 }),
  });
}

/**
 * The keys of a run's `faultsFired` (harness/chaos/runner.ts) that show each fault fired: the
 * function's own "injected crash/hang" line, an SDK fault's trace line, a lost ack, or, for the
 * faults set on the platform for a window (Redis stopped, providers slowed or failing), the window
 * itself.
 */
export const FAULT_EVIDENCE: Readonly<Record<FaultKind, readonly string[]>> = {
  'crash-before-side-effect': ['crash:before-side-effect'],
  'crash-holding-lock': ['crash:holding-lock'],
  'crash-after-side-effect': ['crash:after-side-effect'],
  'crash-after-commit': ['crash:after-commit'],
  'lost-ack': ['lost-ack'],
  'crash-during-invalidation': ['crash:during-invalidation'],
  'redis-down': ['redis-down'],
  'ddb-throttle': ['ddb-throttle'],
  'ddb-timeout': ['ddb-timeout', 'ddb-lost-response'],
  'provider-timeout': ['provider-timeout-window'],
  'provider-5xx': ['provider-5xx-window'],
  'payment-function-timeout': ['hang:after-side-effect'],
  'invalidator-function-timeout': ['hang:during-invalidation'],
};

const CRASH_KINDS: readonly FaultKind[] = [
  'crash-before-side-effect',
  'crash-holding-lock',
  'crash-after-side-effect',
  'crash-after-commit',
  'crash-during-invalidation',
];

/**
 * The faults of `config` that left no evidence in a run's `fired` counts. A killed process can
 * lose its "injected crash" line; the host's SIGKILL report (`process-killed`) stands in for it
 * when the configuration has a single crash fault, since then it can only be that one.
 */
export function unfiredFaults(config: FaultConfig, fired: Readonly<Record<string, number>>): FaultKind[] {
  const crashKinds = config.faults.filter((f) => CRASH_KINDS.includes(f));
  return config.faults.filter((kind) => {
    if (FAULT_EVIDENCE[kind].some((key) => (fired[key] ?? 0) > 0)) return false;
    return !(crashKinds.length === 1 && crashKinds[0] === kind && (fired['process-killed'] ?? 0) > 0);
  });
}

/** The config named `name`. */
export function faultConfigNamed(name: string): FaultConfig {
  const found = FAULT_CONFIGS.find((c) => c.name === name);
  if (found === undefined)
    throw new Error(`no fault configuration ${name}; known: ${FAULT_CONFIGS.map((c) => c.name).join(', ')}`);
  return found;
}

/**
 * What the lines of a run show fired (FAULT_EVIDENCE's keys): `crash:<point>` / `hang:<point>`
 * for each "injected crash/hang at" line, one key per SDK fault trace line, `lost-ack` per lost
 * batch ack, and `process-killed` (with `process-killed:<function>`) per SIGKILL the host reported —
 * a function killed at once may lose its own "injected crash" line, the host's report never.
 */
export function faultEvidence(
  functions: readonly { readonly fn: string; readonly line: string }[],
  platform: readonly string[],
): Record<string, number> {
  const fired: Record<string, number> = {};
  const bump = (key: string): void => {
    fired[key] = (fired[key] ?? 0) + 1;
  };
  for (const l of functions) {
    const m = INJECTED_POINT_LINE.exec(l.line);
    if (m !== null) bump(`${m[1]}:${m[2]}`);
    const f = /\[tenang-trace\] fault ([a-z-]+)/.exec(l.line);
    if (f !== null) bump(f[1] ?? '?');
  }
  for (const line of platform) {
    const killed = /^(\S+): crash: Runtime\.ExitError/.exec(line);
    if (killed !== null) {
      bump('process-killed');
      bump(`process-killed:${killed[1]}`);
    }
    if (line.includes('injected lost ack')) bump('lost-ack');
  }
  return fired;
}

/** Crash points armed on the payment consumer one after another, in this order. */
export function paymentCrashPhases(config: FaultConfig): string[][] {
  const phases: string[][] = [];
  if (config.faults.includes('crash-before-side-effect')) phases.push(['before-side-effect']);
  if (config.faults.includes('crash-after-side-effect')) phases.push(['after-side-effect']);
  if (config.faults.includes('crash-after-commit')) phases.push(['after-commit']);
  if (config.faults.includes('payment-function-timeout')) phases.push(['hang:after-side-effect']);
  return phases;
}

/** Faults that crash or hang the cache invalidator (an order change must reach it). */
export const INVALIDATOR_FAULTS: readonly FaultKind[] = [
  'crash-during-invalidation',
  'invalidator-function-timeout',
];

/** The configuration crashes or hangs the cache invalidator. */
export function hitsInvalidator(config: FaultConfig): boolean {
  return config.faults.some((f) => INVALIDATOR_FAULTS.includes(f));
}

/** Fresh jobs the late phase may send, one every few seconds, for a crash point still unfired. */
export const LATE_FEEDS = 4;

/**
 * Jobs a run holds back to send once a crash point is armed: a payment per payment crash point,
 * one payment for an invalidator crash (a capture's PAID transition is the order change that
 * reaches it) and one reservation for the inventory consumer's, each with LATE_FEEDS more that go
 * out only while the point has not fired; what is left is sent at the end.
 */
export function heldJobs(config: FaultConfig): {
  readonly 'payment.capture': number;
  readonly 'inventory.reserve': number;
} {
  return {
    'payment.capture': paymentCrashPhases(config).length + (hitsInvalidator(config) ? LATE_FEEDS + 1 : 0),
    'inventory.reserve': config.faults.includes('crash-holding-lock') ? LATE_FEEDS + 1 : 0,
  };
}
