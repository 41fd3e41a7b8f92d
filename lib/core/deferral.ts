/**
 * When a consumer waits instead of working (B3, L2, R4): degrade mode, a busy lock, an open
 * circuit or an exhausted rate limit. Waiting is a deferral — the job runner re-sends the
 * message with a delay — so it never counts as an attempt and never pushes a job to the DLQ.
 */
import type { Criticality } from '../config/schema';
import { admit } from './admission';
import type { Random } from './backoff';

/** SQS allows at most 15 minutes of message delay. */
export const MAX_DEFER_SECONDS = 900;

/** How long a job waits in degrade mode before it looks at the flag again: 60 s plus up to 60 s of jitter. */
export const DEGRADE_DEFER = { baseSeconds: 60, jitterSeconds: 60 } as const;

/**
 * What a consumer does with a job it already holds. The producer sheds sheddable work in
 * degrade mode; once a job is enqueued, shedding it would lose it silently, so it is deferred.
 */
export function consumerAdmission(criticality: Criticality, degraded: boolean): 'proceed' | 'defer' {
  return admit(criticality, degraded) === 'accept' ? 'proceed' : 'defer';
}

/** Delay for a job deferred by degrade mode; jittered so deferred jobs do not return in one wave. */
export function degradeDeferSeconds(random: Random): number {
  return DEGRADE_DEFER.baseSeconds + Math.floor(random() * (DEGRADE_DEFER.jitterSeconds + 1));
}

/**
 * Delay for a job that must wait `waitMs` for a dependency (a lease to expire, a circuit to cool
 * down, a token): the wait rounded up, plus up to one more second of jitter so waiters spread
 * out; at least 1 s (never a busy loop), at most SQS's limit.
 */
export function waitDeferSeconds(waitMs: number, random: Random): number {
  const wait = Math.ceil(Math.max(0, waitMs) / 1000);
  return Math.min(MAX_DEFER_SECONDS, Math.max(1, wait + Math.floor(random() * 2)));
}
