/** A job type's queue, dead-letter queue and consumer, with values derived from the pipeline config. */
import { grantSend } from './grants';
import { Duration, Validations } from 'aws-cdk-lib';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sources from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { VISIBILITY_TIMEOUT_FACTOR, type ResolvedJobType } from '../config';
import { QUEUE_DEFAULTS } from './defaults';
import { TenangFunction } from './tenang-function';
import { environmentProblems, validateProps } from './validation';

/** Props of WorkerQueue. */
export interface WorkerQueueProps {
  /** The job type, validated and resolved by loadPipelineConfig. */
  readonly jobType: ResolvedJobType;
  /** The consumer's handler entry file. */
  readonly entry: string;
  /** The consumer's variables besides QUEUE_URL, DLQ_URL and the Powertools ones. @default {} */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * Whether the event source mapping starts enabled. The flag reconciler owns it afterwards.
   * @default true
   */
  readonly eventSourceEnabled?: boolean;
}

/** Queue + DLQ + redrive + consumer function + SQS event source for one job type (D2, D3, R3, B2). */
export class WorkerQueue extends Construct {
  /** The source queue the consumer reads. */
  public readonly queue: sqs.Queue;
  /** Where messages land after maxReceiveCount receives or a permanent error. */
  public readonly deadLetterQueue: sqs.Queue;
  /**
   * Side queue of jobs past their useful age (B5): only for job types that declare
   * usefulAgeSeconds. Nothing reads it; operators inspect it and it expires with the DLQ retention.
   */
  public readonly expiredQueue: sqs.Queue | undefined;
  /** The consumer. */
  public readonly consumer: TenangFunction;
  /** The SQS event source mapping; the flag reconciler toggles it. */
  public readonly eventSource: sources.SqsEventSource;

  public constructor(scope: Construct, id: string, props: WorkerQueueProps) {
    super(scope, id);
    const { jobType } = props;
    validateProps('WorkerQueue', props, [
      (p) =>
        p.jobType.visibilityTimeoutSeconds >= VISIBILITY_TIMEOUT_FACTOR * p.jobType.function.timeoutSeconds
          ? undefined
          : `visibility timeout ${p.jobType.visibilityTimeoutSeconds} s is below ${VISIBILITY_TIMEOUT_FACTOR} × the function timeout; resolve the job type with loadPipelineConfig`,
      (p) => environmentProblems(p.environment),
      (p) =>
        ['QUEUE_URL', 'DLQ_URL', 'EXPIRED_QUEUE_URL'].some((k) => k in (p.environment ?? {}))
          ? 'QUEUE_URL, DLQ_URL and EXPIRED_QUEUE_URL are set by WorkerQueue itself'
          : undefined,
    ]);
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

    this.expiredQueue =
      jobType.expiredQueueName === undefined
        ? undefined
        : new sqs.Queue(this, 'ExpiredQueue', {
            ...QUEUE_DEFAULTS,
            queueName: jobType.expiredQueueName,
            fifo: fifo || undefined,
            retentionPeriod: Duration.seconds(jobType.dlqRetentionSeconds),
          });
    if (this.expiredQueue !== undefined) {
      for (const id of ['AwsSolutions-SQS3', 'Serverless-SQSRedrivePolicy']) {
        Validations.of(this.expiredQueue).acknowledge({
          id,
          reason:
            'Side queue of jobs past their useful age, terminal like a DLQ: nothing consumes it, so there is nothing to redrive.',
        });
      }
    }

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

    this.consumer = new TenangFunction(this, 'Consumer', {
      serviceName: jobType.consumer,
      entry: props.entry,
      timeoutSeconds: jobType.function.timeoutSeconds,
      memoryMb: jobType.function.memoryMb,
      environment: {
        ...props.environment,
        QUEUE_URL: this.queue.queueUrl,
        DLQ_URL: this.deadLetterQueue.queueUrl,
        ...(this.expiredQueue === undefined ? {} : { EXPIRED_QUEUE_URL: this.expiredQueue.queueUrl }),
      },
      noAsyncDlqReason:
        'Invoked synchronously by an SQS event source mapping: failed messages return to the queue and reach its DLQ.',
    });
    Validations.of(this).acknowledge({
      id: 'Serverless-LambdaEventSourceMappingDestination',
      reason:
        'SQS event source mappings support no on-failure destination: the queue redrive policy sends failures to the DLQ.',
    });
    const fn: lambda.IFunction = this.consumer.function;
    this.eventSource = new sources.SqsEventSource(this.queue, {
      batchSize: jobType.batch.size,
      maxBatchingWindow: fifo ? undefined : Duration.seconds(jobType.batch.windowSeconds),
      maxConcurrency: jobType.batch.maxConcurrency,
      reportBatchItemFailures: true,
      enabled: props.eventSourceEnabled ?? true,
    });
    fn.addEventSource(this.eventSource);
    // Permanent errors go to the DLQ at once, with their error class.
    grantSend(this.deadLetterQueue, fn);
    // A standard queue's deferral (busy lease, degrade mode, open circuit, rate limit) re-sends
    // the job to this queue with a delay (sqs-job-runner's defer): without the grant it is
    // AccessDenied on AWS. FIFO deferrals hold the message with ChangeMessageVisibility, which
    // the consume grant covers.
    if (!fifo) grantSend(this.queue, fn);
    if (this.expiredQueue !== undefined) grantSend(this.expiredQueue, fn);
  }
}
