/**
 * notification.send (Q1–Q2, I3, R4): tell the customer once per (order, template), through a
 * messaging provider protected by a circuit breaker and a rate limit.
 *
 * Three layers keep a notification single: a dedup claim taken before the provider call, the
 * provider's own idempotency key, and the queue's deferral instead of retry storms. The claim is
 * short and in flight while the call runs (a crash frees it before the message returns) and made
 * a long 'done' record once the provider accepted; a failed call gives it back so the retry can
 * send. A copy that finds another attempt's claim in flight waits for it (deferred) instead of
 * being dropped: that attempt may still fail and give its claim back.
 */
import {
  type Random,
  CircuitOpenError,
  type CircuitBreaker,
  waitDeferSeconds,
  type DedupStore,
  type RateLimit,
  type ClaimResult,
  type TakeResult,
} from 'tenang/runtime';
import type { NotificationSendPayload } from './payloads';

/** The message handed to the provider. */
export interface OutgoingMessage {
  readonly to: string;
  readonly template: NotificationSendPayload['template'];
  readonly orderId: string;
  readonly orderVersion: number;
}

/** A messaging provider; every call carries an idempotency key (I3). */
export interface MessagingProvider {
  /**
   * Sends `message`; a repeated key must not send twice.
   * @throws a transient error when the provider is unavailable, a permanent one when it refuses.
   */
  send(
    message: OutgoingMessage,
    opts: { readonly idempotencyKey: string; readonly correlationId: string },
  ): Promise<{ readonly messageId: string }>;
}

/** The business key of a notification: dedup record and provider idempotency key alike. */
export function notificationKey(orderId: string, template: string): string {
  return `notification:${orderId}:${template}`;
}

/** What sending came to. */
export type NotificationOutcome =
  | { readonly kind: 'sent'; readonly messageId: string }
  | { readonly kind: 'duplicate' }
  | {
      readonly kind: 'deferred';
      readonly reason: DeferReason;
      readonly deferSeconds: number;
    };

/** Why a notification waits: the provider's circuit, its rate limit, or another attempt's claim. */
export type DeferReason = 'circuit-open' | 'rate-limited' | 'in-flight';

/** A dedup bookkeeping step failed after the outcome was settled; worth a warning, not a retry. */
export interface DedupBookkeepingFailure {
  readonly step: 'confirm' | 'release';
  readonly key: string;
  readonly error: unknown;
}

/** What sendNotification needs. */
export interface SendNotificationDeps {
  readonly dedup: DedupStore;
  readonly provider: MessagingProvider;
  readonly breaker: CircuitBreaker;
  /** The provider's rate limit (the fleet's, or a process's own share). */
  readonly rate: RateLimit;
  readonly random: Random;
  readonly sleep: (ms: number) => Promise<void>;
  /** Longest in-process wait for a token; a longer wait defers the job instead. */
  readonly maxRateWaitMs: number;
  /**
   * Claim while the call is in flight, seconds: longer than the function timeout (no live
   * attempt loses it), shorter than the visibility timeout minus the function timeout (a crashed
   * attempt's claim is gone when its message returns). A copy that finds a claim in flight is
   * deferred this long.
   */
  readonly inFlightClaimSeconds: number;
  /** Claim once sent, seconds: as long as any copy of the message can still be delivered. */
  readonly sentClaimSeconds: number;
  /** Told when confirming or giving back a claim failed. @default - ignored */
  readonly onDedupFailure?: (failure: DedupBookkeepingFailure) => void;
}

/**
 * Sends one notification unless it was sent already; waits (defers) while the provider's
 * circuit is open, its rate limit is spent, or another attempt holds the notification's claim.
 * @throws what the provider throws (transient: the job retries with backoff; permanent: DLQ);
 * the claim is given back first, since nothing was sent.
 */
export async function sendNotification(
  deps: SendNotificationDeps,
  payload: NotificationSendPayload,
  correlationId: string,
): Promise<NotificationOutcome> {
  // An open circuit or a rate known to be spent touches neither the dedup table nor the provider.
  const circuit = deps.breaker.snapshot();
  if (circuit.retryAfterMs > 0) return deferred('circuit-open', circuit.retryAfterMs, deps.random);
  const key = notificationKey(payload.orderId, payload.template);
  const taking = deps.rate.take(deps.maxRateWaitMs);
  let token: TakeResult;
  let claim: ClaimResult;
  if (!(taking instanceof Promise) || deps.rate.knownSpent?.(deps.maxRateWaitMs) === true) {
    // Answered without a request (a process's own bucket, or a shared limit this process has
    // seen spent): a refused token costs no claim.
    token = await taking;
    if (!token.granted) return deferred('rate-limited', token.retryAfterMs, deps.random);
    claim = await deps.dedup.claim(key, deps.inFlightClaimSeconds);
  } else {
    // The shared limit's write and the claim side by side: one round trip before the call, not two.
    [token, claim] = await Promise.all([taking, deps.dedup.claim(key, deps.inFlightClaimSeconds)]);
    if (!token.granted && claim === 'claimed') {
      await bookkeeping(deps, 'release', key, () => deps.dedup.release(key));
      return deferred('rate-limited', token.retryAfterMs, deps.random);
    }
  }
  if (claim === 'done') return { kind: 'duplicate' };
  // By then the other attempt has confirmed (a duplicate), given the claim back or died (its claim expired).
  if (claim === 'in-flight') return deferred('in-flight', deps.inFlightClaimSeconds * 1000, deps.random);
  if (!token.granted) return deferred('rate-limited', token.retryAfterMs, deps.random);

  let messageId: string;
  try {
    if (token.waitMs > 0) await deps.sleep(token.waitMs);
    ({ messageId } = await deps.breaker.execute(() =>
      deps.provider.send(
        {
          to: payload.recipient,
          template: payload.template,
          orderId: payload.orderId,
          orderVersion: payload.orderVersion,
        },
        { idempotencyKey: key, correlationId },
      ),
    ));
  } catch (error) {
    await bookkeeping(deps, 'release', key, () => deps.dedup.release(key));
    // Another call opened the circuit, or took the half-open probe, while this one waited.
    if (error instanceof CircuitOpenError) {
      return deferred('circuit-open', deps.breaker.snapshot().retryAfterMs, deps.random);
    }
    throw error;
  }
  await bookkeeping(deps, 'confirm', key, () => deps.dedup.confirm(key, deps.sentClaimSeconds));
  return { kind: 'sent', messageId };
}

function deferred(reason: DeferReason, waitMs: number, random: Random): NotificationOutcome {
  return { kind: 'deferred', reason, deferSeconds: waitDeferSeconds(waitMs, random) };
}

/**
 * Dedup bookkeeping after the outcome is settled must not change it: a claim that cannot be
 * confirmed still expires after the in-flight window (the provider's key then stops a second
 * send); one that cannot be given back expires the same way. Both are reported.
 */
async function bookkeeping(
  deps: SendNotificationDeps,
  step: DedupBookkeepingFailure['step'],
  key: string,
  action: () => Promise<void>,
): Promise<void> {
  try {
    await action();
  } catch (error) {
    deps.onDedupFailure?.({ step, key, error });
  }
}
