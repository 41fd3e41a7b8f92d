/**
 * Error classes (R1). Transient errors are retried with backoff; permanent errors go to the DLQ
 * at once with their context; deployment errors (a denied permission) are held until the
 * deployment is fixed and never dead-lettered for it; anything else is a bug and fails loudly.
 */

/** Base of every domain error; keeps the cause and an error class name for the DLQ. */
export abstract class TenangError extends Error {
  /** `transient`, `permanent` or `deployment`: how the consumer treats it. */
  public abstract readonly kind: 'transient' | 'permanent' | 'deployment';

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

/**
 * The deployment refuses this function an action it needs: an IAM grant is missing, a key or
 * resource policy, a permissions boundary or an SCP denies it. Neither the job nor time is at
 * fault, so it is neither permanent (the job is fine: dead-lettering it, and with it every job of
 * the queue, turns one missing grant into a drained queue) nor transient (no retry within a job's
 * attempts can help; only a fixed deployment can). Consumers hold the work and page instead.
 */
export class PermissionDeniedError extends TenangError {
  public readonly kind = 'deployment' as const;
  /** The denied action, e.g. `sqs:SendMessage`, when known. */
  public readonly action: string | undefined;
  /** The resource the action was denied on (an ARN), when known. */
  public readonly resource: string | undefined;

  public constructor(message: string, options?: { cause?: unknown; action?: string; resource?: string }) {
    super(message, options);
    this.action = options?.action;
    this.resource = options?.resource;
  }
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
export type ErrorClass = 'transient' | 'permanent' | 'deployment' | 'bug';

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
 * Error codes of AWS's access denials as the SDK v3 raises them, after {@link unqualified} strips a
 * namespace (`com.amazon.coral.service#`) or a service prefix (`KMS.`):
 * - `AccessDeniedException`: JSON and REST-JSON services (DynamoDB, SSM, KMS, Lambda, CloudWatch
 *   Logs, EventBridge, X-Ray), and SQS's `__type` when the query-compatibility header is absent;
 * - `AccessDenied`: SQS and CloudWatch, whose JSON protocols are query-compatible: the SDK names
 *   the error after the `x-amzn-query-error: AccessDenied;Sender` header, not after `__type`
 *   (@aws-sdk/core AwsJsonRpcProtocol.handleError, loadJsonRpcErrorCode reads the code first);
 *   STS, IAM, CloudFormation and S3 too;
 * - `KmsAccessDenied`, code `KMS.AccessDeniedException`: SQS refused by the queue's KMS key
 *   (@aws-sdk/client-sqs models it); `KMSAccessDeniedException`: Lambda and others, same cause;
 * - `AuthorizationError` (SNS, query), `AuthorizationErrorException` (SNS over JSON);
 * - `UnauthorizedOperation` (EC2, e.g. a VPC function's network interfaces).
 */
const ACCESS_DENIED_CODES = new Set([
  'AccessDeniedException',
  'AccessDenied',
  'KmsAccessDenied',
  'KMSAccessDeniedException',
  'AuthorizationError',
  'AuthorizationErrorException',
  'UnauthorizedOperation',
]);

/** How deep {@link permissionDenial} follows `cause`: wrappers of wrappers, never a cycle. */
const MAX_CAUSE_DEPTH = 8;

/** What is known of an access denial: its code and what AWS's message names. */
export interface PermissionDenial {
  /** The error code as recognized, e.g. `AccessDenied`, `KMS.AccessDeniedException`. */
  readonly code: string;
  /** The denied action, e.g. `dynamodb:UpdateItem`, when the message names it. */
  readonly action: string | undefined;
  /** The resource it was denied on, when the message names it. */
  readonly resource: string | undefined;
  /** Who was denied (an assumed-role ARN), when the message names it. */
  readonly principal: string | undefined;
  /** The denial's own message. */
  readonly message: string;
}

/** `com.amazon.coral.service#AccessDeniedException:http://…` → `AccessDeniedException`; a service prefix stays (`KMS.AccessDeniedException`). */
function unqualified(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0) return undefined;
  const afterNamespace = value.slice(value.lastIndexOf('#') + 1);
  const colon = afterNamespace.indexOf(':');
  return colon === -1 ? afterNamespace : afterNamespace.slice(0, colon);
}

/** The access-denied code an error carries by name, `Code`, `code`, `Error.Code` or `__type`. */
function accessDeniedCode(error: Error): string | undefined {
  const e = error as Error & { Code?: unknown; code?: unknown; Error?: { Code?: unknown }; __type?: unknown };
  for (const candidate of [e.name, e.Code, e.code, e.Error?.Code, e.__type]) {
    const code = unqualified(candidate);
    // `KMS.AccessDeniedException` is an AccessDeniedException of KMS behind another service.
    if (code !== undefined && ACCESS_DENIED_CODES.has(code.slice(code.lastIndexOf('.') + 1))) return code;
  }
  return undefined;
}

/**
 * `User: arn:aws:sts::123456789012:assumed-role/R/fn is not authorized to perform: sqs:SendMessage
 * on resource: arn:aws:sqs:eu-west-1:123456789012:q because no identity-based policy allows …`
 * (IAM's wording for every service; "with an explicit deny in …" when a policy denies it).
 */
const NOT_AUTHORIZED =
  /(?:User: (\S+) )?is not authorized to perform:? ([A-Za-z0-9-]+:[A-Za-z0-9*]+)(?: on resource:? (\S+))?/;
/** SQS's older wording: `Access to the resource https://sqs.us-east-1.amazonaws.com/ is denied.` */
const ACCESS_TO_RESOURCE = /Access to the resource (\S+) is denied/;

function denialOf(
  code: string,
  message: string,
  known?: { action?: string; resource?: string; principal?: string },
): PermissionDenial {
  const named = NOT_AUTHORIZED.exec(message);
  const resource = named?.[3] ?? ACCESS_TO_RESOURCE.exec(message)?.[1];
  return {
    code,
    action: known?.action ?? named?.[2],
    resource: known?.resource ?? resource?.replace(/[.,;]+$/, ''),
    principal: known?.principal ?? named?.[1],
    message,
  };
}

/**
 * The access denial behind `error`, if there is one: the error itself, or any error in its
 * `cause` chain (the runner's own wrappers, Powertools idempotency errors that wrap the persistence
 * layer's error, a domain error wrapping an SDK call). A denial anywhere in the chain wins over
 * what a wrapper concluded: a missing grant is a fact about the deployment, not about the job.
 */
export function permissionDenial(error: unknown): PermissionDenial | undefined {
  const seen = new Set<unknown>();
  let current: unknown = error;
  for (
    let depth = 0;
    depth <= MAX_CAUSE_DEPTH && current instanceof Error && !seen.has(current);
    depth += 1
  ) {
    seen.add(current);
    if (current instanceof PermissionDeniedError) {
      const inner = permissionDenial(current.cause);
      return denialOf(inner?.code ?? current.name, current.message, {
        action: current.action ?? inner?.action,
        resource: current.resource ?? inner?.resource,
        principal: inner?.principal,
      });
    }
    const code = accessDeniedCode(current);
    if (code !== undefined) return denialOf(code, current.message);
    current = current.cause;
  }
  return undefined;
}

/**
 * Classifies any thrown value. An access denial, wherever it is in the cause chain, is a
 * deployment error; domain errors carry their kind; SDK and network errors are recognized by
 * name, code or HTTP status; everything else is a bug.
 */
export function classifyError(error: unknown): ErrorClass {
  if (permissionDenial(error) !== undefined) return 'deployment';
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
