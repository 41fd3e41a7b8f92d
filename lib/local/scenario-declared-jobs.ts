/**
 * Traffic for the job types an app declares beyond the reference's order flow. The scenario's
 * orders make payments, notifications and reservations; a job type it knows nothing else about
 * gets jobs built from its config's `samplePayload`, sent straight to its queue, each with its
 * own idempotency key. After the drain, each one's effect is read back the way `dlq replay`
 * reads it (its Powertools idempotency record), so the scenario's verdict covers it too.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { ResolvedJobType } from '../config';
import { makeEnvelope, PAYLOADS } from '../core/envelope';
import { DynamoDbEffectChecker } from '../ops/replay-effects';

/** A job the scenario sent for a declared job type. */
export interface DeclaredJob {
  readonly jobType: string;
  readonly idempotencyKey: string;
  readonly correlationId: string;
}

/** What became of it after the drain. */
export interface DeclaredJobFact extends DeclaredJob {
  /** Whether its effect is recorded (idempotent job types only; others are not judged). */
  readonly done: boolean | undefined;
  readonly evidence: string | undefined;
}

/** Job types the scenario's order traffic does not make and whose config gives a sample payload. */
export function declaredJobTypes(jobTypes: readonly ResolvedJobType[]): ResolvedJobType[] {
  return jobTypes.filter((j) => !(j.name in PAYLOADS) && j.samplePayload !== undefined);
}

/** Sends `perType` jobs of every declared job type to its queue. */
export async function sendDeclaredJobs(
  sqs: SQSClient,
  targets: readonly { readonly jobType: ResolvedJobType; readonly queueUrl: string }[],
  runId: string,
  perType: number,
  now: () => Date = () => new Date(),
): Promise<DeclaredJob[]> {
  const sent: DeclaredJob[] = [];
  for (const { jobType, queueUrl } of targets) {
    for (let i = 1; i <= perType; i += 1) {
      const idempotencyKey = `${runId}:${jobType.name}:${i}`;
      const correlationId = `${runId}-${jobType.consumer}-${i}`;
      const payload = jobType.samplePayload ?? {};
      const envelope = makeEnvelope(jobType.name, payload, { idempotencyKey, correlationId, now: now() });
      const group =
        jobType.queue.groupBy === undefined ? undefined : String(payload[jobType.queue.groupBy] ?? i);
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: JSON.stringify(envelope),
          ...(jobType.queue.kind === 'fifo'
            ? { MessageGroupId: group ?? String(i), MessageDeduplicationId: idempotencyKey.slice(0, 128) }
            : {}),
        }),
      );
      sent.push({ jobType: jobType.name, idempotencyKey, correlationId });
    }
  }
  return sent;
}

/** Reads back what became of each declared job (consistent reads of its idempotency record). */
export async function declaredJobFacts(
  dynamodb: DynamoDBClient,
  idempotencyTable: string,
  jobTypes: readonly ResolvedJobType[],
  sent: readonly DeclaredJob[],
): Promise<DeclaredJobFact[]> {
  // Only the idempotency table is read for a declared job type; the other names are never used.
  const checker = new DynamoDbEffectChecker(dynamodb, {
    orders: '',
    idempotency: idempotencyTable,
    dedup: '',
    inventory: '',
  });
  const facts: DeclaredJobFact[] = [];
  for (const job of sent) {
    const jobType = jobTypes.find((j) => j.name === job.jobType);
    if (jobType?.idempotent !== true) {
      facts.push({ ...job, done: undefined, evidence: undefined });
      continue;
    }
    const check = await checker.check({
      type: job.jobType,
      version: 1,
      idempotencyKey: job.idempotencyKey,
      correlationId: job.correlationId,
      payload: jobType.samplePayload,
      enqueuedAt: new Date(0).toISOString(),
    });
    facts.push({ ...job, done: check.done, evidence: check.done ? check.evidence : undefined });
  }
  return facts;
}
