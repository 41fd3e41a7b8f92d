/** A job type's queue and its dead-letter queue, with values derived from the pipeline config. */
import { Duration, Validations } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { ResolvedJobType } from '../config';
import { QUEUE_DEFAULTS } from './defaults';

/** Props of WorkerQueue. */
export interface WorkerQueueProps {
  /** The job type, validated and resolved by loadPipelineConfig. */
  readonly jobType: ResolvedJobType;
}

/** Queue + DLQ + redrive for one job type (D2, R3). */
export class WorkerQueue extends Construct {
  /** The source queue the consumer reads. */
  public readonly queue: sqs.Queue;
  /** Where messages land after maxReceiveCount receives or a permanent error. */
  public readonly deadLetterQueue: sqs.Queue;

  public constructor(scope: Construct, id: string, props: WorkerQueueProps) {
    super(scope, id);
    const { jobType } = props;
    const fifo = jobType.queue.kind === 'fifo';

    this.deadLetterQueue = new sqs.Queue(this, 'DeadLetterQueue', {
      ...QUEUE_DEFAULTS,
      queueName: jobType.dlqName,
      fifo: fifo || undefined,
      retentionPeriod: Duration.seconds(jobType.dlqRetentionSeconds),
    });
    Validations.of(this.deadLetterQueue).acknowledge({
      id: 'Serverless-SQSRedrivePolicy',
      reason: 'This is the dead-letter queue itself; a redrive from it would loop poison messages forever.',
    });

    this.queue = new sqs.Queue(this, 'Queue', {
      ...QUEUE_DEFAULTS,
      queueName: jobType.queueName,
      fifo: fifo || undefined,
      // Dedup ids come from the business key (Q1), never from the body.
      contentBasedDeduplication: fifo ? false : undefined,
      visibilityTimeout: Duration.seconds(jobType.visibilityTimeoutSeconds),
      retentionPeriod: Duration.seconds(jobType.queue.retentionSeconds),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: jobType.maxReceiveCount },
    });
  }
}
