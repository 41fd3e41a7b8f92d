/**
 * Bundle size and cold module-load time of every handler, against a bare handler that only
 * constructs the same AWS SDK clients, and the Redis client where the handler uses one (the load
 * no code of ours can avoid). Bundled with the
 * options NodejsFunction uses (lib/infra/defaults.ts), loaded in fresh Node processes,
 * interleaved with the baseline so machine noise hits both alike.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { build, type BuildOptions, type Metafile } from 'esbuild';
import { referencePipeline } from '../examples/reference/pipeline';
import { encodePipeline } from '../lib/config';
import { BUNDLE_BANNER } from '../lib/infra/defaults';
import { spread } from './backoff';

const median = (values: readonly number[]): number => spread(values).median;

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
  /** loadMsMedian / baselineLoadMsMedian (target ≤ 1.15). */
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
}

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
const PIPELINE_DEFINE = {
  'process.env.TENANG_PIPELINE': JSON.stringify(encodePipeline(referencePipeline('dev', 'us-east-1'))),
};

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
 * The unavoidable clients a bundle includes: its @aws-sdk/client-* packages and, for the
 * functions that talk to the cache, the Redis client.
 */
function sdkClients(meta: Metafile): string[] {
  const clients = new Set<string>();
  for (const input of Object.keys(meta.inputs)) {
    const m = /node_modules\/@aws-sdk\/(client-[a-z0-9-]+)\//.exec(input);
    if (m?.[1] !== undefined) clients.add(m[1]);
    if (/node_modules\/ioredis\//.test(input)) clients.add('ioredis');
  }
  return [...clients].sort();
}

/** The mandated libraries (Powertools packages, zod) a bundle includes. */
function floorLibraries(meta: Metafile): string[] {
  const libs = new Set<string>();
  for (const input of Object.keys(meta.inputs)) {
    const m = /node_modules\/@aws-lambda-powertools\/(logger|metrics|batch|idempotency|parameters)\//.exec(
      input,
    );
    if (m?.[1] !== undefined) libs.add(m[1]);
    if (/node_modules\/zod\//.test(input)) libs.add('zod');
  }
  return [...libs].sort();
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

function floorSource(clients: readonly string[], libs: readonly string[]): string {
  const bare = baselineSource(clients).replace(/export const handler[^\n]*\n$/, '');
  const snippets = libs.map((l) => FLOOR_SNIPPETS[l]).filter((s) => s !== undefined);
  return `${snippets.map((s) => s.imports).join('\n')}\n${bare}${snippets.map((s) => s.body).join('\n')}\nexport const handler = async () => ({});\n`;
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

function baselineSource(clients: readonly string[]): string {
  const lines = clients.map((pkg, i) =>
    pkg === 'ioredis'
      ? `import C${i} from 'ioredis';`
      : `import { ${clientClassName(pkg)} as C${i} } from '@aws-sdk/${pkg}';`,
  );
  const constructs = clients.map((pkg, i) =>
    pkg === 'ioredis' ? `new C${i}({ lazyConnect: true });` : `new C${i}({});`,
  );
  return `${lines.join('\n')}\n${constructs.join('\n')}\nexport const handler = async () => ({});\n`;
}

function loadMs(file: string, env: NodeJS.ProcessEnv): number {
  const script = `const t=process.hrtime.bigint();await import(${JSON.stringify(file)});process.stdout.write(String(Number(process.hrtime.bigint()-t)/1e6));`;
  return Number(
    execFileSync(process.execPath, ['--input-type=module', '-e', script], { env, encoding: 'utf8' }),
  );
}

/** The environment a handler module needs to load (module scope parses it). */
function handlerEnv(): NodeJS.ProcessEnv {
  const queue = 'https://sqs.us-east-1.amazonaws.com/123456789012/q';
  return {
    PATH: process.env.PATH,
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
    const baseEntry = path.join(out, `${handler}.baseline-entry.mjs`);
    fs.writeFileSync(baseEntry, baselineSource(clients));
    const baseFile = path.join(out, `${handler}.baseline.mjs`);
    // Same options; nodePaths resolves the SDK from the project, not from the temp dir.
    await build({ ...BUNDLE_OPTIONS, entryPoints: [baseEntry], outfile: baseFile });
    const libs = floorLibraries(meta);
    const floorEntry = path.join(out, `${handler}.floor-entry.mjs`);
    fs.writeFileSync(floorEntry, floorSource(clients, libs));
    const floorFile = path.join(out, `${handler}.floor.mjs`);
    await build({ ...BUNDLE_OPTIONS, entryPoints: [floorEntry], outfile: floorFile });
    const ours: number[] = [];
    const base: number[] = [];
    const floor: number[] = [];
    for (let i = 0; i < opts.runs; i += 1) {
      ours.push(loadMs(file, env));
      base.push(loadMs(baseFile, env));
      floor.push(loadMs(floorFile, env));
    }
    const result: BundleResult = {
      handler,
      bytes: fs.statSync(file).size,
      baselineBytes: fs.statSync(baseFile).size,
      topPackages: topPackages(meta),
      sdkClients: clients,
      loadMsMedian: median(ours),
      baselineLoadMsMedian: median(base),
      loadRatio: median(ours) / median(base),
      floorLibraries: libs,
      floorLoadMsMedian: median(floor),
      floorRatio: median(floor) / median(base),
    };
    opts.log(
      `${handler}: ${(result.bytes / 1024).toFixed(0)} KiB, load ${result.loadMsMedian.toFixed(1)} ms vs ${result.baselineLoadMsMedian.toFixed(1)} ms bare (×${result.loadRatio.toFixed(2)}), libraries alone ×${result.floorRatio.toFixed(2)}`,
    );
    results.push(result);
  }
  fs.rmSync(out, { recursive: true, force: true });
  return results;
}
