/**
 * The transactional outbox's relay (D6): follow-up jobs of a change to a table, derived from the
 * table's stream by a stream consumer, never sent by a job's consumer after its commit (which
 * jobs a change has is the app's: e.g. the reference app's examples/reference/domain/order-follow-ups.ts).
 *
 * Each follow-up carries an idempotency key derived from the change and the job, and is guarded
 * by a producer-side dedup claim on that key (Q1), so a stream record delivered twice enqueues
 * once. A claim left in flight by a dead attempt is never taken for done: a redelivery of the same
 * change takes it over and sends (the claim names the change); any other claimant is retried
 * until that claim expires, then sends. Degrade mode (B3): sheddable work is not enqueued
 * (counted and logged by the caller), deferrable work is enqueued with a delay, critical work
 * goes ahead.
 */
import type { Criticality } from '../config/schema';
import { admit } from './admission';
import type { Random } from './backoff';
import { degradeDeferSeconds } from './deferral';
import type { JobEnvelope } from './envelope';
import { ClaimInFlightError } from './errors';
import type { DedupStore } from './ports';

/** One follow-up job of a change. */
export interface FollowUp {
  /** Producer-side dedup record key (Q1): `outbox:` + the idempotency key. */
  readonly dedupKey: string;
  readonly envelope: JobEnvelope;
}

/** What became of one follow-up. */
export type FollowUpOutcome =
  | { readonly kind: 'enqueued'; readonly followUp: FollowUp; readonly delaySeconds: number }
  | { readonly kind: 'duplicate'; readonly followUp: FollowUp }
  | { readonly kind: 'shed'; readonly followUp: FollowUp };

/** Enqueues one job; `delaySeconds` 0 means at once. */
export type Enqueue = (envelope: JobEnvelope, delaySeconds: number) => Promise<void>;

/** What relayFollowUps needs. */
export interface OutboxDeps {
  readonly dedup: DedupStore;
  readonly enqueue: Enqueue;
  /** The declared criticality of a job type (pipeline config). */
  readonly criticalityOf: (type: string) => Criticality;
  readonly degraded: boolean;
  readonly random: Random;
  /**
   * Claim held while the job is being enqueued, seconds: at least the function timeout, so no live
   * attempt loses it; also how long a job whose attempt died waits before a retry sends it.
   */
  readonly inFlightClaimSeconds: number;
  /**
   * Who claims: the change's own identity (the stream record's sequence number). A redelivery of
   * the same change takes over a claim that an earlier attempt of that change left in flight:
   * that attempt has ended (a shard's records go to one invocation at a time), and waiting for
   * its claim to expire would outlast the stream's immediate retries and give the record up.
   * @default - no owner: any in-flight claim is waited out
   */
  readonly claimOwner?: string;
  /** Claim once enqueued, seconds: longer than a stream record can be redelivered. */
  readonly sentClaimSeconds: number;
  /**
   * Told when confirming or giving back a claim failed; neither fails the change: an unconfirmed
   * claim stays in flight for inFlightClaimSeconds (a later redelivery sends again, absorbed by the
   * consumer's dedup), an unreleased one expires by then. @default - ignored
   */
  readonly onDedupFailure?: (step: 'confirm' | 'release', key: string, error: unknown) => void;
}

/**
 * Enqueues each follow-up once per dedup key, applying degrade-mode admission. A failed enqueue
 * gives its claim back and throws, so the stream record is retried; follow-ups enqueued before it
 * are found done on the retry.
 * A claim in flight under `claimOwner` (an earlier, ended attempt of the same change) is taken
 * over at once. At worst a job is then sent twice (the dead attempt sent but did not confirm),
 * which the consumers' own dedup must absorb (Q2; e.g. the reference app's notification key and
 * provider idempotency key, its reservation per order).
 * @throws ClaimInFlightError (transient) when another claimant's claim holds a follow-up: it may
 * have died between its claim and its send, so skipping would lose the job. The stream record is
 * retried; once the claim expires the retry sends it.
 */
export async function relayFollowUps(
  followUps: readonly FollowUp[],
  deps: OutboxDeps,
): Promise<FollowUpOutcome[]> {
  const outcomes: FollowUpOutcome[] = [];
  for (const followUp of followUps) {
    const admission = admit(deps.criticalityOf(followUp.envelope.type), deps.degraded);
    if (admission === 'shed') {
      outcomes.push({ kind: 'shed', followUp });
      continue;
    }
    const claim = await deps.dedup.claim(followUp.dedupKey, deps.inFlightClaimSeconds, deps.claimOwner);
    if (claim === 'done') {
      outcomes.push({ kind: 'duplicate', followUp });
      continue;
    }
    if (claim === 'in-flight') throw new ClaimInFlightError(followUp.dedupKey);
    const delaySeconds = admission === 'defer' ? degradeDeferSeconds(deps.random) : 0;
    try {
      await deps.enqueue(followUp.envelope, delaySeconds);
    } catch (error) {
      await bookkeeping(deps, 'release', followUp.dedupKey, () => deps.dedup.release(followUp.dedupKey));
      throw error;
    }
    await bookkeeping(deps, 'confirm', followUp.dedupKey, () =>
      deps.dedup.confirm(followUp.dedupKey, deps.sentClaimSeconds),
    );
    outcomes.push({ kind: 'enqueued', followUp, delaySeconds });
  }
  return outcomes;
}

async function bookkeeping(
  deps: OutboxDeps,
  step: 'confirm' | 'release',
  key: string,
  action: () => Promise<void>,
): Promise<void> {
  try {
    await action();
  } catch (error) {
    deps.onDedupFailure?.(step, key, error);
  }
}
