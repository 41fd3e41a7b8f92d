/**
 * Real SQS messages as Lambda SQS events: receive from a queue (every system and message
 * attribute) and build records exactly as the event source mapping does, so a handler under test
 * sees what it would see in AWS — receipt handles that work, receive counts that grow, FIFO
 * group ids and sequence numbers.
 */
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
// The records are built by the local platform's conversion: one shape for tests and platform.
import { toSqsRecord } from '../../lib/local/sqs-event';

// Shared with the benchmarks, which import nothing from test/.
export { lambdaContext, runningLambdaContext } from '../../lib/local/lambda-context';

/** Options of receiveSqsEvent. */
export interface ReceiveOptions {
  /** At most 10 (SQS's limit per receive). @default 10 */
  readonly maxMessages?: number;
  /** Long-poll wait. @default 0 */
  readonly waitTimeSeconds?: number;
  /** Visibility of the received messages, as the queue's would be. @default - the queue's */
  readonly visibilityTimeout?: number;
}

const arnCache = new Map<string, string>();

/** The queue's ARN (cached per URL). */
export async function queueArn(sqs: SQSClient, queueUrl: string): Promise<string> {
  const cached = arnCache.get(queueUrl);
  if (cached !== undefined) return cached;
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn'] }),
  );
  const arn = Attributes?.QueueArn;
  if (arn === undefined) throw new Error(`queue ${queueUrl} reported no QueueArn`);
  arnCache.set(queueUrl, arn);
  return arn;
}

/** Receives one batch (possibly empty) with every attribute, as an SQSEvent. */
export async function receiveSqsEvent(
  sqs: SQSClient,
  queueUrl: string,
  options: ReceiveOptions = {},
): Promise<SQSEvent> {
  const arn = await queueArn(sqs, queueUrl);
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: options.maxMessages ?? 10,
      WaitTimeSeconds: options.waitTimeSeconds ?? 0,
      VisibilityTimeout: options.visibilityTimeout,
      MessageSystemAttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
  );
  return { Records: Messages.map((m) => toSqsRecord(m, arn)) };
}

/**
 * Receives until `count` messages were received (several receives; FIFO queues hand out one
 * group's messages per receive), or throws at the deadline with what it has.
 */
export async function receiveSqsEventOf(
  sqs: SQSClient,
  queueUrl: string,
  count: number,
  options: ReceiveOptions & { readonly deadlineMs?: number } = {},
): Promise<SQSEvent> {
  const records: SQSRecord[] = [];
  const deadline = Date.now() + (options.deadlineMs ?? 10_000);
  while (records.length < count) {
    if (Date.now() > deadline) {
      throw new Error(`received ${records.length} of ${count} messages from ${queueUrl} before the deadline`);
    }
    const { Records } = await receiveSqsEvent(sqs, queueUrl, {
      ...options,
      maxMessages: Math.min(10, count - records.length),
      waitTimeSeconds: options.waitTimeSeconds ?? 1,
    });
    records.push(...Records);
  }
  return { Records: records };
}

/**
 * Does what the event source mapping does after the handler returns: deletes every record not
 * reported as a batch item failure. Returns the message ids it deleted.
 */
export async function settleBatch(
  sqs: SQSClient,
  queueUrl: string,
  event: SQSEvent,
  response: SQSBatchResponse | undefined,
): Promise<string[]> {
  const failed = new Set((response?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
  const done = event.Records.filter((r) => !failed.has(r.messageId));
  for (let i = 0; i < done.length; i += 10) {
    const chunk = done.slice(i, i + 10);
    const { Failed = [] } = await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: chunk.map((r, n) => ({ Id: String(n), ReceiptHandle: r.receiptHandle })),
      }),
    );
    if (Failed.length > 0)
      throw new Error(`could not delete ${Failed.length} handled messages from ${queueUrl}`);
  }
  return done.map((r) => r.messageId);
}

/** A message as SQS hands it to the Lambda service's poller, for a fake SQS client: the system attributes a record needs. */
export function receivedMessage(messageId: string, receiptHandle: string): Message {
  return {
    MessageId: messageId,
    ReceiptHandle: receiptHandle,
    Body: '{}',
    Attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: '1700000000000',
      SenderId: 'AIDAEXAMPLE',
      ApproximateFirstReceiveTimestamp: '1700000000001',
    },
  };
}
