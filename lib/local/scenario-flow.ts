/**
 * A scenario flow: the traffic of an app's own domain that the scenario runs beside the declared
 * job types' jobs (an app hands one in through its extensions, lib/local/extensions.ts; the
 * reference's order flow is examples/reference/local/scenario-order-flow.ts). The kit's scenario
 * (lib/local/scenario.ts) always runs the declared job types' jobs, their incidents and the
 * invariants that hold for any app; a flow adds, for the pipelines that hold it, its own traffic,
 * its incidents, the facts it reads back, its invariants and its parts of the report. Everything
 * the scenario asks of a flow is here, in the kit's words: a flow is code of the app.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { PipelineConfig } from '../config';
import type { LocalPlatform } from './platform';
import type {
  FlowReport,
  IncidentRecord,
  InvariantResult,
  PipelineSample,
  ProviderTotals,
} from './report-model';
import type { JobInvariantFacts, PoisonFact } from './scenario-invariants';
import type { FunctionOutputObserver } from './scenario-observer';
import type { ScenarioRedis } from './scenario-redis';
import type { ScenarioJobType } from './scenario-targets';

export type { FlowChart, FlowReport } from './report-model';

/** What a flow's run is prepared with. */
export interface ScenarioFlowContext {
  readonly platform: LocalPlatform;
  /** Every deployed job type as the scenario addresses it (the flow picks its own). */
  readonly jobTypes: readonly ScenarioJobType[];
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  /** Makes the run's ids unique. */
  readonly runId: string;
  /** The run's rate, in the flow's unit (FlowReport.rateUnit). */
  readonly ratePerSecond: number;
  /** Ms since the traffic's start. */
  readonly elapsedMs: () => number;
  readonly log: (line: string) => void;
}

/** What the scenario hands a flow's incidents, besides what the flow holds itself. */
export interface FlowIncidentShared {
  readonly observer: FunctionOutputObserver;
  /** The scenario's own redis-server (an incident may stop and restart it). */
  readonly redis: ScenarioRedis;
  readonly runId: string;
  readonly elapsedMs: () => number;
  readonly signal: AbortSignal;
  readonly log: (line: string) => void;
  /** A malformed message was sent; the generic invariants look for it in the DLQ. */
  readonly recordPoison: (poison: PoisonFact) => void;
  /** Jobs put straight on a queue (they count as jobs in). */
  readonly recordInjected: (jobType: string, count: number) => void;
  /** Marks an incident as in progress (live status) or over. */
  readonly setActive: (title: string, active: boolean) => void;
}

/** One incident of a flow's plan. */
export interface FlowIncident {
  /** When, seconds after the traffic starts. */
  readonly atSeconds: number;
  /** Injects it; an injection that fails is a record with injected: false, not a throw. */
  run(shared: FlowIncidentShared): Promise<FlowIncidentOutcome>;
}

/** What a flow's incident did: its record now, and what it observed once the flow's facts are in. */
export interface FlowIncidentOutcome {
  readonly record: IncidentRecord;
  /** Observations read from the flow's facts (called after FlowRun.judge). */
  readonly after?: () => string[];
}

/** The clients a flow reads its facts back with. */
export interface FlowClients {
  readonly dynamodb: DynamoDBClient;
  readonly streams: DynamoDBStreamsClient;
}

/** A flow during one run: prepared, started, stopped, then judged and reported. */
export interface ScenarioFlowRun {
  /** One line naming what the run drives (logged before the traffic). */
  describe(): string;
  /** The live status's traffic line. */
  statusLine(): string;
  /** Starts the traffic; says so. */
  start(): void;
  /** Stops the traffic (in-flight requests finish). */
  stop(): Promise<void>;
  /** The flow's incidents of scenario `scenario` with `durationSeconds` of traffic. */
  incidents(scenario: string, durationSeconds: number): readonly FlowIncident[];
  /**
   * Ms after the traffic's start by which a batch an incident crashed is back on its queue (the
   * drain waits for it); 0 without one.
   */
  crashReturnsAtMs(outcomes: readonly FlowIncidentOutcome[]): number;
  /**
   * Reads the flow's facts back after the drain and judges them, with the facts of any app (the
   * dead letters among them): the flow's invariants, in report order. The kit's own invariants
   * follow them in the report.
   */
  judge(
    clients: FlowClients,
    observer: FunctionOutputObserver,
    jobFacts: JobInvariantFacts,
  ): Promise<readonly InvariantResult[]>;
  /** What the flow's providers saw, by provider. */
  providers(): Readonly<Record<string, ProviderTotals>>;
  /** Jobs put on the flow's job types' queues during the run, by job type. */
  jobsIn(
    observer: FunctionOutputObserver,
    injected: Readonly<Record<string, number>>,
  ): Readonly<Record<string, number>>;
  /** The flow's parts of the report, from the run's samples. */
  report(samples: readonly PipelineSample[]): FlowReport;
}

/** An app's scenario flow (AppExtensions.scenarioFlow). */
export interface ScenarioFlow {
  /** The flow's name, in the scenario's log and report. */
  readonly name: string;
  /**
   * The declared job types whose traffic the flow makes when the declaration holds the flow;
   * none when it does not (the scenario then runs the declared job types' jobs only). The rest of
   * the job types with a samplePayload get jobs made from it beside the flow.
   */
  jobTypes(config: PipelineConfig): readonly string[];
  /**
   * Readies one run on the deployed pipeline (called when jobTypes is not empty): resolves its
   * targets, seeds what its traffic needs, builds the traffic (not started).
   * @throws Error naming what the deployment lacks
   */
  prepare(ctx: ScenarioFlowContext): Promise<ScenarioFlowRun>;
  /**
   * `tenang local up`: readies a pipeline kept running for hand operation (e.g. stock for an
   * order posted by hand); a pipeline without the flow is left alone.
   */
  seed?(platform: LocalPlatform, log: (line: string) => void): Promise<void>;
}
