/**
 * An SQS event source mapping, played locally the way the Lambda service plays it: pollers up to
 * the mapping's maximum concurrency, batches up to its size within its batching window, one
 * invocation per batch, and on return: with ReportBatchItemFailures only the reported messages
 * stay in the queue (the rest are deleted); a failed, timed-out or crashed invocation leaves the
 * whole batch to reappear after the visibility timeout. FIFO ordering needs nothing extra: SQS
 * hands out no message of a group while another of that group is in flight. Disabling the mapping
 * stops new polls; a poll already waiting when it was disabled still delivers what it receives,
 * as the Lambda service does, and `busy` stays true until that delivery is done (the control
 * plane reports the mapping Disabling until then, Disabled after).
 *
 * An idle mapping long-polls with one poller, not all of them: a poller whose receive came back
 * empty while another was receiving waits until a receive finds messages (then every poller
 * polls) or PARKED_POLLER_MS. The last poller to come back empty never waits, so one is always
 * receiving unless all are delivering. Every poller long-polling an empty queue was 20
 * ReceiveMessage calls a second on an idle reference platform, 40% of its requests to moto.
 */
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { InvokeResult } from './function-host';
import { toSqsRecord } from './sqs-event';

/** A mapping's settings, as deployed (ListEventSourceMappings). */
export interface SqsMappingSpec {
  readonly uuid: string;
  readonly functionName: string;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly batchSize: number;
  readonly batchingWindowSeconds: number;
  /** ScalingConfig.MaximumConcurrency; AWS scales to 1000 without it, locally we cap lower. */
  readonly maxConcurrency: number;
  readonly reportBatchItemFailures: boolean;
}

/** What the mapping drives. */
export interface SqsMappingHooks {
  /** The mapping's Enabled state, as the flag reconciler set it. */
  isEnabled(): boolean;
  invoke(event: SQSEvent): Promise<InvokeResult>;
  /**
   * Told after each DeleteMessageBatch with the ids it deleted (not its failed entries): the
   * moment a job is done, for latency figures (bench/latency.ts). @default none
   */
  onDeleted?(messageIds: readonly string[]): void;
}

/** Counters for the status view and the report. */
export interface SqsMappingStats {
  batches: number;
  messages: number;
  deleted: number;
  returned: number;
  invocationErrors: number;
}

const MAX_RECEIVE = 10;
const IDLE_WAIT_MS = 200;
const VISIBILITY_REFRESH_MS = 5_000;
/** Longest a parked poller waits before it polls again by itself, ms. */
export const PARKED_POLLER_MS = 10_000;

/** The messages of a batch that must stay in the queue after an invocation. */
export function failedMessageIds(
  result: InvokeResult,
  event: SQSEvent,
  reportBatchItemFailures: boolean,
): Set<string> {
  const all = new Set(event.Records.map((r) => r.messageId));
  if (result.status !== 'ok') return all;
  if (!reportBatchItemFailures) return new Set();
  const response = result.result as Partial<SQSBatchResponse> | null | undefined;
  const failures = response?.batchItemFailures;
  if (failures === undefined) return new Set();
  if (!Array.isArray(failures)) return all;
  const ids = new Set<string>();
  for (const f of failures) {
    const id = (f as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    // AWS fails the whole batch when a reported id is empty or not in the batch.
    if (typeof id !== 'string' || !all.has(id)) return all;
    ids.add(id);
  }
  return ids;
}

/** One SQS mapping's pollers. */
export class SqsEventSource {
  public readonly stats: SqsMappingStats = {
    batches: 0,
    messages: 0,
    deleted: 0,
    returned: 0,
    invocationErrors: 0,
  };
  private running = false;
  private workers: Promise<void>[] = [];
  private visibility: { seconds: number | undefined; readAt: number } = { seconds: undefined, readAt: 0 };
  private acksToLose = 0;
  /** Pollers between the start of a poll and the end of its delivery. */
  private active = 0;
  /** Pollers in a receive (its long polls within the batching window) right now. */
  private receiving = 0;
  /** Wake-ups of the pollers parked after an empty receive. */
  private parked: (() => void)[] = [];

  public constructor(
    public readonly spec: SqsMappingSpec,
    private readonly sqs: SQSClient,
    private readonly hooks: SqsMappingHooks,
    private readonly log: (line: string) => void = () => undefined,
  ) {}

  /** Starts the pollers. */
  public start(): void {
    if (this.running) return;
    this.running = true;
    this.workers = Array.from({ length: this.spec.maxConcurrency }, () => this.poll());
  }

  /**
   * The next `batches` successful invocations are not acknowledged: their messages are not
   * deleted and return after the visibility timeout, as when the poller dies between the
   * function's answer and DeleteMessageBatch (the chaos suite's "after completion, before the delete").
   */
  public loseAcks(batches: number): void {
    this.acksToLose = Math.max(0, batches);
  }

  /** Stops polling and waits for in-flight batches to finish. */
  public async stop(): Promise<void> {
    this.running = false;
    this.wake(this.parked.length);
    await Promise.all(this.workers);
    this.workers = [];
  }

  /**
   * True while a poller is receiving or delivering: after the mapping is disabled, until the
   * polls begun before it have delivered what they received.
   */
  public get busy(): boolean {
    return this.active > 0;
  }

  private async poll(): Promise<void> {
    while (this.running) {
      if (!this.hooks.isEnabled()) {
        await sleep(IDLE_WAIT_MS);
        continue;
      }
      this.active += 1;
      let empty = false;
      try {
        const messages = await this.receive();
        empty = messages.length === 0;
        if (!empty) await this.deliver(messages);
      } catch (error) {
        this.log(`${this.spec.functionName}: poll failed: ${(error as Error).message}`);
        await sleep(IDLE_WAIT_MS * 5);
      } finally {
        this.active -= 1;
      }
      // Another poller is long-polling the same empty queue: this one waits until it is needed.
      if (empty && this.receiving > 0 && this.running) await this.park();
    }
  }

  /** receiveBatch, counted in `receiving`; wakes the parked pollers when there is work. */
  private async receive(): Promise<Message[]> {
    this.receiving += 1;
    let messages: Message[] = [];
    try {
      messages = await this.receiveBatch();
      return messages;
    } finally {
      this.receiving -= 1;
      // There is work, and this poller leaves to deliver it: every parked poller polls again.
      if (messages.length > 0) this.wake(this.parked.length);
    }
  }

  /** Waits until woken, or PARKED_POLLER_MS. */
  private park(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, PARKED_POLLER_MS);
      const self = this.parked;
      function done(): void {
        clearTimeout(timer);
        const i = self.indexOf(done);
        if (i >= 0) self.splice(i, 1);
        resolve();
      }
      this.parked.push(done);
    });
  }

  /** Wakes up to `count` parked pollers. */
  private wake(count: number): void {
    for (const done of this.parked.slice(0, count)) done();
  }

  /** A batch call's failed entries, which the SDK returns rather than throws. */
  private logFailedEntries(
    action: string,
    failed: readonly { Id?: string; Code?: string; Message?: string }[],
  ): void {
    if (failed.length === 0) return;
    const why = failed.map((f) => `${f.Id}: ${f.Code ?? '?'} ${f.Message ?? ''}`.trim()).join('; ');
    this.log(`${this.spec.functionName}: ${action} failed for ${failed.length} message(s): ${why}`);
  }

  /**
   * The queue's visibility timeout, re-read every few seconds and passed explicitly on each
   * receive, as the Lambda service uses the queue's current setting (moto's JSON-protocol
   * receive otherwise keeps using an older value after SetQueueAttributes).
   */
  private async visibilityTimeout(): Promise<number | undefined> {
    if (Date.now() - this.visibility.readAt > VISIBILITY_REFRESH_MS) {
      const { Attributes } = await this.sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl: this.spec.queueUrl,
          AttributeNames: ['VisibilityTimeout'],
        }),
      );
      const seconds = Number(Attributes?.VisibilityTimeout);
      this.visibility = { seconds: Number.isFinite(seconds) ? seconds : undefined, readAt: Date.now() };
    }
    return this.visibility.seconds;
  }

  /** Receives up to batchSize messages within the batching window (cut short by a pause). */
  private async receiveBatch(): Promise<Message[]> {
    const batch: Message[] = [];
    const windowEnds = Date.now() + this.spec.batchingWindowSeconds * 1000;
    do {
      const { Messages = [] } = await this.sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: this.spec.queueUrl,
          MaxNumberOfMessages: Math.min(MAX_RECEIVE, this.spec.batchSize - batch.length),
          WaitTimeSeconds: 1,
          VisibilityTimeout: await this.visibilityTimeout(),
          MessageSystemAttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
      );
      batch.push(...Messages);
      if (Messages.length === 0 && batch.length === 0) return batch;
    } while (
      this.running &&
      this.hooks.isEnabled() &&
      batch.length < this.spec.batchSize &&
      Date.now() < windowEnds
    );
    return batch;
  }

  private async deliver(messages: readonly Message[]): Promise<void> {
    const event: SQSEvent = { Records: messages.map((m) => toSqsRecord(m, this.spec.queueArn)) };
    this.stats.batches += 1;
    this.stats.messages += messages.length;
    const result = await this.hooks.invoke(event);
    if (result.status !== 'ok') {
      this.stats.invocationErrors += 1;
      this.log(`${this.spec.functionName}: ${result.status}: ${result.errorType}: ${result.errorMessage}`);
    }
    const failed = failedMessageIds(result, event, this.spec.reportBatchItemFailures);
    let done = event.Records.filter((r) => !failed.has(r.messageId));
    if (result.status === 'ok' && this.acksToLose > 0 && done.length > 0) {
      this.acksToLose -= 1;
      this.log(`${this.spec.functionName}: injected lost ack of ${done.length} message(s)`);
      done = [];
    }
    this.stats.returned += failed.size;
    for (let i = 0; i < done.length; i += MAX_RECEIVE) {
      const chunk = done.slice(i, i + MAX_RECEIVE);
      const { Failed = [] } = await this.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: this.spec.queueUrl,
          Entries: chunk.map((r, n) => ({ Id: String(n), ReceiptHandle: r.receiptHandle })),
        }),
      );
      this.stats.deleted += chunk.length - Failed.length;
      this.logFailedEntries('delete', Failed);
      if (this.hooks.onDeleted !== undefined) {
        const failedIds = new Set(Failed.map((f) => f.Id));
        this.hooks.onDeleted(chunk.filter((_, n) => !failedIds.has(String(n))).map((r) => r.messageId));
      }
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
