/**
 * Error classes (R1). Transient errors are retried with backoff; permanent errors go to the DLQ
 * at once with their context; anything else is a bug and fails loudly.
 */

/** Base of every domain error; keeps the cause and an error class name for the DLQ. */
export abstract class TenangError extends Error {
  /** `transient` or `permanent`: how the consumer treats it. */
  public abstract readonly kind: 'transient' | 'permanent';

  public constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Worth retrying: timeouts, throttling, 5xx, a busy lock. */
export class TransientError extends TenangError {
  public readonly kind = 'transient' as const;
}

/** Never worth retrying: bad input, a rejected card, an unknown job type. */
export class PermanentError extends TenangError {
  public readonly kind = 'permanent' as const;
}

/** Bad input: a message or request that does not match its schema. Permanent. */
export class ValidationError extends PermanentError {
  /** One line per problem, each with the path of the offending field. */
  public readonly problems: readonly string[];

  public constructor(message: string, problems: readonly string[], options?: { cause?: unknown }) {
    super(`${message}: ${problems.join('; ')}`, options);
    this.problems = problems;
  }
}

/** A lease lock is held by someone else: retry later, never count it towards the DLQ. */
export class LockBusyError extends TransientError {}

/** A write carried a fencing token older than the resource's: the writer lost its lease (L3). */
export class StaleFencingTokenError extends PermanentError {}

/** The transition this job would make is already done: a duplicate (I2). */
export class TransitionAlreadyDoneError extends PermanentError {}

/** The transition is not allowed from the entity's current state. */
export class IllegalTransitionError extends PermanentError {}

/** The entity changed between the read and the conditional write (optimistic concurrency): read again and retry. */
export class ConcurrentUpdateError extends TransientError {}

/**
 * A dedup key is claimed by another attempt that has not finished, or died before it could
 * confirm or give the claim back: retry once that claim has expired (Q1).
 */
export class ClaimInFlightError extends TransientError {
  /** The dedup key the other attempt holds. */
  public readonly key: string;

  public constructor(key: string, options?: { cause?: unknown }) {
    super(`${key} is claimed by another attempt; retry once its claim has expired`, options);
    this.key = key;
  }
}

/** The circuit breaker is open: the dependency is failing, retry after it cools down (R4). */
export class CircuitOpenError extends TransientError {}

/** Degrade mode refused sheddable work at the producer (B3). */
export class ShedError extends PermanentError {}

/** The cache did not answer in time or at all: read from the source of truth instead (C5). */
export class CacheUnavailableError extends TransientError {}

/** How a consumer treats a failure. */
export type ErrorClass = 'transient' | 'permanent' | 'bug';

/** The error's name as recorded in the DLQ attributes. */
export function errorClassName(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

const TRANSIENT_NAMES = new Set([
  'TimeoutError',
  'AbortError',
  // The SDK's throttling names (@smithy/service-error-classification): several come as a 400
  // with a client fault (SQS RequestThrottled), which the status rule below would call permanent.
  'ThrottlingException',
  'Throttling',
  'ThrottledException',
  'RequestThrottled',
  'RequestThrottledException',
  'TooManyRequestsException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'LimitExceededException',
  'TransactionInProgressException',
  'BandwidthLimitExceeded',
  'EC2ThrottledException',
  'PriorRequestNotComplete',
  'SlowDown',
  'KmsThrottled',
  'InternalServerError',
  'ServiceUnavailable',
  'TransactionConflictException',
  'RequestTimeout',
  'RequestTimeoutException',
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
]);

/** Classifies an HTTP status from a provider: 408, 429 and 5xx are transient, other 4xx permanent. */
export function classifyHttpStatus(status: number): ErrorClass {
  if (status === 408 || status === 429 || status >= 500) return 'transient';
  if (status >= 400) return 'permanent';
  return 'bug';
}

/**
 * Classifies any thrown value. Domain errors carry their kind; SDK and network errors are
 * recognized by name, code or HTTP status; everything else is a bug.
 */
export function classifyError(error: unknown): ErrorClass {
  if (error instanceof TenangError) return error.kind;
  if (!(error instanceof Error)) return 'bug';
  const withMeta = error as Error & {
    code?: unknown;
    $retryable?: unknown;
    $metadata?: { httpStatusCode?: number };
    $fault?: unknown;
  };
  if (
    TRANSIENT_NAMES.has(error.name) ||
    (typeof withMeta.code === 'string' && TRANSIENT_NAMES.has(withMeta.code))
  ) {
    return 'transient';
  }
  if (withMeta.$retryable !== undefined) return 'transient';
  const status = withMeta.$metadata?.httpStatusCode;
  if (typeof status === 'number' && status >= 400) {
    // The SDK marks a 400 from a bad request as a client fault: retrying it cannot help.
    return classifyHttpStatus(status) === 'transient'
      ? 'transient'
      : withMeta.$fault === 'client'
        ? 'permanent'
        : 'bug';
  }
  return 'bug';
}
