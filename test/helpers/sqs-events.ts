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
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type {
  Context,
  SQSBatchResponse,
  SQSEvent,
  SQSMessageAttribute,
  SQSRecord,
  SQSRecordAttributes,
} from 'aws-lambda';

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

/** One received message as the event source mapping's record. */
export function toSqsRecord(message: Message, eventSourceARN: string): SQSRecord {
  if (message.MessageId === undefined || message.ReceiptHandle === undefined) {
    throw new Error('a received message lacks its MessageId or ReceiptHandle');
  }
  const region = eventSourceARN.split(':')[3] ?? '';
  const record: SQSRecord = {
    messageId: message.MessageId,
    receiptHandle: message.ReceiptHandle,
    body: message.Body ?? '',
    attributes: systemAttributes(message.Attributes ?? {}),
    messageAttributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [name, messageAttribute(value)]),
    ),
    md5OfBody: message.MD5OfBody ?? '',
    eventSource: 'aws:sqs',
    eventSourceARN,
    awsRegion: region,
  };
  // Present in AWS's records only when the message has attributes.
  if (message.MD5OfMessageAttributes !== undefined)
    record.md5OfMessageAttributes = message.MD5OfMessageAttributes;
  return record;
}

function systemAttributes(attributes: Record<string, string>): SQSRecordAttributes {
  const required = (name: string): string => {
    const value = attributes[name];
    if (value === undefined) throw new Error(`a received message lacks the system attribute ${name}`);
    return value;
  };
  const result: SQSRecordAttributes = {
    ApproximateReceiveCount: required('ApproximateReceiveCount'),
    SentTimestamp: required('SentTimestamp'),
    SenderId: required('SenderId'),
    ApproximateFirstReceiveTimestamp: required('ApproximateFirstReceiveTimestamp'),
  };
  const optional = [
    'SequenceNumber',
    'MessageGroupId',
    'MessageDeduplicationId',
    'AWSTraceHeader',
    'DeadLetterQueueSourceArn',
  ] as const;
  for (const name of optional) {
    const value = attributes[name];
    if (value !== undefined) result[name] = value;
  }
  return result;
}

/** Lambda's shape: camelCase, binary as base64, the list fields always present. */
function messageAttribute(value: MessageAttributeValue): SQSMessageAttribute {
  const attribute: SQSMessageAttribute = {
    dataType: value.DataType ?? 'String',
    stringListValues: value.StringListValues ?? [],
    binaryListValues: (value.BinaryListValues ?? []).map((b) => Buffer.from(b).toString('base64')),
  };
  if (value.StringValue !== undefined) attribute.stringValue = value.StringValue;
  if (value.BinaryValue !== undefined)
    attribute.binaryValue = Buffer.from(value.BinaryValue).toString('base64');
  return attribute;
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

/** A Lambda context whose remaining time is fixed (Powertools idempotency bases its in-progress expiry on it). */
export function lambdaContext(remainingMs = 30_000, functionName = 'payment-consumer-test'): Context {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId: `req-${Date.now().toString(36)}`,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'test',
    getRemainingTimeInMillis: () => remainingMs,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
