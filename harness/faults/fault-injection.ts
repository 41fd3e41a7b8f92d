/**
 * Fault injection into the AWS SDK clients of the functions (the chaos suite's DynamoDB throttling
 * and timeouts). Inactive unless the TENANG_FAULTS variable names a fault, which only the chaos
 * harness sets, per function instance, on a platform whose functions preload preload.ts
 * (faultPreloadArgv, preload-argv.ts); nothing that ships loads this module. A fault is injected inside the
 * SDK's retry loop, so the SDK retries it as it would a real one, and what survives the retries
 * reaches our code as the real error would.
 *
 * TENANG_FAULTS is a comma-separated list:
 * - `ddb-throttle=<rate>`: a request is refused with ProvisionedThroughputExceededException;
 * - `ddb-timeout=<rate>`: a request hangs for `timeout-ms`, then fails with TimeoutError, unsent;
 * - `ddb-lost-response=<rate>`: a request is applied, then its answer is lost (TimeoutError): the
 *   ambiguous outcome a real timeout has;
 * - `ddb-access-denied=<rate>`: a request is refused unsent with AccessDeniedException, as DynamoDB
 *   answers a role that lacks the action's grant (400, client fault, IAM's "is not authorized to
 *   perform: dynamodb:<Action> on resource: <table ARN>" message): the permission-denied drill's
 *   missing grant, while the local platform does not evaluate IAM itself;
 * - `ddb-throttle-at=<n>`, `ddb-timeout-at=<n>`, `ddb-lost-response-at=<n>`: that fault also hits
 *   the client's n-th request (1-based, SDK retries included), so a run with work is sure to see it
 *   once whatever the rates draw;
 * - `timeout-ms=<ms>`: how long a timed-out request hangs (@default 1000);
 * - `trace-locks`: prints one line per lease acquire/release the locks table answered, with its
 *   owner token, so a checker can verify that no release was made by a non-owner.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** The SDK faults of one function instance. */
export interface SdkFaults {
  readonly throttleRate: number;
  readonly timeoutRate: number;
  readonly lostResponseRate: number;
  /** Share of requests refused with AccessDeniedException (a missing grant). @default 0 */
  readonly accessDeniedRate?: number;
  /** The client's request (1-based, retries included) that is throttled whatever the rate. */
  readonly throttleAt?: number;
  /** The client's request that times out unsent whatever the rate. */
  readonly timeoutAt?: number;
  /** The client's request whose answer is lost whatever the rate. */
  readonly lostResponseAt?: number;
  /** @default 1000 */
  readonly timeoutMs: number;
  readonly traceLocks: boolean;
}

/** Prefix of a trace line (one JSON object after it). */
export const LOCK_TRACE_PREFIX = '[tenang-trace] lock ';

/** Prefix of the line printed for each injected fault (the chaos report counts them). */
export const FAULT_TRACE_PREFIX = '[tenang-trace] fault ';

/** One traced lease operation the locks table answered. */
export interface LockTrace {
  readonly op: 'acquire' | 'release';
  readonly resource: string;
  readonly owner: string;
  /** Whether the conditional write succeeded. */
  readonly ok: boolean;
  /** Epoch ms when the request was sent: the operation took effect between `start` and `at`. */
  readonly start: number;
  /** Epoch ms when the answer arrived. */
  readonly at: number;
}

/** The faults `spec` names; undefined when none (the middleware is then never added). */
export function parseSdkFaults(spec: string | undefined): SdkFaults | undefined {
  const parts = new Map(
    (spec ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean)
      .map((p) => {
        const [name, value] = p.split('=');
        return [name ?? '', value] as const;
      }),
  );
  const rate = (name: string): number => {
    const value = Number(parts.get(name) ?? 0);
    return Number.isFinite(value) ? Math.min(1, Math.max(0, value)) : 0;
  };
  const at = (name: string): number | undefined => {
    const value = Number(parts.get(name));
    return Number.isInteger(value) && value >= 1 ? value : undefined;
  };
  const faults: SdkFaults = {
    throttleRate: rate('ddb-throttle'),
    timeoutRate: rate('ddb-timeout'),
    lostResponseRate: rate('ddb-lost-response'),
    ...(parts.has('ddb-access-denied') ? { accessDeniedRate: rate('ddb-access-denied') } : {}),
    throttleAt: at('ddb-throttle-at'),
    timeoutAt: at('ddb-timeout-at'),
    lostResponseAt: at('ddb-lost-response-at'),
    timeoutMs: Number(parts.get('timeout-ms') ?? 1_000) || 1_000,
    traceLocks: parts.has('trace-locks'),
  };
  const active =
    faults.throttleRate > 0 ||
    faults.timeoutRate > 0 ||
    faults.lostResponseRate > 0 ||
    (faults.accessDeniedRate ?? 0) > 0 ||
    faults.throttleAt !== undefined ||
    faults.timeoutAt !== undefined ||
    faults.lostResponseAt !== undefined ||
    faults.traceLocks;
  return active ? faults : undefined;
}

function injected(name: string, message: string, extra: Record<string, unknown>): Error {
  return Object.assign(new Error(`${message} (injected by TENANG_FAULTS)`), { name, ...extra });
}

function throttled(): Error {
  return injected(
    'ProvisionedThroughputExceededException',
    'The level of configured provisioned throughput for the table was exceeded',
    {
      $fault: 'client',
      $metadata: { httpStatusCode: 400 },
      $retryable: { throttling: true },
    },
  );
}

/**
 * What DynamoDB answers a role without the grant: `commandName` (e.g. `UpdateItemCommand`) names
 * the action, `table` the resource, the function's own role the principal.
 */
function accessDenied(commandName: string, table: string | undefined): Error {
  const action = `dynamodb:${commandName.replace(/Command$/, '')}`;
  const region = process.env.AWS_REGION ?? 'us-east-1';
  const fn = process.env.AWS_LAMBDA_FUNCTION_NAME ?? 'function';
  const resource = `arn:aws:dynamodb:${region}:123456789012:table/${table ?? '*'}`;
  return injected(
    'AccessDeniedException',
    `User: arn:aws:sts::123456789012:assumed-role/${fn}/${fn} is not authorized to perform: ${action} on resource: ${resource} because no identity-based policy allows the ${action} action`,
    { $fault: 'client', $metadata: { httpStatusCode: 400 } },
  );
}

function timedOut(): Error {
  return injected('TimeoutError', 'Connection timed out after the request timeout', {
    code: 'ETIMEDOUT',
    $metadata: {},
  });
}

type Input = {
  readonly TableName?: string;
  readonly TransactItems?: readonly Record<string, { TableName?: string } | undefined>[];
  readonly Key?: Record<string, { S?: string } | undefined>;
  readonly UpdateExpression?: string;
  readonly ExpressionAttributeValues?: Record<string, { S?: string } | undefined>;
};

/** The lease operation a request is, when it is one (lib/adapters/aws/dynamodb-lock-store.ts). */
function leaseOp(commandName: string, input: Input): Omit<LockTrace, 'ok' | 'start' | 'at'> | undefined {
  if (commandName !== 'UpdateItemCommand') return undefined;
  const update = input.UpdateExpression ?? '';
  const owner = input.ExpressionAttributeValues?.[':owner']?.S;
  const resource = Object.values(input.Key ?? {})[0]?.S;
  if (owner === undefined || resource === undefined) return undefined;
  if (update.startsWith('SET #owner = :owner')) return { op: 'acquire', resource, owner };
  if (update.startsWith('REMOVE #owner')) return { op: 'release', resource, owner };
  return undefined;
}

/** The owner a failed conditional lease write found on the item, if it says. */
function heldBy(error: unknown): string | undefined {
  if (!(error instanceof Error) || error.name !== 'ConditionalCheckFailedException') return undefined;
  return (error as { Item?: Record<string, { S?: string }> }).Item?.owner?.S;
}

/** Adds the fault middleware to a client's stack. */
export function addSdkFaults(
  stack: DynamoDBClient['middlewareStack'],
  faults: SdkFaults,
  random: () => number = Math.random,
  write: (line: string) => void = (line) => void process.stdout.write(`${line}\n`),
): void {
  let requests = 0;
  stack.add(
    (next, context) => async (args) => {
      const commandName = (context as { commandName?: string }).commandName ?? '';
      requests += 1;
      const request = requests;
      // Drawn only when the fault is on: the other faults' draws stay as they were.
      const accessDeniedRate = faults.accessDeniedRate ?? 0;
      if (accessDeniedRate > 0 && random() < accessDeniedRate) {
        write(`${FAULT_TRACE_PREFIX}ddb-access-denied ${commandName}`);
        const input = args.input as Input;
        const table = input.TableName ?? Object.values(input.TransactItems?.[0] ?? {})[0]?.TableName;
        throw accessDenied(commandName, table);
      }
      if (request === faults.throttleAt || random() < faults.throttleRate) {
        write(`${FAULT_TRACE_PREFIX}ddb-throttle ${commandName}`);
        throw throttled();
      }
      if (request === faults.timeoutAt || random() < faults.timeoutRate) {
        write(`${FAULT_TRACE_PREFIX}ddb-timeout ${commandName}`);
        await new Promise((resolve) => setTimeout(resolve, faults.timeoutMs));
        throw timedOut();
      }
      const lease = faults.traceLocks ? leaseOp(commandName, args.input as Input) : undefined;
      let ok = false;
      const start = Date.now();
      try {
        const result = await next(args);
        ok = true;
        if (request === faults.lostResponseAt || random() < faults.lostResponseRate) {
          write(`${FAULT_TRACE_PREFIX}ddb-lost-response ${commandName}`);
          throw timedOut();
        }
        return result;
      } catch (error) {
        // An acquire resent after its first attempt was applied but not answered (a request
        // timeout, or the SDK's retry of one) fails its condition on its own owner: the store
        // reads that as acquired (dynamodb-lock-store.ts), so the trace must too.
        if (lease?.op === 'acquire' && heldBy(error) === lease.owner) ok = true;
        throw error;
      } finally {
        if (lease !== undefined)
          write(`${LOCK_TRACE_PREFIX}${JSON.stringify({ ...lease, ok, start, at: Date.now() })}`);
      }
    },
    { step: 'finalizeRequest', priority: 'low', name: 'tenangFaultInjection' },
  );
}

/** Adds the faults TENANG_FAULTS names, if any, to `client`; returns it. */
export function withSdkFaults(
  client: DynamoDBClient,
  spec: string | undefined = process.env.TENANG_FAULTS,
): DynamoDBClient {
  const faults = parseSdkFaults(spec);
  if (faults !== undefined) addSdkFaults(client.middlewareStack, faults);
  return client;
}

/**
 * Every later instance of `functionName` on `platform` runs with the SDK faults `spec` names; an
 * empty spec lifts them (the platform must have been started with faultPreloadArgv()).
 */
export function setFaults(
  platform: { setInstanceEnvironment(fn: string, variables: Readonly<Record<string, string>>): void },
  functionName: string,
  spec: string,
): void {
  platform.setInstanceEnvironment(functionName, spec.length === 0 ? {} : { TENANG_FAULTS: spec });
}
