/**
 * The local stream event source's iterator over a mocked DynamoDB Streams client: an idle shard
 * poller keeps reading with the iterator each empty read returns, and renews it (after the last
 * record read) only every ITERATOR_RENEW_MS. The reading itself is tested against moto in
 * test/integration/local-stream-source.test.ts.
 */
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import { SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { IDLE_WAIT_MS, ITERATOR_RENEW_MS, StreamEventSource } from '../../../lib/local/stream-event-source';

const streamsMock = mockClient(DynamoDBStreamsClient);
const STREAM_ARN = 'arn:aws:dynamodb:us-east-1:123456789012:table/orders/stream/2026-12-06T00:00:00.000';

beforeEach(() => {
  streamsMock.reset();
});

describe('Class: StreamEventSource', () => {
  it('when its shard stays empty, it reads on with the returned iterator and renews it once per ITERATOR_RENEW_MS', async () => {
    // Arrange
    streamsMock.on(DescribeStreamCommand).resolves({ StreamDescription: { Shards: [{ ShardId: 's1' }] } });
    let renewals = 0;
    streamsMock.on(GetShardIteratorCommand).callsFake(() => {
      renewals += 1;
      return { ShardIterator: `fresh-${renewals}` };
    });
    const iterators: string[] = [];
    streamsMock.on(GetRecordsCommand).callsFake((input: { ShardIterator: string }) => {
      iterators.push(input.ShardIterator);
      return { Records: [], NextShardIterator: `${input.ShardIterator}+` };
    });
    const source = new StreamEventSource(
      {
        uuid: 'u1',
        functionName: 'fn',
        streamArn: STREAM_ARN,
        batchSize: 10,
        bisectBatchOnError: false,
        retryAttempts: 2,
        maxRecordAgeSeconds: -1,
        reportBatchItemFailures: true,
        onFailureQueueUrl: undefined,
      },
      new DynamoDBStreamsClient({ region: 'us-east-1' }),
      new SQSClient({ region: 'us-east-1' }),
      { isEnabled: () => true, invoke: () => Promise.reject(new Error('no record was expected')) },
    );

    // Act
    await source.start();
    try {
      await new Promise((r) => setTimeout(r, ITERATOR_RENEW_MS + 5 * IDLE_WAIT_MS));
    } finally {
      await source.stop();
    }

    // Assess: about 12 reads in 3 s; renewing after each would be one GetShardIterator per read.
    expect(iterators.length).toBeGreaterThan(8);
    expect(renewals).toBe(2);
    expect(iterators.slice(0, 3)).toEqual(['fresh-1', 'fresh-1+', 'fresh-1++']);
    expect(iterators).toContain('fresh-2');
  });
});
