/** The deployable pipeline, driven entirely by the pipeline config. */
import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import type { PipelineConfig } from '../config';
import { Tables } from './tables';
import type { TargetTraits } from './target';
import { WorkerQueue } from './worker-queue';

/** Props of PipelineStack. */
export interface PipelineStackProps extends StackProps {
  readonly config: PipelineConfig;
  readonly traits: TargetTraits;
}

/** One stack per stage: tables, a WorkerQueue per job type. */
export class PipelineStack extends Stack {
  /** The pipeline's tables. */
  public readonly tables: Tables;
  /** Worker queues keyed by job type name. */
  public readonly workerQueues: ReadonlyMap<string, WorkerQueue>;

  public constructor(scope: Construct, id: string, props: PipelineStackProps) {
    super(scope, id, props);
    this.tables = new Tables(this, 'Tables', { stageName: props.config.stage.name });
    const queues = new Map<string, WorkerQueue>();
    for (const jobType of props.config.jobTypes) {
      queues.set(jobType.name, new WorkerQueue(this, `Worker-${jobType.consumer}`, { jobType }));
    }
    this.workerQueues = queues;
  }
}
