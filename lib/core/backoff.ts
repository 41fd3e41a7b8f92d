/**
 * Exponential backoff with full jitter (R2): delay = random(0, min(cap, base × 2^(attempt-1))).
 * "Exponential Backoff And Jitter" (Brooker) shows full jitter spreads contending clients best.
 */
import { backoffCeilingSeconds } from '../config/derive';
import type { RetryPolicy } from '../config/schema';

/** A source of uniform randomness in [0, 1); injected so tests are deterministic. */
export type Random = () => number;

/** Delay before the next attempt after `failedAttempt` (1-based) failed, in whole seconds. */
export function fullJitterDelaySeconds(policy: RetryPolicy, failedAttempt: number, random: Random): number {
  if (!Number.isInteger(failedAttempt) || failedAttempt < 1) {
    throw new RangeError(`failedAttempt must be an integer ≥ 1, got ${failedAttempt}`);
  }
  const ceiling = backoffCeilingSeconds(policy, failedAttempt);
  return Math.floor(random() * (ceiling + 1));
}

/** What to do with a message whose attempt failed transiently (one retry layer, R6). */
export type RetryDecision =
  { readonly action: 'retry'; readonly delaySeconds: number } | { readonly action: 'dead-letter' };

/**
 * Decides the fate of a transient failure. The attempt bound is the queue's maxReceiveCount:
 * on the last attempt the message goes to the DLQ instead of waiting for another receive.
 */
export function decideRetry(
  policy: RetryPolicy,
  maxAttempts: number,
  attempt: number,
  random: Random,
): RetryDecision {
  if (attempt >= maxAttempts) return { action: 'dead-letter' };
  return { action: 'retry', delaySeconds: fullJitterDelaySeconds(policy, attempt, random) };
}

/**
 * Permission holds (a denied action: PermissionDeniedError, a deployment error). A job whose
 * consumer is denied an action is not at fault and must not be dead-lettered; it is held out of
 * the queue with its visibility instead, long enough that a denied consumer does not spin
 * through its receives (each one moves the message towards SQS's own redrive after
 * maxReceiveCount receives), short enough that it returns soon after the deployment is fixed.
 * The first hold's ceiling is 5 minutes, doubling per receive, capped by SQS's maximum
 * visibility (12 h counted from the receive); {@link permissionHoldSeconds} adds equal jitter.
 */
export const PERMISSION_HOLD_BASE_SECONDS = 300;

/** SQS's maximum visibility timeout, counted from the receive: 12 hours. */
export const SQS_MAX_VISIBILITY_SECONDS = 43_200;

/**
 * Ceiling of the hold after receive `attempt` (1-based) was denied: min(cap, 300 × 2^(attempt-1)).
 * @param capSeconds the longest hold allowed. @default SQS_MAX_VISIBILITY_SECONDS
 */
export function permissionHoldCeilingSeconds(
  attempt: number,
  capSeconds = SQS_MAX_VISIBILITY_SECONDS,
  baseSeconds = PERMISSION_HOLD_BASE_SECONDS,
): number {
  if (!Number.isInteger(attempt) || attempt < 1) {
    throw new RangeError(`attempt must be an integer ≥ 1, got ${attempt}`);
  }
  return Math.max(0, Math.min(capSeconds, baseSeconds * 2 ** (attempt - 1)));
}

/**
 * The hold after receive `attempt` was denied, in whole seconds: equal jitter, half the ceiling
 * fixed and half random (ceiling/2 + random(0, ceiling/2)). Not full jitter: a hold near zero
 * would spend a receive at once for nothing, since a grant is not fixed within seconds; the
 * random half still spreads a whole queue of denied jobs, so they do not return as one wave
 * after the fix.
 */
export function permissionHoldSeconds(
  attempt: number,
  random: Random,
  capSeconds = SQS_MAX_VISIBILITY_SECONDS,
  baseSeconds = PERMISSION_HOLD_BASE_SECONDS,
): number {
  const ceiling = permissionHoldCeilingSeconds(attempt, capSeconds, baseSeconds);
  const fixed = Math.ceil(ceiling / 2);
  return fixed + Math.floor(random() * (ceiling - fixed + 1));
}

/**
 * How long a job whose every receive is denied stays in its queue before SQS's redrive moves it
 * to the DLQ: the sum of its holds over its `maxReceiveCount` receives (the receive after the
 * last one is the redrive), shortest (every jitter at its low end) and longest. Processing time
 * adds a few seconds per receive. A paused consumer receives nothing, so the count stops there.
 */
export function permissionHoldSecondsToRedrive(
  maxReceiveCount: number,
  capSeconds = SQS_MAX_VISIBILITY_SECONDS,
): { readonly shortest: number; readonly longest: number } {
  let shortest = 0;
  let longest = 0;
  for (let attempt = 1; attempt <= maxReceiveCount; attempt += 1) {
    const ceiling = permissionHoldCeilingSeconds(attempt, capSeconds);
    shortest += Math.ceil(ceiling / 2);
    longest += ceiling;
  }
  return { shortest, longest };
}
