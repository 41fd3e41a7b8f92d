/**
 * inventory-consumer (L1–L4, D5, B3): reserves stock for order lines from the standard
 * inventory queue. Thin: the SQS job runner parses each record and applies the failure policy;
 * the core reserves under a lease lock per SKU whose fencing token the stock write checks. A
 * busy lock defers the message (re-sent with a delay, so waiting never moves it towards the
 * DLQ) and counts as lock contention; degrade mode defers the work.
 */
import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { newSqsClient, newDynamoDbClient, newSsmClient } from '../../lib/adapters/aws/clients';
import { DynamoDbInventoryStore } from '../../lib/adapters/aws/dynamodb-inventory-store';
import { DynamoDbLockStore } from '../../lib/adapters/aws/dynamodb-lock-store';
import { createSqsJobRunner, type JobHandler } from '../../lib/adapters/aws/sqs-job-runner';
import { crashHookFrom, type CrashHook } from '../../lib/adapters/crash';
import { degradedOrFalse, SsmDegradeFlag } from '../../lib/adapters/aws/ssm-degrade-flag';
import { parseFunctionEnv, stageConfig } from '../../lib/adapters/lambda-env';
import { observability } from '../../lib/adapters/powertools';
import { jobTypeByName, METRIC, type ResolvedJobType } from '../../lib/config';
import { StageSchema } from '../../lib/config/schema';
import * as z from '../../lib/config/zod';
import type { Random } from '../../lib/core/backoff';
import { consumerAdmission, degradeDeferSeconds } from '../../lib/core/deferral';
import { reserveStock, type InventoryStore } from '../../lib/core/inventory';
import {
  LeaseLock,
  type Every,
  type LockEvent,
  type LockStore,
  type TokenSource,
} from '../../lib/core/lease-lock';
import type { Clock } from '../../lib/core/ports';

/** Powertools service name of this function. */
export const SERVICE_NAME = 'inventory-consumer';

const nonEmpty = (): z.ZodMiniString<string> => z.string().check(z.minLength(1));

/** The function's environment. */
export const InventoryConsumerEnvSchema = z.object({
  TENANG_STAGE: StageSchema.shape.name,
  AWS_REGION: nonEmpty(),
  LOCKS_TABLE: nonEmpty(),
  INVENTORY_TABLE: nonEmpty(),
  DEGRADE_FLAG: nonEmpty(),
  QUEUE_URL: z.url(),
  DLQ_URL: z.url(),
  /** Crash points (the chaos suite and tests only, lib/adapters/crash.ts). */
  TENANG_CRASH_POINTS: z.optional(z.string()),
});
export type InventoryConsumerEnv = z.infer<typeof InventoryConsumerEnvSchema>;

/** What the handler needs; tests pass clients bound to the emulator, or fakes. */
export interface InventoryConsumerDeps {
  readonly jobType: ResolvedJobType;
  readonly queueUrl: string;
  readonly dlqUrl: string;
  readonly sqs: SQSClient;
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly locks: LockStore;
  readonly inventory: InventoryStore;
  /** Reads the degrade flag (cached for a few seconds). */
  readonly isDegraded: () => Promise<boolean>;
  /** @default leaseTtlMs(jobType) */
  readonly leaseTtlMs?: number;
  /** @default a third of the lease */
  readonly heartbeatMs?: number;
  /** @default everyInterval */
  readonly every?: Every;
  /** @default crypto.randomUUID */
  readonly newToken?: TokenSource;
  /** @default Math.random */
  readonly random?: Random;
  /** @default () => new Date() */
  readonly clock?: Clock;
  /** @default noCrash */
  readonly crash?: CrashHook;
}

/**
 * The SKU lease: a third of the function timeout. A crashed holder frees the SKU that soon; a
 * live one keeps it with heartbeats (D5) for as long as its work takes.
 */
export function leaseTtlMs(jobType: ResolvedJobType): number {
  return Math.floor((jobType.function.timeoutSeconds * 1000) / 3);
}

/** An inventory consumer handler. */
export function createHandler(
  deps: InventoryConsumerDeps,
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  const random = deps.random ?? Math.random;
  const clock = deps.clock ?? ((): Date => new Date());
  const lock = new LeaseLock({
    store: deps.locks,
    clock,
    newToken: deps.newToken ?? randomUUID,
    report: (event) => reportLockEvent(deps.logger, event),
  });

  const handle: JobHandler<'inventory.reserve'> = async (job, ctx) => {
    if (
      consumerAdmission(deps.jobType.criticality, await degradedOrFalse(deps.isDegraded, ctx.logger)) ===
      'defer'
    ) {
      return { kind: 'deferred', delaySeconds: degradeDeferSeconds(random), reason: 'degrade mode' };
    }
    const outcome = await reserveStock(
      {
        lock,
        store: deps.inventory,
        clock,
        random,
        leaseTtlMs: deps.leaseTtlMs ?? leaseTtlMs(deps.jobType),
        heartbeatMs: deps.heartbeatMs,
        every: deps.every,
        crash: deps.crash,
      },
      job.payload,
    );
    switch (outcome.kind) {
      case 'busy':
        deps.metrics.addMetric(METRIC.lockContention, MetricUnit.Count, 1);
        if (outcome.holderAgeMs !== undefined) {
          deps.metrics.addMetric(METRIC.lockAge, MetricUnit.Milliseconds, outcome.holderAgeMs);
        }
        return {
          kind: 'deferred',
          delaySeconds: outcome.deferSeconds,
          reason: `lock on SKU ${job.payload.sku} is busy`,
        };
      case 'reserved':
        ctx.logger.info('stock reserved', {
          orderId: job.payload.orderId,
          sku: job.payload.sku,
          quantity: job.payload.quantity,
          fence: outcome.fence,
        });
        return { kind: 'done' };
      case 'duplicate':
        return { kind: 'duplicate_ignored' };
    }
  };

  return createSqsJobRunner({
    jobType: deps.jobType,
    expectedType: 'inventory.reserve',
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

/** Refused releases and lost leases are warnings: the fence kept the data right, but an operator may ask why. */
function reportLockEvent(logger: Logger, event: LockEvent): void {
  switch (event.kind) {
    case 'release-refused':
      logger.warn('lock release refused: this owner no longer holds the lease', {
        resource: event.resource,
        holderFence: event.holder?.fence,
      });
      return;
    case 'lease-lost':
      logger.warn('lease lost before it could be extended', { resource: event.resource, fence: event.fence });
      return;
    case 'release-failed':
      logger.warn('lock release failed; the lease expires by itself', {
        resource: event.resource,
        error: event.error as Error,
      });
  }
}

/** The SDK clients the handler uses. */
interface InventoryClients {
  readonly sqs: SQSClient;
  readonly dynamo: DynamoDBClient;
  readonly ssm: SSMClient;
}

/** Builds the handler's dependencies from the environment. */
export function depsFromEnv(env: InventoryConsumerEnv, clients: InventoryClients): InventoryConsumerDeps {
  const { logger, metrics } = observability(SERVICE_NAME);
  const flag = new SsmDegradeFlag(clients.ssm, env.DEGRADE_FLAG);
  return {
    jobType: jobTypeByName(stageConfig(env.TENANG_STAGE, env.AWS_REGION), 'inventory.reserve'),
    queueUrl: env.QUEUE_URL,
    dlqUrl: env.DLQ_URL,
    sqs: clients.sqs,
    logger,
    metrics,
    locks: new DynamoDbLockStore(clients.dynamo, env.LOCKS_TABLE),
    inventory: new DynamoDbInventoryStore(clients.dynamo, env.INVENTORY_TABLE),
    isDegraded: () => flag.isDegraded(),
    crash: crashHookFrom(env.TENANG_CRASH_POINTS),
  };
}

// Module scope: the environment fails at init, and clients live across invocations.
/** The deployed handler. */
export const handler = createHandler(
  depsFromEnv(parseFunctionEnv(SERVICE_NAME, InventoryConsumerEnvSchema), {
    sqs: newSqsClient(),
    dynamo: newDynamoDbClient(),
    ssm: newSsmClient(),
  }),
);
