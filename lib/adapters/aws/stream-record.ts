/**
 * A DynamoDB stream record as GetRecords returns it, converted to the record of a Lambda stream
 * event: what the event source mapping delivers. The local platform's stream mapping and the
 * operator's stream replay (lib/ops/dlq/stream-replay.ts) build their events with it.
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
