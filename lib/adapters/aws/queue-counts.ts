/** A queue's message counts, as GetQueueAttributes reports them (approximate, as on AWS). */
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';

/** Visible, in-flight (received, not deleted) and delayed messages of a queue. */
export interface QueueCounts {
  readonly visible: number;
  readonly inFlight: number;
  readonly delayed: number;
}

/** Reads a queue's counts in one call. */
export async function queueCounts(sqs: SQSClient, queueUrl: string): Promise<QueueCounts> {
  const { Attributes: a = {} } = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: queueUrl,
      AttributeNames: [
        'ApproximateNumberOfMessages',
        'ApproximateNumberOfMessagesNotVisible',
        'ApproximateNumberOfMessagesDelayed',
      ],
    }),
  );
  return {
    visible: Number(a.ApproximateNumberOfMessages ?? 0),
    inFlight: Number(a.ApproximateNumberOfMessagesNotVisible ?? 0),
    delayed: Number(a.ApproximateNumberOfMessagesDelayed ?? 0),
  };
}
