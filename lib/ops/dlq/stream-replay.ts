/**
 * Recovery from a stream consumer's on-failure queue (R5 for D6 and C2). When a batch of a
 * table's stream keeps failing, Lambda sends the on-failure queue metadata only (AWS's
 * DDBStreamBatchInfo: shard and sequence range), never the records. A replay reads that range
 * back from the stream, builds the event exactly as the mapping delivers it, invokes the consumer
 * synchronously and deletes the message only when every record succeeded. Replaying a whole batch
 * relies on the consumer being idempotent per record, as a stream consumer must be anyway (the
 * mapping retries whole batches too): e.g. the reference app's invalidator fences by version, its
 * relay derives dedup ids from order and version. The stream keeps records 24 h: after that, the
 * message stays and the replay says what to do instead, from what the consumer declares it does.
 *
 * The replay is a third reader of a shard two consumers' mappings may already read, and AWS allows
 * two ("No more than two processes at most should be reading from the same streams shard at the
 * same time. Having more than two readers per shard can result in throttling.", DynamoDB
 * developer guide): its GetRecords may be answered LimitExceededException, and the mappings'
 * reads too while it reads (their iterator age rises). It pauses neither mapping: a pause costs
 * stale cache reads (invalidator) or late follow-ups (relay) for as long as it lasts, and one
 * left behind by an interrupted replay costs them until someone notices, while the replay reads
 * for a few requests per batch. Instead each read backs off with full jitter on a throttle
 * (bounded, lib/core/backoff.ts) and the replay reports how many reads were throttled; a batch
 * whose reads stay throttled is left in the queue as `read-throttled`, never counted failed.
 */
import {
  GetRecordsCommand,
  GetShardIteratorCommand,
  type DynamoDBStreamsClient,
  type GetRecordsCommandOutput,
} from '@aws-sdk/client-dynamodb-streams';
import { InvokeCommand, type LambdaClient } from '@aws-sdk/client-lambda';
import { DeleteMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { streamItemKey, toDynamoDbRecord } from '../../adapters/aws/stream-record';
import { ThrottledReads } from '../../adapters/aws/stream-read-throttles';
import * as z from '../../config/zod';
import type { RetryPolicy, StreamConsumer } from '../../config/schema';
import { fullJitterDelaySeconds, type Random } from '../../core/backoff';
import { cacheKeyspace, entityPrefix } from '../../core/cache-keys';
import { releaseDeadLetters, type ReceivedDeadLetter } from './messages';

/** How long DynamoDB Streams keeps a record. */
export const STREAM_RETENTION_MS = 24 * 3600 * 1000;

/** Empty GetRecords answers in a row after which an open shard is taken to hold nothing more. @default 3 */
const MAX_EMPTY_READS = 3;
/** GetRecords' largest Limit. */
const MAX_RECORDS_PER_READ = 1000;

/**
 * Backoff between GetRecords answered LimitExceededException (after the SDK's own retries):
 * 0–1 s, 0–2 s, then up to 4 s, full jitter. @default 1 s base, 4 s cap
 */
export const READ_THROTTLE_BACKOFF: RetryPolicy = { baseDelaySeconds: 1, maxDelaySeconds: 4 };
/** Throttled answers in a row after which a batch's read gives up (the message stays). @default 6 */
export const MAX_THROTTLED_READS_IN_A_ROW = 6;

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** How a replay reads the stream: its throttle count and backoff. */
export interface StreamReadPolicy {
  /** Counts every throttled GetRecords attempt. */
  readonly throttles: ThrottledReads;
  /** @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
  /** @default Math.random */
  readonly random?: Random;
}

/** The batch an on-failure message describes (AWS's DDBStreamBatchInfo). */
export interface StreamBatchInfo {
  readonly streamArn: string;
  readonly shardId: string;
  readonly startSequenceNumber: string;
  readonly endSequenceNumber: string;
  readonly batchSize: number;
  readonly approximateArrivalOfFirstRecord: Date | undefined;
  readonly approximateArrivalOfLastRecord: Date | undefined;
}

/** A stream mapping's on-failure invocation record. */
export interface StreamInvocationRecord {
  /** Why Lambda gave up, e.g. RetryAttemptsExhausted, RecordAgeExceeded. */
  readonly condition: string | undefined;
  readonly functionArn: string | undefined;
  /** The last invocation's function error (e.g. Unhandled), when it had one. */
  readonly functionError: string | undefined;
  readonly approximateInvokeCount: number | undefined;
  /** When Lambda gave up on the batch. */
  readonly failedAt: Date | undefined;
  readonly batch: StreamBatchInfo;
}

const sequenceNumber = z.string().check(z.regex(/^[0-9]+$/, 'must be a sequence number (digits)'));
const optionalText = z.optional(z.string());

/** The invocation record as Lambda writes it; fields tenang does not use are ignored. */
export const StreamInvocationRecordSchema = z.object({
  requestContext: z.optional(
    z.object({
      functionArn: optionalText,
      condition: optionalText,
      approximateInvokeCount: z.optional(z.number()),
    }),
  ),
  responseContext: z.optional(z.object({ functionError: z.optional(z.nullable(z.string())) })),
  timestamp: optionalText,
  DDBStreamBatchInfo: z.object({
    streamArn: z.string().check(z.minLength(1)),
    shardId: z.string().check(z.minLength(1)),
    startSequenceNumber: sequenceNumber,
    endSequenceNumber: sequenceNumber,
    batchSize: z.int().check(z.positive()),
    approximateArrivalOfFirstRecord: optionalText,
    approximateArrivalOfLastRecord: optionalText,
  }),
});

const date = (text: string | undefined): Date | undefined => {
  if (text === undefined) return undefined;
  const d = new Date(text);
  return Number.isNaN(d.getTime()) ? undefined : d;
};

/** Reads an on-failure message's body, or says why it is not an invocation record. */
export function parseInvocationRecord(
  body: string,
):
  | { readonly ok: true; readonly record: StreamInvocationRecord }
  | { readonly ok: false; readonly problem: string } {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { ok: false, problem: 'the body is not JSON' };
  }
  const parsed = StreamInvocationRecordSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.map(String).join('.')}: ${i.message}`);
    return { ok: false, problem: `not a stream invocation record (${problems.join('; ')})` };
  }
  const r = parsed.data;
  const info = r.DDBStreamBatchInfo;
  return {
    ok: true,
    record: {
      condition: r.requestContext?.condition,
      functionArn: r.requestContext?.functionArn,
      functionError: r.responseContext?.functionError ?? undefined,
      approximateInvokeCount: r.requestContext?.approximateInvokeCount,
      failedAt: date(r.timestamp),
      batch: {
        streamArn: info.streamArn,
        shardId: info.shardId,
        startSequenceNumber: info.startSequenceNumber,
        endSequenceNumber: info.endSequenceNumber,
        batchSize: info.batchSize,
        approximateArrivalOfFirstRecord: date(info.approximateArrivalOfFirstRecord),
        approximateArrivalOfLastRecord: date(info.approximateArrivalOfLastRecord),
      },
    },
  };
}

/** A received on-failure message, read. */
export interface StreamFailure {
  readonly message: ReceivedDeadLetter;
  /** Undefined when the body is not an invocation record (`problem` says why). */
  readonly record: StreamInvocationRecord | undefined;
  readonly problem: string | undefined;
}

/** Reads a received on-failure message. */
export function toStreamFailure(message: ReceivedDeadLetter): StreamFailure {
  const parsed = parseInvocationRecord(message.body);
  return parsed.ok
    ? { message, record: parsed.record, problem: undefined }
    : { message, record: undefined, problem: parsed.problem };
}

/** Until when the stream still holds the batch's first record (24 h after it arrived). */
export function replayableUntil(batch: StreamBatchInfo): Date | undefined {
  const first = batch.approximateArrivalOfFirstRecord;
  return first === undefined ? undefined : new Date(first.getTime() + STREAM_RETENTION_MS);
}

/** The JSON/table row of a listed on-failure message. */
export function streamFailureRow(f: StreamFailure): Record<string, string | number | undefined> {
  const b = f.record?.batch;
  return {
    messageId: f.message.messageId,
    condition: f.record?.condition ?? (f.record === undefined ? '(unreadable)' : undefined),
    functionError: f.record?.functionError,
    shardId: b?.shardId,
    startSequenceNumber: b?.startSequenceNumber,
    endSequenceNumber: b?.endSequenceNumber,
    batchSize: b?.batchSize,
    firstArrival: b?.approximateArrivalOfFirstRecord?.toISOString(),
    lastArrival: b?.approximateArrivalOfLastRecord?.toISOString(),
    replayableUntil: b === undefined ? undefined : replayableUntil(b)?.toISOString(),
    failedAt: f.record?.failedAt?.toISOString(),
    receiveCount: f.message.receiveCount,
    problem: f.problem,
  };
}

/** The records of a batch read back from the stream. */
export type BatchRead =
  | { readonly kind: 'complete'; readonly records: readonly DynamoDBRecord[] }
  /** Some or all records are no longer in the stream (trimmed after 24 h, or the shard is gone). */
  | { readonly kind: 'missing'; readonly records: readonly DynamoDBRecord[]; readonly reason: string }
  /** GetRecords stayed throttled (LimitExceededException) through the backoff: try again later. */
  | { readonly kind: 'throttled'; readonly records: readonly DynamoDBRecord[]; readonly reason: string };

/** Errors meaning the stream no longer holds what was asked for. */
const GONE = new Set(['TrimmedDataAccessException', 'ResourceNotFoundException']);

function goneReason(error: unknown): string | undefined {
  return error instanceof Error && GONE.has(error.name) ? `${error.name}: ${error.message}` : undefined;
}

/**
 * Reads the batch's records, startSequenceNumber to endSequenceNumber inclusive, in the shape the
 * mapping delivers them. Stops at the end of the range, at the end of a closed shard, or after a
 * few empty answers of an open one. A throttled read is retried with the same iterator after a
 * jittered backoff, up to MAX_THROTTLED_READS_IN_A_ROW times. Errors other than "no longer in the
 * stream" and throttling are thrown.
 */
export async function readBatchRecords(
  streams: DynamoDBStreamsClient,
  batch: StreamBatchInfo,
  policy: StreamReadPolicy = { throttles: new ThrottledReads() },
): Promise<BatchRead> {
  const sleep = policy.sleep ?? defaultSleep;
  const random = policy.random ?? Math.random;
  const start = BigInt(batch.startSequenceNumber);
  const end = BigInt(batch.endSequenceNumber);
  const region = batch.streamArn.split(':')[3] ?? '';
  const records: DynamoDBRecord[] = [];
  const missing = (reason: string): BatchRead => ({ kind: 'missing', records, reason });
  let iterator: string | undefined;
  try {
    ({ ShardIterator: iterator } = await streams.send(
      new GetShardIteratorCommand({
        StreamArn: batch.streamArn,
        ShardId: batch.shardId,
        ShardIteratorType: 'AT_SEQUENCE_NUMBER',
        SequenceNumber: batch.startSequenceNumber,
      }),
    ));
  } catch (error) {
    const gone = goneReason(error);
    if (gone === undefined) throw error;
    return missing(`the stream no longer holds the batch (${gone})`);
  }
  let reachedEnd = false;
  let emptyReads = 0;
  let throttledInARow = 0;
  while (iterator !== undefined && !reachedEnd && emptyReads < MAX_EMPTY_READS) {
    let out: GetRecordsCommandOutput;
    try {
      out = await streams.send(
        policy.throttles.watch(
          new GetRecordsCommand({
            ShardIterator: iterator,
            Limit: Math.min(MAX_RECORDS_PER_READ, Math.max(1, batch.batchSize - records.length)),
          }),
        ),
      );
    } catch (error) {
      if (policy.throttles.note(error)) {
        throttledInARow += 1;
        if (throttledInARow >= MAX_THROTTLED_READS_IN_A_ROW)
          return {
            kind: 'throttled',
            records,
            reason: `GetRecords on shard ${batch.shardId} was throttled (LimitExceededException: more than two readers) ${throttledInARow} times in a row; replay again later, or when a consumer is paused for another reason`,
          };
        await sleep(fullJitterDelaySeconds(READ_THROTTLE_BACKOFF, throttledInARow, random) * 1000);
        continue;
      }
      const gone = goneReason(error);
      if (gone === undefined) throw error;
      return missing(`the stream no longer holds the batch (${gone})`);
    }
    throttledInARow = 0;
    const page = out.Records ?? [];
    emptyReads = page.length === 0 ? emptyReads + 1 : 0;
    for (const raw of page) {
      const seq = BigInt(raw.dynamodb?.SequenceNumber ?? '-1');
      if (seq < start) continue;
      if (seq > end) {
        reachedEnd = true;
        break;
      }
      records.push(toDynamoDbRecord(raw, batch.streamArn, region));
      if (seq === end) {
        reachedEnd = true;
        break;
      }
    }
    iterator = out.NextShardIterator;
  }
  const first = records[0]?.dynamodb?.SequenceNumber;
  const last = records[records.length - 1]?.dynamodb?.SequenceNumber;
  if (first === undefined)
    return missing(
      `the stream returned no record from ${batch.startSequenceNumber} on (trimmed after 24 h?)`,
    );
  if (first !== batch.startSequenceNumber)
    return missing(`the batch's first record ${batch.startSequenceNumber} is no longer in the stream`);
  if (!reachedEnd)
    return missing(
      `read ${records.length} record(s) up to ${String(last)}; the stream returned none up to the batch's end ${batch.endSequenceNumber}`,
    );
  return { kind: 'complete', records };
}

/** The keys (`partitionKey`) of the items a batch's records change, in order, each once. */
export function keysOf(records: readonly DynamoDBRecord[], partitionKey: string): string[] {
  const keys = records.flatMap((r) => {
    const key = streamItemKey(r, partitionKey);
    return key === undefined ? [] : [key];
  });
  return [...new Set(keys)];
}

/** How one synchronous invocation of the consumer ended. */
export type BatchInvocation = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/**
 * Invokes `functionName` with `event` (RequestResponse) and judges the answer as the mapping
 * would: a function error or any reported batch item failure fails the batch.
 */
export async function invokeBatch(
  lambda: LambdaClient,
  functionName: string,
  event: DynamoDBStreamEvent,
): Promise<BatchInvocation> {
  const out = await lambda.send(
    new InvokeCommand({
      FunctionName: functionName,
      InvocationType: 'RequestResponse',
      Payload: new TextEncoder().encode(JSON.stringify(event)),
    }),
  );
  const text = out.Payload === undefined ? '' : new TextDecoder().decode(out.Payload);
  let answer: unknown = null;
  try {
    answer = text.trim() === '' ? null : (JSON.parse(text) as unknown);
  } catch {
    if (out.FunctionError === undefined)
      return { ok: false, reason: `the function's answer is not JSON: ${text.slice(0, 200)}` };
  }
  if (out.FunctionError !== undefined) {
    const e = (answer ?? {}) as { errorType?: unknown; errorMessage?: unknown };
    return {
      ok: false,
      reason: `function error (${out.FunctionError}): ${String(e.errorType ?? '-')}: ${String(e.errorMessage ?? text)}`,
    };
  }
  const failures = (answer as { batchItemFailures?: unknown } | null)?.batchItemFailures;
  if (Array.isArray(failures) && failures.length > 0) {
    const ids = failures.map((f) => String((f as { itemIdentifier?: unknown }).itemIdentifier));
    return {
      ok: false,
      reason: `the function reported ${failures.length} failed record(s): ${ids.slice(0, 5).join(', ')}${ids.length > 5 ? ', …' : ''}`,
    };
  }
  return { ok: true };
}

/**
 * What the replay knows of the consumer: its declaration's name, table and resources, and the
 * cached entities (stage.cache.entities) whose source of truth its table is.
 */
export type StreamConsumerFacts = Pick<StreamConsumer, 'consumer' | 'table' | 'resources'> & {
  /** The names of the cached entities of its table. @default none */
  readonly cachedEntities?: readonly string[];
};

/**
 * What to do when a batch can no longer be read from the stream, from what the consumer declares
 * it does: one that uses the cache (an invalidator) left cached entities stale, which an
 * invalidation repairs; one that enqueues jobs (an outbox relay) never enqueued the changes'
 * jobs, which nothing replays. Either way: where the lost changes were, and the keys read.
 */
export function missingRecordsAdvice(
  stage: string,
  stream: StreamConsumerFacts,
  batch: StreamBatchInfo,
  keys: readonly string[],
): string {
  const where = `shard ${batch.shardId}, sequence numbers ${batch.startSequenceNumber}..${batch.endSequenceNumber}${
    batch.approximateArrivalOfFirstRecord === undefined
      ? ''
      : `, arrived ${batch.approximateArrivalOfFirstRecord.toISOString()} to ${
          batch.approximateArrivalOfLastRecord?.toISOString() ?? '?'
        }`
  }`;
  const known = keys.length > 0 ? ` (${stream.table} keys read: ${keys.join(', ')})` : '';
  const advice: string[] = [];
  if (stream.resources.cache) {
    const keyspace = cacheKeyspace(stage);
    const entities = stream.cachedEntities ?? [];
    // With one cached entity of the table, its ids are the keys read (the table's partition key).
    const [only] = entities.length === 1 ? entities : [];
    const each =
      keys.length > 0 && only !== undefined
        ? `tenang --stage ${stage} cache invalidate --entity ${only}:<key> for each, or `
        : '';
    const prefixes =
      entities.length === 0
        ? `no cached entity of ${stream.table} is declared (stage.cache.entities): invalidate what it caches with tenang --stage ${stage} cache invalidate --prefix '${keyspace.prefix}<entity>:'`
        : entities
            .map((e) => `tenang --stage ${stage} cache invalidate --prefix '${entityPrefix(keyspace, e)}'`)
            .join(', then ');
    advice.push(
      `cached entities of ${stream.table} changed in ${where}${known} may be stale: ${each}${prefixes}`,
    );
  }
  if (stream.resources.queues.length > 0) {
    advice.push(
      `nothing replays this automatically: the changes of ${stream.table} in ${where}${known} never had the jobs ${stream.consumer} enqueues for them (${stream.resources.queues.join(', ')}) enqueued; find those items in the ${stream.table} table and enqueue their jobs by hand`,
    );
  }
  if (advice.length === 0)
    advice.push(`the changes in ${where}${known} were never processed by ${stream.consumer}`);
  return advice.join('; ');
}

/** What became of one on-failure message. */
export type StreamReplayOutcomeKind =
  'replayed' | 'would-replay' | 'records-missing' | 'read-throttled' | 'function-failed' | 'failed';

/** One on-failure message with its records read back. */
export interface PlannedStreamReplay {
  readonly failure: StreamFailure;
  /** Undefined when the message is not an invocation record. */
  readonly read: BatchRead | undefined;
  /** The keys of the items the records read back change (the table's partition key). */
  readonly keys: readonly string[];
}

/** Reads every message's records back from the stream; `partitionKey` is the table's. */
export async function planStreamReplay(
  streams: DynamoDBStreamsClient,
  failures: readonly StreamFailure[],
  partitionKey: string,
  policy: StreamReadPolicy = { throttles: new ThrottledReads() },
): Promise<PlannedStreamReplay[]> {
  const planned: PlannedStreamReplay[] = [];
  for (const failure of failures) {
    const read =
      failure.record === undefined
        ? undefined
        : await readBatchRecords(streams, failure.record.batch, policy);
    planned.push({ failure, read, keys: keysOf(read?.records ?? [], partitionKey) });
  }
  return planned;
}

/** What happened to one message. */
export interface StreamReplayOutcome extends PlannedStreamReplay {
  readonly outcome: StreamReplayOutcomeKind;
  readonly reason: string;
  /** Why acting on it failed. */
  readonly error: string | undefined;
}

/** One audit line. */
export interface StreamReplayAuditRecord {
  readonly at: string;
  readonly actor: string;
  readonly stage: string;
  readonly consumer: string;
  readonly functionName: string;
  readonly dryRun: boolean;
  readonly messageId: string;
  readonly condition: string | undefined;
  readonly shardId: string | undefined;
  readonly startSequenceNumber: string | undefined;
  readonly endSequenceNumber: string | undefined;
  readonly batchSize: number | undefined;
  readonly recordsRead: number;
  /** The keys of the items the records read back change. */
  readonly keys: readonly string[];
  readonly outcome: StreamReplayOutcomeKind;
  readonly reason: string;
  readonly error: string | undefined;
}

/** How to act on a plan. */
export interface StreamReplayRun {
  readonly stage: string;
  /** The consumer, as declared. */
  readonly stream: StreamConsumerFacts;
  /** The deployed consumer function. */
  readonly functionName: string;
  readonly dlqUrl: string;
  readonly dryRun: boolean;
  /** Invocations per second. */
  readonly ratePerSecond: number;
  readonly actor: string;
  readonly now: () => Date;
  readonly audit: (record: StreamReplayAuditRecord) => void;
  /** @default setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
}

const errorText = (caught: unknown): string =>
  caught instanceof Error ? `${caught.name}: ${caught.message}` : String(caught);

/**
 * Acts on every planned message in order: invokes the consumer with each complete batch and
 * deletes the message once the whole batch succeeded; every other message is made visible again.
 * Never throws for one message's failure.
 */
export async function executeStreamReplay(
  clients: { readonly sqs: SQSClient; readonly lambda: LambdaClient },
  plan: readonly PlannedStreamReplay[],
  run: StreamReplayRun,
): Promise<StreamReplayOutcome[]> {
  const sleep = run.sleep ?? defaultSleep;
  const interval = 1000 / run.ratePerSecond;
  let nextInvokeAt = 0;
  const outcomes: StreamReplayOutcome[] = [];
  const untouched: ReceivedDeadLetter[] = [];

  for (const item of plan) {
    const { failure, read } = item;
    let outcome: StreamReplayOutcomeKind;
    let reason: string;
    let error: string | undefined;
    if (failure.record === undefined || read === undefined) {
      outcome = 'failed';
      reason = failure.problem ?? 'not a stream invocation record';
      untouched.push(failure.message);
    } else if (read.kind === 'missing') {
      outcome = 'records-missing';
      reason = `${read.reason}; ${missingRecordsAdvice(run.stage, run.stream, failure.record.batch, item.keys)}`;
      untouched.push(failure.message);
    } else if (read.kind === 'throttled') {
      outcome = 'read-throttled';
      reason = read.reason;
      untouched.push(failure.message);
    } else if (run.dryRun) {
      outcome = 'would-replay';
      reason = `would invoke ${run.functionName} with ${read.records.length} record(s)`;
      untouched.push(failure.message);
    } else {
      let invoked = false;
      try {
        const wait = nextInvokeAt - Date.now();
        if (wait > 0) await sleep(wait);
        nextInvokeAt = Math.max(Date.now(), nextInvokeAt) + interval;
        const event: DynamoDBStreamEvent = { Records: [...read.records] };
        const result = await invokeBatch(clients.lambda, run.functionName, event);
        invoked = result.ok;
        if (result.ok) {
          // Deleted only after the whole batch succeeded: a failure in between replays it again
          // later, which the consumer's idempotency makes harmless.
          await clients.sqs.send(
            new DeleteMessageCommand({ QueueUrl: run.dlqUrl, ReceiptHandle: failure.message.receiptHandle }),
          );
          outcome = 'replayed';
          reason = `${run.functionName} processed ${read.records.length} record(s)`;
        } else {
          outcome = 'function-failed';
          reason = result.reason;
          untouched.push(failure.message);
        }
      } catch (caught) {
        outcome = 'failed';
        error = errorText(caught);
        reason = invoked
          ? 'the batch was replayed but its message could not be deleted'
          : 'the invocation failed';
        // Once replayed, it stays hidden until its visibility ends rather than being offered at once.
        if (!invoked) untouched.push(failure.message);
      }
    }
    const result: StreamReplayOutcome = { ...item, outcome, reason, error };
    outcomes.push(result);
    const batch = failure.record?.batch;
    run.audit({
      at: run.now().toISOString(),
      actor: run.actor,
      stage: run.stage,
      consumer: run.stream.consumer,
      functionName: run.functionName,
      dryRun: run.dryRun,
      messageId: failure.message.messageId,
      condition: failure.record?.condition,
      shardId: batch?.shardId,
      startSequenceNumber: batch?.startSequenceNumber,
      endSequenceNumber: batch?.endSequenceNumber,
      batchSize: batch?.batchSize,
      recordsRead: read?.records.length ?? 0,
      keys: item.keys,
      outcome,
      reason,
      error,
    });
  }
  if (untouched.length > 0) await releaseDeadLetters(clients.sqs, run.dlqUrl, untouched);
  return outcomes;
}

/** Counts per category, every category present. */
export function summarizeStreamReplay(
  outcomes: readonly StreamReplayOutcome[],
): Record<StreamReplayOutcomeKind, number> {
  const counts: Record<StreamReplayOutcomeKind, number> = {
    replayed: 0,
    'would-replay': 0,
    'records-missing': 0,
    'read-throttled': 0,
    'function-failed': 0,
    failed: 0,
  };
  for (const o of outcomes) counts[o.outcome] += 1;
  return counts;
}
