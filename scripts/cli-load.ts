/**
 * What the `tenang` CLI loads per command: spawns it as `npm run tenang` does (tsx, i.e.
 * `node --import tsx bin/tenang.ts …`) with a preload hook (cli-load-hook.mjs) that lists the
 * loaded modules at exit, and reports per command how many modules it loaded, whether aws-cdk-lib
 * or cdk-nag were among them, and the wall time (median of --runs, default 5).
 *
 *   npx tsx scripts/cli-load.ts            # the table (bench/CLI.md records it)
 *   npx tsx scripts/cli-load.ts --json
 *   npx tsx scripts/cli-load.ts --runs 1 -- status --help
 *
 * Commands that call AWS run against an endpoint that refuses connections (fake credentials, one
 * attempt) with the app's declaration in TENANG_PIPELINE (as given, else the reference example's):
 * they load everything their implementation needs, then fail at once.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '..');
const HOOK = path.join(__dirname, 'cli-load-hook.mjs');

/** An endpoint nothing listens on: calls fail with ECONNREFUSED without a retry. */
const UNREACHABLE_AWS: NodeJS.ProcessEnv = {
  AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'cli-load',
  AWS_SECRET_ACCESS_KEY: 'cli-load',
  AWS_MAX_ATTEMPTS: '1',
};

/** The commands measured by default. */
export const DEFAULT_CASES: readonly (readonly string[])[] = [
  ['--help'],
  ['status', '--help'],
  ['status'],
  ['pause', 'notification-consumer', '--reason', 'cli-load', '--for', '1m', '--dry-run'],
  ['dlq', 'list', 'payment.capture'],
  ['cache', 'invalidate', '--bump-version'],
  ['audit', '--help'],
  // The audit synthesizes with the CDK: it loads it once its action runs (no such file here).
  ['audit', '--template', 'no-such-template.json'],
];

/** One run of the CLI. */
export interface CliLoadRun {
  readonly argv: readonly string[];
  readonly exitCode: number | null;
  /** Modules in require.cache at exit. */
  readonly modules: number;
  readonly awsCdkLib: number;
  readonly cdkNag: number;
  /** Loaded files of this project (bin/, lib/), relative to the root. */
  readonly projectFiles: readonly string[];
  readonly wallMs: number;
}

const countUnder = (modules: readonly string[], pkg: string): number =>
  modules.filter((m) => m.includes(`${path.sep}node_modules${path.sep}${pkg}${path.sep}`)).length;

/** The app's declaration the commands run with: TENANG_PIPELINE, or the reference example's. */
async function pipelineDeclaration(): Promise<string> {
  const given = process.env.TENANG_PIPELINE;
  if (given !== undefined && given !== '') return given;
  const [{ encodePipeline }, { referencePipeline }] = await Promise.all([
    import('../lib/config'),
    import('../examples/reference/pipeline'),
  ]);
  return encodePipeline(referencePipeline('dev', 'us-east-1'));
}

/** Runs `tenang …argv` once with the hook and returns what it loaded. */
export async function measureCliLoad(argv: readonly string[]): Promise<CliLoadRun> {
  const pipeline = await pipelineDeclaration();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-cli-load-'));
  const report = path.join(dir, 'modules.json');
  try {
    const started = process.hrtime.bigint();
    const exitCode = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        ['--import', HOOK, '--import', 'tsx', path.join(ROOT, 'bin', 'tenang.ts'), ...argv],
        {
          cwd: ROOT,
          env: {
            ...process.env,
            ...UNREACHABLE_AWS,
            TENANG_PIPELINE: pipeline,
            TENANG_CLI_LOAD_REPORT: report,
          },
          stdio: 'ignore',
        },
      );
      child.on('error', reject);
      child.on('exit', (code) => resolve(code));
    });
    const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
    const { modules } = JSON.parse(fs.readFileSync(report, 'utf8')) as { modules: string[] };
    return {
      argv,
      exitCode,
      modules: modules.length,
      awsCdkLib: countUnder(modules, 'aws-cdk-lib'),
      cdkNag: countUnder(modules, 'cdk-nag'),
      projectFiles: modules
        .filter((m) => m.startsWith(ROOT) && !m.includes(`${path.sep}node_modules${path.sep}`))
        .map((m) => path.relative(ROOT, m)),
      wallMs,
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** One command's figures over several runs. */
export interface CliLoadSummary {
  readonly command: string;
  readonly modules: number;
  readonly awsCdkLib: boolean;
  readonly cdkNag: boolean;
  readonly medianMs: number;
  readonly exitCode: number | null;
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
};

/** Runs `argv` `runs` times, one after another. */
export async function summarizeCliLoad(argv: readonly string[], runs: number): Promise<CliLoadSummary> {
  const results: CliLoadRun[] = [];
  for (let i = 0; i < runs; i += 1) results.push(await measureCliLoad(argv));
  const last = results[results.length - 1];
  if (last === undefined) throw new Error('runs must be at least 1');
  return {
    command: `tenang ${argv.join(' ')}`,
    modules: last.modules,
    awsCdkLib: last.awsCdkLib > 0,
    cdkNag: last.cdkNag > 0,
    medianMs: Math.round(median(results.map((r) => r.wallMs))),
    exitCode: last.exitCode,
  };
}

/** The markdown table of summaries. */
export function renderCliLoad(summaries: readonly CliLoadSummary[]): string {
  const yesNo = (b: boolean): string => (b ? 'yes' : 'no');
  return [
    '| command | modules | aws-cdk-lib | cdk-nag | wall time (median) | exit |',
    '| --- | ---: | :---: | :---: | ---: | ---: |',
    ...summaries.map(
      (s) =>
        `| \`${s.command}\` | ${s.modules} | ${yesNo(s.awsCdkLib)} | ${yesNo(s.cdkNag)} | ${s.medianMs} ms | ${String(s.exitCode)} |`,
    ),
  ].join('\n');
}

async function main(args: readonly string[]): Promise<void> {
  const dashDash = args.indexOf('--');
  const own = dashDash === -1 ? args : args.slice(0, dashDash);
  const runsAt = own.indexOf('--runs');
  const runs = runsAt === -1 ? 5 : Number(own[runsAt + 1]);
  if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs takes a whole number from 1');
  const cases = dashDash === -1 ? DEFAULT_CASES : [args.slice(dashDash + 1)];
  const summaries: CliLoadSummary[] = [];
  for (const argv of cases) summaries.push(await summarizeCliLoad(argv, runs));
  process.stdout.write(
    own.includes('--json') ? `${JSON.stringify(summaries, null, 2)}\n` : `${renderCliLoad(summaries)}\n`,
  );
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
