/**
 * payment-consumer (D1, D3, I1–I4, R1–R3, R6): captures payments from the FIFO payments queue.
 * Thin: the SQS job runner parses each record and applies the failure policy; Powertools
 * idempotency guards the business key `payment:{paymentId}:capture`, and its claim checks the
 * order's capture guard in the same transaction; the core captures the payment; the PAID
 * transition commits in one transaction with the idempotency record. Two DynamoDB calls per
 * capture, one per duplicate.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyInconsistentStateError,
  IdempotencyKeyError,
  IdempotencyPersistenceLayerError,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { newDynamoDbClient, newSqsClient } from '../../lib/adapters/aws/clients';
import { createSqsJobRunner, type JobHandler } from '../../lib/adapters/aws/sqs-job-runner';
import { DynamoDbOrderStore } from '../../lib/adapters/aws/dynamodb-order-store';
import {
  TransactionalDynamoDBPersistenceLayer,
  type StagedPrecondition,
  type StagedWrite,
} from '../../lib/adapters/aws/transactional-persistence';
import { crashHookFrom, noCrash, type CrashHook } from '../../lib/adapters/crash';
import { HttpPaymentProvider } from '../../lib/adapters/http/payment-provider';
import { parseFunctionEnv, stageConfig } from '../../lib/adapters/lambda-env';
import { observability } from '../../lib/adapters/powertools';
import { jobTypeByName, type ResolvedJobType } from '../../lib/config';
import { StageSchema } from '../../lib/config/schema';
import * as z from '../../lib/config/zod';
import type { Random } from '../../lib/core/backoff';
import type { JobEnvelope, PaymentCapturePayload } from '../../lib/core/envelope';
import { classifyError, TenangError, TransientError, ValidationError } from '../../lib/core/errors';
import {
  captureGuard,
  capturePayment,
  OrderAlreadyPaidError,
  paymentCaptureKey,
  type CaptureGuard,
  type CaptureResult,
  type PaymentProvider,
  type StagedTransition,
} from '../../lib/core/payment';
import { waitDeferSeconds } from '../../lib/core/deferral';
import type { Clock } from '../../lib/core/ports';

/** Powertools service name of this function. */
export const SERVICE_NAME = 'payment-consumer';

/** Prefix of the idempotency records' keys. Fixed, not the function name: a redeployed function keeps its records. */
export const IDEMPOTENCY_KEY_PREFIX = 'payment.capture';

/** Idempotency records outlive the producer's 24 h dedup window; the state guard covers any later replay. */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;

const nonEmpty = (): z.ZodMiniString<string> => z.string().check(z.minLength(1));

/** The function's environment. */
export const PaymentConsumerEnvSchema = z.object({
  TENANG_STAGE: StageSchema.shape.name,
  AWS_REGION: nonEmpty(),
  ORDERS_TABLE: nonEmpty(),
  IDEMPOTENCY_TABLE: nonEmpty(),
  PAYMENT_PROVIDER_URL: z.url(),
  QUEUE_URL: z.url(),
  DLQ_URL: z.url(),
  /** Chaos suite only: comma-separated crash points. */
  TENANG_CRASH_POINTS: z.optional(z.string()),
});
export type PaymentConsumerEnv = z.infer<typeof PaymentConsumerEnvSchema>;

/** Orders as this consumer uses them: a guard checked in the claim, a transition staged for the completion. */
export interface StagingOrderStore {
  captureGuardCheck(guard: CaptureGuard): StagedPrecondition;
  stagedTransition(transition: StagedTransition): StagedWrite;
}

/** What the handler needs; tests pass clients bound to the emulator or fakes. */
export interface PaymentConsumerDeps {
  readonly jobType: ResolvedJobType;
  readonly queueUrl: string;
  readonly dlqUrl: string;
  readonly sqs: SQSClient;
  readonly orders: StagingOrderStore;
  readonly persistence: TransactionalDynamoDBPersistenceLayer;
  readonly provider: PaymentProvider;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** @default noCrash */
  readonly crash?: CrashHook;
  /** @default () => new Date() */
  readonly clock?: Clock;
  /** @default Math.random */
  readonly random?: Random;
  /** @default IDEMPOTENCY_TTL_SECONDS */
  readonly idempotencyTtlSeconds?: number;
}

/** What the idempotent function is called with: its key and the payload that validation hashes. */
type CaptureRequest = {
  readonly idempotencyKey: string;
  readonly payload: PaymentCapturePayload;
};

const StoredResultSchema = z.object({
  // duplicate_ignored: records of the version that read the order inside the capture.
  outcome: z.enum(['captured', 'duplicate_ignored']),
  /** Set by the response hook when the result came from an existing record. */
  replayed: z.optional(z.boolean()),
});

/**
 * Maps Powertools idempotency errors to the domain's classes (R1): a delivery in progress
 * elsewhere is transient, a key reused with another payload or a missing key is permanent, and a
 * persistence failure is whatever its cause is.
 */
export function toDomainError(error: unknown): unknown {
  if (
    error instanceof IdempotencyAlreadyInProgressError ||
    error instanceof IdempotencyInconsistentStateError
  ) {
    return new TransientError('another delivery of this job is in progress', { cause: error });
  }
  if (error instanceof IdempotencyValidationError) {
    return new ValidationError(
      'idempotency key reused with a different payload',
      ['payload: differs from the payload first processed under this idempotency key'],
      { cause: error },
    );
  }
  if (error instanceof IdempotencyKeyError) {
    return new ValidationError('job has no idempotency key', ['idempotencyKey: missing or empty'], {
      cause: error,
    });
  }
  if (error instanceof IdempotencyPersistenceLayerError) {
    // Powertools wraps what its persistence layer throws, including our domain errors.
    const { cause } = error;
    if (cause instanceof IdempotencyKeyError) return toDomainError(cause);
    if (cause instanceof TenangError || classifyError(cause) !== 'bug') return cause;
  }
  return error;
}

/** The idempotent function's input; the key must be the business key of this payment (I1). */
function captureRequest(job: JobEnvelope<'payment.capture'>): CaptureRequest {
  const expected = paymentCaptureKey(job.payload.paymentId);
  if (job.idempotencyKey !== expected) {
    throw new ValidationError('wrong idempotency key for this payment', [
      `idempotencyKey: expected ${expected}, got ${job.idempotencyKey}`,
    ]);
  }
  return { idempotencyKey: job.idempotencyKey, payload: job.payload };
}

/** A payment consumer handler. */
export function createHandler(
  deps: PaymentConsumerDeps,
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  const clock = deps.clock ?? ((): Date => new Date());
  const random = deps.random ?? Math.random;
  const crash = deps.crash ?? noCrash;
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'idempotencyKey',
    payloadValidationJmesPath: 'payload',
    throwOnNoIdempotencyKey: true,
    expiresAfterSeconds: deps.idempotencyTtlSeconds ?? IDEMPOTENCY_TTL_SECONDS,
    // Tells the handler that the answer is a stored one: the job ran before (duplicate_ignored).
    responseHook: (response) =>
      typeof response === 'object' && response !== null && !Array.isArray(response)
        ? { ...response, replayed: true }
        : response,
  });

  // Now, not at the first call: the guard is staged under the key Powertools will hash.
  deps.persistence.configure({ config, keyPrefix: IDEMPOTENCY_KEY_PREFIX });

  const capture = makeIdempotent(
    async (request: CaptureRequest, job: JobEnvelope<'payment.capture'>): Promise<CaptureResult> => {
      // The core reads nothing: without the guard checked in the claim, it would charge blind.
      if (!deps.persistence.preconditionHeld(request)) {
        throw new Error('the capture guard was not checked when the job was claimed');
      }
      return capturePayment(job, {
        provider: deps.provider,
        crash,
        clock,
        stageTransition: (transition) =>
          deps.persistence.stage(request, deps.orders.stagedTransition(transition)),
      });
    },
    { persistenceStore: deps.persistence, config, keyPrefix: IDEMPOTENCY_KEY_PREFIX },
  );

  const handle: JobHandler<'payment.capture'> = async (job, ctx) => {
    const request = captureRequest(job);
    config.registerLambdaContext(ctx.lambdaContext);
    const release = deps.persistence.stagePrecondition(
      request,
      deps.orders.captureGuardCheck(captureGuard(job)),
    );
    let stored: unknown;
    try {
      stored = await capture(request, job);
    } catch (error) {
      const inProgressUntil =
        error instanceof IdempotencyAlreadyInProgressError
          ? deps.persistence.inProgressExpiryOf(request)
          : undefined;
      if (inProgressUntil !== undefined) {
        // Another delivery holds the record, or held it and ended without completing or releasing
        // it (its completion's answer never came). Retrying with backoff before the record's
        // in-progress expiry only spends attempts: wait for it, then the claim is ours.
        const waitMs = inProgressUntil - clock().getTime();
        ctx.logger.info('another delivery of this job is in progress; waiting for its in-progress expiry', {
          waitMs,
        });
        return {
          kind: 'deferred',
          delaySeconds: waitDeferSeconds(waitMs, random),
          reason: 'another delivery of this job is in progress',
        };
      }
      const domain = toDomainError(error);
      if (domain instanceof OrderAlreadyPaidError) {
        ctx.logger.info('order already paid; nothing charged', {
          orderId: domain.orderId,
          state: domain.state,
        });
        return { kind: 'duplicate_ignored' };
      }
      throw domain;
    } finally {
      release();
    }
    // After the idempotency record completed with the order's transition, before the ack.
    crash('after-commit');
    const result = StoredResultSchema.safeParse(stored);
    if (!result.success) throw new Error('the idempotent capture returned an unexpected result');
    if (result.data.replayed === true || result.data.outcome === 'duplicate_ignored') {
      return { kind: 'duplicate_ignored' };
    }
    const captured = stored as CaptureResult;
    ctx.logger.info('payment captured', {
      orderId: captured.orderId,
      paymentId: captured.paymentId,
      chargeId: captured.chargeId,
    });
    return { kind: 'done' };
  };

  return createSqsJobRunner({
    jobType: deps.jobType,
    expectedType: 'payment.capture',
    queueUrl: deps.queueUrl,
    dlqUrl: deps.dlqUrl,
    sqs: deps.sqs,
    logger: deps.logger,
    metrics: deps.metrics,
    handle,
    random,
    now: clock,
  });
}

/** The SDK clients the handler's dependencies share. */
export interface PaymentConsumerClients {
  readonly dynamo: DynamoDBClient;
  readonly sqs: SQSClient;
}

/**
 * Builds the handler's dependencies from the parsed environment, once per instance. The
 * benchmark passes its own clients to count their calls.
 */
export function depsFromEnv(
  env: PaymentConsumerEnv,
  clients: PaymentConsumerClients = { dynamo: newDynamoDbClient(), sqs: newSqsClient() },
): PaymentConsumerDeps {
  const { logger, metrics } = observability(SERVICE_NAME);
  const jobType = jobTypeByName(stageConfig(env.TENANG_STAGE, env.AWS_REGION), 'payment.capture');
  const { dynamo, sqs } = clients;
  return {
    jobType,
    queueUrl: env.QUEUE_URL,
    dlqUrl: env.DLQ_URL,
    sqs,
    orders: new DynamoDbOrderStore(dynamo, env.ORDERS_TABLE),
    persistence: new TransactionalDynamoDBPersistenceLayer({
      tableName: env.IDEMPOTENCY_TABLE,
      awsSdkV3Client: dynamo,
      warnings: logger,
    }),
    // A third of the function timeout, at most 10 s: room for the runner to report the failure.
    provider: new HttpPaymentProvider({
      baseUrl: env.PAYMENT_PROVIDER_URL,
      timeoutMs: Math.min(10_000, Math.floor((jobType.function.timeoutSeconds * 1000) / 3)),
    }),
    logger,
    metrics,
    crash: crashHookFrom(env.TENANG_CRASH_POINTS),
  };
}

// Module scope: the environment fails at init, and clients live across invocations.
/** The deployed handler. */
export const handler = createHandler(depsFromEnv(parseFunctionEnv(SERVICE_NAME, PaymentConsumerEnvSchema)));
