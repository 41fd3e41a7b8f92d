/**
 * The facts a finished scenario is judged on, read from the sources of truth: the orders and
 * inventory tables, and the dead letters. DLQs are read with ReceiveMessage once, at the very end
 * (it raises their receive counts and hides them for a minute; nothing consumes a DLQ, so that is
 * harmless then, and they reappear for `tenang dlq`).
 */
import {
  BatchGetItemCommand,
  type BatchGetItemCommandOutput,
  type DynamoDBClient,
  type KeysAndAttributes,
} from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type DynamoDBStreamsClient,
  type GetRecordsCommandOutput,
} from '@aws-sdk/client-dynamodb-streams';
import { ReceiveMessageCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDbInventoryStore } from '../../examples/reference/domain/dynamodb-inventory-store';
import { isStreamReadThrottle } from '../adapters/aws/stream-read-throttles';
import { DLQ_ATTRIBUTE } from '../adapters/aws/sqs-job-runner';
import { REFERENCE_TABLE_KEYS } from '../../examples/reference/domain/tables';
import type { DlqEntry } from './report-model';
import type { StockFact, StreamRecordFact } from './scenario-invariants';

/** A queue whose dead letters are read, and what kind of records it holds. */
export interface DeadLetterQueue {
  readonly queue: string;
  readonly url: string;
  /** Job type (a DLQ) or stream consumer (an on-failure queue). */
  readonly source: string;
  readonly kind: 'job' | 'stream';
}

/** Characters of a body kept in a DlqEntry. */
export const DLQ_BODY_CHARS = 400;
const MAX_DEAD_LETTERS_READ = 2_000;
/** Long enough for the whole read; short enough that an operator sees them again soon after. */
const READ_VISIBILITY_SECONDS = 60;

function attribute(m: Message, name: string): string | undefined {
  return m.MessageAttributes?.[name]?.StringValue;
}

/** The order id and SKU a job body names, when it is a job envelope. */
function payloadIds(body: string): { orderId?: string; sku?: string } {
  try {
    const payload = (JSON.parse(body) as { payload?: { orderId?: unknown; sku?: unknown } } | null)?.payload;
    return {
      ...(typeof payload?.orderId === 'string' ? { orderId: payload.orderId } : {}),
      ...(typeof payload?.sku === 'string' ? { sku: payload.sku } : {}),
    };
  } catch {
    return {};
  }
}

/** A dead letter of a job queue (sqs-job-runner attributes) or an on-failure queue (invocation record). */
export function toDlqEntry(q: Pick<DeadLetterQueue, 'queue' | 'source' | 'kind'>, m: Message): DlqEntry {
  const body = m.Body ?? '';
  const sentAt = new Date(Number(m.Attributes?.SentTimestamp ?? 0)).toISOString();
  const cut = body.slice(0, DLQ_BODY_CHARS);
  if (q.kind === 'stream') {
    let record: {
      requestContext?: { condition?: string };
      DDBStreamBatchInfo?: { batchSize?: number; startSequenceNumber?: string; endSequenceNumber?: string };
    } = {};
    try {
      record = JSON.parse(body) as typeof record;
    } catch {
      // Not an invocation record: kept as it is.
    }
    const info = record.DDBStreamBatchInfo;
    return {
      queue: q.queue,
      source: q.source,
      errorClass: record.requestContext?.condition ?? 'unknown',
      errorMessage:
        info === undefined
          ? undefined
          : `${info.batchSize ?? '?'} stream record(s), sequence ${info.startSequenceNumber ?? '?'}..${info.endSequenceNumber ?? '?'}`,
      body: cut,
      sentAt,
    };
  }
  const attempts = attribute(m, DLQ_ATTRIBUTE.attempts);
  return {
    queue: q.queue,
    source: q.source,
    // No tenang attributes: SQS itself moved it (maxReceiveCount), e.g. after a crash loop.
    errorClass: attribute(m, DLQ_ATTRIBUTE.errorClass) ?? 'redriven by SQS (maxReceiveCount)',
    errorKind: attribute(m, DLQ_ATTRIBUTE.errorKind),
    errorMessage: attribute(m, DLQ_ATTRIBUTE.errorMessage),
    attempts: attempts === undefined ? undefined : Number(attempts),
    ...payloadIds(body),
    body: cut,
    sentAt,
  };
}

/** Reads every dead letter sent at or after `sinceMs` (older ones are another run's and are left out). */
export async function readDeadLetters(
  sqs: SQSClient,
  queues: readonly DeadLetterQueue[],
  sinceMs: number,
): Promise<DlqEntry[]> {
  const entries: DlqEntry[] = [];
  for (const q of queues) {
    const seen = new Set<string>();
    for (let read = 0; read < MAX_DEAD_LETTERS_READ;) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: q.url,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 0,
          VisibilityTimeout: READ_VISIBILITY_SECONDS,
          MessageAttributeNames: ['All'],
          MessageSystemAttributeNames: ['SentTimestamp', 'ApproximateReceiveCount'],
        }),
      );
      if (Messages.length === 0) break;
      read += Messages.length;
      for (const m of Messages) {
        if (m.MessageId === undefined || seen.has(m.MessageId)) continue;
        seen.add(m.MessageId);
        if (Number(m.Attributes?.SentTimestamp ?? 0) >= sinceMs) entries.push(toDlqEntry(q, m));
      }
    }
  }
  return entries;
}

/** Each order's state (strongly consistent); orders not found are absent. */
export async function readOrderStates(
  dynamodb: DynamoDBClient,
  tableName: string,
  orderIds: readonly string[],
): Promise<Map<string, string>> {
  const key = REFERENCE_TABLE_KEYS.orders.partitionKey;
  const states = new Map<string, string>();
  const unique = [...new Set(orderIds)];
  for (let i = 0; i < unique.length; i += 100) {
    let request: Record<string, KeysAndAttributes> | undefined = {
      [tableName]: {
        Keys: unique.slice(i, i + 100).map((id) => ({ [key]: { S: id } })),
        ConsistentRead: true,
        ProjectionExpression: '#k, #s',
        ExpressionAttributeNames: { '#k': key, '#s': 'state' },
      },
    };
    while (request !== undefined && Object.keys(request).length > 0) {
      const out: BatchGetItemCommandOutput = await dynamodb.send(
        new BatchGetItemCommand({ RequestItems: request }),
      );
      for (const item of out.Responses?.[tableName] ?? []) {
        const id = item[key]?.S;
        const state = item.state?.S;
        if (id !== undefined && state !== undefined) states.set(id, state);
      }
      request = out.UnprocessedKeys;
    }
  }
  return states;
}

/** Stock and reservations of the SKUs a scenario seeded. */
export async function readStock(
  dynamodb: DynamoDBClient,
  tableName: string,
  seeded: ReadonlyMap<string, number>,
): Promise<Map<string, StockFact>> {
  const store = new DynamoDbInventoryStore(dynamodb, tableName);
  const stock = new Map<string, StockFact>();
  for (const [sku, initial] of seeded) {
    const level = await store.get(sku);
    stock.set(sku, {
      seeded: initial,
      available: level?.available ?? 0,
      reservations: Object.fromEntries(
        Object.entries(level?.reservations ?? {}).map(([orderId, r]) => [orderId, r.quantity]),
      ),
    });
  }
  return stock;
}

/** Records per GetRecords call when reading a stream back. */
const STREAM_PAGE = 1_000;

/** Throttled reads in a row after which the scenario's stream read gives up. */
const MAX_THROTTLED_READS = 10;

/**
 * One GetRecords page. The scenario's read is a third reader of the shard beside the two stream
 * mappings, so the platform may answer LimitExceededException (DynamoDB Streams' documented limit
 * of two readers per shard, lib/local/moto_server.py): wait a jittered moment and read again.
 */
async function getRecordsWithinReaderLimit(
  streams: DynamoDBStreamsClient,
  iterator: string,
): Promise<GetRecordsCommandOutput> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: STREAM_PAGE }));
    } catch (error) {
      if (!isStreamReadThrottle(error) || attempt >= MAX_THROTTLED_READS) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200 + Math.floor(Math.random() * 800)));
    }
  }
}

/**
 * Every record of a DynamoDB stream, read with fresh shard iterators from TRIM_HORIZON: what the
 * stream holds now, whatever the stream mappings' own iterators saw.
 */
export async function readStreamRecords(
  streams: DynamoDBStreamsClient,
  streamArn: string,
): Promise<StreamRecordFact[]> {
  const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
  const records: StreamRecordFact[] = [];
  for (const shard of StreamDescription?.Shards ?? []) {
    let iterator = (
      await streams.send(
        new GetShardIteratorCommand({
          StreamArn: streamArn,
          ShardId: shard.ShardId,
          ShardIteratorType: 'TRIM_HORIZON',
        }),
      )
    ).ShardIterator;
    while (iterator !== undefined) {
      const out = await getRecordsWithinReaderLimit(streams, iterator);
      for (const r of out.Records ?? []) {
        const sequence = r.dynamodb?.SequenceNumber;
        if (sequence === undefined) continue;
        const at = r.dynamodb?.ApproximateCreationDateTime;
        records.push({
          sequence,
          eventName: r.eventName ?? '?',
          at: at === undefined ? '' : new Date(at).toISOString(),
          orderId: r.dynamodb?.Keys?.[REFERENCE_TABLE_KEYS.orders.partitionKey]?.S,
        });
      }
      // An open shard always hands out a next iterator: stop at the first empty page.
      iterator = (out.Records ?? []).length === 0 ? undefined : out.NextShardIterator;
    }
  }
  return records;
}
