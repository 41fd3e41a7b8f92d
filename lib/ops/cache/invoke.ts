/**
 * The cache commands' default path (C6): Lambda Invoke (RequestResponse) on the stage's
 * cache-admin function, which runs in the cache's VPC with the cache client security group and
 * runs the operations there (lambdas/cache-admin). The operator needs AWS credentials allowed
 * lambda:InvokeFunction on that function, and no network path to the cache.
 */
import { InvokeCommand } from '@aws-sdk/client-lambda';
import { CACHE_ADMIN_SERVICE } from '../../config/metrics';
import type { CacheAdminAnswer, CacheAdminRequestInput } from '../../core/cache-admin';
import { CommandFailedError, type CliContext } from '../cli-context';

/** The stage's cache-admin function: `<stack>-cache-admin`, as TenangFunction names every function. */
export function cacheAdminFunctionName(ctx: Pick<CliContext, 'stackName'>): string {
  return `${ctx.stackName}-${CACHE_ADMIN_SERVICE}`;
}

/** The name of an AWS SDK error, or undefined. */
function errorName(error: unknown): string | undefined {
  return error instanceof Error ? error.name : undefined;
}

/** Whether `value` has the shape of an answer (the function's own schema wrote it). */
function isAnswer(value: unknown): value is CacheAdminAnswer {
  if (typeof value !== 'object' || value === null) return false;
  const status = (value as { status?: unknown }).status;
  return status === 'ok' || status === 'refused';
}

/** Invokes the cache-admin function with `request` and returns its answer; every failure says what to do. */
export async function runInvoked(
  ctx: CliContext,
  request: CacheAdminRequestInput,
): Promise<CacheAdminAnswer> {
  const functionName = cacheAdminFunctionName(ctx);
  let out;
  try {
    out = await ctx.clients.lambda.send(
      new InvokeCommand({
        FunctionName: functionName,
        InvocationType: 'RequestResponse',
        Payload: new TextEncoder().encode(JSON.stringify(request)),
      }),
    );
  } catch (error) {
    const name = errorName(error);
    const message = error instanceof Error ? error.message : String(error);
    if (name === 'ResourceNotFoundException')
      throw new CommandFailedError(
        `${functionName} does not exist in ${ctx.region}: is stage ${ctx.stage} deployed with a tenang version that has the cache-admin function? (${message})`,
        { cause: error },
      );
    if (name === 'AccessDeniedException')
      throw new CommandFailedError(
        `the credentials may not invoke ${functionName}: the cache commands need lambda:InvokeFunction on it (${message})`,
        { cause: error },
      );
    if (name === 'TooManyRequestsException')
      throw new CommandFailedError(`${functionName} is throttled, try again in a moment (${message})`, {
        cause: error,
      });
    throw error;
  }
  const text = out.Payload === undefined ? '' : new TextDecoder().decode(out.Payload);
  let payload: unknown;
  try {
    payload = text === '' ? undefined : JSON.parse(text);
  } catch {
    payload = undefined;
  }
  if (out.FunctionError !== undefined) {
    const e = (typeof payload === 'object' && payload !== null ? payload : {}) as Record<string, unknown>;
    throw new CommandFailedError(
      `${functionName} failed (${out.FunctionError}): ${String(e.errorType ?? 'Error')}: ${String(e.errorMessage ?? text)}; ` +
        `its log group /aws/lambda/${functionName} has the details. Every operation is safe to repeat once the cause is fixed`,
    );
  }
  if (!isAnswer(payload))
    throw new CommandFailedError(
      `${functionName} answered something that is not a cache-admin answer: ${text.slice(0, 200)}`,
    );
  return payload;
}
