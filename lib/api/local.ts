/**
 * `tenang/local`: what an app's extensions module (cdk.json's `tenang:extensions`) is written
 * with — the drills of its own domain's incidents, the jobs tenang's drills send on its job types
 * and its scenario's traffic, beside what tenang runs for every declared job type
 * (lib/local/extensions.ts) — and the kit's parts its drills and its scenario flow
 * (lib/local/scenario-flow.ts) build on.
 */
export { defineExtensions, EXTENSIONS_CONTEXT_KEY, type AppExtensions } from '../local/extensions';
export type {
  FlowChart,
  FlowClients,
  FlowIncident,
  FlowIncidentOutcome,
  FlowIncidentShared,
  FlowReport,
  ScenarioFlow,
  ScenarioFlowContext,
  ScenarioFlowRun,
} from '../local/scenario-flow';
export type { Drill, DrillCheck, DrillContext, CliAnswer } from '../drills/drill';
export type { DrillInfo } from '../ops/drills/catalog';
export {
  DeclaredDrillJobs,
  providerRequests,
  type DrillJob,
  type DrillJobs,
  type DrillJobVerdict,
} from '../drills/drill-jobs';
export {
  consumerStatus,
  functionEnv,
  jobTarget,
  queueDepth,
  sendMessage,
  statusOf,
  type ConsumerStatus,
  type JobTarget,
} from '../drills/support';
export { CACHE_ADMIN_SERVICE } from '../config/metrics';
export type { LocalPlatform } from '../local/platform';
export type { LedgerEntry } from '../local/fake-provider';
export type { ScenarioRedis } from '../local/scenario-redis';
export { callApi, type ApiAnswer } from '../local/traffic';
export { deployedVariable, type DeployedFunctions, type ScenarioJobType } from '../local/scenario-targets';
export {
  pause,
  readVisibilityTimeout,
  setVisibilityTimeout,
  type IncidentQueue,
} from '../local/scenario-queues';
export { readItemStates, readStreamRecords, type StreamRecord } from '../local/scenario-facts';
export {
  checkJobInvariants,
  verdict,
  VIOLATIONS_LISTED,
  type JobInvariantFacts,
  type PoisonFact,
} from '../local/scenario-invariants';
export { OBSERVED_EVENT, type FunctionOutputObserver } from '../local/scenario-observer';
export {
  counterOf,
  perInterval,
  REPORT_METRIC,
  type Counters,
  type DlqEntry,
  type IncidentRecord,
  type InvariantResult,
  type PipelineSample,
  type ProviderTotals,
} from '../local/report-model';
