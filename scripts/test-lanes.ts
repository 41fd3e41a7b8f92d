/**
 * `npm test`: every jest project, in two lanes that run at the same time (run inside
 * `tsx bin/local.ts run`, which provides moto and Redis):
 *
 * - **platform**: the suites that bring up a whole local platform (a synthesized app deployed
 *   into moto, a process per function, pollers, alarms): `platform`, `drills`, `scenario`,
 *   `chaos`. They measure nothing, but they wait on real timeouts and break when starved of CPU
 *   (a function timing out on a request that waited for the CPU is a fault they report), so they
 *   run one file at a time at normal priority.
 * - **light**: `unit`, `infra`, `package`, `integration`: CPU-bound but short, run at a lower
 *   priority (`nice -n 10`) so they use the CPU the platform lane leaves while it waits.
 *
 * One after the other they took about 40 minutes on the 2-core CI machine, over its 25-minute
 * budget; side by side, about 20. Arguments are passed to both lanes (a test path filter, `--ci`); `--outputFile=F` with
 * `--json` gets the two lanes' results merged into F as one jest JSON report; a lane that a filter
 * leaves without tests passes. Exits 0 only when both lanes pass.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

interface Lane {
  readonly name: string;
  readonly projects: readonly string[];
  readonly nice: boolean;
  /** Test files run at once. @default jest's (one less than the CPUs) */
  readonly workers?: number;
  /** Test paths this lane leaves to another (jest's testPathIgnorePatterns). @default none */
  readonly ignore?: readonly string[];
}

const PLATFORM_PROJECTS = ['platform', 'drills', 'scenario', 'chaos'] as const;

/**
 * The platform suites of the first platform lane; the second runs every other platform suite.
 * Balanced by their times alone (chaos about 370 s, drills 245, the rest 25–140 s each): about
 * 750 s against 550.
 */
export const FIRST_PLATFORM_LANE_FILES = [
  'test/chaos/chaos',
  'test/drills/drills',
  'test/scenario/smoke-scenario',
  'test/integration/local-up',
  'test/integration/iam-mutation',
] as const;

const FIRST_LANE_PATTERN = `/(${FIRST_PLATFORM_LANE_FILES.map((f) => f.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|')})\\.test\\.ts$`;

export const LANES: readonly Lane[] = [
  // The platform suites wait on real timeouts far more than they compute (a platform alone keeps
  // about two thirds of a core busy), so two run at once, one per lane. A single lane was the
  // critical path (about 1350 s on the 2-core CI machine). The two lanes split the suites by file
  // with ignore patterns: every platform suite is in exactly one of them. Two files at once in one
  // jest (--maxWorkers=2) had put chaos and drills side by side, which starved both.
  {
    name: 'platform-1',
    projects: PLATFORM_PROJECTS,
    nice: false,
    workers: 1,
    ignore: [`^(?!.*${FIRST_LANE_PATTERN})`],
  },
  { name: 'platform-2', projects: PLATFORM_PROJECTS, nice: false, workers: 1, ignore: [FIRST_LANE_PATTERN] },
  { name: 'light', projects: ['unit', 'infra', 'package', 'integration'], nice: true, workers: 2 },
];

/** The jest arguments of a lane, with the arguments given to npm test and its report file. */
export function laneArgs(lane: Lane, args: readonly string[], outputFile: string | undefined): string[] {
  return [
    '--selectProjects',
    ...lane.projects,
    '--passWithNoTests',
    ...(lane.workers === undefined ? [] : [`--maxWorkers=${lane.workers}`]),
    ...(lane.ignore === undefined || lane.ignore.length === 0
      ? []
      : lane.ignore.map((pattern) => `--testPathIgnorePatterns=${pattern}`)),
    ...args,
    ...(outputFile === undefined ? [] : [`--outputFile=${outputFile}`]),
  ];
}

/** The jest report fields CI reads and sums. */
interface JestReport {
  success?: boolean;
  numPassedTests?: number;
  numFailedTests?: number;
  numTotalTests?: number;
  numPassedTestSuites?: number;
  numFailedTestSuites?: number;
  numRuntimeErrorTestSuites?: number;
  numTotalTestSuites?: number;
  startTime?: number;
  testResults?: unknown[];
  [key: string]: unknown;
}

const SUMMED = [
  'numPassedTests',
  'numFailedTests',
  'numPendingTests',
  'numTodoTests',
  'numTotalTests',
  'numPassedTestSuites',
  'numFailedTestSuites',
  'numPendingTestSuites',
  'numRuntimeErrorTestSuites',
  'numTotalTestSuites',
] as const;

/** The lanes' reports as one: counts summed, results concatenated, success only if every lane's. */
export function mergeReports(reports: readonly (JestReport | undefined)[]): JestReport {
  const merged: JestReport = { success: true, testResults: [] };
  for (const report of reports) {
    if (report === undefined) {
      merged.success = false;
      merged.numRuntimeErrorTestSuites = (merged.numRuntimeErrorTestSuites ?? 0) + 1;
      continue;
    }
    merged.success = merged.success === true && report.success === true;
    for (const key of SUMMED)
      merged[key] = ((merged[key] as number | undefined) ?? 0) + ((report[key] as number | undefined) ?? 0);
    merged.startTime = Math.min(merged.startTime ?? Infinity, report.startTime ?? Infinity);
    merged.testResults = [...(merged.testResults ?? []), ...(report.testResults ?? [])];
  }
  return merged;
}

function runLane(lane: Lane, args: readonly string[], outputFile: string | undefined): Promise<number> {
  const jest = path.join(__dirname, '..', 'node_modules', '.bin', 'jest');
  const jestArgs = laneArgs(lane, args, outputFile);
  const [cmd, argv] =
    lane.nice && os.platform() !== 'win32' ? ['nice', ['-n', '10', jest, ...jestArgs]] : [jest, jestArgs];
  return new Promise((resolve) => {
    const child = spawn(cmd, argv, { stdio: 'inherit', env: process.env });
    child.on('error', (error) => {
      process.stderr.write(`[test] the ${lane.name} lane could not start: ${error.message}\n`);
      resolve(1);
    });
    child.on('exit', (code, signal) =>
      resolve(code ?? (signal === null ? 1 : 128 + os.constants.signals[signal])),
    );
  });
}

function readReport(file: string): JestReport | undefined {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8')) as JestReport;
  } catch {
    return undefined;
  }
}

async function main(argv: readonly string[]): Promise<number> {
  const outputArg = argv.find((a) => a.startsWith('--outputFile='));
  const outputFile = outputArg?.slice('--outputFile='.length);
  const args = argv.filter((a) => a !== outputArg);
  const scratch =
    outputFile === undefined ? undefined : fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-lanes-'));
  const files = LANES.map((lane) =>
    scratch === undefined ? undefined : path.join(scratch, `${lane.name}.json`),
  );
  const started = Date.now();
  const codes = await Promise.all(LANES.map((lane, i) => runLane(lane, args, files[i])));
  for (const [i, lane] of LANES.entries())
    process.stderr.write(`[test] ${lane.name} lane (${lane.projects.join(', ')}): exit ${codes[i]}\n`);
  process.stderr.write(`[test] every lane done in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  if (outputFile !== undefined && scratch !== undefined) {
    const merged = mergeReports(files.map((f) => (f === undefined ? undefined : readReport(f))));
    fs.writeFileSync(outputFile, JSON.stringify(merged));
    fs.rmSync(scratch, { recursive: true, force: true });
    process.stderr.write(`[test] merged results written to ${outputFile}\n`);
  }
  return codes.every((c) => c === 0) ? 0 : 1;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    },
  );
}
