/**
 * `npm run bench`: every comparison measured side by side in one run; writes
 * bench/results.json and bench/REPORT.md.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Command } from 'commander';
import { measureBundles, type BundleResult } from './bundles';

interface Results {
  readonly generatedAt: string;
  readonly machine: { readonly node: string; readonly cpus: number; readonly platform: string };
  readonly bundles?: readonly BundleResult[];
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
      'Each handler bundled as NodejsFunction bundles it (esbuild, minified, ESM, node22), loaded in a fresh Node process; the baseline is a bare handler that only constructs the same AWS SDK clients. Target: ratio ≤ 1.15.',
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
  return lines.join('\n');
}

async function main(): Promise<void> {
  const program = new Command('bench')
    .description('Measure calls per job, cache round trips, stampede protection, bundle size and load time.')
    .option('--runs <n>', 'fresh-process loads per handler and baseline', '15')
    .option('--only <sections>', 'comma-separated: bundles', 'bundles')
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
