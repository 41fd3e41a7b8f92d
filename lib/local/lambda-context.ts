/** Lambda contexts for calling a handler in-process (tests, benchmarks), as Lambda hands them over. */
import type { Context } from 'aws-lambda';

/** A Lambda context whose remaining time is fixed (Powertools idempotency bases its in-progress expiry on it). */
export function lambdaContext(remainingMs = 30_000, functionName = 'local-function'): Context {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:123456789012:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId: `req-${Date.now().toString(36)}`,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'test',
    getRemainingTimeInMillis: () => remainingMs,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** A Lambda context whose remaining time runs down in real time from `remainingMs`, as Lambda's does. */
export function runningLambdaContext(remainingMs: number, functionName: string): Context {
  const deadline = Date.now() + remainingMs;
  return {
    ...lambdaContext(remainingMs, functionName),
    getRemainingTimeInMillis: () => deadline - Date.now(),
  };
}
