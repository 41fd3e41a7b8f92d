/**
 * notification.send (Q1–Q2, I3, R4): sends an order notification once per (order, template),
 * behind a circuit breaker and a token bucket; an open circuit, a spent rate or another
 * delivery's claim in flight defers the message instead of failing or dropping it.
 */
import { setTimeout as sleepMs } from 'node:timers/promises';
import { DLQ_RETENTION_SECONDS, type ResolvedJobType } from 'tenang/config';
import {
  DynamoDbDedupStore,
  HttpMessagingProvider,
  NotificationSendPayload,
  sendNotification,
  type DedupStore,
  type MessagingProvider,
} from '../domain';
import { CircuitBreaker, defineJob, jobHandler, perInstanceRate, TokenBucket } from 'tenang/runtime';

/**
 * Limits for the messaging provider. The rate is the provider's limit for the whole fleet; each
 * instance takes its share (rate ÷ the ESM's maximum concurrency), so the fleet stays within it.
 */
export const MESSAGING_LIMITS = {
  /** Messages per second the provider accepts from us, fleet-wide. */
  fleetRatePerSecond: 50,
  /** Burst per instance after a quiet period. */
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

/** The sender's per-process state: the breaker and the bucket live across invocations. */
export interface NotificationSendState {
  readonly dedup: DedupStore;
  readonly provider: MessagingProvider;
  readonly breaker: CircuitBreaker;
  readonly bucket: TokenBucket;
  readonly inFlightClaimSeconds: number;
  /** @default MESSAGING_LIMITS.maxRateWaitMs */
  readonly maxRateWaitMs?: number;
  /** @default node:timers/promises setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
}

export const notificationSend = defineJob({
  name: 'notification.send',
  payload: NotificationSendPayload,
  setup: ({ jobType, clock, dynamodb, table, providerUrl }): NotificationSendState => ({
    dedup: new DynamoDbDedupStore(dynamodb, table('dedup'), clock),
    provider: new HttpMessagingProvider({
      baseUrl: providerUrl('messaging'),
      timeoutMs: MESSAGING_LIMITS.timeoutMs,
    }),
    breaker: new CircuitBreaker({ name: 'messaging-provider', ...MESSAGING_LIMITS.breaker, clock }),
    bucket: new TokenBucket({
      ratePerSecond: perInstanceRate(MESSAGING_LIMITS.fleetRatePerSecond, jobType.batch.maxConcurrency),
      burst: MESSAGING_LIMITS.burst,
      clock,
    }),
    inFlightClaimSeconds: inFlightClaimSeconds(jobType),
  }),
  // Its own dedup claim per (order, template), not a record per envelope.
  idempotency: 'self',
  // One record after another: the breaker and the bucket see each call's outcome before the next.
  processInParallel: false,
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
