/**
 * `dlq replay <stream-consumer>` (R5 for D6 and C2): refuses a paused consumer (the replay
 * invokes its function directly, bypassing the pause) unless --while-paused, receives the
 * on-failure messages, reads each batch back from the stream, asks, and invokes the consumer
 * once per batch at the given rate with an audit trail (lib/ops/dlq/stream-replay.ts). Its reads
 * are a third reader of each shard beside the two mappings: throttled reads are backed off,
 * retried and counted (throttledReads), and no mapping is paused for them.
 * lib/ops/commands/dlq.ts prints the outcome.
 */
import { ThrottledReads } from '../../adapters/aws/stream-read-throttles';
import type { ResolvedStreamConsumer, ResolvedTable } from '../../config';
import { mappingStatus } from '../../core/reconcile';
import { CommandFailedError, type CliContext, type Prompt } from '../cli-context';
import { readConsumerPause } from '../pause-control';
import { discoverResources, mappingOf, queueUrl } from '../pipeline-resources';
import { receiveDeadLetters } from './messages';
import { auditTrail, confirmedOrReleased, planOrRelease, type ReplayRunOptions } from './session';
import {
  executeStreamReplay,
  planStreamReplay,
  summarizeStreamReplay,
  toStreamFailure,
  type StreamReplayAuditRecord,
  type StreamReplayOutcome,
  type StreamReplayOutcomeKind,
} from './stream-replay';

/** What a stream consumer's replay did. */
export interface StreamFailureReplay {
  readonly consumer: string;
  readonly functionName: string;
  readonly dryRun: boolean;
  readonly auditLog: string;
  readonly summary: Record<StreamReplayOutcomeKind, number>;
  /** GetRecords attempts answered LimitExceededException (more than two readers on a shard). */
  readonly throttledReads: number;
  readonly outcomes: readonly StreamReplayOutcome[];
}

/** The declared table whose stream `stream` consumes. */
function streamTable(ctx: CliContext, stream: ResolvedStreamConsumer): ResolvedTable {
  const table = ctx.config.tables.find((t) => t.name === stream.table);
  if (table === undefined) {
    throw new CommandFailedError(
      `${stream.consumer} consumes table ${stream.table}, which the pipeline does not declare`,
    );
  }
  return table;
}

/** Replays `stream`'s on-failure queue; undefined when the operator declined (the messages are back). */
export async function replayStreamFailures(
  ctx: CliContext,
  stream: ResolvedStreamConsumer,
  opts: ReplayRunOptions,
  ask: Prompt,
): Promise<StreamFailureReplay | undefined> {
  const dryRun = opts.dryRun === true;
  const resources = await discoverResources(ctx);
  const dlqUrl = queueUrl(resources, stream.onFailureQueueName);
  const mapping = mappingOf(ctx, resources, stream.consumer);
  const { functionName } = mapping;
  const pause = await readConsumerPause(ctx, stream.pauseFlagName);
  const mappingOff = mappingStatus(mapping.state).enabled !== true;
  if ((pause.paused || mappingOff) && opts.whilePaused !== true) {
    const why = pause.paused
      ? `paused (${pause.reason ?? 'no reason'}${pause.until === undefined ? '' : `, until ${pause.until.toISOString()}`})`
      : `not paused, but its mapping is ${mapping.state}`;
    const message = `${stream.consumer} is ${why}: a replay invokes ${functionName} directly, bypassing the pause. Resume it first (tenang resume ${stream.consumer}), or pass --while-paused`;
    if (!dryRun) throw new CommandFailedError(message);
    ctx.err(`note: ${message}`);
  }
  // Hidden long enough to read, confirm and invoke them all at the given rate.
  const perBatchSeconds = stream.function.timeoutSeconds + 1 / opts.rate;
  const visibilitySeconds = Math.min(43_200, Math.ceil(300 + opts.max * perBatchSeconds));
  const received = await receiveDeadLetters(ctx.clients.sqs, dlqUrl, { max: opts.max, visibilitySeconds });
  const throttles = new ThrottledReads();
  const plan = await planOrRelease(ctx, dlqUrl, received, () =>
    planStreamReplay(
      ctx.clients.streams,
      received.map(toStreamFailure),
      streamTable(ctx, stream).partitionKey,
      {
        throttles,
      },
    ),
  );
  const question = (): string => {
    const readable = plan.filter((p) => p.read?.kind === 'complete');
    const records = readable.reduce((n, p) => n + (p.read?.records.length ?? 0), 0);
    return `${stream.onFailureQueueName}: invoke ${functionName} with ${readable.length} batch(es) (${records} record(s)), leave ${
      plan.length - readable.length
    } that cannot be read back. Proceed? [y/N] `;
  };
  if (!(await confirmedOrReleased(ctx, opts, ask, question, dlqUrl, received))) return undefined;
  const trail = auditTrail<StreamReplayAuditRecord>(ctx, opts);
  const outcomes = await executeStreamReplay(ctx.clients, plan, {
    stage: ctx.stage,
    stream: {
      ...stream,
      cachedEntities: ctx.config.stage.cache.entities
        .filter((e) => e.table === stream.table)
        .map((e) => e.name),
    },
    functionName,
    dlqUrl,
    dryRun,
    ratePerSecond: opts.rate,
    actor: ctx.actor,
    now: ctx.now,
    audit: trail.append,
  });
  return {
    consumer: stream.consumer,
    functionName,
    dryRun,
    auditLog: trail.path,
    summary: summarizeStreamReplay(outcomes),
    throttledReads: throttles.count,
    outcomes,
  };
}
