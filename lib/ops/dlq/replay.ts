/**
 * DLQ replay (R5, X3): decide every received message (core/replay), then act: a job whose
 * effect happened is deleted from the DLQ ("already done"); any other matching, valid job is
 * sent back to its source queue (FIFO: same group, fresh deduplication id) and then deleted
 * from the DLQ; everything else is made visible again. Sends are rate-limited; every decision
 * is written to the audit trail as it is made.
 */
import { randomUUID } from 'node:crypto';
import {
  DeleteMessageCommand,
  SendMessageCommand,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { ResolvedJobType } from '../../config';
import * as z from '../../config/zod';
import { parseEnvelope, type JobEnvelope } from '../../core/envelope';
import { decideReplay, type EffectCheck, type ReplayDecision, type ReplayFilter } from '../../core/replay';
import { releaseDeadLetters, type ReceivedDeadLetter } from './messages';

/** Attribute marking a replayed message (who replayed it, when). */
export const REPLAYED_ATTRIBUTE = 'tenang-replayed-by';

/** One decided message. */
export interface PlannedReplay {
  readonly message: ReceivedDeadLetter;
  readonly decision: ReplayDecision;
  readonly idempotencyKey: string | undefined;
}

/** Summary categories. */
export type ReplayOutcomeKind = 'replayed' | 'skipped-already-done' | 'skipped-filtered' | 'failed';

/** What happened to one message. */
export interface ReplayOutcome extends PlannedReplay {
  readonly outcome: ReplayOutcomeKind;
  /** Why it failed, when acting on it failed. */
  readonly error: string | undefined;
  /** The id of the re-sent message. */
  readonly replayedAs: string | undefined;
}

/** One audit line. */
export interface ReplayAuditRecord {
  readonly at: string;
  readonly actor: string;
  readonly stage: string;
  readonly jobType: string;
  readonly dryRun: boolean;
  readonly messageId: string;
  readonly correlationId: string | undefined;
  readonly idempotencyKey: string | undefined;
  readonly errorClass: string | undefined;
  readonly attempts: number | undefined;
  readonly decision: ReplayDecision['action'];
  readonly reason: string;
  readonly outcome: ReplayOutcomeKind;
  readonly error: string | undefined;
  readonly replayedAs: string | undefined;
}

/** Decides every message. */
export async function planReplay(
  jobType: ResolvedJobType,
  messages: readonly ReceivedDeadLetter[],
  filter: ReplayFilter,
  effect: (job: JobEnvelope) => Promise<EffectCheck>,
): Promise<PlannedReplay[]> {
  const planned: PlannedReplay[] = [];
  for (const message of messages) {
    let job: JobEnvelope | undefined;
    let problem = '';
    try {
      // The envelope only: the CLI knows the job type by its declaration, not its payload schema
      // (the job module's). A payload the consumer refuses goes back to the DLQ on its first attempt.
      job = parseEnvelope(message.body, jobType.name, z.unknown());
    } catch (error) {
      problem = error instanceof Error ? error.message : String(error);
    }
    const parsed = job;
    const decision = await decideReplay(
      message,
      filter,
      parsed === undefined ? { ok: false, problem } : { ok: true },
      () => (parsed === undefined ? Promise.resolve({ done: false }) : effect(parsed)),
    );
    planned.push({ message, decision, idempotencyKey: parsed?.idempotencyKey });
  }
  return planned;
}

/** How to act on a plan. */
export interface ReplayRun {
  readonly jobType: ResolvedJobType;
  readonly sourceUrl: string;
  readonly dlqUrl: string;
  readonly dryRun: boolean;
  /** Sends per second. */
  readonly ratePerSecond: number;
  readonly actor: string;
  readonly stage: string;
  readonly now: () => Date;
  readonly audit: (record: ReplayAuditRecord) => void;
  /** @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Acts on every planned message, in order; never throws for one message's failure. */
export async function executeReplay(
  sqs: SQSClient,
  plan: readonly PlannedReplay[],
  run: ReplayRun,
): Promise<ReplayOutcome[]> {
  const fifo = run.jobType.queue.kind === 'fifo';
  const sleep = run.sleep ?? defaultSleep;
  const interval = 1000 / run.ratePerSecond;
  let nextSendAt = 0;
  const outcomes: ReplayOutcome[] = [];
  const untouched: ReceivedDeadLetter[] = [];

  for (const item of plan) {
    const { message, decision } = item;
    let outcome: ReplayOutcomeKind;
    let error: string | undefined;
    let replayedAs: string | undefined;
    if (decision.action === 'skip-filtered' || decision.action === 'fail') {
      outcome = decision.action === 'fail' ? 'failed' : 'skipped-filtered';
      untouched.push(message);
    } else if (run.dryRun) {
      outcome = decision.action === 'replay' ? 'replayed' : 'skipped-already-done';
      untouched.push(message);
    } else {
      try {
        if (decision.action === 'replay') {
          const wait = nextSendAt - Date.now();
          if (wait > 0) await sleep(wait);
          nextSendAt = Math.max(Date.now(), nextSendAt) + interval;
          const attributes: Record<string, MessageAttributeValue> = {
            [REPLAYED_ATTRIBUTE]: {
              DataType: 'String',
              StringValue: `${run.actor} at ${run.now().toISOString()} from ${message.messageId}`,
            },
          };
          const sent = await sqs.send(
            new SendMessageCommand({
              QueueUrl: run.sourceUrl,
              MessageBody: message.body,
              MessageAttributes: attributes,
              // FIFO: the job keeps its place in its group; a fresh dedup id, or SQS could drop
              // it as a copy of the original within the 5-minute window.
              MessageGroupId: fifo ? message.groupId : undefined,
              MessageDeduplicationId: fifo ? `replay-${randomUUID()}` : undefined,
            }),
          );
          replayedAs = sent.MessageId;
          outcome = 'replayed';
        } else {
          outcome = 'skipped-already-done';
        }
        // Deleted only after the send: a failure in between replays it again later, which the
        // consumers' idempotency makes harmless; the other order could lose the job.
        await sqs.send(
          new DeleteMessageCommand({ QueueUrl: run.dlqUrl, ReceiptHandle: message.receiptHandle }),
        );
      } catch (caught) {
        outcome = 'failed';
        error = caught instanceof Error ? `${caught.name}: ${caught.message}` : String(caught);
        if (replayedAs === undefined) untouched.push(message);
      }
    }
    const result: ReplayOutcome = { ...item, outcome, error, replayedAs };
    outcomes.push(result);
    run.audit({
      at: run.now().toISOString(),
      actor: run.actor,
      stage: run.stage,
      jobType: run.jobType.name,
      dryRun: run.dryRun,
      messageId: message.messageId,
      correlationId: message.correlationId,
      idempotencyKey: item.idempotencyKey,
      errorClass: message.errorClass,
      attempts: message.attempts,
      decision: decision.action,
      reason: decision.reason,
      outcome,
      error,
      replayedAs,
    });
  }
  if (untouched.length > 0) await releaseDeadLetters(sqs, run.dlqUrl, untouched);
  return outcomes;
}

/** Counts per category, every category present. */
export function summarize(outcomes: readonly ReplayOutcome[]): Record<ReplayOutcomeKind, number> {
  const counts: Record<ReplayOutcomeKind, number> = {
    replayed: 0,
    'skipped-already-done': 0,
    'skipped-filtered': 0,
    failed: 0,
  };
  for (const o of outcomes) counts[o.outcome] += 1;
  return counts;
}
