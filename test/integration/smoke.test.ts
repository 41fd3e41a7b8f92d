/** Smoke test of the local platform: moto's SQS redrive and a real Redis behave as the design relies on. */
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type Redis from 'ioredis';
import { pollUntil } from '../../lib/local/poll';
import { redisClient, sqsClient, uniqueName } from '../helpers/aws';

const MAX_RECEIVE_COUNT = 2;
const DEADLINE_MS = 10_000;

describe('Local environment: moto SQS', () => {
  let sqs: SQSClient;
  let dlqUrl: string | undefined;
  let sourceUrl: string | undefined;

  beforeAll(async () => {
    sqs = sqsClient();
    dlqUrl = await createFifoQueue(sqs, uniqueName('smoke-dlq'), {});
    const dlqArn = await queueAttribute(sqs, dlqUrl, 'QueueArn');
    sourceUrl = await createFifoQueue(sqs, uniqueName('smoke-src'), {
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: MAX_RECEIVE_COUNT }),
    });
  });

  afterAll(async () => {
    for (const url of [sourceUrl, dlqUrl]) {
      if (url !== undefined) await sqs.send(new DeleteQueueCommand({ QueueUrl: url }));
    }
    sqs.destroy();
  });

  describe('when a FIFO message is received maxReceiveCount times without being deleted', () => {
    it('moves it to the dead-letter queue with its body intact and leaves the source queue empty', async () => {
      // Prepare
      const source = requireUrl(sourceUrl);
      const dlq = requireUrl(dlqUrl);
      const body = JSON.stringify({ orderId: 'order-1', amount: 1250, note: 'smoke ✓' });
      await sqs.send(
        new SendMessageCommand({
          QueueUrl: source,
          MessageBody: body,
          MessageGroupId: 'order-1',
          MessageDeduplicationId: uniqueName('dedup'),
        }),
      );

      // Act: receive without deleting; VisibilityTimeout 0 makes it visible again at once,
      // until the receive that would exceed maxReceiveCount redrives it instead.
      const receiveCounts: string[] = [];
      await pollUntil(
        async () => {
          const { Messages = [] } = await sqs.send(
            new ReceiveMessageCommand({
              QueueUrl: source,
              VisibilityTimeout: 0,
              WaitTimeSeconds: 0,
              MessageSystemAttributeNames: ['ApproximateReceiveCount'],
            }),
          );
          for (const message of Messages)
            receiveCounts.push(message.Attributes?.ApproximateReceiveCount ?? '?');
          return Messages.length === 0 ? true : undefined;
        },
        { description: 'the source queue to stop returning the message', deadlineMs: DEADLINE_MS },
      );
      const redriven = await pollUntil(
        async () => {
          const { Messages = [] } = await sqs.send(
            new ReceiveMessageCommand({ QueueUrl: dlq, WaitTimeSeconds: 0 }),
          );
          return Messages[0];
        },
        { description: 'the message to reach the dead-letter queue', deadlineMs: DEADLINE_MS },
      );

      // Assess
      expect(receiveCounts).toEqual(['1', '2']);
      expect(redriven.Body).toBe(body);
      expect(await queueAttribute(sqs, source, 'ApproximateNumberOfMessages')).toBe('0');
      expect(await queueAttribute(sqs, source, 'ApproximateNumberOfMessagesNotVisible')).toBe('0');
    });
  });
});

describe('Local environment: Redis', () => {
  let redis: Redis;
  const key = uniqueName('smoke-key');

  beforeAll(() => {
    redis = redisClient();
  });

  afterAll(async () => {
    await redis.del(key);
    await redis.quit();
  });

  describe('when a key is written', () => {
    it('reads the same value back', async () => {
      // Prepare
      const value = `value-${key}`;

      // Act
      await redis.set(key, value, 'EX', 60);
      const read = await redis.get(key);

      // Assess
      expect(read).toBe(value);
    });
  });
});

async function createFifoQueue(
  sqs: SQSClient,
  name: string,
  attributes: Record<string, string>,
): Promise<string> {
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({ QueueName: `${name}.fifo`, Attributes: { FifoQueue: 'true', ...attributes } }),
  );
  return requireUrl(QueueUrl);
}

async function queueAttribute(
  sqs: SQSClient,
  queueUrl: string,
  name: 'QueueArn' | 'ApproximateNumberOfMessages' | 'ApproximateNumberOfMessagesNotVisible',
): Promise<string> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: [name] }),
  );
  const value = Attributes?.[name];
  if (value === undefined) throw new Error(`queue ${queueUrl} has no attribute ${name}`);
  return value;
}

function requireUrl(url: string | undefined): string {
  if (url === undefined) throw new Error('the queue was not created (see beforeAll)');
  return url;
}
