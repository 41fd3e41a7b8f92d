/**
 * Traffic for the job types an app declares. A job type whose traffic no scenario flow of the
 * app makes (lib/local/scenario-flow.ts) gets jobs built from its config's `samplePayload`, sent straight to its queue, each with its
 * own idempotency key. After the drain, each one's effect is read back the way `dlq replay`
 * reads it (its Powertools idempotency record), so the scenario's verdict covers it too. The chaos
 * suite and the generic drills send and judge such jobs with the same functions (one job done
 * exactly once: its record, and one call per idempotency key in each declared provider's fake).
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, type SendMessageCommandInput, type SQSClient } from '@aws-sdk/client-sqs';
import { providerVariable, type ResolvedJobType } from '../config';
import { makeEnvelope } from '../core/envelope';
import { DynamoDbEffectChecker } from '../ops/replay-effects';
import type { FakeProvider } from './fake-provider';

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

/**
 * Job types whose config gives a sample payload and whose traffic nothing else makes:
 * `madeElsewhere` names the job types the app's scenario flow makes the traffic of
 * (lib/local/scenario-flow.ts ScenarioFlow.jobTypes: none without one). @default none
 */
export function declaredJobTypes(
  jobTypes: readonly ResolvedJobType[],
  madeElsewhere: readonly string[] = [],
): ResolvedJobType[] {
  return jobTypes.filter((j) => !madeElsewhere.includes(j.name) && j.samplePayload !== undefined);
}

/** Ids of one message of a declared job. */
export interface DeclaredJobIds {
  readonly idempotencyKey: string;
  readonly correlationId: string;
  /** A FIFO queue's deduplication id (copies of one job need distinct ones). @default the idempotency key */
  readonly deduplicationId?: string;
  /** A FIFO queue's group when the job type declares no `groupBy`. @default the idempotency key */
  readonly group?: string;
}

/** One message of a declared job: its `samplePayload` in an envelope, addressed to `queueUrl`. */
export function declaredJobMessage(
  jobType: ResolvedJobType,
  queueUrl: string,
  ids: DeclaredJobIds,
  now: Date = new Date(),
): SendMessageCommandInput {
  const payload = jobType.samplePayload ?? {};
  const envelope = makeEnvelope(jobType.name, payload, {
    idempotencyKey: ids.idempotencyKey,
    correlationId: ids.correlationId,
    now,
  });
  const fallback = ids.group ?? ids.idempotencyKey;
  const group =
    jobType.queue.groupBy === undefined ? fallback : String(payload[jobType.queue.groupBy] ?? fallback);
  return {
    QueueUrl: queueUrl,
    MessageBody: JSON.stringify(envelope),
    ...(jobType.queue.kind === 'fifo'
      ? {
          MessageGroupId: group,
          MessageDeduplicationId: (ids.deduplicationId ?? ids.idempotencyKey).slice(0, 128),
        }
      : {}),
  };
}

/** A declared job type and the queue its jobs go to. */
export interface DeclaredJobTarget {
  readonly jobType: ResolvedJobType;
  readonly queueUrl: string;
}

/** Sends job `n` of a declared job type to its queue (its key: `<runId>:<job type>:<n>`). */
export async function sendDeclaredJob(
  sqs: SQSClient,
  { jobType, queueUrl }: DeclaredJobTarget,
  runId: string,
  n: number,
  now: Date = new Date(),
): Promise<DeclaredJob> {
  const idempotencyKey = `${runId}:${jobType.name}:${n}`;
  const correlationId = `${runId}-${jobType.consumer}-${n}`;
  await sqs.send(
    new SendMessageCommand(
      declaredJobMessage(jobType, queueUrl, { idempotencyKey, correlationId, group: String(n) }, now),
    ),
  );
  return { jobType: jobType.name, idempotencyKey, correlationId };
}

/** Sends `perType` jobs of every declared job type to its queue. */
export async function sendDeclaredJobs(
  sqs: SQSClient,
  targets: readonly DeclaredJobTarget[],
  runId: string,
  perType: number,
  now: () => Date = () => new Date(),
): Promise<DeclaredJob[]> {
  const sent: DeclaredJob[] = [];
  for (const target of targets)
    for (let i = 1; i <= perType; i += 1) sent.push(await sendDeclaredJob(sqs, target, runId, i, now()));
  return sent;
}

/**
 * Steady traffic of declared jobs: one job every 1/`ratePerSecond` s, the job types in turn, until
 * `signal` aborts (a send that fails is reported and the traffic goes on). Each job sent is handed
 * to `onSent` at once; resolves once the last send is over.
 */
export async function sendDeclaredJobsSteadily(
  sqs: SQSClient,
  targets: readonly DeclaredJobTarget[],
  runId: string,
  ratePerSecond: number,
  signal: AbortSignal,
  onSent: (job: DeclaredJob) => void,
  log: (line: string) => void = () => undefined,
): Promise<void> {
  const everyMs = 1000 / ratePerSecond;
  const started = Date.now();
  for (let i = 0; targets.length > 0 && !signal.aborted; i += 1) {
    const target = targets[i % targets.length];
    if (target === undefined) break;
    try {
      onSent(await sendDeclaredJob(sqs, target, runId, Math.floor(i / targets.length) + 1));
    } catch (error) {
      log(`declared traffic: could not send a ${target.jobType.name} job: ${(error as Error).message}`);
    }
    const wait = started + (i + 1) * everyMs - Date.now();
    if (wait > 0)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, wait);
        function done(): void {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          resolve();
        }
        signal.addEventListener('abort', done, { once: true });
      });
  }
}

/** Reads back what became of each declared job (consistent reads of its idempotency record). */
export async function declaredJobFacts(
  dynamodb: DynamoDBClient,
  idempotencyTable: string,
  jobTypes: readonly ResolvedJobType[],
  sent: readonly DeclaredJob[],
): Promise<DeclaredJobFact[]> {
  const checker = new DynamoDbEffectChecker(dynamodb, { idempotency: idempotencyTable });
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

/** A side effect a declared provider's fake recorded (lib/local/fake-provider.ts LedgerEntry). */
export interface ProviderCall {
  /** The provider's name in the declaration (`resources.providers`). */
  readonly provider: string;
  readonly idempotencyKey: string;
}

/**
 * The side effects the fakes of `providers` recorded, each ledger read from its `since` entry:
 * `fakes` is the platform's fakes by variable (`platform.providers.declared`).
 */
export function declaredProviderCalls(
  fakes: ReadonlyMap<string, FakeProvider>,
  providers: readonly string[],
  since: ReadonlyMap<string, number> = new Map(),
): ProviderCall[] {
  return [...new Set(providers)].flatMap((provider) =>
    (fakes.get(providerVariable(provider))?.ledger() ?? [])
      .slice(since.get(provider) ?? 0)
      .map((e) => ({ provider, idempotencyKey: e.idempotencyKey })),
  );
}

/** What became of one declared job: done exactly once, never, or more than once. */
export interface DeclaredJobVerdict {
  readonly outcome: 'ok' | 'lost' | 'duplicated';
  readonly detail: string;
}

/**
 * Whether a declared job was done exactly once, by the checks that hold for any job type: each of
 * its job type's providers recorded its idempotency key once, and (idempotent job types) its
 * idempotency record is COMPLETED. A job type with neither has nothing to judge it by: ok, said so.
 */
export function judgeDeclaredJob(
  fact: DeclaredJobFact,
  providers: readonly string[],
  calls: readonly ProviderCall[],
): DeclaredJobVerdict {
  const counts = [...new Set(providers)].map((provider) => ({
    provider,
    n: calls.filter((c) => c.provider === provider && c.idempotencyKey === fact.idempotencyKey).length,
  }));
  const described = [
    ...counts.map(({ provider, n }) => `${n} call(s) to ${provider}`),
    ...(fact.done === undefined ? [] : [fact.done ? 'idempotency record COMPLETED' : 'no completed record']),
  ];
  const detail =
    described.length === 0 ? 'not judged: not idempotent, calls no provider' : described.join(', ');
  if (counts.some(({ n }) => n > 1)) return { outcome: 'duplicated', detail };
  if (counts.some(({ n }) => n === 0) || fact.done === false) return { outcome: 'lost', detail };
  return { outcome: 'ok', detail };
}
