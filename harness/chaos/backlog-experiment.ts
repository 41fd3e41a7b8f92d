/**
 * The backlog experiment (B1, B4, B5, O3): on a local platform, pause the deferrable inventory
 * consumer with `tenang pause`, build a backlog behind it (plus sheddable notifications already
 * past their useful age), watch the oldest-age alarm fire, resume with `tenang resume`, and while
 * the backlog drains measure fresh critical work (payments) against the same work before the
 * backlog existed. Then the alarm must clear, every backlog job be done exactly once, and every
 * stale notification be in the side queue and counted, none sent.
 *
 * CloudWatch's part runs on a clock `clockFactor` times faster than real time (the platform's
 * `alarms.now`), so the inventory objective of 300 s is crossed in seconds; the functions,
 * queues and moto run in real time. Latencies are real milliseconds.
 */
import { SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { makeEnvelope, type JobEnvelope } from '../../lib/core/envelope';
import { DynamoDbInventoryStore } from '../../examples/reference/domain/dynamodb-inventory-store';
import { LocalPlatform } from '../../lib/local/platform';
import { freePort } from '../../lib/local/ports';
import { queueCounts } from '../../lib/adapters/aws/queue-counts';
import type { AlarmState } from '../../lib/local/alarms/state';
import {
  withDrillContext,
  type CliAnswer,
  type DrillContext,
  type RunDrillOptions,
} from '../../lib/drills/drill';
import { jobTarget } from '../../lib/drills/support';
import {
  createOrder,
  ledgerEntriesFor,
  orderStates,
  payOrder,
  seedSku,
  tables,
} from '../../examples/reference/drills/support';

/** Sizes of one run. */
export interface BacklogExperimentSizes {
  /** Deferrable inventory.reserve jobs queued behind the paused consumer. */
  readonly backlog: number;
  /** Sheddable notifications in the backlog that are already past their useful age. */
  readonly expired: number;
  /** Fresh critical payments, measured once before the backlog and once during its drain. */
  readonly critical: number;
}

/**
 * A platform whose alarm clock runs `clockFactor` times real time, what its functions printed,
 * and when each message its queue mappings consumed was deleted (a job's done moment, for the
 * latency figures of bench/latency.ts).
 */
export interface BacklogPlatform {
  readonly platform: LocalPlatform;
  readonly clockFactor: number;
  /** The alarm clock, epoch ms. */
  readonly clock: () => number;
  /** Sum of an EMF metric the functions printed so far (e.g. JobExpired); of one function's when named. */
  metricTotal(name: string, functionName?: string): number;
  /** Real time (epoch ms) a queue mapping deleted the message `messageId`; undefined while it is not. */
  deletedAt(messageId: string): number | undefined;
  stop(): Promise<void>;
}

/** What one run measured. */
export interface BacklogExperimentResult {
  readonly sizes: BacklogExperimentSizes;
  readonly clockFactor: number;
  readonly ageAlarm: {
    readonly name: string;
    /** Its state just before the backlog was built. */
    readonly stateBefore: AlarmState;
    /** Real seconds from the first backlog job to ALARM. */
    readonly firedAfterSeconds: number;
    /** The same on the alarm clock (what CloudWatch would have taken). */
    readonly firedAfterClockSeconds: number;
    /** Real seconds from the drained queue to OK. */
    readonly clearedAfterDrainSeconds: number;
    readonly finalState: AlarmState;
  };
  /** The critical queue's own age alarm over the whole run. */
  readonly criticalAgeAlarmFired: boolean;
  readonly critical: {
    /** Pay request → PAID, ms, with no backlog. */
    readonly baselineMs: readonly number[];
    /** The same while the deferrable backlog drains. */
    readonly duringDrainMs: readonly number[];
    /** Deferrable jobs still queued when the last critical job was done (> 0: not starved behind them). */
    readonly backlogLeftWhenCriticalDone: number;
  };
  readonly backlog: {
    /** Real seconds from resume to an empty inventory queue. */
    readonly drainSeconds: number;
    /** Backlog SKUs whose stock dropped by exactly one reservation. */
    readonly reservedOnce: number;
    readonly reservedTwice: number;
    readonly notReserved: number;
    readonly inDlq: number;
  };
  readonly expired: {
    readonly sent: number;
    readonly inSideQueue: number;
    /** JobExpired metric total the consumer printed. */
    readonly counted: number;
    /** Stale notifications the messaging provider received anyway (must be 0). */
    readonly deliveredAnyway: number;
  };
  readonly steps: readonly CliAnswer[];
}

const STOCK = 100;

/** A clock that starts at real time and runs `factor` times faster. */
export function acceleratedClock(factor: number): () => number {
  const origin = Date.now();
  return () => origin + (Date.now() - origin) * factor;
}

/** Starts a platform on a moto of its own with an alarm clock `clockFactor` times real time. */
export async function startBacklogPlatform(opts: {
  readonly clockFactor: number;
  readonly log?: (line: string) => void;
}): Promise<BacklogPlatform> {
  const saved = { endpoint: process.env.AWS_ENDPOINT_URL, port: process.env.TENANG_MOTO_PORT };
  delete process.env.AWS_ENDPOINT_URL;
  process.env.TENANG_MOTO_PORT = String(await freePort());
  // By metric name, and by function and metric name.
  const totals = new Map<string, number>();
  const add = (key: string, value: number): void => void totals.set(key, (totals.get(key) ?? 0) + value);
  const deleted = new Map<string, number>();
  const clock = acceleratedClock(opts.clockFactor);
  const platform = await LocalPlatform.start({
    log: opts.log ?? ((): void => undefined),
    reconcileEveryMs: 5_000,
    alarms: { now: clock, intervalMs: 250 },
    onFunctionOutput: (line, functionName) => {
      if (!line.includes('"_aws"')) return;
      try {
        const doc = JSON.parse(line) as Record<string, unknown>;
        // Powertools prints one value, or an array when a metric was added several times.
        for (const [k, v] of Object.entries(doc)) {
          const values = Array.isArray(v) ? v : [v];
          if (!values.every((x) => typeof x === 'number')) continue;
          const sum = (values as number[]).reduce((a, b) => a + b, 0);
          add(k, sum);
          add(`${functionName}\0${k}`, sum);
        }
      } catch {
        // Not an EMF document.
      }
    },
    onMessagesDeleted: (_functionName, messageIds) => {
      const now = Date.now();
      // The first delete is the done moment; a copy delivered twice may be deleted again later.
      for (const id of messageIds) if (!deleted.has(id)) deleted.set(id, now);
    },
  });
  return {
    platform,
    clockFactor: opts.clockFactor,
    clock,
    metricTotal: (name, functionName) =>
      totals.get(functionName === undefined ? name : `${functionName}\0${name}`) ?? 0,
    deletedAt: (messageId) => deleted.get(messageId),
    async stop() {
      await platform.stop();
      for (const [k, v] of [
        ['AWS_ENDPOINT_URL', saved.endpoint],
        ['TENANG_MOTO_PORT', saved.port],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    },
  };
}

/** Every undeleted message of a queue: visible, in flight and delayed (deferred jobs wait delayed). */
export async function undeleted(sqs: SQSClient, queueUrl: string): Promise<number> {
  const c = await queueCounts(sqs, queueUrl);
  return c.visible + c.inFlight + c.delayed;
}

/** Sends envelopes to a queue, ten per call. */
async function sendAll(sqs: SQSClient, queueUrl: string, envelopes: readonly JobEnvelope[]): Promise<void> {
  for (let i = 0; i < envelopes.length; i += 10) {
    const chunk = envelopes.slice(i, i + 10);
    const { Failed = [] } = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((e, n) => ({ Id: String(n), MessageBody: JSON.stringify(e) })),
      }),
    );
    if (Failed.length > 0)
      throw new Error(`SendMessageBatch refused ${Failed.length} messages: ${Failed[0]?.Message ?? ''}`);
  }
}

function alarmState(platform: LocalPlatform, name: string): AlarmState | undefined {
  return platform.alarms.states().find((a) => a.name === name)?.state;
}

/** Pays `count` fresh orders and returns each one's pay request → PAID time, ms. */
async function criticalRound(ctx: DrillContext, sku: string, tag: string, count: number): Promise<number[]> {
  // One SKU per order: their reservations never contend for one lease lock (and defer).
  const orders: Awaited<ReturnType<typeof createOrder>>[] = [];
  for (let n = 1; n <= count; n += 1) {
    const own = `${sku}-${tag}-${n}`;
    await seedSku(ctx, own);
    orders.push(await createOrder(ctx, n, own));
  }
  const started = new Map<string, number>();
  const done = new Map<string, number>();
  for (const [n, order] of orders.entries()) {
    started.set(order.orderId, Date.now());
    await payOrder(ctx, order, `pay-${ctx.runId}-${tag}-${n}`);
  }
  await ctx.until(
    async () => {
      const pending = orders.map((o) => o.orderId).filter((id) => !done.has(id));
      const states = await orderStates(ctx, pending);
      const now = Date.now();
      for (const id of pending) if (states.get(id) === 'PAID') done.set(id, now);
      return done.size === orders.length ? true : undefined;
    },
    `${count} critical payments (${tag}) to be PAID`,
    180_000,
  );
  return orders.map((o) => (done.get(o.orderId) ?? 0) - (started.get(o.orderId) ?? 0));
}

/** Runs the experiment on a platform from startBacklogPlatform. */
export async function runBacklogExperiment(
  target: BacklogPlatform,
  sizes: BacklogExperimentSizes,
  opts: Pick<RunDrillOptions, 'cli' | 'log' | 'stage'>,
): Promise<BacklogExperimentResult> {
  const steps: CliAnswer[] = [];
  const platform = target.platform;
  return withDrillContext({ ...opts, platform }, 'backlog-experiment', steps, async (ctx) => {
    const log = opts.log ?? ((): void => undefined);
    const inventory = jobTarget(ctx, 'inventory.reserve');
    const notifications = jobTarget(ctx, 'notification.send');
    const payments = jobTarget(ctx, 'payment.capture');
    const ageAlarm = `tenang-${ctx.stage}-${inventory.consumer}-oldest-age`;
    const criticalAlarm = `tenang-${ctx.stage}-${payments.consumer}-oldest-age`;
    const sideQueue = platform.deployment.functions.get(notifications.functionName)?.environment
      .EXPIRED_QUEUE_URL;
    if (sideQueue === undefined) throw new Error(`${notifications.consumer} has no EXPIRED_QUEUE_URL`);
    const notificationJob = ctx.config.jobTypes.find((j) => j.name === 'notification.send');
    const usefulAge = notificationJob?.usefulAgeSeconds;
    if (usefulAge === undefined) throw new Error('notification.send declares no usefulAgeSeconds');
    let criticalAgeAlarmFired = false;
    const watch = setInterval(() => {
      if (alarmState(platform, criticalAlarm) === 'ALARM') criticalAgeAlarmFired = true;
    }, 250);

    try {
      const sku = `sku-${ctx.runId}`;
      // 1. Critical work with no backlog.
      log('baseline: fresh payments with no backlog');
      const baselineMs = await criticalRound(ctx, sku, 'baseline', sizes.critical);
      await ctx.until(
        async () => ((await undeleted(ctx.sqs, inventory.queueUrl)) === 0 ? true : undefined),
        'the baseline follow-ups to drain',
        120_000,
      );
      // The alarm must start quiet (OK through a whole evaluation window), so its firing is the backlog's doing.
      const windowMs = (3 * 60_000) / target.clockFactor;
      await ctx.until(
        async () => {
          if (alarmState(platform, ageAlarm) !== 'OK') return undefined;
          await new Promise((r) => setTimeout(r, windowMs));
          return alarmState(platform, ageAlarm) === 'OK' ? true : undefined;
        },
        `${ageAlarm} to stay OK before the backlog`,
        180_000,
      );
      const stateBefore = alarmState(platform, ageAlarm) ?? 'INSUFFICIENT_DATA';

      // 2. Pause the deferrable consumer and build its backlog (one SKU per job: no lock contention).
      const paused = await ctx.tenang([
        'pause',
        inventory.consumer,
        '--reason',
        'backlog experiment',
        '--for',
        '1h',
      ]);
      if (paused.code !== 0) throw new Error(`tenang pause exited ${paused.code}: ${paused.err}`);
      const store = new DynamoDbInventoryStore(ctx.dynamodb, tables(ctx).inventory);
      const backlogSkus = Array.from({ length: sizes.backlog }, (_, i) => `bk-${ctx.runId}-${i}`);
      for (const s of backlogSkus) await store.seed(s, STOCK);
      const now = new Date();
      log(`backlog: ${sizes.backlog} reservations behind the pause, ${sizes.expired} stale notifications`);
      const backlogStarted = Date.now();
      const clockAtStart = target.clock();
      await sendAll(
        ctx.sqs,
        inventory.queueUrl,
        backlogSkus.map((s, i) =>
          makeEnvelope(
            'inventory.reserve',
            { orderId: `bk-order-${ctx.runId}-${i}`, sku: s, quantity: 1 },
            { idempotencyKey: `backlog:${ctx.runId}:${i}`, correlationId: `bk-${ctx.runId}-${i}`, now },
          ),
        ),
      );
      const longAgo = new Date(Date.now() - (usefulAge + 3_600) * 1000);
      const staleOrders = Array.from({ length: sizes.expired }, (_, i) => `stale-${ctx.runId}-${i}`);
      await sendAll(
        ctx.sqs,
        notifications.queueUrl,
        staleOrders.map((orderId) =>
          makeEnvelope(
            'notification.send',
            { orderId, template: 'order-paid', recipient: 'late@example.com', orderVersion: 1 },
            { idempotencyKey: `notification:${orderId}:order-paid`, correlationId: orderId, now: longAgo },
          ),
        ),
      );

      // 3. The age alarm fires while the backlog waits.
      await ctx.until(
        () => Promise.resolve(alarmState(platform, ageAlarm) === 'ALARM' ? true : undefined),
        `${ageAlarm} to fire`,
        180_000,
      );
      const firedAfterSeconds = (Date.now() - backlogStarted) / 1000;
      const fired = platform.alarms
        .timeline()
        .filter((t) => t.alarm === ageAlarm && t.to === 'ALARM')
        .at(-1);

      // 4. Resume, and measure fresh critical work while the backlog drains.
      const resumed = await ctx.tenang(['resume', inventory.consumer]);
      if (resumed.code !== 0) throw new Error(`tenang resume exited ${resumed.code}: ${resumed.err}`);
      const resumedAt = Date.now();
      log('drain: fresh payments while the backlog drains');
      const duringDrainMs = await criticalRound(ctx, sku, 'drain', sizes.critical);
      const backlogLeftWhenCriticalDone = await undeleted(ctx.sqs, inventory.queueUrl);
      await ctx.until(
        async () => ((await undeleted(ctx.sqs, inventory.queueUrl)) === 0 ? true : undefined),
        'the backlog to drain',
        600_000,
      );
      const drainedAt = Date.now();

      // 5. The alarm clears.
      await ctx.until(
        () => Promise.resolve(alarmState(platform, ageAlarm) === 'OK' ? true : undefined),
        `${ageAlarm} to clear`,
        180_000,
      );
      const clearedAfterDrainSeconds = (Date.now() - drainedAt) / 1000;

      // 6. Facts: each backlog SKU reserved once; stale notifications aside, counted, never sent.
      let reservedOnce = 0;
      let reservedTwice = 0;
      let notReserved = 0;
      for (const s of backlogSkus) {
        const level = await store.get(s);
        const taken = STOCK - (level?.available ?? STOCK);
        if (taken === 1) reservedOnce += 1;
        else if (taken === 0) notReserved += 1;
        else reservedTwice += 1;
      }
      const dlq = await queueCounts(ctx.sqs, inventory.dlqUrl);
      const aside = await ctx
        .until(
          async () => {
            const d = await queueCounts(ctx.sqs, sideQueue);
            return d.visible >= sizes.expired ? d.visible : undefined;
          },
          'the stale notifications to reach the side queue',
          60_000,
        )
        .catch(async () => (await queueCounts(ctx.sqs, sideQueue)).visible);
      const deliveredAnyway = staleOrders.filter((id) => ledgerEntriesFor(ctx, 'messaging', id) > 0).length;

      return {
        sizes,
        clockFactor: target.clockFactor,
        ageAlarm: {
          name: ageAlarm,
          stateBefore,
          firedAfterSeconds,
          firedAfterClockSeconds:
            fired === undefined ? Number.NaN : (fired.at.getTime() - clockAtStart) / 1000,
          clearedAfterDrainSeconds,
          finalState: alarmState(platform, ageAlarm) ?? 'INSUFFICIENT_DATA',
        },
        criticalAgeAlarmFired,
        critical: { baselineMs, duringDrainMs, backlogLeftWhenCriticalDone },
        backlog: {
          drainSeconds: (drainedAt - resumedAt) / 1000,
          reservedOnce,
          reservedTwice,
          notReserved,
          inDlq: dlq.visible,
        },
        expired: {
          sent: sizes.expired,
          inSideQueue: aside,
          counted: target.metricTotal('JobExpired'),
          deliveredAnyway,
        },
        steps,
      };
    } finally {
      clearInterval(watch);
    }
  });
}
