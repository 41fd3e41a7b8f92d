/**
 * The scenario's part for the reference's order flow (lib/local/order-flow.ts says whether a
 * pipeline has it): steady payments through the HTTP API on seeded stock (lib/local/traffic.ts),
 * the incidents played on its payments, notifications and reservations
 * (lib/local/scenario-incidents.ts), and the facts its invariants read back — the orders' states,
 * the stock, the orders stream, the payment and messaging providers' ledgers. Kept apart from the
 * generic part of the scenario (lib/local/scenario.ts) so that it can move out with the example.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDbInventoryStore } from '../../examples/reference/domain/dynamodb-inventory-store';
import { ORDER_FLOW_FUNCTIONS, type OrderFlowTargets } from './order-flow';
import type { LocalPlatform } from './platform';
import type { ProviderTotals } from './report-model';
import { readOrderStates, readStock, readStreamRecords } from './scenario-facts';
import {
  readVisibilityTimeout,
  type IncidentContext,
  type IncidentOutcome,
  type IncidentSpec,
} from './scenario-incidents';
import type { OrderFlowFacts } from './scenario-invariants';
import { OBSERVED_EVENT, type FunctionOutputObserver } from './scenario-observer';
import type { ScenarioRedis } from './scenario-redis';
import type { ScenarioJobType } from './scenario-targets';
import { TrafficGenerator } from './traffic';

/** SKUs seeded per run, and their stock: plenty, so a reservation fails only when something is wrong. */
const SKU_COUNT = 6;
const SEEDED_STOCK = 100_000;

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

/** What the order flow's incidents get from the run besides the flow's own targets. */
export type OrderFlowIncidentShared = Pick<
  IncidentContext,
  'observer' | 'runId' | 'elapsedMs' | 'signal' | 'log' | 'recordPoison' | 'recordInjected' | 'setActive'
> & { readonly redis: ScenarioRedis };

/** The order flow during one run: its traffic, its incidents' context, and its facts after the drain. */
export class OrderFlowRun {
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

  /** The context the order flow's incidents act in. */
  public incidentContext(shared: OrderFlowIncidentShared): IncidentContext {
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
  public crashReturnsAtMs(plan: readonly IncidentSpec[], incidents: readonly IncidentOutcome[]): number {
    const crash = incidents.find((i) => i.record.kind === 'consumer-crash' && i.record.injected);
    if (crash === undefined) return 0;
    const visibility =
      plan.find((s) => s.kind === 'consumer-crash')?.shortenVisibility === true
        ? this.opts.targets.payment.functionTimeoutSeconds + 5
        : this.paymentVisibility;
    return crash.record.endMs + visibility * 1000;
  }

  /** The order flow's facts, read back after the drain. */
  public async facts(
    clients: { readonly dynamodb: DynamoDBClient; readonly streams: DynamoDBStreamsClient },
    observer: FunctionOutputObserver,
  ): Promise<OrderFlowFacts> {
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
      invalidator === undefined ? [] : readStreamRecords(clients.streams, invalidator.spec.streamArn),
    ]);
    return {
      jobTypes: {
        payment: targets.payment.name,
        notification: targets.notification.name,
        inventory: targets.inventory.name,
      },
      accepted,
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

  /** Repeated POSTs the ingress answered without a second job. */
  public duplicates(): { ingressRepeats: number; ingressInFlight: number } {
    return {
      ingressRepeats: this.traffic.stats.paymentRepeatsAnswered,
      ingressInFlight: this.traffic.stats.paymentInFlightAnswers,
    };
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

  /** Lines of the summary about the flow's traffic. */
  public summaryLines(): string[] {
    const abandoned = this.traffic.stats.paymentsAbandoned;
    return abandoned > 0 ? [`Payments the API never accepted (not expected to be PAID): ${abandoned}`] : [];
  }
}
