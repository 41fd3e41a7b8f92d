/**
 * `tenang dlq list|replay <job-type>` (R3, R5, X3): inspect a job type's DLQ without consuming
 * it, and replay it safely: filtered, rate-limited, skipping jobs whose effect already happened,
 * with a dry run, a confirmation and an audit trail. `<stream-consumer>` instead: the same for a
 * stream consumer's on-failure queue, whose batches are read back from the stream and replayed
 * through the consumer function (lib/ops/stream-replay.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Command } from 'commander';
import { referencePipeline, type ResolvedStreamConsumer } from '../../config';
import * as z from '../../config/zod';
import { mappingStatus } from '../../core/reconcile';
import { filteredOut, type ReplayFilter } from '../../core/replay';
import {
  CommandFailedError,
  NO_PROMPT,
  UsageError,
  type CliContext,
  type Prompt,
  type RegisterCommand,
} from '../cli-context';
import { parseSince } from '../duration';
import { receiveDeadLetters, releaseDeadLetters, type ReceivedDeadLetter } from '../dlq';
import {
  executeReplay,
  planReplay,
  summarize,
  type ReplayAuditRecord,
  type ReplayOutcome,
} from '../dlq-replay';
import { CountSchema, parseOptions, RateSchema } from '../options';
import { readConsumerPause } from '../pause-control';
import { discoverResources, findJobType, mappingOf, queueUrl, tableName } from '../pipeline-resources';
import { DynamoDbEffectChecker } from '../replay-effects';
import {
  executeStreamReplay,
  planStreamReplay,
  streamFailureRow,
  summarizeStreamReplay,
  toStreamFailure,
  type StreamReplayAuditRecord,
  type StreamReplayOutcome,
} from '../stream-replay';
import { renderTable } from '../table';

/** Visibility while a list looks at messages; they are released at once anyway. @default 30 s */
const LIST_VISIBILITY_SECONDS = 30;
const BODY_EXCERPT = 120;

const since = z.optional(z.string());
const errorClass = z.optional(z.array(z.string().check(z.minLength(1))));

/** Options of `dlq list`. */
export const DlqListOptionsSchema = z.object({
  errorClass,
  since,
  max: z._default(CountSchema, 100),
  json: z.optional(z.boolean()),
});

/** Options of `dlq replay`. */
export const DlqReplayOptionsSchema = z.object({
  errorClass,
  since,
  max: z._default(CountSchema, 100),
  rate: z._default(RateSchema, 5),
  dryRun: z.optional(z.boolean()),
  yes: z.optional(z.boolean()),
  json: z.optional(z.boolean()),
  auditLog: z.optional(z.string().check(z.minLength(1))),
  whilePaused: z.optional(z.boolean()),
});

function filterFrom(context: CliContext, opts: { errorClass?: string[]; since?: string }): ReplayFilter {
  let sinceDate: Date | undefined;
  if (opts.since !== undefined) {
    try {
      sinceDate = parseSince(opts.since, context.now());
    } catch (error) {
      throw new UsageError(`--since: ${(error as Error).message}`);
    }
  }
  return {
    errorClasses: (opts.errorClass ?? [])
      .flatMap((c) => c.split(','))
      .map((c) => c.trim())
      .filter(Boolean),
    since: sinceDate,
  };
}

/** The JSON/table row of a listed message. */
export function listRow(m: ReceivedDeadLetter): Record<string, string | number | undefined> {
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

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** The stream consumers the help names: the reference pipeline's (help is built before any stage is chosen). */
const STREAM_CONSUMERS_HELP = referencePipeline('dev', 'us-east-1')
  .streamConsumers.map((s) => s.consumer)
  .join(', ');

/**
 * The stream consumer named `name`, or undefined when `name` is a job type; anything else is a
 * usage error naming both kinds.
 */
export function streamConsumerOrJobType(
  context: CliContext,
  name: string,
): ResolvedStreamConsumer | undefined {
  const stream = context.config.streamConsumers.find((s) => s.consumer === name);
  if (stream !== undefined || context.config.jobTypes.some((j) => j.name === name)) return stream;
  throw new UsageError(
    `unknown job type or stream consumer "${name}"; job types: ${context.config.jobTypes
      .map((j) => j.name)
      .join(', ')}; stream consumers: ${context.config.streamConsumers.map((s) => s.consumer).join(', ')}`,
  );
}

/** The job-type filters make no sense for on-failure messages, which carry no error class. */
function refuseJobFilters(opts: { errorClass?: string[]; since?: string }): void {
  const given = [
    opts.errorClass === undefined ? '' : '--error-class',
    opts.since === undefined ? '' : '--since',
  ]
    .filter(Boolean)
    .join(' and ');
  if (given !== '')
    throw new UsageError(
      `${given}: job-type filters; a stream consumer's on-failure messages carry no error class (use --max)`,
    );
}

/** Default audit file: ./tenang-audit/dlq-replay-<timestamp>.jsonl. */
export function defaultAuditLog(now: Date): string {
  return path.join('tenang-audit', `dlq-replay-${now.toISOString().replace(/[:.]/g, '-')}.jsonl`);
}

/** The options of `dlq replay`. */
type ReplayOptions = z.infer<typeof DlqReplayOptionsSchema>;

/** The prompt to confirm on; a usage error when the replay `changes` things and nobody can confirm. */
function confirmer(ctx: CliContext, opts: ReplayOptions, changes: string): Prompt {
  const ask = ctx.prompt ?? NO_PROMPT;
  if (opts.dryRun !== true && opts.yes !== true && !ask.interactive) {
    throw new UsageError(
      `dlq replay ${changes}: pass --yes to run it without a terminal to confirm on (or --dry-run)`,
    );
  }
  return ask;
}

/** Plans over received messages; when planning fails they are made visible again first. */
async function planOrRelease<T>(
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
 * visible again and the operator told nothing changed. Whether to go on.
 */
async function confirmedOrReleased(
  ctx: CliContext,
  opts: ReplayOptions,
  ask: Prompt,
  question: () => string,
  dlqUrl: string,
  received: readonly ReceivedDeadLetter[],
): Promise<boolean> {
  if (opts.dryRun === true || opts.yes === true) return true;
  if (await ask.confirm(question())) return true;
  await releaseDeadLetters(ctx.clients.sqs, dlqUrl, received);
  ctx.out('nothing changed');
  return false;
}

/** The replay's JSON-lines audit trail (--audit-log, or the default): its path and an appender. */
function auditTrail<T>(ctx: CliContext, opts: ReplayOptions): { path: string; append: (record: T) => void } {
  const file = path.resolve(opts.auditLog ?? defaultAuditLog(ctx.now()));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  return { path: file, append: (record) => fs.appendFileSync(file, `${JSON.stringify(record)}\n`) };
}

/** Registers `dlq list` and `dlq replay`. */
export const register: RegisterCommand = (program: Command, context: () => CliContext): void => {
  const dlq = program.command('dlq').description("Inspect and replay a job type's dead-letter queue");

  dlq
    .command('list')
    .description("List dead-lettered jobs, or a stream consumer's failed batches, without consuming them")
    .argument('<job-type|stream-consumer>', 'e.g. payment.capture, or outbox-relay')
    .option('--error-class <name>', 'only this error class (repeatable, or comma-separated)', collect)
    .option('--since <duration|ISO>', 'only jobs that last failed since: 2h, 1d, or 2026-01-31T12:00:00Z')
    .option('--max <n>', 'look at no more than n messages', '100')
    .option('--json', 'print the messages as JSON')
    .addHelpText(
      'after',
      `
SQS cannot peek: each message is received with a short visibility and made visible again at
once (ChangeMessageVisibility 0). Every listing therefore raises the messages' receive counts;
a DLQ has no redrive, so nothing moves. On a FIFO DLQ a pass sees about one batch per group.

For a stream consumer (${STREAM_CONSUMERS_HELP}) the on-failure queue holds
metadata only: each message names a shard and a sequence range, never the records; the list
shows them with the condition Lambda gave up on, and until when the stream still holds the
records (24 h after they arrived).

Examples:
  $ tenang dlq list payment.capture
  $ tenang dlq list notification.send --error-class ProviderUnavailableError --since 2h --json
  $ tenang dlq list outbox-relay`,
    )
    .action(async (jobTypeName: string, _opts: unknown, cmd: Command) => {
      const opts = parseOptions(DlqListOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
      const stream = streamConsumerOrJobType(ctx, jobTypeName);
      if (stream !== undefined) return listStreamFailures(ctx, stream, opts);
      const jobType = findJobType(ctx, jobTypeName);
      const filter = filterFrom(ctx, opts);
      const resources = await discoverResources(ctx);
      const url = queueUrl(resources, jobType.dlqName);
      const received = await receiveDeadLetters(ctx.clients.sqs, url, {
        max: opts.max,
        visibilitySeconds: LIST_VISIBILITY_SECONDS,
      });
      const refused = await releaseDeadLetters(ctx.clients.sqs, url, received);
      if (refused.length > 0)
        ctx.err(
          `could not make visible again at once (they return within ${LIST_VISIBILITY_SECONDS} s): ${refused.join(', ')}`,
        );
      const shown = received.filter((m) => filteredOut(m, filter) === undefined).map(listRow);
      if (opts.json === true) {
        ctx.out(
          JSON.stringify(
            { jobType: jobType.name, dlq: jobType.dlqName, seen: received.length, messages: shown },
            null,
            2,
          ),
        );
        return;
      }
      ctx.out(`${jobType.dlqName}: ${shown.length} of ${received.length} message(s) seen match`);
      if (shown.length > 0) {
        ctx.out(
          renderTable(
            [
              'messageId',
              'errorClass',
              'attempts',
              'firstFailureAt',
              'lastFailureAt',
              'correlationId',
              'body',
            ],
            shown.map((r) =>
              Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v === undefined ? '-' : String(v)])),
            ),
          ),
        );
      }
    });

  dlq
    .command('replay')
    .description(
      "Send dead-lettered jobs back to their queue, skipping those whose effect already happened; or replay a stream consumer's failed batches",
    )
    .argument('<job-type|stream-consumer>', 'e.g. notification.send, or outbox-relay')
    .option('--error-class <name>', 'only this error class (repeatable, or comma-separated)', collect)
    .option('--since <duration|ISO>', 'only jobs that last failed since: 2h, 1d, or an ISO instant')
    .option('--max <n>', 'handle no more than n messages', '100')
    .option('--rate <n/s>', 'replay at most n messages (stream: batches) per second', '5/s')
    .option('--dry-run', 'decide and report without sending or deleting anything')
    .option('--yes', 'do not ask for confirmation (required when stdin is not a terminal)')
    .option(
      '--while-paused',
      'stream consumer: replay even though it is paused (the replay invokes the function, bypassing its mapping)',
    )
    .option(
      '--audit-log <file>',
      'JSON-lines audit trail (default ./tenang-audit/dlq-replay-<timestamp>.jsonl)',
    )
    .option('--json', 'print the outcome of every message as JSON')
    .addHelpText(
      'after',
      `
Each matching job is checked first: payment.capture is skipped when its idempotency record is
COMPLETED or its order is PAID/RESERVED; notification.send when its dedup record is done;
inventory.reserve when the SKU holds the order's reservation. Skipped jobs are deleted from the
DLQ ("already done"); the others are sent to the source queue (FIFO: same group, fresh
deduplication id) and then deleted. Jobs outside the filters, and bodies that are not valid
jobs, stay in the DLQ. Reading raises receive counts (SQS cannot peek).
Exit code 1 when any message failed.

For a stream consumer (${STREAM_CONSUMERS_HELP}) each on-failure message names a
shard and a sequence range: the records are read back from the stream (GetShardIterator
AT_SEQUENCE_NUMBER, GetRecords to the range's end), the consumer function is invoked once per
batch with the event the mapping would deliver (Invoke, RequestResponse), and the message is
deleted only when the invocation succeeded with no batch item failures. Replaying a whole batch
is safe: both consumers are idempotent (the cache invalidator fences every key by the order's
version; the outbox relay derives each follow-up's dedup id from the order and its version, so
it enqueues each once). The stream keeps records 24 h: a batch no longer in it stays in the
queue, and the replay says what to do instead (cache invalidator: \`tenang cache invalidate\`;
outbox relay: nothing automatic, the range and any orders read are named). The outbox relay
sheds notifications in degrade mode: replay after leaving it. A paused stream consumer is not
replayed (the invocation would bypass the pause): resume it first, or pass --while-paused when
the replay is the point of the pause. --error-class and --since are job-type filters. Exit code 1 when any message is left (records missing, function failed,
unreadable).

Examples:
  $ tenang dlq replay notification.send --dry-run
  $ tenang dlq replay payment.capture --error-class ProviderUnavailableError --since 2h --rate 2/s
  $ tenang dlq replay inventory.reserve --max 50 --yes --audit-log ./audit/reserve.jsonl
  $ tenang dlq replay outbox-relay --dry-run
  $ tenang dlq replay cache-invalidator --yes --json`,
    )
    .action(async (jobTypeName: string, _opts: unknown, cmd: Command) => {
      const opts = parseOptions(DlqReplayOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
      const stream = streamConsumerOrJobType(ctx, jobTypeName);
      if (stream !== undefined) return replayStreamFailures(ctx, stream, opts);
      const jobType = findJobType(ctx, jobTypeName);
      const filter = filterFrom(ctx, opts);
      const dryRun = opts.dryRun === true;
      const ask = confirmer(ctx, opts, 'changes queues');
      const resources = await discoverResources(ctx);
      const dlqUrl = queueUrl(resources, jobType.dlqName);
      const sourceUrl = queueUrl(resources, jobType.queueName);
      const checker = new DynamoDbEffectChecker(
        ctx.clients.dynamodb,
        {
          orders: tableName(ctx, resources, 'orders'),
          idempotency: tableName(ctx, resources, 'idempotency'),
          dedup: tableName(ctx, resources, 'dedup'),
          inventory: tableName(ctx, resources, 'inventory'),
        },
        ctx.now,
      );
      // Hidden long enough to decide, confirm and send them all at the given rate.
      const visibilitySeconds = Math.min(43_200, Math.ceil(300 + opts.max / opts.rate));
      const received = await receiveDeadLetters(ctx.clients.sqs, dlqUrl, {
        max: opts.max,
        visibilitySeconds,
      });
      const plan = await planOrRelease(ctx, dlqUrl, received, () =>
        planReplay(jobType, received, filter, (job) => checker.check(job)),
      );
      const question = (): string => {
        const counts = plan.reduce<Record<string, number>>(
          (acc, p) => ({ ...acc, [p.decision.action]: (acc[p.decision.action] ?? 0) + 1 }),
          {},
        );
        return `${jobType.dlqName}: replay ${counts.replay ?? 0}, delete ${counts['skip-already-done'] ?? 0} already done, leave ${
          (counts['skip-filtered'] ?? 0) + (counts.fail ?? 0)
        }. Proceed? [y/N] `;
      };
      if (!(await confirmedOrReleased(ctx, opts, ask, question, dlqUrl, received))) return;
      const trail = auditTrail<ReplayAuditRecord>(ctx, opts);
      const outcomes = await executeReplay(ctx.clients.sqs, plan, {
        jobType,
        sourceUrl,
        dlqUrl,
        dryRun,
        ratePerSecond: opts.rate,
        actor: ctx.actor,
        stage: ctx.stage,
        now: ctx.now,
        audit: trail.append,
      });
      const counts = summarize(outcomes);
      if (opts.json === true) {
        ctx.out(
          JSON.stringify(
            {
              jobType: jobType.name,
              dryRun,
              auditLog: trail.path,
              summary: counts,
              messages: outcomes.map(jsonOutcome),
            },
            null,
            2,
          ),
        );
      } else {
        if (outcomes.length > 0) {
          ctx.out(
            renderTable(
              ['messageId', 'outcome', 'reason'],
              outcomes.map((o) => ({
                messageId: o.message.messageId,
                outcome: o.outcome,
                reason: o.error ?? o.decision.reason,
              })),
            ),
          );
          ctx.out('');
        }
        ctx.out(`${dryRun ? '[dry run: nothing was sent or deleted] ' : ''}${jobType.name}`);
        ctx.out(
          renderTable(
            ['replayed', 'skipped-already-done', 'skipped-filtered', 'failed'],
            [Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, String(v)]))],
          ),
        );
        ctx.out(`audit log: ${trail.path}`);
      }
      if (counts.failed > 0) {
        throw new CommandFailedError(`${counts.failed} message(s) could not be replayed; see ${trail.path}`);
      }
    });
};

function jsonOutcome(o: ReplayOutcome): Record<string, unknown> {
  return {
    messageId: o.message.messageId,
    correlationId: o.message.correlationId,
    idempotencyKey: o.idempotencyKey,
    errorClass: o.message.errorClass,
    decision: o.decision.action,
    reason: o.decision.reason,
    outcome: o.outcome,
    error: o.error,
    replayedAs: o.replayedAs,
  };
}

const cell = (r: Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v === undefined ? '-' : String(v)]));

/** `dlq list <stream-consumer>`: the on-failure queue's batches, without consuming them. */
async function listStreamFailures(
  ctx: CliContext,
  stream: ResolvedStreamConsumer,
  opts: z.infer<typeof DlqListOptionsSchema>,
): Promise<void> {
  refuseJobFilters(opts);
  const resources = await discoverResources(ctx);
  const url = queueUrl(resources, stream.onFailureQueueName);
  const received = await receiveDeadLetters(ctx.clients.sqs, url, {
    max: opts.max,
    visibilitySeconds: LIST_VISIBILITY_SECONDS,
  });
  const refused = await releaseDeadLetters(ctx.clients.sqs, url, received);
  if (refused.length > 0)
    ctx.err(
      `could not make visible again at once (they return within ${LIST_VISIBILITY_SECONDS} s): ${refused.join(', ')}`,
    );
  const rows = received.map((m) => streamFailureRow(toStreamFailure(m)));
  if (opts.json === true) {
    ctx.out(
      JSON.stringify(
        {
          consumer: stream.consumer,
          queue: stream.onFailureQueueName,
          seen: received.length,
          messages: rows,
        },
        null,
        2,
      ),
    );
    return;
  }
  ctx.out(`${stream.onFailureQueueName}: ${received.length} failed batch(es) seen`);
  if (rows.length > 0) {
    ctx.out(
      renderTable(
        [
          'messageId',
          'condition',
          'functionError',
          'shardId',
          'sequenceNumbers',
          'batchSize',
          'firstArrival',
          'lastArrival',
          'replayableUntil',
        ],
        rows.map((r) =>
          cell({
            ...r,
            sequenceNumbers:
              r.startSequenceNumber === undefined
                ? r.problem
                : `${r.startSequenceNumber}..${String(r.endSequenceNumber)}`,
          }),
        ),
      ),
    );
  }
}

/** `dlq replay <stream-consumer>`: reads each failed batch back from the stream and invokes the consumer with it. */
async function replayStreamFailures(
  ctx: CliContext,
  stream: ResolvedStreamConsumer,
  opts: z.infer<typeof DlqReplayOptionsSchema>,
): Promise<void> {
  refuseJobFilters(opts);
  const dryRun = opts.dryRun === true;
  const ask = confirmer(ctx, opts, 'invokes the consumer and changes its on-failure queue');
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
  const plan = await planOrRelease(ctx, dlqUrl, received, () =>
    planStreamReplay(ctx.clients.streams, received.map(toStreamFailure)),
  );
  const question = (): string => {
    const readable = plan.filter((p) => p.read?.kind === 'complete');
    const records = readable.reduce((n, p) => n + (p.read?.records.length ?? 0), 0);
    return `${stream.onFailureQueueName}: invoke ${functionName} with ${readable.length} batch(es) (${records} record(s)), leave ${
      plan.length - readable.length
    } that cannot be read back. Proceed? [y/N] `;
  };
  if (!(await confirmedOrReleased(ctx, opts, ask, question, dlqUrl, received))) return;
  const trail = auditTrail<StreamReplayAuditRecord>(ctx, opts);
  const outcomes = await executeStreamReplay(ctx.clients, plan, {
    stage: ctx.stage,
    consumer: stream.consumer,
    functionName,
    dlqUrl,
    dryRun,
    ratePerSecond: opts.rate,
    actor: ctx.actor,
    now: ctx.now,
    audit: trail.append,
  });
  const counts = summarizeStreamReplay(outcomes);
  if (opts.json === true) {
    ctx.out(
      JSON.stringify(
        {
          consumer: stream.consumer,
          functionName,
          dryRun,
          auditLog: trail.path,
          summary: counts,
          messages: outcomes.map(jsonStreamOutcome),
        },
        null,
        2,
      ),
    );
  } else {
    if (outcomes.length > 0) {
      ctx.out(
        renderTable(
          ['messageId', 'sequenceNumbers', 'records', 'outcome', 'reason'],
          outcomes.map((o) =>
            cell({
              messageId: o.failure.message.messageId,
              sequenceNumbers:
                o.failure.record === undefined
                  ? undefined
                  : `${o.failure.record.batch.startSequenceNumber}..${o.failure.record.batch.endSequenceNumber}`,
              records: o.read?.records.length,
              outcome: o.outcome,
              reason: o.error === undefined ? o.reason : `${o.reason}: ${o.error}`,
            }),
          ),
        ),
      );
      ctx.out('');
    }
    ctx.out(
      `${dryRun ? '[dry run: nothing was invoked or deleted] ' : ''}${stream.consumer} (${functionName})`,
    );
    ctx.out(renderTable(Object.keys(counts), [cell(counts)]));
    ctx.out(`audit log: ${trail.path}`);
  }
  const left = counts['records-missing'] + counts['function-failed'] + counts.failed;
  if (left > 0) {
    throw new CommandFailedError(
      `${left} failed batch(es) could not be replayed and stay in ${stream.onFailureQueueName}; see ${trail.path}`,
    );
  }
}

function jsonStreamOutcome(o: StreamReplayOutcome): Record<string, unknown> {
  const batch = o.failure.record?.batch;
  return {
    messageId: o.failure.message.messageId,
    condition: o.failure.record?.condition,
    shardId: batch?.shardId,
    startSequenceNumber: batch?.startSequenceNumber,
    endSequenceNumber: batch?.endSequenceNumber,
    batchSize: batch?.batchSize,
    recordsRead: o.read?.records.length ?? 0,
    orders: o.orders,
    outcome: o.outcome,
    reason: o.reason,
    error: o.error,
  };
}
