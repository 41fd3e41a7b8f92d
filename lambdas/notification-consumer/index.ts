/**
 * notification-consumer (Q1–Q2, I3, R4, B3): sends order notifications from the standard
 * notifications queue. Thin: the SQS job runner parses each record and applies the failure
 * policy; the core dedups per (order, template), and calls the messaging provider behind a
 * circuit breaker and a token bucket; waiting (open circuit, spent rate, degrade mode, another
 * attempt's claim in flight) defers the message instead of failing or dropping it.
 */
import { setTimeout as sleepMs } from 'node:timers/promises';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { newSqsClient, newDynamoDbClient, newSsmClient } from '../../lib/adapters/aws/clients';
import { DynamoDbDedupStore } from '../../lib/adapters/aws/dynamodb-dedup-store';
import { createSqsJobRunner, type JobHandler } from '../../lib/adapters/aws/sqs-job-runner';
import { degradedOrFalse, SsmDegradeFlag } from '../../lib/adapters/aws/ssm-degrade-flag';
import { HttpMessagingProvider } from '../../lib/adapters/http/messaging-provider';
import { parseFunctionEnv, stageConfig } from '../../lib/adapters/lambda-env';
import { observability } from '../../lib/adapters/powertools';
import { DLQ_RETENTION_SECONDS, jobTypeByName, type ResolvedJobType } from '../../lib/config';
import { StageSchema } from '../../lib/config/schema';
import * as z from '../../lib/config/zod';
import type { Random } from '../../lib/core/backoff';
import { CircuitBreaker } from '../../lib/core/circuit-breaker';
import { consumerAdmission, degradeDeferSeconds } from '../../lib/core/deferral';
import { sendNotification, type MessagingProvider } from '../../lib/core/notification';
import type { Clock, DedupStore } from '../../lib/core/ports';
import { perInstanceRate, TokenBucket } from '../../lib/core/token-bucket';

/** Powertools service name of this function. */
export const SERVICE_NAME = 'notification-consumer';

/**
 * Limits for the messaging provider. The rate is the provider's limit for the whole fleet; each
 * instance takes its share (rate ÷ the ESM's maximum concurrency), so the fleet stays within it.
 */
export const MESSAGING_LIMITS = {
  /** Messages per second the provider accepts from us, fleet-wide. */
  fleetRatePerSecond: 50,
  /** Burst per instance after a quiet period. */
  burst: 5,
  /** Longest in-process wait for a token; longer waits defer the message. */
  maxRateWaitMs: 1_000,
  /** Per-call timeout (D4): failureThreshold calls that time out still fit the function timeout. */
  timeoutMs: 2_000,
  breaker: { failureThreshold: 5, windowMs: 10_000, coolDownMs: 20_000 },
} as const;

const nonEmpty = (): z.ZodMiniString<string> => z.string().check(z.minLength(1));

/** The function's environment. */
export const NotificationConsumerEnvSchema = z.object({
  TENANG_STAGE: StageSchema.shape.name,
  AWS_REGION: nonEmpty(),
  DEDUP_TABLE: nonEmpty(),
  MESSAGING_PROVIDER_URL: z.url(),
  DEGRADE_FLAG: nonEmpty(),
  QUEUE_URL: z.url(),
  DLQ_URL: z.url(),
  /** Side queue for notifications past their useful age (set by WorkerQueue when the config declares one). */
  EXPIRED_QUEUE_URL: z.optional(z.url()),
});
export type NotificationConsumerEnv = z.infer<typeof NotificationConsumerEnvSchema>;

/** What the handler needs; tests pass clients bound to the emulator, or fakes. */
export interface NotificationConsumerDeps {
  readonly jobType: ResolvedJobType;
  readonly queueUrl: string;
  readonly dlqUrl: string;
  /** Where notifications past their useful age go (the config's usefulAgeSeconds). */
  readonly expiredQueueUrl?: string;
  readonly sqs: SQSClient;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly dedup: DedupStore;
  readonly provider: MessagingProvider;
  /** Per process: keep one across invocations. */
  readonly breaker: CircuitBreaker;
  /** Per process: keep one across invocations. */
  readonly bucket: TokenBucket;
  /** Reads the degrade flag (cached for a few seconds). */
  readonly isDegraded: () => Promise<boolean>;
  /** @default MESSAGING_LIMITS.maxRateWaitMs */
  readonly maxRateWaitMs?: number;
  /** @default Math.random */
  readonly random?: Random;
  /** @default () => new Date() */
  readonly clock?: Clock;
  /** @default node:timers/promises setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
}

/**
 * How long a claim is held while the provider call is in flight: twice the function timeout,
 * so no live attempt loses it, yet shorter than the visibility timeout minus the function
 * timeout (≥ 5 × timeout by the 6× rule), so a crashed attempt's claim has expired when its
 * message comes back.
 */
export function inFlightClaimSeconds(jobType: ResolvedJobType): number {
  return 2 * jobType.function.timeoutSeconds;
}

/** A notification consumer handler. */
export function createHandler(
  deps: NotificationConsumerDeps,
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  const random = deps.random ?? Math.random;
  const clock = deps.clock ?? ((): Date => new Date());
  const sleep = deps.sleep ?? ((ms: number): Promise<void> => sleepMs(ms));

  const handle: JobHandler<'notification.send'> = async (job, ctx) => {
    // Sheddable work is shed by the producer; a job already queued is deferred, never dropped.
    if (
      consumerAdmission(deps.jobType.criticality, await degradedOrFalse(deps.isDegraded, ctx.logger)) ===
      'defer'
    ) {
      return { kind: 'deferred', delaySeconds: degradeDeferSeconds(random), reason: 'degrade mode' };
    }
    const outcome = await sendNotification(
      {
        dedup: deps.dedup,
        provider: deps.provider,
        breaker: deps.breaker,
        bucket: deps.bucket,
        random,
        sleep,
        maxRateWaitMs: deps.maxRateWaitMs ?? MESSAGING_LIMITS.maxRateWaitMs,
        inFlightClaimSeconds: inFlightClaimSeconds(deps.jobType),
        // A duplicate can arrive as long as any copy of the message can: the DLQ keeps the longest.
        sentClaimSeconds: DLQ_RETENTION_SECONDS,
        onDedupFailure: (failure) =>
          ctx.logger.warn(`could not ${failure.step} the dedup claim; it expires by itself`, {
            dedupKey: failure.key,
            error: failure.error as Error,
          }),
      },
      job.payload,
      job.correlationId,
    );
    switch (outcome.kind) {
      case 'sent':
        ctx.logger.info('notification sent', {
          orderId: job.payload.orderId,
          template: job.payload.template,
          messageId: outcome.messageId,
        });
        return { kind: 'done' };
      case 'duplicate':
        return { kind: 'duplicate_ignored' };
      case 'deferred':
        if (outcome.reason === 'circuit-open') {
          ctx.logger.warn('messaging provider circuit is open; deferring', {
            circuit: deps.breaker.snapshot(),
          });
        }
        return { kind: 'deferred', delaySeconds: outcome.deferSeconds, reason: outcome.reason };
    }
  };

  return createSqsJobRunner({
    jobType: deps.jobType,
    expectedType: 'notification.send',
    queueUrl: deps.queueUrl,
    dlqUrl: deps.dlqUrl,
    ...(deps.expiredQueueUrl === undefined ? {} : { expiredQueueUrl: deps.expiredQueueUrl }),
    sqs: deps.sqs,
    logger: deps.logger,
    metrics: deps.metrics,
    handle,
    random,
    now: clock,
    // One record after another: the breaker and the bucket see each call's outcome before the next.
    processInParallel: false,
  });
}

/** The SDK clients the handler uses. */
interface NotificationClients {
  readonly sqs: SQSClient;
  readonly dynamo: DynamoDBClient;
  readonly ssm: SSMClient;
}

/** Builds the handler's dependencies from the environment. */
export function depsFromEnv(
  env: NotificationConsumerEnv,
  clients: NotificationClients,
): NotificationConsumerDeps {
  const { logger, metrics } = observability(SERVICE_NAME);
  const jobType = jobTypeByName(stageConfig(env.TENANG_STAGE, env.AWS_REGION), 'notification.send');
  const clock = (): Date => new Date();
  const flag = new SsmDegradeFlag(clients.ssm, env.DEGRADE_FLAG);
  return {
    jobType,
    queueUrl: env.QUEUE_URL,
    dlqUrl: env.DLQ_URL,
    ...(env.EXPIRED_QUEUE_URL === undefined ? {} : { expiredQueueUrl: env.EXPIRED_QUEUE_URL }),
    sqs: clients.sqs,
    logger,
    metrics,
    dedup: new DynamoDbDedupStore(clients.dynamo, env.DEDUP_TABLE, clock),
    provider: new HttpMessagingProvider({
      baseUrl: env.MESSAGING_PROVIDER_URL,
      timeoutMs: MESSAGING_LIMITS.timeoutMs,
    }),
    breaker: new CircuitBreaker({ name: 'messaging-provider', ...MESSAGING_LIMITS.breaker, clock }),
    bucket: new TokenBucket({
      ratePerSecond: perInstanceRate(MESSAGING_LIMITS.fleetRatePerSecond, jobType.batch.maxConcurrency),
      burst: MESSAGING_LIMITS.burst,
      clock,
    }),
    isDegraded: () => flag.isDegraded(),
    clock,
  };
}

// Module scope: the environment fails at init; clients, the breaker and the bucket live across
// invocations.
/** The deployed handler. */
export const handler = createHandler(
  depsFromEnv(parseFunctionEnv(SERVICE_NAME, NotificationConsumerEnvSchema), {
    sqs: newSqsClient(),
    dynamo: newDynamoDbClient(),
    ssm: newSsmClient(),
  }),
);
