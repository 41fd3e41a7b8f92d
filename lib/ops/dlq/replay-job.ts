/**
 * `dlq replay <job-type>` (R5, X3): receives the DLQ's messages (hidden while the run lasts),
 * decides each against its idempotency record (lib/ops/replay-effects.ts), asks, and replays at the given
 * rate with an audit trail (lib/ops/dlq/replay.ts). lib/ops/commands/dlq.ts prints the outcome.
 */
import { IDEMPOTENCY_TABLE } from '../../config/tables';
import type { ReplayFilter } from '../../core/replay';
import type { CliContext, Prompt } from '../cli-context';
import { discoverResources, findJobType, queueUrl, tableName } from '../pipeline-resources';
import { DynamoDbEffectChecker } from '../replay-effects';
import { receiveDeadLetters } from './messages';
import {
  executeReplay,
  planReplay,
  summarize,
  type ReplayAuditRecord,
  type ReplayOutcome,
  type ReplayOutcomeKind,
} from './replay';
import { auditTrail, confirmedOrReleased, planOrRelease, type ReplayRunOptions } from './session';

/** What a job type's replay did. */
export interface DeadLetterReplay {
  readonly jobType: string;
  readonly dlqName: string;
  readonly dryRun: boolean;
  readonly auditLog: string;
  readonly summary: Record<ReplayOutcomeKind, number>;
  readonly outcomes: readonly ReplayOutcome[];
}

/** Replays the DLQ of `jobTypeName`; undefined when the operator declined (the messages are back). */
export async function replayDeadLetters(
  ctx: CliContext,
  jobTypeName: string,
  filter: ReplayFilter,
  opts: ReplayRunOptions,
  ask: Prompt,
): Promise<DeadLetterReplay | undefined> {
  const jobType = findJobType(ctx, jobTypeName);
  const dryRun = opts.dryRun === true;
  const resources = await discoverResources(ctx);
  const dlqUrl = queueUrl(resources, jobType.dlqName);
  const sourceUrl = queueUrl(resources, jobType.queueName);
  const checker = new DynamoDbEffectChecker(
    ctx.clients.dynamodb,
    { idempotency: tableName(ctx, resources, IDEMPOTENCY_TABLE.name) },
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
  if (!(await confirmedOrReleased(ctx, opts, ask, question, dlqUrl, received))) return undefined;
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
  return {
    jobType: jobType.name,
    dlqName: jobType.dlqName,
    dryRun,
    auditLog: trail.path,
    summary: summarize(outcomes),
    outcomes,
  };
}
