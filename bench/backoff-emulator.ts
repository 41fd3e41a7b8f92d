/**
 * The backoff experiment against moto, and the backoff section that puts it beside the
 * simulation (bench/backoff.ts). 100 concurrent clients in this process share one SDK client and
 * each increment a counter on one hot item once: GetItem (consistent) for the version, then
 * UpdateItem with `version = :seen`; a ConditionalCheckFailedException means another client
 * committed in between, so the client backs off with the strategy and tries again. The clients
 * share one connection, so moto serves their requests one at a time, in arrival order (see
 * contend for why): unlike the simulation's, this server queues, and the strategies are compared
 * by wall time as well as calls. Each strategy runs a few times, interleaved and in rotating
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
import { countSdkCalls } from '../lib/adapters/aws/call-counter';
import { newDynamoDbClient } from '../lib/adapters/aws/clients';
import type { RetryPolicy } from '../lib/config';
import type { Random } from '../lib/core/backoff';
import { uniqueName } from '../test/helpers/aws';
import {
  BACKOFF_STRATEGIES,
  backoffDelay,
  mulberry32,
  simulateBackoff,
  spread,
  type BackoffDelay,
  type BackoffFigure,
  type BackoffSimulationResults,
  type BackoffStrategyName,
} from './backoff';

/** Concurrent clients on the hot item. */
const CLIENTS = 100;
/** Runs per strategy against the emulator: the medians are of these. */
const EMULATOR_RUNS = 3;
/** Seeds per strategy in the simulation. */
const SIMULATION_SEEDS = 25;
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

/** The emulator's part of the backoff section. */
export interface BackoffEmulatorResults {
  readonly clients: number;
  readonly runs: number;
  readonly policy: RetryPolicy;
  /** Calls are the SDK commands the clients sent (GetItem + UpdateItem, two per attempt). */
  readonly figures: readonly BackoffFigure[];
}

/** The backoff section of the report. */
export interface BackoffResults {
  readonly simulation: BackoffSimulationResults;
  readonly emulator: BackoffEmulatorResults;
  /**
   * The simulation under the emulator's conditions: one server, one request at a time, each
   * taking what moto took (the no-backoff runs' time ÷ calls); the emulator's policy; no network
   * outside it. Not a target: a check that the model explains the emulator's figures.
   */
  readonly emulatorModel: BackoffSimulationResults;
  readonly targets: typeof BACKOFF_TARGETS;
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

/**
 * One client's increment: read, conditional write, back off on a conflict. Returns its attempts.
 * A client fails only when another committed inside its window, so it needs at most CLIENTS
 * attempts (bench/backoff.ts); more means something else went wrong.
 */
async function incrementOnce(
  dynamo: DynamoDBClient,
  table: string,
  id: string,
  delay: BackoffDelay,
  random: Random,
): Promise<number> {
  for (let attempt = 1; ; attempt += 1) {
    const { version } = await readItem(dynamo, table, id);
    try {
      await dynamo.send(
        new UpdateItemCommand({
          TableName: table,
          Key: itemKey(id),
          UpdateExpression: 'SET #version = #version + :one, #counter = #counter + :one',
          ConditionExpression: '#version = :seen',
          ExpressionAttributeNames: { '#version': 'version', '#counter': 'counter' },
          ExpressionAttributeValues: { ':one': { N: '1' }, ':seen': { N: String(version) } },
        }),
      );
      return attempt;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      if (attempt >= CLIENTS)
        throw new Error(`a client failed ${attempt} times among ${CLIENTS}`, { cause: error });
      await sleep(delay(attempt, random));
    }
  }
}

/** All clients contend on a fresh item until each has incremented it once; checked before it counts. */
async function contend(
  admin: DynamoDBClient,
  table: string,
  strategy: BackoffStrategyName,
  run: number,
): Promise<EmulatorRun> {
  const id = `hot-${strategy}-${run}`;
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
  try {
    const started = performance.now();
    const attempts = await Promise.all(
      Array.from({ length: CLIENTS }, () => incrementOnce(dynamo, table, id, delay, random)),
    );
    const ms = performance.now() - started;
    const totalAttempts = attempts.reduce((sum, a) => sum + a, 0);
    const calls = log.calls().length;
    const item = await readItem(admin, table, id);
    if (item.counter !== CLIENTS || item.version !== CLIENTS) {
      throw new Error(
        `${strategy} run ${run}: counter ${item.counter}, version ${item.version}, expected ${CLIENTS}`,
      );
    }
    if (calls !== 2 * totalAttempts) {
      throw new Error(`${strategy} run ${run}: ${calls} SDK calls for ${totalAttempts} attempts`);
    }
    return { calls, attempts: totalAttempts, ms };
  } finally {
    dynamo.destroy();
  }
}

/** Every strategy `runs` times against moto, interleaved in rotating order, on one table it deletes after. */
async function measureEmulator(log: (line: string) => void): Promise<BackoffEmulatorResults> {
  const admin = newDynamoDbClient();
  const table = uniqueName('bench-backoff');
  await admin.send(
    new CreateTableCommand({
      TableName: table,
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  try {
    const runs = new Map<BackoffStrategyName, EmulatorRun[]>(BACKOFF_STRATEGIES.map((s) => [s, []]));
    for (let run = 1; run <= EMULATOR_RUNS; run += 1) {
      const order = BACKOFF_STRATEGIES.map((_, i, all) => all[(i + run - 1) % all.length] ?? 'none');
      for (const strategy of order) {
        const result = await contend(admin, table, strategy, run);
        log(`backoff: emulator ${strategy} run ${run}: ${result.calls} calls, ${result.ms.toFixed(0)} ms`);
        runs.get(strategy)?.push(result);
      }
    }
    return {
      clients: CLIENTS,
      runs: EMULATOR_RUNS,
      policy: EMULATOR_POLICY,
      figures: BACKOFF_STRATEGIES.map((strategy) => {
        const kept = runs.get(strategy) ?? [];
        return { strategy, calls: spread(kept.map((r) => r.calls)), timeMs: spread(kept.map((r) => r.ms)) };
      }),
    };
  } finally {
    await admin.send(new DeleteTableCommand({ TableName: table })).catch((error: unknown) => {
      log(`backoff: could not delete table ${table}: ${String(error)}`);
    });
    admin.destroy();
  }
}

/**
 * The backoff section: the seeded simulation, then the runs against `awsEndpoint` (the clients
 * read it from AWS_ENDPOINT_URL, as every SDK client here does).
 */
export async function measureBackoff(opts: {
  readonly awsEndpoint: string;
  readonly log: (line: string) => void;
}): Promise<BackoffResults> {
  const simulation = simulateBackoff(SIMULATION_SEEDS);
  opts.log(`backoff: simulated ${simulation.clients} clients over ${SIMULATION_SEEDS} seeds`);
  opts.log(`backoff: ${CLIENTS} clients against ${opts.awsEndpoint}, ${EMULATOR_RUNS} runs per strategy`);
  const emulator = await measureEmulator(opts.log);
  const noBackoff = emulator.figures.find((f) => f.strategy === 'none');
  if (noBackoff === undefined) throw new Error('the emulator has no figures for no backoff');
  // Without backoff the one connection is never idle, so its time per call is moto's per request.
  const emulatorModel = simulateBackoff(SIMULATION_SEEDS, {
    clients: CLIENTS,
    policy: EMULATOR_POLICY,
    networkMeanMs: 0,
    networkSdMs: 0,
    serviceMs: noBackoff.timeMs.median / noBackoff.calls.median,
  });
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
