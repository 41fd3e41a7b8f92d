/**
 * The order flow's incidents, injected into the running local pipeline, each through the same
 * knob an operator or a failing dependency would turn: the fake providers' fault knobs, the
 * platform's crash hook, a malformed message sent straight to a queue, the scenario's own
 * redis-server stopped and restarted, and duplicates sent through the API and onto the queues.
 * Each returns what it did and, for after the run, what to look up in the order flow's facts.
 */
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import {
  counterOf,
  OBSERVED_EVENT,
  pause,
  readVisibilityTimeout,
  setVisibilityTimeout,
  type FlowIncidentShared,
  type IncidentQueue,
  type IncidentRecord,
  type LedgerEntry,
  type LocalPlatform,
} from 'tenang/local';
import { followUpKey, notificationKey, paymentCaptureKey } from '../domain';
import { makeEnvelope } from 'tenang/runtime';
import type { InvariantFacts } from './order-invariants';
import type { TrafficGenerator } from './traffic';

/** What a scenario can inject. */
export type IncidentKind =
  'consumer-crash' | 'poison-message' | 'provider-outage' | 'redis-down' | 'duplicate-burst';

/** One incident of a scenario's plan. */
export interface IncidentSpec {
  readonly kind: IncidentKind;
  /** When, seconds after traffic starts. */
  readonly atSeconds: number;
  /** provider-outage, redis-down: how long. */
  readonly durationSeconds?: number;
  /** duplicate-burst: how many times the same payment is posted at once. @default 20 */
  readonly copies?: number;
  /**
   * consumer-crash: while the crash is armed, lower the payments queue's visibility timeout to the
   * function timeout + 5 s (from the deployed 6×), so the crashed batch returns within a short
   * run; restored as soon as the crash happened. @default false
   */
  readonly shortenVisibility?: boolean;
}

/** What incidents act on: the scenario's shared parts and the order flow's own. */
export interface IncidentContext extends FlowIncidentShared {
  readonly platform: LocalPlatform;
  readonly traffic: TrafficGenerator;
  readonly sqs: SQSClient;
  readonly queues: {
    readonly payment: IncidentQueue;
    readonly notification: IncidentQueue;
    readonly inventory: IncidentQueue;
  };
  /** Service names (metrics' service dimension) of the consumers. */
  readonly services: { readonly payment: string; readonly notification: string; readonly reader: string };
}

/** An incident's outcome: its record now, and observations to add once the run's facts are in. */
export interface IncidentOutcome {
  readonly record: IncidentRecord;
  readonly after?: (facts: InvariantFacts) => string[];
}

/** Titles shown in the live status and the report. */
export const INCIDENT_TITLE: Readonly<Record<IncidentKind, string>> = {
  'consumer-crash': 'payment consumer crash after the charge',
  'poison-message': 'poison messages',
  'provider-outage': 'provider outage',
  'redis-down': 'Redis down',
  'duplicate-burst': 'duplicate burst',
};

/** Runs one incident; an injection that fails is recorded, not thrown (the run goes on). */
export async function runIncident(spec: IncidentSpec, ctx: IncidentContext): Promise<IncidentOutcome> {
  const title = INCIDENT_TITLE[spec.kind];
  const startMs = ctx.elapsedMs();
  ctx.setActive(title, true);
  ctx.log(`incident: ${title} begins`);
  try {
    const outcome = await INJECT[spec.kind](spec, ctx, startMs);
    ctx.log(`incident: ${title} over: ${outcome.record.observed.join('; ')}`);
    return outcome;
  } catch (error) {
    ctx.log(`incident: ${title} could not be injected: ${(error as Error).message}`);
    return {
      record: {
        kind: spec.kind,
        title,
        startMs,
        endMs: ctx.elapsedMs(),
        how: 'injection failed',
        observed: [],
        injected: false,
        error: (error as Error).message,
      },
    };
  } finally {
    ctx.setActive(title, false);
  }
}

type Injector = (spec: IncidentSpec, ctx: IncidentContext, startMs: number) => Promise<IncidentOutcome>;

function record(
  spec: IncidentSpec,
  ctx: IncidentContext,
  startMs: number,
  how: string,
  observed: string[],
): IncidentRecord {
  return {
    kind: spec.kind,
    title: INCIDENT_TITLE[spec.kind],
    startMs,
    endMs: ctx.elapsedMs(),
    how,
    observed,
    injected: true,
  };
}

function counter(ctx: IncidentContext, service: string, metric: string): number {
  return counterOf(ctx.observer.snapshot(), service, metric);
}

function chargesFor(ledger: readonly { idempotencyKey: string }[], key: string): number {
  return ledger.filter((e) => e.idempotencyKey === key).length;
}

/**
 * The pollers re-read a queue's visibility timeout every 5 s (lib/local/sqs-event-source.ts), and
 * a batch received before that keeps the old timeout: the crash is armed once they all use the new one.
 */
const ARM_AFTER_VISIBILITY_CHANGE_MS = 6_500;

/** A crash after the provider charged and before the order is marked PAID (I4). */
const consumerCrash: Injector = async (spec, ctx, startMs) => {
  const q = ctx.queues.payment;
  const deployedVisibility = await readVisibilityTimeout(ctx.sqs, q.queueUrl);
  const shortened = q.functionTimeoutSeconds + 5;
  if (spec.shortenVisibility === true) {
    await setVisibilityTimeout(ctx.sqs, q.queueUrl, shortened);
    await pause(ARM_AFTER_VISIBILITY_CHANGE_MS, ctx.signal);
  }
  const crashesBefore = ctx.observer.eventCount(OBSERVED_EVENT.crash);
  let crashedAtMs: number | undefined;
  let ledgerAtCrash: readonly LedgerEntry[] = [];
  const onCrash = new Promise<void>((resolve) =>
    ctx.observer.onEvent((e) => {
      if (e.key === OBSERVED_EVENT.crash && e.functionName === q.functionName && crashedAtMs === undefined) {
        crashedAtMs = ctx.elapsedMs();
        ledgerAtCrash = ctx.platform.providers.payment.ledger();
        resolve();
      }
    }),
  );
  try {
    // Armed until it fires: the instance keeps the crash point until an invocation reaches it.
    for (
      let attempt = 1;
      attempt <= 3 && ctx.observer.eventCount(OBSERVED_EVENT.crash) === crashesBefore;
      attempt += 1
    ) {
      ctx.platform.crashNextInvocation(q.functionName, ['after-side-effect']);
      // A fresh payment, so the next invocation charges something even when traffic is quiet.
      const order = await ctx.traffic.createOrder();
      if (order !== undefined) {
        const id = ctx.traffic.nextId();
        ctx.traffic.background(ctx.traffic.capture(order, `pay-crash-${id}`, `key-crash-${id}`));
      }
      const fired = await Promise.race([
        onCrash.then(() => true),
        pause(15_000, ctx.signal).then(() => false),
      ]);
      if (fired || ctx.signal.aborted) break;
    }
  } finally {
    if (spec.shortenVisibility === true) await setVisibilityTimeout(ctx.sqs, q.queueUrl, deployedVisibility);
  }
  if (crashedAtMs === undefined)
    throw new Error('the armed crash never fired (no capture reached the crash point)');
  // The crashed capture charged last before the process died.
  const crashed = ledgerAtCrash[ledgerAtCrash.length - 1];
  const visibility = spec.shortenVisibility === true ? shortened : deployedVisibility;
  return {
    record: record(
      spec,
      ctx,
      startMs,
      `platform.crashNextInvocation(payment-consumer, ['after-side-effect']): the process is SIGKILLed right after the provider charged, before the order is marked PAID${spec.shortenVisibility === true ? `; the payments queue's visibility timeout was ${shortened} s (function timeout + 5 s) while armed, ${deployedVisibility} s as deployed` : ''}`,
      [
        `crashed at ${(crashedAtMs / 1000).toFixed(1)} s; the batch returns after the ${visibility} s visibility timeout`,
        crashed === undefined
          ? 'no charge seen before the crash'
          : `crashed capture: ${crashed.idempotencyKey}`,
      ],
    ),
    after: (facts) => {
      if (crashed === undefined) return [];
      const payment = facts.accepted.find((p) => paymentCaptureKey(p.paymentId) === crashed.idempotencyKey);
      const state = payment === undefined ? 'unknown' : (facts.orderStates.get(payment.orderId) ?? 'missing');
      return [
        `after redelivery: ${chargesFor(facts.charges, crashed.idempotencyKey)} charge(s) for that key, order ${state}`,
      ];
    },
  };
};

/** Malformed messages sent straight to each job type's queue. */
const poisonMessage: Injector = async (spec, ctx, startMs) => {
  const { payment, notification, inventory } = ctx.queues;
  const bodies: { queue: IncidentQueue; body: string; what: string }[] = [
    {
      queue: payment,
      body: JSON.stringify({
        type: 'payment.capture',
        version: 1,
        poison: ctx.runId,
        note: 'no payload, no idempotency key',
      }),
      what: 'an envelope without payload',
    },
    {
      queue: notification,
      body: `poison ${ctx.runId}: this body is not JSON`,
      what: 'a body that is not JSON',
    },
    {
      queue: inventory,
      body: JSON.stringify(
        makeEnvelope(
          'notification.send',
          {
            orderId: `poison-${ctx.runId}`,
            template: 'order-paid',
            recipient: 'poison@example.com',
            orderVersion: 1,
          },
          { idempotencyKey: `poison:${ctx.runId}`, correlationId: `poison-${ctx.runId}`, now: new Date() },
        ),
      ),
      what: 'a notification job on the inventory queue',
    },
  ];
  for (const { queue, body } of bodies) {
    await ctx.sqs.send(
      new SendMessageCommand({
        QueueUrl: queue.queueUrl,
        MessageBody: body,
        ...(queue.fifo
          ? { MessageGroupId: `poison-${ctx.runId}`, MessageDeduplicationId: `poison-${ctx.runId}` }
          : {}),
      }),
    );
    ctx.recordPoison({ jobType: queue.jobType, body });
    ctx.recordInjected(queue.jobType, 1);
  }
  return {
    record: record(
      spec,
      ctx,
      startMs,
      `SendMessage straight to the queues: ${bodies.map((b) => `${b.queue.jobType}: ${b.what}`).join('; ')}`,
      ['sent 3 messages'],
    ),
    after: (facts) =>
      bodies.map(({ queue, body }) => {
        const found = facts.dlq.find((e) => e.source === queue.jobType && body.startsWith(e.body));
        return found === undefined
          ? `${queue.jobType}: not in the DLQ`
          : `${queue.jobType}: dead-lettered as ${found.errorClass} after ${found.attempts ?? '?'} attempt(s)`;
      }),
  };
};

/** Both providers fail: the payment provider hard for a few seconds, then it fails after charging. */
const providerOutage: Injector = async (spec, ctx, startMs) => {
  const { payment, messaging } = ctx.platform.providers;
  const seconds = spec.durationSeconds ?? 30;
  const hardSeconds = Math.min(3, seconds);
  const before = {
    paymentRetries: counter(ctx, ctx.services.payment, 'JobRetried'),
    notificationRetries: counter(ctx, ctx.services.notification, 'JobRetried'),
    notificationDeferred: counter(ctx, ctx.services.notification, 'JobDeferred'),
    circuitOpen: ctx.observer.eventCount(OBSERVED_EVENT.circuitOpen),
    messagingRequests: messaging.requestCount(),
    paymentRequests: payment.requestCount(),
    charges: payment.ledger().length,
  };
  try {
    messaging.set({ outage: true });
    payment.set({ outage: true });
    await pause(hardSeconds * 1000, ctx.signal);
    // Failing after the effect is safe to retry only because the key makes the provider replay it.
    payment.set({ outage: false, errorAfterEffectRate: 0.3 });
    await pause((seconds - hardSeconds) * 1000, ctx.signal);
  } finally {
    payment.set({ outage: false, errorAfterEffectRate: 0 });
    messaging.set({ outage: false });
  }
  const circuitOpen = ctx.observer.eventCount(OBSERVED_EVENT.circuitOpen) - before.circuitOpen;
  const paymentRequests = payment.requestCount() - before.paymentRequests;
  const charges = payment.ledger().length - before.charges;
  return {
    record: record(
      spec,
      ctx,
      startMs,
      `messaging provider: outage (503) for ${seconds} s; payment provider: outage (503) for ${hardSeconds} s, then 30% of charges answered 500 after the charge was made for ${seconds - hardSeconds} s`,
      [
        `payment retries ${counter(ctx, ctx.services.payment, 'JobRetried') - before.paymentRetries}, ${paymentRequests} provider requests for ${charges} charges`,
        `notification retries ${counter(ctx, ctx.services.notification, 'JobRetried') - before.notificationRetries}, deferrals ${counter(ctx, ctx.services.notification, 'JobDeferred') - before.notificationDeferred}`,
        circuitOpen > 0
          ? `messaging circuit breaker open: ${circuitOpen} notification(s) deferred instead of calling`
          : 'messaging circuit breaker did not open (too few failures per instance within its window)',
        `${messaging.requestCount() - before.messagingRequests} messaging requests during the outage`,
      ],
    ),
  };
};

/** The scenario's redis-server stopped, then started again empty on the same port. */
const redisDown: Injector = async (spec, ctx, startMs) => {
  const seconds = spec.durationSeconds ?? 30;
  const invalidator = ctx.platform.streamSources.find((s) =>
    s.spec.functionName.endsWith('-cache-invalidator'),
  );
  const before = {
    bypass: counter(ctx, ctx.services.reader, 'CacheBypass'),
    retries: invalidator?.stats.retries ?? 0,
    onFailure: invalidator?.stats.sentToOnFailure ?? 0,
  };
  const pid = ctx.redis.pid;
  await ctx.redis.down();
  const completed = await pause(seconds * 1000, ctx.signal);
  if (completed) await ctx.redis.up();
  return {
    record: record(
      spec,
      ctx,
      startMs,
      `stopped the scenario's own redis-server (pid ${pid ?? '?'}, port ${ctx.redis.port}) for ${seconds} s, then started a new one, empty, on the same port (the machine's Redis is never touched)`,
      [
        `${counter(ctx, ctx.services.reader, 'CacheBypass') - before.bypass} reads served from DynamoDB (bypass)`,
        `cache-invalidator: ${(invalidator?.stats.retries ?? 0) - before.retries} retried batches, ${(invalidator?.stats.sentToOnFailure ?? 0) - before.onFailure} records given up to its on-failure queue`,
      ],
    ),
  };
};

/** The same payment posted many times with one key, and the same jobs enqueued twice. */
const duplicateBurst: Injector = async (spec, ctx, startMs) => {
  const copies = spec.copies ?? 20;
  const observed: string[] = [];
  const order = await ctx.traffic.createOrder();
  if (order === undefined) throw new Error('could not create the order for the burst');
  const burstId = ctx.traffic.nextId();
  const burstPayment = `pay-burst-${burstId}`;
  const answers = await Promise.all(
    Array.from({ length: copies }, () =>
      ctx.traffic.postPayment(order.orderId, burstPayment, order.body, `key-burst-${burstId}`),
    ),
  );
  const dup = (a: (typeof answers)[number]): boolean =>
    (a.body as { duplicate?: unknown } | undefined)?.duplicate === true;
  const fresh = answers.filter((a) => a.status === 202 && !dup(a)).length;
  const repeats = answers.filter((a) => a.status === 202 && dup(a)).length;
  const inFlight = answers.filter((a) => a.status === 409).length;
  observed.push(
    `${copies} concurrent POSTs with one Idempotency-Key: ${fresh} accepted as new, ${repeats} answered with the first job id, ${inFlight} answered 409 (in flight), ${copies - fresh - repeats - inFlight} other`,
  );
  // The client's retry after the burst: answered with the first job, and recorded as accepted.
  await ctx.traffic.capture(order, burstPayment, `key-burst-${burstId}`);

  // The same payment job twice on the FIFO queue, past its dedup (two dedup ids).
  const twice = await ctx.traffic.createOrder();
  if (twice === undefined) throw new Error('could not create the order for the twice-enqueued job');
  const twiceId = ctx.traffic.nextId();
  const twicePayment = `pay-twice-${twiceId}`;
  const envelope = makeEnvelope(
    'payment.capture',
    {
      orderId: twice.orderId,
      paymentId: twicePayment,
      amountMinor: twice.body.amountMinor,
      currency: twice.body.currency,
    },
    { idempotencyKey: paymentCaptureKey(twicePayment), correlationId: `twice-${twiceId}`, now: new Date() },
  );
  const duplicatesBefore = counter(ctx, ctx.services.payment, 'DuplicateIgnored');
  for (const copy of ['a', 'b']) {
    await ctx.sqs.send(
      new SendMessageCommand({
        QueueUrl: ctx.queues.payment.queueUrl,
        MessageBody: JSON.stringify(envelope),
        MessageGroupId: twice.orderId,
        MessageDeduplicationId: `twice-${twiceId}-${copy}`,
      }),
    );
  }
  ctx.recordInjected(ctx.queues.payment.jobType, 2);
  ctx.traffic.recordAccepted({
    orderId: twice.orderId,
    paymentId: twicePayment,
    requestKey: `queue:${twiceId}`,
    lines: twice.body.lines,
    amountMinor: twice.body.amountMinor,
    currency: twice.body.currency,
    via: 'queue',
    acceptedAtMs: ctx.elapsedMs(),
  });
  observed.push(
    `payment job ${paymentCaptureKey(twicePayment)} sent twice to the FIFO queue with two dedup ids`,
  );

  // The notification of an order paid earlier, enqueued twice as the outbox would build it.
  const paid = await paidOrder(ctx);
  let notifiedOrder: string | undefined;
  if (paid !== undefined) {
    const notification = makeEnvelope(
      'notification.send',
      {
        orderId: paid.orderId,
        template: 'order-paid',
        recipient: paid.customerEmail,
        orderVersion: paid.version,
      },
      {
        idempotencyKey: followUpKey(paid.orderId, paid.version, 'notification.send:order-paid'),
        correlationId: paid.orderId,
        now: new Date(),
      },
    );
    for (let i = 0; i < 2; i += 1) {
      await ctx.sqs.send(
        new SendMessageCommand({
          QueueUrl: ctx.queues.notification.queueUrl,
          MessageBody: JSON.stringify(notification),
        }),
      );
    }
    ctx.recordInjected(ctx.queues.notification.jobType, 2);
    notifiedOrder = paid.orderId;
    observed.push(`notification of paid order ${paid.orderId} sent twice more to its queue`);
  } else {
    observed.push('no paid order to re-notify yet: the notification duplicate was skipped');
  }
  return {
    record: record(
      spec,
      ctx,
      startMs,
      `${copies} concurrent POST /orders/{id}/payments with one Idempotency-Key; one payment.capture job sent twice straight to the FIFO queue (distinct dedup ids); one notification.send job sent twice to its queue`,
      observed,
    ),
    after: (facts) => {
      const burstCharges = chargesFor(facts.charges, paymentCaptureKey(burstPayment));
      const twiceCharges = chargesFor(facts.charges, paymentCaptureKey(twicePayment));
      const lines = [
        `burst: ${burstCharges} charge(s) for its key`,
        `twice-enqueued job: ${twiceCharges} charge(s); payment DuplicateIgnored +${counter(ctx, ctx.services.payment, 'DuplicateIgnored') - duplicatesBefore} since`,
      ];
      if (notifiedOrder !== undefined) {
        const key = notificationKey(notifiedOrder, 'order-paid');
        lines.push(
          `re-sent notification: ${facts.messages.filter((m) => m.idempotencyKey === key).length} message(s) for ${key}`,
        );
      }
      return lines;
    },
  };
};

/** An order of this run that is PAID now (read through the API), with what its notification needs. */
async function paidOrder(
  ctx: IncidentContext,
): Promise<{ orderId: string; customerEmail: string; version: number } | undefined> {
  for (const p of ctx.traffic
    .accepted()
    .filter((a) => a.via === 'api')
    .slice(0, 10)) {
    const answer = await ctx.traffic.read(p.orderId);
    const body = answer.body as { state?: unknown; customerEmail?: unknown; version?: unknown } | undefined;
    if (
      body?.state === 'PAID' &&
      typeof body.customerEmail === 'string' &&
      typeof body.version === 'number'
    ) {
      return { orderId: p.orderId, customerEmail: body.customerEmail, version: body.version };
    }
  }
  return undefined;
}

const INJECT: Readonly<Record<IncidentKind, Injector>> = {
  'consumer-crash': consumerCrash,
  'poison-message': poisonMessage,
  'provider-outage': providerOutage,
  'redis-down': redisDown,
  'duplicate-burst': duplicateBurst,
};
