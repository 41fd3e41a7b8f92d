/**
 * Small, valid pipeline declarations for config tests. Each builder returns a fresh object
 * that a test overrides with a spread, so a test states only the field it is about.
 */
import type { JobTypeInput, PipelineInput, StageInput, StreamConsumerInput } from '../../../lib/config';

/** A valid stage. */
export function stageInput(overrides: Partial<StageInput> = {}): StageInput {
  return {
    name: 'test',
    region: 'eu-west-1',
    alarmTopic: { name: 'tenang-test-alarms' },
    providers: { payment: 'https://pay.test', messaging: 'https://msg.test' },
    cache: { ttlSeconds: 300, ttlJitterRatio: 0.2, loadLockMs: 2_000, commandTimeoutMs: 250 },
    ...overrides,
  };
}

/** A valid standard-queue job type; no cross-field rule is near its limit. */
export function jobTypeInput(overrides: Partial<JobTypeInput> = {}): JobTypeInput {
  return {
    name: 'order.ship',
    consumer: 'ship-consumer',
    entry: 'jobs/order-ship.ts',
    queue: { kind: 'standard' },
    function: { timeoutSeconds: 10, memoryMb: 256 },
    batch: { size: 5, maxConcurrency: 2 },
    maxReceiveCount: 3,
    retry: { baseDelaySeconds: 2, maxDelaySeconds: 60 },
    criticality: 'deferrable',
    latencyObjectiveSeconds: 300,
    owner: 'test-team',
    idempotent: true,
    pauseCost: 'Shipments wait; nothing is lost.',
    runbook: 'order-ship',
    ...overrides,
  };
}

/** A valid FIFO job type (grouped by order). */
export function fifoJobTypeInput(overrides: Partial<JobTypeInput> = {}): JobTypeInput {
  return jobTypeInput({ queue: { kind: 'fifo', groupBy: 'orderId' }, ...overrides });
}

/** A valid stream consumer. */
export function streamConsumerInput(overrides: Partial<StreamConsumerInput> = {}): StreamConsumerInput {
  return {
    consumer: 'cache-invalidator',
    table: 'orders',
    entry: 'functions/cache-invalidator.ts',
    function: { timeoutSeconds: 10, memoryMb: 256 },
    batchSize: 100,
    retryAttempts: 3,
    maxRecordAgeSeconds: 3_600,
    latencyObjectiveSeconds: 60,
    owner: 'platform-team',
    pauseCost: 'Cached orders go stale until their TTL.',
    runbook: 'stale-cache',
    ...overrides,
  };
}

/** A valid pipeline: one job type and one stream consumer with distinct consumer names. */
export function pipelineInput(overrides: Partial<PipelineInput> = {}): PipelineInput {
  return {
    stage: stageInput(),
    tables: [{ name: 'orders', partitionKey: 'orderId', stream: 'NEW_AND_OLD_IMAGES' }],
    jobTypes: [jobTypeInput()],
    streamConsumers: [streamConsumerInput()],
    ...overrides,
  };
}
