/**
 * The reference's order flow as a scenario flow of tenang's (tenang/local ScenarioFlow; the
 * reference's extensions hand it in, ./index.ts): steady payments through the HTTP API on seeded
 * stock (./traffic.ts), the incidents played on its payments, notifications and reservations
 * (./order-incidents.ts), the facts its invariants read back — the orders' states, the stock, the
 * orders stream, the payment and messaging providers' ledgers (./order-facts.ts,
 * ./order-invariants.ts) — and its parts of the report: the cache, the duplicates the ingress and
 * the outbox absorbed. `tenang local up` stocks a few SKUs with its seed hook. tenang's scenario
 * runs the declared job types' jobs beside it.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import {
  counterOf,
  OBSERVED_EVENT,
  perInterval,
  readVisibilityTimeout,
  REPORT_METRIC,
  type FlowClients,
  type FlowIncident,
  type FlowIncidentOutcome,
  type FlowIncidentShared,
  type FlowReport,
  type FunctionOutputObserver,
  type InvariantResult,
  type JobInvariantFacts,
  type LocalPlatform,
  type PipelineSample,
  type ProviderTotals,
  type ScenarioFlow,
  type ScenarioFlowContext,
  type ScenarioFlowRun,
  type ScenarioJobType,
} from 'tenang/local';
import { DynamoDbInventoryStore } from '../domain';
import { readOrderStates, readOrderStream, readStock } from './order-facts';
import {
  ORDER_FLOW_FUNCTIONS,
  orderFlowJobTypes,
  resolveOrderFlowTargets,
  type OrderFlowTargets,
} from './order-flow';
import {
  runIncident,
  type IncidentContext,
  type IncidentOutcome,
  type IncidentSpec,
} from './order-incidents';
import { checkOrderFlowInvariants, type InvariantFacts, type OrderFlowFacts } from './order-invariants';
import { TrafficGenerator } from './traffic';

/** SKUs seeded per run, and their stock: plenty, so a reservation fails only when something is wrong. */
const SKU_COUNT = 6;
const SEEDED_STOCK = 100_000;

const outageLength = (d: number): number => Math.max(4, Math.min(30, Math.round(d * 0.17)));

/**
 * The order flow's incidents of each of tenang's scenarios (lib/local/scenario.ts SCENARIOS), for
 * a run with `d` seconds of traffic; a scenario not named here plays none of them.
 */
export const ORDER_FLOW_INCIDENTS: Readonly<Record<string, (d: number) => readonly IncidentSpec[]>> = {
  default: (d) => [
    { kind: 'consumer-crash', atSeconds: Math.min(10, d * 0.05) },
    { kind: 'poison-message', atSeconds: d * 0.15 },
    { kind: 'provider-outage', atSeconds: d * 0.25, durationSeconds: outageLength(d) },
    { kind: 'redis-down', atSeconds: d * 0.5, durationSeconds: outageLength(d) },
    { kind: 'duplicate-burst', atSeconds: d * 0.75, copies: 20 },
  ],
  smoke: (d) => [
    { kind: 'consumer-crash', atSeconds: 0.5, shortenVisibility: true },
    // The crash is armed ~7 s in (after the pollers took up the shorter visibility timeout),
    // before the provider outage, which would keep captures from reaching the crash point.
    { kind: 'poison-message', atSeconds: d * 0.12 },
    {
      kind: 'provider-outage',
      atSeconds: Math.max(9, d * 0.3),
      durationSeconds: Math.max(3, Math.round(d * 0.17)),
    },
    { kind: 'redis-down', atSeconds: d * 0.55, durationSeconds: Math.max(3, Math.round(d * 0.17)) },
    { kind: 'duplicate-burst', atSeconds: d * 0.8, copies: 10 },
  ],
  steady: () => [],
};

/** The order-reader's service name, which emits the cache metrics. */
export const CACHE_SERVICE = ORDER_FLOW_FUNCTIONS.reader;

/** What the order flow's part of a run is started with. */
export interface OrderFlowOptions {
  readonly platform: LocalPlatform;
  readonly targets: OrderFlowTargets<ScenarioJobType>;
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  readonly runId: string;
  /** Payments per second. */
  readonly ratePerSecond: number;
  /** Ms since the traffic's start. */
  readonly elapsedMs: () => number;
  readonly log: (line: string) => void;
}

/** Cache reads over the run. */
export interface CacheTotals {
  readonly hits: number;
  readonly misses: number;
  /** Reads served from DynamoDB because Redis did not answer (also counted as misses). */
  readonly bypasses: number;
  /** hits / (hits + misses), or null without reads. */
  readonly hitRatio: number | null;
}

/** Cache totals from the last sample's counters. */
export function cacheTotals(samples: readonly PipelineSample[]): CacheTotals {
  const counters = samples[samples.length - 1]?.counters ?? {};
  const hits = counterOf(counters, CACHE_SERVICE, REPORT_METRIC.cacheHit);
  const misses = counterOf(counters, CACHE_SERVICE, REPORT_METRIC.cacheMiss);
  const bypasses = counterOf(counters, CACHE_SERVICE, REPORT_METRIC.cacheBypass);
  return { hits, misses, bypasses, hitRatio: hits + misses === 0 ? null : hits / (hits + misses) };
}

/** Hit ratio of the reads within each interval; null where there were none. */
export function cacheHitRatioSeries(samples: readonly PipelineSample[]): (number | null)[] {
  const hits = perInterval(samples.map((s) => counterOf(s.counters, CACHE_SERVICE, REPORT_METRIC.cacheHit)));
  const misses = perInterval(
    samples.map((s) => counterOf(s.counters, CACHE_SERVICE, REPORT_METRIC.cacheMiss)),
  );
  return hits.map((h, i) => {
    const reads = h + (misses[i] ?? 0);
    return reads === 0 ? null : h / reads;
  });
}

/** The order flow's parts of the report: the cache, the duplicates the ingress and the outbox absorbed. */
export function orderFlowReport(
  samples: readonly PipelineSample[],
  ingress: { readonly repeats: number; readonly inFlight: number },
  abandoned: number,
): FlowReport {
  const cache = cacheTotals(samples);
  const counters = samples[samples.length - 1]?.counters ?? {};
  const ratio = cache.hitRatio === null ? 'no reads' : `${(cache.hitRatio * 100).toFixed(1)}%`;
  return {
    name: 'order flow',
    rateUnit: 'payments/s',
    facts: [
      {
        label: 'cache hit ratio',
        value: `${ratio} (${cache.hits} hits, ${cache.misses} misses of which ${cache.bypasses} bypasses)`,
      },
    ],
    duplicates: [
      {
        where: 'ingress: repeated Idempotency-Key answered with the first job (202)',
        count: ingress.repeats,
      },
      { where: 'ingress: repeat while the first was in flight (409)', count: ingress.inFlight },
      {
        where: 'outbox relay: follow-up already enqueued',
        count: counterOf(counters, ORDER_FLOW_FUNCTIONS.outbox, REPORT_METRIC.duplicateIgnored),
      },
    ],
    charts: [
      {
        id: 'cache-hit-ratio',
        title: 'Cache hit ratio per interval (gaps: no reads)',
        unit: 'hit ratio',
        values: cacheHitRatioSeries(samples),
        yMax: 1,
        percent: true,
      },
    ],
    summary: [
      `Cache hit ratio: ${ratio} (${cache.hits} hits, ${cache.misses} misses, ${cache.bypasses} bypasses)`,
      ...(abandoned > 0 ? [`Payments the API never accepted (not expected to be PAID): ${abandoned}`] : []),
    ],
  };
}

/** The order flow during one run: its traffic, its incidents' context, and its facts after the drain. */
export class OrderFlowRun implements ScenarioFlowRun {
  /** The incidents planned for the run (incidents()). */
  private plan: readonly IncidentSpec[] = [];
  /** The facts, once judged: what the incidents' observations read. */
  private judged: InvariantFacts | undefined;

  private constructor(
    private readonly opts: OrderFlowOptions,
    public readonly traffic: TrafficGenerator,
    private readonly seeded: ReadonlyMap<string, number>,
    /** The payments queue's visibility timeout as deployed, s. */
    private readonly paymentVisibility: number,
  ) {}

  /** Seeds the run's stock and readies its traffic (not started). */
  public static async prepare(opts: OrderFlowOptions): Promise<OrderFlowRun> {
    const skus = Array.from({ length: SKU_COUNT }, (_, i) => `sku-${opts.runId}-${i + 1}`);
    const inventory = new DynamoDbInventoryStore(opts.dynamodb, opts.targets.inventoryTable);
    for (const sku of skus) await inventory.seed(sku, SEEDED_STOCK);
    const paymentVisibility = await readVisibilityTimeout(opts.sqs, opts.targets.payment.queueUrl);
    const traffic = new TrafficGenerator({
      apiUrl: opts.platform.api.url,
      runId: opts.runId,
      skus,
      ratePerSecond: opts.ratePerSecond,
      elapsedMs: opts.elapsedMs,
      log: opts.log,
    });
    return new OrderFlowRun(opts, traffic, new Map(skus.map((s) => [s, SEEDED_STOCK])), paymentVisibility);
  }

  /** Starts the payments; says so. */
  public start(): void {
    this.traffic.start();
    this.opts.log(
      `traffic started: ${this.opts.ratePerSecond} payments/s through ${this.opts.platform.api.url}`,
    );
  }

  /** Stops the payments (in-flight requests finish). */
  public stop(): Promise<void> {
    return this.traffic.stop();
  }

  /** What the run drives. */
  public describe(): string {
    const { payment, notification, inventory } = this.opts.targets;
    return `order flow: ${[payment, notification, inventory].map((j) => j.name).join(', ')}`;
  }

  /** The order flow's incidents of scenario `scenario` (ORDER_FLOW_INCIDENTS). */
  public incidents(scenario: string, durationSeconds: number): readonly FlowIncident[] {
    this.plan = ORDER_FLOW_INCIDENTS[scenario]?.(durationSeconds) ?? [];
    return this.plan.map((spec) => ({
      atSeconds: spec.atSeconds,
      run: async (shared: FlowIncidentShared): Promise<FlowIncidentOutcome> => {
        const outcome: IncidentOutcome = await runIncident(spec, this.incidentContext(shared));
        return {
          record: outcome.record,
          after: () => (this.judged === undefined ? [] : (outcome.after?.(this.judged) ?? [])),
        };
      },
    }));
  }

  /** The context the order flow's incidents act in. */
  public incidentContext(shared: FlowIncidentShared): IncidentContext {
    const { payment, notification, inventory } = this.opts.targets;
    return {
      ...shared,
      platform: this.opts.platform,
      traffic: this.traffic,
      sqs: this.opts.sqs,
      queues: { payment, notification, inventory },
      services: {
        payment: payment.consumer,
        notification: notification.consumer,
        reader: ORDER_FLOW_FUNCTIONS.reader,
      },
    };
  }

  /**
   * Ms after the traffic's start by which the planned payment crash's batch is back: its
   * visibility timeout after the crash (the shortened one when the plan shortened it); 0 without one.
   */
  public crashReturnsAtMs(incidents: readonly FlowIncidentOutcome[]): number {
    const crash = incidents.find((i) => i.record.kind === 'consumer-crash' && i.record.injected);
    if (crash === undefined) return 0;
    const visibility =
      this.plan.find((s) => s.kind === 'consumer-crash')?.shortenVisibility === true
        ? this.opts.targets.payment.functionTimeoutSeconds + 5
        : this.paymentVisibility;
    return crash.record.endMs + visibility * 1000;
  }

  /** Reads the order flow's facts back and judges them with the facts of any app. */
  public async judge(
    clients: FlowClients,
    observer: FunctionOutputObserver,
    jobFacts: JobInvariantFacts,
  ): Promise<readonly InvariantResult[]> {
    this.judged = { ...jobFacts, ...(await this.facts(clients, observer)) };
    return checkOrderFlowInvariants(this.judged);
  }

  /** The order flow's facts, read back after the drain. */
  public async facts(clients: FlowClients, observer: FunctionOutputObserver): Promise<OrderFlowFacts> {
    const { platform, targets } = this.opts;
    const accepted = this.traffic.accepted();
    const invalidator = platform.streamSources.find((x) =>
      x.spec.functionName.endsWith('-cache-invalidator'),
    );
    const [orderStates, stock, streamRecords] = await Promise.all([
      readOrderStates(
        clients.dynamodb,
        targets.ordersTable,
        accepted.map((a) => a.orderId),
      ),
      readStock(clients.dynamodb, targets.inventoryTable, this.seeded),
      invalidator === undefined ? [] : readOrderStream(clients.streams, invalidator.spec.streamArn),
    ]);
    return {
      jobTypes: {
        payment: targets.payment.name,
        notification: targets.notification.name,
        inventory: targets.inventory.name,
      },
      accepted,
      unsettled: this.traffic.unsettled(),
      charges: platform.providers.payment.ledger(),
      messages: platform.providers.messaging.ledger(),
      orderStates,
      stock,
      stream: {
        records: streamRecords,
        // The invalidator logs every record it receives; the outbox relay only the PAID ones.
        consumers:
          invalidator === undefined
            ? []
            : [
                {
                  consumer: 'cache-invalidator',
                  highestSeen: observer.highestSequence(invalidator.spec.functionName),
                },
              ],
      },
    };
  }

  /** Jobs put on the flow's queues: payments the API accepted, follow-ups the outbox relayed, and injected ones. */
  public jobsIn(
    observer: FunctionOutputObserver,
    injected: Readonly<Record<string, number>>,
  ): Record<string, number> {
    const { payment, notification, inventory } = this.opts.targets;
    const accepted = this.traffic.accepted();
    const apiPayments = new Set(accepted.filter((a) => a.via === 'api').map((a) => a.paymentId)).size;
    const followUps = (name: string): number =>
      observer.eventCount(`${OBSERVED_EVENT.followUpPrefix}${name}`) + (injected[name] ?? 0);
    return {
      [payment.name]: apiPayments + (injected[payment.name] ?? 0),
      [notification.name]: followUps(notification.name),
      [inventory.name]: followUps(inventory.name),
    };
  }

  /** The order flow's parts of the report. */
  public report(samples: readonly PipelineSample[]): FlowReport {
    const s = this.traffic.stats;
    return orderFlowReport(
      samples,
      { repeats: s.paymentRepeatsAnswered, inFlight: s.paymentInFlightAnswers },
      s.paymentsAbandoned,
    );
  }

  /** What the payment and messaging providers saw. */
  public providers(): Record<'payment' | 'messaging', ProviderTotals> {
    const { payment, messaging } = this.opts.platform.providers;
    return {
      payment: { requests: payment.requestCount(), effects: payment.ledger().length },
      messaging: { requests: messaging.requestCount(), effects: messaging.ledger().length },
    };
  }

  /** The live status's traffic line. */
  public statusLine(): string {
    const s = this.traffic.stats;
    const { payment, messaging } = this.opts.platform.providers;
    const hits = s.readsByCache.hit ?? 0;
    const ratio = s.reads === 0 ? '-' : `${Math.round((hits / s.reads) * 100)}%`;
    return `orders ${s.ordersCreated} · payments accepted ${s.paymentsAccepted} · reads ${s.reads} (hit ${ratio}) · charges ${payment.ledger().length} · messages ${messaging.ledger().length}`;
  }
}

/** SKUs `local up` stocks, so an order posted by hand is reserved rather than dead-lettered. */
export const UP_SKUS: readonly string[] = ['sku-1', 'sku-2', 'sku-3'];
const UP_STOCK = 1_000;

/** Sets the stock of UP_SKUS in the deployed inventory table (none: the pipeline has no order flow). */
export async function seedStock(platform: LocalPlatform, log: (line: string) => void): Promise<void> {
  const table = [...platform.deployment.functions.values()]
    .map((f) => f.environment.INVENTORY_TABLE)
    .find((t): t is string => t !== undefined && t !== '');
  if (table === undefined) return;
  const dynamodb = new DynamoDBClient({ endpoint: platform.env.endpoint, region: platform.env.region });
  try {
    const store = new DynamoDbInventoryStore(dynamodb, table);
    for (const sku of UP_SKUS) await store.seed(sku, UP_STOCK);
    log(`stock: ${UP_SKUS.join(', ')} at ${UP_STOCK} each in ${table}`);
  } finally {
    dynamodb.destroy();
  }
}

/** The reference's order flow, as tenang's scenario runs it. */
export const orderScenarioFlow: ScenarioFlow = {
  name: 'order flow',
  jobTypes: orderFlowJobTypes,
  prepare: (ctx: ScenarioFlowContext) =>
    OrderFlowRun.prepare({
      platform: ctx.platform,
      targets: resolveOrderFlowTargets(ctx.platform, ctx.jobTypes),
      sqs: ctx.sqs,
      dynamodb: ctx.dynamodb,
      runId: ctx.runId,
      ratePerSecond: ctx.ratePerSecond,
      elapsedMs: ctx.elapsedMs,
      log: ctx.log,
    }),
  seed: seedStock,
};
