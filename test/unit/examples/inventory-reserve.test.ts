import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import {
  ChangeMessageVisibilityCommand,
  SendMessageCommand,
  SQSClient,
  type SendMessageCommandInput,
} from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import { inventoryReserve, leaseTtlMs } from '../../../examples/reference/jobs/inventory-reserve';
import { DLQ_ATTRIBUTE } from '../../../lib/adapters/aws/sqs-job-runner';
import { createJobHandler } from '../../../lib/adapters/define-job';
import { InMemoryInventoryStore } from '../../../harness/fakes/memory-inventory-store';
import { InMemoryLockStore } from '../../../harness/fakes/memory-lock-store';
import { stageConfig } from '../../../lib/adapters/lambda-env';
import { jobTypeByName, METRIC } from '../../../lib/config';
import { skuLockResource } from '../../../examples/reference/domain/inventory';
import { LeaseLock } from '../../../lib/core/lease-lock';
import { jobRecord, sqsEvent } from '../../helpers/job-records';
import { manualClock, sequentialTokens, type ManualClock } from '../../helpers/manual-clock';
import { lambdaContext } from '../../helpers/sqs-events';

const ENV = {
  QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-unit-inventory-reserve',
  DLQ_URL: 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-unit-inventory-reserve-dlq',
};
const JOB_TYPE = jobTypeByName(stageConfig('unit', 'eu-west-1'), 'inventory.reserve');
const SKU = 'sku-1';
const SERVICE_NAME = 'inventory-consumer';
const sqsMock = mockClient(SQSClient);

beforeEach(() => {
  sqsMock.reset();
  sqsMock.on(SendMessageCommand).resolves({ MessageId: 'resent' });
  sqsMock.on(ChangeMessageVisibilityCommand).resolves({});
});

afterEach(() => {
  jest.restoreAllMocks();
});

interface Fixture {
  readonly clock: ManualClock;
  readonly locks: InMemoryLockStore;
  readonly inventory: InMemoryInventoryStore;
  readonly metrics: Metrics;
  readonly handler: ReturnType<typeof createJobHandler>;
}

function fixture(opts: { stock?: number; degraded?: boolean; unleased?: boolean } = {}): Fixture {
  const clock = manualClock();
  const locks = new InMemoryLockStore();
  const inventory = new InMemoryInventoryStore();
  inventory.seed(SKU, opts.stock ?? 10);
  const metrics = new Metrics({ namespace: 'tenang', serviceName: SERVICE_NAME });
  jest.spyOn(metrics, 'addMetric');
  jest.spyOn(metrics, 'publishStoredMetrics').mockReturnThis();
  const handler = createJobHandler(inventoryReserve, {
    jobType: JOB_TYPE,
    queueUrl: ENV.QUEUE_URL,
    dlqUrl: ENV.DLQ_URL,
    sqs: new SQSClient({ region: 'eu-west-1' }),
    logger: new Logger({ serviceName: SERVICE_NAME, logLevel: 'SILENT' }),
    metrics,
    state: {
      locks,
      inventory,
      ...(opts.unleased === true ? { unleased: inventory.unleased(locks) } : {}),
      leaseTtlMs: leaseTtlMs(JOB_TYPE),
      every: () => () => undefined,
      newToken: sequentialTokens('consumer'),
    },
    isDegraded: () => Promise.resolve(opts.degraded ?? false),
    random: () => 0,
    clock,
  });
  return { clock, locks, inventory, metrics, handler };
}

function reservation(messageId: string, orderId = 'order-1', quantity = 3): ReturnType<typeof jobRecord> {
  return jobRecord({ type: 'inventory.reserve', payload: { orderId, sku: SKU, quantity }, messageId });
}

function resent(): SendMessageCommandInput[] {
  return sqsMock.commandCalls(SendMessageCommand).map((call) => call.args[0].input);
}

describe('Job: inventory.reserve (createJobHandler)', () => {
  it('when the SKU is free, it reserves the stock, releases the lock and the record succeeds', async () => {
    // Prepare
    const { handler, inventory, locks, metrics } = fixture();

    // Act
    const response = await handler(sqsEvent(reservation('m-1')), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect((await inventory.get(SKU))?.available).toBe(7);
    expect((await locks.get(skuLockResource(SKU)))?.holder).toBeUndefined();
    expect(metrics.addMetric).toHaveBeenCalledWith(METRIC.jobSucceeded, 'Count', 1);
  });

  it('when the lock is busy, it defers the message with a delay and counts lock contention and lock age', async () => {
    // Prepare
    const { handler, locks, clock, metrics, inventory } = fixture();
    const rival = new LeaseLock({ store: locks, clock, newToken: () => 'rival' });
    await rival.acquire(skuLockResource(SKU), 10_000);
    clock.advance(4_000);

    // Act
    const response = await handler(sqsEvent(reservation('m-1')), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(resent()).toEqual([expect.objectContaining({ QueueUrl: ENV.QUEUE_URL, DelaySeconds: 6 })]);
    expect(metrics.addMetric).toHaveBeenCalledWith(METRIC.lockContention, 'Count', 1);
    expect(metrics.addMetric).toHaveBeenCalledWith(METRIC.lockAge, 'Milliseconds', 4_000);
    expect(metrics.addMetric).toHaveBeenCalledWith(METRIC.jobDeferred, 'Count', 1);
    expect((await inventory.get(SKU))?.available).toBe(10);
  });

  it('when the stage is degraded, it defers the reservation without touching the lock', async () => {
    // Prepare
    const { handler, locks } = fixture({ degraded: true });

    // Act
    const response = await handler(sqsEvent(reservation('m-1')), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(resent()).toEqual([expect.objectContaining({ QueueUrl: ENV.QUEUE_URL, DelaySeconds: 60 })]);
    expect(await locks.get(skuLockResource(SKU))).toBeUndefined();
  });

  it('when stock is short, it sends the message to the DLQ at once with the error class and message', async () => {
    // Prepare
    const { handler } = fixture({ stock: 1 });

    // Act
    const response = await handler(sqsEvent(reservation('m-1')), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    const [dead] = resent();
    expect(dead?.QueueUrl).toBe(ENV.DLQ_URL);
    expect(dead?.MessageAttributes?.[DLQ_ATTRIBUTE.errorClass]?.StringValue).toBe('InsufficientStockError');
    expect(dead?.MessageAttributes?.[DLQ_ATTRIBUTE.errorMessage]?.StringValue).toBe(
      'insufficient stock for SKU sku-1: 3 requested, 1 available',
    );
  });

  it('when the same order arrives again, it reports a duplicate and reserves once', async () => {
    // Prepare
    const { handler, inventory, metrics } = fixture();
    await handler(sqsEvent(reservation('m-1')), lambdaContext());

    // Act
    const response = await handler(sqsEvent(reservation('m-2')), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect((await inventory.get(SKU))?.available).toBe(7);
    expect(metrics.addMetric).toHaveBeenCalledWith(METRIC.duplicateIgnored, 'Count', 1);
  });

  it('when a newer holder wrote first (stale fence), it retries the message with backoff instead of the DLQ', async () => {
    // Prepare
    const { handler, inventory } = fixture();
    const reserve = inventory.reserve.bind(inventory);
    jest.spyOn(inventory, 'reserve').mockImplementationOnce(async (request) => {
      await reserve({ ...request, orderId: 'order-newer', fence: request.fence + 1 });
      return reserve(request);
    });

    // Act
    const response = await handler(sqsEvent(reservation('m-1')), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([{ itemIdentifier: 'm-1' }]);
    expect(sqsMock).toHaveReceivedCommandTimes(ChangeMessageVisibilityCommand, 1);
    expect(resent()).toEqual([]);
  });

  it('when two records in one batch want the same SKU, one reserves and the other is deferred', async () => {
    // Prepare
    const { handler, inventory } = fixture();

    // Act
    const response = await handler(
      sqsEvent(reservation('m-1', 'order-1', 1), reservation('m-2', 'order-2', 1)),
      lambdaContext(),
    );

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect((await inventory.get(SKU))?.available).toBe(9);
    expect(resent()).toHaveLength(1);
  });

  it('when its release is refused (the lease was taken over meanwhile), it logs a warning', async () => {
    // Prepare
    const { handler, locks } = fixture();
    jest.spyOn(locks, 'release').mockResolvedValueOnce({ released: false, holder: undefined });
    const warn = jest.spyOn(Logger.prototype, 'warn');

    // Act
    await handler(sqsEvent(reservation('m-1')), lambdaContext());

    // Assess
    expect(warn).toHaveBeenCalledWith(
      'lock release refused: this owner no longer holds the lease',
      expect.objectContaining({ resource: skuLockResource(SKU) }),
    );
  });
});

describe('Job: inventory.reserve with the lease-free path (as deployed)', () => {
  it('when the SKU is free, it reserves without ever taking a lease and the record succeeds', async () => {
    // Prepare
    const { handler, inventory, locks, clock } = fixture({ unleased: true });
    const acquire = jest.spyOn(locks, 'tryAcquire');
    const info = jest.spyOn(Logger.prototype, 'info');

    // Act
    const response = await handler(sqsEvent(reservation('m-1')), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect((await inventory.get(SKU))?.available).toBe(7);
    expect(acquire).not.toHaveBeenCalled();
    expect((await locks.get(skuLockResource(SKU)))?.fence).toBe(clock.ms());
    expect(info).toHaveBeenCalledWith(
      'stock reserved',
      expect.objectContaining({ fence: clock.ms(), via: 'transaction' }),
    );
  });

  it('when a live lease holds the SKU (a stuck holder), it defers the message and counts lock contention and lock age', async () => {
    // Prepare
    const { handler, locks, clock, metrics, inventory } = fixture({ unleased: true });
    const stuck = new LeaseLock({ store: locks, clock, newToken: () => 'stuck' });
    await stuck.acquire(skuLockResource(SKU), 10_000);
    clock.advance(4_000);

    // Act
    const response = await handler(sqsEvent(reservation('m-1')), lambdaContext());

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect(resent()).toEqual([expect.objectContaining({ QueueUrl: ENV.QUEUE_URL, DelaySeconds: 6 })]);
    expect(metrics.addMetric).toHaveBeenCalledWith(METRIC.lockContention, 'Count', 1);
    expect(metrics.addMetric).toHaveBeenCalledWith(METRIC.lockAge, 'Milliseconds', 4_000);
    expect((await inventory.get(SKU))?.available).toBe(10);
  });

  it('when two records in one batch want the same SKU in the same millisecond, the second takes the lease path and both reserve', async () => {
    // Prepare
    const { handler, inventory } = fixture({ unleased: true });
    const info = jest.spyOn(Logger.prototype, 'info');

    // Act
    const response = await handler(
      sqsEvent(reservation('m-1', 'order-1', 1), reservation('m-2', 'order-2', 1)),
      lambdaContext(),
    );

    // Assess
    expect(response.batchItemFailures).toEqual([]);
    expect((await inventory.get(SKU))?.available).toBe(8);
    expect(info).toHaveBeenCalledWith(
      'reservation took the lease path',
      expect.objectContaining({ sku: SKU }),
    );
  });
});

describe('Function: leaseTtlMs', () => {
  it('when derived from the reference job type, it is a third of the function timeout', () => {
    // Act
    const ttl = leaseTtlMs(JOB_TYPE);

    // Assess
    expect(ttl).toBe((JOB_TYPE.function.timeoutSeconds * 1000) / 3);
  });
});
