// The execution environment of one local function instance: loads the bundled handler once
// (a cold start), then runs one invocation at a time as the parent asks over IPC, with a
// Lambda-like context. Plain JavaScript: it runs the bundle exactly as Lambda's Node runtime does.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const [bundleFile, handlerName] = process.argv.slice(2);
const functionName = process.env.AWS_LAMBDA_FUNCTION_NAME ?? 'local';
const region = process.env.AWS_REGION ?? 'us-east-1';

const loadStart = process.hrtime.bigint();
let handler;
try {
  const mod = await import(pathToFileURL(bundleFile).href);
  handler = mod[handlerName];
  if (typeof handler !== 'function') throw new Error(`${bundleFile} exports no function "${handlerName}"`);
} catch (error) {
  process.send?.({ type: 'init-error', message: String(error?.stack ?? error) });
  process.exit(1);
}
process.send?.({ type: 'ready', initMs: Number(process.hrtime.bigint() - loadStart) / 1e6 });

process.on('message', async (message) => {
  if (message?.type !== 'invoke') return;
  const deadline = Date.now() + message.timeoutMs;
  const context = {
    awsRequestId: message.requestId ?? randomUUID(),
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:123456789012:function:${functionName}`,
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? '128',
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
  // The handler's own time, from its call to its promise settling: what Lambda's REPORT line
  // calls Duration (and bills), without the host's part (IPC, the event's serialization). Beside
  // it, the CPU time the instance spent meanwhile: the part of it that was not waiting.
  const called = performance.now();
  const cpuAtCall = process.cpuUsage();
  const timing = () => {
    const cpu = process.cpuUsage(cpuAtCall);
    return { handlerMs: performance.now() - called, handlerCpuMs: (cpu.user + cpu.system) / 1000 };
  };
  try {
    const result = await handler(message.event, context);
    process.send?.({ type: 'result', requestId: context.awsRequestId, result: result ?? null, ...timing() });
  } catch (error) {
    process.send?.({
      type: 'error',
      requestId: context.awsRequestId,
      errorType: error?.name ?? 'Error',
      errorMessage: String(error?.message ?? error),
      ...timing(),
    });
  }
});
