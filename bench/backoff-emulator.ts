/**
 * The backoff experiment against moto, and the backoff section that puts it beside the
 * simulation (bench/backoff.ts). 100 concurrent clients in this process share one SDK client and
 * each increment a counter on one hot item once, with UpdateItem on condition `version = :seen`;
 * a ConditionalCheckFailedException means another client committed since the client learned the
 * version, so it backs off with the strategy and tries again. Two protocols (bench/backoff.ts):
 * read-then-write learns the version from a GetItem (consistent) before every write;
 * write-returns-current writes first on version 0 and learns the current version from the failed
 * write (ReturnValuesOnConditionCheckFailure ALL_OLD), one call per attempt. The clients share
 * one connection, so moto serves their requests one at a time, in arrival order (see contend for
 * why): unlike the simulation's, this server queues, and the strategies are compared by wall time
 * as well as calls. Each protocol and strategy runs a few times, interleaved and in rotating
 * order, each on its own item; a run's figures are kept only if the counter and the version both
 * end at the number of clients.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ConditionalCheckFailedException,
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { countSdkCalls } from '../harness/aws/call-counter';
import { newDynamoDbClient } from '../lib/adapters/aws/clients';
import type { RetryPolicy } from '../lib/config';
import type { Random } from '../lib/core/backoff';
import { uniqueName } from '../lib/local/names';
import {
  BACKOFF_STRATEGIES,
  CONTENTION_PROTOCOLS,
  SIMULATION_MODEL,
  backoffDelay,
  callsPerAttempt,
  mulberry32,
  simulateBackoff,
  spread,
  type BackoffDelay,
  type BackoffFigure,
  type BackoffSimulationResults,
  type BackoffStrategyName,
  type ContentionProtocol,
} from './backoff';

/** How big the backoff section's experiments are. */
export interface BackoffSizes {
  /** Concurrent clients on the hot item. */
  readonly clients: number;
  /** Runs per protocol and strategy against the emulator: the medians are of these. */
  readonly runs: number;
  /** Seeds per protocol and strategy in the simulation. */
  readonly seeds: number;
}

/** The report's sizes. */
export const BACKOFF_SIZES: BackoffSizes = { clients: 100, runs: 3, seeds: 25 };
const CLIENTS = BACKOFF_SIZES.clients;
/**
 * Base 10 ms, about one moto request here; cap 1 s, so a run without jitter stays within a minute
 * or two. In milliseconds, as bench/backoff.ts reads a policy.
 */
const EMULATOR_POLICY: RetryPolicy = { baseDelaySeconds: 10, maxDelaySeconds: 1_000 };

/** Connection and request timeouts: both count the wait for the one connection, where requests queue. */
const QUEUED_REQUEST_TIMEOUT_MS = 120_000;

/** The targets of the reliability issue, as ratios of full jitter to exponential without jitter. */
export const BACKOFF_TARGETS = {
  /** Simulation: full jitter's calls. */
  simulationCalls: 0.5,
  /** Emulator: full jitter's time until every client is done. */
  emulatorTime: 0.6,
} as const;

/** The emulator's part of the backoff section, for one protocol. */
export interface BackoffEmulatorResults {
  readonly clients: number;
  readonly runs: number;
  readonly policy: RetryPolicy;
  /** Absent in results written before there were protocols: those are read-then-write. */
  readonly protocol?: ContentionProtocol;
  /**
   * Calls are the SDK commands the clients sent: GetItem + UpdateItem, two per attempt, with
   * read-then-write; UpdateItem alone, one per attempt, with write-returns-current.
   */
  readonly figures: readonly BackoffFigure[];
}

/** One experiment's results for each protocol measured; a protocol missing renders nothing. */
export type PerProtocol<T> = { readonly [P in ContentionProtocol]?: T };

/** The backoff section of the report. */
export interface BackoffResults {
  readonly simulation: PerProtocol<BackoffSimulationResults>;
  readonly emulator: PerProtocol<BackoffEmulatorResults>;
  /**
   * The simulation under the emulator's conditions, per protocol: one server, one request at a
   * time, each taking what moto took (that protocol's no-backoff runs' time ÷ calls); the
   * emulator's policy; no network outside it. Not a target: a check that the model explains the
   * emulator's figures.
   */
  readonly emulatorModel: PerProtocol<BackoffSimulationResults>;
  readonly targets: typeof BACKOFF_TARGETS;
}

/** The backoff section as results.json held it before there were protocols: read-then-write only. */
export interface LegacyBackoffResults {
  readonly simulation: BackoffSimulationResults;
  readonly emulator: BackoffEmulatorResults;
  readonly emulatorModel: BackoffSimulationResults;
  readonly targets: typeof BACKOFF_TARGETS;
}

/** Reads a backoff section of either shape as per-protocol results. */
export function backoffResultsByProtocol(stored: BackoffResults | LegacyBackoffResults): BackoffResults {
  const perProtocol = <T extends object>(field: PerProtocol<T> | T | undefined): PerProtocol<T> =>
    field === undefined
      ? {}
      : 'figures' in field
        ? { 'read-then-write': field as T }
        : (field as PerProtocol<T>);
  return {
    simulation: perProtocol<BackoffSimulationResults>(stored.simulation),
    emulator: perProtocol<BackoffEmulatorResults>(stored.emulator),
    emulatorModel: perProtocol<BackoffSimulationResults>(stored.emulatorModel),
    targets: stored.targets,
  };
}

/** One contention run against the emulator. */
interface EmulatorRun {
  readonly calls: number;
  readonly attempts: number;
  readonly ms: number;
}

/** The hot item's key in `table` for one run. */
function itemKey(id: string): Record<string, { S: string }> {
  return { pk: { S: id } };
}

/** Reads the item's version and counter, consistently. */
async function readItem(
  dynamo: DynamoDBClient,
  table: string,
  id: string,
): Promise<{ version: number; counter: number }> {
  const { Item } = await dynamo.send(
    new GetItemCommand({ TableName: table, Key: itemKey(id), ConsistentRead: true }),
  );
  const version = Item?.version?.N;
  const counter = Item?.counter?.N;
  if (version === undefined || counter === undefined)
    throw new Error(`item ${id} in ${table} has no version`);
  return { version: Number(version), counter: Number(counter) };
}

/** The conditional increment on `seen`; with `returnItem`, a failure returns the item (ALL_OLD). */
function conditionalIncrement(
  table: string,
  id: string,
  seen: number,
  returnItem: boolean,
): UpdateItemCommand {
  return new UpdateItemCommand({
    TableName: table,
    Key: itemKey(id),
    UpdateExpression: 'SET #version = #version + :one, #counter = #counter + :one',
    ConditionExpression: '#version = :seen',
    ExpressionAttributeNames: { '#version': 'version', '#counter': 'counter' },
    ExpressionAttributeValues: { ':one': { N: '1' }, ':seen': { N: String(seen) } },
    ...(returnItem ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
  });
}

/**
 * Runs `write` until it commits, backing off with `delay` after each conditional-check failure
 * (`learn` reads the failure first). Returns the attempts. A write fails only when another client
 * committed since this one last learned the version, so it needs at most `clients` attempts
 * (bench/backoff.ts); more means something else went wrong.
 */
async function untilCommitted(
  delay: BackoffDelay,
  random: Random,
  clients: number,
  write: () => Promise<unknown>,
  learn: (failure: ConditionalCheckFailedException) => void = () => undefined,
): Promise<number> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      await write();
      return attempt;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      learn(error);
      if (attempt >= clients)
        throw new Error(`a client failed ${attempt} times among ${clients}`, { cause: error });
      await sleep(delay(attempt, random));
    }
  }
}

/** What one contending client works with. */
interface Contender {
  readonly dynamo: DynamoDBClient;
  readonly table: string;
  /** The hot item's key. */
  readonly id: string;
  readonly delay: BackoffDelay;
  readonly random: Random;
  /** How many clients contend (bounds a client's attempts). */
  readonly clients: number;
}

/** One client's increment with read-then-write: read, conditional write, back off on a conflict. */
function readThenWrite({ dynamo, table, id, delay, random, clients }: Contender): Promise<number> {
  return untilCommitted(delay, random, clients, async () => {
    const { version } = await readItem(dynamo, table, id);
    await dynamo.send(conditionalIncrement(table, id, version, false));
  });
}

/**
 * One client's increment with write-returns-current: the conditional write alone, first on
 * version 0 (the item is created at 0); a failure returns the item, whose version the client
 * writes on next, after backing off.
 */
function writeReturnsCurrent({ dynamo, table, id, delay, random, clients }: Contender): Promise<number> {
  let seen = 0;
  return untilCommitted(
    delay,
    random,
    clients,
    () => dynamo.send(conditionalIncrement(table, id, seen, true)),
    (failure) => {
      const current = failure.Item?.version?.N;
      if (current === undefined) {
        throw new Error(
          `a failed write on ${id} in ${table} returned no item version: the emulator ignored ReturnValuesOnConditionCheckFailure ALL_OLD`,
          { cause: failure },
        );
      }
      seen = Number(current);
    },
  );
}

const CLIENT_OF: Record<ContentionProtocol, typeof readThenWrite> = {
  'read-then-write': readThenWrite,
  'write-returns-current': writeReturnsCurrent,
};

/** Creates the table the clients contend in (one hot item per run). */
export async function createContentionTable(admin: DynamoDBClient, table: string): Promise<void> {
  await admin.send(
    new CreateTableCommand({
      TableName: table,
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
}

/**
 * `clients` clients contend on a fresh item until each has incremented it once; checked (the
 * item's counter and version, SDK calls per attempt) before it counts.
 */
export async function contend(
  admin: DynamoDBClient,
  table: string,
  protocol: ContentionProtocol,
  strategy: BackoffStrategyName,
  run: number,
  clients = CLIENTS,
): Promise<EmulatorRun> {
  const id = `hot-${protocol}-${strategy}-${run}`;
  await admin.send(
    new PutItemCommand({
      TableName: table,
      Item: { ...itemKey(id), version: { N: '0' }, counter: { N: '0' } },
    }),
  );
  // The clients' own SDK client, with one connection: moto 5.2.1 serves connections on threads
  // and its condition check and write are not atomic, so over many connections two writes on the
  // same version can both commit (a lost update). Over one, moto sees one request at a time, in
  // arrival order: the serializing server the experiment is about. Requests wait for the
  // connection here, and both SDK timeouts count that wait, hence their length. No SDK retries:
  // one could repeat a write that had committed, and so increment twice.
  const dynamo = new DynamoDBClient({
    maxAttempts: 1,
    requestHandler: {
      connectionTimeout: QUEUED_REQUEST_TIMEOUT_MS,
      requestTimeout: QUEUED_REQUEST_TIMEOUT_MS,
      httpAgent: { maxSockets: 1 },
    },
  });
  const log = countSdkCalls(dynamo);
  const delay = backoffDelay(strategy, EMULATOR_POLICY);
  const random = mulberry32(run);
  const client = CLIENT_OF[protocol];
  const label = `${protocol} ${strategy} run ${run}`;
  try {
    const started = performance.now();
    const attempts = await Promise.all(
      Array.from({ length: clients }, () => client({ dynamo, table, id, delay, random, clients })),
    );
    const ms = performance.now() - started;
    const totalAttempts = attempts.reduce((sum, a) => sum + a, 0);
    const calls = log.calls().length;
    const item = await readItem(admin, table, id);
    if (item.counter !== clients || item.version !== clients) {
      throw new Error(`${label}: counter ${item.counter}, version ${item.version}, expected ${clients}`);
    }
    if (calls !== callsPerAttempt(protocol) * totalAttempts) {
      throw new Error(`${label}: ${calls} SDK calls for ${totalAttempts} attempts`);
    }
    return { calls, attempts: totalAttempts, ms };
  } finally {
    dynamo.destroy();
  }
}

/**
 * Every protocol and strategy `runs` times against moto, interleaved in rotating order, on one
 * table it deletes after.
 */
async function measureEmulator(
  log: (line: string) => void,
  sizes: BackoffSizes,
): Promise<Record<ContentionProtocol, BackoffEmulatorResults>> {
  const admin = newDynamoDbClient();
  const table = uniqueName('bench-backoff');
  await createContentionTable(admin, table);
  try {
    const cases = BACKOFF_STRATEGIES.flatMap((strategy) =>
      CONTENTION_PROTOCOLS.map((protocol) => ({ protocol, strategy })),
    );
    const runs = new Map(cases.map((c) => [`${c.protocol} ${c.strategy}`, [] as EmulatorRun[]]));
    for (let run = 1; run <= sizes.runs; run += 1) {
      const shift = (run - 1) % cases.length;
      for (const c of [...cases.slice(shift), ...cases.slice(0, shift)]) {
        const result = await contend(admin, table, c.protocol, c.strategy, run, sizes.clients);
        log(
          `backoff: emulator ${c.protocol} ${c.strategy} run ${run}: ${result.calls} calls, ${result.ms.toFixed(0)} ms`,
        );
        runs.get(`${c.protocol} ${c.strategy}`)?.push(result);
      }
    }
    const results = (protocol: ContentionProtocol): BackoffEmulatorResults => ({
      clients: sizes.clients,
      runs: sizes.runs,
      policy: EMULATOR_POLICY,
      protocol,
      figures: BACKOFF_STRATEGIES.map((strategy) => {
        const kept = runs.get(`${protocol} ${strategy}`) ?? [];
        return { strategy, calls: spread(kept.map((r) => r.calls)), timeMs: spread(kept.map((r) => r.ms)) };
      }),
    });
    return {
      'read-then-write': results('read-then-write'),
      'write-returns-current': results('write-returns-current'),
    };
  } finally {
    await admin.send(new DeleteTableCommand({ TableName: table })).catch((error: unknown) => {
      log(`backoff: could not delete table ${table}: ${String(error)}`);
    });
    admin.destroy();
  }
}

/**
 * The simulation under the emulator's conditions for `emulator`'s protocol. Without backoff the
 * one connection is never idle, so its time per call is moto's per request.
 */
function modelOfEmulator(emulator: BackoffEmulatorResults, seeds: number): BackoffSimulationResults {
  const noBackoff = emulator.figures.find((f) => f.strategy === 'none');
  if (noBackoff === undefined) throw new Error('the emulator has no figures for no backoff');
  return simulateBackoff(seeds, {
    clients: emulator.clients,
    policy: EMULATOR_POLICY,
    networkMeanMs: 0,
    networkSdMs: 0,
    serviceMs: noBackoff.timeMs.median / noBackoff.calls.median,
    protocol: emulator.protocol ?? 'read-then-write',
  });
}

/**
 * The backoff section: the seeded simulation, then the runs against `awsEndpoint` (the clients
 * read it from AWS_ENDPOINT_URL, as every SDK client here does), each for both protocols.
 */
export async function measureBackoff(opts: {
  readonly awsEndpoint: string;
  readonly log: (line: string) => void;
  /** @default BACKOFF_SIZES (the report's); the test's smoke passes smaller ones */
  readonly sizes?: BackoffSizes;
}): Promise<BackoffResults> {
  const sizes = opts.sizes ?? BACKOFF_SIZES;
  const model = { ...SIMULATION_MODEL, clients: sizes.clients };
  const simulation = {
    'read-then-write': simulateBackoff(sizes.seeds, model),
    'write-returns-current': simulateBackoff(sizes.seeds, { ...model, protocol: 'write-returns-current' }),
  };
  opts.log(`backoff: simulated ${sizes.clients} clients over ${sizes.seeds} seeds, both protocols`);
  opts.log(
    `backoff: ${sizes.clients} clients against ${opts.awsEndpoint}, ${sizes.runs} runs per protocol and strategy`,
  );
  const emulator = await measureEmulator(opts.log, sizes);
  const emulatorModel = {
    'read-then-write': modelOfEmulator(emulator['read-then-write'], sizes.seeds),
    'write-returns-current': modelOfEmulator(emulator['write-returns-current'], sizes.seeds),
  };
  return { simulation, emulator, emulatorModel, targets: BACKOFF_TARGETS };
}

/** A figure's value over exponential without jitter's, for the report. */
export function ratioToExponential(
  figures: readonly BackoffFigure[],
  strategy: BackoffStrategyName,
  metric: 'calls' | 'timeMs',
): number {
  const of = (s: BackoffStrategyName): number =>
    figures.find((f) => f.strategy === s)?.[metric].median ?? NaN;
  return of(strategy) / of('exponential');
}
