/**
 * A job type declared once: `defineJob` names its payload schema and what it does; `jobHandler`
 * turns that into the consumer's Lambda handler, so the handler module of a new job type is its
 * business function and one line of wiring. The runner applies everything else from the job
 * type's config: envelope and payload validation, the failure policy (transient errors retried
 * with jittered backoff, permanent ones dead-lettered with their class, permission errors
 * held), degrade mode for work that is not critical (deferred, never dropped), sheddable work
 * past its useful age moved aside, and — for idempotent work — Powertools idempotency keyed on the
 * envelope's idempotency key: a record on the pipeline's idempotency table, or the job's own
 * persistence layer (a claim precondition, a write committed with the record), or none where the
 * job keeps itself idempotent. A job's per-process state (clients, stores, a circuit breaker) is
 * built once by its `setup`.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { JSONValue } from '@aws-lambda-powertools/commons/types';
import {
  IdempotencyAlreadyInProgressError,
  IdempotencyConfig,
  IdempotencyInconsistentStateError,
  IdempotencyKeyError,
  IdempotencyPersistenceLayerError,
  IdempotencyValidationError,
  makeIdempotent,
} from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import type { BasePersistenceLayer } from '@aws-lambda-powertools/idempotency/persistence';
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
import { classifyError, TenangError, TransientError, ValidationError } from '../core/errors';
import type { Clock } from '../core/ports';
import { newDynamoDbClient, newSqsClient, newSsmClient } from './aws/clients';
import { createSqsJobRunner, type JobContext, type JobHandler, type JobOutcome } from './aws/sqs-job-runner';
import { degradedOrFalse, SsmDegradeFlag } from './aws/ssm-degrade-flag';
import {
  TransactionalDynamoDBPersistenceLayer,
  type StagedPrecondition,
  type StagedWrite,
} from './aws/transactional-persistence';
import { crashHookFrom, noCrash, type CrashHook } from './crash';
import { postJson } from './http/provider-client';
import { checkFunctionEnv, FunctionEnvError, stageConfig } from './lambda-env';
import { observability } from './powertools';

/** A provider the job declared (`resources.providers`), called with the job's idempotency key. */
export interface ProviderClient {
  /** POSTs `body` as JSON to `<provider URL><path>`; 408/429/5xx and timeouts are transient, other 4xx permanent. */
  post<T = unknown>(path: string, body: unknown): Promise<T>;
}

/** What `setup` builds a job type's per-process state from (once, at the first invocation). */
export interface JobSetupContext {
  readonly jobType: ResolvedJobType;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** The declared tables' names. */
  readonly tables: Readonly<Partial<Record<TableName, string>>>;
  /** The declared providers' base URLs. */
  readonly providerUrls: Readonly<Record<string, string>>;
  /** Per-call provider timeout, ms (the definition's providerTimeoutMs, else a third of the function timeout). */
  readonly providerTimeoutMs: number;
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly clock: Clock;
  readonly random: Random;
  /** A declared table's name. @throws Error when the job type does not declare it */
  table(name: TableName): string;
  /** A declared provider's base URL. @throws Error when the job type does not declare it */
  providerUrl(name: string): string;
}

/** What a job's business function gets besides its payload. */
export interface JobRunContext<P = unknown, S = undefined> {
  readonly job: JobEnvelope<P>;
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
  /** What the definition's `setup` built (or the test's `state`). */
  readonly state: S;
  readonly clock: Clock;
  readonly random: Random;
  /** The chaos suite's crash points (TENANG_CRASH_POINTS); a no-op in production. */
  readonly crash: CrashHook;
  /**
   * Stages a business write that commits in ONE transaction with the job's idempotency record
   * (idempotency with a TransactionalDynamoDBPersistenceLayer only).
   * @throws Error with any other idempotency
   */
  readonly stage: (write: StagedWrite) => void;
}

/** A job asking to be run again later without counting as a failure (a busy dependency). */
export type JobDeferral = Extract<JobOutcome, { readonly kind: 'deferred' }>;

/**
 * Idempotency by a persistence layer of the job's own (Powertools' interface), e.g. a
 * TransactionalDynamoDBPersistenceLayer whose claim checks a business precondition and whose
 * completion commits the job's staged write.
 */
export interface CustomJobIdempotency<P, S> {
  /** Builds the persistence layer once per process. */
  readonly persistence: (ctx: JobSetupContext, state: S) => BasePersistenceLayer;
  /**
   * A condition on another item, checked in the claim (one transaction with the record, or one
   * UpdateItem of that item when the layer keeps the record on it, `guardedItemRecordAttr`):
   * nothing runs unless it held (needs a TransactionalDynamoDBPersistenceLayer). @default - none
   */
  readonly claimPrecondition?: (job: JobEnvelope<P>, state: S) => StagedPrecondition;
  /** Whether an error of the claim means the job's effect already happened: then duplicate_ignored. @default - never */
  readonly alreadyDone?: (error: unknown) => boolean;
}

/**
 * How an idempotent job type (`idempotent: true` in its config) stays idempotent:
 * - `'record'`: a Powertools record on the pipeline's idempotency table, keyed on the job type's
 *   name and the envelope's idempotency key;
 * - a CustomJobIdempotency: the same, over the job's own persistence layer;
 * - `'self'`: the job handles it itself (a dedup claim, a fenced write); the runner applies the rest.
 */
export type JobIdempotency<P, S> = 'record' | 'self' | CustomJobIdempotency<P, S>;

/** A job type's code: its payload schema and what it does. */
export interface JobDefinition<P, S = undefined> {
  /** The job type's name, as its config entry and every envelope name it. */
  readonly name: string;
  readonly payload: z.ZodMiniType<P>;
  /** Builds per-process state from the consumer's dependencies (clients, stores, breakers), once. @default - no state */
  readonly setup?: (ctx: JobSetupContext) => S;
  /**
   * Does the job. Throw a TransientError (or any unknown error) to retry, a PermanentError to
   * dead-letter; return a deferral to wait without spending an attempt, `duplicate_ignored` when
   * the job finds its effect already done.
   */
  readonly run: (payload: P, ctx: JobRunContext<P, S>) => Promise<void | JobOutcome>;
  /** How the job is idempotent, when its config says it is. @default 'record' */
  readonly idempotency?: JobIdempotency<P, S>;
  /**
   * The business idempotency key of a payload (I1): an envelope carrying another key is refused
   * as a ValidationError before anything is claimed. @default - any key
   */
  readonly idempotencyKey?: (payload: P) => string;
  /**
   * Standard queues: run a batch's records at the same time, or one after another so a circuit
   * breaker or rate limit in `setup`'s state sees each outcome before the next call. @default true
   */
  readonly processInParallel?: boolean;
  /** Per-call provider timeout, ms. @default a third of the function timeout */
  readonly providerTimeoutMs?: number;
}

/** Declares a job type's code (a typed identity: the name is checked here, the rest by the config). */
export function defineJob<P, S = undefined>(definition: JobDefinition<P, S>): JobDefinition<P, S> {
  if (!JOB_TYPE_NAME.test(definition.name)) {
    throw new Error(`defineJob: "${definition.name}" is not a job type name such as invoice.issue`);
  }
  return definition;
}

/** Idempotency records outlive a producer's 24 h dedup window. */
export const JOB_IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;

/**
 * The prefix of a job type's idempotency records' keys: its name, not the function's, so records
 * survive a rename or redeploy of the consumer (lib/ops/replay-effects.ts reads them so).
 */
export function jobIdempotencyKeyPrefix(jobTypeName: string): string {
  return jobTypeName;
}

/** What createJobHandler needs; tests pass clients bound to the emulator, or fakes as `state`. */
export interface JobHandlerDeps<S = unknown> {
  readonly jobType: ResolvedJobType;
  readonly queueUrl: string;
  readonly dlqUrl: string;
  readonly expiredQueueUrl?: string;
  readonly sqs: SQSClient;
  /** @default newDynamoDbClient() */
  readonly dynamodb?: DynamoDBClient;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Declared tables' names. @default {} */
  readonly tables?: Readonly<Partial<Record<TableName, string>>>;
  /** Declared providers' base URLs. @default {} */
  readonly providerUrls?: Readonly<Record<string, string>>;
  /** Reads the degrade flag; only work that is not critical asks. @default never degraded */
  readonly isDegraded?: () => Promise<boolean>;
  /** The job's per-process state. @default what the definition's setup builds from these deps */
  readonly state?: S;
  /** @default noCrash */
  readonly crash?: CrashHook;
  /** @default () => new Date() */
  readonly clock?: Clock;
  /** @default Math.random */
  readonly random?: Random;
}

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

/** Carries a deferral out of the idempotent function, so Powertools deletes the record instead of completing it. */
class DeferredRun extends Error {
  public constructor(public readonly deferral: JobDeferral) {
    super(deferral.reason);
    this.name = 'DeferredRun';
  }
}

/** The SQS batch handler of `definition` with `deps`. */
export function createJobHandler<P, S>(
  definition: JobDefinition<P, S>,
  deps: JobHandlerDeps<S>,
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  const { jobType } = deps;
  if (jobType.name !== definition.name) {
    throw new Error(`the job module defines ${definition.name} but the function runs ${jobType.name}`);
  }
  const random = deps.random ?? Math.random;
  const clock = deps.clock ?? ((): Date => new Date());
  const crash = deps.crash ?? noCrash;
  const tables = deps.tables ?? {};
  const providerUrls = deps.providerUrls ?? {};
  const dynamodb = deps.dynamodb ?? newDynamoDbClient();
  const functionTimeoutMs = jobType.function.timeoutSeconds * 1000;
  const timeoutMs = definition.providerTimeoutMs ?? Math.floor(functionTimeoutMs / 3);
  const declared = (kind: string, name: string, value: string | undefined): string => {
    if (value === undefined)
      throw new Error(`${jobType.name} declares no ${kind} "${name}" in its resources`);
    return value;
  };
  const setupContext: JobSetupContext = {
    jobType,
    logger: deps.logger,
    metrics: deps.metrics,
    tables,
    providerUrls,
    providerTimeoutMs: timeoutMs,
    dynamodb,
    sqs: deps.sqs,
    clock,
    random,
    table: (name) => declared('table', name, tables[name]),
    providerUrl: (name) => declared('provider', name, providerUrls[name]),
  };
  const state = (deps.state ?? definition.setup?.(setupContext)) as S;
  const providersFor = (job: JobEnvelope): Record<string, ProviderClient> =>
    Object.fromEntries(
      Object.entries(providerUrls).map(([name, base]) => [
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

  const custom = typeof definition.idempotency === 'object' ? definition.idempotency : undefined;
  const idempotency = jobType.idempotent ? (definition.idempotency ?? 'record') : 'none';
  if (!jobType.idempotent && custom !== undefined) {
    throw new Error(`${jobType.name} brings its own idempotency but its config says it is not idempotent`);
  }
  let transactional: TransactionalDynamoDBPersistenceLayer | undefined;

  const runOnce = async (job: JobEnvelope, ctx: JobContext): Promise<JobOutcome> => {
    // Every job type's point before its own code (a stuck-jobs drill hangs any job type here).
    crash('before-run');
    const answer = await definition.run(job.payload as P, {
      job: job as JobEnvelope<P>,
      attempt: ctx.attempt,
      logger: ctx.logger,
      metrics: deps.metrics,
      providers: providersFor(job),
      tables,
      dynamodb,
      sqs: deps.sqs,
      state,
      clock,
      random,
      crash,
      stage: (write) => {
        if (transactional === undefined) {
          throw new Error(`${jobType.name} stages a write but its idempotency commits none`);
        }
        transactional.stage(keyData(job), write);
      },
    });
    return answer === undefined ? { kind: 'done' } : answer;
  };

  let run: (job: JobEnvelope, ctx: JobContext) => Promise<JobOutcome> = runOnce;
  if (idempotency === 'record' || custom !== undefined) {
    const persistenceStore =
      custom === undefined
        ? new DynamoDBPersistenceLayer({
            tableName: declared('table', 'idempotency', tables.idempotency),
            awsSdkV3Client: dynamodb,
          })
        : custom.persistence(setupContext, state);
    if (persistenceStore instanceof TransactionalDynamoDBPersistenceLayer) transactional = persistenceStore;
    const precondition = custom?.claimPrecondition;
    if (precondition !== undefined && transactional === undefined) {
      throw new Error(`${jobType.name}: a claim precondition needs a TransactionalDynamoDBPersistenceLayer`);
    }
    const config = new IdempotencyConfig({
      eventKeyJmesPath: 'idempotencyKey',
      payloadValidationJmesPath: 'payload',
      throwOnNoIdempotencyKey: true,
      expiresAfterSeconds: JOB_IDEMPOTENCY_TTL_SECONDS,
      // Tells the runner that the answer is a stored one: the job ran before (duplicate_ignored).
      responseHook: (response) =>
        typeof response === 'object' && response !== null && !Array.isArray(response)
          ? { ...response, replayed: true }
          : response,
    });
    const keyPrefix = jobIdempotencyKeyPrefix(jobType.name);
    // Now, not at the first call: a precondition is staged under the key Powertools will hash.
    transactional?.configure({ config, keyPrefix });
    const once = makeIdempotent(
      async (job: JobEnvelope, ctx: JobContext): Promise<JobOutcome> => {
        // Without the precondition checked in the claim, the job would act blind.
        if (precondition !== undefined && transactional?.preconditionHeld(keyData(job)) !== true) {
          throw new Error('the claim precondition was not checked when the job was claimed');
        }
        const outcome = await runOnce(job, ctx);
        // A deferral must not complete the record: the job has not run yet.
        if (outcome.kind === 'deferred') throw new DeferredRun(outcome);
        return outcome;
      },
      { persistenceStore, config, keyPrefix },
    );
    run = async (job, ctx) => {
      const expected = definition.idempotencyKey?.(job.payload as P);
      if (expected !== undefined && job.idempotencyKey !== expected) {
        throw new ValidationError(`wrong idempotency key for this ${jobType.name} job`, [
          `idempotencyKey: expected ${expected}, got ${job.idempotencyKey}`,
        ]);
      }
      config.registerLambdaContext(ctx.lambdaContext);
      const release =
        precondition === undefined
          ? undefined
          : transactional?.stagePrecondition(keyData(job), precondition(job as JobEnvelope<P>, state));
      let outcome: JobOutcome & { replayed?: boolean };
      try {
        outcome = (await once(job, ctx)) as JobOutcome & { replayed?: boolean };
      } catch (error) {
        if (error instanceof DeferredRun) return error.deferral;
        if (error instanceof IdempotencyAlreadyInProgressError) {
          // Another delivery holds the record, or held it and ended without completing or
          // releasing it. Retrying before the record's in-progress expiry only spends attempts:
          // wait for it (the function timeout when the layer cannot tell), then the claim is ours.
          const until = transactional?.inProgressExpiryOf(keyData(job));
          const waitMs = until === undefined ? functionTimeoutMs : until - clock().getTime();
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
        if (custom?.alreadyDone?.(domain) === true) {
          ctx.logger.info('the job’s effect is already done; nothing run', {
            reason: domain instanceof Error ? domain.message : String(domain),
          });
          return { kind: 'duplicate_ignored' };
        }
        throw domain;
      } finally {
        release?.();
      }
      // After the idempotency record completed (with any staged write), before the ack.
      crash('after-commit');
      if (outcome.replayed === true) return { kind: 'duplicate_ignored' };
      return outcome;
    };
  }

  const handle: JobHandler<P> = async (job, ctx) => {
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
    now: clock,
    ...(definition.processInParallel === undefined
      ? {}
      : { processInParallel: definition.processInParallel }),
  });
}

/** What the idempotent function hashes: the key and the payload (the rest of the envelope varies per send). */
function keyData(job: JobEnvelope): JSONValue {
  return { idempotencyKey: job.idempotencyKey, payload: job.payload as JSONValue };
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
  /** Chaos suite and tests only: comma-separated crash points (lib/adapters/crash.ts). */
  TENANG_CRASH_POINTS: z.optional(z.string()),
});

/**
 * Builds the dependencies of `name`'s consumer from its environment and the bundled config.
 * @throws FunctionEnvError naming every missing or invalid variable: the runner's own and, once
 * the stage is known, each declared table's and provider's
 */
export function jobDepsFromEnv<S = never>(
  name: string,
  env: NodeJS.ProcessEnv = process.env,
): JobHandlerDeps<S> {
  const checked = checkFunctionEnv(JobEnvSchema, env);
  const problems = checked.success ? [] : [...checked.problems];
  const stage = env.TENANG_STAGE;
  const jobType =
    stage === undefined || stage === '' ? undefined : jobTypeByName(stageConfig(stage, env.AWS_REGION), name);
  const read = (variable: string, isUrl = false): string => {
    const value = env[variable];
    if (value === undefined || value === '') problems.push(`${variable}: is not set`);
    else if (isUrl && !URL.canParse(value)) problems.push(`${variable}: must be a URL`);
    return value ?? '';
  };
  const tables = Object.fromEntries(
    Object.keys(jobType?.resources.tables ?? {}).map((t) => [t, read(tableVariable(t))]),
  ) as Partial<Record<TableName, string>>;
  const providerUrls = Object.fromEntries(
    (jobType?.resources.providers ?? []).map((p) => [p, read(providerVariable(p), true)]),
  );
  if (!checked.success || jobType === undefined || problems.length > 0) {
    throw new FunctionEnvError(jobType?.consumer ?? name, problems);
  }
  const parsed = checked.data;
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
    crash: crashHookFrom(parsed.TENANG_CRASH_POINTS),
  };
}

/**
 * The deployed handler of a job module: `export const handler = jobHandler(invoiceIssue);`.
 * Built at the first invocation (so importing the module, e.g. in a test, reads no environment);
 * the clients then live across invocations.
 */
export function jobHandler<P, S>(
  definition: JobDefinition<P, S>,
): (event: SQSEvent, context: Context) => Promise<SQSBatchResponse> {
  let built: ((event: SQSEvent, context: Context) => Promise<SQSBatchResponse>) | undefined;
  return (event, context) => {
    built ??= createJobHandler(definition, jobDepsFromEnv<S>(definition.name));
    return built(event, context);
  };
}
