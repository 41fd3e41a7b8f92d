/**
 * Scenarios of the local platform (`tenang local start --scenario <name>`): the whole pipeline
 * runs on moto and the scenario's own redis-server while incidents are injected on a schedule; a
 * live status shows each job type; when the traffic stops the pipeline drains, the invariants are
 * checked against the sources of truth, and a report (HTML + JSON) is written to
 * reports/<timestamp>/. Any app gets the generic part: jobs of every job type with a
 * `samplePayload` (lib/local/scenario-declared-jobs.ts), the incidents that fit any job type
 * (lib/local/scenario-job-incidents.ts) and the invariants that hold for any app. An app whose
 * extensions give a scenario flow (lib/local/scenario-flow.ts, cdk.json's `tenang:extensions`)
 * gets that flow's part on top when its pipeline holds it: the flow's traffic, its incidents,
 * its invariants and its report sections (the reference's order flow:
 * examples/reference/local/scenario-order-flow.ts).
 */
import { createWriteStream } from 'node:fs';
import * as path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import { providerVariable } from '../config';
import { LocalPlatform } from './platform';
import { createReportDir, writeReport, type WrittenReport } from './report-files';
import {
  buildReport,
  type AlarmSection,
  type DlqEntry,
  type IncidentRecord,
  type PipelineSample,
  type ProviderTotals,
  type ScenarioReport,
} from './report-model';
import { LiveStatus, statusRows, type StatusContext } from './live-status';
import { loadAppExtensions } from './extensions';
import { readDeadLetters, type DeadLetterQueue } from './scenario-facts';
import type { FlowIncidentOutcome, ScenarioFlow, ScenarioFlowRun } from './scenario-flow';
import { pause, readVisibilityTimeout } from './scenario-queues';
import { checkJobInvariants, type JobInvariantFacts, type PoisonFact } from './scenario-invariants';
import {
  declaredJobFacts,
  declaredProviderCalls,
  sendDeclaredJobs,
  sendDeclaredJobsSteadily,
  type DeclaredJob,
} from './scenario-declared-jobs';
import {
  planJobIncidents,
  runJobIncident,
  type JobIncidentOutcome,
  type JobIncidentSpec,
} from './scenario-job-incidents';
import { FunctionOutputObserver, PipelineSampler } from './scenario-observer';
import { resolveScenarioTargets, type ScenarioTargets } from './scenario-targets';
import {
  ProcessDeathWatch,
  RedeliveryWait,
  redeliveryIncident,
  type RedeliveryWaitRecord,
  UNPLANNED_DEATH_KIND,
} from './scenario-deaths';
import { localAppDirectory } from './project';
import { ScenarioRedis } from './scenario-redis';

/** A scenario: traffic, incidents on a schedule, and how long the pipeline may take to drain. */
export interface ScenarioDefinition {
  readonly name: string;
  readonly description: string;
  /** Seconds of traffic. */
  readonly durationSeconds: number;
  /**
   * Per second: of the app's scenario flow's unit when it runs (FlowReport.rateUnit), else jobs
   * of the app's job types. (A flow plans its own incidents by the scenario's name:
   * ScenarioFlowRun.incidents.)
   */
  readonly ratePerSecond: number;
  /**
   * The incidents played on any app's job types (those with a samplePayload), each on the job
   * types it fits (scenario-job-incidents.ts planJobIncidents).
   */
  readonly jobIncidents: (durationSeconds: number) => readonly JobIncidentSpec[];
  /** Every alarm period is multiplied by this, so alarms can fire within a short run. */
  readonly alarmPeriodScale: number;
  /** Time the pipeline gets to drain after the traffic stops, besides a crashed batch's wait, s. */
  readonly drainSeconds: number;
  /** Sampling interval of the status and the report's series, ms. */
  readonly sampleEveryMs: number;
  /** Non-terminals: one status line per this many ms. */
  readonly statusLineEveryMs: number;
}

/** The scenarios, by name (an app's scenario flow plans its incidents for each name it knows). */
export const SCENARIOS: Readonly<Record<string, ScenarioDefinition>> = {
  default: {
    name: 'default',
    description:
      "Steady traffic with incidents: a consumer crash after a job's effect, poison messages and duplicates on every job type; an app's scenario flow adds its own (the reference's order flow: a provider outage, Redis down and a duplicate burst through the API).",
    durationSeconds: 180,
    ratePerSecond: 2,
    jobIncidents: (d) => [
      { kind: 'crash-after-effect', atSeconds: Math.min(10, d * 0.05) },
      { kind: 'malformed-message', atSeconds: d * 0.15 },
      { kind: 'duplicate-delivery', atSeconds: d * 0.75 },
    ],
    alarmPeriodScale: 1 / 12,
    drainSeconds: 60,
    sampleEveryMs: 1_000,
    statusLineEveryMs: 10_000,
  },
  smoke: {
    name: 'smoke',
    description:
      'Every incident of the default scenario, compressed into ~30 s (the crashed batch returns after the function timeout instead of the 6× visibility timeout).',
    durationSeconds: 30,
    ratePerSecond: 2,
    // The crash is armed ~7 s in, after the pollers took up the shorter visibility timeout; the
    // malformed messages are done before it, the duplicate after it.
    jobIncidents: (d) => [
      { kind: 'crash-after-effect', atSeconds: 0.5, shortenVisibility: true },
      { kind: 'malformed-message', atSeconds: d * 0.12 },
      { kind: 'duplicate-delivery', atSeconds: d * 0.4 },
    ],
    alarmPeriodScale: 1 / 30,
    drainSeconds: 45,
    sampleEveryMs: 1_000,
    statusLineEveryMs: 5_000,
  },
  steady: {
    name: 'steady',
    description: 'Steady traffic, no incident: a baseline to compare the others with.',
    durationSeconds: 120,
    ratePerSecond: 2,
    jobIncidents: () => [],
    alarmPeriodScale: 1 / 12,
    drainSeconds: 45,
    sampleEveryMs: 1_000,
    statusLineEveryMs: 10_000,
  },
};

/** A scenario option is invalid; the message lists every problem. */
export class ScenarioOptionsError extends Error {
  override readonly name: string = 'ScenarioOptionsError';
}

/** Highest rate the scenarios allow: moto's SQS slows down with queue depth, keep it shallow. */
export const MAX_RATE_PER_SECOND = 10;
/** Shortest traffic a scenario with incidents can fit them into. */
export const MIN_DURATION_SECONDS = 10;

/** Options of runScenario. */
export interface RunScenarioOptions {
  /** @default 'default' */
  readonly scenario?: string;
  /** Seconds of traffic. @default the scenario's */
  readonly durationSeconds?: number;
  /** Per second, in the app's flow's unit when it runs, else jobs. @default the scenario's */
  readonly ratePerSecond?: number;
  /** @default 'dev' */
  readonly stage?: string;
  /** The app to deploy (its cdk.json's directory). @default the nearest cdk.json at or above the working directory */
  readonly projectRoot?: string;
  /** @default <projectRoot>/reports */
  readonly reportsDir?: string;
  /** Progress lines (stderr). */
  readonly log: (line: string) => void;
  /** Status and summary (stdout). */
  readonly out: (text: string) => void;
  /** Redraw the status in place. */
  readonly tty: boolean;
  /** Terminal width. */
  readonly columns?: number;
  /** Aborts the run (Ctrl-C): everything started is stopped, no report is written. */
  readonly signal?: AbortSignal;
  /** Called once the pipeline is deployed and running, before the traffic starts. */
  readonly onProvisioned?: (platform: LocalPlatform) => Promise<void>;
  /** Time the pipeline gets to drain after the traffic stops, s (tests). @default the scenario's */
  readonly drainSeconds?: number;
  /**
   * The app's scenario flow. @default the one the app's extensions give (cdk.json's
   * `tenang:extensions` in projectRoot), if any
   */
  readonly flow?: ScenarioFlow;
}

/** How a run ended. */
export interface ScenarioOutcome {
  /** Undefined when the run was interrupted before its report. */
  readonly report: ScenarioReport | undefined;
  readonly files: WrittenReport | undefined;
  readonly interrupted: boolean;
  /**
   * The drain's waits for the in-flight batches of consumers whose process died without a planned
   * crash (also in the report, as incidents of kind UNPLANNED_DEATH_KIND).
   */
  readonly redeliveryWaits?: readonly RedeliveryWaitRecord[];
  /** The cloud assembly the platform deployed from (one per emulator port), once provisioned. */
  readonly assemblyDir?: string;
}

/** The definition named `name`, or a ScenarioOptionsError naming the others. */
export function scenarioNamed(name: string): ScenarioDefinition {
  const found = SCENARIOS[name];
  if (found === undefined) {
    throw new ScenarioOptionsError(
      `unknown scenario '${name}'; choose one of: ${Object.keys(SCENARIOS).join(', ')}`,
    );
  }
  return found;
}

/** Checks the options all at once. */
export function resolveScenarioOptions(
  opts: Pick<RunScenarioOptions, 'scenario' | 'durationSeconds' | 'ratePerSecond'>,
): {
  definition: ScenarioDefinition;
  durationSeconds: number;
  ratePerSecond: number;
} {
  const problems: string[] = [];
  let definition: ScenarioDefinition | undefined;
  try {
    definition = scenarioNamed(opts.scenario ?? 'default');
  } catch (error) {
    problems.push((error as Error).message);
  }
  const durationSeconds = opts.durationSeconds ?? definition?.durationSeconds;
  const ratePerSecond = opts.ratePerSecond ?? definition?.ratePerSecond;
  if (
    durationSeconds !== undefined &&
    !(Number.isFinite(durationSeconds) && durationSeconds >= MIN_DURATION_SECONDS && durationSeconds <= 3_600)
  )
    problems.push(
      `--duration must be between ${MIN_DURATION_SECONDS} and 3600 seconds, got ${durationSeconds}`,
    );
  if (
    ratePerSecond !== undefined &&
    !(Number.isFinite(ratePerSecond) && ratePerSecond > 0 && ratePerSecond <= MAX_RATE_PER_SECOND)
  )
    problems.push(
      `--rate must be more than 0 and at most ${MAX_RATE_PER_SECOND} per second (moto slows down as queues deepen), got ${ratePerSecond}`,
    );
  if (
    problems.length > 0 ||
    definition === undefined ||
    durationSeconds === undefined ||
    ratePerSecond === undefined
  )
    throw new ScenarioOptionsError(problems.join('\n'));
  return { definition, durationSeconds, ratePerSecond };
}

/** File in the report directory with every line the functions printed. */
export const FUNCTION_LOG = 'functions.log';

/** Jobs sent at the start per job type the app's scenario flow does not drive, when a flow makes the traffic. */
export const DECLARED_JOBS_PER_TYPE = 5;

/** Consecutive quiet samples that mean the pipeline has drained. */
const QUIET_SAMPLES = 3;

function queueName(url: string): string {
  return url.slice(url.lastIndexOf('/') + 1);
}

/** The environment variables this module or the platform may set, to put back afterwards. */
const TOUCHED_ENV = [
  'REDIS_URL',
  'AWS_ENDPOINT_URL',
  'AWS_REGION',
  'AWS_DEFAULT_REGION',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_EC2_METADATA_DISABLED',
  'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED',
] as const;

/**
 * A pipeline the scenario has nothing to send to: no scenario flow it holds and no job type with
 * a samplePayload. Refused before the traffic, with what to add.
 */
function requireTraffic(targets: ScenarioTargets): void {
  if (targets.flowJobTypes.length > 0 || targets.declared.length > 0) return;
  throw new ScenarioOptionsError(
    `the pipeline has no job type with a samplePayload (${targets.jobTypes.map((j) => j.name).join(', ') || 'no job types'}): the scenario makes each job type's jobs from it; add a valid samplePayload to the job types in the declaration`,
  );
}

/** Runs a scenario end to end; stops everything it started, whatever happens. */
export async function runScenario(opts: RunScenarioOptions): Promise<ScenarioOutcome> {
  const { definition, durationSeconds, ratePerSecond } = resolveScenarioOptions(opts);
  const stage = opts.stage ?? 'dev';
  const signal = opts.signal ?? new AbortController().signal;
  const projectRoot = opts.projectRoot ?? localAppDirectory();
  const reportsDir = opts.reportsDir ?? path.join(projectRoot, 'reports');
  const startedAt = new Date();
  const t0 = Date.now();
  const runId = `r${t0.toString(36)}`;
  const savedEnv = Object.fromEntries(TOUCHED_ENV.map((k) => [k, process.env[k]]));
  const scenarioFlow = opts.flow ?? loadAppExtensions(projectRoot).scenarioFlow;

  const status = new LiveStatus({
    write: opts.out,
    tty: opts.tty,
    columns: opts.columns,
    lineEveryMs: definition.statusLineEveryMs,
  });
  let statusShown = false;
  // Once interrupted, the pipeline's complaints about servers going away are noise.
  let quiet = signal.aborted;
  signal.addEventListener('abort', () => (quiet = true), { once: true });
  const say = (line: string): void => {
    if (quiet) return;
    if (statusShown && opts.tty) status.message(line);
    else opts.log(line);
  };

  opts.log(
    `scenario ${definition.name}: ${durationSeconds} s of traffic at ${ratePerSecond}/s (run ${runId})`,
  );
  const redis = await ScenarioRedis.start();
  // The platform (startLocalEnv) and its functions take Redis from REDIS_URL.
  process.env.REDIS_URL = redis.url;
  say(`Redis: the scenario's own redis-server on ${redis.url} (pid ${redis.pid ?? '?'})`);

  const observer = new FunctionOutputObserver();
  // Function processes that die without a planned crash leave their batch in flight (the drain waits for it).
  const deaths = new ProcessDeathWatch();
  // Every line the functions print, for reading after the run (the report names the file).
  const reportDir = await createReportDir(reportsDir, startedAt, definition.name);
  const functionLog = createWriteStream(path.join(reportDir, FUNCTION_LOG));
  const onFunctionOutput = (line: string, fn: string): void => {
    observer.onLine(line, fn);
    deaths.onFunctionLine(line, fn);
    functionLog.write(`${new Date().toISOString()} ${fn.replace(`tenang-${stage}-`, '')} ${line}\n`);
  };
  let platform: LocalPlatform | undefined;
  let flow: ScenarioFlowRun | undefined;
  let sampler: PipelineSampler | undefined;
  const declaredTraffic = new AbortController();
  let declaredTrafficDone: Promise<void> = Promise.resolve();
  try {
    platform = await LocalPlatform.start({
      stage,
      projectRoot,
      log: (line) => {
        deaths.onPlatformLine(line);
        say(line);
      },
      onFunctionOutput,
      alarms: { periodScale: definition.alarmPeriodScale },
    });
    const provisionMs = Date.now() - t0;
    if (signal.aborted)
      return {
        report: undefined,
        files: undefined,
        interrupted: true,
        assemblyDir: platform?.provisioned.assemblyDir,
      };
    const p = platform;
    // The stage's alarm e-mail (the platform's own address) is pending until confirmed, as on
    // AWS; the on-call confirms it before the run, so the alarm invariant can ask that each
    // notification reached them.
    const confirmed = await p.confirmSubscriptions();
    opts.log(
      `confirmed ${confirmed.length} alarm subscription(s): ${confirmed.map((c) => `${c.protocol} ${c.endpoint}`).join(', ') || 'none pending'}`,
    );
    await opts.onProvisioned?.(p);
    const targets = resolveScenarioTargets(p, scenarioFlow?.jobTypes(p.config) ?? []);
    requireTraffic(targets);
    if (targets.flowJobTypes.length === 0)
      say(
        `${scenarioFlow === undefined ? "the app's extensions give no scenario flow" : `the pipeline does not hold the ${scenarioFlow.name}`}: generic part only (job types ${targets.jobTypes.map((j) => j.name).join(', ')})`,
      );
    const sqs = new SQSClient({ endpoint: p.env.endpoint, region: p.env.region });
    const ssm = new SSMClient({ endpoint: p.env.endpoint, region: p.env.region });
    const dynamodb = new DynamoDBClient({ endpoint: p.env.endpoint, region: p.env.region });
    const streams = new DynamoDBStreamsClient({ endpoint: p.env.endpoint, region: p.env.region });
    try {
      let runStart = Date.now();
      const elapsedMs = (): number => Date.now() - runStart;
      if (scenarioFlow !== undefined && targets.flowJobTypes.length > 0) {
        flow = await scenarioFlow.prepare({
          platform: p,
          jobTypes: targets.jobTypes,
          sqs,
          dynamodb,
          runId,
          ratePerSecond,
          elapsedMs,
          log: say,
        });
        say(flow.describe());
      }
      const appFlow = flow;

      runStart = Date.now();
      let phase = 'traffic';
      const active = new Set<string>();
      const poison: PoisonFact[] = [];
      const injected: Record<string, number> = {};
      // The jobs of the app's own job types: the traffic's, and those the incidents sent (judged alike).
      const declaredSent: DeclaredJob[] = [];
      const trafficSent: Record<string, number> = {};
      const sentByTraffic = (job: DeclaredJob): void => {
        declaredSent.push(job);
        trafficSent[job.jobType] = (trafficSent[job.jobType] ?? 0) + 1;
      };
      sampler = new PipelineSampler({
        sqs,
        ssm,
        jobTypes: targets.jobTypes.map((j) => {
          const source = p.sqsSources.find((s) => s.spec.uuid === j.uuid);
          if (source === undefined) throw new Error(`no mapping ${j.uuid}`);
          return { name: j.name, queueUrl: j.queueUrl, dlqUrl: j.dlqUrl, source };
        }),
        streams: targets.streams.map((s) => {
          const source = p.streamSources.find((x) => x.spec.functionName === s.functionName);
          if (source === undefined) throw new Error(`no stream mapping for ${s.functionName}`);
          return { consumer: s.consumer, onFailureUrl: s.onFailureUrl, source };
        }),
        isEnabled: (uuid) => p.control.isEnabled(uuid),
        degradeFlagName: targets.config.degradeFlagName,
        observer,
        alarmStates: () => p.alarms.states(),
        elapsedMs,
        log: say,
      });
      const alarmPrefix = `tenang-${stage}-`;
      const declaredProviders = [...new Set(targets.declared.flatMap((j) => j.declared.resources.providers))];
      const context = (): StatusContext => ({
        scenario: definition.name,
        phase,
        elapsedSeconds: elapsedMs() / 1000,
        durationSeconds,
        activeIncidents: [...active],
        traffic: [
          ...(appFlow === undefined ? [] : [appFlow.statusLine()]),
          ...(targets.declared.length === 0
            ? []
            : [declaredStatusLine(declaredSent.length, p, declaredProviders)]),
        ].join(' · '),
      });
      const show = (sample: PipelineSample): void => {
        statusShown = true;
        status.update(
          context(),
          statusRows(
            sample,
            targets.jobTypes,
            targets.streams.map((s) => s.consumer),
            alarmPrefix,
          ),
        );
      };
      sampler.start(definition.sampleEveryMs, show);
      const declaredTargets = targets.declared.map((j) => ({ jobType: j.declared, queueUrl: j.queueUrl }));
      const declaredNames = targets.declared.map((j) => j.name).join(', ');
      if (appFlow !== undefined) {
        appFlow.start();
        // The app's other job types (those its flow does not drive) get jobs built from their sample payloads.
        for (const job of await sendDeclaredJobs(sqs, declaredTargets, runId, DECLARED_JOBS_PER_TYPE))
          sentByTraffic(job);
        if (declaredSent.length > 0) say(`${declaredSent.length} jobs sent for ${declaredNames}`);
      } else {
        // Without a flow, the app's job types are the traffic: jobs made from their sample payloads, steadily.
        declaredTrafficDone = sendDeclaredJobsSteadily(
          sqs,
          declaredTargets,
          runId,
          ratePerSecond,
          declaredTraffic.signal,
          sentByTraffic,
          say,
        );
        say(`traffic started: ${ratePerSecond} jobs/s of ${declaredNames}, made from their samplePayload`);
      }

      const shared = {
        observer,
        runId,
        elapsedMs,
        signal,
        log: say,
        recordPoison: (x: PoisonFact): void => void poison.push(x),
        recordInjected: (jobType: string, n: number): void => {
          injected[jobType] = (injected[jobType] ?? 0) + n;
        },
        setActive: (title: string, on: boolean): void => void (on ? active.add(title) : active.delete(title)),
      };
      const plan = appFlow?.incidents(definition.name, durationSeconds) ?? [];
      const outcomes = plan.map(async (incident): Promise<FlowIncidentOutcome | undefined> => {
        if (!(await pause(runStart + incident.atSeconds * 1000 - Date.now(), signal))) return undefined;
        return incident.run({ ...shared, redis });
      });
      const jobPlan = planJobIncidents(definition.jobIncidents(durationSeconds), targets.declared);
      const jobOutcomes = jobPlan.map(async (planned): Promise<JobIncidentOutcome | undefined> => {
        if (!(await pause(runStart + planned.spec.atSeconds * 1000 - Date.now(), signal))) return undefined;
        return runJobIncident(planned, {
          ...shared,
          platform: p,
          sqs,
          track: (job) => declaredSent.push(job),
        });
      });
      await pause(runStart + durationSeconds * 1000 - Date.now(), signal);
      phase = 'stopping traffic';
      declaredTraffic.abort();
      await Promise.all([appFlow?.stop(), declaredTrafficDone]);
      const incidents = (await Promise.all(outcomes)).filter(
        (o): o is FlowIncidentOutcome => o !== undefined,
      );
      const jobIncidents = (await Promise.all(jobOutcomes)).filter(
        (o): o is JobIncidentOutcome => o !== undefined,
      );
      const runMs = elapsedMs();
      if (signal.aborted)
        return {
          report: undefined,
          files: undefined,
          interrupted: true,
          assemblyDir: platform?.provisioned.assemblyDir,
        };

      // Drain: a crashed batch waits out its visibility timeout; give it that, plus the scenario's margin.
      phase = 'draining';
      const drainStart = Date.now();
      const crashReturnsAtMs = Math.max(
        appFlow?.crashReturnsAtMs(incidents) ?? 0,
        ...jobIncidents.map((i) => i.returnsByMs ?? 0),
      );
      // A consumer process that died without a planned crash (kill -9, a timeout) left its batch
      // in flight too: wait for it up to its queue's visibility timeout after the death, plus a poll.
      const redelivery = new RedeliveryWait(
        deaths,
        await Promise.all(
          targets.jobTypes.map(async (j) => ({
            consumer: j.consumer,
            functionName: j.functionName,
            jobType: j.name,
            visibilityTimeoutSeconds: await readVisibilityTimeout(sqs, j.queueUrl),
          })),
        ),
        drainStart,
        say,
        runStart,
      );
      const drainSeconds = opts.drainSeconds ?? definition.drainSeconds;
      // The margin runs from the last batch expected back: a planned crash's, or an unplanned death's.
      const drainDeadline = (): number =>
        Math.max(drainStart, runStart + crashReturnsAtMs, redelivery.returnsBy()) + drainSeconds * 1000;
      say(`traffic stopped; draining (at most ${Math.round((drainDeadline() - drainStart) / 1000)} s)`);
      const drained = await drain(p, sampler, targets, drainDeadline, signal, (sample) =>
        redelivery.observe(sample),
      );
      const drainMs = Date.now() - drainStart;
      const redeliveryWaits = redelivery.finish();
      if (signal.aborted)
        return {
          report: undefined,
          files: undefined,
          interrupted: true,
          assemblyDir: platform?.provisioned.assemblyDir,
        };
      say(drained ? `drained in ${(drainMs / 1000).toFixed(1)} s` : 'drain deadline passed with work left');

      phase = 'collecting';
      const collectStart = Date.now();
      const last = (await sampler.sample()) ?? sampler.latest();
      await sampler.stop();
      status.stop();
      statusShown = false;

      const dlqQueues: DeadLetterQueue[] = [
        ...targets.jobTypes.map((j) => ({
          queue: queueName(j.dlqUrl),
          url: j.dlqUrl,
          source: j.name,
          kind: 'job' as const,
        })),
        ...targets.streams
          .filter((s): s is typeof s & { onFailureUrl: string } => s.onFailureUrl !== undefined)
          .map((s) => ({
            queue: queueName(s.onFailureUrl),
            url: s.onFailureUrl,
            source: s.consumer,
            kind: 'stream' as const,
          })),
      ];
      const declaredTypes = targets.declared.map((j) => j.declared);
      const declaredTable = targets.declared
        .map((j) => p.deployment.functions.get(j.functionName)?.environment.IDEMPOTENCY_TABLE)
        .find((t) => t !== undefined);
      const [dlq, declaredJobs] = await Promise.all([
        readDeadLetters(sqs, dlqQueues, t0),
        declaredTable === undefined
          ? declaredSent.map((j) => ({ ...j, done: undefined, evidence: undefined }))
          : declaredJobFacts(dynamodb, declaredTable, declaredTypes, declaredSent),
      ]);
      const jobFacts: JobInvariantFacts = {
        declaredJobs,
        ...(targets.declared.length === 0
          ? {}
          : {
              declaredCalls: {
                providersOf: Object.fromEntries(
                  targets.declared.map((j) => [j.name, j.declared.resources.providers]),
                ),
                calls: declaredProviderCalls(p.providers.declared, declaredProviders),
              },
              redelivered: jobIncidents.flatMap((i) => i.redelivered?.() ?? []),
            }),
        dlq,
        poison,
        ...(p.iam === undefined ? {} : { iamDenials: p.iam.denials() }),
        alarmNotifications: {
          owed: p.alarms.actions().filter((a) => a.outcome === 'sent').length,
          deliveries: p.alarms.deliveries(),
        },
        leftInQueues: Object.fromEntries(
          targets.jobTypes.map((j) => {
            const q = last?.queues[j.name];
            return [j.name, q === undefined ? 0 : q.depth + q.inFlight];
          }),
        ),
      };
      // The flow's invariants first, then those that hold for any app: every run is judged on those.
      const flowInvariants = (await appFlow?.judge({ dynamodb, streams }, observer, jobFacts)) ?? [];
      const invariants = [...flowInvariants, ...checkJobInvariants(jobFacts)];
      const records: IncidentRecord[] = [
        ...incidents.map((i) => ({
          ...i.record,
          observed: [...i.record.observed, ...(i.after?.() ?? [])],
        })),
        ...jobIncidents.map((i) => ({
          ...i.record,
          observed: [...i.record.observed, ...(i.after?.(jobFacts) ?? [])],
        })),
        ...redeliveryWaits.map((w) => redeliveryIncident(w, runStart)),
      ];
      // The incidents count every message they put on a queue (copies, poison, batch-mates) as injected.
      const declaredIn = Object.fromEntries(
        targets.declared.map((j) => [j.name, (trafficSent[j.name] ?? 0) + (injected[j.name] ?? 0)]),
      );
      const providers: Record<string, ProviderTotals> = {
        ...appFlow?.providers(),
        ...Object.fromEntries(declaredProviders.map((name) => [name, declaredProviderTotals(p, name)])),
      };
      const report = buildReport({
        scenario: {
          name: definition.name,
          description: definition.description,
          durationSeconds,
          ratePerSecond,
          stage,
          redis: `own redis-server on ${redis.url}, started for this run; "Redis down" stops that process and starts a new, empty one on the same port`,
          startedAt: startedAt.toISOString(),
          endedAt: new Date().toISOString(),
          interrupted: false,
        },
        timings: {
          provisionMs,
          runMs,
          drainMs,
          collectMs: Date.now() - collectStart,
          totalMs: Date.now() - t0,
        },
        jobTypes: targets.jobTypes.map((j) => ({ name: j.name, consumer: j.consumer })),
        streamConsumers: targets.streams.map((s) => s.consumer),
        samples: sampler.samples,
        incidents: records,
        jobsIn: { ...appFlow?.jobsIn(observer, injected), ...declaredIn },
        dlqQueues,
        dlqEntries: dlq,
        providers,
        alarms: alarmSection(p, runStart),
        invariants,
        ...(appFlow === undefined ? {} : { flow: appFlow.report(sampler.samples) }),
      });
      const files = await writeReport(reportDir, report);
      opts.out(renderSummary(report, files));
      return {
        report,
        files,
        interrupted: false,
        redeliveryWaits,
        assemblyDir: p.provisioned.assemblyDir,
      };
    } finally {
      status.stop();
      declaredTraffic.abort();
      await declaredTrafficDone;
      await flow?.stop();
      await sampler?.stop();
      sqs.destroy();
      ssm.destroy();
      dynamodb.destroy();
      streams.destroy();
    }
  } finally {
    status.stop();
    opts.log(
      signal.aborted
        ? 'interrupted: stopping the local pipeline, no report…'
        : 'stopping the local pipeline…',
    );
    await platform?.stop().catch((error: unknown) => opts.log(`platform stop: ${(error as Error).message}`));
    await redis.stop();
    await new Promise<void>((resolve) => functionLog.end(resolve));
    opts.log('stopped everything this run started');
    for (const [k, v] of Object.entries(savedEnv)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** What a declared provider's fake saw. */
function declaredProviderTotals(platform: LocalPlatform, provider: string): ProviderTotals {
  const fake = platform.providers.declared.get(providerVariable(provider));
  return { requests: fake?.requestCount() ?? 0, effects: fake?.ledger().length ?? 0 };
}

/** The live status's traffic line for the app's own job types. */
function declaredStatusLine(sent: number, platform: LocalPlatform, providers: readonly string[]): string {
  return [
    `jobs sent ${sent}`,
    ...providers.map((name) => `${name} effects ${declaredProviderTotals(platform, name).effects}`),
  ].join(' · ');
}

/** Waits until every queue is empty and nothing is in flight, and the streams are idle, for QUIET_SAMPLES samples. */
async function drain(
  platform: LocalPlatform,
  sampler: PipelineSampler,
  targets: ScenarioTargets,
  /** Re-read on every sample: a process that dies while draining moves it. */
  deadline: () => number,
  signal: AbortSignal,
  onSample: (sample: PipelineSample | undefined) => void = () => undefined,
): Promise<boolean> {
  let quiet = 0;
  let lastBatches = -1;
  while (Date.now() < deadline() && !signal.aborted) {
    await pause(1_000, signal);
    const sample = sampler.latest();
    onSample(sample);
    const batches = platform.streamSources.reduce((n, s) => n + s.stats.batches, 0);
    const empty =
      sample !== undefined &&
      targets.jobTypes.every((j) => {
        const q = sample.queues[j.name];
        return q !== undefined && q.depth === 0 && q.inFlight === 0;
      });
    quiet = empty && batches === lastBatches ? quiet + 1 : 0;
    lastBatches = batches;
    if (quiet >= QUIET_SAMPLES) return true;
  }
  return false;
}

function alarmSection(platform: LocalPlatform, runStart: number): AlarmSection {
  return {
    source:
      'The local platform’s alarm evaluator (lib/local/alarms/evaluator.ts): metric alarm states set in moto, composite alarms kept locally',
    note: 'Alarm periods are shortened for the scenario; thresholds are the deployed ones.',
    timeline: platform.alarms.timeline().map((t) => ({
      atMs: t.at.getTime() - runStart,
      alarm: t.alarm,
      from: t.from,
      to: t.to,
      reason: t.reason,
    })),
    final: platform.alarms.states().map((s) => ({
      alarm: s.name,
      state: `${s.state}${s.suppressed === true ? ' (actions suppressed)' : ''}`,
    })),
  };
}

function deadLetterLine(entries: readonly DlqEntry[]): string {
  if (entries.length === 0) return 'none';
  const counts = new Map<string, number>();
  for (const e of entries)
    counts.set(`${e.source}: ${e.errorClass}`, (counts.get(`${e.source}: ${e.errorClass}`) ?? 0) + 1);
  return [...counts].map(([k, n]) => `${k} ×${n}`).join(', ');
}

/** The summary printed when a run ends. */
export function renderSummary(report: ScenarioReport, files: WrittenReport): string {
  const lines: string[] = [
    '',
    `Scenario ${report.scenario.name}: ${report.ok ? 'ALL INVARIANTS HOLD' : 'FAILED'}`,
    '',
  ];
  for (const i of report.invariants) {
    lines.push(`  ${i.holds ? 'ok  ' : 'FAIL'} ${i.name} (${i.detail})`);
    for (const v of i.violations) lines.push(`         - ${v}`);
  }
  for (const i of report.incidents.filter((x) => !x.injected))
    lines.push(`  FAIL incident not injected: ${i.title}: ${i.error ?? ''}`);
  for (const i of report.incidents.filter((x) => x.kind === UNPLANNED_DEATH_KIND))
    lines.push(`  note ${i.title}: ${i.observed.join('; ')}`);
  lines.push('', 'Jobs in → out (succeeded + duplicates ignored + dead-lettered):');
  for (const j of report.jobs) {
    lines.push(
      `  ${j.jobType.padEnd(18)} in ${j.in}, succeeded ${j.succeeded}, duplicates ${j.duplicatesIgnored}, DLQ ${j.deadLettered}, retried ${j.retried}, deferred ${j.deferred}, left ${j.leftInQueue}`,
    );
  }
  const dup = report.duplicatesPrevented;
  lines.push(
    `Duplicates prevented: ${dup.total} (${[`consumers ${dup.consumerDuplicatesIgnored}`, ...dup.flow.map((d) => `${d.where} ${d.count}`)].join(', ')})`,
    `Dead letters: ${deadLetterLine(report.dlq.flatMap((d) => d.entries))}`,
    ...(report.flow?.summary ?? []),
    `Alarms: ${report.alarms.timeline.length} transitions; in ALARM at the end: ${
      report.alarms.final
        .filter((a) => a.state.startsWith('ALARM'))
        .map((a) => a.alarm)
        .join(', ') || 'none'
    }`,
  );
  lines.push(
    `Timings: provision ${(report.timings.provisionMs / 1000).toFixed(1)} s, traffic ${(report.timings.runMs / 1000).toFixed(1)} s, drain ${(report.timings.drainMs / 1000).toFixed(1)} s, collect ${(report.timings.collectMs / 1000).toFixed(1)} s`,
    `Report: ${files.html}`,
    `        ${files.json}`,
    '',
  );
  return lines.join('\n');
}
