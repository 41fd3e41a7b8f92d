/**
 * `tenang dlq list|replay <job-type>` (R3, R5, X3): inspect a job type's DLQ without consuming
 * it, and replay it safely: filtered, rate-limited, skipping jobs whose effect already happened,
 * with a dry run, a confirmation and an audit trail. `<stream-consumer>` instead: the same for a
 * stream consumer's on-failure queue, whose batches are read back from the stream and replayed
 * through the consumer function (lib/ops/dlq/stream-replay.ts).
 *
 * This module is the command: its options, help, checks of what was asked, and output. The work
 * is in lib/ops/dlq/ (list.ts; replay-job.ts and replay-stream.ts over replay.ts and
 * stream-replay.ts; messages.ts, session.ts), loaded when a command runs.
 */
import type { Command } from 'commander';
import type { ResolvedStreamConsumer } from '../../config';
import * as z from '../../config/zod';
import type { ReplayFilter } from '../../core/replay';
import {
  CommandFailedError,
  NO_PROMPT,
  UsageError,
  type CliContext,
  type Prompt,
  type RegisterCommand,
} from '../cli-context';
import type { DeadLetterList, StreamFailureList } from '../dlq/list';
import type { ReplayOutcome } from '../dlq/replay';
import type { DeadLetterReplay } from '../dlq/replay-job';
import type { StreamFailureReplay } from '../dlq/replay-stream';
import type { StreamReplayOutcome } from '../dlq/stream-replay';
import { parseSince } from '../duration';
import { CountSchema, parseOptions, RateSchema } from '../options';
import { renderTable } from '../table';

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

const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** How the help names stream consumers: help is built before any stage (and so any config) is known. */
const STREAM_CONSUMERS_HELP = 'the stream consumers `tenang status` lists';

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

// ---------------------------------------------------------------------------------------------
// Registration

/** Registers `dlq list` and `dlq replay`. */
export const register: RegisterCommand = (program: Command, context: () => CliContext): void => {
  const dlq = program.command('dlq').description("Inspect and replay a job type's dead-letter queue");

  dlq
    .command('list')
    .description("List dead-lettered jobs, or a stream consumer's failed batches, without consuming them")
    .argument('<job-type|stream-consumer>', 'e.g. invoice.issue, or a stream consumer such as invoice-relay')
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
  $ tenang dlq list invoice.issue
  $ tenang dlq list invoice.issue --error-class ProviderUnavailableError --since 2h --json
  $ tenang dlq list invoice-relay`,
    )
    .action(async (jobTypeName: string, _opts: unknown, cmd: Command) => {
      const opts = parseOptions(DlqListOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
      const stream = streamConsumerOrJobType(ctx, jobTypeName);
      if (stream !== undefined) {
        refuseJobFilters(opts);
        const { listStreamFailures } = await import('../dlq/list');
        return printStreamFailures(ctx, await listStreamFailures(ctx, stream, opts.max), opts.json === true);
      }
      const filter = filterFrom(ctx, opts);
      const { listDeadLetters } = await import('../dlq/list');
      printDeadLetters(ctx, await listDeadLetters(ctx, jobTypeName, filter, opts.max), opts.json === true);
    });

  dlq
    .command('replay')
    .description(
      "Send dead-lettered jobs back to their queue, skipping those whose effect already happened; or replay a stream consumer's failed batches",
    )
    .argument('<job-type|stream-consumer>', 'e.g. invoice.issue, or a stream consumer such as invoice-relay')
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
Each matching job is checked first against its idempotency record on tenang's idempotency
table, the one the job runner keeps for an idempotent job type (keyed on the job type's name and
the job's idempotency key): a COMPLETED record means the job already ran, and it is deleted from
the DLQ ("already done"). The others are sent to the source queue (FIFO: same group, fresh
deduplication id) and then deleted. A job type that keeps itself idempotent another way (its job
module's idempotency 'self', or a persistence layer of its own) has no record there: its jobs are
replayed, and its consumer's own guard drops one whose effect already happened. The envelope is
checked, the payload is the consumer's to check: one it refuses returns to the DLQ at once. Jobs
outside the filters, and bodies that are not valid job envelopes, stay in the DLQ. Reading
raises receive counts (SQS cannot peek).
Exit code 1 when any message failed.

For a stream consumer (${STREAM_CONSUMERS_HELP}) each on-failure message names a
shard and a sequence range: the records are read back from the stream (GetShardIterator
AT_SEQUENCE_NUMBER, GetRecords to the range's end), the consumer function is invoked once per
batch with the event the mapping would deliver (Invoke, RequestResponse), and the message is
deleted only when the invocation succeeded with no batch item failures. Replaying a whole batch
relies on the consumer being idempotent per record, as a stream consumer must be anyway (its
mapping retries whole batches too), e.g. by fencing a cache key at the item's version, or by
deriving each enqueued job's dedup id from the item and its version. The stream keeps records
24 h: a batch no longer in it stays in the queue, and the replay says what to do instead, from
what the consumer declares (one that uses the cache: \`tenang cache invalidate\`; one that
enqueues jobs: nothing automatic, the range and the keys read are named). A consumer that reads
the degrade flag may shed or defer work while the stage is degraded: replay after leaving it. A
paused stream consumer is not replayed (the invocation would bypass the pause): resume it first,
or pass --while-paused when the replay is the point of the pause. The replay is another reader
of each shard the table's consumers' mappings read, and DynamoDB Streams allows two at a time:
its reads, and the mappings' while it reads, may be throttled (LimitExceededException). It
pauses no mapping (a pause costs the consumers' work while it lasts, and longer if an
interrupted replay leaves it on); it backs off with jitter and retries each throttled read, and
the output (JSON: throttledReads) says how many were throttled. A batch whose reads stay
throttled through the backoff stays in the queue (read-throttled): run the replay again.
--error-class and --since are job-type filters. Exit code 1 when any message is left (records
missing, reads throttled, function failed, unreadable).

Examples:
  $ tenang dlq replay invoice.issue --dry-run
  $ tenang dlq replay invoice.issue --error-class ProviderUnavailableError --since 2h --rate 2/s
  $ tenang dlq replay receipt.send --max 50 --yes --audit-log ./audit/receipts.jsonl
  $ tenang dlq replay invoice-relay --dry-run
  $ tenang dlq replay invoice-relay --yes --json`,
    )
    .action(async (jobTypeName: string, _opts: unknown, cmd: Command) => {
      const opts = parseOptions(DlqReplayOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
      const stream = streamConsumerOrJobType(ctx, jobTypeName);
      if (stream !== undefined) {
        refuseJobFilters(opts);
        const ask = confirmer(ctx, opts, 'invokes the consumer and changes its on-failure queue');
        const { replayStreamFailures } = await import('../dlq/replay-stream');
        const replay = await replayStreamFailures(ctx, stream, opts, ask);
        if (replay === undefined) return ctx.out('nothing changed');
        printStreamReplay(ctx, replay, opts.json === true);
        const left =
          replay.summary['records-missing'] +
          replay.summary['read-throttled'] +
          replay.summary['function-failed'] +
          replay.summary.failed;
        if (left > 0) {
          throw new CommandFailedError(
            `${left} failed batch(es) could not be replayed and stay in ${stream.onFailureQueueName}; see ${replay.auditLog}`,
          );
        }
        return;
      }
      const filter = filterFrom(ctx, opts);
      const ask = confirmer(ctx, opts, 'changes queues');
      const { replayDeadLetters } = await import('../dlq/replay-job');
      const replay = await replayDeadLetters(ctx, jobTypeName, filter, opts, ask);
      if (replay === undefined) return ctx.out('nothing changed');
      printDeadLetterReplay(ctx, replay, opts.json === true);
      if (replay.summary.failed > 0) {
        throw new CommandFailedError(
          `${replay.summary.failed} message(s) could not be replayed; see ${replay.auditLog}`,
        );
      }
    });
};

// ---------------------------------------------------------------------------------------------
// Output

const cell = (r: Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v === undefined ? '-' : String(v)]));

function printDeadLetters(ctx: CliContext, list: DeadLetterList, json: boolean): void {
  if (json) {
    ctx.out(JSON.stringify(list, null, 2));
    return;
  }
  ctx.out(`${list.dlq}: ${list.messages.length} of ${list.seen} message(s) seen match`);
  if (list.messages.length > 0) {
    ctx.out(
      renderTable(
        ['messageId', 'errorClass', 'attempts', 'firstFailureAt', 'lastFailureAt', 'correlationId', 'body'],
        list.messages.map(cell),
      ),
    );
  }
}

function printStreamFailures(ctx: CliContext, list: StreamFailureList, json: boolean): void {
  if (json) {
    ctx.out(JSON.stringify(list, null, 2));
    return;
  }
  ctx.out(`${list.queue}: ${list.seen} failed batch(es) seen`);
  if (list.messages.length > 0) {
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
        list.messages.map((r) =>
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

function printDeadLetterReplay(ctx: CliContext, replay: DeadLetterReplay, json: boolean): void {
  const { dryRun, outcomes, summary } = replay;
  if (json) {
    ctx.out(
      JSON.stringify(
        {
          jobType: replay.jobType,
          dryRun,
          auditLog: replay.auditLog,
          summary,
          messages: outcomes.map(jsonOutcome),
        },
        null,
        2,
      ),
    );
    return;
  }
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
  ctx.out(`${dryRun ? '[dry run: nothing was sent or deleted] ' : ''}${replay.jobType}`);
  ctx.out(renderTable(['replayed', 'skipped-already-done', 'skipped-filtered', 'failed'], [cell(summary)]));
  ctx.out(`audit log: ${replay.auditLog}`);
}

function printStreamReplay(ctx: CliContext, replay: StreamFailureReplay, json: boolean): void {
  const { dryRun, outcomes, summary, functionName } = replay;
  if (json) {
    ctx.out(
      JSON.stringify(
        {
          consumer: replay.consumer,
          functionName,
          dryRun,
          auditLog: replay.auditLog,
          summary,
          throttledReads: replay.throttledReads,
          messages: outcomes.map(jsonStreamOutcome),
        },
        null,
        2,
      ),
    );
    return;
  }
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
    `${dryRun ? '[dry run: nothing was invoked or deleted] ' : ''}${replay.consumer} (${functionName})`,
  );
  ctx.out(renderTable(Object.keys(summary), [cell(summary)]));
  ctx.out(
    `throttled reads: ${replay.throttledReads} (LimitExceededException: more than two readers of a shard; backed off and retried)`,
  );
  ctx.out(`audit log: ${replay.auditLog}`);
}

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
    keys: o.keys,
    outcome: o.outcome,
    reason: o.reason,
    error: o.error,
  };
}
