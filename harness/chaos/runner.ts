/**
 * Runs the chaos suite on the local platform: one platform (with a redis-server of its own, so
 * "Redis down" is a real process stopped) for many runs; each run enqueues its seeded workload,
 * injects its configuration's faults while the workload is in flight (and keeps work flowing
 * while they are on, so each of them fires), lifts them, waits for a full drain with a deadline,
 * reads the facts from the sources of truth and hands them to the checker.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  BatchGetItemCommand,
  type BatchGetItemCommandOutput,
  DynamoDBClient,
  type KeysAndAttributes,
} from '@aws-sdk/client-dynamodb';
import {
  GetQueueAttributesCommand,
  PurgeQueueCommand,
  SendMessageCommand,
  SetQueueAttributesCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { Redis } from 'ioredis';
import { LOCK_TRACE_PREFIX, setFaults, type LockTrace } from '../faults/fault-injection';
import { faultPreloadArgv } from '../faults/preload-argv';
import { DynamoDbInventoryStore } from '../../examples/reference/domain/dynamodb-inventory-store';
import { DynamoDbLockStore } from '../../lib/adapters/aws/dynamodb-lock-store';
import { decodeEntry } from '../../lib/adapters/redis/redis-cache';
import { cacheKeyspace } from '../../lib/core/cache-keys';
import { orderCacheKey } from '../../examples/reference/domain/order-cache';
import { makeEnvelope } from '../../lib/core/envelope';
import { skuLockResource } from '../../examples/reference/domain/inventory';
import { paymentCaptureKey } from '../../examples/reference/domain/payment';
import type { CacheEntry } from '../../lib/core/ports';
import type { ResolvedJobType } from '../../lib/config';
import { REFERENCE_TABLE_KEYS } from '../../examples/reference/domain/tables';
import { LocalPlatform } from '../../lib/local/platform';
import { pollUntil } from '../../lib/local/poll';
import { freePort } from '../../lib/local/ports';
import {
  declaredJobFacts,
  declaredJobMessage,
  declaredJobTypes,
  declaredProviderCalls,
  type DeclaredJobFact,
} from '../../lib/local/scenario-declared-jobs';
import { readDeadLetters, type DeadLetterQueue } from '../../lib/local/scenario-facts';
import { runIncident } from '../../examples/reference/local/order-incidents';
import type { IncidentQueue } from '../../lib/local/scenario-queues';
import type { PoisonFact } from '../../lib/local/scenario-invariants';
import { FunctionOutputObserver } from '../../lib/local/scenario-observer';
import { ScenarioRedis } from '../../lib/local/scenario-redis';
import { callApi } from '../../lib/local/traffic';
import { TrafficGenerator } from '../../examples/reference/local/traffic';
import {
  checkChaos,
  WORKLOAD_TEMPLATE,
  type AcceptedWrite,
  type ChaosFacts,
  type ChaosVerdict,
  type EnqueuedJob,
} from './checker';
import {
  faultEvidence,
  heldJobs,
  hitsInvalidator,
  INVALIDATOR_FAULTS,
  paymentCrashPhases,
  unfiredFaults,
  type FaultConfig,
  type FaultKind,
  type FaultPlan,
} from './faults';
import { makeWorkload, seededRandom, type WorkloadJob } from './workload';

/** Stock seeded per SKU: plenty, so a reservation fails only when something is wrong. */
const SEEDED_STOCK = 1_000_000;
/**
 * Visibility timeout of the job queues during chaos, s. The deployed one is 6× the function
 * timeout (3 min for payments); a crashed batch would take that long to return. Shorter than
 * some function timeouts on purpose: a slow invocation's message is then delivered again while
 * it runs — one more at-least-once fault the consumers must survive.
 */
export const CHAOS_VISIBILITY_SECONDS = 8;
/**
 * Visibility of the payments queue: above the payment consumer's 30 s timeout. Below it, a
 * crashed capture's redeliveries meet its INPROGRESS idempotency record (which expires with the
 * invocation's remaining time) until maxReceiveCount sends the job to the DLQ: seen with 8 s.
 */
const PAYMENT_VISIBILITY_SECONDS = 35;
/** Time given to the invalidator after the drain before the cache is read (the invalidation lag). */
const INVALIDATION_LAG_MS = 2_000;
const QUIET_SAMPLES = 3;
const SAMPLE_MS = 1_000;
const SEND_CONCURRENCY = 4;

/** Options of startChaosPlatform. */
export interface ChaosPlatformOptions {
  readonly log: (line: string) => void;
  /** @default 'dev' */
  readonly stage?: string;
  /** The app to run (its declaration's job types join the workload). @default the repository root */
  readonly projectRoot?: string;
}

/** A job type the app declares beyond the reference's, as the chaos run sends and reads it. */
export interface DeclaredChaosQueue extends IncidentQueue {
  readonly declared: ResolvedJobType;
}

/** A platform prepared for chaos runs. */
export class ChaosPlatform {
  /** Every line the functions printed since the last takeLines(). */
  private lines: { fn: string; line: string }[] = [];
  private platformLog: string[] = [];
  private visibility = new Map<string, number>();

  private constructor(
    public readonly platform: LocalPlatform,
    public readonly redis: ScenarioRedis,
    public readonly stage: string,
    private readonly log: (line: string) => void,
    public readonly observer: FunctionOutputObserver,
    private readonly sink: { target?: ChaosPlatform },
    private readonly savedEnv: Record<string, string | undefined>,
  ) {}

  /** Starts a redis-server and a platform on a moto of their own. */
  public static async start(opts: ChaosPlatformOptions): Promise<ChaosPlatform> {
    const savedEnv = Object.fromEntries(
      ['REDIS_URL', 'AWS_ENDPOINT_URL', 'TENANG_MOTO_PORT'].map((k) => [k, process.env[k]]),
    );
    const redis = await ScenarioRedis.start();
    process.env.REDIS_URL = redis.url;
    delete process.env.AWS_ENDPOINT_URL;
    process.env.TENANG_MOTO_PORT = String(await freePort());
    const observer = new FunctionOutputObserver();
    const sink: { target?: ChaosPlatform } = {};
    try {
      const platform = await LocalPlatform.start({
        stage: opts.stage,
        projectRoot: opts.projectRoot,
        log: (line) => {
          sink.target?.platformLog.push(line);
          opts.log(line);
        },
        onFunctionOutput: (line, fn) => {
          observer.onLine(line, fn);
          sink.target?.lines.push({ fn, line });
        },
        reconcileEveryMs: 30_000,
        functionExecArgv: faultPreloadArgv(),
      });
      const chaos = new ChaosPlatform(
        platform,
        redis,
        opts.stage ?? 'dev',
        opts.log,
        observer,
        sink,
        savedEnv,
      );
      sink.target = chaos;
      // Always traced: the lock checker needs every acquire and release of the inventory consumer.
      setFaults(platform, chaos.fn('inventory-consumer'), 'trace-locks');
      return chaos;
    } catch (error) {
      await redis.stop();
      throw error;
    }
  }

  /** Stops the platform and the redis-server; puts the environment back. */
  public async stop(): Promise<void> {
    await this.platform.stop().catch((e: unknown) => this.log(`platform stop: ${String(e)}`));
    await this.redis.stop();
    for (const [k, v] of Object.entries(this.savedEnv)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }

  /** The deployed function `*-<logical>`. */
  public fn(logical: string): string {
    return this.platform.functionNamed(logical);
  }

  /** A deployed variable of a function. */
  public envOf(logical: string, name: string): string {
    const value = this.platform.deployment.functions.get(this.fn(logical))?.environment[name];
    if (value === undefined || value === '') throw new Error(`${logical} has no ${name}`);
    return value;
  }

  /** The job queues, as incidents address them. */
  public queues(): { payment: IncidentQueue; notification: IncidentQueue; inventory: IncidentQueue } {
    return {
      payment: this.incidentQueue('payment.capture', 'payment-consumer', true, 30),
      notification: this.incidentQueue('notification.send', 'notification-consumer', false, 20),
      inventory: this.incidentQueue('inventory.reserve', 'inventory-consumer', false, 30),
    };
  }

  /** The queues of the job types the app declares beyond the reference's (with a sample payload). */
  public declaredQueues(): DeclaredChaosQueue[] {
    return declaredJobTypes(this.platform.config.jobTypes).map((declared) => ({
      declared,
      ...this.incidentQueue(
        declared.name,
        declared.consumer,
        declared.queue.kind === 'fifo',
        declared.function.timeoutSeconds,
      ),
    }));
  }

  private incidentQueue(jobType: string, consumer: string, fifo: boolean, timeout: number): IncidentQueue {
    const functionName = this.fn(consumer);
    const source = this.platform.sqsSources.find((s) => s.spec.functionName === functionName);
    if (source === undefined) throw new Error(`no queue mapping for ${functionName}`);
    return {
      jobType,
      queueUrl: source.spec.queueUrl,
      dlqUrl: this.envOf(consumer, 'DLQ_URL'),
      fifo,
      functionName,
      functionTimeoutSeconds: timeout,
    };
  }

  /** Sets a queue's visibility timeout (only when it changes) and waits until the pollers use it. */
  public async setVisibility(sqs: SQSClient, seconds: Readonly<Record<string, number>>): Promise<void> {
    let changed = false;
    for (const [url, s] of Object.entries(seconds)) {
      if (this.visibility.get(url) === s) continue;
      await sqs.send(
        new SetQueueAttributesCommand({ QueueUrl: url, Attributes: { VisibilityTimeout: String(s) } }),
      );
      this.visibility.set(url, s);
      changed = true;
    }
    // The pollers re-read it every 5 s (lib/local/sqs-event-source.ts).
    if (changed) await sleep(5_500);
  }

  /** Evidence of the faults that fired since the last takeLines(), without taking the lines. */
  public firedSoFar(): Record<string, number> {
    return faultEvidence(this.lines, this.platformLog);
  }

  /** Takes the function lines and platform log lines gathered since the last call. */
  public takeLines(): { functions: { fn: string; line: string }[]; platform: string[] } {
    const out = { functions: this.lines, platform: this.platformLog };
    this.lines = [];
    this.platformLog = [];
    return out;
  }
}

/**
 * A few chaos platforms shared by concurrent runs: a run waits mostly for visibility timeouts and
 * backoffs, so two platforms on one machine finish the matrix in about half the time. Platforms
 * start on first use (one after another: each start points the environment at its own moto and
 * Redis) and each runs one configuration at a time, so a run's faults never touch another's.
 */
export class ChaosPlatformPool {
  private starting: Promise<ChaosPlatform[]> | undefined;
  private readonly free: ChaosPlatform[] = [];
  private readonly waiting: ((p: ChaosPlatform) => void)[] = [];
  private handedOut = 0;

  public constructor(
    private readonly size: number,
    private readonly opts: ChaosPlatformOptions,
    /** How far apart the first runs on the pool's platforms start, ms. */
    private readonly staggerMs = 15_000,
  ) {
    if (!Number.isInteger(size) || size < 1)
      throw new Error(`a chaos pool needs at least one platform, got ${size}`);
  }

  /** Runs `fn` on a platform of its own, waiting for one to be free. */
  public async use<T>(fn: (chaos: ChaosPlatform) => Promise<T>): Promise<T> {
    this.starting ??= (async () => {
      const started: ChaosPlatform[] = [];
      for (let i = 0; i < this.size; i += 1) started.push(await ChaosPlatform.start(this.opts));
      this.free.push(...started);
      return started;
    })();
    await this.starting;
    const chaos =
      this.free.pop() ?? (await new Promise<ChaosPlatform>((resolve) => this.waiting.push(resolve)));
    // The first runs start apart: each starts its functions cold (a process per function, bundles
    // loaded, clients built) and sends its whole workload at once; all of them at the same instant
    // starved a 2-core machine, and every function of the first three runs timed out on requests
    // that waited seconds for the CPU (CI, 2026-12-02). Later runs start whenever one ends.
    const first = this.handedOut;
    this.handedOut += 1;
    if (first < this.size) await sleep(first * this.staggerMs);
    try {
      return await fn(chaos);
    } finally {
      const next = this.waiting.shift();
      if (next === undefined) this.free.push(chaos);
      else next(chaos);
    }
  }

  /** Stops every platform, last started first (each restores the environment it found). */
  public async stop(): Promise<void> {
    const started = await this.starting?.catch(() => []);
    for (const chaos of [...(started ?? [])].reverse()) await chaos.stop();
  }
}

/** One run's size and identity. */
export interface ChaosRunOptions {
  readonly config: FaultConfig;
  readonly plan: FaultPlan;
  readonly jobs: number;
  readonly keys: number;
  /** Deadline of the drain after the faults are lifted, ms. @default 240000 */
  readonly drainDeadlineMs?: number;
  /**
   * Directory that receives `<config>-<runId>.log`: every line the functions and the platform
   * printed during the run, so a failure can be explained after the fact. @default - not saved
   */
  readonly logDir?: string;
}

/** What one run did and what the checker found. */
export interface ChaosRunResult {
  readonly config: string;
  readonly plan: FaultPlan;
  readonly runId: string;
  readonly jobs: number;
  readonly sends: number;
  /** Faults that fired, by kind (crashes, hangs, lost acks, SDK faults, windows). */
  readonly faultsFired: Readonly<Record<string, number>>;
  readonly drained: boolean;
  readonly durationMs: number;
  readonly verdict: ChaosVerdict;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function inParallel<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next];
        next += 1;
        if (item !== undefined) await work(item);
      }
    }),
  );
}

let runCounter = 0;

/** Runs one configuration with one fault plan and checks it. */
function saveRunLog(
  dir: string,
  file: string,
  lines: { functions: readonly { fn: string; line: string }[]; platform: readonly string[] },
): void {
  mkdirSync(dir, { recursive: true });
  const text = [
    ...lines.platform.map((l) => `[platform] ${l}`),
    ...lines.functions.map((l) => `[${l.fn}] ${l.line}`),
  ].join('\n');
  writeFileSync(path.join(dir, file), `${text}\n`);
}

export async function runChaos(chaos: ChaosPlatform, opts: ChaosRunOptions): Promise<ChaosRunResult> {
  const t0 = Date.now();
  runCounter += 1;
  const runId = `c${t0.toString(36)}${runCounter}`;
  const { platform } = chaos;
  const { config, plan } = opts;
  const endpoint = { endpoint: platform.env.endpoint, region: platform.env.region };
  const sqs = new SQSClient(endpoint);
  const dynamodb = new DynamoDBClient(endpoint);
  const queues = chaos.queues();
  const declared = chaos.declaredQueues();
  const ordersTable = chaos.envOf('ingress', 'ORDERS_TABLE');
  const inventoryTable = chaos.envOf('inventory-consumer', 'INVENTORY_TABLE');
  const locksTable = chaos.envOf('inventory-consumer', 'LOCKS_TABLE');
  const apiUrl = platform.api.url;
  try {
    // Clean slate: dead letters of earlier runs would be this run's unexpected ones.
    const deadLetterQueues: DeadLetterQueue[] = [
      ...[queues.payment, queues.notification, queues.inventory, ...declared].map((q) => ({
        queue: q.dlqUrl.slice(q.dlqUrl.lastIndexOf('/') + 1),
        url: q.dlqUrl,
        source: q.jobType,
        kind: 'job' as const,
      })),
      ...platform.streamSources.flatMap((s) =>
        s.spec.onFailureQueueUrl === undefined
          ? []
          : [
              {
                queue: s.spec.onFailureQueueUrl.slice(s.spec.onFailureQueueUrl.lastIndexOf('/') + 1),
                url: s.spec.onFailureQueueUrl,
                source: s.spec.functionName,
                kind: 'stream' as const,
              },
            ],
      ),
    ];
    for (const q of deadLetterQueues)
      await sqs.send(new PurgeQueueCommand({ QueueUrl: q.url })).catch(() => undefined);
    await chaos.setVisibility(sqs, {
      [queues.payment.queueUrl]: PAYMENT_VISIBILITY_SECONDS,
      [queues.notification.queueUrl]: CHAOS_VISIBILITY_SECONDS,
      [queues.inventory.queueUrl]: CHAOS_VISIBILITY_SECONDS,
      // Above the function timeout, for the payments' reason: a declared job type may run under
      // Powertools idempotency too, and its redeliveries would meet an INPROGRESS record.
      ...Object.fromEntries(declared.map((q) => [q.queueUrl, q.functionTimeoutSeconds + 5])),
    });
    chaos.takeLines();
    const declaredProviders = [...new Set(declared.flatMap((q) => q.declared.resources.providers))];
    const ledgerStart = {
      payment: platform.providers.payment.ledger().length,
      messaging: platform.providers.messaging.ledger().length,
      declared: new Map(
        declaredProviders.map((p) => [p, declaredProviderCalls(platform.providers.declared, [p]).length]),
      ),
    };
    const runStart = Date.now();

    const holdBack = heldJobs(config);
    const workload = makeWorkload({
      seed: plan.workloadSeed,
      jobs: opts.jobs,
      keys: opts.keys,
      runId,
      minimum: holdBack,
      declaredJobTypes: declared.map((q) => q.jobType),
    });
    const inventory = new DynamoDbInventoryStore(dynamodb, inventoryTable);
    for (const sku of workload.skus) await inventory.seed(sku, SEEDED_STOCK);
    // The inventory consumer's crash point is on its lease path, which a reservation takes when
    // the lease-free transaction cannot decide it. A fence ahead of the clock is such a case, so
    // here every reservation of the run falls back to the lease, and the crash leaves a lease
    // behind to be recovered, as every reservation did before there was a lease-free path.
    if (config.faults.includes('crash-holding-lock')) {
      const locks = new DynamoDbLockStore(dynamodb, locksTable);
      for (const sku of workload.skus) await setFencesAhead(locks, inventoryTable, sku);
    }

    // Payment jobs need their order first (POST /orders, PENDING).
    const enqueued = new Map<string, EnqueuedJob>();
    await inParallel(workload.jobs, SEND_CONCURRENCY, async (job) => {
      enqueued.set(job.id, await prepare(apiUrl, job, declared));
    });

    // Every copy of every job, shuffled by the seed. Jobs for the crash points (heldJobs) are held
    // back and sent once their point is armed, so every crash point meets fresh work.
    // Half of the rest is sent at once (a burst: full batches, FIFO groups behind a failure), the
    // other half spread over the fault window, so work flows while every fault is on.
    const random = seededRandom(plan.workloadSeed ^ 0x5bd1e995);
    const holdOf = (type: HeldType): WorkloadJob[] =>
      workload.jobs.filter((j) => j.type === type).slice(0, holdBack[type]);
    const held = {
      'payment.capture': holdOf('payment.capture'),
      'inventory.reserve': holdOf('inventory.reserve'),
    };
    const isHeld = (job: WorkloadJob): boolean => Object.values(held).some((jobs) => jobs.includes(job));
    const sends = workload.jobs
      .filter((job) => !isHeld(job))
      .flatMap((job) => Array.from({ length: job.copies }, (_, copy) => ({ job, copy })));
    for (let i = sends.length - 1; i > 0; i -= 1) {
      const j = Math.floor(random() * (i + 1));
      [sends[i], sends[j]] = [sends[j] as (typeof sends)[number], sends[i] as (typeof sends)[number]];
    }
    const sendCopy = async ({ job, copy }: { job: WorkloadJob; copy: number }): Promise<void> => {
      const e = enqueued.get(job.id);
      if (e === undefined) return;
      await send(sqs, queues, declared, e, copy);
      // Reads fill the cache, so the invalidator has entries to get right.
      if (e.type === 'payment.capture' && random() < 0.5)
        await callApi(apiUrl, 'GET', `/orders/${encodeURIComponent(e.orderId)}`);
    };
    const feed: Feed = async (type) => {
      const job = held[type].shift();
      if (job === undefined) return;
      await Promise.all(Array.from({ length: job.copies }, (_, copy) => sendCopy({ job, copy })));
    };
    const burst = sends.slice(0, Math.ceil(sends.length / 2));
    const spread = sends.slice(burst.length);
    const poison: PoisonFact[] = [];
    const sendsStart = Date.now();
    const faults = injectFaults(chaos, config, plan, queues, runId, poison, apiUrl, sqs, feed);
    await inParallel(burst, SEND_CONCURRENCY, sendCopy);
    const gapMs = (plan.startAfterMs + plan.windowMs) / (spread.length + 1);
    for (const [i, item] of spread.entries()) {
      await sleep(sendsStart + (i + 1) * gapMs - Date.now());
      await sendCopy(item);
    }
    const fired = await faults;
    // Held jobs no crash point took (it fired on a retry before their turn) go out now.
    for (const type of HELD_TYPES) while (held[type].length > 0) await feed(type);
    const drained = await drain(
      chaos,
      sqs,
      [...Object.values(queues), ...declared],
      opts.drainDeadlineMs ?? 240_000,
    );
    // A last read of a few orders, racing the final invalidations (C3).
    await sleep(INVALIDATION_LAG_MS);

    const lines = chaos.takeLines();
    if (opts.logDir !== undefined) saveRunLog(opts.logDir, `${config.name}-${runId}.log`, lines);
    const jobs = [...enqueued.values()];
    const facts = await readFacts({
      chaos,
      sqs,
      dynamodb,
      ordersTable,
      inventoryTable,
      locksTable,
      jobs,
      skus: workload.skus,
      deadLetterQueues,
      runStart,
      poison,
      ledgerStart,
      declared,
      lines: lines.functions,
    });
    Object.assign(fired, faultEvidence(lines.functions, lines.platform));
    return {
      config: config.name,
      plan,
      runId,
      jobs: jobs.length,
      sends: sends.length,
      faultsFired: fired,
      drained,
      durationMs: Date.now() - t0,
      verdict: checkChaos(facts),
    };
  } finally {
    sqs.destroy();
    dynamodb.destroy();
  }
}

/**
 * Creates what a job needs before it is enqueued: a payment job's order, a declared job's
 * idempotency key (one per job, carried by every copy).
 */
async function prepare(
  apiUrl: string,
  job: WorkloadJob,
  declared: readonly DeclaredChaosQueue[],
): Promise<EnqueuedJob> {
  const base = { id: job.id, type: job.type, sku: job.key, quantity: job.quantity, copies: job.copies };
  if (declared.some((q) => q.jobType === job.type))
    return { ...base, orderId: job.orderId, idempotencyKey: `${job.id}:${job.type}` };
  if (job.type !== 'payment.capture') return { ...base, orderId: job.orderId };
  const body = {
    customerEmail: `chaos+${job.id}@example.com`,
    lines: [{ sku: job.key, quantity: job.quantity }],
    amountMinor: job.amountMinor,
    currency: 'EUR',
  };
  const answer = await pollUntil(
    async () => {
      const a = await callApi(apiUrl, 'POST', '/orders', body);
      return a.status === 201 ? a : undefined;
    },
    { description: `POST /orders for ${job.id}`, deadlineMs: 60_000, intervalMs: 500 },
  );
  const orderId = (answer.body as { orderId?: unknown }).orderId;
  if (typeof orderId !== 'string') throw new Error(`POST /orders for ${job.id} answered no orderId`);
  return { ...base, orderId, paymentId: `pay-${job.id}`, amountMinor: job.amountMinor };
}

/** Sends one copy of a job straight to its queue (copies of a FIFO job get distinct dedup ids). */
async function send(
  sqs: SQSClient,
  queues: ReturnType<ChaosPlatform['queues']>,
  declared: readonly DeclaredChaosQueue[],
  job: EnqueuedJob,
  copy: number,
): Promise<void> {
  const now = new Date();
  const correlationId = job.id;
  const declaredQueue = declared.find((q) => q.jobType === job.type);
  if (declaredQueue !== undefined) {
    const ids = {
      idempotencyKey: job.idempotencyKey ?? job.id,
      correlationId,
      deduplicationId: `${job.id}-${copy}`,
      group: job.id,
    };
    await sendWithRetry(sqs, declaredJobMessage(declaredQueue.declared, declaredQueue.queueUrl, ids, now));
  } else if (job.type === 'payment.capture') {
    const paymentId = job.paymentId ?? '';
    const envelope = makeEnvelope(
      'payment.capture',
      { orderId: job.orderId, paymentId, amountMinor: job.amountMinor ?? 0, currency: 'EUR' },
      { idempotencyKey: paymentCaptureKey(paymentId), correlationId, now },
    );
    await sendWithRetry(sqs, {
      QueueUrl: queues.payment.queueUrl,
      MessageBody: JSON.stringify(envelope),
      MessageGroupId: job.orderId,
      MessageDeduplicationId: `${job.id}-${copy}`,
    });
  } else if (job.type === 'notification.send') {
    const envelope = makeEnvelope(
      'notification.send',
      {
        orderId: job.orderId,
        template: WORKLOAD_TEMPLATE,
        recipient: `chaos+${job.id}@example.com`,
        orderVersion: 1,
      },
      { idempotencyKey: `notify:${job.orderId}:${WORKLOAD_TEMPLATE}`, correlationId, now },
    );
    await sendWithRetry(sqs, {
      QueueUrl: queues.notification.queueUrl,
      MessageBody: JSON.stringify(envelope),
    });
  } else {
    const envelope = makeEnvelope(
      'inventory.reserve',
      { orderId: job.orderId, sku: job.sku, quantity: job.quantity },
      { idempotencyKey: `reserve:${job.orderId}:${job.sku}`, correlationId, now },
    );
    await sendWithRetry(sqs, { QueueUrl: queues.inventory.queueUrl, MessageBody: JSON.stringify(envelope) });
  }
}

async function sendWithRetry(
  sqs: SQSClient,
  input: ConstructorParameters<typeof SendMessageCommand>[0],
): Promise<void> {
  await pollUntil(
    async () =>
      await sqs.send(new SendMessageCommand(input)).then(
        () => true,
        () => undefined,
      ),
    { description: 'SendMessage', deadlineMs: 30_000, intervalMs: 500 },
  );
}

/** Job types held back for crash points (heldJobs). */
const HELD_TYPES = ['payment.capture', 'inventory.reserve'] as const;

/** How far ahead of the clock setFencesAhead sets a SKU's fences, ms: a day. */
const FENCE_AHEAD_MS = 86_400_000;

/**
 * Sets the fences of `sku`'s lock and stock FENCE_AHEAD_MS ahead of the clock, as a lease-free
 * writer whose clock ran that fast would leave them (its reservation aside): lease-free
 * reservations then fall back to the lease path, whose fences count on from the lock's.
 */
async function setFencesAhead(locks: DynamoDbLockStore, inventoryTable: string, sku: string): Promise<void> {
  const result = await locks.writeWithoutLease({
    resource: skuLockResource(sku),
    nowMs: Date.now() + FENCE_AHEAD_MS,
    write: (fence) => ({
      TableName: inventoryTable,
      Key: { [REFERENCE_TABLE_KEYS.inventory.partitionKey]: { S: sku } },
      UpdateExpression: 'SET #fence = :t',
      ConditionExpression: 'attribute_not_exists(#fence) OR #fence < :t',
      ExpressionAttributeNames: { '#fence': 'fence' },
      ExpressionAttributeValues: { ':t': { N: String(fence) } },
    }),
  });
  if (result.kind !== 'written') throw new Error(`could not set the fences of ${sku} ahead: ${result.kind}`);
}
type HeldType = (typeof HELD_TYPES)[number];

/** Sends one held-back job of `type` (every copy of it), if any is left. */
type Feed = (type: HeldType) => Promise<void>;

/**
 * Crash points stay armed until reached: an invocation that never gets there (a duplicate, a
 * retry failing earlier, a batch while Redis is down) does not use up the plan's crashes.
 */
const UNTIL_REACHED = { untilReached: true } as const;
/**
 * Longest a payment crash point stays armed waiting to fire (a fresh job is sent when it is armed;
 * a provider fault or throttle may hold it back for a retry or two).
 */
const PHASE_CAP_MS = 20_000;
/**
 * Longest the faults stay on past the plan's window while one of them has not fired yet (a crash
 * in the invalidator waits for Redis to come back; a rare SDK fault for more requests).
 */
const LATE_CAP_MS = 20_000;
/** How often a late fault gets a fresh job while it has not fired (see LATE_CAP_MS). */
const LATE_FEED_MS = 5_000;

/**
 * Injects the configuration's faults and lifts them after the plan's window, or once each has
 * fired (within LATE_CAP_MS); resolves with the window markers. `feed` sends one held-back job:
 * each payment crash point sends a capture once armed, the invalidator's crash a capture (whose
 * PAID transition reaches it), the lock holder's crash a reservation; one more goes out past the
 * window for a crash still unfired.
 */
async function injectFaults(
  chaos: ChaosPlatform,
  config: FaultConfig,
  plan: FaultPlan,
  queues: ReturnType<ChaosPlatform['queues']>,
  runId: string,
  poison: PoisonFact[],
  apiUrl: string,
  sqs: SQSClient,
  feed: Feed,
): Promise<Record<string, number>> {
  const { platform } = chaos;
  const has = (f: FaultKind): boolean => config.faults.includes(f);
  const fired: Record<string, number> = {};
  await sleep(plan.startAfterMs);
  // The poison of every run: three malformed messages (examples/reference/local/order-incidents.ts).
  const controller = new AbortController();
  await runIncident(
    { kind: 'poison-message', atSeconds: 0 },
    {
      platform,
      redis: chaos.redis,
      traffic: new TrafficGenerator({
        apiUrl,
        runId,
        skus: [],
        ratePerSecond: 0,
        elapsedMs: () => 0,
        log: () => undefined,
      }),
      sqs,
      queues,
      services: {
        payment: 'payment-consumer',
        notification: 'notification-consumer',
        reader: 'order-reader',
      },
      observer: chaos.observer,
      runId,
      elapsedMs: () => 0,
      signal: controller.signal,
      log: () => undefined,
      recordPoison: (p) => poison.push(p),
      recordInjected: () => undefined,
      setActive: () => undefined,
    },
  );

  const payment = chaos.fn('payment-consumer');
  const invalidator = chaos.fn('cache-invalidator');
  const crashPhases = paymentCrashPhases(config);
  if (has('crash-during-invalidation'))
    platform.crashInvocations(invalidator, ['during-invalidation'], plan.crashes, UNTIL_REACHED);
  if (has('invalidator-function-timeout'))
    platform.crashInvocations(invalidator, ['hang:during-invalidation'], 1, UNTIL_REACHED);
  // A capture now makes the order change that reaches the invalidator's armed point.
  if (hitsInvalidator(config)) await feed('payment.capture');
  if (has('crash-holding-lock')) {
    platform.crashInvocations(chaos.fn('inventory-consumer'), ['holding-lock'], plan.crashes, UNTIL_REACHED);
    await feed('inventory.reserve');
  }
  if (has('lost-ack')) for (const s of platform.sqsSources) s.loseAcks(plan.lostAcks);
  const sdk: string[] = [];
  if (has('ddb-throttle')) sdk.push(`ddb-throttle=${plan.throttleRate.toFixed(3)}`);
  if (has('ddb-timeout'))
    sdk.push(
      `ddb-timeout=${(plan.timeoutRate / 2).toFixed(3)}`,
      `ddb-lost-response=${(plan.timeoutRate / 2).toFixed(3)}`,
    );
  const fns = [...platform.hosts.keys()].filter((f) => !f.endsWith('-flag-reconciler'));
  const inventoryFn = chaos.fn('inventory-consumer');
  if (sdk.length > 0) {
    // Besides the rates, each instance's plan.forcedAt-th request (and the next ones) is hit for
    // sure, so a run with any DynamoDB work sees every SDK fault of its configuration.
    if (has('ddb-timeout'))
      sdk.push(`ddb-lost-response-at=${plan.forcedAt}`, `ddb-timeout-at=${plan.forcedAt + 1}`);
    if (has('ddb-throttle')) sdk.push(`ddb-throttle-at=${plan.forcedAt + 2}`);
    for (const f of fns)
      setFaults(
        platform,
        f,
        [...sdk, 'timeout-ms=1000', ...(f === inventoryFn ? ['trace-locks'] : [])].join(','),
      );
    fired['ddb-window'] = 1;
  }
  if (has('redis-down')) {
    await chaos.redis.down();
    fired['redis-down'] = 1;
  }
  if (has('provider-timeout')) {
    platform.providers.payment.set({ latencyMs: 10_500 });
    platform.providers.messaging.set({ latencyMs: 2_500 });
    fired['provider-timeout-window'] = 1;
  }
  if (has('provider-5xx')) {
    platform.providers.payment.set({ errorRate: plan.errorRate, errorAfterEffectRate: plan.errorRate / 2 });
    platform.providers.messaging.set({ errorRate: plan.errorRate });
    // An app's own providers fail like the payment provider, before and after the effect.
    for (const fake of platform.providers.declared.values())
      fake.set({ errorRate: plan.errorRate, errorAfterEffectRate: plan.errorRate / 2 });
    fired['provider-5xx-window'] = 1;
  }
  // Payment crash points one after another, each armed with a fresh job until it fired.
  const windowEnds = Date.now() + plan.windowMs;
  for (const points of crashPhases) {
    const point = points[0] ?? '';
    // The point's own line, written before the kill: the host's SIGKILL report of the phase
    // before can arrive after this phase began.
    const key = point.startsWith('hang:') ? point : `crash:${point}`;
    const evidence = (): number => chaos.firedSoFar()[key] ?? 0;
    const before = evidence();
    platform.crashInvocations(payment, points, point.startsWith('hang:') ? 1 : plan.crashes, UNTIL_REACHED);
    await feed('payment.capture');
    const ends = Date.now() + PHASE_CAP_MS;
    while (Date.now() < ends && evidence() === before) await sleep(200);
  }
  await sleep(windowEnds - Date.now());
  // The windows close: Redis comes back (empty), the providers heal.
  platform.providers.payment.set({ latencyMs: 0, errorRate: 0, errorAfterEffectRate: 0 });
  platform.providers.messaging.set({ latencyMs: 0, errorRate: 0 });
  for (const fake of platform.providers.declared.values())
    fake.set({ errorRate: 0, errorAfterEffectRate: 0 });
  if (!chaos.redis.running) await chaos.redis.up();
  // A crash, lost ack or SDK fault that has not fired yet stays on a little longer (the
  // invalidator's crash point, for one, is past a Redis write): its run would prove nothing of it.
  // A fresh job goes out at once and again every LATE_FEED_MS while its fault is unfired: one
  // capture may itself be held back by the faults still on (throttles, retries with backoff).
  const lateEnds = Date.now() + LATE_CAP_MS;
  let nextFeed = 0;
  for (;;) {
    const unfired = unfiredFaults(config, { ...fired, ...chaos.firedSoFar() });
    if (unfired.length === 0 || Date.now() >= lateEnds) break;
    if (Date.now() >= nextFeed) {
      nextFeed = Date.now() + LATE_FEED_MS;
      if (unfired.some((f) => INVALIDATOR_FAULTS.includes(f))) await feed('payment.capture');
      if (unfired.includes('crash-holding-lock')) await feed('inventory.reserve');
    }
    await sleep(250);
  }
  // Lift the rest.
  platform.crashInvocations(payment, [], 0);
  platform.crashInvocations(invalidator, [], 0);
  platform.crashInvocations(chaos.fn('inventory-consumer'), [], 0);
  for (const s of platform.sqsSources) s.loseAcks(0);
  for (const f of fns) setFaults(platform, f, f === inventoryFn ? 'trace-locks' : '');
  return fired;
}

/** Waits until every job queue is empty (nothing visible, delayed or in flight) and the streams are idle. */
async function drain(
  chaos: ChaosPlatform,
  sqs: SQSClient,
  queues: readonly IncidentQueue[],
  deadlineMs: number,
): Promise<boolean> {
  const deadline = Date.now() + deadlineMs;
  let quiet = 0;
  let lastBatches = -1;
  while (Date.now() < deadline) {
    await sleep(SAMPLE_MS);
    let empty = true;
    for (const q of queues) {
      const { Attributes: a = {} } = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: q.queueUrl,
          AttributeNames: [
            'ApproximateNumberOfMessages',
            'ApproximateNumberOfMessagesNotVisible',
            'ApproximateNumberOfMessagesDelayed',
          ],
        }),
      );
      const n =
        Number(a.ApproximateNumberOfMessages ?? 0) +
        Number(a.ApproximateNumberOfMessagesNotVisible ?? 0) +
        Number(a.ApproximateNumberOfMessagesDelayed ?? 0);
      if (n > 0) empty = false;
    }
    const batches = chaos.platform.streamSources.reduce((n, s) => n + s.stats.batches, 0);
    quiet = empty && batches === lastBatches ? quiet + 1 : 0;
    lastBatches = batches;
    if (quiet >= QUIET_SAMPLES) return true;
  }
  return false;
}

interface FactInputs {
  readonly chaos: ChaosPlatform;
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  readonly ordersTable: string;
  readonly inventoryTable: string;
  readonly locksTable: string;
  readonly jobs: readonly EnqueuedJob[];
  readonly skus: readonly string[];
  readonly deadLetterQueues: readonly DeadLetterQueue[];
  readonly runStart: number;
  readonly poison: readonly PoisonFact[];
  readonly ledgerStart: {
    readonly payment: number;
    readonly messaging: number;
    /** By declared provider name. */
    readonly declared: ReadonlyMap<string, number>;
  };
  readonly declared: readonly DeclaredChaosQueue[];
  readonly lines: readonly { fn: string; line: string }[];
}

/** Reads the facts from the sources of truth. */
async function readFacts(i: FactInputs): Promise<ChaosFacts> {
  const { platform } = i.chaos;
  const paymentOrders = i.jobs.filter((j) => j.type === 'payment.capture').map((j) => j.orderId);
  const orders = await readOrders(i.dynamodb, i.ordersTable, paymentOrders);
  const inventory = new DynamoDbInventoryStore(i.dynamodb, i.inventoryTable);
  const locks = new DynamoDbLockStore(i.dynamodb, i.locksTable);
  const stock = new Map<string, ChaosFacts['stock'] extends ReadonlyMap<string, infer S> ? S : never>();
  for (const sku of i.skus) {
    const level = await inventory.get(sku);
    const lock = await locks.get(skuLockResource(sku));
    stock.set(sku, {
      seeded: SEEDED_STOCK,
      available: level?.available ?? 0,
      fence: level?.fence,
      reservations: Object.fromEntries(
        Object.entries(level?.reservations ?? {}).map(([o, r]) => [
          o,
          { quantity: r.quantity, fence: r.fence },
        ]),
      ),
      lockFence: lock?.fence,
    });
  }
  const redis = new Redis(i.chaos.redis.url, { lazyConnect: true, maxRetriesPerRequest: 2 });
  const cache = new Map<string, CacheEntry | undefined>();
  try {
    await redis.connect();
    const keyspace = cacheKeyspace(i.chaos.stage);
    for (const orderId of paymentOrders)
      cache.set(orderId, decodeEntry(await redis.get(orderCacheKey(keyspace, orderId))));
  } finally {
    redis.disconnect();
  }
  const resources = new Set(i.skus.map(skuLockResource));
  const skus = new Set(i.skus);
  const lockTraces: LockTrace[] = [];
  const acceptedWrites: AcceptedWrite[] = [];
  for (const { line } of i.lines) {
    const at = line.indexOf(LOCK_TRACE_PREFIX);
    if (at >= 0) {
      const t = JSON.parse(line.slice(at + LOCK_TRACE_PREFIX.length)) as LockTrace;
      if (resources.has(t.resource)) lockTraces.push(t);
      continue;
    }
    if (!line.startsWith('{') || !line.includes('stock reserved')) continue;
    try {
      const l = JSON.parse(line) as {
        message?: string;
        sku?: string;
        orderId?: string;
        fence?: number;
        timestamp?: string;
      };
      if (
        l.message === 'stock reserved' &&
        l.sku !== undefined &&
        skus.has(l.sku) &&
        l.orderId !== undefined &&
        typeof l.fence === 'number'
      )
        acceptedWrites.push({
          sku: l.sku,
          orderId: l.orderId,
          fence: l.fence,
          at: Date.parse(l.timestamp ?? ''),
        });
    } catch {
      // Not a log line of ours.
    }
  }
  const declaredJobs: DeclaredJobFact[] = [];
  for (const q of i.declared) {
    const sent = i.jobs
      .filter((j) => j.type === q.jobType)
      .map((j) => ({ jobType: j.type, idempotencyKey: j.idempotencyKey ?? j.id, correlationId: j.id }));
    // A job type that is not idempotent has no table to read (declaredJobFacts reads none for it).
    const table = platform.deployment.functions.get(q.functionName)?.environment.IDEMPOTENCY_TABLE ?? '';
    declaredJobs.push(...(await declaredJobFacts(i.dynamodb, table, [q.declared], sent)));
  }
  return {
    jobs: i.jobs,
    declaredJobs,
    declaredCalls: declaredProviderCalls(
      platform.providers.declared,
      [...i.ledgerStart.declared.keys()],
      i.ledgerStart.declared,
    ),
    declaredProviders: Object.fromEntries(i.declared.map((q) => [q.jobType, q.declared.resources.providers])),
    charges: platform.providers.payment.ledger().slice(i.ledgerStart.payment),
    messages: platform.providers.messaging.ledger().slice(i.ledgerStart.messaging),
    orders,
    stock,
    dlq: await readDeadLetters(i.sqs, i.deadLetterQueues, i.runStart - 60_000),
    poison: i.poison,
    cache,
    lockTraces,
    acceptedWrites,
  };
}

/** State and version of each order (strongly consistent). */
async function readOrders(
  dynamodb: DynamoDBClient,
  tableName: string,
  orderIds: readonly string[],
): Promise<Map<string, { state: string; version: number }>> {
  const key = REFERENCE_TABLE_KEYS.orders.partitionKey;
  const out = new Map<string, { state: string; version: number }>();
  const unique = [...new Set(orderIds)];
  for (let n = 0; n < unique.length; n += 100) {
    let request: Record<string, KeysAndAttributes> | undefined = {
      [tableName]: {
        Keys: unique.slice(n, n + 100).map((id) => ({ [key]: { S: id } })),
        ConsistentRead: true,
        ProjectionExpression: '#k, #s, #v',
        ExpressionAttributeNames: { '#k': key, '#s': 'state', '#v': 'version' },
      },
    };
    while (request !== undefined && Object.keys(request).length > 0) {
      const res: BatchGetItemCommandOutput = await dynamodb.send(
        new BatchGetItemCommand({ RequestItems: request }),
      );
      for (const item of res.Responses?.[tableName] ?? []) {
        const id = item[key]?.S;
        if (id !== undefined)
          out.set(id, { state: item.state?.S ?? '?', version: Number(item.version?.N ?? -1) });
      }
      request = res.UnprocessedKeys;
    }
  }
  return out;
}
