/**
 * The local SQS event source's done hook over a mocked SQS client: the ids it reports are those
 * DeleteMessageBatch deleted, so a latency measured to that moment (bench/latency.ts) never
 * counts a message that is still in the queue. The polling itself is tested against moto in
 * test/integration/local-event-source.test.ts.
 */
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import type { InvokeResult } from '../../../lib/local/function-host';
import { SqsEventSource } from '../../../lib/local/sqs-event-source';
import { receivedMessage } from '../../helpers/sqs-events';

const sqsMock = mockClient(SQSClient);

const OK: InvokeResult = { status: 'ok', result: { batchItemFailures: [] }, durationMs: 1, coldStart: false };

beforeEach(() => {
  sqsMock.reset();
});

describe('Class: SqsEventSource', () => {
  it('when a delete entry fails, the done hook is told only the ids that were deleted', async () => {
    // Arrange
    sqsMock.on(GetQueueAttributesCommand).resolves({ Attributes: { VisibilityTimeout: '30' } });
    let received = false;
    sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
      if (!received) {
        received = true;
        return {
          Messages: [receivedMessage('m1', 'r1'), receivedMessage('m2', 'r2'), receivedMessage('m3', 'r3')],
        };
      }
      // An empty long poll takes its time (and lets timers run).
      await new Promise((r) => setTimeout(r, 10));
      return { Messages: [] };
    });
    sqsMock.on(DeleteMessageBatchCommand).resolves({
      Successful: [{ Id: '0' }, { Id: '2' }],
      Failed: [{ Id: '1', Code: 'ReceiptHandleIsInvalid', SenderFault: true, Message: 'expired' }],
    });
    const told: string[][] = [];
    let deleted: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (deleted = resolve));
    const source = new SqsEventSource(
      {
        uuid: 'u1',
        functionName: 'fn',
        queueUrl: 'http://localhost/123456789012/q',
        queueArn: 'arn:aws:sqs:us-east-1:123456789012:q',
        batchSize: 10,
        batchingWindowSeconds: 0,
        maxConcurrency: 1,
        reportBatchItemFailures: true,
      },
      new SQSClient({ region: 'us-east-1' }),
      {
        isEnabled: () => true,
        invoke: () => Promise.resolve(OK),
        onDeleted: (ids) => {
          told.push([...ids]);
          deleted();
        },
      },
    );

    // Act
    source.start();
    try {
      await done;
    } finally {
      await source.stop();
    }

    // Assess
    expect(told).toEqual([['m1', 'm3']]);
    expect(source.stats.deleted).toBe(2);
  });
});
