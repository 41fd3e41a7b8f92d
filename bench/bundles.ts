/**
 * Bundle size and cold start of every handler (module load plus first invocation, up to its first
 * network request), against three others in fresh Node processes, interleaved so machine
 * noise hits all alike: a bare handler that only constructs the same AWS SDK clients (and the
 * Redis client where the handler has one) and makes the AWS call the handler's first invocation
 * makes first (the load and the request no code of ours can avoid); the libraries
 * floor (the bare handler plus the Powertools packages and zod it bundles); and a by-the-book
 * peer (the same handler written as the Powertools documentation shows it, bundled with
 * NodejsFunction's defaults; a job type's peer is its handler module in harness/peers/, which
 * does the job's real work and which bench/handler-time.ts runs on real batches). Ours, bare
 * and floor are bundled with the options TenangFunction gives NodejsFunction
 * (lib/infra/defaults.ts).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { build, type BuildOptions, type Metafile } from 'esbuild';
import { referencePipeline } from '../examples/reference/pipeline';
import { encodePipeline, pipelineBundleDefines } from '../lib/config';
import { BUNDLE_BANNER } from '../lib/infra/defaults';
import { toHttpApiEvent } from '../lib/local/http-api';
import { spread } from './backoff';

const median = (values: readonly number[]): number => spread(values).median;

/** Medians of one variant over the runs: module load, and load plus first invocation. */
export interface ColdStart {
  readonly loadMs: number;
  /**
   * Module load plus the first invocation, up to its first network request or its return,
   * whichever comes first: the code a cold start runs before it waits on anything. What the
   * network then takes is the same for any handler that makes the same calls, and the bench has
   * no AWS to call.
   */
  readonly readyMs: number;
}

/** One handler's figures. */
export interface BundleResult {
  readonly handler: string;
  readonly bytes: number;
  readonly baselineBytes: number;
  /** Largest contributors to the bundle, by package. */
  readonly topPackages: readonly { readonly name: string; readonly bytes: number }[];
  readonly sdkClients: readonly string[];
  readonly loadMsMedian: number;
  readonly baselineLoadMsMedian: number;
  /** loadMsMedian / baselineLoadMsMedian. */
  readonly loadRatio: number;
  /** The Powertools packages the handler uses (and zod/mini, when it does). */
  readonly floorLibraries: readonly string[];
  /**
   * The floor: the bare handler plus the mandated libraries the handler uses, each constructed
   * as the handler constructs it, and no code of ours.
   */
  readonly floorLoadMsMedian: number;
  /** floorLoadMsMedian / baselineLoadMsMedian: what the libraries alone cost. */
  readonly floorRatio: number;
  /** The event of the first invocation, in a few words. */
  readonly firstInvocation: string;
  /**
   * The AWS operation the first invocation calls before anything else reaches the network (its
   * X-Amz-Target, e.g. `DynamoDB_20120810.PutItem`), which the bare handler and the floor call too.
   * @default - none: the first invocation returns, or reaches the network otherwise (Redis)
   */
  readonly firstAwsCall?: string;
  /** Load plus first invocation (ColdStart.readyMs) of the handler, the bare handler and the floor. */
  readonly ready: { readonly handler: number; readonly bare: number; readonly floor: number };
  /** The same handler written as the Powertools documentation shows it, bundled with NodejsFunction's defaults. */
  readonly peer?: {
    readonly bytes: number;
    readonly loadMsMedian: number;
    readonly readyMs: number;
  };
}

/** The cold-start targets, on ready.handler: our code adds at most 5 % to its libraries floor… */
export const READY_OVER_FLOOR_TARGET = 1.05;
/** …and a cold start takes at most 0.6 × the same handler written by the book. */
export const READY_OVER_PEER_TARGET = 0.6;

const ROOT = path.resolve(__dirname, '..');

/** The esbuild options NodejsFunction uses with FUNCTION_DEFAULTS. */
const BUNDLE_OPTIONS: BuildOptions = {
  bundle: true,
  platform: 'node',
  target: 'node22',
  format: 'esm',
  mainFields: ['module', 'main'],
  banner: { js: BUNDLE_BANNER },
  minify: true,
  keepNames: true,
  sourcemap: false,
  metafile: true,
  nodePaths: [path.join(ROOT, 'node_modules')],
  logLevel: 'silent',
};

/**
 * The reference app's declaration for the stage handlerEnv names, compiled into each bundle as
 * TenangFunction does (lib/infra/tenang-function.ts): a function reads its pipeline from its code.
 */
const PIPELINE_DEFINE = pipelineBundleDefines(encodePipeline(referencePipeline('dev', 'us-east-1')));

async function bundle(entry: string, outfile: string): Promise<Metafile> {
  const result = await build({ ...BUNDLE_OPTIONS, define: PIPELINE_DEFINE, entryPoints: [entry], outfile });
  if (result.metafile === undefined) throw new Error('esbuild returned no metafile');
  return result.metafile;
}

function packageOf(input: string): string {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input);
  return m?.[1] ?? '(tenang)';
}

function topPackages(meta: Metafile, limit = 6): { name: string; bytes: number }[] {
  const byPackage = new Map<string, number>();
  for (const output of Object.values(meta.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const name = packageOf(input);
      byPackage.set(name, (byPackage.get(name) ?? 0) + bytesInOutput);
    }
  }
  return [...byPackage.entries()]
    .map(([name, bytes]) => ({ name, bytes }))
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, limit);
}

/**
 * The files a bundle holds code of. The metafile's own `inputs` also lists every file esbuild
 * read and then tree-shook away entirely (a barrel's unused exports), which is not in the bundle.
 */
function bundledInputs(meta: Metafile): string[] {
  const kept = new Set<string>();
  for (const output of Object.values(meta.outputs))
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs))
      if (bytesInOutput > 0) kept.add(input);
  return [...kept];
}

/**
 * The unavoidable clients a bundle includes: its @aws-sdk/client-* packages and, for the
 * functions that talk to the cache, the Redis client.
 */
function sdkClients(meta: Metafile): string[] {
  const clients = new Set<string>();
  for (const input of bundledInputs(meta)) {
    const m = /node_modules\/@aws-sdk\/(client-[a-z0-9-]+)\//.exec(input);
    if (m?.[1] !== undefined) clients.add(m[1]);
    if (/node_modules\/ioredis\//.test(input)) clients.add('ioredis');
  }
  return [...clients].sort();
}

/**
 * The module of each mandated library (Powertools packages, zod) that holds what its floor
 * snippet constructs: a bundle holding it uses the library. A bundle can hold a few constants of a
 * package it never constructs anything of (a barrel's re-export keeps a module-scope object whose
 * keys are computed, e.g. Powertools batch's DATA_CLASS_MAPPING), and that is no use of it.
 */
const FLOOR_LIBRARY_MODULES: Record<string, RegExp> = {
  logger: /node_modules\/@aws-lambda-powertools\/logger\/lib\/esm\/Logger\.js$/,
  metrics: /node_modules\/@aws-lambda-powertools\/metrics\/lib\/esm\/Metrics\.js$/,
  batch: /node_modules\/@aws-lambda-powertools\/batch\/lib\/esm\/BasePartialProcessor\.js$/,
  idempotency: /node_modules\/@aws-lambda-powertools\/idempotency\/lib\/esm\/makeIdempotent\.js$/,
  parameters: /node_modules\/@aws-lambda-powertools\/parameters\/lib\/esm\/base\/BaseProvider\.js$/,
  zod: /node_modules\/zod\/v4\/core\/schemas\.js$/,
};

/** The mandated libraries (Powertools packages, zod) a bundle uses. */
function floorLibraries(meta: Metafile): string[] {
  const inputs = bundledInputs(meta);
  return Object.keys(FLOOR_LIBRARY_MODULES)
    .filter((lib) => inputs.some((input) => FLOOR_LIBRARY_MODULES[lib]?.test(input) === true))
    .sort();
}

/** Imports and constructions of each floor library, as the handlers use them. */
const FLOOR_SNIPPETS: Record<string, { imports: string; body: string }> = {
  logger: { imports: "import { Logger } from '@aws-lambda-powertools/logger';", body: 'new Logger();' },
  metrics: { imports: "import { Metrics } from '@aws-lambda-powertools/metrics';", body: 'new Metrics();' },
  batch: {
    imports: "import { BatchProcessor, EventType } from '@aws-lambda-powertools/batch';",
    body: 'new BatchProcessor(EventType.SQS);',
  },
  idempotency: {
    imports:
      "import { makeIdempotent, IdempotencyConfig } from '@aws-lambda-powertools/idempotency';\nimport { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';",
    body: "globalThis.__idem = makeIdempotent(async () => ({}), { persistenceStore: new DynamoDBPersistenceLayer({ tableName: 't' }), config: new IdempotencyConfig({}) });",
  },
  parameters: {
    imports: "import { SSMProvider } from '@aws-lambda-powertools/parameters/ssm';",
    body: 'new SSMProvider();',
  },
  zod: {
    imports: "import * as z from 'zod/mini';",
    body: 'z.object({ AWS_REGION: z.string().check(z.minLength(1)), QUEUE_URL: z.optional(z.url()) }).safeParse(process.env);',
  },
};

function floorSource(clients: readonly string[], libs: readonly string[], call?: AwsCall): string {
  const bare = baselineParts(clients, call);
  const snippets = libs.map((l) => FLOOR_SNIPPETS[l]).filter((s) => s !== undefined);
  return [
    ...snippets.map((s) => s.imports),
    ...bare.imports,
    ...bare.body,
    ...snippets.map((s) => s.body),
    bare.handler,
    '',
  ].join('\n');
}

function clientClassName(pkg: string): string {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the package is named at run time
  const mod = require(`@aws-sdk/${pkg}`) as Record<string, unknown>;
  const name = Object.keys(mod).find(
    (k) => /^[A-Z][A-Za-z0-9]*Client$/.test(k) && typeof mod[k] === 'function',
  );
  if (name === undefined) throw new Error(`no client class in @aws-sdk/${pkg}`);
  return name;
}

/**
 * An AWS call the bare handler makes as the handler's first invocation does: the SDK's work for a
 * first request (middleware, endpoint rules, credentials, serialization, signing) comes before
 * the network and is the SDK's, whatever code makes the call.
 */
interface AwsCall {
  /** The client package, e.g. `client-dynamodb`. */
  readonly pkg: string;
  /** The command class, e.g. `PutItemCommand`. */
  readonly command: string;
  /** The request's X-Amz-Target, e.g. `DynamoDB_20120810.PutItem`. */
  readonly target: string;
}

/**
 * The AWS call behind a first request, when it is one a bundled client makes (a JSON-protocol
 * operation, named by its X-Amz-Target; `<prefix>.<region>.amazonaws.com` is `client-<prefix>`'s).
 * @throws Error when it names a client or an operation the bench cannot rebuild: the bare handler
 * would then not make the handler's first call, and its floor would be too light
 */
function awsCallOf(request: FirstRequest | undefined, clients: readonly string[]): AwsCall | undefined {
  if (request?.target === undefined) return undefined;
  const prefix = /^([a-z0-9-]+)\./.exec(request.host ?? '')?.[1];
  const pkg = `client-${prefix}`;
  const op = request.target.split('.').pop() ?? '';
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- the package is named at run time
  const mod = clients.includes(pkg) ? (require(`@aws-sdk/${pkg}`) as Record<string, unknown>) : {};
  if (typeof mod[`${op}Command`] !== 'function')
    throw new Error(
      `bench bundles: the first request (${request.host}, ${request.target}) is no call of a bundled client (${clients.join(', ')})`,
    );
  return { pkg, command: `${op}Command`, target: request.target };
}

/** The bare handler's imports, module-scope constructions and handler. */
function baselineParts(
  clients: readonly string[],
  call?: AwsCall,
): { imports: string[]; body: string[]; handler: string } {
  const imports = clients.map((pkg, i) =>
    pkg === 'ioredis'
      ? `import C${i} from 'ioredis';`
      : `import { ${clientClassName(pkg)} as C${i}${pkg === call?.pkg ? `, ${call.command}` : ''} } from '@aws-sdk/${pkg}';`,
  );
  const body = clients.map((pkg, i) =>
    pkg === 'ioredis' ? `const c${i} = new C${i}({ lazyConnect: true });` : `const c${i} = new C${i}({});`,
  );
  // An empty input: the operation's serializer and the request's signing are what is measured.
  const send =
    call === undefined
      ? ''
      : `await c${clients.indexOf(call.pkg)}.send(new ${call.command}({})).catch(() => undefined); `;
  return { imports, body, handler: `export const handler = async () => { ${send}return {}; };` };
}

function baselineSource(clients: readonly string[], call?: AwsCall): string {
  const bare = baselineParts(clients, call);
  return [...bare.imports, ...bare.body, bare.handler, ''].join('\n');
}

/** What invokes a handler: what a peer may be invoked by, or an operator (the CLI's Invoke). */
type InvocationKind = PeerSpec['kind'] | 'operator';

/** What a by-the-book peer of a handler uses. */
interface PeerSpec {
  /** What invokes it: an SQS batch, a DynamoDB stream batch, an HTTP API request, a schedule. */
  readonly kind: 'sqs' | 'stream' | 'http' | 'schedule';
  /**
   * A handler module written by the book that does the job's real work (harness/peers/, from
   * the repository's root), bundled as it is; the parts below then say nothing. @default - the
   * peer is generated from the parts it uses (peerSource), one write per job
   */
  readonly module?: string;
  readonly dynamodb?: boolean;
  readonly sqs?: boolean;
  readonly redis?: boolean;
  readonly lambda?: boolean;
  /** Powertools idempotency over DynamoDB, as its documentation wires it. */
  readonly idempotency?: boolean;
  /** A flag read with Powertools parameters (the degrade flag, the pause flags). */
  readonly parameters?: boolean;
}

/**
 * The reference app's handlers, each rewritten by the book with the parts it needs: the peers a
 * cold start is compared with. A handler not listed (a team's own) has no peer.
 */
const PEERS: Record<string, PeerSpec> = {
  // The job types' peers do their real work: the handler-time bench runs them on the same batches.
  'payment-capture': { kind: 'sqs', module: 'harness/peers/payment-capture.ts' },
  'notification-send': { kind: 'sqs', module: 'harness/peers/notification-send.ts' },
  'inventory-reserve': { kind: 'sqs', module: 'harness/peers/inventory-reserve.ts' },
  'outbox-relay': { kind: 'stream', dynamodb: true, sqs: true, idempotency: true, parameters: true },
  'cache-invalidator': { kind: 'stream', redis: true },
  ingress: { kind: 'http', dynamodb: true, sqs: true, idempotency: true, parameters: true },
  'order-reader': { kind: 'http', dynamodb: true, redis: true },
  'flag-reconciler': { kind: 'schedule', lambda: true, parameters: true },
};

/** The clients a peer may construct, each at module scope as the SDK guide advises. */
const PEER_CLIENTS: readonly {
  readonly part: 'dynamodb' | 'sqs' | 'redis' | 'lambda';
  readonly imports: string;
  readonly construct: string;
}[] = [
  {
    part: 'dynamodb',
    imports: "import { DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';",
    construct: 'const dynamodb = new DynamoDBClient({});',
  },
  {
    part: 'sqs',
    imports: "import { SQSClient, SendMessageCommand } from '@aws-sdk/client-sqs';",
    construct: 'const sqs = new SQSClient({});',
  },
  {
    part: 'redis',
    imports: "import Redis from 'ioredis';",
    construct: 'const redis = new Redis(process.env.REDIS_URL, { lazyConnect: true });',
  },
  {
    part: 'lambda',
    imports: "import { LambdaClient, UpdateEventSourceMappingCommand } from '@aws-sdk/client-lambda';",
    construct: 'const lambda = new LambdaClient({});',
  },
];

/**
 * A peer's source, written as the Powertools documentation shows it (Logger with addContext,
 * Metrics with publishStoredMetrics, processPartialResponse with a BatchProcessor, makeIdempotent
 * with a DynamoDBPersistenceLayer and registerLambdaContext, getParameter from parameters/ssm, a
 * zod schema for the input), clients constructed at module scope as the SDK guide advises.
 */
function peerSource(spec: PeerSpec): string {
  const lines = [
    "import { Logger } from '@aws-lambda-powertools/logger';",
    "import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';",
    "import { z } from 'zod';",
  ];
  const body = [
    "const logger = new Logger({ serviceName: 'peer' });",
    "const metrics = new Metrics({ namespace: 'peer', serviceName: 'peer' });",
    'const Job = z.object({ type: z.string(), idempotencyKey: z.string(), payload: z.record(z.string(), z.unknown()) });',
  ];
  const batch = spec.kind === 'sqs' || spec.kind === 'stream';
  if (batch) {
    lines.push(
      "import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';",
    );
    body.push(
      `const processor = new BatchProcessor(EventType.${spec.kind === 'sqs' ? 'SQS' : 'DynamoDBStreams'});`,
    );
  }
  for (const client of PEER_CLIENTS)
    if (spec[client.part] === true) {
      lines.push(client.imports);
      body.push(client.construct);
    }
  if (spec.parameters)
    lines.push("import { getParameter, SSMProvider } from '@aws-lambda-powertools/parameters/ssm';");
  // The work each kind does with its clients: one write per job, as the real handler's first call.
  const work = [
    spec.dynamodb
      ? "await dynamodb.send(new UpdateItemCommand({ TableName: process.env.ORDERS_TABLE, Key: { pk: { S: job.idempotencyKey } }, UpdateExpression: 'SET done = :t', ExpressionAttributeValues: { ':t': { BOOL: true } } }));"
      : '',
    spec.redis ? 'await redis.set(job.idempotencyKey, JSON.stringify(job.payload));' : '',
    spec.sqs
      ? 'await sqs.send(new SendMessageCommand({ QueueUrl: process.env.QUEUE_URL, MessageBody: JSON.stringify(job) }));'
      : '',
    "metrics.addMetric('JobDone', MetricUnit.Count, 1);",
  ].join(' ');
  if (spec.idempotency) {
    lines.push(
      "import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';",
      "import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';",
    );
    body.push(
      'const persistenceStore = new DynamoDBPersistenceLayer({ tableName: process.env.IDEMPOTENCY_TABLE });',
      "const config = new IdempotencyConfig({ eventKeyJmesPath: 'idempotencyKey' });",
      `const doJob = makeIdempotent(async (job) => { ${work} return { done: true }; }, { persistenceStore, config });`,
    );
  } else body.push(`const doJob = async (job) => { ${work} return { done: true }; };`);
  const flag = spec.parameters
    ? "if ((await getParameter(process.env.DEGRADE_FLAG, { maxAge: 5 })) === 'on') logger.warn('degraded');"
    : '';
  const register = spec.idempotency ? 'config.registerLambdaContext(context);' : '';
  if (batch) {
    const parse =
      spec.kind === 'sqs'
        ? 'Job.parse(JSON.parse(record.body))'
        : 'Job.parse({ type: record.eventName, idempotencyKey: record.eventID, payload: record.dynamodb?.NewImage ?? {} })';
    body.push(
      `const recordHandler = async (record) => doJob(${parse});`,
      `export const handler = async (event, context) => { logger.addContext(context); ${register} if (event.Records.length > 0) { ${flag} } const response = await processPartialResponse(event, recordHandler, processor, { context }); metrics.publishStoredMetrics(); return response; };`,
    );
  } else if (spec.kind === 'http') {
    body.push(
      `export const handler = async (event, context) => { logger.addContext(context); ${register} ${flag} const job = Job.parse({ type: event.routeKey, idempotencyKey: event.headers?.['idempotency-key'] ?? event.requestContext.requestId, payload: JSON.parse(event.body ?? '{}') }); const result = await doJob(job); metrics.publishStoredMetrics(); return { statusCode: 200, body: JSON.stringify(result) }; };`,
    );
  } else {
    body.push(
      "export const handler = async (event, context) => { logger.addContext(context); const flags = await new SSMProvider().getMultiple('/tenang/dev/flags/'); for (const [name, value] of Object.entries(flags ?? {})) await lambda.send(new UpdateEventSourceMappingCommand({ UUID: name, Enabled: value !== 'paused' })); metrics.publishStoredMetrics(); return { reconciled: Object.keys(flags ?? {}).length }; };",
    );
  }
  return `${lines.join('\n')}\n${body.join('\n')}\n`;
}

/**
 * NodejsFunction's bundling defaults for a nodejs22.x function (aws-cdk-lib aws-lambda-nodejs):
 * CommonJS, not minified, no source map, target node22, and `@aws-sdk/*` left out of the bundle,
 * to be loaded from the runtime's own copy (NODE_PATH) — the reason its cold starts are slower
 * (aws/aws-cdk#25492).
 */
const NODEJS_FUNCTION_DEFAULTS: BuildOptions = {
  bundle: true,
  platform: 'node',
  target: 'node22',
  format: 'cjs',
  external: ['@aws-sdk/*'],
  nodePaths: [path.join(ROOT, 'node_modules')],
  logLevel: 'silent',
};

/** Where a peer bundle finds the SDK it leaves out, as Lambda's NODE_PATH finds the runtime's copy. */
export const PEER_NODE_PATH = path.join(ROOT, 'node_modules');

/**
 * Bundles `handler`'s by-the-book peer into `dir` with NodejsFunction's defaults; returns the
 * bundle (CommonJS: `.js` with no package.json around it), or undefined when it has no peer.
 * It loads the SDK from PEER_NODE_PATH.
 */
export async function bundlePeer(handler: string, dir: string): Promise<string | undefined> {
  const spec = PEERS[handler];
  if (spec === undefined) return undefined;
  let entry: string;
  if (spec.module === undefined) {
    entry = path.join(dir, `${handler}.peer-entry.mjs`);
    fs.writeFileSync(entry, peerSource(spec));
  } else entry = path.join(ROOT, spec.module);
  const file = path.join(dir, `${handler}.peer.js`);
  await build({ ...NODEJS_FUNCTION_DEFAULTS, entryPoints: [entry], outfile: file });
  return file;
}

/** The first invocation's event, by what invokes the handler, with a few words for the report. */
function firstEvent(
  kind: InvocationKind,
  handler: string,
): { readonly event: unknown; readonly what: string } {
  if (kind === 'sqs' || kind === 'stream') return { event: { Records: [] }, what: 'an empty batch' };
  if (kind === 'operator')
    return { event: OPERATOR_INVOCATIONS[handler], what: "an operator's dry-run request" };
  if (kind === 'schedule')
    return {
      event: { source: 'aws.events', 'detail-type': 'Scheduled Event', detail: {} },
      what: 'a scheduled run',
    };
  const route: {
    method: string;
    path: string;
    raw: string;
    params: Record<string, string>;
    body: string;
  } =
    handler === 'order-reader'
      ? {
          method: 'GET',
          path: '/orders/{id}',
          raw: '/orders/o-bench-1',
          params: { id: 'o-bench-1' },
          body: '',
        }
      : {
          method: 'POST',
          path: '/orders',
          raw: '/orders',
          params: {},
          body: JSON.stringify({
            customerEmail: 'bench@example.com',
            lines: [{ sku: 'sku-1', quantity: 1 }],
            amountMinor: 1000,
            currency: 'EUR',
          }),
        };
  return {
    event: toHttpApiEvent(
      route,
      {
        method: route.method,
        path: route.raw,
        query: '',
        headers: { 'content-type': 'application/json' },
        body: route.body,
      },
      route.params,
    ),
    what: `${route.method} ${route.raw}`,
  };
}

/**
 * tenang's functions that only an operator invokes (the CLI's Invoke), with the request their
 * first invocation gets: for the cache admin a dry-run prefix invalidation, which connects to the
 * cache (its first network request) and changes nothing. They have no by-the-book peer.
 */
const OPERATOR_INVOCATIONS: Record<string, unknown> = {
  'cache-admin': {
    operation: 'invalidate-prefix',
    // Under the bench stage's keyspace (cacheKeyspace('dev')): any other prefix is refused
    // before the cache is reached, and the first invocation would then measure no connection.
    prefix: 'tenang:dev:bench:',
    batch: 100,
    dryRun: true,
    requestedBy: { actor: 'bench' },
  },
};

/** What invokes a handler: its peer's kind, an operator, or an SQS batch for a job module with no peer. */
function kindOf(handler: string, entry: string): InvocationKind {
  const peer = PEERS[handler];
  if (peer !== undefined) return peer.kind;
  if (handler in OPERATOR_INVOCATIONS) return 'operator';
  if (entry.includes(`${path.sep}jobs${path.sep}`)) return 'sqs';
  throw new Error(
    `bench bundles: no first invocation known for ${handler} (add it to PEERS in bench/bundles.ts)`,
  );
}

/** Where a first invocation first reached for the network: the host, and the AWS operation when it names one. */
interface FirstRequest {
  readonly host?: string;
  /** The X-Amz-Target header of an AWS JSON-protocol request. */
  readonly target?: string;
}

/**
 * A fresh Node process that times the module's load, then its first invocation with `event`
 * until the invocation first reaches for the network or returns. Reaching is the first call of
 * http/https.request (the SDK's handler; before https builds its TLS context, which no handler
 * that makes no call pays), tls.connect or net.Socket#connect (ioredis, fetch). An invocation
 * that throws first means the bench's event is wrong for the handler: it fails the bench.
 */
function coldStart(
  file: string,
  env: NodeJS.ProcessEnv,
  event: unknown,
): ColdStart & { readonly request?: FirstRequest } {
  const script = `
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { syncBuiltinESMExports } from 'node:module';
let first; let opened; let request;
const connected = new Promise((r) => { opened = r; });
const mark = (args) => {
  if (first !== undefined) return;
  first = process.hrtime.bigint();
  const options = args.find((a) => a !== null && typeof a === 'object' && !(a instanceof URL)) ?? {};
  request = { host: options.hostname ?? options.host, target: options.headers?.['x-amz-target'] };
  opened();
};
for (const [owner, name] of [[http, 'request'], [https, 'request'], [tls, 'connect'], [net.Socket.prototype, 'connect']]) {
  const original = owner[name];
  owner[name] = function (...args) { mark(args); return original.apply(this, args); };
}
syncBuiltinESMExports();
const context = { functionName: 'bench', functionVersion: '$LATEST', invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:bench', memoryLimitInMB: '256', awsRequestId: 'bench-1', logGroupName: '/aws/lambda/bench', logStreamName: 'bench', callbackWaitsForEmptyEventLoop: true, getRemainingTimeInMillis: () => 30000 };
const t0 = process.hrtime.bigint();
const mod = await import(${JSON.stringify(file)});
const t1 = process.hrtime.bigint();
const handler = mod.handler ?? mod.default?.handler;
const ended = Promise.resolve().then(() => handler(JSON.parse(process.env.BENCH_EVENT), context)).then(() => 'returned', (e) => 'threw: ' + (e?.message ?? e));
const how = await Promise.race([ended, connected.then(() => 'network')]);
const t2 = how === 'network' ? first : process.hrtime.bigint();
process.stdout.write('\\n@@bench ' + JSON.stringify({ loadMs: Number(t1 - t0) / 1e6, readyMs: Number(t2 - t0) / 1e6, how, request }) + '\\n');
process.exit(0);
`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...env, BENCH_EVENT: JSON.stringify(event) },
    encoding: 'utf8',
    // What the handlers log stays in the child (an error carries it).
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 16 * 1024 * 1024,
  });
  const line = out.split('\n').findLast((l) => l.startsWith('@@bench '));
  if (line === undefined) throw new Error(`${path.basename(file)}: the timing process printed no result`);
  const r = JSON.parse(line.slice('@@bench '.length)) as ColdStart & { how: string; request?: FirstRequest };
  if (r.how.startsWith('threw'))
    throw new Error(
      `${path.basename(file)}: its first invocation ${r.how} (the bench's event is wrong for it)`,
    );
  return { loadMs: r.loadMs, readyMs: r.readyMs, ...(r.request === undefined ? {} : { request: r.request }) };
}

/** The environment a handler module needs to load (module scope parses it). */
function handlerEnv(): NodeJS.ProcessEnv {
  const queue = 'https://sqs.us-east-1.amazonaws.com/123456789012/q';
  return {
    PATH: process.env.PATH,
    NODE_PATH: PEER_NODE_PATH,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'bench',
    AWS_SECRET_ACCESS_KEY: 'bench',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    POWERTOOLS_SERVICE_NAME: 'bench',
    POWERTOOLS_METRICS_NAMESPACE: 'tenang',
    TENANG_STAGE: 'dev',
    TENANG_MAPPINGS: JSON.stringify({ 'payment-consumer': '11111111-1111-1111-1111-111111111111' }),
    ORDERS_TABLE: 'orders',
    IDEMPOTENCY_TABLE: 'idempotency',
    LOCKS_TABLE: 'locks',
    DEDUP_TABLE: 'dedup',
    INVENTORY_TABLE: 'inventory',
    QUEUE_URL: queue,
    DLQ_URL: `${queue}-dlq`,
    EXPIRED_QUEUE_URL: `${queue}-expired`,
    PAYMENT_QUEUE_URL: `${queue}.fifo`,
    NOTIFICATION_SEND_QUEUE_URL: queue,
    INVENTORY_RESERVE_QUEUE_URL: queue,
    DEGRADE_FLAG: '/tenang/dev/flags/degrade',
    PAYMENT_PROVIDER_URL: 'http://127.0.0.1:9',
    MESSAGING_PROVIDER_URL: 'http://127.0.0.1:9',
    REDIS_URL: 'redis://127.0.0.1:9',
    CACHE_NAME: 'tenang-dev',
    CACHE_AUTH: 'none',
  };
}

/** The example app whose own functions and job modules are measured beside tenang's. */
const EXAMPLE_DIR = path.join(ROOT, 'examples', 'reference');

/**
 * Every deployed handler module, by name: tenang's own under lambdas/ (lambdas/<name>/index.ts)
 * and the reference app's functions and job modules (examples/reference/{functions,jobs}/<name>.ts).
 */
function handlerModules(): { readonly name: string; readonly entry: string }[] {
  const own = fs
    .readdirSync(path.join(ROOT, 'lambdas'))
    .map((d) => ({ name: d, entry: path.join(ROOT, 'lambdas', d, 'index.ts') }))
    .filter((h) => fs.existsSync(h.entry));
  const example = ['functions', 'jobs'].flatMap((dir) =>
    fs
      .readdirSync(path.join(EXAMPLE_DIR, dir))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => ({ name: path.basename(f, '.ts'), entry: path.join(EXAMPLE_DIR, dir, f) })),
  );
  return [...own, ...example].sort((a, b) => a.name.localeCompare(b.name));
}

/** Medians of a variant's cold starts. */
function medians(samples: readonly ColdStart[]): ColdStart {
  return { loadMs: median(samples.map((s) => s.loadMs)), readyMs: median(samples.map((s) => s.readyMs)) };
}

/** Measures every handler: tenang's lambdas/ and the reference app's functions and job modules. */
export async function measureBundles(opts: {
  runs: number;
  log: (line: string) => void;
}): Promise<BundleResult[]> {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-bench-bundles-'));
  const handlers = handlerModules();
  const env = handlerEnv();
  const results: BundleResult[] = [];
  for (const { name: handler, entry } of handlers) {
    const file = path.join(out, `${handler}.mjs`);
    const meta = await bundle(entry, file);
    const clients = sdkClients(meta);
    const first = firstEvent(kindOf(handler, entry), handler);
    // One run ahead of the timed ones: the AWS call the handler's first invocation makes first,
    // which the bare handler and the floor then make too.
    const call = awsCallOf(coldStart(file, env, first.event).request, clients);
    const baseEntry = path.join(out, `${handler}.baseline-entry.mjs`);
    fs.writeFileSync(baseEntry, baselineSource(clients, call));
    const baseFile = path.join(out, `${handler}.baseline.mjs`);
    // Same options; nodePaths resolves the SDK from the project, not from the temp dir.
    await build({ ...BUNDLE_OPTIONS, entryPoints: [baseEntry], outfile: baseFile });
    const libs = floorLibraries(meta);
    const floorEntry = path.join(out, `${handler}.floor-entry.mjs`);
    fs.writeFileSync(floorEntry, floorSource(clients, libs, call));
    const floorFile = path.join(out, `${handler}.floor.mjs`);
    await build({ ...BUNDLE_OPTIONS, entryPoints: [floorEntry], outfile: floorFile });
    const peerFile = await bundlePeer(handler, out);
    const ours: ColdStart[] = [];
    const base: ColdStart[] = [];
    const floor: ColdStart[] = [];
    const peer: ColdStart[] = [];
    // Interleaved, so machine noise hits every variant alike.
    for (let i = 0; i < opts.runs; i += 1) {
      ours.push(coldStart(file, env, first.event));
      const bare = coldStart(baseFile, env, first.event);
      // The bare handler must stop where the handler stops: at the same call, or at none.
      if (bare.request?.target !== call?.target)
        throw new Error(
          `bench bundles: ${handler}'s bare handler first called ${bare.request?.target ?? 'nothing'}, not ${call?.target ?? 'nothing'}`,
        );
      base.push(bare);
      floor.push(coldStart(floorFile, env, first.event));
      if (peerFile !== undefined) peer.push(coldStart(peerFile, env, first.event));
    }
    const [o, b, f] = [medians(ours), medians(base), medians(floor)];
    const p = peerFile === undefined ? undefined : medians(peer);
    const result: BundleResult = {
      handler,
      bytes: fs.statSync(file).size,
      baselineBytes: fs.statSync(baseFile).size,
      topPackages: topPackages(meta),
      sdkClients: clients,
      loadMsMedian: o.loadMs,
      baselineLoadMsMedian: b.loadMs,
      loadRatio: o.loadMs / b.loadMs,
      floorLibraries: libs,
      floorLoadMsMedian: f.loadMs,
      floorRatio: f.loadMs / b.loadMs,
      firstInvocation: first.what,
      ...(call === undefined ? {} : { firstAwsCall: call.target }),
      ready: { handler: o.readyMs, bare: b.readyMs, floor: f.readyMs },
      ...(p === undefined || peerFile === undefined
        ? {}
        : {
            peer: {
              bytes: fs.statSync(peerFile).size,
              loadMsMedian: p.loadMs,
              readyMs: p.readyMs,
            },
          }),
    };
    opts.log(
      `${handler}: ${(result.bytes / 1024).toFixed(0)} KiB, cold start ${o.readyMs.toFixed(1)} ms (load ${o.loadMs.toFixed(1)}), floor ${f.readyMs.toFixed(1)} (×${(o.readyMs / f.readyMs).toFixed(2)}), ${p === undefined ? 'no peer' : `peer ${p.readyMs.toFixed(1)} (×${(o.readyMs / p.readyMs).toFixed(2)})`}`,
    );
    results.push(result);
  }
  fs.rmSync(out, { recursive: true, force: true });
  return results;
}
