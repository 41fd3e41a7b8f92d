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
