/**
 * The jobs tenang's drills send on the reference's job types (its extensions' drillJobs). A job of
 * payment.capture charges an order that must exist, PENDING, with the same amount, and a
 * notification is sent once per (order, template): jobs made from one samplePayload could not
 * stand for them. So each job here is an order placed through the API: its capture, or the
 * notification its payment makes the outbox relay send; each is judged done once by the order's
 * state and the provider fakes' ledgers.
 */
import { makeEnvelope } from 'tenang/runtime';
import { notificationKey, paymentCaptureKey } from '../domain';
import {
  jobTarget,
  queueDepth,
  type DrillContext,
  type DrillJob,
  type DrillJobs,
  type DrillJobVerdict,
} from 'tenang/local';
import {
  createOrder,
  ledgerEntriesFor,
  oncePerOrderChecks,
  orderStates,
  payOrder,
  seedSku,
  untilNotifiedAndDrained,
  type PlacedOrder,
} from './support';

/** One job of the drill: the order it is about, and whether the drill sent it. */
interface OrderJob extends DrillJob {
  readonly order: PlacedOrder;
}

/** Whether a job's `count` effects are done once, not yet, or twice (a capture's order paid too). */
function verdict(count: number, what: string, paid: boolean | undefined): DrillJobVerdict {
  const detail = `${count} ${what}${paid === undefined ? '' : `, order ${paid ? 'paid' : 'not paid'}`}`;
  if (count > 1) return { outcome: 'duplicated', detail };
  return count === 1 && paid !== false ? { outcome: 'ok', detail } : { outcome: 'lost', detail };
}

/** Orders placed and paid through the API, judged by the job type's own effect. */
class OrderJobs implements DrillJobs {
  public readonly target: DrillJobs['target'];
  public readonly providers: DrillJobs['providers'];
  private readonly jobs: OrderJob[] = [];
  private readonly sku: string;
  private seeded = false;

  public constructor(
    private readonly ctx: DrillContext,
    private readonly kind: 'capture' | 'notification',
  ) {
    this.target = jobTarget(ctx, kind === 'capture' ? 'payment.capture' : 'notification.send');
    this.providers = [ctx.platform.providers[kind === 'capture' ? 'payment' : 'messaging']];
    this.sku = `sku-${ctx.runId}-${kind}`;
  }

  /** The job's effects: charges of its order, or notifications of it. */
  private effects(job: OrderJob): number {
    return ledgerEntriesFor(this.ctx, this.kind === 'capture' ? 'payment' : 'messaging', job.order.orderId);
  }

  /** A new order (seeding the drill's SKU once), not paid yet. */
  private async order(tag: string): Promise<OrderJob> {
    if (!this.seeded) await seedSku(this.ctx, this.sku);
    this.seeded = true;
    const n = this.jobs.length + 1;
    const created = await createOrder(this.ctx, n, this.sku);
    const paymentId = `pay-${this.ctx.runId}-${this.kind}-${tag}`;
    const order: PlacedOrder = { ...created, paymentId, sku: this.sku };
    const job: OrderJob = {
      order,
      idempotencyKey:
        this.kind === 'capture' ? paymentCaptureKey(paymentId) : notificationKey(order.orderId, 'order-paid'),
      correlationId: `drill-${paymentId}`,
    };
    this.jobs.push(job);
    return job;
  }

  public async send(count: number): Promise<void> {
    for (let i = 0; i < count; i += 1) await this.sendOne(String(this.jobs.length + 1));
  }

  public async sendOne(tag: string): Promise<OrderJob> {
    const job = await this.order(tag);
    await payOrder(this.ctx, job.order, job.order.paymentId);
    return job;
  }

  public unsent(tag: string): Promise<OrderJob> {
    return this.order(tag);
  }

  public dlqMessage(job: DrillJob): ReturnType<DrillJobs['dlqMessage']> {
    const { order } = this.own(job);
    const envelope =
      this.kind === 'capture'
        ? makeEnvelope(
            'payment.capture',
            {
              orderId: order.orderId,
              paymentId: order.paymentId,
              amountMinor: order.amountMinor,
              currency: 'EUR',
            },
            { idempotencyKey: job.idempotencyKey, correlationId: job.correlationId, now: new Date() },
          )
        : makeEnvelope(
            'notification.send',
            {
              orderId: order.orderId,
              template: 'order-paid',
              recipient: `drill+${this.ctx.runId}@example.com`,
              orderVersion: 1,
            },
            { idempotencyKey: job.idempotencyKey, correlationId: job.correlationId, now: new Date() },
          );
    return {
      QueueUrl: this.target.dlqUrl,
      MessageBody: JSON.stringify(envelope),
      // The capture's DLQ is FIFO, grouped by order.
      ...(this.kind === 'capture'
        ? { MessageGroupId: order.orderId, MessageDeduplicationId: `${order.paymentId}-dead` }
        : {}),
    };
  }

  private own(job: DrillJob): OrderJob {
    const found = this.jobs.find((j) => j.idempotencyKey === job.idempotencyKey);
    if (found === undefined) throw new Error(`job ${job.idempotencyKey} is not one of the drill's`);
    return found;
  }

  public async verdictOf(job: DrillJob): Promise<DrillJobVerdict> {
    const own = this.own(job);
    if (this.kind === 'notification') return verdict(this.effects(own), 'notification(s)', undefined);
    const state = (await orderStates(this.ctx, [own.order.orderId])).get(own.order.orderId) ?? '';
    return verdict(this.effects(own), 'charge(s)', ['PAID', 'RESERVED'].includes(state));
  }

  public async done(): Promise<number> {
    let n = 0;
    for (const job of this.jobs) if ((await this.verdictOf(job)).outcome !== 'lost') n += 1;
    return n;
  }

  public async untilDone(): Promise<void> {
    const orders = this.jobs.map((j) => j.order);
    if (this.kind === 'notification') {
      await untilNotifiedAndDrained(this.ctx, orders, this.target.queueUrl);
      return;
    }
    await this.ctx.until(
      async () => ((await this.done()) >= this.jobs.length ? true : undefined),
      'every capture done',
      90_000,
    );
    await this.ctx.until(async () => {
      const d = await queueDepth(this.ctx.sqs, this.target.queueUrl);
      return d.visible + d.inFlight === 0 ? true : undefined;
    }, 'the payments queue to drain');
  }

  public async checks(): Promise<ReturnType<DrillContext['check']>[]> {
    const orders = this.jobs.map((j) => j.order);
    const states = await orderStates(
      this.ctx,
      orders.map((o) => o.orderId),
    );
    if (this.kind === 'notification') return oncePerOrderChecks(this.ctx, orders, states);
    const charges = orders.map((o) => ledgerEntriesFor(this.ctx, 'payment', o.orderId));
    const unpaid = orders.filter((o) => !['PAID', 'RESERVED'].includes(states.get(o.orderId) ?? ''));
    return [
      this.ctx.check(
        'one charge per order',
        charges.every((c) => c === 1),
        `charges per order: ${charges.join(', ')}`,
      ),
      this.ctx.check(
        'every order paid',
        unpaid.length === 0,
        unpaid.length === 0
          ? `${orders.length} PAID or RESERVED`
          : `not paid: ${unpaid.map((o) => o.orderId).join(', ')}`,
      ),
    ];
  }
}

/** payment.capture's jobs: orders paid through the API. */
export const captures = (ctx: DrillContext): DrillJobs => new OrderJobs(ctx, 'capture');

/** notification.send's jobs: the notifications of orders paid through the API. */
export const orderNotifications = (ctx: DrillContext): DrillJobs => new OrderJobs(ctx, 'notification');
