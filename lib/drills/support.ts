/**
 * What several drills need, for any app: a job type's deployed queues and consumer, a deployed
 * function's variables, queue depths and the consumers' rows of `tenang status`. An app's own
 * drills get these through tenang/local.
 */
import { SendMessageCommand, type SendMessageCommandInput } from '@aws-sdk/client-sqs';
import type { LocalPlatform } from '../local/platform';
import { queueCounts } from '../adapters/aws/queue-counts';
import type { DrillContext } from './drill';

/** A job type's deployed queues and consumer. */
export interface JobTarget {
  readonly jobType: string;
  readonly consumer: string;
  readonly functionName: string;
  readonly queueUrl: string;
  readonly dlqUrl: string;
  readonly mappingUuid: string;
}

/** Variable `name` of the deployed function `functionName`; a missing or empty one is an error. */
export function functionEnv(platform: LocalPlatform, functionName: string, name: string): string {
  const value = platform.deployment.functions.get(functionName)?.environment[name];
  if (value === undefined || value === '')
    throw new Error(`deployed function ${functionName} has no ${name}`);
  return value;
}

/** The deployed queues and consumer of `jobType`. */
export function jobTarget(ctx: DrillContext, jobType: string): JobTarget {
  const job = ctx.config.jobTypes.find((j) => j.name === jobType);
  if (job === undefined) throw new Error(`the pipeline has no job type ${jobType}`);
  const functionName = ctx.platform.functionNamed(job.consumer);
  const source = ctx.platform.sqsSources.find((s) => s.spec.functionName === functionName);
  if (source === undefined) throw new Error(`no queue mapping for ${functionName}`);
  return {
    jobType,
    consumer: job.consumer,
    functionName,
    queueUrl: source.spec.queueUrl,
    dlqUrl: functionEnv(ctx.platform, functionName, 'DLQ_URL'),
    mappingUuid: source.spec.uuid,
  };
}

/** Visible, in-flight and delayed messages of a queue. */
export const queueDepth = queueCounts;

/** One consumer's row of `tenang status --json`. */
export interface ConsumerStatus {
  readonly consumer: string;
  readonly depth?: number;
  readonly inFlight?: number;
  readonly dlqDepth?: number;
  readonly paused: boolean;
  readonly pauseOverdue: boolean;
  readonly mappingState: string;
  readonly drift: boolean;
}

/** `tenang status --json`, parsed. */
export async function statusOf(
  ctx: DrillContext,
): Promise<{ readonly consumers: readonly ConsumerStatus[] }> {
  const answer = await ctx.tenang(['status', '--json']);
  if (answer.code !== 0) throw new Error(`tenang status failed (exit ${answer.code}): ${answer.err}`);
  return JSON.parse(answer.out) as Awaited<ReturnType<typeof statusOf>>;
}

/** One consumer's row of `tenang status --json`. */
export async function consumerStatus(ctx: DrillContext, consumer: string): Promise<ConsumerStatus> {
  const row = (await statusOf(ctx)).consumers.find((c) => c.consumer === consumer);
  if (row === undefined) throw new Error(`tenang status has no row for ${consumer}`);
  return row;
}

/** Sends `message` with the drill's SQS client (a copy of a job, a job put straight into a DLQ). */
export async function sendMessage(ctx: DrillContext, message: SendMessageCommandInput): Promise<void> {
  await ctx.sqs.send(new SendMessageCommand(message));
}
