/**
 * A job type declared once: `defineJob` names its payload schema and what it does; `jobHandler`
 * turns that into the consumer's Lambda handler, so the handler module of a new job type is its
 * business function and one line of wiring. The runner applies everything else from the job
 * type's config: envelope and payload validation, the failure policy (transient errors retried
 * with jittered backoff, permanent ones dead-lettered with their class, permission errors
 * held), degrade mode for work that is not critical (deferred, never dropped), sheddable work
 * past its useful age moved aside, and — for idempotent work — Powertools idempotency on the
 * pipeline's idempotency table, keyed on the envelope's idempotency key.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { Logger } from '@aws-lambda-powertools/logger';
import type { Metrics } from '@aws-lambda-powertools/metrics';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import {
  jobTypeByName,
  providerVariable,
  tableVariable,
  type ResolvedJobType,
  type TableName,
} from '../config';
import * as z from '../config/zod';
import type { Random } from '../core/backoff';
import { consumerAdmission, degradeDeferSeconds, waitDeferSeconds } from '../core/deferral';
import { JOB_TYPE_NAME, type JobEnvelope } from '../core/envelope';
import { newDynamoDbClient, newSqsClient, newSsmClient } from './aws/clients';
import { createSqsJobRunner, type JobContext, type JobHandler, type JobOutcome } from './aws/sqs-job-runner';
import { degradedOrFalse, SsmDegradeFlag } from './aws/ssm-degrade-flag';
import { postJson } from './http/provider-client';
import { parseFunctionEnv, stageConfig } from './lambda-env';
import { observability } from './powertools';

/** A provider the job declared (`resources.providers`), called with the job's idempotency key. */
export interface ProviderClient {
  /** POSTs `body` as JSON to `<provider URL><path>`; 408/429/5xx and timeouts are transient, other 4xx permanent. */
  post<T = unknown>(path: string, body: unknown): Promise<T>;
}

/** What a job's business function gets besides its payload. */
export interface JobRunContext {
  readonly job: JobEnvelope<string>;
  /** 1-based attempt (the message's receive count). */
  readonly attempt: number;
  /** Every line carries the job's correlation id and idempotency key. */
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** The declared providers by name. */
  readonly providers: Readonly<Record<string, ProviderClient>>;
  /** The declared tables' names. */
  readonly tables: Readonly<Partial<Record<TableName, string>>>;
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
}

/** A job asking to be run again later without counting as a failure (a busy dependency). */
export type JobDeferral = Extract<JobOutcome, { readonly kind: 'deferred' }>;

/** A job type's code: its payload schema and what it does. */
export interface JobDefinition<P> {
  /** The job type's name, as its config entry and every envelope name it. */
  readonly name: string;
  readonly payload: z.ZodMiniType<P>;
  /**
   * Does the job. Throw a TransientError (or any unknown error) to retry, a PermanentError to
   * dead-letter; return a deferral to wait without spending an attempt.
   */
  readonly run: (payload: P, ctx: JobRunContext) => Promise<void | JobDeferral>;
  /** Per-call provider timeout, ms. @default a third of the function timeout */
  readonly providerTimeoutMs?: number;
}

/** Declares a job type's code (a typed identity: the name is checked here, the rest by the config). */
export function defineJob<P>(definition: JobDefinition<P>): JobDefinition<P> {
  if (!JOB_TYPE_NAME.test(definition.name)) {
    throw new Error(`defineJob: "${definition.name}" is not a job type name such as invoice.issue`);
  }
  return definition;
}

/** Idempotency records outlive a producer's 24 h dedup window. */
export const JOB_IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;

/** What createJobHandler needs; tests pass clients bound to the emulator. */
export interface JobHandlerDeps {
  readonly jobType: ResolvedJobType;
  readonly queueUrl: string;
  readonly dlqUrl: string;
  readonly expiredQueueUrl?: string;
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Declared tables' names. */
  readonly tables: Readonly<Partial<Record<TableName, string>>>;
  /** Declared providers' base URLs. */
  readonly providerUrls: Readonly<Record<string, string>>;
  /** Reads the degrade flag; only work that is not critical asks. @default never degraded */
  readonly isDegraded?: () => Promise<boolean>;
  /** @default Math.random */
  readonly random?: Random;
}

/** The SQS batch handler of `definition` with `deps`. */
export function createJobHandler<P>(
  definition: JobDefinition<P>,
  deps: JobHandlerDeps,
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  const { jobType } = deps;
  if (jobType.name !== definition.name) {
    throw new Error(`the job module defines ${definition.name} but the function runs ${jobType.name}`);
  }
  const random = deps.random ?? Math.random;
  const timeoutMs = definition.providerTimeoutMs ?? Math.floor((jobType.function.timeoutSeconds * 1000) / 3);
  const providersFor = (job: JobEnvelope<string>): Record<string, ProviderClient> =>
    Object.fromEntries(
      Object.entries(deps.providerUrls).map(([name, base]) => [
        name,
        {
          post: <T>(path: string, body: unknown): Promise<T> =>
            postJson<T>(`${base.replace(/\/$/, '')}${path}`, body, {
              idempotencyKey: job.idempotencyKey,
              correlationId: job.correlationId,
              timeoutMs,
            }),
        },
      ]),
    );

  const runOnce = async (job: JobEnvelope<string>, ctx: JobContext): Promise<JobOutcome> => {
    const answer = await definition.run(job.payload as P, {
      job,
      attempt: ctx.attempt,
      logger: ctx.logger,
      metrics: deps.metrics,
      providers: providersFor(job),
      tables: deps.tables,
      dynamodb: deps.dynamodb,
      sqs: deps.sqs,
    });
    return answer === undefined ? { kind: 'done' } : answer;
  };

  let run: (job: JobEnvelope<string>, ctx: JobContext) => Promise<JobOutcome> = runOnce;
  if (jobType.idempotent) {
    const table = deps.tables.idempotency;
    if (table === undefined) {
      throw new Error(`${jobType.name} is idempotent but declares no idempotency table in its resources`);
    }
    const config = new IdempotencyConfig({
      eventKeyJmesPath: 'idempotencyKey',
      payloadValidationJmesPath: 'payload',
      throwOnNoIdempotencyKey: true,
      expiresAfterSeconds: JOB_IDEMPOTENCY_TTL_SECONDS,
      responseHook: (response) =>
        typeof response === 'object' && response !== null && !Array.isArray(response)
          ? { ...response, replayed: true }
          : response,
    });
    const persistenceStore = new DynamoDBPersistenceLayer({
      tableName: table,
      awsSdkV3Client: deps.dynamodb,
    });
    // Keyed on the job type's name, not the function's: records survive a rename of the consumer.
    const once = makeIdempotent(
      async (job: JobEnvelope<string>, ctx: JobContext): Promise<JobOutcome> => runOnce(job, ctx),
      { persistenceStore, config, keyPrefix: jobType.name },
    );
    run = async (job, ctx) => {
      config.registerLambdaContext(ctx.lambdaContext);
      try {
        const outcome = (await once(job, ctx)) as JobOutcome & { replayed?: boolean };
        if (outcome.replayed === true) return { kind: 'duplicate_ignored' };
        return outcome;
      } catch (error) {
        if (!(error instanceof IdempotencyAlreadyInProgressError)) throw error;
        // Another delivery holds the record: wait for its in-progress expiry (the function
        // timeout) instead of spending attempts.
        return {
          kind: 'deferred',
          delaySeconds: waitDeferSeconds(jobType.function.timeoutSeconds * 1000, random),
          reason: 'another delivery of this job is in progress',
        };
      }
    };
  }

  const handle: JobHandler<string> = async (job, ctx) => {
    if (jobType.criticality !== 'critical' && deps.isDegraded !== undefined) {
      const degraded = await degradedOrFalse(deps.isDegraded, ctx.logger);
      if (consumerAdmission(jobType.criticality, degraded) === 'defer') {
        return { kind: 'deferred', delaySeconds: degradeDeferSeconds(random), reason: 'degrade mode' };
      }
    }
    return run(job, ctx);
  };

  return createSqsJobRunner({
    jobType,
    expectedType: jobType.name,
    payloadSchema: definition.payload,
    queueUrl: deps.queueUrl,
    dlqUrl: deps.dlqUrl,
    ...(deps.expiredQueueUrl === undefined ? {} : { expiredQueueUrl: deps.expiredQueueUrl }),
    sqs: deps.sqs,
    logger: deps.logger,
    metrics: deps.metrics,
    handle,
    random,
  });
}

const url = (): z.ZodMiniURL => z.url();
const nonEmpty = (): z.ZodMiniString<string> => z.string().check(z.minLength(1));

/** The variables every generic consumer reads (the stack sets them from the job type's declaration). */
const JobEnvSchema = z.object({
  TENANG_STAGE: nonEmpty(),
  AWS_REGION: nonEmpty(),
  QUEUE_URL: url(),
  DLQ_URL: url(),
  EXPIRED_QUEUE_URL: z.optional(url()),
  DEGRADE_FLAG: z.optional(nonEmpty()),
});

/** Builds the dependencies of `name`'s consumer from its environment and the bundled config. */
export function jobDepsFromEnv(name: string, env: NodeJS.ProcessEnv = process.env): JobHandlerDeps {
  const parsed = parseFunctionEnv(name, JobEnvSchema, env);
  const jobType = jobTypeByName(stageConfig(parsed.TENANG_STAGE, parsed.AWS_REGION), name);
  const missing: string[] = [];
  const read = (variable: string): string => {
    const value = env[variable];
    if (value === undefined || value === '') missing.push(`${variable}: is not set`);
    return value ?? '';
  };
  const tables = Object.fromEntries(
    Object.keys(jobType.resources.tables).map((t) => [t, read(tableVariable(t))]),
  ) as Partial<Record<TableName, string>>;
  const providerUrls = Object.fromEntries(
    jobType.resources.providers.map((p) => [p, read(providerVariable(p))]),
  );
  if (missing.length > 0)
    throw new Error(`Invalid environment of ${jobType.consumer}:\n  - ${missing.join('\n  - ')}`);
  const { logger, metrics } = observability(jobType.consumer);
  const flag =
    parsed.DEGRADE_FLAG === undefined ? undefined : new SsmDegradeFlag(newSsmClient(), parsed.DEGRADE_FLAG);
  return {
    jobType,
    queueUrl: parsed.QUEUE_URL,
    dlqUrl: parsed.DLQ_URL,
    ...(parsed.EXPIRED_QUEUE_URL === undefined ? {} : { expiredQueueUrl: parsed.EXPIRED_QUEUE_URL }),
    sqs: newSqsClient(),
    dynamodb: newDynamoDbClient(),
    logger,
    metrics,
    tables,
    providerUrls,
    ...(flag === undefined ? {} : { isDegraded: () => flag.isDegraded() }),
  };
}

/**
 * The deployed handler of a job module: `export const handler = jobHandler(invoiceIssue);`.
 * Built at the first invocation (so importing the module, e.g. in a test, reads no environment);
 * the clients then live across invocations.
 */
export function jobHandler<P>(
  definition: JobDefinition<P>,
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  let built: ((event: SQSEvent, context: Context) => Promise<SQSBatchResponse>) | undefined;
  return (event, context) => {
    built ??= createJobHandler(definition, jobDepsFromEnv(definition.name));
    return built(event, context);
  };
}
