/**
 * Steady traffic against the local HTTP API, the way real clients behave: each payment is an
 * order (POST /orders) then a capture (POST /orders/{id}/payments) with its own Idempotency-Key,
 * retried with the same key on 409, 5xx and network errors; orders are read back
 * (GET /orders/{id}) to exercise the cache. Payments create the notification and inventory jobs
 * through the outbox, so one payment stream drives all three job types.
 */
import { callApi, type ApiAnswer } from 'tenang/local';

/** A line of an order. */
export interface TrafficOrderLine {
  readonly sku: string;
  readonly quantity: number;
}

/** A payment the API accepted (202): it must end PAID. */
export interface AcceptedPayment {
  readonly orderId: string;
  readonly paymentId: string;
  /** The HTTP Idempotency-Key the client sent (the ingress dedup key). */
  readonly requestKey: string;
  readonly lines: readonly TrafficOrderLine[];
  readonly amountMinor: number;
  readonly currency: string;
  /** How it got on the queue: through the API, or injected straight onto the queue. */
  readonly via: 'api' | 'queue';
  readonly acceptedAtMs: number;
}

/** Counters of what the traffic did. */
export interface TrafficStats {
  ordersCreated: number;
  paymentsAccepted: number;
  /** POSTs answered 202 with duplicate: true. */
  paymentRepeatsAnswered: number;
  /** POSTs answered 409 (a request with the key in flight). */
  paymentInFlightAnswers: number;
  /** Payments given up after every retry failed (never accepted: not expected to be PAID). */
  paymentsAbandoned: number;
  reads: number;
  readsByCache: Record<string, number>;
  /** Answers by HTTP status (0: network error). */
  byStatus: Record<string, number>;
  /** Ticks skipped because too many requests were in flight. */
  skippedTicks: number;
}

/** Options of TrafficGenerator. */
export interface TrafficOptions {
  readonly apiUrl: string;
  /** Makes ids unique per run. */
  readonly runId: string;
  /** SKUs with stock (seeded by the scenario). */
  readonly skus: readonly string[];
  /** Payments per second. */
  readonly ratePerSecond: number;
  /** Order reads per payment. @default 2 */
  readonly readsPerPayment?: number;
  /** Requests in flight at most; a tick beyond it is skipped. @default 16 */
  readonly maxInFlight?: number;
  /** How often a capture is retried with the same key before giving up. @default 8 */
  readonly maxAttempts?: number;
  /** Pause before a retry, ms. @default 1000 */
  readonly retryDelayMs?: number;
  /** @default Math.random */
  readonly random?: () => number;
  /** Milliseconds since the run started. */
  readonly elapsedMs: () => number;
  readonly log: (line: string) => void;
}

const TICK_MS = 100;
/** Orders kept as read candidates: recent ones, so reads meet both fresh and cached orders. */
const READ_WINDOW = 40;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The steady traffic of a scenario. */
export class TrafficGenerator {
  public readonly stats: TrafficStats = {
    ordersCreated: 0,
    paymentsAccepted: 0,
    paymentRepeatsAnswered: 0,
    paymentInFlightAnswers: 0,
    paymentsAbandoned: 0,
    reads: 0,
    readsByCache: {},
    byStatus: {},
    skippedTicks: 0,
  };
  private readonly acceptedPayments: AcceptedPayment[] = [];
  private readonly unsettledPayments: string[] = [];
  private readonly readable: string[] = [];
  private readonly pending = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private paymentCredit = 0;
  private readCredit = 0;
  private sequence = 0;
  private stopping = false;
  private readonly random: () => number;

  public constructor(private readonly opts: TrafficOptions) {
    this.random = opts.random ?? Math.random;
  }

  /**
   * The payments given up without a definite answer: every answer was a timeout, a 5xx, a network
   * error or a 409, so the client cannot know whether its job was enqueued (an ingress that times
   * out after its send is answered 503 by the API). Each may be charged once, never twice.
   */
  public unsettled(): readonly string[] {
    return [...this.unsettledPayments];
  }

  /** Every payment accepted so far (by the API, or recorded by an incident). */
  public accepted(): readonly AcceptedPayment[] {
    return [...this.acceptedPayments];
  }

  /** Records a payment an incident put on the queue itself. */
  public recordAccepted(payment: AcceptedPayment): void {
    this.acceptedPayments.push(payment);
    this.readable.push(payment.orderId);
  }

  /** Starts ticking. */
  public start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.tick(), TICK_MS);
  }

  /** Stops producing (and retrying) and waits for the requests in flight. */
  public async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  /** A fresh, unique id part. */
  public nextId(): string {
    this.sequence += 1;
    return `${this.opts.runId}-${this.sequence}`;
  }

  /** A random order body over the seeded SKUs: one or two distinct SKUs. */
  public orderBody(): {
    customerEmail: string;
    lines: TrafficOrderLine[];
    amountMinor: number;
    currency: string;
  } {
    const skus = this.opts.skus;
    const first = Math.floor(this.random() * skus.length);
    const picked = [skus[first]];
    // Two lines of one SKU would be one reservation (reservations are per order and SKU).
    if (skus.length > 1 && this.random() < 0.4) picked.push(skus[(first + 1) % skus.length]);
    return {
      customerEmail: `customer+${this.sequence}@example.com`,
      lines: picked
        .filter((s): s is string => s !== undefined)
        .map((sku) => ({ sku, quantity: 1 + Math.floor(this.random() * 3) })),
      amountMinor: 500 + Math.floor(this.random() * 49_500),
      currency: 'EUR',
    };
  }

  /** Creates an order; undefined when the API refused it. */
  public async createOrder(): Promise<
    { orderId: string; body: ReturnType<TrafficGenerator['orderBody']> } | undefined
  > {
    const body = this.orderBody();
    const answer = await this.call('POST', '/orders', body);
    const orderId = (answer.body as { orderId?: unknown } | undefined)?.orderId;
    if (answer.status !== 201 || typeof orderId !== 'string') {
      this.opts.log(`traffic: POST /orders answered ${answer.status}`);
      return undefined;
    }
    this.stats.ordersCreated += 1;
    return { orderId, body };
  }

  /**
   * Posts a capture until it is accepted (202) or every attempt failed, like a client that keeps
   * its Idempotency-Key across retries. Returns the answers seen.
   */
  public async capture(
    order: { orderId: string; body: ReturnType<TrafficGenerator['orderBody']> },
    paymentId: string,
    requestKey: string,
  ): Promise<{ accepted: boolean; statuses: number[]; duplicates: number }> {
    const statuses: number[] = [];
    let duplicates = 0;
    const attempts = this.opts.maxAttempts ?? 8;
    for (let attempt = 1; attempt <= attempts; attempt += 1) {
      const answer = await this.postPayment(order.orderId, paymentId, order.body, requestKey);
      statuses.push(answer.status);
      if (answer.status === 202) {
        if ((answer.body as { duplicate?: unknown } | undefined)?.duplicate === true) duplicates += 1;
        this.recordAccepted({
          orderId: order.orderId,
          paymentId,
          requestKey,
          lines: order.body.lines,
          amountMinor: order.body.amountMinor,
          currency: order.body.currency,
          via: 'api',
          acceptedAtMs: this.opts.elapsedMs(),
        });
        this.stats.paymentsAccepted += 1;
        return { accepted: true, statuses, duplicates };
      }
      if (this.stopping || (answer.status !== 409 && answer.status !== 0 && answer.status < 500)) break;
      await sleep(this.opts.retryDelayMs ?? 1000);
    }
    this.stats.paymentsAbandoned += 1;
    // Every answer but the last was one of these (the loop retries only on them): the last says it.
    const last = statuses[statuses.length - 1] ?? 0;
    if (last === 0 || last === 409 || last >= 500) this.unsettledPayments.push(paymentId);
    this.opts.log(`traffic: payment ${paymentId} not accepted (answers ${statuses.join(', ')})`);
    return { accepted: false, statuses, duplicates };
  }

  /** One POST /orders/{id}/payments, counted. */
  public async postPayment(
    orderId: string,
    paymentId: string,
    body: { amountMinor: number; currency: string },
    requestKey: string,
  ): Promise<ApiAnswer> {
    const answer = await this.call(
      'POST',
      `/orders/${encodeURIComponent(orderId)}/payments`,
      { paymentId, amountMinor: body.amountMinor, currency: body.currency },
      { 'idempotency-key': requestKey },
    );
    if (answer.status === 202 && (answer.body as { duplicate?: unknown } | undefined)?.duplicate === true) {
      this.stats.paymentRepeatsAnswered += 1;
    }
    if (answer.status === 409) this.stats.paymentInFlightAnswers += 1;
    return answer;
  }

  /** One GET /orders/{id}, counted by its X-Cache answer. */
  public async read(orderId: string): Promise<ApiAnswer> {
    const answer = await this.call('GET', `/orders/${encodeURIComponent(orderId)}`);
    this.stats.reads += 1;
    const cache = answer.headers?.get('x-cache') ?? `status-${answer.status}`;
    this.stats.readsByCache[cache] = (this.stats.readsByCache[cache] ?? 0) + 1;
    return answer;
  }

  private async call(
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<ApiAnswer> {
    const answer = await callApi(this.opts.apiUrl, method, path, body, headers);
    this.stats.byStatus[String(answer.status)] = (this.stats.byStatus[String(answer.status)] ?? 0) + 1;
    return answer;
  }

  private tick(): void {
    this.paymentCredit += (this.opts.ratePerSecond * TICK_MS) / 1000;
    this.readCredit += (this.opts.ratePerSecond * (this.opts.readsPerPayment ?? 2) * TICK_MS) / 1000;
    const maxInFlight = this.opts.maxInFlight ?? 16;
    while (this.paymentCredit >= 1) {
      this.paymentCredit -= 1;
      if (this.pending.size >= maxInFlight) {
        this.stats.skippedTicks += 1;
        continue;
      }
      this.background(this.onePayment());
    }
    while (this.readCredit >= 1) {
      this.readCredit -= 1;
      const candidates = this.readable.slice(-READ_WINDOW);
      const orderId = candidates[Math.floor(this.random() * candidates.length)];
      if (orderId === undefined || this.pending.size >= maxInFlight) continue;
      this.background(this.read(orderId));
    }
  }

  private async onePayment(): Promise<void> {
    const id = this.nextId();
    const order = await this.createOrder();
    if (order === undefined) return;
    await this.capture(order, `pay-${id}`, `key-${id}`);
  }

  /** Runs `work` as part of the traffic: stop() waits for it. */
  public background(work: Promise<unknown>): void {
    const tracked = work.then(
      () => undefined,
      (error: unknown) => this.opts.log(`traffic: ${String(error)}`),
    );
    this.pending.add(tracked);
    void tracked.finally(() => this.pending.delete(tracked));
  }
}
