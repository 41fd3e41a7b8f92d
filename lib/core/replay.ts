/**
 * Replay safety (R5, X3): what to do with one dead-lettered job. Replay is never blind: a job
 * whose effect is known to have happened is dropped from the DLQ instead of run again (any other
 * is sent back to a consumer that must be idempotent anyway), filters narrow what is touched, and
 * a message that can never succeed is left where it is.
 */

/** A dead-lettered message as the DLQ holds it, with the failure context the runner attached (R3). */
export interface DeadLetter {
  readonly messageId: string;
  readonly body: string;
  readonly errorClass: string | undefined;
  readonly errorMessage: string | undefined;
  readonly attempts: number | undefined;
  readonly firstFailureAt: Date | undefined;
  readonly lastFailureAt: Date | undefined;
  readonly correlationId: string | undefined;
  /** When the message entered the DLQ (SentTimestamp). */
  readonly sentAt: Date | undefined;
}

/** Which messages an operator means. */
export interface ReplayFilter {
  /** Only these error classes; empty: any. */
  readonly errorClasses: readonly string[];
  /** Only messages that last failed at or after this instant. */
  readonly since: Date | undefined;
}

/** Whether the job's effect is known to have happened, with the evidence. */
export type EffectCheck = { readonly done: true; readonly evidence: string } | { readonly done: false };

/** The decision for one message. */
export type ReplayDecision =
  | { readonly action: 'replay'; readonly reason: string }
  | { readonly action: 'skip-already-done'; readonly reason: string }
  | { readonly action: 'skip-filtered'; readonly reason: string }
  | { readonly action: 'fail'; readonly reason: string };

/** The instant a message last failed: the runner's attribute, else when it entered the DLQ. */
export function lastFailure(message: DeadLetter): Date | undefined {
  return message.lastFailureAt ?? message.sentAt;
}

/** Why `message` is outside `filter`; undefined when it matches. */
export function filteredOut(message: DeadLetter, filter: ReplayFilter): string | undefined {
  if (filter.errorClasses.length > 0 && !filter.errorClasses.includes(message.errorClass ?? '')) {
    return `error class ${message.errorClass ?? '(none)'} is not ${filter.errorClasses.join(' or ')}`;
  }
  const at = lastFailure(message);
  if (filter.since !== undefined && (at === undefined || at.getTime() < filter.since.getTime())) {
    return `last failed ${at?.toISOString() ?? 'at an unknown time'}, before ${filter.since.toISOString()}`;
  }
  return undefined;
}

/**
 * Decides one message. `job` is the parse of its body (an error: it is not a valid job and a
 * replay would only dead-letter it again); `effect` is asked only for matching, valid jobs.
 */
export async function decideReplay(
  message: DeadLetter,
  filter: ReplayFilter,
  job: { readonly ok: true } | { readonly ok: false; readonly problem: string },
  effect: () => Promise<EffectCheck>,
): Promise<ReplayDecision> {
  const excluded = filteredOut(message, filter);
  if (excluded !== undefined) return { action: 'skip-filtered', reason: excluded };
  if (!job.ok)
    return { action: 'fail', reason: `not a valid job, a replay would fail again: ${job.problem}` };
  const check = await effect();
  if (check.done) return { action: 'skip-already-done', reason: `already done: ${check.evidence}` };
  // Not known to be done: the consumer's own idempotency decides whether it runs again.
  return { action: 'replay', reason: 'no record says its effect happened' };
}
