/**
 * `npm test`: every jest project, in four lanes that run at the same time (inside
 * `tsx bin/local.ts run`, which provides moto and Redis):
 *
 * - **platform-1** and **platform-2**: the suites that bring up a whole local platform (a
 *   synthesized app deployed into moto, a process per function, pollers, alarms): `platform`,
 *   `drills`, `scenario`, `chaos`, split by file. They wait on real timeouts far more than they
 *   compute, but break when starved of CPU (a function timing out on a request that waited for
 *   the CPU is a fault they report), so each lane runs one file at a time at normal priority.
 * - **package**: the package, `tenang init` and the team's walk outside the repository, which run
 *   a platform of their own too (`tenang local start`, a drill), from the start of the run: at the
 *   light lane's priority it took 807 s behind the others and was the critical path.
 * - **light** (`unit`, `infra`) and **integration**: CPU-bound and short, at a lower priority
 *   (`nice -n 10`) on the CPU the others leave while they wait; two lanes, so that both cores
 *   are used once the platform lanes are done.
 *
 * Measured on the 2-core CI machine (clean clone): one platform lane beside the light one took
 * 1367 s; two platform lanes with the package suites in the light lane, 1074 s, with the CPU 96%
 * busy. Arguments are passed to every lane (a test path filter, `--ci`); `--outputFile=F` with
 * `--json` gets the lanes' results merged into F as one jest JSON report; a lane that a filter
 * leaves without tests passes. Exits 0 only when every lane passes.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export interface Lane {
  readonly name: string;
  readonly projects: readonly string[];
  /** Its `nice` increment: 0 for normal priority. */
  readonly nice: number;
  /** Test files run at once. @default jest's (one less than the CPUs) */
  readonly workers?: number;
  /** Test paths this lane leaves to another (jest's testPathIgnorePatterns). @default none */
  readonly ignore?: readonly string[];
}

const PLATFORM_PROJECTS = ['platform', 'drills', 'scenario', 'chaos'] as const;

/**
 * The platform suites of the first platform lane; the second runs every other platform suite.
 * Balanced by their times in a run of two platform lanes (chaos 298 s, drills 291, smoke 129,
 * local-up 71; the second's add-job-type 166, unplanned-kill 167, shared-platform 187, backlog 93,
 * own-app 62, iam-mutation 55): about 790 s against 730.
 */
export const FIRST_PLATFORM_LANE_FILES = [
  'test/chaos/chaos',
  'test/drills/drills',
  'test/scenario/smoke-scenario',
  'test/integration/local-up',
] as const;

const FIRST_LANE_PATTERN = `/(${FIRST_PLATFORM_LANE_FILES.map((f) => f.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|')})\\.test\\.ts$`;

export const LANES: readonly Lane[] = [
  // The platform suites wait on real timeouts far more than they compute (drills alone keep two
  // thirds of a core busy), so two run at once, one per lane: a single lane was the critical path
  // (about 1350 s on the 2-core CI machine). The lanes split the suites by file with ignore
  // patterns, so every platform suite is in exactly one of them. Two files at once in one jest
  // (--maxWorkers=2) had put chaos and drills side by side, which starved both.
  {
    name: 'platform-1',
    projects: PLATFORM_PROJECTS,
    nice: 0,
    workers: 1,
    ignore: [`^(?!.*${FIRST_LANE_PATTERN})`],
  },
  { name: 'platform-2', projects: PLATFORM_PROJECTS, nice: 0, workers: 1, ignore: [FIRST_LANE_PATTERN] },
  // Its suites start platforms (tenang local start, drills): a little below the platform lanes.
  { name: 'package', projects: ['package'], nice: 5, workers: 1 },
  // Two light lanes at the same low priority: they take what the platform lanes leave. As one
  // lane (one file at a time) it ran on alone for the last 140 s of an 898 s run, a core idle,
  // after the platform lanes were done (at about 620 and 755 s). Split by project, not by file:
  // the integration suites share one moto and Redis and have never run beside each other.
  { name: 'light', projects: ['unit', 'infra'], nice: 10, workers: 1 },
  { name: 'integration', projects: ['integration'], nice: 10, workers: 1 },
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
    lane.nice > 0 && os.platform() !== 'win32'
      ? ['nice', ['-n', String(lane.nice), jest, ...jestArgs]]
      : [jest, jestArgs];
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
  const endedAt: number[] = [];
  const codes = await Promise.all(
    LANES.map((lane, i) =>
      runLane(lane, args, files[i]).then((code) => {
        endedAt[i] = Date.now();
        return code;
      }),
    ),
  );
  // Each lane's own time: which one is the critical path.
  for (const [i, lane] of LANES.entries())
    process.stderr.write(
      `[test] ${lane.name} lane (${lane.projects.join(', ')}): exit ${codes[i]} after ${(((endedAt[i] ?? started) - started) / 1000).toFixed(0)} s\n`,
    );
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
