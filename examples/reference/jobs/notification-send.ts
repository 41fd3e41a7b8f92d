/**
 * notification.send (Q1–Q2, I3, R4): sends an order notification once per (order, template),
 * behind a circuit breaker and the provider's fleet-wide rate limit; an open circuit, a spent rate
 * or another delivery's claim in flight defers the message instead of failing or dropping it.
 */
import { setTimeout as sleepMs } from 'node:timers/promises';
import { DLQ_RETENTION_SECONDS, TABLE_KEYS, type ResolvedJobType } from 'tenang/config';
import {
  DynamoDbDedupStore,
  HttpMessagingProvider,
  NotificationSendPayload,
  sendNotification,
  type DedupStore,
  type MessagingProvider,
} from '../domain';
import {
  CircuitBreaker,
  defineJob,
  DynamoDbRateStore,
  FleetRateLimit,
  jobHandler,
  perInstanceRate,
  TokenBucket,
  type RateLimit,
} from 'tenang/runtime';

/**
 * Limits for the messaging provider. The rate is the provider's limit for the whole fleet, kept
 * on one record in the dedup table (FleetRateLimit: one conditional write per batch), so one busy
 * instance may use what the others leave; when that record cannot be written, each instance
 * takes its share (rate ÷ the ESM's maximum concurrency), so the fleet stays within it anyway.
 */
export const MESSAGING_LIMITS = {
  /** Messages per second the provider accepts from us, fleet-wide. */
  fleetRatePerSecond: 50,
  /**
   * Messages the fleet may send at once after a quiet period: one batch (the job type's batch
   * size), so a batch's sends go together. Over any t seconds the fleet sends at most
   * 10 + 50 × t.
   */
  fleetBurst: 10,
  /** Burst per instance of the per-instance share, when the shared record cannot be reached. */
  burst: 5,
  /** Longest in-process wait for a token; longer waits defer the message. */
  maxRateWaitMs: 1_000,
  /** Per-call timeout (D4): failureThreshold calls that time out still fit the function timeout. */
  timeoutMs: 2_000,
  breaker: { failureThreshold: 5, windowMs: 10_000, coolDownMs: 20_000 },
} as const;

/**
 * How long a claim is held while the provider call is in flight: twice the function timeout,
 * so no live attempt loses it, yet shorter than the visibility timeout minus the function
 * timeout (≥ 5 × timeout by the 6× rule), so a crashed attempt's claim has expired when its
 * message comes back.
 */
export function inFlightClaimSeconds(jobType: ResolvedJobType): number {
  return 2 * jobType.function.timeoutSeconds;
}

/** The fleet-wide rate limit's record in the dedup table. */
export const MESSAGING_RATE_KEY = 'rate:messaging';

/** The sender's per-process state: the breaker and the rate limit live across invocations. */
export interface NotificationSendState {
  readonly dedup: DedupStore;
  readonly provider: MessagingProvider;
  readonly breaker: CircuitBreaker;
  readonly rate: RateLimit;
  readonly inFlightClaimSeconds: number;
  /** @default MESSAGING_LIMITS.maxRateWaitMs */
  readonly maxRateWaitMs?: number;
  /** @default node:timers/promises setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
}

export const notificationSend = defineJob({
  name: 'notification.send',
  payload: NotificationSendPayload,
  setup: ({ jobType, clock, dynamodb, table, providerUrl, logger }): NotificationSendState => ({
    // A batch's confirms go together once its last call is done: its siblings' calls end within
    // the provider's timeout, so no confirm waits longer.
    dedup: new DynamoDbDedupStore(dynamodb, table('dedup'), clock, {
      gatherConfirmsMs: MESSAGING_LIMITS.timeoutMs,
    }),
    provider: new HttpMessagingProvider({
      baseUrl: providerUrl('messaging'),
      timeoutMs: MESSAGING_LIMITS.timeoutMs,
    }),
    // Calls go at once up to the failure threshold, so no more fail before the circuit opens.
    breaker: new CircuitBreaker({
      name: 'messaging-provider',
      ...MESSAGING_LIMITS.breaker,
      limitInFlightToThreshold: true,
      clock,
    }),
    rate: new FleetRateLimit({
      store: new DynamoDbRateStore(dynamodb, {
        tableName: table('dedup'),
        keyAttribute: TABLE_KEYS.dedup.partitionKey,
        key: MESSAGING_RATE_KEY,
        ttlAttribute: TABLE_KEYS.dedup.ttl,
        nowMs: () => clock().getTime(),
      }),
      ratePerSecond: MESSAGING_LIMITS.fleetRatePerSecond,
      burst: MESSAGING_LIMITS.fleetBurst,
      clock,
      fallback: new TokenBucket({
        ratePerSecond: perInstanceRate(MESSAGING_LIMITS.fleetRatePerSecond, jobType.batch.maxConcurrency),
        burst: MESSAGING_LIMITS.burst,
        clock,
      }),
      onStoreError: (error) =>
        logger.warn('the fleet rate limit could not be read; using this instance’s share', {
          error: error as Error,
        }),
    }),
    inFlightClaimSeconds: inFlightClaimSeconds(jobType),
  }),
  // Its own dedup claim per (order, template), not a record per envelope.
  idempotency: 'self',
  // A batch's records run at once: one rate-limit write for all of them beside their dedup
  // claims, the provider calls side by side, and their confirms in one request at the end; the
  // breaker holds calls back to one at a time once one fails.
  async run(payload, { state, logger, random, job }) {
    const outcome = await sendNotification(
      {
        ...state,
        random,
        sleep: state.sleep ?? ((ms: number): Promise<void> => sleepMs(ms)),
        maxRateWaitMs: state.maxRateWaitMs ?? MESSAGING_LIMITS.maxRateWaitMs,
        // A duplicate can arrive as long as any copy of the message can: the DLQ keeps the longest.
        sentClaimSeconds: DLQ_RETENTION_SECONDS,
        onDedupFailure: (failure) =>
          logger.warn(`could not ${failure.step} the dedup claim; it expires by itself`, {
            dedupKey: failure.key,
            error: failure.error as Error,
          }),
      },
      payload,
      job.correlationId,
    );
    switch (outcome.kind) {
      case 'sent':
        logger.info('notification sent', { orderId: payload.orderId, messageId: outcome.messageId });
        return;
      case 'duplicate':
        return { kind: 'duplicate_ignored' };
      case 'deferred':
        if (outcome.reason === 'circuit-open') {
          logger.warn('messaging provider circuit is open; deferring', { circuit: state.breaker.snapshot() });
        }
        return { kind: 'deferred', delaySeconds: outcome.deferSeconds, reason: outcome.reason };
    }
  },
});

export const handler = jobHandler(notificationSend);
