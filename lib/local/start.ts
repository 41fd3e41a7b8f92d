/**
 * `npm start`: the local pipeline end to end. Brings up moto (and the scenario's own Redis),
 * deploys the synthesized app into moto with a real `cdk deploy`, prints what was deployed (read
 * back from the emulator's own APIs), then runs a scenario with a live status and writes its
 * report (lib/local/scenario.ts).
 *
 * `npm run local -- up`: the same deployment kept running for hand operation, like
 * `sam local start-api`, with the environment another shell exports to point `tenang` and curl
 * at it (upLocalPipeline, operatorEnvironment).
 */
import { CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDbInventoryStore } from '../../examples/reference/domain/dynamodb-inventory-store';
import { cliPlace, type CliPlace } from '../ops/cli-place';
import { readStackStatus, type StackStatus } from '../ops/stack-status';
import { renderTable } from '../ops/table';
import { LocalPlatform } from './platform';
import { runScenario, type ScenarioOutcome } from './scenario';
import { ScenarioRedis } from './scenario-redis';

/** Options of startLocalPipeline. */
export interface StartOptions {
  /** @default 'dev' */
  readonly stage?: string;
  /** @default 'default' */
  readonly scenario?: string;
  /** The app to deploy. @default the nearest cdk.json at or above the working directory */
  readonly projectRoot?: string;
  /** Seconds of traffic. @default the scenario's */
  readonly durationSeconds?: number;
  /** Payments per second. @default the scenario's */
  readonly ratePerSecond?: number;
  /** Progress lines. */
  readonly log: (line: string) => void;
  /** Where the status and the summary go. */
  readonly out: (text: string) => void;
  /** Redraw the live status in place (stdout is a terminal). */
  readonly tty: boolean;
  readonly columns?: number;
  /** Ctrl-C. */
  readonly signal?: AbortSignal;
}

/** Renders a stack status as two tables. */
export function renderStackStatus(status: StackStatus): string {
  const queues = renderTable(
    ['queue', 'kind', 'visible', 'in flight', 'visibility s', 'max receives', 'dead-letter queue'],
    status.queues.map((q) => ({
      queue: q.queue,
      kind: q.kind,
      visible: String(q.visibleMessages),
      'in flight': String(q.inFlight),
      'visibility s': String(q.visibilityTimeoutSeconds),
      'max receives': q.maxReceiveCount === undefined ? '-' : String(q.maxReceiveCount),
      'dead-letter queue': q.deadLetterQueue ?? '-',
    })),
  );
  const tables = renderTable(
    ['table', 'status', 'stream', 'items'],
    status.tables.map((t) => ({
      table: t.table,
      status: t.status,
      stream: t.stream,
      items: String(t.items),
    })),
  );
  return `Stack ${status.stackName}\n\n${queues}\n\n${tables}\n`;
}

/** Prints the deployed stack and its alarms, read back from the emulator. */
export async function printDeployment(platform: LocalPlatform, out: (text: string) => void): Promise<void> {
  const config = { endpoint: platform.env.endpoint, region: platform.env.region };
  const clients = {
    cfn: new CloudFormationClient(config),
    sqs: new SQSClient(config),
    dynamodb: new DynamoDBClient(config),
  };
  try {
    out(renderStackStatus(await readStackStatus(clients, platform.provisioned.stackName)));
    const { alarms } = platform.provisioned;
    out(
      `\nAlarms: ${alarms.metricAlarms.length} metric alarms in the emulator, ${alarms.compositeAlarms.length} composite alarms kept by the local evaluator (moto has no PutCompositeAlarm).\n\n`,
    );
  } finally {
    for (const c of Object.values(clients)) c.destroy();
  }
}

/** Deploys, runs the scenario with a live status, writes its report and stops what it started. */
export async function startLocalPipeline(opts: StartOptions): Promise<ScenarioOutcome> {
  return runScenario({
    scenario: opts.scenario,
    durationSeconds: opts.durationSeconds,
    ratePerSecond: opts.ratePerSecond,
    stage: opts.stage,
    projectRoot: opts.projectRoot,
    log: opts.log,
    out: opts.out,
    tty: opts.tty,
    columns: opts.columns,
    signal: opts.signal,
    onProvisioned: (platform) => printDeployment(platform, opts.out),
  });
}

/** The variable `up` prints with the local HTTP API's base URL (curl "$TENANG_API_URL/orders"). */
export const API_URL_VARIABLE = 'TENANG_API_URL';

/** What operatorEnvironment reads of a running platform. */
export type OperatedPlatform = Pick<LocalPlatform, 'env' | 'control' | 'api'>;

/**
 * What another shell exports to operate a running local platform: the emulator's endpoint, the
 * local Lambda control plane (AWS_ENDPOINT_URL_LAMBDA: event source mappings are the platform's,
 * so `tenang pause` and `resume` must reach it), region, credentials moto accepts, Redis for the
 * cache and lock commands, the stage, and the HTTP API's URL. The same variables the drills and
 * the CLI integration tests hand the CLI (lib/ops/drills/drill.ts).
 */
export function operatorEnvironment(platform: OperatedPlatform, stage: string): Record<string, string> {
  const env = platform.env.env;
  return {
    ...env,
    // moto takes any key; the platform fills in its own unless the user's shell had some, and
    // those are never printed: the other shell gets moto's.
    AWS_ACCESS_KEY_ID: env.AWS_ACCESS_KEY_ID ?? 'testing',
    AWS_SECRET_ACCESS_KEY: env.AWS_SECRET_ACCESS_KEY ?? 'testing',
    AWS_ENDPOINT_URL_LAMBDA: platform.control.url,
    TENANG_STAGE: stage,
    [API_URL_VARIABLE]: platform.api.url,
  };
}

/** Quotes `value` for a POSIX shell. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** `export` lines a shell can paste or source (sorted), then how to use them, as comments. */
export function renderOperatorEnvironment(
  environment: Readonly<Record<string, string>>,
  about: {
    readonly routes: readonly { method: string; path: string }[];
    readonly notes: readonly string[];
    /** The app's job types: the examples operate the first one. @default none: generic examples */
    readonly jobTypes?: readonly { readonly name: string; readonly consumer: string }[];
  },
  place: CliPlace = cliPlace(),
): string {
  // Not `exports`: compiled to CommonJS, that name would shadow the module's own exports object.
  const exportLines = Object.entries(environment)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => `export ${name}=${shellQuote(value)}`);
  const job = about.jobTypes?.[0];
  const consumer = job?.consumer ?? '<consumer>';
  return [
    ...exportLines,
    '',
    '# In another shell, paste the export lines above, then for example:',
    `#   ${place.tenang} status`,
    `#   ${place.tenang} pause ${consumer} --reason "trying it out" --for 10m`,
    `#   ${place.tenang} resume ${consumer}`,
    `#   ${place.tenang} dlq list ${job?.name ?? '<job-type>'}`,
    ...about.routes.map(
      (r) =>
        `#   curl -s -X ${r.method} "$${API_URL_VARIABLE}${r.path}"${r.method === 'GET' ? '' : ` -H 'content-type: application/json' -d '{…}'`}`,
    ),
    ...(about.routes.length > 0
      ? [`# HTTP API routes: ${about.routes.map((r) => `${r.method} ${r.path}`).join(', ')}`]
      : []),
    ...about.notes.map((n) => `# ${n}`),
    '',
  ].join('\n');
}

/** SKUs `up` stocks, so an order posted by hand is reserved rather than dead-lettered. */
export const UP_SKUS: readonly string[] = ['sku-1', 'sku-2', 'sku-3'];
const UP_STOCK = 1_000;

/** Sets the stock of UP_SKUS in the deployed inventory table. */
async function seedStock(platform: LocalPlatform, log: (line: string) => void): Promise<void> {
  const table = [...platform.deployment.functions.values()]
    .map((f) => f.environment.INVENTORY_TABLE)
    .find((t): t is string => t !== undefined && t !== '');
  if (table === undefined) return;
  const dynamodb = new DynamoDBClient({ endpoint: platform.env.endpoint, region: platform.env.region });
  try {
    const store = new DynamoDbInventoryStore(dynamodb, table);
    for (const sku of UP_SKUS) await store.seed(sku, UP_STOCK);
    log(`stock: ${UP_SKUS.join(', ')} at ${UP_STOCK} each in ${table}`);
  } finally {
    dynamodb.destroy();
  }
}

/** Options of upLocalPipeline. */
export interface UpOptions {
  /** @default 'dev' */
  readonly stage?: string;
  /** The app to deploy. @default the nearest cdk.json at or above the working directory */
  readonly projectRoot?: string;
  /** Progress lines. */
  readonly log: (line: string) => void;
  /** Every line a function prints. @default dropped */
  readonly onFunctionOutput?: (line: string, functionName: string) => void;
}

/** A local pipeline kept running for hand operation. */
export interface RunningLocalPipeline {
  readonly platform: LocalPlatform;
  readonly stage: string;
  /** The redis-server started for it (undefined when REDIS_URL named one). */
  readonly redis: ScenarioRedis | undefined;
  /** What another shell exports to operate it (operatorEnvironment). */
  readonly environment: Readonly<Record<string, string>>;
  /** Stops every function instance, poller, server and emulator it started; idempotent. */
  stop(): Promise<void>;
}

/**
 * Deploys the pipeline on the local platform and leaves it running: moto (reused when one
 * answers), a redis-server of its own on a free port unless REDIS_URL names one (the machine's
 * Redis is never touched, as with `npm start`), a real `cdk deploy`, the functions, pollers and
 * HTTP API. Call stop() when done.
 */
export async function upLocalPipeline(opts: UpOptions): Promise<RunningLocalPipeline> {
  const stage = opts.stage ?? 'dev';
  const given = process.env.REDIS_URL?.trim();
  const redis = given === undefined || given === '' ? await ScenarioRedis.start() : undefined;
  if (redis !== undefined) {
    // The platform (startLocalEnv) and its functions take Redis from REDIS_URL.
    process.env.REDIS_URL = redis.url;
    opts.log(`Redis: started redis-server on ${redis.url} (pid ${redis.pid ?? '?'})`);
  }
  let platform: LocalPlatform;
  try {
    platform = await LocalPlatform.start({
      stage,
      projectRoot: opts.projectRoot,
      log: opts.log,
      onFunctionOutput: opts.onFunctionOutput,
    });
  } catch (error) {
    await redis?.stop();
    throw error;
  }
  try {
    await seedStock(platform, opts.log);
  } catch (error) {
    await platform.stop();
    await redis?.stop();
    throw error;
  }
  let stopping: Promise<void> | undefined;
  return {
    platform,
    stage,
    redis,
    environment: operatorEnvironment(platform, stage),
    stop: () =>
      (stopping ??= (async (): Promise<void> => {
        await platform.stop();
        await redis?.stop();
      })()),
  };
}
