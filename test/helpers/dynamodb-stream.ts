/**
 * DynamoDB stream records for stream-consumer tests:
 * - `StreamTail` reads the REAL records of a table's stream from the emulator (moto implements
 *   DynamoDB Streams) and shapes them as Lambda's stream event does (`toDynamoDbRecord`, as the
 *   local platform does);
 * - `streamRecord` builds an AWS-shaped record from plain images, for unit tests.
 */
import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { AttributeValue as LambdaAttributeValue, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { toDynamoDbRecord } from '../../lib/adapters/aws/stream-record';

function requireEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '')
    throw new Error(`${name} is not set: run through the jest integration project`);
  return value;
}

/** DynamoDB Streams client for the emulator named by AWS_ENDPOINT_URL. */
export function streamsClient(): DynamoDBStreamsClient {
  return new DynamoDBStreamsClient({
    endpoint: requireEnv('AWS_ENDPOINT_URL'),
    region: requireEnv('AWS_REGION'),
  });
}

/** The stream ARN of a table. */
export async function streamArnOf(dynamo: DynamoDBClient, tableName: string): Promise<string> {
  const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: tableName }));
  const streamArn = Table?.LatestStreamArn;
  if (streamArn === undefined) throw new Error(`table ${tableName} has no stream`);
  return streamArn;
}

/** Reads a table's stream from where it ended when opened, like a stream mapping with LATEST. */
export class StreamTail {
  private constructor(
    private readonly streams: DynamoDBStreamsClient,
    private readonly streamArn: string,
    private readonly iterators: Map<string, string | undefined>,
  ) {}

  /** Opens the stream of `tableName` at its current end. */
  public static async open(
    dynamo: DynamoDBClient,
    streams: DynamoDBStreamsClient,
    tableName: string,
  ): Promise<StreamTail> {
    const streamArn = await streamArnOf(dynamo, tableName);
    const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    const iterators = new Map<string, string | undefined>();
    for (const shard of StreamDescription?.Shards ?? []) {
      const { ShardIterator } = await streams.send(
        new GetShardIteratorCommand({
          StreamArn: streamArn,
          ShardId: shard.ShardId,
          ShardIteratorType: 'LATEST',
        }),
      );
      iterators.set(shard.ShardId ?? '', ShardIterator);
    }
    return new StreamTail(streams, streamArn, iterators);
  }

  /** Every record written since the last read, as Lambda delivers them. */
  public async read(): Promise<DynamoDBRecord[]> {
    const records: DynamoDBRecord[] = [];
    const region = this.streamArn.split(':')[3] ?? 'us-east-1';
    for (const [shardId, iterator] of this.iterators) {
      if (iterator === undefined) continue;
      const page = await this.streams.send(new GetRecordsCommand({ ShardIterator: iterator }));
      this.iterators.set(shardId, page.NextShardIterator);
      records.push(...(page.Records ?? []).map((r) => toDynamoDbRecord(r, this.streamArn, region)));
    }
    return records;
  }

  /** Reads until at least `count` records arrived (on AWS the stream lags the write slightly). */
  public async readAtLeast(count: number, deadlineMs = 5_000): Promise<DynamoDBStreamEvent> {
    const records: DynamoDBRecord[] = [];
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      records.push(...(await this.read()));
      if (records.length >= count) return { Records: records };
      if (Date.now() > deadline) throw new Error(`only ${records.length} of ${count} stream records arrived`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** Options of streamRecord. */
export interface StreamRecordInput {
  readonly eventName: 'INSERT' | 'MODIFY' | 'REMOVE';
  readonly keys: Record<string, unknown>;
  readonly oldImage?: Record<string, unknown>;
  readonly newImage?: Record<string, unknown>;
  readonly sequenceNumber: string;
}

/** An AWS-shaped stream record built from plain images (NEW_AND_OLD_IMAGES). */
export function streamRecord(input: StreamRecordInput): DynamoDBRecord {
  // The SDK's and aws-lambda's AttributeValue types describe the same JSON.
  const image = (value: Record<string, unknown>): Record<string, LambdaAttributeValue> =>
    marshall(value, { removeUndefinedValues: true }) as unknown as Record<string, LambdaAttributeValue>;
  return {
    eventID: `event-${input.sequenceNumber}`,
    eventName: input.eventName,
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'eu-west-1',
    eventSourceARN:
      'arn:aws:dynamodb:eu-west-1:123456789012:table/tenang-unit-orders/stream/2030-06-01T00:00:00.000',
    dynamodb: {
      ApproximateCreationDateTime: 1_906_804_800,
      Keys: image(input.keys),
      ...(input.oldImage === undefined ? {} : { OldImage: image(input.oldImage) }),
      ...(input.newImage === undefined ? {} : { NewImage: image(input.newImage) }),
      SequenceNumber: input.sequenceNumber,
      SizeBytes: 100,
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
  };
}
