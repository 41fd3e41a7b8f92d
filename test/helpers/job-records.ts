/** SQS records carrying job envelopes, shaped as Lambda delivers them, for handler unit tests. */
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { makeEnvelope } from '../../lib/core/envelope';
import { type JobTypeName, type PayloadOf } from '../../examples/reference/domain/payloads';

/** Options of jobRecord. */
export interface JobRecordOptions<T extends JobTypeName> {
  readonly type: T;
  readonly payload: PayloadOf<T>;
  readonly messageId: string;
  /** @default 1 */
  readonly attempt?: number;
  /** @default 2030-06-01T11:59:00Z */
  readonly enqueuedAt?: Date;
  readonly queueArn?: string;
}

/** One standard-queue record whose body is a valid envelope of `type`. */
export function jobRecord<T extends JobTypeName>(opts: JobRecordOptions<T>): SQSRecord {
  const enqueuedAt = opts.enqueuedAt ?? new Date('2030-06-01T11:59:00.000Z');
  const body = JSON.stringify(
    makeEnvelope(opts.type, opts.payload, {
      idempotencyKey: `${opts.type}:${opts.messageId}`,
      correlationId: `corr-${opts.messageId}`,
      now: enqueuedAt,
    }),
  );
  return {
    messageId: opts.messageId,
    receiptHandle: `receipt-${opts.messageId}`,
    body,
    attributes: {
      ApproximateReceiveCount: String(opts.attempt ?? 1),
      SentTimestamp: String(enqueuedAt.getTime()),
      SenderId: 'AROAEXAMPLE:outbox-relay',
      ApproximateFirstReceiveTimestamp: String(enqueuedAt.getTime() + 1_000),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: opts.queueArn ?? 'arn:aws:sqs:eu-west-1:123456789012:tenang-unit-queue',
    awsRegion: 'eu-west-1',
  };
}

/** An event of `records`. */
export function sqsEvent(...records: SQSRecord[]): SQSEvent {
  return { Records: records };
}
