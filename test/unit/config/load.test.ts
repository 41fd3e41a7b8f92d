import * as derive from '../../../lib/config/derive';
import {
  AWS_LIMITS,
  DLQ_RETENTION_SECONDS,
  PipelineConfigError,
  jobTypeByName,
  loadPipelineConfig,
  restagePipeline,
  type PipelineInput,
  type StageInput,
} from '../../../lib/config';
import { referencePipeline } from '../../../examples/reference/pipeline';
import { fifoJobTypeInput, jobTypeInput, pipelineInput, stageInput, streamConsumerInput } from './builders';

/** Runs `load`, expecting a PipelineConfigError, and returns that error. */
function rejection(load: () => unknown): PipelineConfigError {
  let thrown: unknown;
  try {
    load();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(PipelineConfigError);
  return thrown as PipelineConfigError;
}

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Matches a problem line reported at `path` whose message mentions `says`. */
function problemAt(path: string, says = ''): unknown {
  return expect.stringMatching(new RegExp(`^${escapeRegExp(path)}: .*${escapeRegExp(says)}`));
}

/** A job type whose worst case to the DLQ is 2 attempts × a 30 s visibility timeout = 60 s. */
const sixtySecondWorstCase = {
  function: { timeoutSeconds: 5, memoryMb: 256 },
  maxReceiveCount: 2,
  retry: { baseDelaySeconds: 2, maxDelaySeconds: 4 },
  latencyObjectiveSeconds: 120,
};

interface RejectedCase {
  readonly case: string;
  readonly input: PipelineInput;
  readonly path: string;
  readonly says?: string;
}

describe('Function: loadPipelineConfig', () => {
  afterEach(() => {
    jest.restoreAllMocks();
  });

  describe('valid declarations', () => {
    it('when given the base test pipeline, it loads its job type and stream consumer', () => {
      // Prepare
      const input = pipelineInput();

      // Act
      const config = loadPipelineConfig(input);

      // Assess
      expect(config.stage.name).toBe('test');
      expect(config.degradeFlagName).toBe('/tenang/test/flags/degrade');
      expect(config.jobTypes.map((j) => j.name)).toEqual(['order.ship']);
      expect(config.streamConsumers.map((s) => s.consumer)).toEqual(['cache-invalidator']);
    });

    it('when optional fields are left out, it fills in their documented defaults', () => {
      // Prepare
      const input = pipelineInput();

      // Act
      const config = loadPipelineConfig(input);

      // Assess
      const [job] = config.jobTypes;
      const [stream] = config.streamConsumers;
      expect(job?.queue.retentionSeconds).toBe(345_600);
      expect(job?.batch.windowSeconds).toBe(0);
      expect(job?.neededForRecovery).toBe(false);
      expect(stream?.neededForRecovery).toBe(false);
      expect(config.stage.alarmTopic.deliverTo).toEqual([]);
      expect(config.stage.cache.hotKeys).toEqual([]);
    });

    it.each<{ case: string; input: PipelineInput }>([
      {
        case: 'the latency objective is 1 s above the timeout',
        input: pipelineInput({ jobTypes: [jobTypeInput({ latencyObjectiveSeconds: 11 })] }),
      },
      {
        case: 'a standard batch above 10 has a 1 s window',
        input: pipelineInput({
          jobTypes: [jobTypeInput({ batch: { size: 11, windowSeconds: 1, maxConcurrency: 2 } })],
        }),
      },
      {
        case: 'a FIFO batch is exactly 10',
        input: pipelineInput({ jobTypes: [fifoJobTypeInput({ batch: { size: 10, maxConcurrency: 2 } })] }),
      },
      {
        case: 'the retention is 1 s below the DLQ retention',
        input: pipelineInput({
          jobTypes: [
            jobTypeInput({ queue: { kind: 'standard', retentionSeconds: DLQ_RETENTION_SECONDS - 1 } }),
          ],
        }),
      },
      {
        case: 'the worst case to the DLQ is 1 s under the retention',
        input: pipelineInput({
          jobTypes: [
            jobTypeInput({ ...sixtySecondWorstCase, queue: { kind: 'standard', retentionSeconds: 61 } }),
          ],
        }),
      },
      {
        case: 'the base delay equals the max delay',
        input: pipelineInput({
          jobTypes: [jobTypeInput({ retry: { baseDelaySeconds: 30, maxDelaySeconds: 30 } })],
        }),
      },
      {
        case: 'the stream latency objective is 1 s below the max record age',
        input: pipelineInput({
          streamConsumers: [streamConsumerInput({ latencyObjectiveSeconds: 59, maxRecordAgeSeconds: 60 })],
        }),
      },
      {
        case: 'the function uses the largest timeout and window the schema accepts',
        input: pipelineInput({
          jobTypes: [
            jobTypeInput({
              function: { timeoutSeconds: AWS_LIMITS.lambdaTimeoutSeconds.max, memoryMb: 256 },
              batch: { size: 5, windowSeconds: AWS_LIMITS.sqsBatchingWindowSeconds.max, maxConcurrency: 2 },
              latencyObjectiveSeconds: 3_600,
            }),
          ],
        }),
      },
      { case: 'there are no stream consumers', input: pipelineInput({ streamConsumers: [] }) },
      {
        case: 'sheddable work expires 1 s after its latency objective and 1 s before the retention',
        input: pipelineInput({
          jobTypes: [
            jobTypeInput({
              criticality: 'sheddable',
              latencyObjectiveSeconds: 300,
              usefulAgeSeconds: 301,
              queue: { kind: 'standard', retentionSeconds: 302 },
            }),
          ],
        }),
      },
      {
        case: 'a non-critical job type is not idempotent',
        input: pipelineInput({ jobTypes: [jobTypeInput({ criticality: 'sheddable', idempotent: false })] }),
      },
    ])('when $case, it loads without error', ({ input }) => {
      // Act
      const load = () => loadPipelineConfig(input);

      // Assess
      expect(load).not.toThrow();
    });
  });

  describe('one problem', () => {
    it.each<RejectedCase>([
      // The stage
      {
        case: 'the stage name has capitals',
        input: pipelineInput({ stage: stageInput({ name: 'Dev' }) }),
        path: 'stage.name',
      },
      {
        case: 'the stage name is longer than 16 characters',
        input: pipelineInput({ stage: stageInput({ name: 'a'.repeat(17) }) }),
        path: 'stage.name',
      },
      {
        case: 'the stage name ends in a dash',
        input: pipelineInput({ stage: stageInput({ name: 'dev-' }) }),
        path: 'stage.name',
        says: 'not ending in "-"',
      },
      {
        case: 'a derived queue name is longer than 80 characters',
        input: pipelineInput({
          stage: stageInput({ name: 'a'.repeat(16) }),
          jobTypes: [jobTypeInput({ name: `very.${'long'.repeat(14)}` })],
        }),
        path: 'jobTypes',
        says: "longer than SQS's 80 characters",
      },
      {
        case: 'a job type keeps idempotency records without the actions to complete and give them back',
        input: pipelineInput({
          jobTypes: [jobTypeInput({ resources: { tables: { idempotency: ['GetItem', 'PutItem'] } } })],
        }),
        path: 'jobTypes[0].resources.tables.idempotency',
        says: 'missing: UpdateItem, DeleteItem',
      },
      {
        case: 'the region is not an AWS region',
        input: pipelineInput({ stage: stageInput({ region: 'europe-west' }) }),
        path: 'stage.region',
      },
      {
        case: 'an alarm e-mail is not an e-mail address',
        input: pipelineInput({
          stage: stageInput({
            alarmTopic: {
              name: 'tenang-test-alarms',
              deliverTo: [{ email: 'ops@example.com' }, { email: 'on-call' }],
            } as unknown as StageInput['alarmTopic'],
          }),
        }),
        path: 'stage.alarmTopic.deliverTo.1.email',
        says: 'must be an e-mail address',
      },
      {
        case: 'an alarm subscriber names two kinds of endpoint',
        input: pipelineInput({
          stage: stageInput({
            alarmTopic: {
              name: 'tenang-test-alarms',
              deliverTo: [{ email: 'ops@example.com', https: 'https://events.pagerduty.com/x' }],
            } as unknown as StageInput['alarmTopic'],
          }),
        }),
        path: 'stage.alarmTopic.deliverTo.0',
        says: 'name exactly one of email, https or topicArn',
      },
      {
        case: 'an alarm HTTPS subscriber is plain http',
        input: pipelineInput({
          stage: stageInput({
            alarmTopic: {
              name: 'tenang-test-alarms',
              deliverTo: [{ https: 'http://hooks.example.com/alarms' }],
            } as unknown as StageInput['alarmTopic'],
          }),
        }),
        path: 'stage.alarmTopic.deliverTo.0.https',
        says: 'must be an https:// URL',
      },
      {
        case: 'an existing alarm topic is not a topic ARN',
        input: pipelineInput({
          stage: stageInput({
            alarmTopic: {
              name: 'tenang-test-alarms',
              deliverTo: [{ topicArn: 'arn:aws:sqs:eu-west-1:123456789012:on-call' }],
            } as unknown as StageInput['alarmTopic'],
          }),
        }),
        path: 'stage.alarmTopic.deliverTo.0.topicArn',
        says: 'must be an SNS topic ARN',
      },
      {
        case: 'no one is told of the alarms and the reason is blank',
        input: pipelineInput({
          stage: stageInput({
            alarmTopic: {
              name: 'tenang-test-alarms',
              deliverTo: { none: '   ' },
            } as unknown as StageInput['alarmTopic'],
          }),
        }),
        path: 'stage.alarmTopic.deliverTo.none',
        says: 'give the reason',
      },
      {
        case: 'deliverTo is neither a list nor { none }',
        input: pipelineInput({
          stage: stageInput({
            alarmTopic: {
              name: 'tenang-test-alarms',
              deliverTo: 'ops@example.com',
            } as unknown as StageInput['alarmTopic'],
          }),
        }),
        path: 'stage.alarmTopic.deliverTo',
        says: 'must be a list of subscribers',
      },
      {
        case: 'the alarm topic still declares the replaced emails list',
        input: pipelineInput({
          stage: stageInput({
            alarmTopic: {
              name: 'tenang-test-alarms',
              emails: ['ops@example.com'],
            } as unknown as StageInput['alarmTopic'],
          }),
        }),
        path: 'stage.alarmTopic.emails',
        says: 'was replaced by deliverTo',
      },
      {
        case: 'the cache jitter ratio is above 1',
        input: pipelineInput({
          stage: stageInput({
            cache: { ttlSeconds: 300, ttlJitterRatio: 1.5, loadLockMs: 2_000, commandTimeoutMs: 250 },
          }),
        }),
        path: 'stage.cache.ttlJitterRatio',
      },
      // A job type's fields
      {
        case: 'the job type name is not "domain.action"',
        input: pipelineInput({ jobTypes: [jobTypeInput({ name: 'ship' })] }),
        path: 'jobTypes[0].name',
        says: 'domain.action',
      },
      {
        case: 'the job type name has capitals',
        input: pipelineInput({ jobTypes: [jobTypeInput({ name: 'Order.Ship' })] }),
        path: 'jobTypes[0].name',
      },
      {
        case: 'the consumer is not kebab-case',
        input: pipelineInput({ jobTypes: [jobTypeInput({ consumer: 'shipConsumer' })] }),
        path: 'jobTypes[0].consumer',
        says: 'kebab-case',
      },
      {
        case: 'the function timeout is 0 s',
        input: pipelineInput({
          jobTypes: [jobTypeInput({ function: { timeoutSeconds: 0, memoryMb: 256 } })],
        }),
        path: 'jobTypes[0].function.timeoutSeconds',
      },
      {
        case: 'the function timeout is above 900 s',
        input: pipelineInput({
          jobTypes: [
            jobTypeInput({
              function: { timeoutSeconds: 901, memoryMb: 256 },
              latencyObjectiveSeconds: 3_600,
            }),
          ],
        }),
        path: 'jobTypes[0].function.timeoutSeconds',
      },
      {
        case: 'the function memory is below 128 MB',
        input: pipelineInput({
          jobTypes: [jobTypeInput({ function: { timeoutSeconds: 10, memoryMb: 127 } })],
        }),
        path: 'jobTypes[0].function.memoryMb',
      },
      {
        case: 'the function memory is above 10240 MB',
        input: pipelineInput({
          jobTypes: [jobTypeInput({ function: { timeoutSeconds: 10, memoryMb: 10_241 } })],
        }),
        path: 'jobTypes[0].function.memoryMb',
      },
      {
        case: 'maxReceiveCount is 1, allowing no retry',
        input: pipelineInput({ jobTypes: [jobTypeInput({ maxReceiveCount: 1 })] }),
        path: 'jobTypes[0].maxReceiveCount',
        says: 'at least one retry',
      },
      {
        case: 'maxReceiveCount is above 50',
        input: pipelineInput({ jobTypes: [jobTypeInput({ maxReceiveCount: 51 })] }),
        path: 'jobTypes[0].maxReceiveCount',
      },
      {
        case: 'the retention is below the SQS minimum',
        input: pipelineInput({
          jobTypes: [jobTypeInput({ queue: { kind: 'standard', retentionSeconds: 59 } })],
        }),
        path: 'jobTypes[0].queue.retentionSeconds',
      },
      {
        case: 'the batching window is above 300 s',
        input: pipelineInput({
          jobTypes: [jobTypeInput({ batch: { size: 5, windowSeconds: 301, maxConcurrency: 2 } })],
        }),
        path: 'jobTypes[0].batch.windowSeconds',
      },
      {
        case: 'the maximum concurrency is below 2',
        input: pipelineInput({ jobTypes: [jobTypeInput({ batch: { size: 5, maxConcurrency: 1 } })] }),
        path: 'jobTypes[0].batch.maxConcurrency',
      },
      {
        case: 'the runbook is not a kebab-case file name',
        input: pipelineInput({ jobTypes: [jobTypeInput({ runbook: 'order-ship.md' })] }),
        path: 'jobTypes[0].runbook',
      },
      // A job type's cross-field rules
      {
        case: 'a FIFO queue has no groupBy',
        input: pipelineInput({ jobTypes: [jobTypeInput({ queue: { kind: 'fifo' } })] }),
        path: 'jobTypes[0].queue.groupBy',
        says: 'FIFO queue needs',
      },
      {
        case: 'a FIFO queue has a batching window',
        input: pipelineInput({
          jobTypes: [fifoJobTypeInput({ batch: { size: 5, windowSeconds: 1, maxConcurrency: 2 } })],
        }),
        path: 'jobTypes[0].batch.windowSeconds',
        says: 'FIFO',
      },
      {
        case: 'a FIFO batch is above 10',
        input: pipelineInput({ jobTypes: [fifoJobTypeInput({ batch: { size: 11, maxConcurrency: 2 } })] }),
        path: 'jobTypes[0].batch.size',
        says: 'at most 10 on a FIFO queue',
      },
      {
        case: 'a standard queue has a groupBy',
        input: pipelineInput({
          jobTypes: [jobTypeInput({ queue: { kind: 'standard', groupBy: 'orderId' } })],
        }),
        path: 'jobTypes[0].queue.groupBy',
        says: 'only FIFO queues',
      },
      {
        case: 'a standard batch above 10 has no batching window',
        input: pipelineInput({ jobTypes: [jobTypeInput({ batch: { size: 11, maxConcurrency: 2 } })] }),
        path: 'jobTypes[0].batch.windowSeconds',
        says: 'batch size above 10',
      },
      {
        case: 'the retention equals the DLQ retention',
        input: pipelineInput({
          jobTypes: [jobTypeInput({ queue: { kind: 'standard', retentionSeconds: DLQ_RETENTION_SECONDS } })],
        }),
        path: 'jobTypes[0].queue.retentionSeconds',
        says: `must be below ${DLQ_RETENTION_SECONDS} s`,
      },
      {
        case: 'the base delay exceeds the max delay',
        input: pipelineInput({
          jobTypes: [jobTypeInput({ retry: { baseDelaySeconds: 61, maxDelaySeconds: 60 } })],
        }),
        path: 'jobTypes[0].retry.baseDelaySeconds',
      },
      {
        case: 'the latency objective equals the function timeout',
        input: pipelineInput({ jobTypes: [jobTypeInput({ latencyObjectiveSeconds: 10 })] }),
        path: 'jobTypes[0].latencyObjectiveSeconds',
        says: 'must exceed the function timeout (10 s)',
      },
      {
        case: 'the worst case to the DLQ equals the retention',
        input: pipelineInput({
          jobTypes: [
            jobTypeInput({ ...sixtySecondWorstCase, queue: { kind: 'standard', retentionSeconds: 60 } }),
          ],
        }),
        path: 'jobTypes[0].queue.retentionSeconds',
        says: 'a poison message can take 60 s',
      },
      {
        case: 'critical work is not idempotent',
        input: pipelineInput({ jobTypes: [jobTypeInput({ criticality: 'critical', idempotent: false })] }),
        path: 'jobTypes[0].idempotent',
      },
      {
        case: 'critical work declares a useful age',
        input: pipelineInput({
          jobTypes: [jobTypeInput({ criticality: 'critical', usefulAgeSeconds: 3_600 })],
        }),
        path: 'jobTypes[0].usefulAgeSeconds',
        says: 'only sheddable work may expire',
      },
      {
        case: 'deferrable work declares a useful age',
        input: pipelineInput({
          jobTypes: [jobTypeInput({ criticality: 'deferrable', usefulAgeSeconds: 3_600 })],
        }),
        path: 'jobTypes[0].usefulAgeSeconds',
        says: 'deferrable work is never skipped',
      },
      {
        case: 'the useful age equals the latency objective',
        input: pipelineInput({
          jobTypes: [
            jobTypeInput({ criticality: 'sheddable', latencyObjectiveSeconds: 300, usefulAgeSeconds: 300 }),
          ],
        }),
        path: 'jobTypes[0].usefulAgeSeconds',
        says: 'must exceed latencyObjectiveSeconds (300 s)',
      },
      {
        case: 'the useful age reaches the queue retention',
        input: pipelineInput({
          jobTypes: [
            jobTypeInput({
              criticality: 'sheddable',
              usefulAgeSeconds: 345_600,
              queue: { kind: 'standard', retentionSeconds: 345_600 },
            }),
          ],
        }),
        path: 'jobTypes[0].usefulAgeSeconds',
        says: 'SQS deletes old jobs before they can be moved aside',
      },
      {
        case: 'the useful age is under a minute',
        input: pipelineInput({
          jobTypes: [jobTypeInput({ criticality: 'sheddable', usefulAgeSeconds: 59 })],
        }),
        path: 'jobTypes[0].usefulAgeSeconds',
      },
      // A stream consumer
      {
        case: 'a stream consumer is not kebab-case',
        input: pipelineInput({ streamConsumers: [streamConsumerInput({ consumer: 'Cache_Invalidator' })] }),
        path: 'streamConsumers[0].consumer',
      },
      {
        case: 'a stream max record age is below 60 s',
        input: pipelineInput({
          streamConsumers: [streamConsumerInput({ maxRecordAgeSeconds: 59, latencyObjectiveSeconds: 30 })],
        }),
        path: 'streamConsumers[0].maxRecordAgeSeconds',
      },
      {
        case: 'a stream latency objective equals the max record age',
        input: pipelineInput({
          streamConsumers: [
            streamConsumerInput({ latencyObjectiveSeconds: 3_600, maxRecordAgeSeconds: 3_600 }),
          ],
        }),
        path: 'streamConsumers[0].latencyObjectiveSeconds',
        says: 'must be below maxRecordAgeSeconds',
      },
      // Handler modules: every consumer names its own; the package ships none of an app's
      {
        case: 'a job type declares no entry',
        input: pipelineInput({ jobTypes: [{ ...jobTypeInput(), entry: undefined as unknown as string }] }),
        path: 'jobTypes[0].entry',
        says: 'is required: the handler module, relative to the app',
      },
      {
        case: 'a stream consumer declares no entry',
        input: pipelineInput({
          streamConsumers: [{ ...streamConsumerInput(), entry: undefined as unknown as string }],
        }),
        path: 'streamConsumers[0].entry',
        says: 'is required: the handler module, relative to the app',
      },
      {
        case: 'an entry is an absolute path',
        input: pipelineInput({ jobTypes: [jobTypeInput({ entry: '/srv/jobs/order-ship.ts' })] }),
        path: 'jobTypes[0].entry',
        says: 'must be a relative path to a .ts or .js file',
      },
      // The pipeline as a whole
      {
        case: 'no job type is declared',
        input: pipelineInput({ jobTypes: [] }),
        path: 'jobTypes',
        says: 'at least one job type',
      },
      {
        case: 'two job types share a name',
        input: pipelineInput({ jobTypes: [jobTypeInput(), jobTypeInput({ consumer: 'other-consumer' })] }),
        path: 'jobTypes',
        says: 'job type "order.ship" is declared more than once',
      },
      {
        case: 'two job types share a consumer',
        input: pipelineInput({ jobTypes: [jobTypeInput(), jobTypeInput({ name: 'order.cancel' })] }),
        path: 'consumers',
        says: '"ship-consumer" is used by more than one',
      },
      {
        case: 'a job type and a stream consumer share a consumer',
        input: pipelineInput({ streamConsumers: [streamConsumerInput({ consumer: 'ship-consumer' })] }),
        path: 'consumers',
        says: '"ship-consumer" is used by more than one',
      },
    ])('when $case, it throws a PipelineConfigError with one problem at $path', ({ input, path, says }) => {
      // Act
      const error = rejection(() => loadPipelineConfig(input));

      // Assess
      expect(error.problems).toEqual([problemAt(path, says)]);
    });

    it('when the derived visibility timeout exceeds 43200 s, it reports it at the function timeout', () => {
      // Prepare
      // The schema bounds (timeout ≤ 900 s, window ≤ 300 s) keep the derived value at most 5700 s, so
      // this guard against loosened bounds is reached only by forcing the derivation.
      jest
        .spyOn(derive, 'deriveVisibilityTimeoutSeconds')
        .mockReturnValue(AWS_LIMITS.sqsVisibilityTimeoutSeconds.max + 1);
      const input = pipelineInput();

      // Act
      const error = rejection(() => loadPipelineConfig(input));

      // Assess
      expect(error.problems).toEqual([
        problemAt('jobTypes[0].function.timeoutSeconds', 'visibility timeout (43201 s) exceeds'),
      ]);
    });
  });

  describe('several problems', () => {
    it('when the stage, two job types and a stream consumer are wrong, it throws one error listing every problem on its own line', () => {
      // Prepare
      const input = pipelineInput({
        stage: stageInput({ region: 'moon-base' }),
        jobTypes: [
          jobTypeInput({ queue: { kind: 'fifo' }, criticality: 'critical', idempotent: false }),
          jobTypeInput({
            name: 'order.cancel',
            consumer: 'cancel-consumer',
            function: { timeoutSeconds: 10, memoryMb: 64 },
          }),
        ],
        streamConsumers: [
          streamConsumerInput({ latencyObjectiveSeconds: 7_200, maxRecordAgeSeconds: 3_600 }),
        ],
      });

      // Act
      const error = rejection(() => loadPipelineConfig(input));

      // Assess
      expect(error.problems).toEqual([
        problemAt('stage.region'),
        problemAt('jobTypes[0].queue.groupBy'),
        problemAt('jobTypes[0].idempotent'),
        problemAt('jobTypes[1].function.memoryMb'),
        problemAt('streamConsumers[0].latencyObjectiveSeconds'),
      ]);
      expect(error.message.split('\n')).toEqual([
        'Invalid pipeline config (5 problems):',
        ...error.problems.map((problem) => `  - ${problem}`),
      ]);
    });

    it('when a declaration read from JSON lacks its lists, each is one problem instead of a crash', () => {
      // Prepare: what a hand-typed TENANG_PIPELINE may hold; the compiler never saw it.
      const input = JSON.parse(JSON.stringify({ stage: stageInput() })) as Parameters<
        typeof loadPipelineConfig
      >[0];

      // Act
      const error = rejection(() => loadPipelineConfig(input));

      // Assess
      expect(error.problems).toEqual([
        'jobTypes: must be a list, and is missing',
        'streamConsumers: must be a list, and is missing',
      ]);
    });

    it('when one job type fails its schema, it still checks the job types after it', () => {
      // Prepare
      const input = pipelineInput({
        jobTypes: [
          jobTypeInput({ name: 'Bad' }),
          jobTypeInput({ name: 'order.cancel', consumer: 'cancel-consumer', latencyObjectiveSeconds: 5 }),
        ],
      });

      // Act
      const error = rejection(() => loadPipelineConfig(input));

      // Assess
      expect(error.problems).toEqual([
        problemAt('jobTypes[0].name'),
        problemAt('jobTypes[1].latencyObjectiveSeconds'),
      ]);
    });
  });

  describe('the reference pipeline', () => {
    const config = () => loadPipelineConfig(referencePipeline('dev', 'eu-west-1'));
    const job = (name: string) => jobTypeByName(config(), name);

    it('when loaded for dev in eu-west-1, it loads every job type and stream consumer', () => {
      // Act
      const loaded = config();

      // Assess
      expect(loaded.stage).toMatchObject({ name: 'dev', region: 'eu-west-1' });
      expect(loaded.jobTypes.map((j) => j.name)).toEqual([
        'payment.capture',
        'notification.send',
        'inventory.reserve',
      ]);
      expect(loaded.streamConsumers.map((s) => s.consumer)).toEqual(['cache-invalidator', 'outbox-relay']);
      expect(loaded.degradeFlagName).toBe('/tenang/dev/flags/degrade');
    });

    it('when loaded for another stage and region, it loads with that stage in every name', () => {
      // Act
      const loaded = loadPipelineConfig(referencePipeline('prod', 'us-east-1'));

      // Assess
      expect(loaded.jobTypes.map((j) => j.queueName)).toEqual([
        'tenang-prod-payment-capture.fifo',
        'tenang-prod-notification-send',
        'tenang-prod-inventory-reserve',
      ]);
    });

    it.each([
      { name: 'payment.capture', visibility: 6 * 30 + 0 },
      { name: 'notification.send', visibility: 6 * 20 + 2 },
      { name: 'inventory.reserve', visibility: 6 * 30 + 1 },
    ])('when resolving $name, it derives a $visibility s visibility timeout', ({ name, visibility }) => {
      // Act
      const resolved = job(name);

      // Assess
      expect(resolved.visibilityTimeoutSeconds).toBe(visibility);
    });

    it.each(['payment.capture', 'notification.send', 'inventory.reserve'])(
      'when resolving %s, its DLQ keeps messages for the SQS maximum, longer than its source queue',
      (name) => {
        // Act
        const resolved = job(name);

        // Assess
        expect(resolved.dlqRetentionSeconds).toBe(1_209_600);
        expect(resolved.dlqRetentionSeconds).toBeGreaterThan(resolved.queue.retentionSeconds);
      },
    );

    it.each([
      // attempts × timeout + the backoff ceilings between attempts (base doubling, capped)
      { name: 'payment.capture', attempts: 5, worstCase: 5 * (6 * 30) },
      { name: 'notification.send', attempts: 4, worstCase: 4 * (6 * 20 + 2) },
      { name: 'inventory.reserve', attempts: 6, worstCase: 6 * (6 * 30 + 1) },
    ])(
      'when resolving $name, it allows $attempts attempts and reaches the DLQ within $worstCase s',
      ({ name, attempts, worstCase }) => {
        // Act
        const resolved = job(name);

        // Assess
        expect(resolved.maxAttempts).toBe(attempts);
        expect(resolved.maxAttempts).toBe(resolved.maxReceiveCount);
        expect(resolved.worstCaseSecondsToDlq).toBe(worstCase);
      },
    );

    it.each([
      {
        name: 'payment.capture',
        queueName: 'tenang-dev-payment-capture.fifo',
        dlqName: 'tenang-dev-payment-capture-dlq.fifo',
        pauseFlagName: '/tenang/dev/flags/pause/payment-consumer',
      },
      {
        name: 'notification.send',
        queueName: 'tenang-dev-notification-send',
        dlqName: 'tenang-dev-notification-send-dlq',
        pauseFlagName: '/tenang/dev/flags/pause/notification-consumer',
      },
    ])('when resolving $name, it names its queue $queueName and DLQ $dlqName', ({ name, ...names }) => {
      // Act
      const resolved = job(name);

      // Assess
      expect(resolved).toMatchObject(names);
    });

    it.each([
      { name: 'payment.capture', threshold: 120, warning: 60, evaluationPeriods: 1, datapointsToAlarm: 1 },
      { name: 'notification.send', threshold: 900, warning: 450, evaluationPeriods: 3, datapointsToAlarm: 2 },
      { name: 'inventory.reserve', threshold: 300, warning: 150, evaluationPeriods: 3, datapointsToAlarm: 2 },
    ])(
      'when resolving $name, it alarms at $threshold s ($datapointsToAlarm of $evaluationPeriods) and warns at $warning s',
      ({ name, threshold, warning, evaluationPeriods, datapointsToAlarm }) => {
        // Act
        const resolved = job(name);

        // Assess
        expect(resolved.alarms).toEqual({
          ageThresholdSeconds: threshold,
          ageWarningSeconds: warning,
          periodSeconds: 60,
          evaluationPeriods,
          datapointsToAlarm,
        });
      },
    );

    it('when resolving the stream consumers, it derives their pause flags, failure queues and critical alarms', () => {
      // Act
      const [cacheInvalidator, outboxRelay] = config().streamConsumers;

      // Assess
      expect(cacheInvalidator).toMatchObject({
        pauseFlagName: '/tenang/dev/flags/pause/cache-invalidator',
        onFailureQueueName: 'tenang-dev-cache-invalidator-failures',
        neededForRecovery: false,
        alarms: {
          ageThresholdSeconds: 60,
          ageWarningSeconds: 30,
          evaluationPeriods: 1,
          datapointsToAlarm: 1,
        },
      });
      expect(outboxRelay).toMatchObject({
        pauseFlagName: '/tenang/dev/flags/pause/outbox-relay',
        onFailureQueueName: 'tenang-dev-outbox-relay-failures',
        neededForRecovery: true,
        alarms: {
          ageThresholdSeconds: 300,
          ageWarningSeconds: 150,
          evaluationPeriods: 1,
          datapointsToAlarm: 1,
        },
      });
    });
  });
});

describe('Function: jobTypeByName', () => {
  const config = loadPipelineConfig(referencePipeline('dev', 'eu-west-1'));

  it('when the job type is declared, it returns it with its derived values', () => {
    // Act
    const found = jobTypeByName(config, 'inventory.reserve');

    // Assess
    expect(found).toMatchObject({ name: 'inventory.reserve', queueName: 'tenang-dev-inventory-reserve' });
  });

  it('when the job type is unknown, it throws a PipelineConfigError listing the known names', () => {
    // Act
    const error = rejection(() => jobTypeByName(config, 'payment.refund'));

    // Assess
    expect(error.problems).toEqual([
      'unknown job type "payment.refund"; known: payment.capture, notification.send, inventory.reserve',
    ]);
  });
});

describe('Function: restagePipeline', () => {
  const declaration = referencePipeline('dev', 'us-east-1');
  const config = loadPipelineConfig(declaration);

  it('when given another stage name and region, it equals the declaration loaded with them', () => {
    // Act
    const restaged = restagePipeline(config, 'prod', 'eu-west-1');

    // Assess
    expect(restaged).toEqual(
      loadPipelineConfig({
        ...declaration,
        stage: { ...declaration.stage, name: 'prod', region: 'eu-west-1' },
      }),
    );
    expect(jobTypeByName(restaged, 'inventory.reserve').queueName).toBe('tenang-prod-inventory-reserve');
  });

  it('when the stage name and the region are not valid, it throws one PipelineConfigError naming both', () => {
    // Act
    const error = rejection(() => restagePipeline(config, 'Prod!', 'europe'));

    // Assess
    expect(error.problems).toEqual([problemAt('stage.name'), problemAt('stage.region', 'AWS region')]);
  });
});
