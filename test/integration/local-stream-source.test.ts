/**
 * The local platform's DynamoDB stream event source mapping against moto's streams: bisect on
 * error, bounded retries, the on-failure destination, partial batch responses and record age;
 * and DynamoDB Streams' limit of two readers per shard, which the platform's moto enforces
 * (lib/local/moto_server.py).
 */
import {
  CreateTableCommand,
  DeleteTableCommand,
  PutItemCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import type { InvokeResult } from '../../lib/local/function-host';
import { ThrottledReads } from '../../lib/adapters/aws/stream-read-throttles';
import { StreamEventSource, type StreamMappingSpec } from '../../lib/local/stream-event-source';
import { dynamoClient, sqsClient, uniqueName } from '../helpers/aws';

jest.setTimeout(30_000);

const ok = (result: unknown = null): InvokeResult => ({
  status: 'ok',
  result,
  durationMs: 1,
  coldStart: false,
});
const failed: InvokeResult = {
  status: 'error',
  errorType: 'Error',
  errorMessage: 'poison',
  durationMs: 1,
  coldStart: false,
};

async function until(check: () => boolean, what: string, deadlineMs = 15_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const idsOf = (event: DynamoDBStreamEvent): string[] =>
  event.Records.map((r) => r.dynamodb?.Keys?.id?.S ?? '?');

describe('Class: StreamEventSource (moto)', () => {
  let ddb: DynamoDBClient;
  let sqs: SQSClient;
  let streams: DynamoDBStreamsClient;
  const tables: string[] = [];
  const queues: string[] = [];
  let source: StreamEventSource | undefined;

  async function tableWithItems(ids: readonly string[]): Promise<string> {
    const name = uniqueName('stream');
    const { TableDescription } = await ddb.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
        StreamSpecification: { StreamEnabled: true, StreamViewType: 'NEW_AND_OLD_IMAGES' },
      }),
    );
    tables.push(name);
    for (const id of ids) await ddb.send(new PutItemCommand({ TableName: name, Item: { id: { S: id } } }));
    return TableDescription?.LatestStreamArn ?? '';
  }

  async function failureQueue(): Promise<string> {
    const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: uniqueName('onfail') }));
    queues.push(QueueUrl ?? '');
    return QueueUrl ?? '';
  }

  function spec(streamArn: string, overrides: Partial<StreamMappingSpec> = {}): StreamMappingSpec {
    return {
      uuid: 'local',
      functionName: 'test-stream-fn',
      streamArn,
      batchSize: 10,
      bisectBatchOnError: true,
      retryAttempts: 2,
      maxRecordAgeSeconds: 3_600,
      reportBatchItemFailures: true,
      onFailureQueueUrl: undefined,
      ...overrides,
    };
  }

  beforeAll(() => {
    ddb = dynamoClient();
    sqs = sqsClient();
    streams = new DynamoDBStreamsClient({
      endpoint: process.env.AWS_ENDPOINT_URL,
      region: process.env.AWS_REGION,
    });
  });

  afterEach(async () => {
    await source?.stop();
    source = undefined;
  });

  afterAll(async () => {
    for (const t of tables) await ddb.send(new DeleteTableCommand({ TableName: t }));
    for (const q of queues) await sqs.send(new DeleteQueueCommand({ QueueUrl: q }));
    for (const c of [ddb, sqs, streams]) c.destroy();
  });

  it('when one record poisons its batch, bisection isolates it, the others are processed, and it goes to the on-failure queue', async () => {
    // Prepare
    const ids = ['a', 'b', 'c', 'poison', 'e', 'f'];
    const arn = await tableWithItems(ids);
    const onFailure = await failureQueue();
    const processed: string[] = [];
    // Each bisection is a retry: six records need three levels to isolate one.
    source = new StreamEventSource(
      spec(arn, { onFailureQueueUrl: onFailure, retryAttempts: 4 }),
      streams,
      sqs,
      {
        isEnabled: () => true,
        invoke: (event) => {
          if (idsOf(event).includes('poison')) return Promise.resolve(failed);
          processed.push(...idsOf(event));
          return Promise.resolve(ok());
        },
      },
    );

    // Act
    await source.start();
    await until(() => source!.stats.sentToOnFailure === 1 && processed.length === 5, 'the batch to settle');

    // Assess
    expect(processed.sort()).toEqual(['a', 'b', 'c', 'e', 'f']);
    expect(source.stats.bisections).toBeGreaterThanOrEqual(2);
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: onFailure, WaitTimeSeconds: 1 }),
    );
    expect(Messages).toHaveLength(1);
    const record = JSON.parse(Messages[0]?.Body ?? '{}') as {
      DDBStreamBatchInfo: { batchSize: number; streamArn: string };
    };
    expect(record.DDBStreamBatchInfo).toMatchObject({ batchSize: 1, streamArn: arn });
  });

  it('when retries run out before bisection isolates the poison record, its sub-batch goes to the on-failure queue', async () => {
    // Prepare
    const arn = await tableWithItems(['x1', 'poison', 'x3', 'x4']);
    const onFailure = await failureQueue();
    const processed: string[] = [];
    source = new StreamEventSource(
      spec(arn, { onFailureQueueUrl: onFailure, retryAttempts: 1 }),
      streams,
      sqs,
      {
        isEnabled: () => true,
        invoke: (event) => {
          if (idsOf(event).includes('poison')) return Promise.resolve(failed);
          processed.push(...idsOf(event));
          return Promise.resolve(ok());
        },
      },
    );

    // Act
    await source.start();
    await until(() => source!.stats.sentToOnFailure === 2 && processed.length === 2, 'the batch to settle');

    // Assess
    expect(processed.sort()).toEqual(['x3', 'x4']);
  });

  it('when the function reports a failed record, the batch resumes from that record', async () => {
    // Prepare
    const arn = await tableWithItems(['r1', 'r2', 'r3']);
    const deliveries: string[][] = [];
    source = new StreamEventSource(spec(arn), streams, sqs, {
      isEnabled: () => true,
      invoke: (event) => {
        deliveries.push(idsOf(event));
        const r2 = event.Records.find((r) => r.dynamodb?.Keys?.id?.S === 'r2');
        // r2 fails once, then succeeds.
        if (deliveries.length === 1 && r2 !== undefined) {
          return Promise.resolve(
            ok({ batchItemFailures: [{ itemIdentifier: r2.dynamodb?.SequenceNumber }] }),
          );
        }
        return Promise.resolve(ok({ batchItemFailures: [] }));
      },
    });

    // Act
    await source.start();
    await until(() => deliveries.length === 2, 'the retry');

    // Assess
    expect(deliveries).toEqual([
      ['r1', 'r2', 'r3'],
      ['r2', 'r3'],
    ]);
  });

  it('when records are older than the maximum record age, they go to the on-failure queue without an invocation', async () => {
    // Prepare
    const arn = await tableWithItems(['old']);
    const onFailure = await failureQueue();
    let invocations = 0;
    source = new StreamEventSource(
      spec(arn, { onFailureQueueUrl: onFailure, maxRecordAgeSeconds: 60 }),
      streams,
      sqs,
      {
        isEnabled: () => true,
        invoke: () => {
          invocations += 1;
          return Promise.resolve(ok());
        },
        now: () => Date.now() + 120_000,
      },
    );

    // Act
    await source.start();
    await until(() => source!.stats.sentToOnFailure === 1, 'the aged record');

    // Assess
    expect(invocations).toBe(0);
  });

  it('when two mappings poll a shard, they are never throttled, and a third reader reading twice in a row is (LimitExceededException)', async () => {
    // Prepare: two mappings (the platform's two stream consumers) polling one table's stream.
    const arn = await tableWithItems(['t1', 't2']);
    const delivered = { first: 0, second: 0 };
    const mapping = (uuid: string, key: keyof typeof delivered): StreamEventSource =>
      new StreamEventSource(spec(arn, { uuid, functionName: `fn-${uuid}` }), streams, sqs, {
        isEnabled: () => true,
        invoke: (event) => {
          delivered[key] += event.Records.length;
          return Promise.resolve(ok());
        },
      });
    const first = mapping('mapping-first', 'first');
    const second = mapping('mapping-second', 'second');
    // A third process, as the CLI is: its own credentials, no SDK retries, so each throttle shows.
    const third = new DynamoDBStreamsClient({
      endpoint: process.env.AWS_ENDPOINT_URL,
      region: process.env.AWS_REGION,
      credentials: { accessKeyId: 'third-reader', secretAccessKey: 'x' },
      maxAttempts: 1,
    });
    const throttles = new ThrottledReads();
    const outcomes: string[] = [];
    try {
      await first.start();
      await second.start();
      await until(() => delivered.first === 2 && delivered.second === 2, 'both mappings to read the records');
      // Both poll while the shard is idle: a second of reads with no third reader.
      await new Promise((r) => setTimeout(r, 1_000));
      const quiet = [first.stats.throttledReads, second.stats.throttledReads];

      // Act: read the shard from the start, page after page, at once.
      const { StreamDescription } = await third.send(new DescribeStreamCommand({ StreamArn: arn }));
      const { ShardIterator } = await third.send(
        new GetShardIteratorCommand({
          StreamArn: arn,
          ShardId: StreamDescription?.Shards?.[0]?.ShardId,
          ShardIteratorType: 'TRIM_HORIZON',
        }),
      );
      for (let read = 0; read < 4; read += 1) {
        try {
          await third.send(throttles.watch(new GetRecordsCommand({ ShardIterator, Limit: 1 })));
          outcomes.push('served');
        } catch (error) {
          outcomes.push(throttles.note(error) ? 'throttled' : String(error));
        }
      }

      // Assess
      expect(quiet).toEqual([0, 0]);
      expect(outcomes[0]).toBe('served');
      expect(outcomes).toContain('throttled');
      expect(outcomes.filter((o) => o !== 'served' && o !== 'throttled')).toEqual([]);
      expect(throttles.count).toBe(outcomes.filter((o) => o === 'throttled').length);
    } finally {
      await first.stop();
      await second.stop();
      third.destroy();
    }
  });
});
