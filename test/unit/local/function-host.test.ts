import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FunctionHost, type FunctionSpec } from '../../../lib/local/function-host';

const BUNDLE = `
export const handler = async (event, context) => {
  if (process.env.TENANG_CRASH_POINTS?.includes('after-side-effect')) process.kill(process.pid, 'SIGKILL');
  switch (event.action) {
    case 'echo': return { echo: event.value, fn: context.functionName, env: process.env.APP_SETTING, remaining: context.getRemainingTimeInMillis(), pid: process.pid, endpoint: process.env.AWS_ENDPOINT_URL };
    case 'throw': throw new TypeError('boom');
    case 'hang': return new Promise(() => undefined);
    case 'exit': process.exit(3);
    case 'cut-ipc': setTimeout(() => { setInterval(() => undefined, 1000); process.disconnect(); }, 20); return 'cut';
    default: return null;
  }
};`;

describe('Class: FunctionHost', () => {
  let dir: string;
  let host: FunctionHost;
  const lines: string[] = [];

  function spec(overrides: Partial<FunctionSpec> = {}): FunctionSpec {
    return {
      name: 'tenang-test-echo',
      bundleFile: path.join(dir, 'index.mjs'),
      handlerName: 'handler',
      timeoutSeconds: 1,
      memoryMb: 256,
      environment: { APP_SETTING: 'from-template' },
      ...overrides,
    };
  }

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-host-'));
    fs.writeFileSync(path.join(dir, 'index.mjs'), BUNDLE);
    fs.writeFileSync(path.join(dir, 'broken.mjs'), 'throw new Error("cannot init");');
  });

  beforeEach(() => {
    host = new FunctionHost(spec(), { AWS_ENDPOINT_URL: 'http://localhost:5055' }, (line) =>
      lines.push(line),
    );
  });

  afterEach(async () => {
    await host.stop();
  });

  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('when invoked, it runs the bundle with the deployed and endpoint variables and a Lambda context', async () => {
    // Act
    const result = await host.invoke({ action: 'echo', value: 42 });

    // Assess
    expect(result).toMatchObject({
      status: 'ok',
      coldStart: true,
      result: { echo: 42, fn: 'tenang-test-echo', env: 'from-template', endpoint: 'http://localhost:5055' },
    });
    const remaining = (result as { result: { remaining: number } }).result.remaining;
    expect(remaining).toBeGreaterThan(0);
    expect(remaining).toBeLessThanOrEqual(1000);
  });

  it('when invoked twice, the second invocation reuses the warm instance', async () => {
    // Act
    const first = await host.invoke({ action: 'echo' });
    const second = await host.invoke({ action: 'echo' });

    // Assess
    expect(second.coldStart).toBe(false);
    expect((second as { result: { pid: number } }).result.pid).toBe(
      (first as { result: { pid: number } }).result.pid,
    );
  });

  it('when a warm instance can no longer be reached (its channel closed, no exit seen yet), the next invocation reports a crash instead of throwing', async () => {
    // Prepare: an idle instance alive but unreachable, as a killed one is until its exit is handled.
    await host.invoke({ action: 'cut-ipc' });
    await new Promise((resolve) => setTimeout(resolve, 200));

    // Act
    const second = await host.invoke({ action: 'echo' });
    const third = await host.invoke({ action: 'echo' });

    // Assess: the unreachable instance's invocation is a crash; the next one starts a new instance.
    expect(second.status).toBe('crash');
    expect(third.status).toBe('ok');
    expect(third.coldStart).toBe(true);
  });

  it.each(['echo', 'throw'])(
    'when the handler settles (%s), it reports its own time and CPU time apart from the whole invocation',
    async (action) => {
      // Act
      const result = await host.invoke({ action });

      // Assess: the handler's time is measured inside the instance, within the invocation.
      expect(result.handlerMs).toEqual(expect.any(Number));
      expect(result.handlerMs).toBeGreaterThanOrEqual(0);
      // durationMs is whole milliseconds (Date.now), handlerMs a fraction: 1 ms of rounding.
      expect(result.handlerMs).toBeLessThanOrEqual(result.durationMs + 1);
      expect(result.handlerCpuMs).toEqual(expect.any(Number));
      expect(result.handlerCpuMs).toBeGreaterThanOrEqual(0);
    },
  );

  it('when the handler runs past the timeout, no handler time is reported', async () => {
    // Act
    const result = await host.invoke({ action: 'hang' });

    // Assess
    expect(result.status).toBe('timeout');
    expect(result.handlerMs).toBeUndefined();
    expect(result.handlerCpuMs).toBeUndefined();
  });

  it('when the handler throws, it reports the error type and message', async () => {
    // Act
    const result = await host.invoke({ action: 'throw' });

    // Assess
    expect(result).toMatchObject({ status: 'error', errorType: 'TypeError', errorMessage: 'boom' });
  });

  it('when the handler runs past the timeout, the instance is killed and the next call is a cold start', async () => {
    // Act
    const timedOut = await host.invoke({ action: 'hang' });
    const next = await host.invoke({ action: 'echo' });

    // Assess
    expect(timedOut).toMatchObject({ status: 'timeout', errorMessage: 'Task timed out after 1.00 seconds' });
    expect(timedOut.durationMs).toBeGreaterThanOrEqual(1000);
    expect(next).toMatchObject({ status: 'ok', coldStart: true });
  });

  it('when the process exits during an invocation, it reports a crash', async () => {
    // Act
    const result = await host.invoke({ action: 'exit' });

    // Assess
    expect(result).toMatchObject({ status: 'crash', errorMessage: expect.stringContaining('code 3') });
    expect(host.instanceCount()).toBe(0);
  });

  it('when a crash point is named for an invocation, that instance dies by SIGKILL like a real crash', async () => {
    // Act
    const crashed = await host.invoke({ action: 'echo' }, { crashPoints: ['after-side-effect'] });
    const healthy = await host.invoke({ action: 'echo' });

    // Assess
    expect(crashed).toMatchObject({ status: 'crash', errorMessage: expect.stringContaining('SIGKILL') });
    expect(healthy).toMatchObject({ status: 'ok' });
  });

  it('when the bundle fails to load, it reports an init error', async () => {
    // Prepare
    const broken = new FunctionHost(spec({ bundleFile: path.join(dir, 'broken.mjs') }), {});

    // Act
    const result = await broken.invoke({});
    await broken.stop();

    // Assess
    expect(result).toMatchObject({
      status: 'init-error',
      errorMessage: expect.stringContaining('cannot init'),
    });
  });
});
