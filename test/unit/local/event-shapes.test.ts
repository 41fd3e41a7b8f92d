/**
 * The events the local platform builds have AWS's shape: the same fields, nesting and value
 * types as the examples in the AWS documentation (test/fixtures/aws-events).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Message } from '@aws-sdk/client-sqs';
import { toHttpApiEvent } from '../../../lib/local/http-api';
import { toSqsRecord } from '../../../lib/local/sqs-event';
import { toDynamoDbRecord } from '../../../lib/adapters/aws/stream-record';

const FIXTURES = path.join(__dirname, '..', '..', 'fixtures', 'aws-events');

function fixture(name: string): Record<string, unknown> {
  return JSON.parse(fs.readFileSync(path.join(FIXTURES, name), 'utf8')) as Record<string, unknown>;
}

/** Objects whose keys are data (attribute names, header names), not schema. */
const MAPS = new Set(['messageAttributes', 'headers', 'queryStringParameters', 'pathParameters']);
/** DynamoDB item images: attribute name → one typed attribute value. */
const IMAGES = new Set(['Keys', 'NewImage', 'OldImage']);
const ATTRIBUTE_TYPES = new Set(['S', 'N', 'B', 'BOOL', 'NULL', 'M', 'L', 'SS', 'NS', 'BS']);

/** A structural signature: keys and value types, recursively; maps by the shape of their values. */
function shape(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) return value.length === 0 ? ['empty'] : [shape(value[0])];
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  const entries = Object.entries(value as Record<string, unknown>).filter(([k]) => k !== '_source');
  if (IMAGES.has(key)) {
    const typed = entries.every(([, v]) => {
      const keys = Object.keys(v as object);
      return keys.length === 1 && ATTRIBUTE_TYPES.has(keys[0] ?? '');
    });
    return { '<image>': typed ? 'attribute-values' : 'not attribute values' };
  }
  if (MAPS.has(key)) return { '<map>': entries.length === 0 ? 'empty' : shape(entries[0]?.[1]) };
  return Object.fromEntries(entries.sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, shape(v, k)]));
}

describe('Event shapes', () => {
  it('when a received SQS message is turned into a record, it has the shape of AWS’s SQS event record', () => {
    // Prepare
    const message: Message = {
      MessageId: 'm-1',
      ReceiptHandle: 'rh',
      Body: '{}',
      MD5OfBody: 'md5',
      MD5OfMessageAttributes: 'md5a',
      Attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: '1',
        SenderId: 'AID',
        ApproximateFirstReceiveTimestamp: '2',
      },
      MessageAttributes: { attr: { DataType: 'String', StringValue: 'v' } },
    };
    const expected = (fixture('sqs-event.json').Records as unknown[])[0];

    // Act
    const record = toSqsRecord(message, 'arn:aws:sqs:us-east-1:123456789012:q');

    // Assess
    expect(shape(record)).toEqual(shape(expected));
  });

  it('when a stream record from GetRecords is turned into an event record, it has the shape of AWS’s DynamoDB stream record', () => {
    // Prepare
    const raw = {
      eventID: 'e-1',
      eventName: 'MODIFY' as const,
      eventVersion: '1.1',
      eventSource: 'aws:dynamodb',
      awsRegion: 'us-east-1',
      dynamodb: {
        ApproximateCreationDateTime: new Date('2026-01-01T00:00:00Z'),
        Keys: { orderId: { S: 'o-1' } },
        NewImage: { orderId: { S: 'o-1' } },
        OldImage: { orderId: { S: 'o-1' } },
        SequenceNumber: '100',
        SizeBytes: 42,
        StreamViewType: 'NEW_AND_OLD_IMAGES' as const,
      },
    };
    const expected = (fixture('dynamodb-stream-event.json').Records as unknown[])[0];

    // Act
    const record = toDynamoDbRecord(
      raw,
      'arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/x',
      'us-east-1',
    );

    // Assess
    expect(shape(record)).toEqual(shape(expected));
  });

  it('when an HTTP request is turned into an API Gateway event, it has the shape of payload format 2.0', () => {
    // Prepare
    const expected = fixture('http-api-v2-event.json');

    // Act
    const event = toHttpApiEvent(
      { method: 'POST', path: '/orders/{id}/payments' },
      {
        method: 'POST',
        path: '/orders/123/payments',
        query: 'parameter1=value1',
        headers: { 'user-agent': 'agent' },
        body: 'x',
      },
      { id: '123' },
    );

    // Assess
    expect(shape(event)).toEqual(shape(expected));
  });
});
