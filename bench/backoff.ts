/**
 * The backoff experiment of the reliability issue, as a model: N clients contend on one hot item
 * with optimistic concurrency, each retrying its one write with a backoff strategy until it
 * succeeds. A discrete-event simulation after Marc Brooker's "Exponential Backoff And Jitter"
 * (AWS Architecture Blog; aws-samples/aws-arch-backoff-simulator), pure and seeded, so a seed
 * gives the same figures on every machine. bench/backoff-emulator.ts runs the same contention
 * against moto.
 *
 * The model:
 * - One item with a version, created at version 0. A write is conditional on the version the
 *   client last learned and commits (version + 1) only if no other write committed since: of the
 *   attempts that overlap in one contention window, exactly one succeeds. How a client learns
 *   the version is the protocol:
 *   - `read-then-write` (Brooker's, the default): an attempt is a read (the client learns the
 *     version), then the conditional write carrying it: two calls per attempt.
 *   - `write-returns-current`: an attempt is the conditional write alone, one call, as DynamoDB
 *     clients do when they can (UpdateItem with ReturnValuesOnConditionCheckFailure ALL_OLD;
 *     tenang's dedup store claims that way). The first attempt writes on version 0, the version
 *     the item was created with; a failed write returns the item, so the client learns the
 *     current version from the failure and, after backing off, writes again on it.
 * - Every message (request or reply) takes a one-way network delay drawn from |N(10, 2)| ms, as
 *   Brooker's does. The server answers at once and never queues: it does not serialize requests.
 *   With `serviceMs` it does: one request at a time, in arrival order, each taking that long, as
 *   the emulator experiment's moto does (used to check that the model explains its figures).
 * - Every client starts at t = 0. After a failed write the client hears the failure, waits the
 *   strategy's delay for that failed attempt, and starts its next attempt (a read, or the write).
 * - Attempts are what the figures count (Brooker counts the writes); `calls` are the requests the
 *   server served, two per attempt with read-then-write and one with write-returns-current, so
 *   within one protocol the ratios between strategies are the same either way. Completion time is
 *   when the last client hears its write succeed.
 *
 * Why every client finishes: a failed write carried a version that is no longer the item's, so
 * another client committed inside the attempt's window: between its read and its write with
 * read-then-write; with write-returns-current, since the version this client last learned (at
 * creation, or from its previous failure) and this write. One client's windows do not overlap
 * (with write-returns-current each starts where the previous one ended), so the k-th client to
 * succeed fails at most k − 1 times. No client needs more than N attempts, all of them together
 * at most N(N+1)/2, whatever the strategy and protocol; the simulation throws if that is ever
 * broken.
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

/**
 * How a client learns the version it writes on: a read before each write (two calls per
 * attempt), or from the failed write itself (one call per attempt). See the model above.
 */
export type ContentionProtocol = 'read-then-write' | 'write-returns-current';

/** Every protocol, in the order the report shows them. */
export const CONTENTION_PROTOCOLS: readonly ContentionProtocol[] = [
  'read-then-write',
  'write-returns-current',
];

/** Requests to the server per attempt under `protocol`. */
export function callsPerAttempt(protocol: ContentionProtocol): number {
  return protocol === 'read-then-write' ? 2 : 1;
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
  /** How a client learns the version it writes on. @default 'read-then-write' (Brooker's) */
  readonly protocol?: ContentionProtocol;
}

/** What one simulated contention came to. */
export interface ContentionOutcome {
  /** Attempts of all clients together (read + conditional write, or the conditional write alone). */
  readonly attempts: number;
  /** Requests the server served: attempts × 2 with read-then-write, attempts with write-returns-current. */
  readonly calls: number;
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
  calls: number;
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
  // Read-then-write reads before every write; write-returns-current learns from failed writes.
  const readFirst = (model.protocol ?? 'read-then-write') === 'read-then-write';

  // With write-returns-current a client starts knowing version 0, the one the item was created with.
  const clients: SimClient[] = Array.from({ length: model.clients }, () => ({
    next: readFirst ? 'read' : 'write',
    at: network(),
    seenVersion: readFirst ? -1 : 0,
    attempts: 0,
    calls: 0,
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
    client.calls += 1;

    if (client.next === 'read') {
      client.attempts += 1;
      client.seenVersion = version;
      client.next = 'write';
      client.at = answeredAt + network() + network();
      continue;
    }
    // A write: with write-returns-current it is the whole attempt.
    if (!readFirst) client.attempts += 1;
    if (client.seenVersion === version) {
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
      if (readFirst) {
        client.next = 'read';
      } else {
        // The failure returned the item: the client writes next on the version it holds now.
        client.seenVersion = version;
      }
      client.at = answeredAt + network() + delay(client.attempts, random) + network();
    }
  }
  return {
    attempts: clients.reduce((sum, c) => sum + c.attempts, 0),
    calls: clients.reduce((sum, c) => sum + c.calls, 0),
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
  /**
   * Calls over the runs: attempts in the simulation (two requests each with read-then-write, one
   * with write-returns-current), SDK commands against the emulator.
   */
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
  /** Absent in results written before there were protocols: those are read-then-write. */
  readonly protocol?: ContentionProtocol;
  readonly figures: readonly BackoffFigure[];
}

/** Brooker's parameters: his 5 ms × 2^n from n = 1 is our 10 ms × 2^(n−1); cap 2 s. */
export const SIMULATION_MODEL: Required<ContentionModel> = {
  clients: 100,
  policy: { baseDelaySeconds: 10, maxDelaySeconds: 2_000 },
  networkMeanMs: 10,
  networkSdMs: 2,
  serviceMs: 0,
  protocol: 'read-then-write',
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
        throw new Error(
          `${model.protocol} ${strategy}: ${o.successes} of ${model.clients} clients finished, version ${o.finalVersion}`,
        );
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
