/**
 * Runs an SQS batch through a job handler with Powertools batch processing and tenang's failure
 * policy (D3, R1–R3, R6, X1, X2):
 * - every record is parsed into a job envelope; bad input is a permanent error;
 * - a standard queue's records run at the same time (unless the job asks for one after another);
 *   a FIFO queue's message groups run at the same time, each group's records in order;
 * - a permanent error (or the last allowed attempt) sends the message to the DLQ at once with
 *   its error class, message, attempt count and failure times, and the record counts as handled
 *   so the event source mapping deletes it;
 * - a transient error sets the message's visibility to a full-jitter backoff and reports the
 *   record as a batch item failure: only that record returns (FIFO: its group only, and the
 *   group-mates skipped behind it are made visible at once, so they do not hold the group for
 *   the whole visibility timeout);
 * - a deferral (busy lock, degrade mode) re-sends the message with a delay instead of failing
 *   it, so waiting never pushes a job towards the DLQ;
 * - a permission error (the deployment denies an action: the handler's, the deferral's re-send,
 *   the side queue's or the DLQ's own send) is never dead-lettered by the runner, on no attempt:
 *   one error line names the denied action and resource, PermissionDenied is counted, and the
 *   message is held with its visibility (5 min doubling per receive, equal jitter, capped below
 *   SQS's 12 h) and reported as a failure. A missing grant would otherwise drain the whole
 *   queue into its DLQ within one batch; held, the jobs wait for the fixed deployment (or for an
 *   operator's pause, which stops their receives and so their count towards SQS's redrive);
 * - sheddable work older than its useful age is not run: it is moved to the side queue with its
 *   age and counted (JobExpired), so a drained backlog sends no stale work and drops nothing.
 */
import {
  BatchProcessor,
  EventType,
  processPartialResponse,
  SqsFifoPartialProcessorAsync,
} from '@aws-lambda-powertools/batch';
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import {
  ChangeMessageVisibilityCommand,
  SendMessageCommand,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { METRIC, type ResolvedJobType } from '../../config';
import {
  SQS_MAX_VISIBILITY_SECONDS,
  decideRetry,
  permissionHoldSeconds,
  type Random,
  PERMISSION_HOLD_BASE_SECONDS,
} from '../../core/backoff';
import { parseEnvelope, type JobEnvelope, type PayloadSchema } from '../../core/envelope';
import { classifyError, errorClassName, permissionDenial, type ErrorClass } from '../../core/errors';
import { reportPermissionDenial } from './permission-denial';

/** What a job handler reports. */
export type JobOutcome =
  | { readonly kind: 'done' }
  | { readonly kind: 'duplicate_ignored' }
  | { readonly kind: 'deferred'; readonly delaySeconds: number; readonly reason: string };

/** Per-record context given to a job handler. */
export interface JobContext {
  /** 1-based attempt (the message's receive count). */
  readonly attempt: number;
  readonly messageId: string;
  /** A logger whose every line carries the correlation id and idempotency key (O2). */
  readonly logger: Logger;
  /** The Lambda context (Powertools idempotency registers it for its in-progress expiry). */
  readonly lambdaContext: Context;
}

/** A job type's handler. */
export type JobHandler<P = unknown> = (job: JobEnvelope<P>, ctx: JobContext) => Promise<JobOutcome>;

/** Message attributes carried by a dead-lettered message (R3). */
export const DLQ_ATTRIBUTE = {
  errorClass: 'tenang-error-class',
  errorKind: 'tenang-error-kind',
  errorMessage: 'tenang-error-message',
  attempts: 'tenang-attempts',
  firstFailureAt: 'tenang-first-failure-at',
  lastFailureAt: 'tenang-last-failure-at',
  jobType: 'tenang-job-type',
  correlationId: 'tenang-correlation-id',
  sourceMessageId: 'tenang-source-message-id',
} as const;

/** Message attributes carried by a job moved to the side queue past its useful age (B5). */
export const EXPIRED_ATTRIBUTE = {
  ageSeconds: 'tenang-age-seconds',
  usefulAgeSeconds: 'tenang-useful-age-seconds',
  expiredAt: 'tenang-expired-at',
  jobType: 'tenang-job-type',
  correlationId: 'tenang-correlation-id',
  sourceMessageId: 'tenang-source-message-id',
} as const;

/** Attribute counting how often a message was deferred. */
export const DEFERRALS_ATTRIBUTE = 'tenang-deferrals';

/** SQS allows at most 15 minutes of message delay. */
const MAX_DELAY_SECONDS = 900;
const MAX_ERROR_MESSAGE = 256;

/** Options of createSqsJobRunner. */
export interface SqsJobRunnerOptions<P = unknown> {
  readonly jobType: ResolvedJobType;
  /** The job type every envelope must name. */
  readonly expectedType: string;
  /** The payload's schema (the job module's `payload`). */
  readonly payloadSchema: PayloadSchema<P>;
  readonly queueUrl: string;
  readonly dlqUrl: string;
  /** First permission hold's ceiling, seconds. @default TENANG_PERMISSION_HOLD_BASE_SECONDS, else PERMISSION_HOLD_BASE_SECONDS (300) */
  readonly permissionHoldBaseSeconds?: number;
  /** Side queue for jobs past their useful age; required when the job type declares usefulAgeSeconds. */
  readonly expiredQueueUrl?: string;
  readonly sqs: SQSClient;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly handle: JobHandler<P>;
  /** @default Math.random */
  readonly random?: Random;
  /** @default () => new Date() */
  readonly now?: () => Date;
  /**
   * Standard queues only: process a batch's records one after another, so a circuit breaker or
   * rate limit in the handler sees each outcome before the next call (R4). @default true
   */
  readonly processInParallel?: boolean;
}

/** Raised to report a record as a batch item failure after its visibility was set. */
export class RetryLaterError extends Error {
  public constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RetryLaterError';
  }
}

/**
 * Characters SQS refuses in a message attribute: most C0 controls, U+FFFE/U+FFFF and lone
 * surrogates (V8's JSON error snippets and a cut at MAX_ERROR_MESSAGE can split a pair). One of
 * them would make the DLQ send fail and the message bounce until the redrive, without context.
 */
const SQS_REFUSED =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function str(value: string): MessageAttributeValue {
  return { DataType: 'String', StringValue: value.replace(SQS_REFUSED, '\uFFFD') };
}

/**
 * The correlation id of a body that is JSON but not a valid envelope, when it carries a usable
 * one: the error line and the dead letter still join the request's trail.
 */
function correlationIdOf(body: string): string | undefined {
  try {
    const value = (JSON.parse(body) as { correlationId?: unknown } | null)?.correlationId;
    return typeof value === 'string' && value.length > 0 && value.length <= 128 ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The local platform's time compression for permission holds (its drills set it on the
 * instances they run, as smoke scenarios shorten alarm periods): `TENANG_PERMISSION_HOLD_BASE_SECONDS`.
 * Unset on AWS, where the base is PERMISSION_HOLD_BASE_SECONDS.
 */
export const PERMISSION_HOLD_BASE_VARIABLE = 'TENANG_PERMISSION_HOLD_BASE_SECONDS';

function permissionHoldBaseFromEnv(): number {
  const value = Number(process.env[PERMISSION_HOLD_BASE_VARIABLE]);
  return Number.isFinite(value) && value >= 1 ? value : PERMISSION_HOLD_BASE_SECONDS;
}

/** A FIFO batch's records by message group, each group's in the batch's order. */
function recordsByGroup(records: readonly SQSRecord[]): Map<string, SQSRecord[]> {
  const groups = new Map<string, SQSRecord[]>();
  for (const record of records) {
    // Lambda's FIFO records always carry their group (SQS refuses an empty one); any without
    // are kept together, in order.
    const group = record.attributes.MessageGroupId ?? '';
    const members = groups.get(group);
    if (members === undefined) groups.set(group, [record]);
    else members.push(record);
  }
  return groups;
}

/** Builds the batch handler for one job type's queue. */
export function createSqsJobRunner<P>(
  opts: SqsJobRunnerOptions<P>,
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  const fifo = opts.jobType.queue.kind === 'fifo';
  const random = opts.random ?? Math.random;
  const now = opts.now ?? ((): Date => new Date());
  const usefulAgeSeconds = opts.jobType.usefulAgeSeconds;
  // SQS counts its 12 h maximum from the receive: less the visibility timeout, the most that can
  // have passed since the receive while the message is still this invocation's.
  const holdCapSeconds = SQS_MAX_VISIBILITY_SECONDS - opts.jobType.visibilityTimeoutSeconds;
  const holdBaseSeconds = opts.permissionHoldBaseSeconds ?? permissionHoldBaseFromEnv();
  if (usefulAgeSeconds !== undefined && opts.expiredQueueUrl === undefined) {
    throw new Error(
      `${opts.jobType.name} declares usefulAgeSeconds but its consumer has no side queue (EXPIRED_QUEUE_URL)`,
    );
  }

  /** Moves a job past its useful age to the side queue; a failed send throws, so the job is retried, never lost. */
  async function expire(record: SQSRecord, job: JobEnvelope<P>, ageSeconds: number): Promise<void> {
    await opts.sqs.send(
      new SendMessageCommand({
        QueueUrl: opts.expiredQueueUrl,
        MessageBody: record.body,
        MessageAttributes: {
          [EXPIRED_ATTRIBUTE.ageSeconds]: { DataType: 'Number', StringValue: String(Math.floor(ageSeconds)) },
          [EXPIRED_ATTRIBUTE.usefulAgeSeconds]: { DataType: 'Number', StringValue: String(usefulAgeSeconds) },
          [EXPIRED_ATTRIBUTE.expiredAt]: str(now().toISOString()),
          [EXPIRED_ATTRIBUTE.jobType]: str(opts.jobType.name),
          [EXPIRED_ATTRIBUTE.correlationId]: str(job.correlationId),
          [EXPIRED_ATTRIBUTE.sourceMessageId]: str(record.messageId),
        },
        MessageGroupId: fifo ? record.attributes.MessageGroupId : undefined,
        MessageDeduplicationId: fifo ? record.messageId : undefined,
      }),
    );
  }

  async function deadLetter(
    record: SQSRecord,
    error: unknown,
    errorKind: ErrorClass,
    attempt: number,
    correlationId: string | undefined,
  ): Promise<void> {
    const message = error instanceof Error ? error.message : String(error);
    const attributes: Record<string, MessageAttributeValue> = {
      [DLQ_ATTRIBUTE.errorClass]: str(errorClassName(error)),
      [DLQ_ATTRIBUTE.errorKind]: str(errorKind),
      [DLQ_ATTRIBUTE.errorMessage]: str(message.slice(0, MAX_ERROR_MESSAGE) || '(no message)'),
      [DLQ_ATTRIBUTE.attempts]: { DataType: 'Number', StringValue: String(attempt) },
      [DLQ_ATTRIBUTE.firstFailureAt]: str(
        new Date(Number(record.attributes.ApproximateFirstReceiveTimestamp)).toISOString(),
      ),
      [DLQ_ATTRIBUTE.lastFailureAt]: str(now().toISOString()),
      [DLQ_ATTRIBUTE.jobType]: str(opts.jobType.name),
      [DLQ_ATTRIBUTE.sourceMessageId]: str(record.messageId),
    };
    if (correlationId !== undefined) attributes[DLQ_ATTRIBUTE.correlationId] = str(correlationId);
    await opts.sqs.send(
      new SendMessageCommand({
        QueueUrl: opts.dlqUrl,
        MessageBody: record.body,
        MessageAttributes: attributes,
        // FIFO: keep the group; the source message id dedups a repeated dead-lettering.
        MessageGroupId: fifo ? record.attributes.MessageGroupId : undefined,
        MessageDeduplicationId: fifo ? record.messageId : undefined,
      }),
    );
  }

  async function defer(record: SQSRecord, delaySeconds: number): Promise<void> {
    const delay = Math.max(0, Math.min(MAX_DELAY_SECONDS, Math.round(delaySeconds)));
    if (fifo) {
      // FIFO queues have no per-message delay: hold this message (and its group) instead.
      await opts.sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: opts.queueUrl,
          ReceiptHandle: record.receiptHandle,
          VisibilityTimeout: delay,
        }),
      );
      throw new RetryLaterError(`deferred for ${delay} s`);
    }
    const deferrals = Number(record.messageAttributes[DEFERRALS_ATTRIBUTE]?.stringValue ?? '0') + 1;
    const carried: Record<string, MessageAttributeValue> = {};
    for (const [name, value] of Object.entries(record.messageAttributes)) {
      if (value.stringValue !== undefined)
        carried[name] = { DataType: value.dataType, StringValue: value.stringValue };
    }
    await opts.sqs.send(
      new SendMessageCommand({
        QueueUrl: opts.queueUrl,
        MessageBody: record.body,
        DelaySeconds: delay,
        MessageAttributes: {
          ...carried,
          [DEFERRALS_ATTRIBUTE]: { DataType: 'Number', StringValue: String(deferrals) },
        },
      }),
    );
  }

  async function retryLater(record: SQSRecord, attempt: number, error: unknown): Promise<never> {
    const decision = decideRetry(opts.jobType.retry, opts.jobType.maxAttempts, attempt, random);
    if (decision.action === 'retry') {
      try {
        await opts.sqs.send(
          new ChangeMessageVisibilityCommand({
            QueueUrl: opts.queueUrl,
            ReceiptHandle: record.receiptHandle,
            VisibilityTimeout: decision.delaySeconds,
          }),
        );
      } catch (visibilityError) {
        // The message still returns, after the full visibility timeout.
        if (!reportedDenial(visibilityError, opts.logger, 'setting the retry delay')) {
          opts.logger.warn('could not set the retry delay', { error: visibilityError as Error });
        }
      }
    }
    throw new RetryLaterError(`attempt ${attempt} failed; retrying`, { cause: error });
  }

  /** Logs and counts `error` when it is an access denial; answers whether it was. */
  function reportedDenial(
    error: unknown,
    logger: Logger,
    during: string,
    extra: Record<string, unknown> = {},
  ): boolean {
    return reportPermissionDenial(error, { logger, metrics: opts.metrics, during, extra }) !== undefined;
  }

  /**
   * Holds a message whose processing was denied an action: never dead-lettered by the runner,
   * whatever the attempt. Its visibility is set to the permission hold (5 min doubling per
   * receive, equal jitter, capped below SQS's 12 h) and the record is reported as a failure, so
   * the message stays in the queue and returns when the hold ends — by then, ideally, with the
   * deployment fixed. A denied hold leaves the message to return after the queue's visibility
   * timeout: still held by SQS, still not dead-lettered. FIFO: the group waits behind it, as
   * behind any retry.
   */
  async function holdDenied(
    record: SQSRecord,
    attempt: number,
    error: unknown,
    logger: Logger,
    during: string,
  ): Promise<never> {
    const holdSeconds = permissionHoldSeconds(attempt, random, holdCapSeconds, holdBaseSeconds);
    let hold: Record<string, unknown>;
    try {
      await opts.sqs.send(
        new ChangeMessageVisibilityCommand({
          QueueUrl: opts.queueUrl,
          ReceiptHandle: record.receiptHandle,
          VisibilityTimeout: holdSeconds,
        }),
      );
      hold = { held: true, holdSeconds };
    } catch (holdError) {
      // Denied too (sqs:ChangeMessageVisibility), or refused: SQS still holds the message until
      // its visibility timeout ends, and the record is still not deleted.
      const denial = permissionDenial(holdError);
      hold = {
        held: false,
        holdError:
          denial === undefined ? errorClassName(holdError) : `${denial.code} (${denial.action ?? 'denied'})`,
        returnsAfter: `the queue's visibility timeout (${opts.jobType.visibilityTimeoutSeconds} s from the receive)`,
      };
    }
    reportedDenial(error, logger, during, {
      ...hold,
      attempt,
      maxReceiveCount: opts.jobType.maxAttempts,
      note: 'job held, not dead-lettered: a permission error is a deployment defect, not a bad job',
    });
    throw new RetryLaterError(
      hold.held === true ? `permission denied; held for ${holdSeconds} s` : 'permission denied; hold refused',
      { cause: error },
    );
  }

  /**
   * Dead-letters a job; a denied DLQ send holds the message instead of failing it bare, so it
   * stays in its queue (SQS's redrive takes it after maxReceiveCount receives, without context).
   */
  async function deadLetterOrHold(
    record: SQSRecord,
    error: unknown,
    errorKind: ErrorClass,
    attempt: number,
    correlationId: string | undefined,
    logger: Logger,
  ): Promise<void> {
    try {
      await deadLetter(record, error, errorKind, attempt, correlationId);
    } catch (dlqError) {
      if (classifyError(dlqError) === 'deployment') {
        await holdDenied(record, attempt, dlqError, logger, 'sending a failed job to the DLQ');
      }
      logger.error('job failed and could not be sent to the DLQ; it returns after its visibility timeout', {
        errorClass: errorClassName(error),
        error: error as Error,
        dlqError: dlqError as Error,
      });
      throw dlqError;
    }
  }

  /**
   * FIFO: records skipped because an earlier record of their group failed would stay in flight
   * for the whole visibility timeout, and SQS holds back a group while any of its messages is in
   * flight — the failed record's backoff would stretch to that timeout. Made visible at once,
   * they leave the group held by the failed record alone, which still returns first (D3, X1).
   */
  async function releaseSkipped(
    event: SQSEvent,
    response: SQSBatchResponse,
    attempted: ReadonlySet<string>,
  ): Promise<void> {
    const failed = new Set(response.batchItemFailures.map((f) => f.itemIdentifier));
    for (const record of event.Records) {
      if (!failed.has(record.messageId) || attempted.has(record.messageId)) continue;
      try {
        await opts.sqs.send(
          new ChangeMessageVisibilityCommand({
            QueueUrl: opts.queueUrl,
            ReceiptHandle: record.receiptHandle,
            VisibilityTimeout: 0,
          }),
        );
      } catch (error) {
        if (!reportedDenial(error, opts.logger, 'releasing a skipped FIFO message')) {
          opts.logger.warn(
            'could not release a skipped FIFO message; it returns after its visibility timeout',
            {
              error: error as Error,
            },
          );
        }
      }
    }
  }

  async function processRecord(record: SQSRecord, context: Context): Promise<void> {
    const attempt = Number(record.attributes.ApproximateReceiveCount);
    let job: JobEnvelope<P> | undefined;
    let logger = opts.logger.createChild({ persistentKeys: { messageId: record.messageId, attempt } });
    try {
      job = parseEnvelope(record.body, opts.expectedType, opts.payloadSchema);
      logger = logger.createChild({
        persistentKeys: { correlationId: job.correlationId, idempotencyKey: job.idempotencyKey },
      });
      const ageMs = Math.max(0, now().getTime() - Date.parse(job.enqueuedAt));
      opts.metrics.addMetric(METRIC.queueLatency, MetricUnit.Milliseconds, ageMs);
      if (usefulAgeSeconds !== undefined && ageMs > usefulAgeSeconds * 1000) {
        await expire(record, job, ageMs / 1000);
        opts.metrics.addMetric(METRIC.jobExpired, MetricUnit.Count, 1);
        logger.warn('job past its useful age; moved to the side queue, not run', {
          ageSeconds: Math.floor(ageMs / 1000),
          usefulAgeSeconds,
        });
        return;
      }
      const outcome = await opts.handle(job, {
        attempt,
        messageId: record.messageId,
        logger,
        lambdaContext: context,
      });
      if (outcome.kind === 'done') {
        opts.metrics.addMetric(METRIC.jobSucceeded, MetricUnit.Count, 1);
        logger.info('job done');
      } else if (outcome.kind === 'duplicate_ignored') {
        opts.metrics.addMetric(METRIC.duplicateIgnored, MetricUnit.Count, 1);
        logger.info('duplicate_ignored: the transition was already done; no side effect');
      } else {
        opts.metrics.addMetric(METRIC.jobDeferred, MetricUnit.Count, 1);
        logger.info('job deferred', { delaySeconds: outcome.delaySeconds, reason: outcome.reason });
        await defer(record, outcome.delaySeconds);
      }
    } catch (error) {
      if (error instanceof RetryLaterError) throw error;
      const correlationId = job?.correlationId ?? correlationIdOf(record.body);
      if (job === undefined && correlationId !== undefined) {
        logger = logger.createChild({ persistentKeys: { correlationId } });
      }
      const kind = classifyError(error);
      if (kind === 'deployment') {
        // Before the attempt bound: the last attempt holds too. The job is not at fault.
        await holdDenied(record, attempt, error, logger, 'processing the job');
      }
      if (kind === 'permanent' || (kind === 'transient' && attempt >= opts.jobType.maxAttempts)) {
        await deadLetterOrHold(record, error, kind, attempt, correlationId, logger);
        logger.error('job failed; sent to the DLQ', {
          errorClass: errorClassName(error),
          error: error as Error,
        });
        opts.metrics.addMetric(METRIC.jobFailedPermanently, MetricUnit.Count, 1);
        return;
      }
      if (kind === 'bug') {
        // A bug is not retried faster: it fails loudly and returns after the visibility timeout.
        logger.error('job failed with an unexpected error (bug)', { error: error as Error });
        opts.metrics.addMetric(METRIC.jobBug, MetricUnit.Count, 1);
        if (attempt >= opts.jobType.maxAttempts) {
          await deadLetterOrHold(record, error, kind, attempt, correlationId, logger);
          return;
        }
        throw error;
      }
      logger.warn('job failed transiently; retrying with backoff', { errorClass: errorClassName(error) });
      opts.metrics.addMetric(METRIC.jobRetried, MetricUnit.Count, 1);
      await retryLater(record, attempt, error);
    }
  }

  return async (event, context) => {
    try {
      if (fifo) {
        // Order holds within a message group only: each group's records run one after another
        // (a failed record fails the rest of its group unprocessed), and the groups at the same
        // time, so a batch of many groups (the payment capture's: one per order) takes as long as
        // its longest group, not as all its records one after another.
        const attempted = new Set<string>();
        const responses = await Promise.all(
          [...recordsByGroup(event.Records).values()].map((records) =>
            processPartialResponse(
              { Records: records },
              (r: SQSRecord) => {
                attempted.add(r.messageId);
                return processRecord(r, context);
              },
              // A processor per group: it keeps the batch it processes as its state.
              new SqsFifoPartialProcessorAsync(),
              { context, skipGroupOnError: true, throwOnFullBatchFailure: false },
            ),
          ),
        );
        const response: SQSBatchResponse = {
          batchItemFailures: responses.flatMap((r) => r.batchItemFailures),
        };
        await releaseSkipped(event, response, attempted);
        return response;
      }
      const processor = new BatchProcessor(EventType.SQS);
      return await processPartialResponse(event, (r: SQSRecord) => processRecord(r, context), processor, {
        context,
        throwOnFullBatchFailure: false,
        processInParallel: opts.processInParallel ?? true,
      });
    } finally {
      // Every record records a metric; publishing none (an empty batch) would only log a warning.
      if (opts.metrics.hasStoredMetrics()) opts.metrics.publishStoredMetrics();
    }
  };
}
