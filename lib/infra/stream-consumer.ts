/**
 * A consumer of a declared table's stream (e.g. the reference app's cache invalidator and outbox
 * relay on its orders table), with the failure settings of AWS Solutions Constructs: bisect on
 * error, bounded retries and record age, partial batch responses, and an on-failure SQS
 * destination.
 */
import { Duration, Validations } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sources from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import type { ResolvedStreamConsumer } from '../config';
import { DLQ_RETENTION_SECONDS } from '../config';
import { QUEUE_DEFAULTS, STREAM_DEFAULTS } from './defaults';
import { TenangFunction, type FunctionVpcPlacement } from './tenang-function';
import { environmentProblems, validateProps } from './validation';

/** Props of StreamConsumer. */
export interface StreamConsumerProps {
  /** The consumer's declaration, resolved by loadPipelineConfig. */
  readonly consumer: ResolvedStreamConsumer;
  /** A table with a stream. */
  readonly table: dynamodb.ITable;
  /** Handler entry file. */
  readonly entry: string;
  /** @default {} */
  readonly environment?: Readonly<Record<string, string>>;
  /** @default - not in a VPC */
  readonly vpc?: FunctionVpcPlacement;
  /** @default true */
  readonly eventSourceEnabled?: boolean;
  /**
   * Emulator only: attach the mapping to the on-failure queue and record the stream ARN in the
   * `tenang:stream-arn` metadata (see TargetTraits.decoupleStreamMappings).
   * @default false
   */
  readonly decoupleFromStream?: boolean;
}

/** Metadata key holding a decoupled stream mapping's real stream ARN. */
export const STREAM_ARN_METADATA = 'tenang:stream-arn';

/** A stream-triggered function with its on-failure queue. */
export class StreamConsumer extends Construct {
  /** The function. */
  public readonly consumer: TenangFunction;
  /** Records that exhausted their retries or aged out land here (metadata only, per AWS). */
  public readonly failureQueue: sqs.Queue;
  /** The stream event source mapping. */
  public readonly eventSource: sources.DynamoEventSource;

  public constructor(scope: Construct, id: string, props: StreamConsumerProps) {
    super(scope, id);
    validateProps('StreamConsumer', props, [
      (p) => (p.table.tableStreamArn === undefined ? 'the table has no stream' : undefined),
      (p) => environmentProblems(p.environment),
    ]);
    const sc = props.consumer;

    this.failureQueue = new sqs.Queue(this, 'FailureQueue', {
      ...QUEUE_DEFAULTS,
      queueName: sc.onFailureQueueName,
      retentionPeriod: Duration.seconds(DLQ_RETENTION_SECONDS),
    });
    Validations.of(this.failureQueue).acknowledge({
      id: 'AwsSolutions-SQS3',
      reason:
        'This queue is the on-failure destination of a stream mapping: it is itself a dead-letter queue.',
    });
    Validations.of(this.failureQueue).acknowledge({
      id: 'Serverless-SQSRedrivePolicy',
      reason: 'This queue is the on-failure destination of a stream mapping: a redrive from it would loop.',
    });

    this.consumer = new TenangFunction(this, 'Consumer', {
      serviceName: sc.consumer,
      entry: props.entry,
      timeoutSeconds: sc.function.timeoutSeconds,
      memoryMb: sc.function.memoryMb,
      environment: props.environment,
      vpc: props.vpc,
      noAsyncDlqReason:
        'Invoked synchronously by a DynamoDB stream mapping: failed records go to its on-failure queue.',
    });
    this.eventSource = new sources.DynamoEventSource(props.table, {
      ...STREAM_DEFAULTS,
      batchSize: sc.batchSize,
      retryAttempts: sc.retryAttempts,
      maxRecordAge: Duration.seconds(sc.maxRecordAgeSeconds),
      onFailure: new sources.SqsDlq(this.failureQueue),
      enabled: props.eventSourceEnabled ?? true,
    });
    this.consumer.function.addEventSource(this.eventSource);
    if (props.decoupleFromStream === true) {
      const mapping = this.consumer.function.node.children.find(
        (c): c is lambda.EventSourceMapping => c instanceof lambda.EventSourceMapping,
      );
      const cfn = mapping?.node.defaultChild as lambda.CfnEventSourceMapping | undefined;
      if (cfn === undefined || props.table.tableStreamArn === undefined) {
        throw new Error('StreamConsumer: no event source mapping to decouple');
      }
      cfn.addPropertyOverride('EventSourceArn', this.failureQueue.queueArn);
      cfn.addMetadata(STREAM_ARN_METADATA, props.table.tableStreamArn);
    }
  }
}
