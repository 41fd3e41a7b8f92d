/**
 * `tenang/local`: what an app's extensions module (cdk.json's `tenang:extensions`) is written
 * with — the drills of its own domain's incidents, the jobs tenang's drills send on its job types
 * and its scenario's traffic, beside what tenang runs for every declared job type
 * (lib/local/extensions.ts) — and the helpers its drills play their incidents with.
 */
export { defineExtensions, EXTENSIONS_CONTEXT_KEY, type AppExtensions } from '../local/extensions';
export type { ScenarioFlow } from '../local/scenario-flow';
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
