import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { CloudFormationClient, ListStackResourcesCommand } from '@aws-sdk/client-cloudformation';
import {
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  LimitExceededException,
  TrimmedDataAccessException,
  type _Record as StreamRecordRaw,
} from '@aws-sdk/client-dynamodb-streams';
import { GetEventSourceMappingCommand, InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageCommand,
  GetQueueUrlCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { GetParameterCommand, ParameterNotFound, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import 'aws-sdk-client-mock-jest';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { run } from '../../../bin/tenang';
import { ThrottledReads } from '../../../lib/adapters/aws/stream-read-throttles';
import { toDynamoDbRecord } from '../../../lib/adapters/aws/stream-record';
import type { Prompt } from '../../../lib/ops/cli-context';
import type { ReceivedDeadLetter } from '../../../lib/ops/dlq/messages';
import {
  executeStreamReplay,
  invokeBatch,
  MAX_THROTTLED_READS_IN_A_ROW,
  missingRecordsAdvice,
  parseInvocationRecord,
  planStreamReplay,
  readBatchRecords,
  replayableUntil,
  summarizeStreamReplay,
  toStreamFailure,
  keysOf,
  type StreamBatchInfo,
  type StreamConsumerFacts,
  type StreamReplayAuditRecord,
} from '../../../lib/ops/dlq/stream-replay';

const STREAM_ARN =
  'arn:aws:dynamodb:eu-west-1:123456789012:table/tenang-unit-orders/stream/2026-03-01T00:00:00.000';
const SHARD = 'shardId-00000001573689847184-864758bb';
const FUNCTION = 'tenang-unit-outbox-relay';
const DLQ_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/tenang-unit-outbox-relay-failures';
const NOW = new Date('2026-03-01T12:00:00Z');

/** The on-failure record as AWS documents it (services-dynamodb-errors). */
function awsInvocationRecord(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    requestContext: {
      requestId: '316aa6d0-8154-xmpl-9af7-85d5f4a6bc81',
      functionArn: `arn:aws:lambda:eu-west-1:123456789012:function:${FUNCTION}`,
      condition: 'RetryAttemptsExhausted',
      approximateInvokeCount: 11,
    },
    responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: 'Unhandled' },
    version: '1.0',
    timestamp: '2026-03-01T11:00:06.021Z',
    DDBStreamBatchInfo: {
      shardId: SHARD,
      startSequenceNumber: '800000000003126276362',
      endSequenceNumber: '800000000003126276364',
      approximateArrivalOfFirstRecord: '2026-03-01T11:00:04Z',
      approximateArrivalOfLastRecord: '2026-03-01T11:00:05Z',
      batchSize: 3,
      streamArn: STREAM_ARN,
    },
    ...overrides,
  };
}

function batch(overrides: Partial<StreamBatchInfo> = {}): StreamBatchInfo {
  return {
    streamArn: STREAM_ARN,
    shardId: SHARD,
    startSequenceNumber: '100',
    endSequenceNumber: '300',
    batchSize: 3,
    approximateArrivalOfFirstRecord: new Date('2026-03-01T11:00:04Z'),
    approximateArrivalOfLastRecord: new Date('2026-03-01T11:00:05Z'),
    ...overrides,
  };
}

function rawRecord(seq: string, orderId = `o-${seq}`, keyName = 'orderId'): StreamRecordRaw {
  return {
    eventID: `e-${seq}`,
    eventName: 'MODIFY',
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: 'eu-west-1',
    dynamodb: {
      ApproximateCreationDateTime: new Date('2026-03-01T11:00:04Z'),
      Keys: { [keyName]: { S: orderId } },
      OldImage: { [keyName]: { S: orderId }, state: { S: 'PENDING' }, version: { N: '1' } },
      NewImage: { [keyName]: { S: orderId }, state: { S: 'PAID' }, version: { N: '2' } },
      SequenceNumber: seq,
      SizeBytes: 42,
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    },
  };
}

function deadLetter(body: unknown, messageId = 'm-1'): ReceivedDeadLetter {
  return {
    messageId,
    receiptHandle: `rh-${messageId}`,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    errorClass: undefined,
    errorMessage: undefined,
    attempts: undefined,
    firstFailureAt: undefined,
    lastFailureAt: undefined,
    correlationId: undefined,
    sentAt: NOW,
    groupId: undefined,
    receiveCount: 1,
    jobType: undefined,
  };
}

const streams = mockClient(DynamoDBStreamsClient);
const lambda = mockClient(LambdaClient);
const sqs = mockClient(SQSClient);

const throttled = (): LimitExceededException =>
  new LimitExceededException({
    message: 'More than 2 processes are reading from the same streams shard at the same time',
    $metadata: { httpStatusCode: 400 },
  });

const encode = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

beforeEach(() => {
  for (const m of [streams, lambda, sqs]) m.reset();
  streams.on(GetShardIteratorCommand).resolves({ ShardIterator: 'it-0' });
  sqs.on(DeleteMessageCommand).resolves({});
  sqs.on(ChangeMessageVisibilityBatchCommand).resolves({ Successful: [], Failed: [] });
});

describe('Function: parseInvocationRecord', () => {
  it('when the body is the record AWS documents, it reads the batch, the condition and the function error', () => {
    // Act
    const parsed = parseInvocationRecord(JSON.stringify(awsInvocationRecord()));

    // Assess
    expect(parsed).toEqual({
      ok: true,
      record: {
        condition: 'RetryAttemptsExhausted',
        functionArn: `arn:aws:lambda:eu-west-1:123456789012:function:${FUNCTION}`,
        functionError: 'Unhandled',
        approximateInvokeCount: 11,
        failedAt: new Date('2026-03-01T11:00:06.021Z'),
        batch: {
          streamArn: STREAM_ARN,
          shardId: SHARD,
          startSequenceNumber: '800000000003126276362',
          endSequenceNumber: '800000000003126276364',
          batchSize: 3,
          approximateArrivalOfFirstRecord: new Date('2026-03-01T11:00:04Z'),
          approximateArrivalOfLastRecord: new Date('2026-03-01T11:00:05Z'),
        },
      },
    });
  });

  it('when the batch aged out without a function error, the function error is undefined', () => {
    // Prepare
    const body = awsInvocationRecord({
      requestContext: { condition: 'RecordAgeExceeded', approximateInvokeCount: 0 },
      responseContext: { statusCode: 200, executedVersion: '$LATEST', functionError: null },
    });

    // Act
    const parsed = parseInvocationRecord(JSON.stringify(body));

    // Assess
    expect(parsed).toMatchObject({
      ok: true,
      record: { condition: 'RecordAgeExceeded', functionError: undefined },
    });
  });

  it('when the body is not JSON, it says so', () => {
    expect(parseInvocationRecord('{"DDBStreamBatchInfo":')).toEqual({
      ok: false,
      problem: 'the body is not JSON',
    });
  });

  it('when the batch info lacks its sequence range, it names the missing fields', () => {
    // Prepare
    const body = awsInvocationRecord({
      DDBStreamBatchInfo: { shardId: SHARD, batchSize: 1, streamArn: STREAM_ARN },
    });

    // Act
    const parsed = parseInvocationRecord(JSON.stringify(body));

    // Assess
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.problem).toMatch(/DDBStreamBatchInfo\.startSequenceNumber/);
    expect(!parsed.ok && parsed.problem).toMatch(/DDBStreamBatchInfo\.endSequenceNumber/);
  });

  it('when the message is a job, not an invocation record, the failure keeps the message and a problem', () => {
    // Act
    const failure = toStreamFailure(deadLetter({ type: 'notification.send', payload: {} }));

    // Assess
    expect(failure.record).toBeUndefined();
    expect(failure.problem).toContain('not a stream invocation record');
  });
});

describe('Function: replayableUntil', () => {
  it('when the first record arrived at t, the stream holds the batch until t + 24 h', () => {
    expect(replayableUntil(batch())?.toISOString()).toBe('2026-03-02T11:00:04.000Z');
  });
});

describe('Function: readBatchRecords', () => {
  it('when the range spans pages, it reads from the start sequence number to the end inclusive and stops there', async () => {
    // Prepare
    streams
      .on(GetRecordsCommand, { ShardIterator: 'it-0' })
      .resolves({ Records: [rawRecord('100'), rawRecord('200')], NextShardIterator: 'it-1' })
      .on(GetRecordsCommand, { ShardIterator: 'it-1' })
      .resolves({ Records: [rawRecord('300'), rawRecord('400')], NextShardIterator: 'it-2' });

    // Act
    const read = await readBatchRecords(streams as unknown as DynamoDBStreamsClient, batch());

    // Assess
    expect(read.kind).toBe('complete');
    expect(read.records.map((r) => r.dynamodb?.SequenceNumber)).toEqual(['100', '200', '300']);
    expect(streams).toHaveReceivedCommandWith(GetShardIteratorCommand, {
      StreamArn: STREAM_ARN,
      ShardId: SHARD,
      ShardIteratorType: 'AT_SEQUENCE_NUMBER',
      SequenceNumber: '100',
    });
    expect(streams).toHaveReceivedCommandTimes(GetRecordsCommand, 2);
    expect(streams).not.toHaveReceivedCommandWith(GetRecordsCommand, { ShardIterator: 'it-2' });
  });

  it('when it reads records, each is in the shape the mapping delivers (eventSourceARN, seconds, images)', async () => {
    // Prepare
    streams.on(GetRecordsCommand).resolves({ Records: [rawRecord('100')], NextShardIterator: 'it-1' });

    // Act
    const read = await readBatchRecords(
      streams as unknown as DynamoDBStreamsClient,
      batch({ endSequenceNumber: '100', batchSize: 1 }),
    );

    // Assess
    expect(read.records[0]).toEqual({
      eventID: 'e-100',
      eventName: 'MODIFY',
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'eu-west-1',
      eventSourceARN: STREAM_ARN,
      dynamodb: expect.objectContaining({
        ApproximateCreationDateTime: Date.parse('2026-03-01T11:00:04Z') / 1000,
        Keys: { orderId: { S: 'o-100' } },
        SequenceNumber: '100',
        StreamViewType: 'NEW_AND_OLD_IMAGES',
      }) as unknown,
    });
  });

  it('when sequence numbers outgrow a JavaScript number, it still compares them exactly', async () => {
    // Prepare
    const start = '800000000003126276362';
    const end = '800000000003126276363';
    streams.on(GetRecordsCommand).resolves({
      Records: [rawRecord(start), rawRecord(end), rawRecord('800000000003126276364')],
      NextShardIterator: 'it-1',
    });

    // Act
    const read = await readBatchRecords(
      streams as unknown as DynamoDBStreamsClient,
      batch({ startSequenceNumber: start, endSequenceNumber: end, batchSize: 2 }),
    );

    // Assess
    expect(read.kind).toBe('complete');
    expect(read.records.map((r) => r.dynamodb?.SequenceNumber)).toEqual([start, end]);
  });

  it('when the stream has trimmed the batch, it reports the records missing instead of throwing', async () => {
    // Prepare
    streams
      .on(GetShardIteratorCommand)
      .rejects(new TrimmedDataAccessException({ message: 'records beyond the trim horizon', $metadata: {} }));

    // Act
    const read = await readBatchRecords(streams as unknown as DynamoDBStreamsClient, batch());

    // Assess
    expect(read).toEqual({
      kind: 'missing',
      records: [],
      reason: expect.stringContaining('TrimmedDataAccessException') as string,
    });
    expect(streams).not.toHaveReceivedCommand(GetRecordsCommand);
  });

  it('when the stream answers nothing from the start on, it gives up after a few empty reads', async () => {
    // Prepare
    streams.on(GetRecordsCommand).resolves({ Records: [], NextShardIterator: 'it-again' });

    // Act
    const read = await readBatchRecords(streams as unknown as DynamoDBStreamsClient, batch());

    // Assess
    expect(read.kind).toBe('missing');
    expect(read.kind === 'missing' && read.reason).toContain('no record from 100');
    expect(streams).toHaveReceivedCommandTimes(GetRecordsCommand, 3);
  });

  it('when the shard closes before the end of the range, it reports what it read and what is missing', async () => {
    // Prepare
    streams.on(GetRecordsCommand).resolves({ Records: [rawRecord('100'), rawRecord('200')] });

    // Act
    const read = await readBatchRecords(streams as unknown as DynamoDBStreamsClient, batch());

    // Assess
    expect(read.kind).toBe('missing');
    expect(read.records).toHaveLength(2);
    expect(read.kind === 'missing' && read.reason).toContain('up to 200');
  });

  it("when the batch's first record is gone, it reports the start missing", async () => {
    // Prepare
    streams.on(GetRecordsCommand).resolves({ Records: [rawRecord('200'), rawRecord('300')] });

    // Act
    const read = await readBatchRecords(streams as unknown as DynamoDBStreamsClient, batch());

    // Assess
    expect(read.kind === 'missing' && read.reason).toContain('first record 100');
  });

  it('when GetRecords is throttled, it backs off with full jitter, reads on with the same iterator and counts the throttles', async () => {
    // Prepare: throttled twice (more than two readers of the shard), then served.
    streams
      .on(GetRecordsCommand)
      .rejectsOnce(throttled())
      .rejectsOnce(throttled())
      .resolves({
        Records: [rawRecord('100'), rawRecord('200'), rawRecord('300')],
        NextShardIterator: 'it-1',
      });
    const throttles = new ThrottledReads();
    const slept: number[] = [];

    // Act
    const read = await readBatchRecords(streams as unknown as DynamoDBStreamsClient, batch(), {
      throttles,
      sleep: (ms) => {
        slept.push(ms);
        return Promise.resolve();
      },
      random: () => 0.99,
    });

    // Assess: ceilings 1 s then 2 s (READ_THROTTLE_BACKOFF), the random at its top end.
    expect(read.kind).toBe('complete');
    expect(read.records.map((r) => r.dynamodb?.SequenceNumber)).toEqual(['100', '200', '300']);
    expect(slept).toEqual([1_000, 2_000]);
    expect(throttles.count).toBe(2);
    expect(streams).toHaveReceivedCommandTimes(GetShardIteratorCommand, 1);
    expect(streams.commandCalls(GetRecordsCommand).map((c) => c.args[0].input.ShardIterator)).toEqual([
      'it-0',
      'it-0',
      'it-0',
    ]);
  });

  it('when GetRecords stays throttled, it gives up after a bounded number of reads and says so, without throwing', async () => {
    // Prepare
    // A new error per attempt, as the SDK raises them.
    streams.on(GetRecordsCommand).callsFake(() => Promise.reject(throttled()));
    const throttles = new ThrottledReads();

    // Act
    const read = await readBatchRecords(streams as unknown as DynamoDBStreamsClient, batch(), {
      throttles,
      sleep: () => Promise.resolve(),
      random: () => 0.5,
    });

    // Assess
    expect(read.kind).toBe('throttled');
    expect(read.kind === 'throttled' && read.reason).toContain('LimitExceededException');
    expect(throttles.count).toBe(MAX_THROTTLED_READS_IN_A_ROW);
    expect(streams).toHaveReceivedCommandTimes(GetRecordsCommand, MAX_THROTTLED_READS_IN_A_ROW);
  });

  it('when reading fails for another reason, it throws', async () => {
    // Prepare
    streams.on(GetRecordsCommand).rejects(new Error('socket hang up'));

    // Act / Assess
    await expect(readBatchRecords(streams as unknown as DynamoDBStreamsClient, batch())).rejects.toThrow(
      'socket hang up',
    );
  });
});

describe('Function: invokeBatch', () => {
  const event: DynamoDBStreamEvent = { Records: [] };

  it('when the function answers no batch item failures, the batch succeeded', async () => {
    // Prepare
    lambda
      .on(InvokeCommand)
      .resolves({ StatusCode: 200, Payload: encode({ batchItemFailures: [] }) as never });

    // Act
    const result = await invokeBatch(lambda as unknown as LambdaClient, FUNCTION, event);

    // Assess
    expect(result).toEqual({ ok: true });
    const input = lambda.commandCalls(InvokeCommand)[0]?.args[0].input;
    expect(input).toMatchObject({ FunctionName: FUNCTION, InvocationType: 'RequestResponse' });
    expect(JSON.parse(new TextDecoder().decode(input?.Payload as Uint8Array))).toEqual(event);
  });

  it('when the function reports failed records, the batch failed and names them', async () => {
    // Prepare
    lambda.on(InvokeCommand).resolves({
      StatusCode: 200,
      Payload: encode({ batchItemFailures: [{ itemIdentifier: '200' }] }) as never,
    });

    // Act
    const result = await invokeBatch(lambda as unknown as LambdaClient, FUNCTION, event);

    // Assess
    expect(result).toEqual({ ok: false, reason: 'the function reported 1 failed record(s): 200' });
  });

  it('when the function errs, the batch failed with its error type and message', async () => {
    // Prepare
    lambda.on(InvokeCommand).resolves({
      StatusCode: 200,
      FunctionError: 'Unhandled',
      Payload: encode({ errorType: 'Runtime.ExitError', errorMessage: 'exited (SIGKILL)' }) as never,
    });

    // Act
    const result = await invokeBatch(lambda as unknown as LambdaClient, FUNCTION, event);

    // Assess
    expect(result).toEqual({
      ok: false,
      reason: 'function error (Unhandled): Runtime.ExitError: exited (SIGKILL)',
    });
  });
});

/** Stream consumers of an app's own, as declared: one that uses the cache, one that enqueues jobs. */
const noResources = { tables: {}, queues: [], cache: false, degradeFlag: false };
const CACHE_SYNC: StreamConsumerFacts = {
  consumer: 'invoice-cache-sync',
  table: 'invoices',
  resources: { ...noResources, cache: true },
  cachedEntities: ['order'],
};
const RELAY: StreamConsumerFacts = {
  consumer: 'invoice-relay',
  table: 'invoices',
  resources: { ...noResources, queues: ['invoice.issue', 'receipt.send'], degradeFlag: true },
};

describe('Function: missingRecordsAdvice', () => {
  it('when a consumer that uses the cache lost a batch, it says how to invalidate the cached entities', () => {
    const advice = missingRecordsAdvice('prod', CACHE_SYNC, batch(), ['inv-1']);
    expect(advice).toContain('cached entities of invoices changed in');
    expect(advice).toContain('invoices keys read: inv-1');
    expect(advice).toContain("tenang --stage prod cache invalidate --prefix 'tenang:prod:v1:order:'");
    expect(advice).not.toContain('nothing replays');
  });

  it('when a consumer that enqueues jobs lost a batch, it says nothing replays it, names the range and its jobs', () => {
    const advice = missingRecordsAdvice('prod', RELAY, batch(), ['inv-1']);
    expect(advice).toContain('nothing replays this automatically');
    expect(advice).toContain(`shard ${SHARD}, sequence numbers 100..300`);
    expect(advice).toContain('invoices keys read: inv-1');
    expect(advice).toContain('(invoice.issue, receipt.send)');
    expect(advice).not.toContain('cache invalidate');
  });

  it('when a consumer declares neither, it names the range and the consumer', () => {
    const advice = missingRecordsAdvice('prod', { ...RELAY, resources: noResources }, batch(), []);
    expect(advice).toBe(
      `the changes in shard ${SHARD}, sequence numbers 100..300, arrived 2026-03-01T11:00:04.000Z to 2026-03-01T11:00:05.000Z were never processed by invoice-relay`,
    );
  });
});

describe('Function: keysOf', () => {
  it('when records change items, it returns their partition keys in order, each once, skipping records without one', () => {
    const records = [
      toDynamoDbRecord(rawRecord('1', 'inv-2', 'invoiceId'), STREAM_ARN, 'eu-west-1'),
      toDynamoDbRecord(rawRecord('2', 'inv-1', 'invoiceId'), STREAM_ARN, 'eu-west-1'),
      toDynamoDbRecord(rawRecord('3', 'inv-2', 'invoiceId'), STREAM_ARN, 'eu-west-1'),
      toDynamoDbRecord(rawRecord('4', 'o-1', 'orderId'), STREAM_ARN, 'eu-west-1'),
    ];
    expect(keysOf(records, 'invoiceId')).toEqual(['inv-2', 'inv-1']);
  });
});

describe('Function: executeStreamReplay', () => {
  const audit: StreamReplayAuditRecord[] = [];
  const replayRun = (dryRun = false) => ({
    stage: 'unit',
    stream: RELAY,
    functionName: FUNCTION,
    dlqUrl: DLQ_URL,
    dryRun,
    ratePerSecond: 1000,
    actor: 'tester',
    now: () => NOW,
    audit: (r: StreamReplayAuditRecord) => audit.push(r),
    sleep: () => Promise.resolve(),
  });
  const clients = () => ({
    sqs: sqs as unknown as SQSClient,
    lambda: lambda as unknown as LambdaClient,
  });
  const onFailure = (start: string, end: string, batchSize: number, id: string) =>
    deadLetter(
      awsInvocationRecord({
        DDBStreamBatchInfo: {
          shardId: SHARD,
          startSequenceNumber: start,
          endSequenceNumber: end,
          batchSize,
          streamArn: STREAM_ARN,
          approximateArrivalOfFirstRecord: '2026-03-01T11:00:04Z',
          approximateArrivalOfLastRecord: '2026-03-01T11:00:05Z',
        },
      }),
      id,
    );

  beforeEach(() => {
    audit.length = 0;
    streams.on(GetRecordsCommand).resolves({
      Records: [rawRecord('100', 'inv-a', 'invoiceId'), rawRecord('200', 'inv-b', 'invoiceId')],
      NextShardIterator: 'it-1',
    });
  });

  it('when the replayed batch succeeds, it invokes the function with the records and deletes the message', async () => {
    // Prepare
    lambda
      .on(InvokeCommand)
      .resolves({ StatusCode: 200, Payload: encode({ batchItemFailures: [] }) as never });
    const plan = await planStreamReplay(
      streams as unknown as DynamoDBStreamsClient,
      [toStreamFailure(onFailure('100', '200', 2, 'm-1'))],
      'invoiceId',
    );

    // Act
    const outcomes = await executeStreamReplay(clients(), plan, replayRun());

    // Assess
    expect(outcomes.map((o) => o.outcome)).toEqual(['replayed']);
    const payload = lambda.commandCalls(InvokeCommand)[0]?.args[0].input.Payload as Uint8Array;
    const event = JSON.parse(new TextDecoder().decode(payload)) as DynamoDBStreamEvent;
    expect(event.Records.map((r) => r.dynamodb?.SequenceNumber)).toEqual(['100', '200']);
    expect(event.Records.every((r) => r.eventSourceARN === STREAM_ARN)).toBe(true);
    expect(sqs).toHaveReceivedCommandWith(DeleteMessageCommand, {
      QueueUrl: DLQ_URL,
      ReceiptHandle: 'rh-m-1',
    });
    expect(sqs).not.toHaveReceivedCommand(ChangeMessageVisibilityBatchCommand);
    expect(audit).toEqual([
      expect.objectContaining({
        actor: 'tester',
        consumer: 'invoice-relay',
        dryRun: false,
        messageId: 'm-1',
        startSequenceNumber: '100',
        endSequenceNumber: '200',
        recordsRead: 2,
        keys: ['inv-a', 'inv-b'],
        outcome: 'replayed',
      }),
    ]);
  });

  it('when the function still fails, it keeps the message, makes it visible again and says why', async () => {
    // Prepare
    lambda.on(InvokeCommand).resolves({
      StatusCode: 200,
      Payload: encode({ batchItemFailures: [{ itemIdentifier: '200' }] }) as never,
    });
    const plan = await planStreamReplay(
      streams as unknown as DynamoDBStreamsClient,
      [toStreamFailure(onFailure('100', '200', 2, 'm-1'))],
      'invoiceId',
    );

    // Act
    const outcomes = await executeStreamReplay(clients(), plan, replayRun());

    // Assess
    expect(outcomes[0]).toMatchObject({ outcome: 'function-failed', reason: expect.stringContaining('200') });
    expect(sqs).not.toHaveReceivedCommand(DeleteMessageCommand);
    expect(sqs).toHaveReceivedCommandWith(ChangeMessageVisibilityBatchCommand, {
      Entries: [{ Id: '0', ReceiptHandle: 'rh-m-1', VisibilityTimeout: 0 }],
    });
  });

  it('when dry-running, it reads the records but invokes and deletes nothing', async () => {
    // Prepare
    const plan = await planStreamReplay(
      streams as unknown as DynamoDBStreamsClient,
      [toStreamFailure(onFailure('100', '200', 2, 'm-1'))],
      'invoiceId',
    );

    // Act
    const outcomes = await executeStreamReplay(clients(), plan, replayRun(true));

    // Assess
    expect(outcomes[0]).toMatchObject({
      outcome: 'would-replay',
      reason: `would invoke ${FUNCTION} with 2 record(s)`,
    });
    expect(lambda).not.toHaveReceivedCommand(InvokeCommand);
    expect(sqs).not.toHaveReceivedCommand(DeleteMessageCommand);
    expect(audit[0]).toMatchObject({ dryRun: true, outcome: 'would-replay' });
  });

  it('when the records are trimmed or the body is unreadable, it keeps both messages and says what to do', async () => {
    // Prepare
    streams
      .on(GetShardIteratorCommand)
      .rejects(new TrimmedDataAccessException({ message: 'trimmed', $metadata: {} }));
    const plan = await planStreamReplay(
      streams as unknown as DynamoDBStreamsClient,
      [toStreamFailure(onFailure('100', '200', 2, 'm-1')), toStreamFailure(deadLetter('not json', 'm-2'))],
      'invoiceId',
    );

    // Act
    const outcomes = await executeStreamReplay(clients(), plan, replayRun());

    // Assess
    expect(outcomes.map((o) => o.outcome)).toEqual(['records-missing', 'failed']);
    expect(outcomes[0]?.reason).toContain('nothing replays this automatically');
    expect(lambda).not.toHaveReceivedCommand(InvokeCommand);
    expect(sqs).not.toHaveReceivedCommand(DeleteMessageCommand);
    expect(summarizeStreamReplay(outcomes)).toEqual({
      replayed: 0,
      'would-replay': 0,
      'records-missing': 1,
      'read-throttled': 0,
      'function-failed': 0,
      failed: 1,
    });
  });

  it('when the reads stay throttled, it keeps the message as read-throttled, not failed, and invokes nothing', async () => {
    // Prepare
    // A new error per attempt, as the SDK raises them.
    streams.on(GetRecordsCommand).callsFake(() => Promise.reject(throttled()));
    const plan = await planStreamReplay(
      streams as unknown as DynamoDBStreamsClient,
      [toStreamFailure(onFailure('100', '200', 2, 'm-1'))],
      'invoiceId',
      { throttles: new ThrottledReads(), sleep: () => Promise.resolve(), random: () => 0 },
    );

    // Act
    const outcomes = await executeStreamReplay(clients(), plan, replayRun());

    // Assess
    expect(outcomes.map((o) => o.outcome)).toEqual(['read-throttled']);
    expect(outcomes[0]?.reason).toContain('replay again later');
    expect(lambda).not.toHaveReceivedCommand(InvokeCommand);
    expect(sqs).not.toHaveReceivedCommand(DeleteMessageCommand);
    expect(sqs).toHaveReceivedCommandWith(ChangeMessageVisibilityBatchCommand, {
      Entries: [{ Id: '0', ReceiptHandle: 'rh-m-1', VisibilityTimeout: 0 }],
    });
    expect(summarizeStreamReplay(outcomes)).toMatchObject({ 'read-throttled': 1, failed: 0 });
  });
});

describe('Command: tenang dlq <stream-consumer>', () => {
  const savedEnv = { ...process.env };
  const cfn = mockClient(CloudFormationClient);
  const ssm = mockClient(SSMClient);
  const UUID = '0f4b8a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b';
  let auditDir: string;

  beforeEach(() => {
    Object.assign(process.env, { AWS_REGION: 'eu-west-1', TENANG_STAGE: 'unit', TENANG_ACTOR: 'tester' });
    auditDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-stream-replay-unit-'));
    // A deployed stack: the relay's on-failure queue holds one failed batch of two records.
    cfn.reset();
    ssm.reset();
    // Not paused: the consumer's pause flag was never written.
    ssm.on(GetParameterCommand).rejects(new ParameterNotFound({ message: 'not found', $metadata: {} }));
    cfn.on(ListStackResourcesCommand).resolves({
      StackResourceSummaries: [
        { LogicalResourceId: 'RelayFailures', ResourceType: 'AWS::SQS::Queue', PhysicalResourceId: DLQ_URL },
        {
          LogicalResourceId: 'RelayMapping',
          ResourceType: 'AWS::Lambda::EventSourceMapping',
          PhysicalResourceId: UUID,
        },
      ].map((r) => ({ ...r, ResourceStatus: 'CREATE_COMPLETE' as const, LastUpdatedTimestamp: NOW })),
    });
    sqs.on(GetQueueUrlCommand).resolves({ QueueUrl: DLQ_URL });
    lambda.on(GetEventSourceMappingCommand).resolves({
      UUID,
      FunctionArn: `arn:aws:lambda:eu-west-1:123456789012:function:${FUNCTION}`,
      State: 'Enabled',
    });
    const record = awsInvocationRecord();
    const body = {
      ...record,
      DDBStreamBatchInfo: {
        ...(record.DDBStreamBatchInfo as Record<string, unknown>),
        startSequenceNumber: '100',
        endSequenceNumber: '200',
        batchSize: 2,
      },
    };
    sqs
      .on(ReceiveMessageCommand)
      .resolvesOnce({
        Messages: [
          {
            MessageId: 'm-1',
            ReceiptHandle: 'rh-m-1',
            Body: JSON.stringify(body),
            Attributes: { ApproximateReceiveCount: '1' },
          },
        ],
      })
      .resolves({ Messages: [] });
    streams.on(GetRecordsCommand).resolves({
      Records: [rawRecord('100', 'o-a'), rawRecord('200', 'o-b')],
      NextShardIterator: 'it-1',
    });
    lambda
      .on(InvokeCommand)
      .resolves({ StatusCode: 200, Payload: encode({ batchItemFailures: [] }) as never });
  });

  afterEach(() => {
    fs.rmSync(auditDir, { recursive: true, force: true });
  });

  afterAll(() => {
    process.env = savedEnv;
  });

  async function cli(argv: string[], prompt?: Prompt): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await run(argv, { out: (t) => out.push(t), err: (t) => err.push(t), prompt });
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  it('when listing, it shows each failed batch with its condition and sequence range and releases the messages', async () => {
    // Act
    const result = await cli(['dlq', 'list', 'outbox-relay']);

    // Assess
    expect(result.code).toBe(0);
    expect(result.out).toContain('tenang-unit-outbox-relay-failures: 1 failed batch(es) seen');
    expect(result.out).toMatch(/m-1 +RetryAttemptsExhausted +Unhandled +shardId-\S+ +100\.\.200 +2 /);
    expect(sqs).toHaveReceivedCommandWith(ChangeMessageVisibilityBatchCommand, {
      Entries: [{ Id: '0', ReceiptHandle: 'rh-m-1', VisibilityTimeout: 0 }],
    });
    expect(lambda).not.toHaveReceivedCommand(InvokeCommand);
  });

  it('when the operator answers no, it invokes nothing and makes the messages visible again', async () => {
    // Prepare
    const confirm = jest.fn().mockResolvedValue(false);

    // Act
    const result = await cli(['dlq', 'replay', 'outbox-relay'], { interactive: true, confirm });

    // Assess
    expect(result.code).toBe(0);
    expect(result.out).toContain('nothing changed');
    expect(confirm).toHaveBeenCalledWith(
      expect.stringContaining(`invoke ${FUNCTION} with 1 batch(es) (2 record(s)), leave 0`),
    );
    expect(lambda).not.toHaveReceivedCommand(InvokeCommand);
    expect(sqs).not.toHaveReceivedCommand(DeleteMessageCommand);
    expect(sqs).toHaveReceivedCommand(ChangeMessageVisibilityBatchCommand);
  });

  it('when a read is throttled (a third reader of the shard), the replay backs off, still replays, and reports the throttled read', async () => {
    // Prepare
    streams
      .on(GetRecordsCommand)
      .rejectsOnce(throttled())
      .resolves({ Records: [rawRecord('100', 'o-a'), rawRecord('200', 'o-b')], NextShardIterator: 'it-1' });

    // Act
    const json = await cli([
      'dlq',
      'replay',
      'outbox-relay',
      '--yes',
      '--json',
      '--audit-log',
      path.join(auditDir, 'j.jsonl'),
    ]);

    // Assess
    expect(json.code).toBe(0);
    expect(JSON.parse(json.out)).toMatchObject({
      summary: { replayed: 1, 'read-throttled': 0, failed: 0 },
      throttledReads: 1,
    });
    expect(lambda).toHaveReceivedCommandTimes(InvokeCommand, 1);
  });

  it('when replaying with --yes, it invokes the deployed function, deletes the message and writes the audit line', async () => {
    // Prepare
    const auditLog = path.join(auditDir, 'replay.jsonl');

    // Act
    const result = await cli(['dlq', 'replay', 'outbox-relay', '--yes', '--json', '--audit-log', auditLog]);

    // Assess
    expect(result.code).toBe(0);
    expect(JSON.parse(result.out)).toMatchObject({
      consumer: 'outbox-relay',
      functionName: FUNCTION,
      dryRun: false,
      summary: { replayed: 1, failed: 0 },
      throttledReads: 0,
      messages: [{ messageId: 'm-1', keys: ['o-a', 'o-b'], outcome: 'replayed' }],
    });
    expect(lambda).toHaveReceivedCommandWith(InvokeCommand, { FunctionName: FUNCTION });
    expect(sqs).toHaveReceivedCommandWith(DeleteMessageCommand, { ReceiptHandle: 'rh-m-1' });
    const lines = fs.readFileSync(auditLog, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({
      actor: 'tester',
      outcome: 'replayed',
      recordsRead: 2,
    });
  });

  it('when the consumer is paused, the replay refuses before reading the queue, and --while-paused replays anyway', async () => {
    // Prepare
    ssm.on(GetParameterCommand).resolves({
      Parameter: {
        Name: 'x',
        Value: JSON.stringify({
          paused: true,
          reason: 'redis maintenance',
          until: '2030-01-01T00:00:00.000Z',
        }),
      },
    });
    lambda.on(GetEventSourceMappingCommand).resolves({
      UUID,
      FunctionArn: `arn:aws:lambda:eu-west-1:123456789012:function:${FUNCTION}`,
      State: 'Disabled',
    });
    const auditLog = path.join(auditDir, 'paused.jsonl');

    // Act
    const refused = await cli(['dlq', 'replay', 'outbox-relay', '--yes', '--audit-log', auditLog]);
    const receivedWhenRefused = sqs.commandCalls(ReceiveMessageCommand).length;
    const invokedWhenRefused = lambda.commandCalls(InvokeCommand).length;
    const forced = await cli([
      'dlq',
      'replay',
      'outbox-relay',
      '--yes',
      '--while-paused',
      '--audit-log',
      auditLog,
    ]);
    const dry = await cli(['dlq', 'replay', 'outbox-relay', '--dry-run', '--audit-log', auditLog]);

    // Assess
    expect(refused.code).toBe(1);
    expect(refused.err).toContain(
      'outbox-relay is paused (redis maintenance, until 2030-01-01T00:00:00.000Z): a replay invokes',
    );
    expect(refused.err).toContain('tenang resume outbox-relay');
    expect([receivedWhenRefused, invokedWhenRefused]).toEqual([0, 0]);
    expect(dry.code).toBe(0);
    expect(dry.err).toContain('note: outbox-relay is paused');
    expect(forced.code).toBe(0);
    expect(lambda).toHaveReceivedCommandTimes(InvokeCommand, 1);
  });

  it('when the flag says running but the mapping is disabled, the replay refuses and names the state', async () => {
    // Prepare
    lambda.on(GetEventSourceMappingCommand).resolves({
      UUID,
      FunctionArn: `arn:aws:lambda:eu-west-1:123456789012:function:${FUNCTION}`,
      State: 'Disabled',
    });

    // Act
    const result = await cli(['dlq', 'replay', 'outbox-relay', '--yes']);

    // Assess
    expect(result.code).toBe(1);
    expect(result.err).toContain('outbox-relay is not paused, but its mapping is Disabled');
    expect(lambda).not.toHaveReceivedCommand(InvokeCommand);
  });

  it('when the function still fails, the replay exits 1 and the message stays', async () => {
    // Prepare
    lambda.on(InvokeCommand).resolves({
      StatusCode: 200,
      FunctionError: 'Unhandled',
      Payload: encode({ errorType: 'Error', errorMessage: 'boom' }) as never,
    });

    // Act
    const result = await cli([
      'dlq',
      'replay',
      'outbox-relay',
      '--yes',
      '--audit-log',
      path.join(auditDir, 'failed.jsonl'),
    ]);

    // Assess
    expect(result.code).toBe(1);
    expect(result.out).toContain('function-failed');
    expect(result.err).toContain('stay in tenang-unit-outbox-relay-failures');
    expect(sqs).not.toHaveReceivedCommand(DeleteMessageCommand);
  });

  it('when the name is neither a job type nor a stream consumer, it is a usage error naming both kinds', async () => {
    const result = await cli(['dlq', 'list', 'nobody']);
    expect(result.code).toBe(2);
    expect(result.err).toContain('job types: payment.capture');
    expect(result.err).toContain('stream consumers: cache-invalidator, outbox-relay');
  });

  it('when a job-type filter is given for a stream consumer, it is a usage error', async () => {
    const result = await cli(['dlq', 'replay', 'outbox-relay', '--dry-run', '--error-class', 'X']);
    expect(result.code).toBe(2);
    expect(result.err).toContain('--error-class');
  });

  it('when replaying a stream consumer without --yes and without a terminal, it is a usage error', async () => {
    const result = await cli(['dlq', 'replay', 'cache-invalidator']);
    expect(result.code).toBe(2);
    expect(result.err).toContain('--yes');
  });

  it('when asked for help, it says why replaying a whole batch is safe and what a lost one needs, by what the consumer declares', async () => {
    const result = await cli(['dlq', 'replay', '--help']);
    expect(result.code).toBe(0);
    expect(result.out).toContain('idempotent per record');
    expect(result.out).toContain('one that uses the cache');
    expect(result.out).toContain('the keys read are named');
  });
});
