/**
 * `tenang/local`: what an app's extensions module (cdk.json's `tenang:extensions`) is written
 * with — the drills of its own domain's incidents and its scenario's traffic, beside what tenang
 * runs for every declared job type (lib/local/extensions.ts).
 */
export { defineExtensions, EXTENSIONS_CONTEXT_KEY, type AppExtensions } from '../local/extensions';
export type { ScenarioFlow } from '../local/scenario-flow';
export type { Drill, DrillCheck, DrillContext, CliAnswer } from '../drills/drill';
export type { LocalPlatform } from '../local/platform';
