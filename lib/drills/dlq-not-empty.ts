/**
 * DLQ not empty (runbooks/dlq-not-empty.md): a job type's DLQ holds a poison message, a job that
 * ran out of attempts during a dependency's outage, and a job that a later delivery already did.
 * The runbook lists them, replays with a dry run first, then replays the transient failures: the
 * undone job is done once, the done one is skipped, the poison stays for a human. Any job type:
 * `--job-type`, else the app's default for the drill, its jobs judged done once as drill-jobs.ts
 * judges them.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SendMessageCommand, type MessageAttributeValue } from '@aws-sdk/client-sqs';
import { DLQ_ATTRIBUTE } from '../adapters/aws/sqs-job-runner';
import { drillInfo } from '../ops/drills/catalog';
import type { Drill, DrillContext } from './drill';
import { drillJobs, type DrillJob, type DrillJobs } from './drill-jobs';
import { queueDepth, type JobTarget } from './support';

/** What the job runner puts on a message it dead-letters after its last attempt. */
function exhaustedAttributes(
  jobType: string,
  correlationId: string,
  cause: string,
): Record<string, MessageAttributeValue> {
  const at = new Date().toISOString();
  const s = (v: string): MessageAttributeValue => ({ DataType: 'String', StringValue: v });
  return {
    [DLQ_ATTRIBUTE.errorClass]: s('TransientError'),
    [DLQ_ATTRIBUTE.errorKind]: s('transient'),
    [DLQ_ATTRIBUTE.errorMessage]: s(cause),
    [DLQ_ATTRIBUTE.attempts]: { DataType: 'Number', StringValue: '5' },
    [DLQ_ATTRIBUTE.firstFailureAt]: s(at),
    [DLQ_ATTRIBUTE.lastFailureAt]: s(at),
    [DLQ_ATTRIBUTE.jobType]: s(jobType),
    [DLQ_ATTRIBUTE.correlationId]: s(correlationId),
  };
}

/** A poison message, through the real consumer, which dead-letters it on its first attempt. */
async function sendPoison(ctx: DrillContext, target: JobTarget, fifo: boolean): Promise<void> {
  await ctx.sqs.send(
    new SendMessageCommand({
      QueueUrl: target.queueUrl,
      MessageBody: `{"type":"${target.jobType}", this is not JSON`,
      ...(fifo
        ? { MessageGroupId: `poison-${ctx.runId}`, MessageDeduplicationId: `poison-${ctx.runId}` }
        : {}),
    }),
  );
}

/** Puts a copy of `job` in the DLQ as the runner dead-letters a job after its last attempt. */
async function deadLetter(ctx: DrillContext, jobs: DrillJobs, job: DrillJob): Promise<void> {
  const { jobType } = jobs.target;
  await ctx.sqs.send(
    new SendMessageCommand({
      ...jobs.dlqMessage(job),
      MessageAttributes: exhaustedAttributes(
        jobType,
        job.correlationId,
        `${jobType}: a dependency unavailable on every attempt`,
      ),
    }),
  );
}

const info = drillInfo('dlq-not-empty');

export const dlqNotEmpty: Drill = {
  ...info,
  async run(ctx) {
    const jobs = drillJobs(ctx, info);
    const { jobType, dlqUrl } = jobs.target;
    const fifo = ctx.config.jobTypes.find((j) => j.name === jobType)?.queue.kind === 'fifo';
    await sendPoison(ctx, jobs.target, fifo);
    // A job that was done (and whose earlier delivery was dead-lettered), and one never done.
    const done = await jobs.sendOne('done');
    await ctx.until(
      async () => ((await jobs.verdictOf(done)).outcome === 'lost' ? undefined : true),
      `${done.idempotencyKey} to be done`,
    );
    const undone = await jobs.unsent('exhausted');
    for (const job of [done, undone]) await deadLetter(ctx, jobs, job);
    await ctx.until(async () => {
      const d = await queueDepth(ctx.sqs, dlqUrl);
      return d.visible + d.inFlight >= 3 ? true : undefined;
    }, 'the poison message to reach the DLQ');

    // The runbook: look, dry run, replay the transient failures only.
    await ctx.tenang(['status']);
    const listed = await ctx.tenang(['dlq', 'list', jobType, '--json']);
    const auditLog = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-drill-')), 'replay.jsonl');
    const dry = await ctx.tenang([
      'dlq',
      'replay',
      jobType,
      '--error-class',
      'TransientError',
      '--dry-run',
      '--audit-log',
      `${auditLog}.dry-run`,
    ]);
    const replay = await ctx.tenang([
      'dlq',
      'replay',
      jobType,
      '--error-class',
      'TransientError',
      '--yes',
      '--audit-log',
      auditLog,
    ]);
    await ctx.until(
      async () => ((await jobs.verdictOf(undone)).outcome === 'lost' ? undefined : true),
      `the replayed ${undone.idempotencyKey}`,
    );
    const left = await ctx.until(async () => {
      const d = await queueDepth(ctx.sqs, dlqUrl);
      return d.inFlight === 0 ? d.visible : undefined;
    }, 'the DLQ to settle');
    const remaining = await ctx.tenang(['dlq', 'list', jobType, '--json']);
    const remainingClasses = (
      JSON.parse(remaining.out) as { messages: { errorClass?: string }[] }
    ).messages.map((m) => m.errorClass ?? '-');
    const decisions = fs.existsSync(auditLog)
      ? fs.readFileSync(auditLog, 'utf8').split('\n').filter(Boolean).length
      : 0;
    fs.rmSync(path.dirname(auditLog), { recursive: true, force: true });
    const [exhausted, already] = [await jobs.verdictOf(undone), await jobs.verdictOf(done)];
    return [
      ctx.check(
        'listing found all three',
        listed.code === 0 && (JSON.parse(listed.out) as { seen: number }).seen >= 3,
        `dlq list exited ${listed.code}`,
      ),
      ctx.check('dry run changed nothing', dry.code === 0, `dry run exited ${dry.code}`),
      ctx.check('replay succeeded', replay.code === 0, `replay exited ${replay.code}: ${replay.err.trim()}`),
      ctx.check(
        `exhausted ${jobType} done once`,
        exhausted.outcome === 'ok',
        `${exhausted.outcome}: ${exhausted.detail}`,
      ),
      ctx.check(
        `done ${jobType} not repeated`,
        already.outcome === 'ok',
        `${already.outcome}: ${already.detail}`,
      ),
      ctx.check(
        'only the poison message stays',
        left === 1 && remainingClasses.length === 1 && remainingClasses[0] !== 'TransientError',
        `DLQ holds ${left}: ${remainingClasses.join(', ')}`,
      ),
      ctx.check('every decision audited', decisions >= 2, `${decisions} line(s) in the audit log`),
    ];
  },
};
