/**
 * DynamoDB and SQS calls per job, tenang's payment consumer against a plain Powertools baseline,
 * side by side against moto: per successful job, per duplicate, and per job that fails once and
 * succeeds on its second receive (both attempts together). Each side runs with real clients, its
 * own FIFO queue and DLQ and the fake payment provider over HTTP; messages reach the handlers
 * through the local platform's event source mapping (receive, records built by toSqsRecord,
 * delete or return), so they are what Lambda would deliver. A middleware on the function's own
 * clients counts every command it sends; the mapping's receives and deletes are not the
 * function's and are not counted.
 *
 * What the calls cost, by AWS's billing rules (harness/aws/capacity.ts): the DynamoDB read and
 * write units of each request, sized on the items read aside before and after it
 * (recordDynamoDbCapacity), on each case's first round only, since those aside reads run inside
 * the handler; the Lambda duration of every invocation of the other rounds (wall time of the
 * handler call, billed rounded up to 1 ms, × the job type's configured memory); the SQS requests
 * in 64 KB chunks of the function and of the mapping (its non-empty receives and its deletes: an
 * idle mapping's empty long polls are no job's). The producer's send is not the consumer's and is
 * left out. Prices: ON_DEMAND_PRICES.
 */
import { CreateTableCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  SendMessageBatchCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { paymentCapture } from '../examples/reference/jobs/payment-capture';
import {
  countSdkCalls,
  recordDynamoDbCapacity,
  recordSqsRequests,
  type DynamoDbCapacityLog,
  type SdkCallLog,
  type SqsRequestLog,
} from '../harness/aws/call-counter';
import { lambdaBilledMs, lambdaGbSeconds } from '../harness/aws/capacity';
import { newDynamoDbClient, newSqsClient } from '../lib/adapters/aws/clients';
import { createJobHandler, jobDepsFromEnv } from '../lib/adapters/define-job';
import { DynamoDbOrderStore } from '../examples/reference/domain/dynamodb-order-store';
import { HttpPaymentProvider } from '../examples/reference/domain/payment-provider';
import { stageConfig } from '../lib/adapters/lambda-env';
import { jobTypeByName, METRIC, TABLE_KEYS, type ResolvedJobType } from '../lib/config';
import { REFERENCE_TABLE_KEYS } from '../examples/reference/domain/tables';
import { METRICS_NAMESPACE } from '../lib/config/metrics';
import { makeEnvelope } from '../lib/core/envelope';
import type { Order } from '../examples/reference/domain/order';
import { paymentCaptureKey } from '../examples/reference/domain/payment';
import { startFakeProvider, type FakeProvider } from '../lib/local/fake-provider';
import type { InvokeResult } from '../lib/local/function-host';
import { pollUntil } from '../lib/local/poll';
import { createBaselinePaymentHandler } from '../harness/powertools-baseline';
import { SqsEventSource } from '../lib/local/sqs-event-source';
import { lambdaContext } from '../lib/local/lambda-context';
import { uniqueName } from '../lib/local/names';
import { FUNCTION_DEFAULTS } from '../lib/infra/defaults';

/** The two consumers compared. */
export type CallsSystem = 'tenang' | 'powertools-baseline';

/** What happens to each job of a case. */
export type CallsCase = 'success' | 'duplicate' | 'failed-then-retried';

/** One service's calls, mean per job. */
export interface ServiceCalls {
  readonly perJob: number;
  /** Mean calls per job by command, without the SDK's "Command" suffix ("TransactWriteItems": 2). */
  readonly byCommand: Readonly<Record<string, number>>;
}

/** One system's figures for one case. */
export interface CallsFigure {
  readonly system: CallsSystem;
  readonly case: CallsCase;
  readonly jobs: number;
  /** DynamoDB commands the function sent. */
  readonly dynamoDb: ServiceCalls;
  /** SQS commands the function sent (retry backoff, DLQ sends); not the mapping's receives and deletes. */
  readonly sqs: ServiceCalls;
  /** Times the mapping delivered each job to the function. */
  readonly deliveriesPerJob: number;
  /** Requests that reached the payment provider, per job (failed ones included). */
  readonly providerRequestsPerJob: number;
  /** Units, requests, duration and cost per job (absent from results written before they were measured). */
  readonly capacity?: CapacityFigure;
}

/**
 * Published on-demand prices, US East (N. Virginia), in USD, read on `asOf`; the benchmark prices
 * its units with them. DynamoDB: Standard table class, after the November 2024 cut of on-demand
 * throughput prices (50 %). SQS: the first tier (up to 100 billion requests a month), FIFO for
 * FIFO queues. Lambda: the first duration tier (6 billion GB-s a month on x86, 7.5 billion on
 * Arm). Free tiers are left out.
 */
export const ON_DEMAND_PRICES = {
  region: 'us-east-1',
  currency: 'USD',
  asOf: '2026-12-02',
  source: {
    dynamoDb: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
    sqs: 'https://aws.amazon.com/sqs/pricing/',
    lambda: 'https://aws.amazon.com/lambda/pricing/',
  },
  dynamoDb: { perMillionWriteRequestUnits: 0.625, perMillionReadRequestUnits: 0.125 },
  sqs: { perMillionStandardRequests: 0.4, perMillionFifoRequests: 0.5 },
  lambda: {
    perMillionRequests: 0.2,
    perGbSecond: { x86_64: 0.0000166667, arm64: 0.0000133334 },
  },
} as const;

/** The price list the figures were computed with. */
export type PriceList = typeof ON_DEMAND_PRICES;

/** The Lambda architectures priced. */
export type LambdaArchitecture = keyof PriceList['lambda']['perGbSecond'];

/** Cost of a million jobs, in `ON_DEMAND_PRICES.currency`, by service. */
export interface JobCost {
  readonly dynamoDb: number;
  readonly sqs: number;
  readonly lambda: number;
  readonly total: number;
}

/** What one system's jobs of one case are billed, mean per job. */
export interface CapacityFigure {
  /** Jobs whose DynamoDB requests were sized (the case's first round). */
  readonly sizedJobs: number;
  readonly readUnitsPerJob: number;
  readonly writeUnitsPerJob: number;
  /** Read and write units per job by command, without the "Command" suffix. */
  readonly unitsByCommand: Readonly<Record<string, { readonly read: number; readonly write: number }>>;
  /** The function's SQS requests per job, in 64 KB chunks. */
  readonly functionSqsRequestsPerJob: number;
  /** The mapping's non-empty receives and its deletes per job, in 64 KB chunks. */
  readonly mappingSqsRequestsPerJob: number;
  /** Invocations per job (Lambda requests), over all rounds. */
  readonly invocationsPerJob: number;
  /** Jobs whose invocations were timed (the rounds after the first). */
  readonly timedJobs: number;
  /**
   * With a single round (jobs ≤ roundSize) nothing is left to time but the sized round: its
   * durations include the aside reads, an overestimate.
   */
  readonly durationIncludesSizing?: boolean;
  /** Billed milliseconds per job (each invocation rounded up to 1 ms). */
  readonly billedMsPerJob: number;
  readonly gbSecondsPerJob: number;
  readonly costPerMillionJobs: JobCost;
}

/** The calls section of the report. */
export interface CallsResults {
  readonly jobsPerCase: number;
  /** The queues' visibility timeout: how long the baseline's failed message waits to return. */
  readonly visibilityTimeoutSeconds: number;
  readonly figures: readonly CallsFigure[];
  /** The job type measured ("payment.capture"): the only one. */
  readonly jobType?: string;
  /** The pipeline's other job types: not measured, no figures. */
  readonly unmeasuredJobTypes?: readonly string[];
  /** The function configuration the Lambda figures assume (the job type's, as deployed). */
  readonly lambda?: { readonly memoryMb: number; readonly architecture: LambdaArchitecture };
  readonly queueKind?: 'fifo' | 'standard';
  /** Jobs per round: the first round of a case is sized, the others timed. */
  readonly roundSize?: number;
  readonly prices?: PriceList;
}

const STAGE = 'bench';
/** Messages in flight at once: one batch's worth, so the queues stay shallow (moto slows with depth). */
const ROUND_SIZE = 10;
/**
 * Short, so the baseline's failed messages return within the run (it has no backoff of its own);
 * every batch here finishes well within it. The counts do not depend on it.
 */
const VISIBILITY_TIMEOUT_SECONDS = 5;
/** Lambda's remaining time as each invocation starts: the function's timeout. */
const REMAINING_MS = 30_000;
/** A job's deliveries, provider requests and outcomes the figures are only valid with. */
const EXPECTED: Record<CallsCase, { deliveries: number; providerRequests: number }> = {
  success: { deliveries: 1, providerRequests: 1 },
  duplicate: { deliveries: 1, providerRequests: 0 },
  'failed-then-retried': { deliveries: 2, providerRequests: 2 },
};
/** The outcome metrics tenang's consumer records for each job of a case. */
const EXPECTED_OUTCOMES: Record<CallsCase, readonly string[]> = {
  success: [METRIC.jobSucceeded],
  duplicate: [METRIC.duplicateIgnored],
  'failed-then-retried': [METRIC.jobRetried, METRIC.jobSucceeded],
};
const OUTCOME_METRICS: ReadonlySet<string> = new Set([
  METRIC.jobSucceeded,
  METRIC.duplicateIgnored,
  METRIC.jobRetried,
  METRIC.jobDeferred,
  METRIC.jobFailedPermanently,
  METRIC.jobBug,
]);

/** Metrics that keep the names of what was recorded and print no EMF (nothing reads it here). */
class RecordingMetrics extends Metrics {
  public readonly names: string[] = [];

  public override addMetric(...args: Parameters<Metrics['addMetric']>): this {
    this.names.push(args[0]);
    return super.addMetric(...args);
  }

  public override publishStoredMetrics(): this {
    this.clearMetrics();
    return this;
  }
}

/** One capture job: its order, payment key and message body. */
interface Job {
  readonly orderId: string;
  readonly key: string;
  readonly body: string;
}

/** Resources shared by both systems. */
interface Shared {
  readonly dynamo: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly provider: FakeProvider;
  readonly jobType: ResolvedJobType;
  readonly ordersTable: string;
  readonly idempotencyTable: string;
}

/** One system under measurement: its handler behind a mapping, and the counters on its clients. */
interface Subject {
  readonly system: CallsSystem;
  readonly queueUrl: string;
  readonly dlqUrl: string;
  readonly source: SqsEventSource;
  readonly dynamoCalls: SdkCallLog;
  readonly sqsCalls: SdkCallLog;
  /** Read and write units of the function's DynamoDB requests (paused outside sized rounds). */
  readonly dynamoCapacity: DynamoDbCapacityLog;
  /** The function's SQS requests and the mapping's, in 64 KB chunks. */
  readonly sqsRequests: SqsRequestLog;
  readonly mappingSqsRequests: SqsRequestLog;
  /** Every invocation: its handler's wall time, and whether its round was timed (not sized). */
  readonly invocations: { durationMs: number; timed: boolean }[];
  /** Whether the current round's invocations are timed. */
  timing: boolean;
  /** Outcome metrics (tenang only: the baseline records none). */
  readonly outcomes?: RecordingMetrics;
  /** Deliveries and completions by message id, as the mapping invoked the handler. */
  readonly deliveries: Map<string, number>;
  readonly done: Set<string>;
  /** Called after every invocation with the jobs' keys that were delivered. */
  afterInvoke: (keys: readonly string[]) => void;
  readonly destroy: () => void;
}

async function createTable(dynamo: DynamoDBClient, name: string, key: string): Promise<void> {
  await dynamo.send(
    new CreateTableCommand({
      TableName: name,
      AttributeDefinitions: [{ AttributeName: key, AttributeType: 'S' }],
      KeySchema: [{ AttributeName: key, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
}

async function queueArn(sqs: SQSClient, url: string): Promise<string> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
  );
  const arn = Attributes?.QueueArn;
  if (arn === undefined) throw new Error(`queue ${url} reported no QueueArn`);
  return arn;
}

/** A FIFO queue and its DLQ, redriven after the job type's receive count; returns both URLs. */
async function createQueues(
  shared: Shared,
  name: string,
  created: string[],
): Promise<{ queueUrl: string; dlqUrl: string }> {
  const create = async (queueName: string, attributes: Record<string, string>): Promise<string> => {
    const { QueueUrl } = await shared.sqs.send(
      new CreateQueueCommand({
        QueueName: `${queueName}.fifo`,
        Attributes: {
          FifoQueue: 'true',
          VisibilityTimeout: String(VISIBILITY_TIMEOUT_SECONDS),
          ...attributes,
        },
      }),
    );
    if (QueueUrl === undefined) throw new Error(`queue ${queueName} was not created`);
    created.push(QueueUrl);
    return QueueUrl;
  };
  const dlqUrl = await create(`${name}-dlq`, {});
  const queueUrl = await create(name, {
    RedrivePolicy: JSON.stringify({
      deadLetterTargetArn: await queueArn(shared.sqs, dlqUrl),
      maxReceiveCount: shared.jobType.maxReceiveCount,
    }),
  });
  return { queueUrl, dlqUrl };
}

/** tenang's payment job as deployed (jobDepsFromEnv and the job's setup), over counted clients. */
function tenangHandler(
  env: Record<string, string>,
  clients: { readonly dynamo: DynamoDBClient; readonly sqs: SQSClient },
  metrics: RecordingMetrics,
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  const deps = jobDepsFromEnv(paymentCapture.name, { ...process.env, ...env });
  // The deps' own clients give way to the counted ones; nothing was sent through them.
  deps.dynamodb?.destroy();
  deps.sqs.destroy();
  return createJobHandler(paymentCapture, {
    ...deps,
    dynamodb: clients.dynamo,
    sqs: clients.sqs,
    logger: new Logger({ serviceName: deps.jobType.consumer, logLevel: 'SILENT' }),
    metrics,
    // A retry waits floor(random × ceiling) s: 0 returns the message at once. The delay is not
    // counted, only the ChangeMessageVisibility that sets it.
    random: () => 0,
  });
}

async function newSubject(
  shared: Shared,
  system: CallsSystem,
  created: string[],
  log: (line: string) => void,
): Promise<Subject> {
  const { queueUrl, dlqUrl } = await createQueues(shared, uniqueName(`bench-${system}`), created);
  const dynamo = newDynamoDbClient();
  const sqs = newSqsClient();
  // The mapping's own client: its receives and deletes are recorded apart from the function's.
  const mappingSqs = newSqsClient();
  const dynamoCalls = countSdkCalls(dynamo);
  const sqsCalls = countSdkCalls(sqs);
  // Items are read aside through the bench's own client, which nothing counts.
  const dynamoCapacity = recordDynamoDbCapacity(dynamo, shared.dynamo);
  dynamoCapacity.pause();
  const sqsRequests = recordSqsRequests(sqs);
  const mappingSqsRequests = recordSqsRequests(mappingSqs);
  let outcomes: RecordingMetrics | undefined;
  let handler: (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;
  if (system === 'tenang') {
    outcomes = new RecordingMetrics({ namespace: METRICS_NAMESPACE, serviceName: system });
    handler = tenangHandler(
      {
        TENANG_STAGE: STAGE,
        AWS_REGION: await dynamo.config.region(),
        ORDERS_TABLE: shared.ordersTable,
        IDEMPOTENCY_TABLE: shared.idempotencyTable,
        PAYMENT_PROVIDER_URL: shared.provider.url,
        QUEUE_URL: queueUrl,
        DLQ_URL: dlqUrl,
      },
      { dynamo, sqs },
      outcomes,
    );
  } else {
    handler = createBaselinePaymentHandler({
      dynamo,
      ordersTable: shared.ordersTable,
      idempotencyTable: shared.idempotencyTable,
      // The timeout the payment job's setup gives its provider (a third of the function's 30 s).
      provider: new HttpPaymentProvider({ baseUrl: shared.provider.url, timeoutMs: 10_000 }),
    });
  }
  const deliveries = new Map<string, number>();
  const done = new Set<string>();
  const subject: Subject = {
    system,
    queueUrl,
    dlqUrl,
    dynamoCalls,
    sqsCalls,
    dynamoCapacity,
    sqsRequests,
    mappingSqsRequests,
    invocations: [],
    timing: false,
    outcomes,
    deliveries,
    done,
    afterInvoke: () => undefined,
    destroy: () => {
      dynamo.destroy();
      sqs.destroy();
      mappingSqs.destroy();
    },
    source: new SqsEventSource(
      {
        uuid: uniqueName('bench-mapping'),
        functionName: system,
        queueUrl,
        queueArn: await queueArn(shared.sqs, queueUrl),
        batchSize: shared.jobType.batch.size,
        batchingWindowSeconds: shared.jobType.batch.windowSeconds,
        // One poller: a failed job's retry is received only after afterInvoke lets it succeed.
        maxConcurrency: 1,
        reportBatchItemFailures: true,
      },
      mappingSqs,
      {
        isEnabled: () => true,
        invoke: async (event): Promise<InvokeResult> => {
          const started = Date.now();
          const context = lambdaContext(REMAINING_MS, system);
          // Lambda bills from the handler's start to its return: the wall time of this call.
          const t0 = performance.now();
          const timed = subject.timing;
          const stopClock = (): void => {
            subject.invocations.push({ durationMs: performance.now() - t0, timed });
          };
          let failed: Set<string>;
          let result: InvokeResult;
          try {
            const response = await handler(event, context);
            stopClock();
            failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
            result = { status: 'ok', result: response, durationMs: Date.now() - started, coldStart: false };
          } catch (error) {
            stopClock();
            // Powertools throws when every record failed: Lambda returns the whole batch.
            failed = new Set(event.Records.map((r) => r.messageId));
            result = {
              status: 'error',
              errorType: error instanceof Error ? error.name : 'Error',
              errorMessage: error instanceof Error ? error.message : String(error),
              durationMs: Date.now() - started,
              coldStart: false,
            };
          }
          for (const r of event.Records) {
            deliveries.set(r.messageId, (deliveries.get(r.messageId) ?? 0) + 1);
            if (!failed.has(r.messageId)) done.add(r.messageId);
          }
          subject.afterInvoke(event.Records.map((r) => keyOf(r.body)));
          return result;
        },
      },
      (line) => log(`calls: mapping ${line}`),
    ),
  };
  subject.source.start();
  return subject;
}

function keyOf(body: string): string {
  return (JSON.parse(body) as { idempotencyKey: string }).idempotencyKey;
}

/** New PENDING orders of 12.50 EUR and a capture job for each. */
async function newJobs(shared: Shared, count: number): Promise<Job[]> {
  const orders = new DynamoDbOrderStore(shared.dynamo, shared.ordersTable);
  const jobs: Job[] = [];
  for (let i = 0; i < count; i += 1) {
    const orderId = uniqueName('order');
    const paymentId = uniqueName('pay');
    const now = new Date();
    const order: Order = {
      orderId,
      state: 'PENDING',
      version: 0,
      customerEmail: 'ana@example.com',
      lines: [{ sku: 'sku-1', quantity: 1 }],
      amountMinor: 1250,
      currency: 'EUR',
      createdAt: now.toISOString(),
      updatedAt: now.toISOString(),
    };
    if (!(await orders.create(order))) throw new Error(`order ${orderId} exists`);
    const key = paymentCaptureKey(paymentId);
    const envelope = makeEnvelope(
      'payment.capture',
      { orderId, paymentId, amountMinor: 1250, currency: 'EUR' },
      { idempotencyKey: key, correlationId: uniqueName('corr'), now },
    );
    jobs.push({ orderId, key, body: JSON.stringify(envelope) });
  }
  return jobs;
}

/** Sends `jobs` (each its own FIFO group, a fresh dedup id) and waits until the function finished them all. */
async function runRound(shared: Shared, subject: Subject, jobs: readonly Job[]): Promise<readonly string[]> {
  const deletedBefore = subject.source.stats.deleted;
  const { Successful = [], Failed = [] } = await shared.sqs.send(
    new SendMessageBatchCommand({
      QueueUrl: subject.queueUrl,
      Entries: jobs.map((job, i) => ({
        Id: String(i),
        MessageBody: job.body,
        MessageGroupId: job.orderId,
        MessageDeduplicationId: uniqueName('dedup'),
      })),
    }),
  );
  if (Failed.length > 0)
    throw new Error(`${Failed.length} of ${jobs.length} sends to ${subject.queueUrl} failed`);
  const ids = Successful.map((s) => s.MessageId ?? '');
  await pollUntil(
    () =>
      Promise.resolve(
        ids.every((id) => subject.done.has(id)) && subject.source.stats.deleted - deletedBefore >= ids.length
          ? true
          : undefined,
      ),
    { description: `${subject.system} to finish ${ids.length} jobs`, deadlineMs: 60_000, intervalMs: 50 },
  );
  return ids;
}

function serviceCalls(calls: readonly string[], jobs: number): ServiceCalls {
  const byCommand: Record<string, number> = {};
  for (const call of calls) {
    const name = call.replace(/Command$/, '');
    byCommand[name] = (byCommand[name] ?? 0) + 1;
  }
  for (const name of Object.keys(byCommand)) byCommand[name] = (byCommand[name] ?? 0) / jobs;
  return { perJob: calls.length / jobs, byCommand };
}

/** Runs one case for one system over `jobs`, round by round; checks the outcome before trusting the counts. */
async function measureCase(
  shared: Shared,
  subject: Subject,
  kind: CallsCase,
  jobs: readonly Job[],
): Promise<CallsFigure> {
  const requestsBefore = shared.provider.requestCount();
  const outcomesBefore = subject.outcomes?.names.length ?? 0;
  subject.dynamoCalls.reset();
  subject.sqsCalls.reset();
  subject.dynamoCapacity.reset();
  subject.sqsRequests.reset();
  subject.mappingSqsRequests.reset();
  subject.invocations.length = 0;
  const ids: string[] = [];
  for (let i = 0; i < jobs.length; i += ROUND_SIZE) {
    const round = jobs.slice(i, i + ROUND_SIZE);
    // The first round is sized: its aside reads run inside the handler, so it is not timed.
    const sized = i === 0;
    if (sized) subject.dynamoCapacity.resume();
    else subject.dynamoCapacity.pause();
    subject.timing = !sized;
    if (kind === 'failed-then-retried') {
      // The provider refuses each job's first request only: its second delivery succeeds.
      const failing = new Set(round.map((j) => j.key));
      shared.provider.set({ failingKeys: [...failing] });
      subject.afterInvoke = (keys) => {
        for (const key of keys) failing.delete(key);
        shared.provider.set({ failingKeys: [...failing] });
      };
    }
    try {
      ids.push(...(await runRound(shared, subject, round)));
    } finally {
      subject.afterInvoke = () => undefined;
      shared.provider.set({ failingKeys: [] });
      subject.dynamoCapacity.pause();
      subject.timing = false;
    }
  }
  const dynamoCalls = subject.dynamoCalls.calls();
  const sqsCalls = subject.sqsCalls.calls();
  const figure: CallsFigure = {
    system: subject.system,
    case: kind,
    jobs: jobs.length,
    dynamoDb: serviceCalls(dynamoCalls, jobs.length),
    sqs: serviceCalls(sqsCalls, jobs.length),
    deliveriesPerJob: ids.reduce((s, id) => s + (subject.deliveries.get(id) ?? 0), 0) / jobs.length,
    providerRequestsPerJob: (shared.provider.requestCount() - requestsBefore) / jobs.length,
    capacity: capacityFigure(shared, subject, jobs.length),
  };
  await checkCase(shared, subject, kind, jobs, figure, outcomesBefore);
  return figure;
}

/** The function configuration the Lambda figures assume: the job type's memory, the functions' architecture. */
function lambdaConfig(jobType: ResolvedJobType): { memoryMb: number; architecture: LambdaArchitecture } {
  const architecture = FUNCTION_DEFAULTS.architecture.name;
  if (architecture !== 'arm64' && architecture !== 'x86_64')
    throw new Error(`no Lambda price for architecture ${architecture}`);
  return { memoryMb: jobType.function.memoryMb, architecture };
}

/** The cost of a million jobs billed `c`'s units, at `prices`. */
export function costPerMillionJobs(
  c: Omit<CapacityFigure, 'costPerMillionJobs'>,
  prices: PriceList,
  queueKind: 'fifo' | 'standard',
  architecture: LambdaArchitecture,
): JobCost {
  // Per-million prices × units per job = price per million jobs.
  const dynamoDb =
    c.writeUnitsPerJob * prices.dynamoDb.perMillionWriteRequestUnits +
    c.readUnitsPerJob * prices.dynamoDb.perMillionReadRequestUnits;
  const sqs =
    (c.functionSqsRequestsPerJob + c.mappingSqsRequestsPerJob) *
    (queueKind === 'fifo' ? prices.sqs.perMillionFifoRequests : prices.sqs.perMillionStandardRequests);
  const lambda =
    c.invocationsPerJob * prices.lambda.perMillionRequests +
    c.gbSecondsPerJob * prices.lambda.perGbSecond[architecture] * 1_000_000;
  return { dynamoDb, sqs, lambda, total: dynamoDb + sqs + lambda };
}

/** Units, requests and duration per job of the case just run; throws if a request went unsized. */
function capacityFigure(shared: Shared, subject: Subject, jobs: number): CapacityFigure {
  const records = subject.dynamoCapacity.records();
  const unsized = records.filter((r) => r.outcome === 'unmeasured');
  if (unsized.length > 0)
    throw new Error(
      `calls: ${subject.system}: ${unsized.length} DynamoDB requests unsized: ${unsized.map((r) => `${r.command} (${r.problem ?? '?'})`).join('; ')}`,
    );
  const sizedJobs = Math.min(ROUND_SIZE, jobs);
  const unitsByCommand: Record<string, { read: number; write: number }> = {};
  for (const r of records) {
    const name = r.command.replace(/Command$/, '');
    const u = (unitsByCommand[name] ??= { read: 0, write: 0 });
    u.read += r.readUnits / sizedJobs;
    u.write += r.writeUnits / sizedJobs;
  }
  // With a single round, the sized round's durations are all there is (an overestimate, flagged).
  const durationIncludesSizing = jobs <= sizedJobs;
  const timed = durationIncludesSizing ? subject.invocations : subject.invocations.filter((i) => i.timed);
  const timedJobs = durationIncludesSizing ? jobs : jobs - sizedJobs;
  const { memoryMb, architecture } = lambdaConfig(shared.jobType);
  // The mapping's empty receives are idle polling, not any job's; GetQueueAttributes is the local
  // mapping's own (Lambda's pollers do not send it per batch).
  const mapping = subject.mappingSqsRequests
    .records()
    .filter((r) =>
      r.command === 'ReceiveMessageCommand' ? r.messages > 0 : r.command !== 'GetQueueAttributesCommand',
    );
  const sum = (xs: readonly number[]): number => xs.reduce((s, x) => s + x, 0);
  const figure: Omit<CapacityFigure, 'costPerMillionJobs'> = {
    sizedJobs,
    readUnitsPerJob: sum(records.map((r) => r.readUnits)) / sizedJobs,
    writeUnitsPerJob: sum(records.map((r) => r.writeUnits)) / sizedJobs,
    unitsByCommand,
    functionSqsRequestsPerJob: sum(subject.sqsRequests.records().map((r) => r.requests)) / jobs,
    mappingSqsRequestsPerJob: sum(mapping.map((r) => r.requests)) / jobs,
    invocationsPerJob: subject.invocations.length / jobs,
    timedJobs,
    ...(durationIncludesSizing ? { durationIncludesSizing } : {}),
    billedMsPerJob: sum(timed.map((i) => lambdaBilledMs(i.durationMs))) / timedJobs,
    gbSecondsPerJob: sum(timed.map((i) => lambdaGbSeconds(i.durationMs, memoryMb))) / timedJobs,
  };
  return {
    ...figure,
    costPerMillionJobs: costPerMillionJobs(figure, ON_DEMAND_PRICES, shared.jobType.queue.kind, architecture),
  };
}

/** Throws unless every job ended as the case intends: counts of another outcome mean nothing. */
async function checkCase(
  shared: Shared,
  subject: Subject,
  kind: CallsCase,
  jobs: readonly Job[],
  figure: CallsFigure,
  outcomesBefore: number,
): Promise<void> {
  const problems: string[] = [];
  const expected = EXPECTED[kind];
  if (figure.deliveriesPerJob !== expected.deliveries)
    problems.push(`${figure.deliveriesPerJob} deliveries per job, expected ${expected.deliveries}`);
  if (figure.providerRequestsPerJob !== expected.providerRequests)
    problems.push(
      `${figure.providerRequestsPerJob} provider requests per job, expected ${expected.providerRequests}`,
    );
  if (subject.outcomes !== undefined) {
    const seen = subject.outcomes.names.slice(outcomesBefore).filter((n) => OUTCOME_METRICS.has(n));
    const wanted = EXPECTED_OUTCOMES[kind].flatMap((n) => jobs.map(() => n));
    if ([...seen].sort().join() !== [...wanted].sort().join())
      problems.push(`outcomes ${summarize(seen)}, expected ${summarize(wanted)}`);
  }
  const ledger = shared.provider.ledger();
  const orders = new DynamoDbOrderStore(shared.dynamo, shared.ordersTable);
  for (const job of jobs) {
    const charges = ledger.filter((e) => e.idempotencyKey === job.key).length;
    if (charges !== 1) problems.push(`${job.key}: ${charges} charges`);
    const order = await orders.get(job.orderId);
    if (order?.state !== 'PAID' || order.version !== 1)
      problems.push(
        `${job.orderId}: ${order?.state ?? 'missing'} v${order?.version ?? '-'}, expected PAID v1`,
      );
  }
  const { Attributes = {} } = await shared.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: subject.dlqUrl,
      AttributeNames: ['ApproximateNumberOfMessages'],
    }),
  );
  if (Attributes.ApproximateNumberOfMessages !== '0')
    problems.push(`${Attributes.ApproximateNumberOfMessages ?? '?'} messages in the DLQ`);
  if (problems.length > 0) {
    throw new Error(
      `calls: ${subject.system} ${kind} did not go as intended:\n  ${problems.slice(0, 10).join('\n  ')}`,
    );
  }
}

function summarize(names: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const n of names) counts.set(n, (counts.get(n) ?? 0) + 1);
  return [...counts].map(([n, c]) => `${n}×${c}`).join(', ') || 'none';
}

/**
 * Measures both systems in every case, `jobs` jobs each, against `awsEndpoint` (the clients read
 * it from AWS_ENDPOINT_URL, as the functions' clients do).
 */
export async function measureCalls(opts: {
  awsEndpoint: string;
  jobs: number;
  log: (line: string) => void;
}): Promise<CallsResults> {
  if (!Number.isInteger(opts.jobs) || opts.jobs < 1)
    throw new Error(`--jobs must be a positive integer, got ${opts.jobs}`);
  opts.log(`calls: ${opts.jobs} jobs per case and consumer against ${opts.awsEndpoint}`);
  const dynamo = newDynamoDbClient();
  const sqs = newSqsClient();
  const provider = await startFakeProvider({ kind: 'charges' });
  const tables: string[] = [];
  const queues: string[] = [];
  const subjects: Subject[] = [];
  try {
    const pipeline = stageConfig(STAGE, await dynamo.config.region());
    const shared: Shared = {
      dynamo,
      sqs,
      provider,
      jobType: jobTypeByName(pipeline, 'payment.capture'),
      ordersTable: uniqueName('bench-orders'),
      idempotencyTable: uniqueName('bench-idempotency'),
    };
    await createTable(dynamo, shared.ordersTable, REFERENCE_TABLE_KEYS.orders.partitionKey);
    tables.push(shared.ordersTable);
    await createTable(dynamo, shared.idempotencyTable, TABLE_KEYS.idempotency.partitionKey);
    tables.push(shared.idempotencyTable);
    for (const system of ['tenang', 'powertools-baseline'] as const) {
      subjects.push(await newSubject(shared, system, queues, opts.log));
    }
    const figures: CallsFigure[] = [];
    const succeeded = new Map<CallsSystem, Job[]>();
    for (const kind of ['success', 'duplicate', 'failed-then-retried'] as const) {
      for (const subject of subjects) {
        // A duplicate is a success's job sent again (a producer retry past FIFO's 5-minute dedup window).
        const jobs =
          kind === 'duplicate' ? (succeeded.get(subject.system) ?? []) : await newJobs(shared, opts.jobs);
        const figure = await measureCase(shared, subject, kind, jobs);
        if (kind === 'success') succeeded.set(subject.system, jobs);
        opts.log(
          `calls ${subject.system} ${kind}: ${figure.dynamoDb.perJob.toFixed(2)} DynamoDB + ${figure.sqs.perJob.toFixed(2)} SQS calls per job (${commandList(figure)})`,
        );
        const c = figure.capacity;
        if (c !== undefined)
          opts.log(
            `calls ${subject.system} ${kind}: ${c.writeUnitsPerJob} WRU + ${c.readUnitsPerJob} RRU, ${(c.functionSqsRequestsPerJob + c.mappingSqsRequestsPerJob).toFixed(2)} SQS requests, ${c.invocationsPerJob.toFixed(2)} invocations, ${c.billedMsPerJob.toFixed(1)} billed ms per job; $${c.costPerMillionJobs.total.toFixed(2)} per million jobs`,
          );
        figures.push(figure);
      }
    }
    return {
      jobsPerCase: opts.jobs,
      visibilityTimeoutSeconds: VISIBILITY_TIMEOUT_SECONDS,
      figures,
      jobType: shared.jobType.name,
      unmeasuredJobTypes: pipeline.jobTypes.map((j) => j.name).filter((n) => n !== shared.jobType.name),
      lambda: lambdaConfig(shared.jobType),
      queueKind: shared.jobType.queue.kind,
      roundSize: ROUND_SIZE,
      prices: ON_DEMAND_PRICES,
    };
  } finally {
    await Promise.all(subjects.map((s) => s.source.stop()));
    for (const s of subjects) s.destroy();
    await provider.close();
    for (const url of queues)
      await sqs.send(new DeleteQueueCommand({ QueueUrl: url })).catch((error: unknown) => {
        opts.log(`calls: could not delete queue ${url}: ${String(error)}`);
      });
    for (const table of tables)
      await dynamo.send(new DeleteTableCommand({ TableName: table })).catch((error: unknown) => {
        opts.log(`calls: could not delete table ${table}: ${String(error)}`);
      });
    dynamo.destroy();
    sqs.destroy();
  }
}

/** "TransactWriteItems 2, ChangeMessageVisibility 1": mean calls per job by command. */
export function commandList(figure: CallsFigure): string {
  const entries = [...Object.entries(figure.dynamoDb.byCommand), ...Object.entries(figure.sqs.byCommand)];
  if (entries.length === 0) return 'none';
  return entries.map(([name, n]) => `${name} ${Number(n.toFixed(2))}`).join(', ');
}
