/**
 * DynamoDB stream records: one as GetRecords returns it, converted to the record of a Lambda
 * stream event (what the event source mapping delivers; the local platform's stream mapping and
 * the operator's stream replay, lib/ops/dlq/stream-replay.ts, build their events with it), and
 * what any consumer reads of a record whatever its table holds: its batch item identifier and
 * the key of the item it changed.
 */
import type { _Record as StreamRecordRaw } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord } from 'aws-lambda';

/** Converts a stream record from GetRecords into the Lambda event record shape. */
export function toDynamoDbRecord(raw: StreamRecordRaw, streamArn: string, region: string): DynamoDBRecord {
  const d = raw.dynamodb ?? {};
  return {
    eventID: raw.eventID,
    eventName: raw.eventName as DynamoDBRecord['eventName'],
    eventVersion: raw.eventVersion ?? '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: raw.awsRegion ?? region,
    eventSourceARN: streamArn,
    dynamodb: {
      ApproximateCreationDateTime:
        d.ApproximateCreationDateTime === undefined
          ? undefined
          : Math.floor(new Date(d.ApproximateCreationDateTime).getTime() / 1000),
      Keys: d.Keys as never,
      NewImage: d.NewImage as never,
      OldImage: d.OldImage as never,
      SequenceNumber: d.SequenceNumber,
      SizeBytes: d.SizeBytes,
      StreamViewType: d.StreamViewType as never,
    },
  };
}

/** The sequence number Lambda uses as a stream record's batch item identifier. */
export function sequenceNumberOf(record: DynamoDBRecord): string {
  return record.dynamodb?.SequenceNumber ?? 'unknown';
}

/**
 * The partition key of the item `record` changed, as text (string and number keys); undefined
 * when the record has no such key.
 */
export function streamItemKey(record: DynamoDBRecord, partitionKey: string): string | undefined {
  const key = record.dynamodb?.Keys?.[partitionKey];
  return key?.S ?? key?.N;
}
