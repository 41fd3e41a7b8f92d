/**
 * `tenang/runtime`: what a consumer function is made of. The SQS job runner (envelope parsing,
 * failure policy, partial batch responses, deferral, DLQ with error class), the Powertools
 * persistence layer that commits a job's state transition with its idempotency record, the
 * lease lock with fencing tokens, claim-once dedup records and the outbox relay over them, the
 * circuit breaker and token bucket for providers, cache-aside over Redis, the error classes and
 * the backoff.
 */
export {
  defineJob,
  jobHandler,
  createJobHandler,
  jobDepsFromEnv,
  type JobDefinition,
  type JobSetupContext,
  type JobRunContext,
  type JobDeferral,
  type JobIdempotency,
  type CustomJobIdempotency,
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
  GUARDED_ITEM_RECORD_ATTR,
  type TransactionalPersistenceOptions,
  type TransactItem,
  type StagedWrite,
  type StagedPrecondition,
} from '../adapters/aws/transactional-persistence';
export {
  LeaseLock,
  withLease,
  everyInterval,
  LeaseLostError,
  LockHeldError,
  fenceAccepts,
  type LockHolder,
  type LockReleaseResult,
  type LockStore,
  type LockEvent,
  type Every,
  type TokenSource,
} from '../core/lease-lock';
export { CircuitBreaker, type CircuitBreakerOptions } from '../core/circuit-breaker';
export { TokenBucket, perInstanceRate, type TakeResult, type TokenBucketOptions } from '../core/token-bucket';
export {
  FleetRateLimit,
  type FleetRateLimitOptions,
  type RateLimit,
  type RateStore,
} from '../core/fleet-rate-limit';
export type { Clock } from '../core/ports';
export { noCrash, crashHookFrom, type CrashHook, type CrashPoint } from '../adapters/crash';
/** Metric names the runner and the dashboards share, and Powertools' units. */
export { METRIC } from '../config/metrics';
export { MetricUnit } from '@aws-lambda-powertools/metrics';
export { DynamoDbLockStore, type UnleasedWriteResult } from '../adapters/aws/dynamodb-lock-store';
export { DynamoDbDedupStore, type DynamoDbDedupStoreOptions } from '../adapters/aws/dynamodb-dedup-store';
export { DynamoDbRateStore } from '../adapters/aws/dynamodb-rate-store';
export type { ClaimResult, DedupStore } from '../core/ports';
export {
  relayFollowUps,
  type Enqueue,
  type FollowUp,
  type FollowUpOutcome,
  type OutboxDeps,
} from '../core/outbox';
export {
  CacheAside,
  invalidateKeys,
  ttlWithJitterMs,
  type CachePolicySettings,
  type CachedEntityCodec,
  type CachePolicyEvent,
  type CacheSource,
} from '../core/cache-policy';
export {
  cacheKeyspace,
  entityCacheKey,
  entityPrefix,
  entityKeyFields,
  keysForEntityChange,
  keysForKeyFieldsChange,
  InvalidEntityImageError,
  type CachedEntity,
  type CacheKeyspace,
  type EntityImage,
  type EntityKeyFields,
  type KeyInvalidation,
} from '../core/cache-keys';
export type { VersionedCache } from '../core/ports';
export {
  CACHE_ENV_SHAPE,
  cacheEnvCheck,
  cacheConnectionSettings,
  connectRedis,
  type CacheEnv,
  type CacheConnectionSettings,
} from '../adapters/redis/connect';
export { RedisCache, type RedisCacheConnection } from '../adapters/redis/redis-cache';
export {
  TenangError,
  TransientError,
  PermanentError,
  PermissionDeniedError,
  ValidationError,
  ClaimInFlightError,
  CacheUnavailableError,
  CircuitOpenError,
  StaleFencingTokenError,
  TransitionAlreadyDoneError,
  IllegalTransitionError,
  ConcurrentUpdateError,
  classifyError,
  errorClassName,
  type ErrorClass,
} from '../core/errors';
export { decideRetry, fullJitterDelaySeconds, type RetryDecision, type Random } from '../core/backoff';
export { admit, type Admission } from '../core/admission';
export { waitDeferSeconds } from '../core/deferral';
export {
  postJson,
  ProviderUnavailableError,
  ProviderRejectedError,
  type ProviderCallOptions,
} from '../adapters/http/provider-client';
export { SsmDegradeFlag, degradedOrFalse } from '../adapters/aws/ssm-degrade-flag';
export { reportPermissionDenial, type DenialReport } from '../adapters/aws/permission-denial';
export { sequenceNumberOf, streamItemKey } from '../adapters/aws/stream-record';
export { parseEnvelope, makeEnvelope, ENVELOPE_VERSION, type JobEnvelope } from '../core/envelope';
export { stageConfig, parseFunctionEnv, FunctionEnvError } from '../adapters/lambda-env';
export { observability } from '../adapters/powertools';
export { newSqsClient, newDynamoDbClient, newSsmClient } from '../adapters/aws/clients';
/**
 * zod/mini with English messages: payload schemas built with it validate like tenang's own. In a
 * bundled function prefer `import * as z from 'tenang/zod'`: this re-exported namespace keeps all
 * of zod/mini in the bundle.
 */
export * as z from '../config/zod';
/**
 * What a function of an app's own is built with, from the versions tenang runs on: Powertools'
 * batch processing and its logger and metrics, the SQS client, Lambda's event types.
 */
export { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
export type { Logger } from '@aws-lambda-powertools/logger';
export type { Metrics } from '@aws-lambda-powertools/metrics';
export { SQSClient, SendMessageCommand } from '@aws-sdk/client-sqs';
export type {
  APIGatewayProxyEventV2,
  APIGatewayProxyStructuredResultV2,
  Context,
  DynamoDBBatchResponse,
  DynamoDBRecord,
  DynamoDBStreamEvent,
} from 'aws-lambda';
