/**
 * `tenang dlq list|replay <job-type>` (R3, R5, X3): inspect a job type's DLQ without consuming
 * it, and replay it safely: filtered, rate-limited, skipping jobs whose effect already happened,
 * with a dry run, a confirmation and an audit trail.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Command } from 'commander';
import * as z from '../../config/zod';
import { filteredOut, type ReplayFilter } from '../../core/replay';
import {
  CommandFailedError,
  NO_PROMPT,
  UsageError,
  type CliContext,
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
import { discoverResources, findJobType, queueUrl, tableName } from '../pipeline-resources';
import { DynamoDbEffectChecker } from '../replay-effects';
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

/** Default audit file: ./tenang-audit/dlq-replay-<timestamp>.jsonl. */
export function defaultAuditLog(now: Date): string {
  return path.join('tenang-audit', `dlq-replay-${now.toISOString().replace(/[:.]/g, '-')}.jsonl`);
}

/** Registers `dlq list` and `dlq replay`. */
export const register: RegisterCommand = (program: Command, context: () => CliContext): void => {
  const dlq = program.command('dlq').description("Inspect and replay a job type's dead-letter queue");

  dlq
    .command('list')
    .description('List dead-lettered jobs without consuming them')
    .argument('<job-type>', 'e.g. payment.capture')
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

Examples:
  $ tenang dlq list payment.capture
  $ tenang dlq list notification.send --error-class ProviderUnavailableError --since 2h --json`,
    )
    .action(async (jobTypeName: string, _opts: unknown, cmd: Command) => {
      const opts = parseOptions(DlqListOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
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
    .description('Send dead-lettered jobs back to their queue, skipping those whose effect already happened')
    .argument('<job-type>', 'e.g. notification.send')
    .option('--error-class <name>', 'only this error class (repeatable, or comma-separated)', collect)
    .option('--since <duration|ISO>', 'only jobs that last failed since: 2h, 1d, or an ISO instant')
    .option('--max <n>', 'handle no more than n messages', '100')
    .option('--rate <n/s>', 'replay at most n messages per second', '5/s')
    .option('--dry-run', 'decide and report without sending or deleting anything')
    .option('--yes', 'do not ask for confirmation (required when stdin is not a terminal)')
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

Examples:
  $ tenang dlq replay notification.send --dry-run
  $ tenang dlq replay payment.capture --error-class ProviderUnavailableError --since 2h --rate 2/s
  $ tenang dlq replay inventory.reserve --max 50 --yes --audit-log ./audit/reserve.jsonl`,
    )
    .action(async (jobTypeName: string, _opts: unknown, cmd: Command) => {
      const opts = parseOptions(DlqReplayOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
      const jobType = findJobType(ctx, jobTypeName);
      const filter = filterFrom(ctx, opts);
      const dryRun = opts.dryRun === true;
      const ask = ctx.prompt ?? NO_PROMPT;
      if (!dryRun && opts.yes !== true && !ask.interactive) {
        throw new UsageError(
          'dlq replay changes queues: pass --yes to run it without a terminal to confirm on (or --dry-run)',
        );
      }
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
      let plan;
      try {
        plan = await planReplay(jobType, received, filter, (job) => checker.check(job));
      } catch (error) {
        await releaseDeadLetters(ctx.clients.sqs, dlqUrl, received);
        throw error;
      }
      if (!dryRun && opts.yes !== true) {
        const counts = plan.reduce<Record<string, number>>(
          (acc, p) => ({ ...acc, [p.decision.action]: (acc[p.decision.action] ?? 0) + 1 }),
          {},
        );
        const ok = await ask.confirm(
          `${jobType.dlqName}: replay ${counts.replay ?? 0}, delete ${counts['skip-already-done'] ?? 0} already done, leave ${
            (counts['skip-filtered'] ?? 0) + (counts.fail ?? 0)
          }. Proceed? [y/N] `,
        );
        if (!ok) {
          await releaseDeadLetters(ctx.clients.sqs, dlqUrl, received);
          ctx.out('nothing changed');
          return;
        }
      }
      const auditPath = path.resolve(opts.auditLog ?? defaultAuditLog(ctx.now()));
      fs.mkdirSync(path.dirname(auditPath), { recursive: true });
      const audit = (record: ReplayAuditRecord): void =>
        fs.appendFileSync(auditPath, `${JSON.stringify(record)}\n`);
      const outcomes = await executeReplay(ctx.clients.sqs, plan, {
        jobType,
        sourceUrl,
        dlqUrl,
        dryRun,
        ratePerSecond: opts.rate,
        actor: ctx.actor,
        stage: ctx.stage,
        now: ctx.now,
        audit,
      });
      const counts = summarize(outcomes);
      if (opts.json === true) {
        ctx.out(
          JSON.stringify(
            {
              jobType: jobType.name,
              dryRun,
              auditLog: auditPath,
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
        ctx.out(`audit log: ${auditPath}`);
      }
      if (counts.failed > 0) {
        throw new CommandFailedError(`${counts.failed} message(s) could not be replayed; see ${auditPath}`);
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
