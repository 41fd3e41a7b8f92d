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
import { SqsEventSource, type SqsMappingSpec } from '../../../lib/local/sqs-event-source';
import { receivedMessage } from '../../helpers/sqs-events';

const sqsMock = mockClient(SQSClient);

const OK: InvokeResult = { status: 'ok', result: { batchItemFailures: [] }, durationMs: 1, coldStart: false };

beforeEach(() => {
  sqsMock.reset();
});

/** A mapping of queue `q` to function `fn` with its batch size and pollers. */
function mapping(size: Pick<SqsMappingSpec, 'batchSize' | 'maxConcurrency'>): SqsMappingSpec {
  return {
    uuid: 'u1',
    functionName: 'fn',
    queueUrl: 'http://localhost/123456789012/q',
    queueArn: 'arn:aws:sqs:us-east-1:123456789012:q',
    batchingWindowSeconds: 0,
    reportBatchItemFailures: true,
    ...size,
  };
}

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
      mapping({ batchSize: 10, maxConcurrency: 1 }),
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

  it('when the queue is empty, one poller long-polls and the others wait; when a receive finds work, they all poll again', async () => {
    // Arrange: an empty long poll takes 20 ms; after `work` is set, every receive gets a message.
    sqsMock.on(GetQueueAttributesCommand).resolves({ Attributes: { VisibilityTimeout: '30' } });
    sqsMock.on(DeleteMessageBatchCommand).resolves({ Successful: [{ Id: '0' }] });
    let work = false;
    let receives = 0;
    let sequence = 0;
    const polling = new Set<number>();
    let mostAtOnce = 0;
    sqsMock.on(ReceiveMessageCommand).callsFake(async () => {
      receives += 1;
      const me = ++sequence;
      polling.add(me);
      mostAtOnce = Math.max(mostAtOnce, polling.size);
      await new Promise((r) => setTimeout(r, 20));
      polling.delete(me);
      if (!work) return { Messages: [] };
      return { Messages: [receivedMessage(`m${me}`, `r${me}`)] };
    });
    const invoked: string[] = [];
    const source = new SqsEventSource(
      mapping({ batchSize: 1, maxConcurrency: 5 }),
      new SQSClient({ region: 'us-east-1' }),
      {
        isEnabled: () => true,
        invoke: async (event) => {
          invoked.push(...event.Records.map((r) => r.messageId));
          // A slow invocation: the other pollers must take the next messages meanwhile.
          await new Promise((r) => setTimeout(r, 50));
          return OK;
        },
      },
    );

    // Act
    source.start();
    let idleReceives = 0;
    let idleMostAtOnce = 0;
    try {
      // All five poll at first; once their first empty receives are back, one goes on.
      await new Promise((r) => setTimeout(r, 100));
      receives = 0;
      mostAtOnce = 0;
      await new Promise((r) => setTimeout(r, 400));
      idleReceives = receives;
      idleMostAtOnce = mostAtOnce;
      mostAtOnce = 0;
      work = true;
      await new Promise((r) => setTimeout(r, 300));
    } finally {
      work = false;
      await source.stop();
    }

    // Assess: idle, five pollers polling each 20 ms would make about 100 receives in 400 ms.
    expect(idleMostAtOnce).toBe(1);
    expect(idleReceives).toBeLessThan(40);
    // With work, several pollers receive at once and deliver side by side.
    expect(mostAtOnce).toBeGreaterThan(1);
    expect(invoked.length).toBeGreaterThan(6);
  });
});
