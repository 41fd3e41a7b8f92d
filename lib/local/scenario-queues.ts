/**
 * What every scenario incident needs of time and queues, whichever traffic it acts on: waiting
 * until the plan's moment (or an abort), a job type's queues and consumer as incidents address
 * them, and the queue's visibility timeout (read for the drain's deadline, lowered while a crash
 * is armed so a short run sees the batch come back).
 */
import { GetQueueAttributesCommand, SetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';

/** A job type's queues and consumer, as incidents address them. */
export interface IncidentQueue {
  readonly jobType: string;
  readonly queueUrl: string;
  readonly dlqUrl: string;
  readonly fifo: boolean;
  readonly functionName: string;
  readonly functionTimeoutSeconds: number;
}

/** Waits `ms`, or less when `signal` aborts; true when the whole wait passed. */
export function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const timer = setTimeout(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve(true);
      },
      Math.max(0, ms),
    );
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** A queue's visibility timeout as it is now, s. @throws Error when the queue has none */
export async function readVisibilityTimeout(sqs: SQSClient, queueUrl: string): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['VisibilityTimeout'] }),
  );
  const value = Number(Attributes?.VisibilityTimeout);
  if (!Number.isFinite(value)) throw new Error(`${queueUrl} has no VisibilityTimeout`);
  return value;
}

/** Sets a queue's visibility timeout, s. */
export async function setVisibilityTimeout(sqs: SQSClient, queueUrl: string, seconds: number): Promise<void> {
  await sqs.send(
    new SetQueueAttributesCommand({ QueueUrl: queueUrl, Attributes: { VisibilityTimeout: String(seconds) } }),
  );
}
