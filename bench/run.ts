/**
 * `npm run bench`: every comparison measured side by side in one run; writes
 * bench/results.json and bench/REPORT.md.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Command } from 'commander';
import { measureBundles, type BundleResult } from './bundles';
import { measureCache, type CacheResults } from './cache';

interface Results {
  readonly generatedAt: string;
  readonly machine: { readonly node: string; readonly cpus: number; readonly platform: string };
  readonly bundles?: readonly BundleResult[];
  readonly cache?: CacheResults;
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(0)} KiB`;
}

function report(r: Results): string {
  const lines: string[] = [
    '# tenang benchmark report',
    '',
    `Generated ${r.generatedAt} on Node ${r.machine.node}, ${r.machine.cpus} CPUs (${r.machine.platform}). Counts are exact; times are medians of interleaved runs on a shared machine and move between runs — read the ratios.`,
    '',
  ];
  if (r.bundles !== undefined) {
    lines.push(
      '## Handler bundles and module load time',
      '',
      'Each handler bundled as NodejsFunction bundles it (esbuild, minified, ESM, node22), loaded in a fresh Node process; the baseline is a bare handler that only constructs the same AWS SDK clients (and the Redis client where the handler has one). Target: ratio ≤ 1.15.',
      '',
      '| handler | bundle | bare bundle | load ms | bare load ms | ratio | SDK clients | largest packages |',
      '|---|---|---|---|---|---|---|---|',
      ...r.bundles.map(
        (b) =>
          `| ${b.handler} | ${kib(b.bytes)} | ${kib(b.baselineBytes)} | ${b.loadMsMedian.toFixed(1)} | ${b.baselineLoadMsMedian.toFixed(1)} | ${b.loadRatio.toFixed(2)}${b.loadRatio <= 1.15 ? '' : ' ⚠'} | ${b.sdkClients.join(', ')} | ${b.topPackages.map((p) => `${p.name} ${kib(p.bytes)}`).join(', ')} |`,
      ),
      '',
    );
  }
  if (r.cache !== undefined) {
    lines.push(
      '## Cache',
      '',
      `Redis round trips per cache hit: **${r.cache.roundTripsPerHit.toFixed(2)}** over ${r.cache.hitReads} sequential warm reads (target 1).`,
      '',
      'Loader calls (reads reaching DynamoDB) when one hot key expires under 500 concurrent readers spread over 10 processes of 5 simulated instances each (50 instances, each with its own Redis connection and in-process single-flight); the load takes 200 ms. Target for ours: 1.',
      '',
      '| protection | readers | loader calls | Redis commands | p99 ms |',
      '|---|---|---|---|---|',
      ...r.cache.stampede.map(
        (s) =>
          `| ${s.protection === 'none' ? 'naive cache-aside' : s.protection === 'full' ? '**ours** (single-flight + Redis load lock)' : 'single-flight only'} | ${s.readers} | ${s.loaderCalls} | ${s.redisCommands} | ${s.p99Ms.toFixed(0)} |`,
      ),
      '',
    );
  }
  return lines.join('\n');
}

function requireEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined)
    throw new Error(`${name} is not set: run through \`npm run bench\`, which starts the local servers`);
  return value;
}

async function main(): Promise<void> {
  const program = new Command('bench')
    .description('Measure calls per job, cache round trips, stampede protection, bundle size and load time.')
    .option('--runs <n>', 'fresh-process loads per handler and baseline', '15')
    .option('--only <sections>', 'comma-separated: bundles,cache', 'bundles,cache')
    .option('--out <dir>', 'where results.json and REPORT.md go', path.resolve(__dirname));
  program.parse();
  const opts = program.opts<{ runs: string; only: string; out: string }>();
  const only = new Set(opts.only.split(','));
  const log = (line: string): void => {
    process.stderr.write(`[bench] ${line}\n`);
  };
  const results: Results = {
    generatedAt: new Date().toISOString(),
    machine: { node: process.version, cpus: os.cpus().length, platform: process.platform },
    bundles: only.has('bundles') ? await measureBundles({ runs: Number(opts.runs), log }) : undefined,
    cache: only.has('cache') ? await measureCache({ redisUrl: requireEnv('REDIS_URL'), log }) : undefined,
  };
  fs.mkdirSync(opts.out, { recursive: true });
  fs.writeFileSync(path.join(opts.out, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  fs.writeFileSync(path.join(opts.out, 'REPORT.md'), `${report(results)}\n`);
  log(`wrote ${path.join(opts.out, 'results.json')} and REPORT.md`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
