/**
 * SQS messages as the records of a Lambda SQS event, exactly as the event source mapping builds
 * them (AWS's event shape: camelCase message attributes, binary as base64, list fields always
 * present, FIFO group ids and sequence numbers). The local platform's event source mappings and
 * the tests both use it.
 */
import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { SQSMessageAttribute, SQSRecord, SQSRecordAttributes } from 'aws-lambda';

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
