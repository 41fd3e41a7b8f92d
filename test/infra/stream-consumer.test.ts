import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { DLQ_RETENTION_SECONDS, type ResolvedStreamConsumer } from '../../lib/config';
import { jobEntry } from '../../lib/infra/pipeline-stack';
import { StreamConsumer, type StreamConsumerProps } from '../../lib/infra/stream-consumer';
import {
  actionsAllowedOn,
  getAtt,
  onlyResource,
  propertiesOf,
  propsErrorOf,
  ref,
  REFERENCE_APP_DIR,
  referenceConfig,
  testStack,
} from './helpers';

const config = referenceConfig();
const streamConsumers = config.streamConsumers.map((sc) => [sc.consumer, sc] as const);
const [firstConsumer] = config.streamConsumers;
if (firstConsumer === undefined) throw new Error('the reference pipeline declares no stream consumer');

function streamedTable(stack: Stack, stream: dynamodb.StreamViewType | undefined): dynamodb.Table {
  return new dynamodb.Table(stack, 'Orders', {
    partitionKey: { name: 'orderId', type: dynamodb.AttributeType.STRING },
    stream,
  });
}

/** A StreamConsumer on a streamed table in a fresh stack. */
function build(sc: ResolvedStreamConsumer, overrides: Partial<StreamConsumerProps> = {}): StreamConsumer {
  const stack = testStack();
  return new StreamConsumer(stack, 'Consumer', {
    consumer: sc,
    table: streamedTable(stack, dynamodb.StreamViewType.NEW_AND_OLD_IMAGES),
    entry: jobEntry(sc, REFERENCE_APP_DIR),
    ...overrides,
  });
}

describe('Class: StreamConsumer', () => {
  // One stack holds every stream consumer of the reference pipeline on one streamed table.
  let template: Template;
  let table: dynamodb.Table;
  const built = new Map<string, StreamConsumer>();
  beforeAll(() => {
    const stack = testStack();
    table = streamedTable(stack, dynamodb.StreamViewType.NEW_AND_OLD_IMAGES);
    config.streamConsumers.forEach((sc, i) => {
      built.set(
        sc.consumer,
        new StreamConsumer(stack, `Consumer${i}`, {
          consumer: sc,
          table,
          entry: jobEntry(sc, REFERENCE_APP_DIR),
        }),
      );
    });
    template = Template.fromStack(stack);
  });
  const consumer = (name: string): StreamConsumer => {
    const found = built.get(name);
    if (found === undefined) throw new Error(`no stream consumer built for ${name}`);
    return found;
  };
  const mappingOf = (c: StreamConsumer): Record<string, unknown> =>
    onlyResource(template, 'AWS::Lambda::EventSourceMapping', {
      Properties: { FunctionName: ref(c.consumer.function) },
    })[1].Properties;

  describe('Event source mapping', () => {
    it.each(streamConsumers)(
      'when the consumer is %s, it reads the table stream from TRIM_HORIZON, bisecting failed batches and reporting item failures',
      (name) => {
        // Act
        const mapping = mappingOf(consumer(name));

        // Assess
        expect(mapping).toMatchObject({
          EventSourceArn: getAtt(table, 'StreamArn'),
          StartingPosition: 'TRIM_HORIZON',
          BisectBatchOnFunctionError: true,
          FunctionResponseTypes: ['ReportBatchItemFailures'],
          Enabled: true,
        });
      },
    );

    it.each(streamConsumers)(
      'when the consumer is %s, it bounds retries and record age and sizes batches from the config',
      (name, sc) => {
        // Act
        const mapping = mappingOf(consumer(name));

        // Assess
        expect(mapping).toMatchObject({
          MaximumRetryAttempts: sc.retryAttempts,
          MaximumRecordAgeInSeconds: sc.maxRecordAgeSeconds,
          BatchSize: sc.batchSize,
        });
      },
    );

    it.each(streamConsumers)(
      'when the consumer is %s, records that fail for good go to its own failure queue',
      (name) => {
        // Prepare
        const c = consumer(name);

        // Act
        const mapping = mappingOf(c);

        // Assess
        expect(mapping.DestinationConfig).toEqual({
          OnFailure: { Destination: getAtt(c.failureQueue, 'Arn') },
        });
      },
    );

    it('when eventSourceEnabled is false, it creates the mapping disabled', () => {
      // Prepare
      const c = build(firstConsumer, { eventSourceEnabled: false });

      // Act
      const t = Template.fromStack(Stack.of(c));

      // Assess
      t.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
      t.hasResourceProperties('AWS::Lambda::EventSourceMapping', { Enabled: false });
    });
  });

  describe('Failure queue', () => {
    it.each(streamConsumers)(
      'when the consumer is %s, its failure queue is named from the config, encrypted and kept 14 days',
      (name, sc) => {
        // Act
        const queue = propertiesOf(template, consumer(name).failureQueue);

        // Assess
        expect(queue).toEqual({
          QueueName: sc.onFailureQueueName,
          SqsManagedSseEnabled: true,
          MessageRetentionPeriod: DLQ_RETENTION_SECONDS,
        });
      },
    );

    it.each(streamConsumers)(
      'when the consumer is %s, its failure queue denies requests without TLS',
      (name) => {
        // Prepare
        const q = consumer(name).failureQueue;

        // Act
        const [, policy] = onlyResource(template, 'AWS::SQS::QueuePolicy', {
          Properties: { Queues: [ref(q)] },
        });

        // Assess
        expect(policy.Properties.PolicyDocument).toMatchObject({
          Statement: [
            {
              Effect: 'Deny',
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
              Resource: getAtt(q, 'Arn'),
            },
          ],
        });
      },
    );

    it.each(streamConsumers)(
      'when the consumer is %s, its function may send to its failure queue',
      (name) => {
        // Prepare
        const c = consumer(name);

        // Act
        const actions = actionsAllowedOn(template, c.consumer.function, getAtt(c.failureQueue, 'Arn'));

        // Assess
        expect(actions).toContain('sqs:SendMessage');
      },
    );
  });

  describe('Validation', () => {
    it('when the table has no stream, it fails saying so', () => {
      // Prepare
      const stack = testStack();
      const table = streamedTable(stack, undefined);

      // Act
      const error = propsErrorOf(
        () =>
          new StreamConsumer(stack, 'Consumer', {
            consumer: firstConsumer,
            table,
            entry: jobEntry(firstConsumer, REFERENCE_APP_DIR),
          }),
      );

      // Assess
      expect(error.message).toMatch(/^Invalid props for StreamConsumer/);
      expect(error.problems).toEqual(['the table has no stream']);
    });

    it('when an environment variable looks like a secret, it fails naming it', () => {
      // Act
      const error = propsErrorOf(() => build(firstConsumer, { environment: { REDIS_PASSWORD: 'x' } }));

      // Assess
      expect(error.problems).toEqual([
        expect.stringMatching(/secrets never go into environment variables: REDIS_PASSWORD/),
      ]);
    });
  });
});
