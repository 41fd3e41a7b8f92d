/**
 * Bench section `latency`: two latencies the compass had no number for, on the
 * local platform.
 *
 * - Enqueue → done per job type: jobs sent one at a time at a steady rate straight to the job's
 *   queue; done is when the queue mapping deleted the message (LocalPlatform's onMessagesDeleted).
 *   Against it, the bare loop: the very same poller (SqsEventSource, the job's mapping settings)
 *   on a queue of the same kind on the same moto, driving a function that does nothing, with the
 *   same messages at the same rate. The difference is what the function host and the handler add.
 * - Invalidation lag: an order's version raised with UpdateItem at a random phase of the stream
 *   poll, until its cache key holds the invalidator's tombstone at the new version, read from Redis
 *   every few milliseconds; set against the stream poll interval.
 */
import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  SendMessageCommand,
  type SendMessageCommandInput,
} from '@aws-sdk/client-sqs';
import { DynamoDbOrderStore } from '../examples/reference/domain/dynamodb-order-store';
import { connectRedis } from '../lib/adapters/redis/connect';
import { RedisCache } from '../lib/adapters/redis/redis-cache';
import { startBacklogPlatform, undeleted, type BacklogPlatform } from '../harness/chaos/backlog-experiment';
import { jobTypeSlug, METRIC, type QueueKind, type ResolvedJobType } from '../lib/config';
import { REFERENCE_TABLE_KEYS } from '../examples/reference/domain/tables';
import { cacheKeyspace } from '../lib/core/cache-keys';
import { orderCacheKey } from '../examples/reference/domain/order-cache';
import { paymentCaptureKey } from '../examples/reference/domain/payment';
import type { JobTypeName, PayloadOf } from '../examples/reference/domain/payloads';
import { withDrillContext, type DrillContext, type RunDrillOptions } from '../lib/drills/drill';
import { jobTarget } from '../lib/drills/support';
import { createOrder, seedSku, tables } from '../examples/reference/drills/support';
import type { InvokeResult } from '../lib/local/function-host';
import { declaredJobMessage } from '../lib/local/scenario-declared-jobs';
import { SqsEventSource, type SqsMappingSpec } from '../lib/local/sqs-event-source';
import { latencyPercentiles, type LatencyPercentiles } from '../harness/stampede';
import { IDLE_WAIT_MS } from '../lib/local/stream-event-source';

/** Sizes of one run. */
export interface LatencySizes {
  /** Jobs timed per job type (each sent once to the platform and once to the bare loop). */
  readonly jobsPerType: number;
  /**
   * Jobs sent first at the same rate and not timed, so the figures are of warm function
   * instances (steady load), not of the first invocations' cold starts.
   */
  readonly warmupPerType: number;
  /** Jobs per second, sent one at a time. */
  readonly ratePerSecond: number;
  /**
   * Rounds of platform run and bare-loop run, alternating which goes first; their samples are
   * pooled. Where a mapping has a batching window, a job's time depends on where it lands in the
   * window, and one round of a few batches gives a median that moves by hundreds of ms.
   */
  readonly rounds: number;
  /** Order updates whose invalidation is timed. */
  readonly invalidations: number;
}

/** The bench's sizes. */
export const DEFAULT_LATENCY_SIZES: LatencySizes = {
  jobsPerType: 40,
  warmupPerType: 5,
  ratePerSecond: 5,
  rounds: 4,
  invalidations: 40,
};

/**
 * What the function host and the handler may add to a job's enqueue → done median over the bare
 * loop, ms: a warm invocation (IPC to the instance, the envelope parsed, a few DynamoDB or
 * provider calls on one emulator) and nothing that waits.
 */
export const JOB_P50_OVERHEAD_TARGET_MS = 250;

/**
 * What an invalidation may take beyond one stream poll interval, ms: a change committed just
 * after a poll found nothing waits one interval; then the read of its record and the
 * invalidator's invocation (one fence per key) must fit in this.
 */
export const INVALIDATION_SLACK_MS = 100;

/** Target of the invalidation lag's p99, ms. */
export const INVALIDATION_P99_TARGET_MS = IDLE_WAIT_MS + INVALIDATION_SLACK_MS;

/** AWS's documented rate at which Lambda polls each shard of a DynamoDB stream. */
export const AWS_STREAM_POLLS_PER_SECOND = 4;
/** Where AWS documents it (the Lambda developer guide, "Polling and batching streams"). */
export const AWS_STREAM_POLLING_SOURCE =
  'https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html#dynamodb-polling-and-batching';

/** A latency's count and percentiles, ms. */
export type LatencyFigure = LatencyPercentiles & { readonly count: number };

/** Enqueue → done of one job type, on the platform and on the bare loop. */
export interface JobTypeLatency {
  readonly jobType: string;
  readonly queueKind: QueueKind;
  /** The job's queue mapping, which the bare loop copies. */
  readonly mapping: {
    readonly batchSize: number;
    readonly batchingWindowSeconds: number;
    readonly maxConcurrency: number;
  };
  readonly tenang: LatencyFigure;
  readonly bare: LatencyFigure;
  /** JobSucceeded its consumer counted during its run (warm-up included): every job sent, when none failed. */
  readonly succeeded: number;
  /**
   * JobDeferred its consumer counted during its run. A deferral re-sends the job and deletes
   * the original, so a deferred job's time is not its completion: this should be 0.
   */
  readonly deferred: number;
}

/** What one run measured. */
export interface LatencyResults {
  readonly sizes: LatencySizes;
  readonly jobs: readonly JobTypeLatency[];
  readonly invalidation: LatencyFigure & {
    /** The local stream poller's wait after a read that found nothing, ms. */
    readonly streamPollIntervalMs: number;
  };
  /** Whether the platform's pollers went through the local IAM proxy (the bare loop never does). */
  readonly iamEnforced: boolean;
}

/** Longest wait for a run's jobs to be deleted, or a queue to drain, or a tombstone, ms. */
const DEADLINE_MS = 120_000;

/** Longest wait for a run's JobSucceeded metrics once its jobs were deleted, ms. */
const METRICS_WAIT_MS = 5_000;

/** How often Redis is read while an invalidation is awaited, ms. */
const FENCE_POLL_MS = 5;

/** An invocation that did nothing and succeeded. */
const NOTHING_DONE: InvokeResult = {
  status: 'ok',
  result: { batchItemFailures: [] },
  durationMs: 0,
  coldStart: false,
};

function figure(values: readonly number[]): LatencyFigure {
  return { count: values.length, ...latencyPercentiles(values) };
}

/** One job's payload, and its idempotency key where the consumer derives it from the payload. */
interface TimedJob {
  readonly payload: Record<string, unknown>;
  readonly idempotencyKey?: string;
}

/**
 * A valid job `i` of a reference job type, with what it needs in the tables first; of a declared
 * job type, its `samplePayload`. Undefined: a job type with neither is not timed.
 */
function jobMaker(ctx: DrillContext, job: ResolvedJobType): ((i: number) => Promise<TimedJob>) | undefined {
  const tag = `lat-${ctx.runId}-${jobTypeSlug(job.name)}`;
  const reference: {
    readonly [T in JobTypeName]: (i: number) => Promise<TimedJob & { readonly payload: PayloadOf<T> }>;
  } = {
    'payment.capture': async (i) => {
      // One SKU per order: the follow-up reservations never contend for one lock.
      const sku = `${tag}-${i}`;
      await seedSku(ctx, sku);
      const order = await createOrder(ctx, i, sku);
      const paymentId = `${tag}-${i}`;
      return {
        payload: { orderId: order.orderId, paymentId, amountMinor: order.amountMinor, currency: 'EUR' },
        // The consumer refuses a capture under any other key (as the ingress sends it).
        idempotencyKey: paymentCaptureKey(paymentId),
      };
    },
    // A fresh order id each: the consumer sends once per (order, template).
    'notification.send': (i) =>
      Promise.resolve({
        payload: {
          orderId: `${tag}-${i}`,
          template: 'order-paid',
          recipient: `latency+${i}@example.com`,
          orderVersion: 1,
        },
      }),
    'inventory.reserve': async (i) => {
      const sku = `${tag}-${i}`;
      await seedSku(ctx, sku);
      return { payload: { orderId: `${tag}-${i}`, sku, quantity: 1 } };
    },
  };
  if (job.name in reference) return reference[job.name as JobTypeName];
  const sample = job.samplePayload;
  return sample === undefined ? undefined : () => Promise.resolve({ payload: sample });
}

/** Waits until no job queue holds a message, so each run starts at the same (empty) depth. */
async function untilIdle(ctx: DrillContext, queueUrls: readonly string[], what: string): Promise<void> {
  await ctx.until(
    async () => {
      for (const url of queueUrls) if ((await undeleted(ctx.sqs, url)) > 0) return undefined;
      return true;
    },
    `every job queue to be empty ${what}`,
    DEADLINE_MS,
  );
}

/**
 * Sends `inputs` to `queueUrl` one at a time, `ratePerSecond` on a fixed schedule, and returns
 * each timed job's send → delete time, ms (the first `warmup` are sent but not timed).
 */
async function timedRun(
  ctx: DrillContext,
  what: string,
  queueUrl: string,
  inputs: readonly SendMessageCommandInput[],
  warmup: number,
  ratePerSecond: number,
  deletedAt: (messageId: string) => number | undefined,
): Promise<number[]> {
  const sent: { readonly id: string; readonly at: number }[] = [];
  const start = Date.now();
  for (const [i, input] of inputs.entries()) {
    // On a schedule, not after each answer: a slow send must not lower the rate.
    const wait = start + (i * 1000) / ratePerSecond - Date.now();
    if (wait > 0) await sleep(wait);
    const { MessageId } = await ctx.sqs.send(new SendMessageCommand({ ...input, QueueUrl: queueUrl }));
    if (MessageId === undefined) throw new Error(`${what}: SendMessage answered no MessageId`);
    sent.push({ id: MessageId, at: Date.now() });
  }
  const missing = (): string[] => sent.filter((s) => deletedAt(s.id) === undefined).map((s) => s.id);
  try {
    await ctx.until(
      () => Promise.resolve(missing().length === 0 ? true : undefined),
      `${what}: ${sent.length} jobs to be done`,
      DEADLINE_MS,
    );
  } catch (error) {
    const left = missing();
    throw new Error(
      `${(error as Error).message}; ${left.length} never deleted: ${left.slice(0, 5).join(', ')}`,
      { cause: error },
    );
  }
  return sent.slice(warmup).map((s) => (deletedAt(s.id) ?? Number.NaN) - s.at);
}

/**
 * The bare loop of one job type: a queue like the job's (kind, visibility timeout) on the same
 * moto, polled by an SqsEventSource with the job's mapping settings whose function does nothing.
 */
async function bareRun(
  ctx: DrillContext,
  spec: SqsMappingSpec,
  inputs: readonly SendMessageCommandInput[],
  sizes: LatencySizes,
): Promise<number[]> {
  const { Attributes: like = {} } = await ctx.sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: spec.queueUrl,
      AttributeNames: ['FifoQueue', 'VisibilityTimeout', 'ContentBasedDeduplication'],
    }),
  );
  const fifo = like.FifoQueue === 'true';
  const name = `latency-bare-${Date.now().toString(36)}-${randomInt(1_000_000)}${fifo ? '.fifo' : ''}`;
  const { QueueUrl: queueUrl } = await ctx.sqs.send(
    new CreateQueueCommand({
      QueueName: name,
      Attributes: {
        VisibilityTimeout: like.VisibilityTimeout ?? '30',
        ...(fifo
          ? { FifoQueue: 'true', ContentBasedDeduplication: like.ContentBasedDeduplication ?? 'false' }
          : {}),
      },
    }),
  );
  if (queueUrl === undefined) throw new Error(`CreateQueue ${name} answered no QueueUrl`);
  try {
    const { Attributes: created = {} } = await ctx.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
    );
    const deleted = new Map<string, number>();
    const bare = new SqsEventSource(
      {
        ...spec,
        uuid: `${spec.uuid}-bare`,
        functionName: `${spec.functionName}-bare`,
        queueUrl,
        queueArn: created.QueueArn ?? '',
      },
      ctx.sqs,
      {
        isEnabled: () => true,
        invoke: () => Promise.resolve(NOTHING_DONE),
        onDeleted: (ids) => {
          const now = Date.now();
          for (const id of ids) deleted.set(id, now);
        },
      },
      ctx.log,
    );
    bare.start();
    try {
      return await timedRun(
        ctx,
        `bare loop of ${spec.functionName}`,
        queueUrl,
        inputs,
        sizes.warmupPerType,
        sizes.ratePerSecond,
        (id) => deleted.get(id),
      );
    } finally {
      await bare.stop();
    }
  } finally {
    await ctx.sqs.send(new DeleteQueueCommand({ QueueUrl: queueUrl }));
  }
}

/** Raises an order's version `count` times and times each change until its key is fenced at it. */
async function invalidationLags(ctx: DrillContext, redisUrl: string, count: number): Promise<number[]> {
  const sku = `lat-${ctx.runId}-invalidation`;
  await seedSku(ctx, sku);
  const { orderId } = await createOrder(ctx, 1, sku);
  const table = tables(ctx).orders;
  const created = await new DynamoDbOrderStore(ctx.dynamodb, table).get(orderId);
  if (created === undefined) throw new Error(`order ${orderId} was created but cannot be read`);
  const key = orderCacheKey(cacheKeyspace(ctx.stage), orderId);
  // A generous timeout: the figure is the lag, and a busy machine must not turn it into a failure.
  const connection = connectRedis({ kind: 'url', url: redisUrl }, { commandTimeoutMs: 5_000 });
  await connection.ready();
  const cache = new RedisCache(connection);
  /** Epoch ms at which `key` was first seen fenced at `version` or later. */
  const fencedAt = async (version: number): Promise<number> => {
    const deadline = Date.now() + DEADLINE_MS;
    for (;;) {
      const entry = await cache.get(key);
      if (entry?.kind === 'tombstone' && entry.version >= version) return Date.now();
      if (Date.now() > deadline)
        throw new Error(
          `timed out waiting for ${key} to be fenced at version ${version}: ${JSON.stringify(entry)}`,
        );
      await sleep(FENCE_POLL_MS);
    }
  };
  try {
    // The insert's invalidation first: the later ones each follow one update.
    await fencedAt(created.version);
    const lags: number[] = [];
    for (let n = 0; n < count; n += 1) {
      // Updates at random phases of the stream poll, so the figure covers the whole interval.
      await sleep(randomInt(IDLE_WAIT_MS + 1));
      const { Attributes } = await ctx.dynamodb.send(
        new UpdateItemCommand({
          TableName: table,
          Key: { [REFERENCE_TABLE_KEYS.orders.partitionKey]: { S: orderId } },
          UpdateExpression: 'SET #version = #version + :one',
          ConditionExpression: 'attribute_exists(#key)',
          ExpressionAttributeNames: {
            '#version': 'version',
            '#key': REFERENCE_TABLE_KEYS.orders.partitionKey,
          },
          ExpressionAttributeValues: { ':one': { N: '1' } },
          ReturnValues: 'UPDATED_NEW',
        }),
      );
      const committed = Date.now();
      const version = Number(Attributes?.version?.N);
      if (!Number.isSafeInteger(version)) throw new Error(`UpdateItem of ${orderId} answered no version`);
      lags.push((await fencedAt(version)) - committed);
    }
    return lags;
  } finally {
    await connection.close();
  }
}

/** Runs the experiment on a platform from startBacklogPlatform. */
export async function runLatencyExperiment(
  target: BacklogPlatform,
  sizes: LatencySizes,
  opts: Pick<RunDrillOptions, 'log' | 'stage'> = {},
): Promise<LatencyResults> {
  const platform = target.platform;
  const cli = (): never => {
    throw new Error('the latency experiment runs no CLI step');
  };
  return withDrillContext({ ...opts, platform, cli }, 'latency-experiment', [], async (ctx) => {
    const timed = ctx.config.jobTypes.flatMap((job) => {
      const make = jobMaker(ctx, job);
      return make === undefined ? [] : [{ job, make, target: jobTarget(ctx, job.name) }];
    });
    const queueUrls = timed.map((t) => t.target.queueUrl);
    const jobs: JobTypeLatency[] = [];
    for (const { job, make, target: jt } of timed) {
      const source = platform.sqsSources.find((s) => s.spec.uuid === jt.mappingUuid);
      if (source === undefined) throw new Error(`no queue mapping ${jt.mappingUuid} for ${job.name}`);
      const perRound = sizes.warmupPerType + sizes.jobsPerType;
      const total = sizes.rounds * perRound;
      const counted = (metric: string): number => target.metricTotal(metric, jt.functionName);
      await untilIdle(ctx, queueUrls, `before ${job.name}`);
      const before = { succeeded: counted(METRIC.jobSucceeded), deferred: counted(METRIC.jobDeferred) };
      const tenangMs: number[] = [];
      const bareMs: number[] = [];
      for (let round = 0; round < sizes.rounds; round += 1) {
        ctx.log(
          `${job.name}: round ${round + 1} of ${sizes.rounds}, ${perRound} jobs (${sizes.warmupPerType} warm-up) at ${sizes.ratePerSecond}/s`,
        );
        const inputs: SendMessageCommandInput[] = [];
        for (let i = round * perRound + 1; i <= (round + 1) * perRound; i += 1) {
          const { payload, idempotencyKey } = await make(i);
          inputs.push(
            declaredJobMessage({ ...job, samplePayload: payload }, jt.queueUrl, {
              idempotencyKey: idempotencyKey ?? `latency:${ctx.runId}:${job.name}:${i}`,
              correlationId: `${ctx.runId}-${jobTypeSlug(job.name)}-${i}`,
              // A declared job type without groupBy: one group per job, as its producers would have many.
              group: String(i),
            }),
          );
        }
        const onPlatform = async (): Promise<void> => {
          await untilIdle(ctx, queueUrls, `before ${job.name}`);
          tenangMs.push(
            ...(await timedRun(
              ctx,
              job.name,
              jt.queueUrl,
              inputs,
              sizes.warmupPerType,
              sizes.ratePerSecond,
              (id) => target.deletedAt(id),
            )),
          );
          // Follow-ups (a payment's notification and reservations) done too: the bare loop starts idle.
          await untilIdle(ctx, queueUrls, `after ${job.name}`);
        };
        const onBareLoop = async (): Promise<void> => {
          bareMs.push(...(await bareRun(ctx, source.spec, inputs, sizes)));
        };
        // Platform first in even rounds, bare loop first in odd ones, so drift hits both alike.
        for (const run of round % 2 === 0 ? [onPlatform, onBareLoop] : [onBareLoop, onPlatform]) await run();
      }
      // A function's metrics reach its output apart from its answer, maybe just after the delete.
      const succeeded = await ctx
        .until(
          () => {
            const n = counted(METRIC.jobSucceeded) - before.succeeded;
            return Promise.resolve(n >= total ? n : undefined);
          },
          `${job.name}: ${total} JobSucceeded`,
          METRICS_WAIT_MS,
        )
        .catch(() => counted(METRIC.jobSucceeded) - before.succeeded);
      const deferred = counted(METRIC.jobDeferred) - before.deferred;
      jobs.push({
        jobType: job.name,
        queueKind: job.queue.kind,
        mapping: {
          batchSize: source.spec.batchSize,
          batchingWindowSeconds: source.spec.batchingWindowSeconds,
          maxConcurrency: source.spec.maxConcurrency,
        },
        tenang: figure(tenangMs),
        bare: figure(bareMs),
        succeeded,
        deferred,
      });
    }
    ctx.log(`invalidation: ${sizes.invalidations} order updates`);
    const lags = await invalidationLags(ctx, platform.env.redisUrl, sizes.invalidations);
    return {
      sizes,
      jobs,
      invalidation: { ...figure(lags), streamPollIntervalMs: IDLE_WAIT_MS },
      iamEnforced: platform.iam !== undefined,
    };
  });
}

/** Runs the experiment once on a platform of its own (alarm clock at real time: no alarm is measured). */
export async function measureLatency(opts: {
  readonly sizes?: LatencySizes;
  readonly log: (line: string) => void;
}): Promise<LatencyResults> {
  const sizes = opts.sizes ?? DEFAULT_LATENCY_SIZES;
  opts.log(
    `latency: starting a platform (${sizes.jobsPerType} jobs per type at ${sizes.ratePerSecond}/s, ${sizes.invalidations} invalidations)`,
  );
  const target = await startBacklogPlatform({ clockFactor: 1, log: () => undefined });
  try {
    return await runLatencyExperiment(target, sizes, { log: (line) => opts.log(`latency: ${line}`) });
  } finally {
    await target.stop();
  }
}

function verdict(met: boolean): string {
  return met ? 'met' : '**not met**';
}

/** A job type's verdict: judged only when every job it sent was done (a failed job is deleted early). */
function jobVerdict(j: JobTypeLatency, sent: number): string {
  if (j.succeeded < sent) return `**not judged**: ${sent - j.succeeded} of ${sent} jobs not done`;
  return verdict(j.tenang.p50 - j.bare.p50 <= JOB_P50_OVERHEAD_TARGET_MS);
}

function ms(f: LatencyPercentiles): string {
  return `${f.p50.toFixed(0)} / ${f.p99.toFixed(0)} / ${f.max.toFixed(0)}`;
}

/** The report's latency section. */
export function latencySection(r: LatencyResults): string[] {
  const inv = r.invalidation;
  const awsIntervalMs = 1000 / AWS_STREAM_POLLS_PER_SECOND;
  const deferred = r.jobs.reduce((n, j) => n + j.deferred, 0);
  const sent = r.sizes.rounds * (r.sizes.warmupPerType + r.sizes.jobsPerType);
  const samples = r.sizes.rounds * r.sizes.jobsPerType;
  // Nearest rank: below 100 samples the 99th percentile is the largest.
  const p99IsMax = Math.ceil(0.99 * samples) === samples;
  return [
    '',
    '## Latency: enqueue → done, and invalidation lag',
    '',
    `bench/latency.ts on a local platform of its own. **Enqueue → done**: per job type, ${r.sizes.rounds} rounds, each of ${r.sizes.warmupPerType} warm-up jobs then ${r.sizes.jobsPerType} timed ones on the platform and the same on the bare loop (which goes first alternates; samples pooled: a job's time depends on where it lands in a batching window, and one round of a few batches gives a median that moves by hundreds of ms), sent one at a time at ${r.sizes.ratePerSecond}/s straight to the job's queue, each timed from SendMessage's answer to the moment the queue mapping deleted it; every run starts with every job queue empty. The **bare loop** is the same poller (lib/local/sqs-event-source.ts, with the job's batch size, batching window and pollers) on a queue of the same kind and visibility timeout on the same moto, driving a function that does nothing, with the same messages at the same rate: the difference is what the function host and the handler add. ${r.iamEnforced ? "The platform's pollers send their receives and deletes through the local IAM proxy (as the job's execution role); the bare loop goes to moto directly, so the difference includes that hop." : 'IAM was not enforced in this run: both go to moto directly.'} Percentiles are nearest-rank${p99IsMax ? `: with ${samples} samples, p99 is the slowest` : ''}.`,
    '',
    `| job type | queue | batch, window, pollers | timed | succeeded / sent | platform p50 / p99 / max ms | bare loop p50 / p99 / max ms | p50 − bare p50 | target p50 ≤ bare + ${JOB_P50_OVERHEAD_TARGET_MS} ms |`,
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...r.jobs.map(
      (j) =>
        `| ${j.jobType} | ${j.queueKind} | ${j.mapping.batchSize}, ${j.mapping.batchingWindowSeconds} s, ${j.mapping.maxConcurrency} | ${j.tenang.count} | ${j.succeeded} / ${sent} | ${ms(j.tenang)} | ${ms(j.bare)} | ${(j.tenang.p50 - j.bare.p50).toFixed(0)} ms | ${jobVerdict(j, sent)} |`,
    ),
    '',
    `Jobs deferred during the platform runs: ${deferred} (a deferral re-sends a job and deletes the original, so a deferred job's time would not be its completion). The batching window dominates both columns where it is set: a poller waits up to the window for a full batch. A message is deleted when its whole batch is done, so a job's time includes the handler's work on the rest of its batch; and one moto serves every table, one DynamoDB request at a time, so the requests of a batch's records (inventory.reserve: idempotency record, lease lock, stock write, release) queue behind each other.`,
    '',
    `**Invalidation lag**: one order, its version raised ${inv.count} times with UpdateItem, each after a random 0–${IDLE_WAIT_MS} ms pause so the changes land at every phase of the stream poll; timed from UpdateItem's answer until the order's cache key (orderCacheKey) holds the invalidator's tombstone at the new version, read from Redis every ${FENCE_POLL_MS} ms.`,
    '',
    '| figure | value |',
    '| --- | --- |',
    `| updates timed | ${inv.count} |`,
    `| lag p50 / p99 / max | ${ms(inv)} ms |`,
    `| local stream poll interval (wait after a read that found nothing, then a new iterator and a read) | ${inv.streamPollIntervalMs} ms |`,
    `| AWS: Lambda polls each DynamoDB stream shard | ${AWS_STREAM_POLLS_PER_SECOND} times per second (every ${awsIntervalMs} ms), [Lambda developer guide](${AWS_STREAM_POLLING_SOURCE}) |`,
    `| target p99 ≤ poll interval + ${INVALIDATION_SLACK_MS} ms = ${INVALIDATION_P99_TARGET_MS} ms | ${verdict(inv.p99 <= INVALIDATION_P99_TARGET_MS)} |`,
    '',
    `The target is one poll interval (a change committed just after an empty read waits that long) plus ${INVALIDATION_SLACK_MS} ms for reading the record and the invalidator's invocation. On AWS the interval is ${awsIntervalMs} ms rather than ${inv.streamPollIntervalMs} ms, so a change there may wait up to ${awsIntervalMs - inv.streamPollIntervalMs} ms longer for its poll.`,
  ];
}
