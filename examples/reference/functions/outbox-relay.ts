/**
 * outbox-relay (D6, Q1, B3): the orders table's stream is the transactional outbox. When an order
 * becomes PAID, this enqueues its follow-up jobs (followUpsForOrderChange): a notification and one
 * reservation per line, each once per (order, version, job) thanks to a producer-side dedup
 * record, so a stream record delivered twice enqueues once. The claim names the stream record:
 * its redelivery takes over a claim that its own earlier (ended) attempt left in flight and
 * sends at once, where waiting for the claim to expire (the function timeout) would outlast the
 * mapping's immediate retries and give the record up to the on-failure queue. A follow-up claimed
 * by another record fails the record transiently until that claim expires. In degrade mode notifications are
 * shed (counted and logged, never dropped silently) and reservations are enqueued with a delay.
 */

import { jobTypeByName, stageNameSchema, type Criticality, type PipelineConfig } from 'tenang/config';
import {
  becamePaid,
  DynamoDbDedupStore,
  followUpsForOrderChange,
  ORDER_STATES,
  OrderSchema,
  readOrderChange,
  relayFollowUps,
  type DedupStore,
  type Enqueue,
  type FollowUpOutcome,
  type JobTypeName,
  type OrderState,
} from '../domain';
import {
  BatchProcessor,
  ClaimInFlightError,
  crashHookFrom,
  degradedOrFalse,
  EventType,
  METRIC,
  MetricUnit,
  newDynamoDbClient,
  newSqsClient,
  newSsmClient,
  noCrash,
  observability,
  parseFunctionEnv,
  processPartialResponse,
  reportPermissionDenial,
  SendMessageCommand,
  sequenceNumberOf,
  SsmDegradeFlag,
  stageConfig,
  ValidationError,
  type Clock,
  type Context,
  type CrashHook,
  type DynamoDBBatchResponse,
  type DynamoDBRecord,
  type DynamoDBStreamEvent,
  type JobEnvelope,
  type Logger,
  type Metrics,
  type Random,
  type SQSClient,
} from 'tenang/runtime';
import * as z from 'tenang/zod';

/** Powertools service name of this function. */
export const SERVICE_NAME = 'outbox-relay';

/**
 * How long a follow-up stays claimed once enqueued: two days, longer than the stream keeps a
 * record (24 h), so every redelivery finds the claim.
 */
export const SENT_CLAIM_SECONDS = 2 * 24 * 3600;

const nonEmpty = (): z.ZodMiniString<string> => z.string().check(z.minLength(1));

/** The function's environment. */
export const OutboxRelayEnvSchema = z.object({
  TENANG_STAGE: stageNameSchema(),
  AWS_REGION: nonEmpty(),
  // `<JOB_TYPE>_QUEUE_URL` (queueUrlVariable): the stack sets one per job type in resources.queues.
  NOTIFICATION_SEND_QUEUE_URL: z.url(),
  INVENTORY_RESERVE_QUEUE_URL: z.url(),
  DEGRADE_FLAG: nonEmpty(),
  DEDUP_TABLE: nonEmpty(),
  /** Crash injection points (local platform and chaos tests only). */
  TENANG_CRASH_POINTS: z.optional(z.string()),
});
export type OutboxRelayEnv = z.infer<typeof OutboxRelayEnvSchema>;

/** Job types the relay produces. */
export type FollowUpJobType = Extract<JobTypeName, 'notification.send' | 'inventory.reserve'>;

/** What the handler needs; tests pass clients bound to the emulator, or fakes. */
export interface OutboxRelayDeps {
  readonly dedup: DedupStore;
  readonly enqueue: Enqueue;
  readonly criticalityOf: (type: string) => Criticality;
  /** Reads the degrade flag (cached for a few seconds). */
  readonly isDegraded: () => Promise<boolean>;
  /** The relay's function timeout: a follow-up is claimed this long while it is being enqueued. */
  readonly functionTimeoutSeconds: number;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** @default Math.random */
  readonly random?: Random;
  /** @default () => new Date() */
  readonly clock?: Clock;
  /** @default noCrash */
  readonly crash?: CrashHook;
}

/** Enqueues envelopes with SendMessage on the queue of their job type. */
export function sqsEnqueue(sqs: SQSClient, queueUrls: Readonly<Record<FollowUpJobType, string>>): Enqueue {
  return async (envelope: JobEnvelope, delaySeconds: number) => {
    if (envelope.type !== 'notification.send' && envelope.type !== 'inventory.reserve') {
      throw new ValidationError('the outbox relay cannot enqueue this job type', [`type: ${envelope.type}`]);
    }
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrls[envelope.type],
        MessageBody: JSON.stringify(envelope),
        DelaySeconds: delaySeconds > 0 ? delaySeconds : undefined,
      }),
    );
  };
}

/** The criticality of each job type, from the pipeline config. */
export function criticalityFrom(config: PipelineConfig): (type: string) => Criticality {
  return (type) => jobTypeByName(config, type).criticality;
}

const StateSchema = z.object({ state: z.enum(ORDER_STATES) });

function stateOf(image: Record<string, unknown> | undefined): OrderState | undefined {
  const parsed = StateSchema.safeParse(image ?? {});
  return parsed.success ? parsed.data.state : undefined;
}

/** An outbox relay handler. */
export function createHandler(
  deps: OutboxRelayDeps,
): (event: DynamoDBStreamEvent, context: Context) => Promise<DynamoDBBatchResponse> {
  const random = deps.random ?? Math.random;
  const clock = deps.clock ?? ((): Date => new Date());
  const crash = deps.crash ?? noCrash;

  function report(logger: Logger, outcome: FollowUpOutcome): void {
    const { envelope } = outcome.followUp;
    const fields = { jobType: envelope.type, idempotencyKey: envelope.idempotencyKey };
    switch (outcome.kind) {
      case 'enqueued':
        if (outcome.delaySeconds > 0) {
          deps.metrics.addMetric(METRIC.jobDeferred, MetricUnit.Count, 1);
          logger.info('follow-up deferred by degrade mode', {
            ...fields,
            delaySeconds: outcome.delaySeconds,
          });
        } else {
          logger.info('follow-up enqueued', fields);
        }
        return;
      case 'duplicate':
        deps.metrics.addMetric(METRIC.duplicateIgnored, MetricUnit.Count, 1);
        logger.info('follow-up already enqueued; not enqueued again', fields);
        return;
      case 'shed':
        deps.metrics.addMetric(METRIC.jobShed, MetricUnit.Count, 1);
        logger.warn('follow-up shed by degrade mode; it is not enqueued', fields);
    }
  }

  async function relay(record: DynamoDBRecord): Promise<void> {
    const sequenceNumber = sequenceNumberOf(record);
    const change = readOrderChange(record);
    if (change.kind === 'unknown') {
      deps.logger.warn('stream record of an unknown entity; skipped', {
        sequenceNumber,
        reason: change.reason,
      });
      return;
    }
    const oldState = stateOf(change.oldImage);
    if (!becamePaid(oldState, stateOf(change.newImage))) return;
    const logger = deps.logger.createChild({
      persistentKeys: { orderId: change.orderId, correlationId: change.orderId, sequenceNumber },
    });
    const order = OrderSchema.safeParse(change.newImage);
    if (!order.success) {
      // A paid order's follow-ups must not vanish: fail loudly; retries end in the on-failure queue.
      const problems = order.error.issues.map((i) => `${i.path.map(String).join('.')}: ${i.message}`);
      logger.error('order became PAID but its image is not a valid order; the record fails', { problems });
      throw new ValidationError(
        `order ${change.orderId} became PAID but its image is not a valid order`,
        problems,
      );
    }
    const followUps = followUpsForOrderChange(oldState, order.data, clock());
    // Before any claim: a crash here leaves no claim in flight, so a retry or replay sends at once.
    crash('before-enqueue');
    const outcomes = await relayFollowUps(followUps, {
      dedup: deps.dedup,
      enqueue: deps.enqueue,
      criticalityOf: deps.criticalityOf,
      degraded: await degradedOrFalse(deps.isDegraded, logger),
      random,
      inFlightClaimSeconds: deps.functionTimeoutSeconds,
      // The record's redelivery takes over its own dead attempt's claim instead of waiting it out.
      ...(record.dynamodb?.SequenceNumber === undefined
        ? {}
        : { claimOwner: `stream-record:${record.dynamodb.SequenceNumber}` }),
      sentClaimSeconds: SENT_CLAIM_SECONDS,
      onDedupFailure: (step, key, error) => {
        const denied = reportPermissionDenial(error, {
          logger,
          metrics: deps.metrics,
          during: `trying to ${step} a dedup claim`,
          extra: { dedupKey: key, note: 'the claim expires by itself' },
        });
        if (denied === undefined) {
          logger.warn(`could not ${step} the dedup claim; it expires by itself`, {
            dedupKey: key,
            error: error as Error,
          });
        }
      },
    }).catch((error: unknown) => {
      // A denied action fails the record like any error: the mapping's bounded retries, then its
      // on-failure queue, keep it (replayable while the stream holds it); the denial pages.
      reportPermissionDenial(error, {
        logger,
        metrics: deps.metrics,
        during: "enqueueing a paid order's follow-ups",
        extra: { note: "the record fails: the stream's retries, then the on-failure queue, keep it" },
      });
      if (error instanceof ClaimInFlightError) {
        logger.warn(
          'follow-up claimed by another stream record; the record is retried until that claim expires',
          {
            dedupKey: error.key,
          },
        );
      }
      throw error;
    });
    for (const outcome of outcomes) report(logger, outcome);
  }

  return async (event, context) => {
    deps.logger.addContext(context);
    try {
      return await processPartialResponse(event, relay, new BatchProcessor(EventType.DynamoDBStreams), {
        context,
        throwOnFullBatchFailure: false,
      });
    } finally {
      // Most batches record no metric (an order change that is no payment); publishing nothing
      // would log a warning per batch.
      if (deps.metrics.hasStoredMetrics()) deps.metrics.publishStoredMetrics();
    }
  };
}

/** Builds the handler's dependencies from the environment. */
export function depsFromEnv(env: OutboxRelayEnv): OutboxRelayDeps {
  const config = stageConfig(env.TENANG_STAGE, env.AWS_REGION);
  const relay = config.streamConsumers.find((s) => s.consumer === SERVICE_NAME);
  if (relay === undefined)
    throw new Error(`the pipeline config declares no stream consumer "${SERVICE_NAME}"`);
  const { logger, metrics } = observability(SERVICE_NAME);
  const flag = new SsmDegradeFlag(newSsmClient(), env.DEGRADE_FLAG);
  return {
    dedup: new DynamoDbDedupStore(newDynamoDbClient(), env.DEDUP_TABLE),
    enqueue: sqsEnqueue(newSqsClient(), {
      'notification.send': env.NOTIFICATION_SEND_QUEUE_URL,
      'inventory.reserve': env.INVENTORY_RESERVE_QUEUE_URL,
    }),
    criticalityOf: criticalityFrom(config),
    isDegraded: () => flag.isDegraded(),
    functionTimeoutSeconds: relay.function.timeoutSeconds,
    logger,
    metrics,
    crash: crashHookFrom(env.TENANG_CRASH_POINTS),
  };
}

/** The deployed handler; configuration fails at init. */
export const handler = createHandler(depsFromEnv(parseFunctionEnv(SERVICE_NAME, OutboxRelayEnvSchema)));
