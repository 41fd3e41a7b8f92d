/**
 * `dlq list` (R3): a job type's DLQ, or a stream consumer's on-failure queue, looked at without
 * consuming it (lib/ops/dlq/messages.ts: received with a short visibility, made visible again at
 * once). lib/ops/commands/dlq.ts prints what it returns.
 */
import type { ResolvedStreamConsumer } from '../../config';
import { filteredOut, type ReplayFilter } from '../../core/replay';
import type { CliContext } from '../cli-context';
import { discoverResources, findJobType, queueUrl } from '../pipeline-resources';
import { receiveDeadLetters, releaseDeadLetters, type ReceivedDeadLetter } from './messages';
import { streamFailureRow, toStreamFailure } from './stream-replay';

/** Visibility while a list looks at messages; they are released at once anyway. @default 30 s */
const LIST_VISIBILITY_SECONDS = 30;
const BODY_EXCERPT = 120;

/** A listed message: the JSON of `dlq list` and its table's row. */
export type ListRow = Record<string, string | number | undefined>;

/** The JSON/table row of a listed message. */
export function listRow(m: ReceivedDeadLetter): ListRow {
  return {
    messageId: m.messageId,
    errorClass: m.errorClass,
    errorMessage: m.errorMessage,
    attempts: m.attempts,
    firstFailureAt: m.firstFailureAt?.toISOString(),
    lastFailureAt: m.lastFailureAt?.toISOString(),
    correlationId: m.correlationId,
    receiveCount: m.receiveCount,
    body: m.body.length > BODY_EXCERPT ? `${m.body.slice(0, BODY_EXCERPT)}…` : m.body,
  };
}

/** Receives up to `max` messages of the queue at `url` and makes them visible again at once. */
async function lookAt(ctx: CliContext, url: string, max: number): Promise<ReceivedDeadLetter[]> {
  const received = await receiveDeadLetters(ctx.clients.sqs, url, {
    max,
    visibilitySeconds: LIST_VISIBILITY_SECONDS,
  });
  const refused = await releaseDeadLetters(ctx.clients.sqs, url, received);
  if (refused.length > 0)
    ctx.err(
      `could not make visible again at once (they return within ${LIST_VISIBILITY_SECONDS} s): ${refused.join(', ')}`,
    );
  return received;
}

/** What `dlq list <job-type>` saw (its JSON). */
export interface DeadLetterList {
  readonly jobType: string;
  readonly dlq: string;
  /** Messages looked at. */
  readonly seen: number;
  /** Those that pass the filter. */
  readonly messages: readonly ListRow[];
}

/** `dlq list <job-type>`: the DLQ's messages that pass `filter`. */
export async function listDeadLetters(
  ctx: CliContext,
  jobTypeName: string,
  filter: ReplayFilter,
  max: number,
): Promise<DeadLetterList> {
  const jobType = findJobType(ctx, jobTypeName);
  const resources = await discoverResources(ctx);
  const received = await lookAt(ctx, queueUrl(resources, jobType.dlqName), max);
  const messages = received.filter((m) => filteredOut(m, filter) === undefined).map(listRow);
  return { jobType: jobType.name, dlq: jobType.dlqName, seen: received.length, messages };
}

/** What `dlq list <stream-consumer>` saw (its JSON). */
export interface StreamFailureList {
  readonly consumer: string;
  readonly queue: string;
  readonly seen: number;
  readonly messages: readonly ListRow[];
}

/** `dlq list <stream-consumer>`: the on-failure queue's batches, without consuming them. */
export async function listStreamFailures(
  ctx: CliContext,
  stream: ResolvedStreamConsumer,
  max: number,
): Promise<StreamFailureList> {
  const resources = await discoverResources(ctx);
  const received = await lookAt(ctx, queueUrl(resources, stream.onFailureQueueName), max);
  return {
    consumer: stream.consumer,
    queue: stream.onFailureQueueName,
    seen: received.length,
    messages: received.map((m) => streamFailureRow(toStreamFailure(m))),
  };
}
