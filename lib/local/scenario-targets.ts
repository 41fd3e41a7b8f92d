/**
 * What a scenario addresses in the deployed pipeline: every job type's queue, DLQ and consumer,
 * the stream consumers, and the job types that get traffic from their `samplePayload` (all of
 * them with one, but those whose traffic the app's scenario flow makes). Pure: it reads what a
 * LocalPlatform holds, handed in.
 */
import type { PipelineConfig, ResolvedJobType } from '../config';
import type { IncidentQueue } from './scenario-queues';
import type { ReportedJobType } from './report-model';
import { declaredJobTypes } from './scenario-declared-jobs';

/** The deployed functions' environments, and how a function is found by its logical name. */
export interface DeployedFunctions {
  readonly deployment: {
    readonly functions: ReadonlyMap<string, { readonly environment: Readonly<Record<string, string>> }>;
  };
  functionNamed(suffix: string): string;
}

/** A deployed function's variable `name`; missing or empty is an error naming both. */
export function deployedVariable(deployed: DeployedFunctions, functionName: string, name: string): string {
  const fn = deployed.deployment.functions.get(functionName);
  if (fn === undefined) throw new Error(`no deployed function ${functionName}`);
  const value = fn.environment[name];
  if (value === undefined || value === '')
    throw new Error(`deployed function ${functionName} has no ${name}`);
  return value;
}

/** What target resolution reads of a running platform (a LocalPlatform has all of it). */
export interface DeployedPipeline extends DeployedFunctions {
  readonly config: PipelineConfig;
  readonly sqsSources: readonly {
    readonly spec: { readonly functionName: string; readonly queueUrl: string; readonly uuid: string };
  }[];
  readonly streamSources: readonly {
    readonly spec: { readonly functionName: string; readonly onFailureQueueUrl?: string };
  }[];
}

/** A job type as the scenario addresses it. */
export interface ScenarioJobType extends ReportedJobType, IncidentQueue {
  /** Its queue mapping's id. */
  readonly uuid: string;
  /** Its config. */
  readonly declared: ResolvedJobType;
}

/** A stream consumer as the scenario addresses it. */
export interface ScenarioStream {
  readonly consumer: string;
  readonly functionName: string;
  readonly onFailureUrl: string | undefined;
}

/** What the scenario resolved from the deployment. */
export interface ScenarioTargets {
  readonly config: PipelineConfig;
  readonly jobTypes: readonly ScenarioJobType[];
  readonly streams: readonly ScenarioStream[];
  /**
   * The job types that get jobs built from their `samplePayload` and the generic incidents: every
   * one with a sample payload whose traffic the app's scenario flow does not make.
   */
  readonly declared: readonly ScenarioJobType[];
  /** The job types whose traffic the app's scenario flow makes (none without one). */
  readonly flowJobTypes: readonly string[];
}

/**
 * Resolves the scenario's targets; `flowJobTypes` names the job types the app's scenario flow
 * makes the traffic of (ScenarioFlow.jobTypes). @default none
 * @throws Error naming a job type or function the deployment lacks
 */
export function resolveScenarioTargets(
  deployed: DeployedPipeline,
  flowJobTypes: readonly string[] = [],
): ScenarioTargets {
  const { config } = deployed;
  const jobTypes = config.jobTypes.map((j): ScenarioJobType => {
    const functionName = deployed.functionNamed(j.consumer);
    const source = deployed.sqsSources.find((s) => s.spec.functionName === functionName);
    if (source === undefined) throw new Error(`no queue mapping for ${functionName}`);
    return {
      name: j.name,
      consumer: j.consumer,
      jobType: j.name,
      queueUrl: source.spec.queueUrl,
      dlqUrl: deployedVariable(deployed, functionName, 'DLQ_URL'),
      fifo: j.queue.kind === 'fifo',
      functionName,
      functionTimeoutSeconds: j.function.timeoutSeconds,
      uuid: source.spec.uuid,
      declared: j,
    };
  });
  const streams = config.streamConsumers.map((c): ScenarioStream => {
    const functionName = deployed.functionNamed(c.consumer);
    const source = deployed.streamSources.find((s) => s.spec.functionName === functionName);
    return { consumer: c.consumer, functionName, onFailureUrl: source?.spec.onFailureQueueUrl };
  });
  const sampled = new Set(declaredJobTypes(config.jobTypes, flowJobTypes).map((j) => j.name));
  return {
    config,
    jobTypes,
    streams,
    declared: jobTypes.filter((j) => sampled.has(j.name)),
    flowJobTypes,
  };
}
