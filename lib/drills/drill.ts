/**
 * Drills (P2): each one creates its runbook's incident on the local platform, runs the runbook's
 * `tenang` commands through the CLI entry point, and checks that the system recovered with
 * nothing lost and nothing done twice. `tenang drill <name>` and the drill tests run the same
 * code; every command a drill runs is recorded, so a test can prove it is written in the runbook.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { PipelineConfig } from '../config';
import { loadAppExtensions, type AppExtensions } from '../local/extensions';
import type { LocalPlatform } from '../local/platform';
import { callApi, type ApiAnswer } from '../local/traffic';
import type { DrillInfo } from '../ops/drills/catalog';
import { cliPlace, type CliPlace } from '../ops/cli-place';

/** What one CLI command answered. */
export interface CliAnswer {
  readonly argv: readonly string[];
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/** Runs the `tenang` CLI (bin/tenang.ts `run`) with the platform's endpoints. */
export type CliRunner = (argv: readonly string[]) => Promise<CliAnswer>;

/** One verified fact at the end of a drill. */
export interface DrillCheck {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

/** What a drill works with. */
export interface DrillContext {
  readonly platform: LocalPlatform;
  readonly stage: string;
  readonly config: PipelineConfig;
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  /** Runs a runbook step; the step, its exit code and its output go to the drill's record. */
  readonly tenang: CliRunner;
  /** Calls the local HTTP API. */
  readonly api: (
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ) => Promise<ApiAnswer>;
  /** A unique id part for this run. */
  readonly runId: string;
  /**
   * The job type `--job-type` named (drills that take any job type only). @default the app's
   * drillJobTypes entry for the drill, else the pipeline's first job type with a samplePayload
   */
  readonly jobType: string | undefined;
  /** The app's extensions (its cdk.json's `tenang:extensions`): its drill defaults and traffic. */
  readonly extensions: AppExtensions;
  readonly log: (line: string) => void;
  /** Polls `probe` until it returns a value, or fails naming `what` after `deadlineMs`. */
  until<T>(probe: () => Promise<T | undefined>, what: string, deadlineMs?: number): Promise<T>;
  /** A check that passed when `ok`. */
  check(name: string, ok: boolean, detail: string): DrillCheck;
}

/** A drill: its catalog entry (tenang's in catalog.ts, an app's with its code) and the code that plays it. */
export interface Drill extends DrillInfo {
  /** Creates the incident, runs the runbook's commands, returns the checks. */
  run(ctx: DrillContext): Promise<readonly DrillCheck[]>;
}

/** A finished drill. */
export interface DrillResult {
  readonly drill: string;
  readonly runbook: string;
  readonly incident: string;
  readonly steps: readonly CliAnswer[];
  readonly checks: readonly DrillCheck[];
  /** Set when the drill itself failed (a step or a wait threw). */
  readonly error: string | undefined;
  readonly passed: boolean;
  readonly seconds: number;
}

/** Options of runDrill. */
export interface RunDrillOptions {
  readonly platform: LocalPlatform;
  /** The CLI; bin/tenang.ts `run` with an io that captures output. */
  readonly cli: (argv: readonly string[], env: NodeJS.ProcessEnv) => Promise<Omit<CliAnswer, 'argv'>>;
  /** @default 'dev' */
  readonly stage?: string;
  /** @default dropped */
  readonly log?: (line: string) => void;
  /** @default a random id */
  readonly runId?: string;
  /** `--job-type`: the job type a drill that takes any plays its incident on. @default the app's default */
  readonly jobType?: string;
  /** The app's extensions. @default those of the app the platform deployed (loadAppExtensions) */
  readonly extensions?: AppExtensions;
}

/** Polls `probe` every 250 ms until it returns a value; throws naming `what` after the deadline. */
export async function until<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  deadlineMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${deadlineMs / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Runs `body` with a drill context on a running platform: clients on its endpoints and the CLI
 * with its environment, acting as `actor`. Every CLI step is appended to `steps`.
 */
export async function withDrillContext<T>(
  opts: RunDrillOptions,
  actor: string,
  steps: CliAnswer[],
  body: (ctx: DrillContext) => Promise<T>,
): Promise<T> {
  const stage = opts.stage ?? 'dev';
  const log = opts.log ?? ((): void => undefined);
  const platform = opts.platform;
  const endpoint = { endpoint: platform.env.endpoint, region: platform.env.region };
  const sqs = new SQSClient({ ...endpoint, useQueueUrlAsEndpoint: false });
  const dynamodb = new DynamoDBClient(endpoint);
  // The operator's environment, as on AWS: endpoints and credentials, and no way to the cache
  // but the stage's cache-admin function (the functions get REDIS_URL from the platform).
  const { REDIS_URL: _redis, ...withoutCache } = { ...process.env, ...platform.env.env };
  const env: NodeJS.ProcessEnv = {
    ...withoutCache,
    AWS_ENDPOINT_URL_LAMBDA: platform.control.url,
    TENANG_STAGE: stage,
    TENANG_ACTOR: actor,
  };
  const ctx: DrillContext = {
    platform,
    stage,
    config: platform.config,
    sqs,
    dynamodb,
    runId: opts.runId ?? `${actor}-${Date.now().toString(36)}`,
    jobType: opts.jobType,
    extensions: opts.extensions ?? loadAppExtensions(platform.projectRoot),
    log,
    async tenang(argv) {
      log(`$ tenang ${argv.join(' ')}`);
      const answer = { argv: [...argv], ...(await opts.cli(argv, env)) };
      steps.push(answer);
      for (const line of answer.out.split('\n').filter(Boolean)) log(`  ${line}`);
      if (answer.code !== 0) log(`  (exit ${answer.code}) ${answer.err.trim()}`);
      return answer;
    },
    api: (method, path, body, headers) => callApi(platform.api.url, method, path, body, headers),
    until,
    check: (name, ok, detail) => ({ name, ok, detail }),
  };
  try {
    return await body(ctx);
  } finally {
    sqs.destroy();
    dynamodb.destroy();
  }
}

/** Runs one drill on a running platform; never throws for a failed drill (see `passed`). */
export async function runDrill(drill: Drill, opts: RunDrillOptions): Promise<DrillResult> {
  const started = Date.now();
  const steps: CliAnswer[] = [];
  let checks: readonly DrillCheck[] = [];
  let error: string | undefined;
  try {
    checks = await withDrillContext(
      { ...opts, runId: opts.runId ?? `${drill.name}-${Date.now().toString(36)}` },
      `drill-${drill.name}`,
      steps,
      (ctx) => drill.run(ctx),
    );
  } catch (e) {
    error = e instanceof Error ? e.message : String(e);
  }
  return {
    drill: drill.name,
    runbook: drill.runbook,
    incident: drill.incident,
    steps,
    checks,
    error,
    passed: error === undefined && checks.length > 0 && checks.every((c) => c.ok),
    seconds: (Date.now() - started) / 1000,
  };
}

/** A drill's outcome as text: one line per step and check. */
export function renderDrillResult(result: DrillResult, place: CliPlace = cliPlace()): string {
  const lines = [
    `drill ${result.drill} (${place.runbook(result.runbook)}): ${result.incident}`,
    ...result.steps.map((s) => `  $ tenang ${s.argv.join(' ')}  → exit ${s.code}`),
    ...result.checks.map((c) => `  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`),
    ...(result.error === undefined ? [] : [`  ERROR ${result.error}`]),
    `${result.passed ? 'PASSED' : 'FAILED'} in ${result.seconds.toFixed(0)} s`,
  ];
  return lines.join('\n');
}
