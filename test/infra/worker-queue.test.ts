import { Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { DLQ_RETENTION_SECONDS, METRICS_NAMESPACE, type ResolvedJobType } from '../../lib/config';
import { jobEntry } from '../../lib/infra/pipeline-stack';
import { WorkerQueue, type WorkerQueueProps } from '../../lib/infra/worker-queue';
import {
  actionsAllowedOn,
  getAtt,
  onlyResource,
  propertiesOf,
  propsErrorOf,
  ref,
  referenceConfig,
  REFERENCE_APP_DIR,
  testStack,
} from './helpers';

const config = referenceConfig();
const jobTypes = config.jobTypes.map((j) => [j.name, j] as const);
const byName = (name: string): ResolvedJobType => {
  const found = config.jobTypes.find((j) => j.name === name);
  if (found === undefined) throw new Error(`the reference pipeline has no job type ${name}`);
  return found;
};
const payment = byName('payment.capture');

/** A WorkerQueue for a job type in a fresh stack, with its consumer's real entry file. */
function build(jobType: ResolvedJobType, overrides: Partial<WorkerQueueProps> = {}): WorkerQueue {
  return new WorkerQueue(testStack(), 'Worker', {
    jobType,
    entry: jobEntry(jobType, REFERENCE_APP_DIR),
    ...overrides,
  });
}

describe('Class: WorkerQueue', () => {
  // One stack holds a worker queue per job type of the reference pipeline.
  let template: Template;
  const workers = new Map<string, WorkerQueue>();
  beforeAll(() => {
    const stack = testStack();
    config.jobTypes.forEach((j, i) => {
      workers.set(
        j.name,
        new WorkerQueue(stack, `Worker${i}`, { jobType: j, entry: jobEntry(j, REFERENCE_APP_DIR) }),
      );
    });
    template = Template.fromStack(stack);
  });
  const worker = (name: string): WorkerQueue => {
    const found = workers.get(name);
    if (found === undefined) throw new Error(`no worker queue built for ${name}`);
    return found;
  };

  describe('Queues', () => {
    it.each(jobTypes)(
      'when the job type is %s, it sets the visibility timeout to 6 × the function timeout + the batching window',
      (name, jobType) => {
        // Prepare
        const expected = 6 * jobType.function.timeoutSeconds + jobType.batch.windowSeconds;

        // Act
        const queue = propertiesOf(template, worker(name).queue);

        // Assess
        expect(queue.VisibilityTimeout).toBe(expected);
      },
    );

    it.each(jobTypes)(
      'when the job type is %s, it redrives to its own DLQ after maxReceiveCount receives from the config',
      (name, jobType) => {
        // Prepare
        const w = worker(name);

        // Act
        const queue = propertiesOf(template, w.queue);

        // Assess
        expect(queue.RedrivePolicy).toEqual({
          deadLetterTargetArn: getAtt(w.deadLetterQueue, 'Arn'),
          maxReceiveCount: jobType.maxReceiveCount,
        });
      },
    );

    it('when the job type uses a FIFO queue, the queue and its DLQ are FIFO, named .fifo, without content-based dedup', () => {
      // Prepare
      const w = worker(payment.name);

      // Act
      const queue = propertiesOf(template, w.queue);
      const dlq = propertiesOf(template, w.deadLetterQueue);

      // Assess
      expect(payment.queue.kind).toBe('fifo');
      expect(queue).toMatchObject({ FifoQueue: true, ContentBasedDeduplication: false });
      expect(queue.QueueName).toMatch(/\.fifo$/);
      expect(dlq.FifoQueue).toBe(true);
      expect(dlq.QueueName).toMatch(/\.fifo$/);
      expect(dlq.ContentBasedDeduplication).not.toBe(true);
    });

    it('when the job type uses a standard queue, neither the queue nor its DLQ is FIFO', () => {
      // Prepare
      const standard = config.jobTypes.filter((j) => j.queue.kind === 'standard');

      // Act
      const queues = standard.flatMap((j) => [
        propertiesOf(template, worker(j.name).queue),
        propertiesOf(template, worker(j.name).deadLetterQueue),
      ]);

      // Assess
      expect(standard.length).toBeGreaterThan(0);
      for (const q of queues) {
        expect(q.FifoQueue).toBeUndefined();
        expect(q.QueueName).not.toMatch(/\.fifo$/);
      }
    });

    it.each(jobTypes)(
      'when the job type is %s, its queue and DLQ are SQS-encrypted and deny any request without TLS',
      (name) => {
        // Prepare
        const w = worker(name);
        const queues = [w.queue, w.deadLetterQueue];

        // Act
        const encrypted = queues.map((q) => propertiesOf(template, q).SqsManagedSseEnabled);

        // Assess
        expect(encrypted).toEqual([true, true]);
        for (const q of queues) {
          template.hasResourceProperties('AWS::SQS::QueuePolicy', {
            Queues: [ref(q)],
            PolicyDocument: {
              Statement: Match.arrayWith([
                Match.objectLike({
                  Effect: 'Deny',
                  Action: 'sqs:*',
                  Principal: { AWS: '*' },
                  Condition: { Bool: { 'aws:SecureTransport': 'false' } },
                  Resource: getAtt(q, 'Arn'),
                }),
              ]),
            },
          });
        }
      },
    );

    it.each(jobTypes)(
      'when the job type is %s, its DLQ keeps messages 14 days, longer than the queue',
      (name, jobType) => {
        // Prepare
        const w = worker(name);

        // Act
        const queueRetention = propertiesOf(template, w.queue).MessageRetentionPeriod as number;
        const dlqRetention = propertiesOf(template, w.deadLetterQueue).MessageRetentionPeriod as number;

        // Assess
        expect(dlqRetention).toBe(1_209_600);
        expect(dlqRetention).toBe(DLQ_RETENTION_SECONDS);
        expect(queueRetention).toBe(jobType.queue.retentionSeconds);
        expect(dlqRetention).toBeGreaterThan(queueRetention);
      },
    );
  });

  describe('Consumer', () => {
    it.each(jobTypes)(
      'when the job type is %s, its consumer runs nodejs22.x on arm64 with active tracing and the timeout and memory of the config',
      (name, jobType) => {
        // Prepare
        const fn = worker(name).consumer.function;

        // Act
        const properties = propertiesOf(template, fn);

        // Assess
        expect(properties).toMatchObject({
          Runtime: 'nodejs22.x',
          Architectures: ['arm64'],
          TracingConfig: { Mode: 'Active' },
          Timeout: jobType.function.timeoutSeconds,
          MemorySize: jobType.function.memoryMb,
        });
      },
    );

    it.each(jobTypes)(
      'when the job type is %s, its consumer gets the Powertools service and namespace, QUEUE_URL and DLQ_URL',
      (name, jobType) => {
        // Prepare
        const w = worker(name);

        // Act
        const properties = propertiesOf(template, w.consumer.function);

        // Assess
        expect(properties.Environment).toMatchObject({
          Variables: {
            POWERTOOLS_SERVICE_NAME: jobType.consumer,
            POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
            QUEUE_URL: ref(w.queue),
            DLQ_URL: ref(w.deadLetterQueue),
          },
        });
      },
    );

    it.each(jobTypes)('when the job type is %s, its consumer may send messages to its DLQ', (name) => {
      // Prepare
      const w = worker(name);

      // Act
      const actions = actionsAllowedOn(template, w.consumer.function, getAtt(w.deadLetterQueue, 'Arn'));

      // Assess
      expect(actions).toContain('sqs:SendMessage');
    });

    it.each(jobTypes)(
      'when the job type is %s, its consumer may re-send a deferred job to its own queue exactly when the queue is standard',
      (name, jobType) => {
        // The runner defers on a standard queue by SendMessage with a delay (on FIFO by
        // ChangeMessageVisibility); without the grant AWS answers AccessDenied.
        const w = worker(name);

        // Act
        const actions = actionsAllowedOn(template, w.consumer.function, getAtt(w.queue, 'Arn'));

        // Assess
        expect(actions).toContain('sqs:ChangeMessageVisibility');
        if (jobType.queue.kind === 'fifo') expect(actions).not.toContain('sqs:SendMessage');
        else expect(actions).toContain('sqs:SendMessage');
      },
    );
  });

  describe('Side queue of expired jobs (B5)', () => {
    const expiring = jobTypes.filter(([, j]) => j.usefulAgeSeconds !== undefined);
    const lasting = jobTypes.filter(([, j]) => j.usefulAgeSeconds === undefined);

    it('when the reference pipeline is built, exactly the sheddable notifications expire', () => {
      // Assess
      expect(expiring.map(([name]) => name)).toEqual(['notification.send']);
    });

    it.each(expiring)(
      'when %s declares a useful age, its side queue is encrypted, kept as long as the DLQ, handed to the consumer and writable by it alone',
      (name, jobType) => {
        // Prepare
        const w = worker(name);
        const side = w.expiredQueue;
        if (side === undefined) throw new Error(`${name} has no side queue`);

        // Act
        const queue = propertiesOf(template, side);
        const env = propertiesOf(template, w.consumer.function).Environment as {
          Variables: Record<string, unknown>;
        };
        const actions = actionsAllowedOn(template, w.consumer.function, getAtt(side, 'Arn'));

        // Assess
        expect(queue).toMatchObject({
          QueueName: jobType.expiredQueueName,
          MessageRetentionPeriod: DLQ_RETENTION_SECONDS,
          SqsManagedSseEnabled: true,
        });
        expect(queue.RedrivePolicy).toBeUndefined();
        expect(env.Variables.EXPIRED_QUEUE_URL).toEqual(ref(side));
        expect(actions).toContain('sqs:SendMessage');
        expect(actions).not.toContain('sqs:ReceiveMessage');
      },
    );

    it.each(lasting)(
      'when %s declares no useful age, it has no side queue and no EXPIRED_QUEUE_URL',
      (name) => {
        // Prepare
        const w = worker(name);

        // Act
        const env = propertiesOf(template, w.consumer.function).Environment as {
          Variables: Record<string, unknown>;
        };

        // Assess
        expect(w.expiredQueue).toBeUndefined();
        expect(env.Variables).not.toHaveProperty('EXPIRED_QUEUE_URL');
      },
    );
  });

  describe('Event source mapping', () => {
    it.each(jobTypes)(
      'when the job type is %s, it maps the queue with partial batch responses, the batch size and the maximum concurrency of the config',
      (name, jobType) => {
        // Prepare
        const w = worker(name);

        // Act
        const [, mapping] = onlyResource(template, 'AWS::Lambda::EventSourceMapping', {
          Properties: { EventSourceArn: getAtt(w.queue, 'Arn') },
        });

        // Assess
        expect(mapping.Properties).toMatchObject({
          FunctionName: ref(w.consumer.function),
          FunctionResponseTypes: ['ReportBatchItemFailures'],
          BatchSize: jobType.batch.size,
          ScalingConfig: { MaximumConcurrency: jobType.batch.maxConcurrency },
          Enabled: true,
        });
      },
    );

    it.each(jobTypes)(
      'when the job type is %s, the batching window is the config window on a standard queue and absent on FIFO',
      (name, jobType) => {
        // Prepare
        const w = worker(name);

        // Act
        const [, mapping] = onlyResource(template, 'AWS::Lambda::EventSourceMapping', {
          Properties: { EventSourceArn: getAtt(w.queue, 'Arn') },
        });

        // Assess
        const expected = jobType.queue.kind === 'fifo' ? undefined : jobType.batch.windowSeconds;
        expect(mapping.Properties.MaximumBatchingWindowInSeconds).toBe(expected);
      },
    );

    it('when eventSourceEnabled is false, it creates the mapping disabled', () => {
      // Prepare
      const w = build(payment, { eventSourceEnabled: false });

      // Act
      const t = Template.fromStack(Stack.of(w));

      // Assess
      t.resourceCountIs('AWS::Lambda::EventSourceMapping', 1);
      t.hasResourceProperties('AWS::Lambda::EventSourceMapping', { Enabled: false });
    });
  });

  describe('Validation', () => {
    it('when an environment variable name is not SCREAMING_SNAKE_CASE, it fails naming it', () => {
      // Act
      const error = propsErrorOf(() => build(payment, { environment: { ordersTable: 'orders' } }));

      // Assess
      expect(error.message).toMatch(/^Invalid props for WorkerQueue/);
      expect(error.problems).toEqual([expect.stringMatching(/SCREAMING_SNAKE_CASE: ordersTable$/)]);
    });

    it('when an environment variable looks like a secret, it fails naming it', () => {
      // Act
      const error = propsErrorOf(() => build(payment, { environment: { API_KEY: 'not-here' } }));

      // Assess
      expect(error.problems).toEqual([
        expect.stringMatching(/secrets never go into environment variables: API_KEY/),
      ]);
    });

    it.each(['QUEUE_URL', 'DLQ_URL', 'EXPIRED_QUEUE_URL'])(
      'when the environment sets %s, it fails: WorkerQueue sets it',
      (name) => {
        // Act
        const error = propsErrorOf(() => build(payment, { environment: { [name]: 'https://elsewhere' } }));

        // Assess
        expect(error.problems).toEqual([
          'QUEUE_URL, DLQ_URL and EXPIRED_QUEUE_URL are set by WorkerQueue itself',
        ]);
      },
    );

    it('when the visibility timeout is below 6 × the function timeout, it fails asking for loadPipelineConfig', () => {
      // Prepare
      const tooShort: ResolvedJobType = {
        ...payment,
        visibilityTimeoutSeconds: 6 * payment.function.timeoutSeconds - 1,
      };

      // Act
      const error = propsErrorOf(() => build(tooShort));

      // Assess
      expect(error.problems).toEqual([
        expect.stringMatching(
          /^visibility timeout 179 s is below 6 × the function timeout; .*loadPipelineConfig/,
        ),
      ]);
    });

    it('when several rules are broken, it lists every problem in one ConstructPropsError', () => {
      // Prepare
      const tooShort: ResolvedJobType = { ...payment, visibilityTimeoutSeconds: 1 };

      // Act
      const error = propsErrorOf(() =>
        build(tooShort, { environment: { ordersTable: 'orders', API_KEY: 'x', QUEUE_URL: 'y' } }),
      );

      // Assess
      // The visibility rule, the environment rule (naming and secret), and the reserved-name rule.
      expect(error.problems).toHaveLength(3);
      expect(error.name).toBe('ConstructPropsError');
      expect(error.message).toMatch(/visibility timeout[\s\S]*ordersTable[\s\S]*API_KEY[\s\S]*QUEUE_URL/);
    });
  });
});
