/**
 * Reading a DLQ without consuming it. SQS cannot peek: a message is received (hidden for a
 * short visibility) and made visible again at once with ChangeMessageVisibility 0. Each look
 * raises the message's receive count; DLQs have no redrive, so that changes nothing.
 */
import {
  ChangeMessageVisibilityBatchCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { DLQ_ATTRIBUTE } from '../../adapters/aws/sqs-job-runner';
import type { DeadLetter } from '../../core/replay';

/** A received DLQ message. */
export interface ReceivedDeadLetter extends DeadLetter {
  readonly receiptHandle: string;
  /** FIFO message group. */
  readonly groupId: string | undefined;
  readonly receiveCount: number;
  readonly jobType: string | undefined;
}

const date = (text: string | undefined): Date | undefined => {
  if (text === undefined) return undefined;
  const d = /^[0-9]+$/.test(text) ? new Date(Number(text)) : new Date(text);
  return Number.isNaN(d.getTime()) ? undefined : d;
};

function correlationFromBody(body: string): string | undefined {
  try {
    const json = JSON.parse(body) as { correlationId?: unknown };
    return typeof json.correlationId === 'string' ? json.correlationId : undefined;
  } catch {
    return undefined;
  }
}

/** Reads the failure context the job runner attached (DLQ_ATTRIBUTE). */
export function toDeadLetter(m: Message): ReceivedDeadLetter {
  const attr = (name: string): string | undefined => m.MessageAttributes?.[name]?.StringValue;
  const attempts = attr(DLQ_ATTRIBUTE.attempts);
  const body = m.Body ?? '';
  return {
    messageId: m.MessageId ?? '',
    receiptHandle: m.ReceiptHandle ?? '',
    body,
    errorClass: attr(DLQ_ATTRIBUTE.errorClass),
    errorMessage: attr(DLQ_ATTRIBUTE.errorMessage),
    attempts: attempts === undefined ? undefined : Number(attempts),
    firstFailureAt: date(attr(DLQ_ATTRIBUTE.firstFailureAt)),
    lastFailureAt: date(attr(DLQ_ATTRIBUTE.lastFailureAt)),
    correlationId: attr(DLQ_ATTRIBUTE.correlationId) ?? correlationFromBody(body),
    sentAt: date(m.Attributes?.SentTimestamp),
    groupId: m.Attributes?.MessageGroupId,
    receiveCount: Number(m.Attributes?.ApproximateReceiveCount ?? 0),
    jobType: attr(DLQ_ATTRIBUTE.jobType),
  };
}

/**
 * Receives up to `max` messages, each hidden for `visibilitySeconds` so one pass never sees a
 * message twice. Stops at the first empty answer after a short wait.
 * FIFO: SQS hands out no more of a group while one of its messages is hidden, so a pass sees at
 * most one batch per group.
 */
export async function receiveDeadLetters(
  sqs: SQSClient,
  url: string,
  opts: { readonly max: number; readonly visibilitySeconds: number },
): Promise<ReceivedDeadLetter[]> {
  const received: ReceivedDeadLetter[] = [];
  let emptyAnswers = 0;
  while (received.length < opts.max && emptyAnswers < 2) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: url,
        MaxNumberOfMessages: Math.min(10, opts.max - received.length),
        VisibilityTimeout: opts.visibilitySeconds,
        WaitTimeSeconds: emptyAnswers === 0 ? 0 : 1,
        MessageAttributeNames: ['All'],
        MessageSystemAttributeNames: ['All'],
      }),
    );
    if (Messages.length === 0) emptyAnswers += 1;
    else emptyAnswers = 0;
    for (const m of Messages) received.push(toDeadLetter(m));
  }
  return received;
}

/** Makes messages visible again at once (visibility 0); returns the ids SQS refused. */
export async function releaseDeadLetters(
  sqs: SQSClient,
  url: string,
  messages: readonly ReceivedDeadLetter[],
): Promise<string[]> {
  const refused: string[] = [];
  for (let i = 0; i < messages.length; i += 10) {
    const batch = messages.slice(i, i + 10);
    const out = await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: url,
        Entries: batch.map((m, n) => ({
          Id: String(n),
          ReceiptHandle: m.receiptHandle,
          VisibilityTimeout: 0,
        })),
      }),
    );
    for (const f of out.Failed ?? []) refused.push(batch[Number(f.Id)]?.messageId ?? String(f.Id));
  }
  return refused;
}
