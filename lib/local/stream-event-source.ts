/**
 * A DynamoDB stream event source mapping, played locally the way the Lambda service plays it:
 * one poller per shard in sequence order; batches up to the batch size; on a function error the
 * batch is bisected (when bisectBatchOnError) and retried, each retry counting against
 * retryAttempts; with ReportBatchItemFailures the batch resumes from the first reported record;
 * a batch that exhausts its retries or whose records are older than maxRecordAge goes to the
 * on-failure destination as AWS's invocation record (metadata only) and the shard moves on.
 *
 * Each mapping is one reader of every shard (DynamoDB Streams allows two at a time): its reads
 * carry {@link STREAM_READER_HEADER} so the platform's moto (lib/local/moto_server.py, which
 * enforces the limit) tells the two mappings apart even when they share credentials (IAM off),
 * and a throttled read (LimitExceededException) is retried by the SDK, then by the next poll.
 */
import {
  DescribeStreamCommand,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type DynamoDBStreamsClient,
} from '@aws-sdk/client-dynamodb-streams';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { toDynamoDbRecord } from '../adapters/aws/stream-record';
import { ThrottledReads } from '../adapters/aws/stream-read-throttles';
import type { InvokeResult } from './function-host';

/** A stream mapping's settings, as deployed. */
export interface StreamMappingSpec {
  readonly uuid: string;
  readonly functionName: string;
  readonly streamArn: string;
  readonly batchSize: number;
  readonly bisectBatchOnError: boolean;
  /** -1 means retry until the record expires (AWS's default); tenang always bounds it. */
  readonly retryAttempts: number;
  /** -1 means no limit. */
  readonly maxRecordAgeSeconds: number;
  readonly reportBatchItemFailures: boolean;
  /** On-failure destination (an SQS queue URL), if any. */
  readonly onFailureQueueUrl: string | undefined;
}

/** What the mapping drives. */
export interface StreamMappingHooks {
  isEnabled(): boolean;
  invoke(event: DynamoDBStreamEvent): Promise<InvokeResult>;
  /** @default Date.now */
  now?(): number;
}

/** Counters for the status view and the report. */
export interface StreamMappingStats {
  batches: number;
  records: number;
  retries: number;
  bisections: number;
  sentToOnFailure: number;
  /** Newest record's age when it was delivered, ms (the IteratorAge metric). */
  iteratorAgeMs: number;
  /** GetRecords attempts answered LimitExceededException (more than two readers on a shard). */
  throttledReads: number;
}

/**
 * Header naming the mapping that reads (its UUID): lib/local/moto_server.py counts each mapping
 * as one reader by it. Only the platform's pollers set it.
 */
export const STREAM_READER_HEADER = 'x-tenang-stream-reader';

/**
 * How long a shard poller waits after a read that found no records, ms: the stream's poll
 * interval when idle. AWS: "Lambda polls shards in your DynamoDB stream for records at a base
 * rate of 4 times per second" (Lambda developer guide, Using AWS Lambda with Amazon DynamoDB).
 */
export const IDLE_WAIT_MS = 1000 / 4;

/**
 * How long a shard poller keeps reading with the iterator an empty read returned before it
 * renews it after the last record read, ms. Renewing on every empty read cost a GetShardIterator
 * per poll (5 a second per shard, about a fifth of an idle platform's requests to moto); renewing
 * at this pace still finds a shard moto replaced (see pollShard) within two seconds.
 */
export const ITERATOR_RENEW_MS = 2_000;

function recordTimeMs(r: DynamoDBRecord): number {
  return (r.dynamodb?.ApproximateCreationDateTime ?? 0) * 1000;
}

/** One stream mapping's shard pollers. */
export class StreamEventSource {
  public readonly stats: StreamMappingStats = {
    batches: 0,
    records: 0,
    retries: 0,
    bisections: 0,
    sentToOnFailure: 0,
    iteratorAgeMs: 0,
    throttledReads: 0,
  };
  private readonly throttles = new ThrottledReads(() => {
    this.stats.throttledReads += 1;
  });
  private running = false;
  private workers: Promise<void>[] = [];
  private readonly region: string;

  /** Shard pollers between the start of a read and the end of its batch. */
  private active = 0;

  public constructor(
    public readonly spec: StreamMappingSpec,
    private readonly streams: DynamoDBStreamsClient,
    private readonly sqs: SQSClient,
    private readonly hooks: StreamMappingHooks,
    private readonly log: (line: string) => void = () => undefined,
  ) {
    this.region = spec.streamArn.split(':')[3] ?? 'us-east-1';
  }

  /**
   * True while a shard poller is reading or delivering a batch (with its retries): after the
   * mapping is disabled, until the batch in hand is done.
   */
  public get busy(): boolean {
    return this.active > 0;
  }

  /** Starts a poller per shard. */
  public async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    const { StreamDescription } = await this.streams.send(
      new DescribeStreamCommand({ StreamArn: this.spec.streamArn }),
    );
    const shards = StreamDescription?.Shards ?? [];
    this.workers = shards.map((s) => this.pollShard(s.ShardId ?? ''));
  }

  /** Stops polling and waits for in-flight batches. */
  public async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.workers);
    this.workers = [];
  }

  private now(): number {
    return this.hooks.now?.() ?? Date.now();
  }

  private async pollShard(shardId: string): Promise<void> {
    let iterator: string | undefined;
    let pending: DynamoDBRecord[] = [];
    // The last sequence number read from the shard. After reads have come back empty for
    // ITERATOR_RENEW_MS the iterator is renewed after it: stock moto replaces a table's stream
    // shard when it rolls back a cancelled TransactWriteItems, and an iterator into the discarded
    // shard would never see another record (tenang's launcher keeps the shard: moto_server.py
    // ItemSnapshot; the renewal stays for any other moto).
    let lastRead: string | undefined;
    let iteratorAt = 0;
    while (this.running) {
      if (!this.hooks.isEnabled()) {
        await sleep(IDLE_WAIT_MS);
        continue;
      }
      this.active += 1;
      try {
        if (iterator === undefined) iteratorAt = Date.now();
        iterator ??= (
          await this.streams.send(
            new GetShardIteratorCommand({
              StreamArn: this.spec.streamArn,
              ShardId: shardId,
              ...(lastRead === undefined
                ? { ShardIteratorType: 'TRIM_HORIZON' as const }
                : { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER' as const, SequenceNumber: lastRead }),
            }),
          )
        ).ShardIterator;
        if (pending.length < this.spec.batchSize && iterator !== undefined) {
          const out = await this.streams.send(
            this.asReader(
              new GetRecordsCommand({ ShardIterator: iterator, Limit: this.spec.batchSize - pending.length }),
            ),
          );
          const records = out.Records ?? [];
          iterator =
            records.length === 0 && Date.now() - iteratorAt >= ITERATOR_RENEW_MS
              ? undefined
              : out.NextShardIterator;
          const last = records[records.length - 1]?.dynamodb?.SequenceNumber;
          if (last !== undefined) lastRead = last;
          pending = pending.concat(records.map((r) => toDynamoDbRecord(r, this.spec.streamArn, this.region)));
        }
        if (pending.length === 0) {
          await sleep(IDLE_WAIT_MS);
          continue;
        }
        const batch = pending.slice(0, this.spec.batchSize);
        pending = pending.slice(batch.length);
        await this.process(shardId, batch);
      } catch (error) {
        // A throttled read keeps its iterator: the next poll asks again from the same place.
        this.throttles.note(error);
        this.log(`${this.spec.functionName}: shard ${shardId}: ${(error as Error).message}`);
        await sleep(IDLE_WAIT_MS * 5);
      } finally {
        this.active -= 1;
      }
    }
  }

  /** `command` as this mapping's read: named by the reader header, its throttled attempts counted. */
  private asReader(command: GetRecordsCommand): GetRecordsCommand {
    command.middlewareStack.add(
      (next) => (args) => {
        (args.request as { headers: Record<string, string> }).headers[STREAM_READER_HEADER] = this.spec.uuid;
        return next(args);
      },
      { step: 'build', name: 'tenangStreamReader' },
    );
    return this.throttles.watch(command);
  }

  /** Delivers one batch until it succeeds or is given up on (then sent to the on-failure destination). */
  private async process(shardId: string, batch: readonly DynamoDBRecord[]): Promise<void> {
    // Each unit: records, and how many retries it has used.
    const units: { records: readonly DynamoDBRecord[]; attempts: number }[] = [
      { records: batch, attempts: 0 },
    ];
    while (units.length > 0 && this.running) {
      const unit = units.shift();
      if (unit === undefined) break;
      const tooOld =
        this.spec.maxRecordAgeSeconds >= 0 &&
        unit.records.some((r) => this.now() - recordTimeMs(r) > this.spec.maxRecordAgeSeconds * 1000);
      if (tooOld) {
        await this.giveUp(shardId, unit.records, 'RecordAgeExceeded');
        continue;
      }
      this.stats.batches += 1;
      this.stats.records += unit.records.length;
      const newest = unit.records[unit.records.length - 1];
      if (newest !== undefined) this.stats.iteratorAgeMs = Math.max(0, this.now() - recordTimeMs(newest));
      const result = await this.hooks.invoke({ Records: [...unit.records] });
      const failedFrom = this.firstFailure(result, unit.records);
      if (failedFrom === undefined) continue;
      const remaining = unit.records.slice(failedFrom);
      if (this.spec.retryAttempts >= 0 && unit.attempts >= this.spec.retryAttempts) {
        await this.giveUp(
          shardId,
          remaining,
          result.status === 'ok' ? 'PartialBatchFailure' : 'RetryAttemptsExhausted',
        );
        continue;
      }
      this.stats.retries += 1;
      if (result.status !== 'ok' && this.spec.bisectBatchOnError && remaining.length > 1) {
        this.stats.bisections += 1;
        const mid = Math.ceil(remaining.length / 2);
        units.unshift(
          { records: remaining.slice(0, mid), attempts: unit.attempts + 1 },
          { records: remaining.slice(mid), attempts: unit.attempts + 1 },
        );
      } else {
        units.unshift({ records: remaining, attempts: unit.attempts + 1 });
      }
      await sleep(IDLE_WAIT_MS);
    }
  }

  /** Index of the first record to retry, or undefined when the batch succeeded. */
  private firstFailure(result: InvokeResult, records: readonly DynamoDBRecord[]): number | undefined {
    if (result.status !== 'ok') {
      this.log(`${this.spec.functionName}: ${result.status}: ${result.errorType}: ${result.errorMessage}`);
      return 0;
    }
    if (!this.spec.reportBatchItemFailures) return undefined;
    const failures = (result.result as { batchItemFailures?: { itemIdentifier?: string }[] } | null)
      ?.batchItemFailures;
    if (failures === undefined || failures.length === 0) return undefined;
    const indexes = failures.map((f) =>
      records.findIndex((r) => r.dynamodb?.SequenceNumber === f.itemIdentifier),
    );
    // An unknown sequence number fails the whole batch, as on AWS.
    if (indexes.some((i) => i < 0)) return 0;
    return Math.min(...indexes);
  }

  private async giveUp(
    shardId: string,
    records: readonly DynamoDBRecord[],
    condition: string,
  ): Promise<void> {
    this.stats.sentToOnFailure += records.length;
    this.log(
      `${this.spec.functionName}: ${records.length} record(s) of shard ${shardId} given up: ${condition}`,
    );
    if (this.spec.onFailureQueueUrl === undefined || records.length === 0) return;
    const first = records[0];
    const last = records[records.length - 1];
    const invocationRecord = {
      requestContext: {
        requestId: `local-${Date.now()}`,
        functionArn: this.spec.functionName,
        condition,
        approximateInvokeCount: 1,
      },
      responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: condition },
      version: '1.0',
      timestamp: new Date(this.now()).toISOString(),
      DDBStreamBatchInfo: {
        shardId,
        startSequenceNumber: first?.dynamodb?.SequenceNumber,
        endSequenceNumber: last?.dynamodb?.SequenceNumber,
        approximateArrivalOfFirstRecord:
          first === undefined ? undefined : new Date(recordTimeMs(first)).toISOString(),
        approximateArrivalOfLastRecord:
          last === undefined ? undefined : new Date(recordTimeMs(last)).toISOString(),
        batchSize: records.length,
        streamArn: this.spec.streamArn,
      },
    };
    await this.sqs.send(
      new SendMessageCommand({
        QueueUrl: this.spec.onFailureQueueUrl,
        MessageBody: JSON.stringify(invocationRecord),
      }),
    );
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
