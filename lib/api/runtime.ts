/**
 * `tenang/runtime`: what a consumer function is made of. The SQS job runner (envelope parsing,
 * failure policy, partial batch responses, deferral, DLQ with error class), the Powertools
 * persistence layer that commits a job's state transition with its idempotency record, the
 * lease lock with fencing tokens, cache-aside over Redis, the error classes and the backoff.
 */
export {
  defineJob,
  jobHandler,
  createJobHandler,
  jobDepsFromEnv,
  type JobDefinition,
  type JobRunContext,
  type JobDeferral,
  type JobHandlerDeps,
  type ProviderClient,
} from '../adapters/define-job';
export {
  createSqsJobRunner,
  RetryLaterError,
  DLQ_ATTRIBUTE,
  EXPIRED_ATTRIBUTE,
  type JobHandler,
  type JobOutcome,
  type JobContext,
  type SqsJobRunnerOptions,
} from '../adapters/aws/sqs-job-runner';
export {
  TransactionalDynamoDBPersistenceLayer,
  type TransactionalPersistenceOptions,
  type TransactItem,
} from '../adapters/aws/transactional-persistence';
export { LeaseLock, withLease, LeaseLostError, LockHeldError, type LockStore } from '../core/lease-lock';
export { DynamoDbLockStore } from '../adapters/aws/dynamodb-lock-store';
export { CacheAside, invalidateKeys, ttlWithJitterMs, type CachePolicySettings } from '../core/cache-policy';
export { RedisCache, type RedisCacheOptions } from '../adapters/redis/redis-cache';
export {
  TenangError,
  TransientError,
  PermanentError,
  PermissionDeniedError,
  ValidationError,
  classifyError,
  errorClassName,
  type ErrorClass,
} from '../core/errors';
export { decideRetry, fullJitterDelaySeconds, type RetryDecision } from '../core/backoff';
export { parseEnvelope, makeEnvelope, ENVELOPE_VERSION, type JobEnvelope } from '../core/envelope';
export { stageConfig, parseFunctionEnv, FunctionEnvError } from '../adapters/lambda-env';
export { observability } from '../adapters/powertools';
export { newSqsClient, newDynamoDbClient, newSsmClient } from '../adapters/aws/clients';
/** zod/mini with English messages: payload schemas built with it validate like tenang's own. */
export * as z from '../config/zod';
