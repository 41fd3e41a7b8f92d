/**
 * What both `dlq replay` runs (a job type's DLQ, a stream consumer's on-failure queue) do around
 * the replay itself: the messages they received go back (visible again) when planning fails or
 * the operator says no, and every decision goes to a JSON-lines audit trail.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CliContext, Prompt } from '../cli-context';
import { releaseDeadLetters, type ReceivedDeadLetter } from './messages';

/** What a replay run takes of `dlq replay`'s options. */
export interface ReplayRunOptions {
  readonly max: number;
  /** Messages (stream: batches) per second. */
  readonly rate: number;
  readonly dryRun?: boolean;
  readonly yes?: boolean;
  readonly auditLog?: string;
  readonly whilePaused?: boolean;
}

/** Default audit file: ./tenang-audit/dlq-replay-<timestamp>.jsonl. */
export function defaultAuditLog(now: Date): string {
  return path.join('tenang-audit', `dlq-replay-${now.toISOString().replace(/[:.]/g, '-')}.jsonl`);
}

/** Plans over received messages; when planning fails they are made visible again first. */
export async function planOrRelease<T>(
  ctx: CliContext,
  dlqUrl: string,
  received: readonly ReceivedDeadLetter[],
  plan: () => Promise<T>,
): Promise<T> {
  try {
    return await plan();
  } catch (error) {
    await releaseDeadLetters(ctx.clients.sqs, dlqUrl, received);
    throw error;
  }
}

/**
 * Asks `question()` unless this is a dry run or --yes was given. On no, the messages are made
 * visible again (the caller tells the operator nothing changed). Whether to go on.
 */
export async function confirmedOrReleased(
  ctx: CliContext,
  opts: ReplayRunOptions,
  ask: Prompt,
  question: () => string,
  dlqUrl: string,
  received: readonly ReceivedDeadLetter[],
): Promise<boolean> {
  if (opts.dryRun === true || opts.yes === true) return true;
  if (await ask.confirm(question())) return true;
  await releaseDeadLetters(ctx.clients.sqs, dlqUrl, received);
  return false;
}

/** The replay's JSON-lines audit trail (--audit-log, or the default): its path and an appender. */
export function auditTrail<T>(
  ctx: CliContext,
  opts: ReplayRunOptions,
): { path: string; append: (record: T) => void } {
  const file = path.resolve(opts.auditLog ?? defaultAuditLog(ctx.now()));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  return { path: file, append: (record) => fs.appendFileSync(file, `${JSON.stringify(record)}\n`) };
}
