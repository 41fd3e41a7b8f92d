/**
 * The backoff experiment of the reliability issue, as a model: N clients contend on one hot item
 * with optimistic concurrency, each retrying its one write with a backoff strategy until it
 * succeeds. A discrete-event simulation after Marc Brooker's "Exponential Backoff And Jitter"
 * (AWS Architecture Blog; aws-samples/aws-arch-backoff-simulator), pure and seeded, so a seed
 * gives the same figures on every machine. bench/backoff-emulator.ts runs the same contention
 * against moto.
 *
 * The model:
 * - One item with a version. An attempt is a read (the client learns the version), then a
 *   conditional write carrying that version. The write commits (version + 1) only if no other
 *   write committed since the read: of the attempts that overlap in one contention window,
 *   exactly one succeeds.
 * - Every message (request or reply) takes a one-way network delay drawn from |N(10, 2)| ms, as
 *   Brooker's does. The server answers at once and never queues: it does not serialize requests.
 *   With `serviceMs` it does: one request at a time, in arrival order, each taking that long, as
 *   the emulator experiment's moto does (used to check that the model explains its figures).
 * - Every client starts at t = 0. After a failed write the client hears the failure, waits the
 *   strategy's delay for that failed attempt, and reads again.
 * - Calls are attempts (Brooker counts the writes; each attempt also made one read, so the
 *   ratios between strategies are the same either way). Completion time is when the last client
 *   hears its write succeed.
 *
 * Why every client finishes: a failed attempt saw a commit of another client inside its window
 * (between its read and its write), and one client's windows do not overlap, so the k-th client
 * to succeed fails at most k − 1 times. No client needs more than N attempts, all of them
 * together at most N(N+1)/2, whatever the strategy; the simulation throws if that is ever broken.
 */
import { backoffCeilingSeconds, type RetryPolicy } from '../lib/config';
import { fullJitterDelaySeconds, type Random } from '../lib/core/backoff';

/** The strategies compared: no backoff, exponential without jitter, exponential with full jitter. */
export type BackoffStrategyName = 'none' | 'exponential' | 'full-jitter';

/** Every strategy, in the order the report shows them. */
export const BACKOFF_STRATEGIES: readonly BackoffStrategyName[] = ['none', 'exponential', 'full-jitter'];

/** How long to wait after `failedAttempt` (1-based) failed, in the policy's unit. */
export type BackoffDelay = (failedAttempt: number, random: Random) => number;

/**
 * A strategy's delay over `policy`. Full jitter is the project's own (lib/core/backoff.ts) and
 * exponential is its ceiling (lib/config/derive.ts), so the strategies differ only in the jitter.
 * Those functions are unit-free (whole units of the policy, named seconds for SQS): the bench
 * reads the policy in milliseconds.
 */
export function backoffDelay(strategy: BackoffStrategyName, policy: RetryPolicy): BackoffDelay {
  switch (strategy) {
    case 'none':
      return () => 0;
    case 'exponential':
      return (failedAttempt) => backoffCeilingSeconds(policy, failedAttempt);
    case 'full-jitter':
      return (failedAttempt, random) => fullJitterDelaySeconds(policy, failedAttempt, random);
  }
}

/** mulberry32: a small 32-bit seeded PRNG, uniform in [0, 1); plenty for a simulation. */
export function mulberry32(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A standard normal draw (Box–Muller); 1 − u keeps the logarithm away from 0. */
function standardNormal(random: Random): number {
  const u = 1 - random();
  const v = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** The contention simulated. */
export interface ContentionModel {
  /** Clients, each making one write. */
  readonly clients: number;
  /** Backoff base and cap, read in milliseconds. */
  readonly policy: RetryPolicy;
  /** Mean one-way network delay, ms. @default 10 (Brooker's) */
  readonly networkMeanMs?: number;
  /** Standard deviation of the one-way network delay, ms. @default 2 (Brooker's) */
  readonly networkSdMs?: number;
  /**
   * Time the server takes per request, serving one at a time in arrival order, ms. 0 is
   * Brooker's server, which answers at once; above 0 it models a serializing emulator.
   * @default 0
   */
  readonly serviceMs?: number;
}

/** What one simulated contention came to. */
export interface ContentionOutcome {
  /** Attempts (read + conditional write) of all clients together. */
  readonly attempts: number;
  /** Virtual time until the last client heard its write succeed, ms. */
  readonly completionMs: number;
  /** Writes that committed: one per client when every client finished. */
  readonly successes: number;
  /** The item's version at the end: the commits, counted by the item. */
  readonly finalVersion: number;
  /** Attempts of each client, by client index. */
  readonly attemptsByClient: readonly number[];
  /** When each client's write committed among all commits (1 = first), by client index. */
  readonly successRankByClient: readonly number[];
}

/** A client between events: what reaches the server next, and when. */
interface SimClient {
  next: 'read' | 'write' | 'done';
  at: number;
  seenVersion: number;
  attempts: number;
  successRank: number;
}

/** Runs one contention with `strategy` and `seed`: the same inputs always give the same outcome. */
export function simulateContention(
  strategy: BackoffStrategyName,
  model: ContentionModel,
  seed: number,
): ContentionOutcome {
  if (!Number.isInteger(model.clients) || model.clients < 1) {
    throw new RangeError(`clients must be an integer ≥ 1, got ${model.clients}`);
  }
  const random = mulberry32(seed);
  const delay = backoffDelay(strategy, model.policy);
  const meanMs = model.networkMeanMs ?? 10;
  const sdMs = model.networkSdMs ?? 2;
  const network = (): number => Math.abs(meanMs + sdMs * standardNormal(random));

  const clients: SimClient[] = Array.from({ length: model.clients }, () => ({
    next: 'read',
    at: network(),
    seenVersion: -1,
    attempts: 0,
    successRank: 0,
  }));
  const serviceMs = model.serviceMs ?? 0;
  let version = 0;
  let completionMs = 0;
  let serverFreeAt = 0;
  for (;;) {
    // The next message to reach the server; on a tie, the lower index (deterministic).
    let client: SimClient | undefined;
    for (const c of clients) if (c.next !== 'done' && (client === undefined || c.at < client.at)) client = c;
    if (client === undefined) break;
    // Served in arrival order, so the item a request sees is the one every earlier request left.
    const answeredAt = Math.max(client.at, serverFreeAt) + serviceMs;
    serverFreeAt = answeredAt;

    if (client.next === 'read') {
      client.attempts += 1;
      client.seenVersion = version;
      client.next = 'write';
      client.at = answeredAt + network() + network();
    } else if (client.seenVersion === version) {
      version += 1;
      client.successRank = version;
      client.next = 'done';
      completionMs = Math.max(completionMs, answeredAt + network());
    } else {
      if (client.attempts >= model.clients) {
        throw new Error(
          `a client failed ${client.attempts} times among ${model.clients}: the model is broken`,
        );
      }
      client.next = 'read';
      client.at = answeredAt + network() + delay(client.attempts, random) + network();
    }
  }
  return {
    attempts: clients.reduce((sum, c) => sum + c.attempts, 0),
    completionMs,
    successes: clients.filter((c) => c.successRank > 0).length,
    finalVersion: version,
    attemptsByClient: clients.map((c) => c.attempts),
    successRankByClient: clients.map((c) => c.successRank),
  };
}

/** A figure over several runs: the median and the range. */
export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

/** Median and range of `values` (at least one). */
export function spread(values: readonly number[]): Spread {
  if (values.length === 0) throw new RangeError('spread of no values');
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const median =
    sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
  return { median, min: sorted[0] ?? 0, max: sorted[sorted.length - 1] ?? 0 };
}

/** One strategy's figures in one experiment. */
export interface BackoffFigure {
  readonly strategy: BackoffStrategyName;
  /** Calls over the runs: attempts in the simulation, SDK commands against the emulator. */
  readonly calls: Spread;
  /** Time until every client was done over the runs, ms (virtual in the simulation). */
  readonly timeMs: Spread;
}

/** The simulation's part of the backoff section. */
export interface BackoffSimulationResults {
  readonly clients: number;
  /** Seeds 1..seeds, one run per seed and strategy. */
  readonly seeds: number;
  readonly policy: RetryPolicy;
  readonly networkMeanMs: number;
  readonly networkSdMs: number;
  readonly serviceMs: number;
  readonly figures: readonly BackoffFigure[];
}

/** Brooker's parameters: his 5 ms × 2^n from n = 1 is our 10 ms × 2^(n−1); cap 2 s. */
export const SIMULATION_MODEL: Required<ContentionModel> = {
  clients: 100,
  policy: { baseDelaySeconds: 10, maxDelaySeconds: 2_000 },
  networkMeanMs: 10,
  networkSdMs: 2,
  serviceMs: 0,
};

/** Every strategy over seeds 1..`seeds`; all clients must finish, or it throws. */
export function simulateBackoff(
  seeds: number,
  model: Required<ContentionModel> = SIMULATION_MODEL,
): BackoffSimulationResults {
  const figures = BACKOFF_STRATEGIES.map((strategy): BackoffFigure => {
    const outcomes = Array.from({ length: seeds }, (_, i) => simulateContention(strategy, model, i + 1));
    for (const o of outcomes) {
      if (o.successes !== model.clients || o.finalVersion !== model.clients) {
        throw new Error(`${strategy}: ${o.successes} of ${model.clients} clients finished`);
      }
    }
    return {
      strategy,
      calls: spread(outcomes.map((o) => o.attempts)),
      timeMs: spread(outcomes.map((o) => o.completionMs)),
    };
  });
  return { ...model, seeds, figures };
}
