import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { InvokeCommand, LambdaClient, ResourceNotFoundException } from '@aws-sdk/client-lambda';
import type { InvokeResult } from '../../../lib/local/function-host';
import { LocalEnvError } from '../../../lib/local/errors';
import {
  DEFAULT_ACCOUNT_CONCURRENCY,
  functionNameOf,
  startLambdaControl,
  type ControlInvoke,
  type LambdaControl,
} from '../../../lib/local/lambda-control';
import { ACCOUNT_CONCURRENCY_VARIABLE, accountConcurrencyFromEnv } from '../../../lib/local/platform';

const FUNCTION = 'tenang-unit-outbox-relay';

/** A stand-in for moto: records what reaches it and answers 200 `{"from":"upstream"}`. */
async function startUpstream(): Promise<{ url: string; paths: string[]; close(): Promise<void> }> {
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    paths.push(`${req.method ?? ''} ${req.url ?? ''}`);
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"from":"upstream"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    paths,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const ok = (result: unknown): InvokeResult => ({ status: 'ok', result, durationMs: 5, coldStart: false });

describe('Function: functionNameOf', () => {
  it.each([
    [FUNCTION, FUNCTION],
    [`${FUNCTION}:$LATEST`, FUNCTION],
    [`123456789012:function:${FUNCTION}`, FUNCTION],
    [`arn:aws:lambda:eu-west-1:123456789012:function:${FUNCTION}`, FUNCTION],
    [`arn:aws:lambda:eu-west-1:123456789012:function:${FUNCTION}:live`, FUNCTION],
  ])('when FunctionName is %s, it is the function %s', (reference, name) => {
    expect(functionNameOf(reference)).toBe(name);
  });
});

describe('Function: startLambdaControl (Invoke)', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let control: LambdaControl | undefined;
  let lambda: LambdaClient | undefined;
  const invoke = jest.fn<ReturnType<ControlInvoke>, Parameters<ControlInvoke>>();

  async function start(withInvoke: boolean): Promise<LambdaClient> {
    control = await startLambdaControl({ upstream: upstream.url, invoke: withInvoke ? invoke : undefined });
    lambda = new LambdaClient({
      endpoint: control.url,
      region: 'eu-west-1',
      credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
      maxAttempts: 1,
    });
    return lambda;
  }

  const text = (payload: Uint8Array | undefined): string => new TextDecoder().decode(payload);

  beforeEach(async () => {
    invoke.mockReset();
    upstream = await startUpstream();
  });

  afterEach(async () => {
    lambda?.destroy();
    await control?.close();
    await upstream.close();
    control = undefined;
    lambda = undefined;
  });

  it('when the function succeeds, it answers 200 with its JSON result and no function error', async () => {
    // Prepare
    invoke.mockResolvedValue(ok({ batchItemFailures: [] }));
    const client = await start(true);

    // Act
    const out = await client.send(
      new InvokeCommand({ FunctionName: FUNCTION, Payload: new TextEncoder().encode('{"Records":[]}') }),
    );

    // Assess
    expect(out.StatusCode).toBe(200);
    expect(out.FunctionError).toBeUndefined();
    expect(JSON.parse(text(out.Payload))).toEqual({ batchItemFailures: [] });
    expect(invoke).toHaveBeenCalledWith(FUNCTION, { Records: [] });
    expect(upstream.paths).toEqual([]);
  });

  it('when FunctionName is an ARN, it invokes the function it names', async () => {
    // Prepare
    invoke.mockResolvedValue(ok(null));
    const client = await start(true);

    // Act
    const out = await client.send(
      new InvokeCommand({ FunctionName: `arn:aws:lambda:eu-west-1:123456789012:function:${FUNCTION}` }),
    );

    // Assess
    expect(text(out.Payload)).toBe('null');
    expect(invoke).toHaveBeenCalledWith(FUNCTION, {});
  });

  it('when the function fails, it answers 200 with X-Amz-Function-Error Unhandled and the error payload, as AWS does', async () => {
    // Prepare
    invoke.mockResolvedValue({
      status: 'crash',
      errorType: 'Runtime.ExitError',
      errorMessage: 'exited (SIGKILL)',
      durationMs: 5,
      coldStart: true,
    });
    const client = await start(true);

    // Act
    const out = await client.send(new InvokeCommand({ FunctionName: FUNCTION }));

    // Assess
    expect(out.StatusCode).toBe(200);
    expect(out.FunctionError).toBe('Unhandled');
    expect(JSON.parse(text(out.Payload))).toEqual({
      errorType: 'Runtime.ExitError',
      errorMessage: 'exited (SIGKILL)',
      trace: [],
    });
  });

  it('when no such function is deployed, it answers ResourceNotFoundException', async () => {
    // Prepare
    invoke.mockResolvedValue(undefined);
    const client = await start(true);

    // Act
    const sent = client.send(new InvokeCommand({ FunctionName: 'nobody' }));

    // Assess
    await expect(sent).rejects.toBeInstanceOf(ResourceNotFoundException);
  });

  it('when the invocation is asynchronous (Event), it refuses it rather than pretend', async () => {
    // Prepare
    const client = await start(true);

    // Act
    const sent = client.send(new InvokeCommand({ FunctionName: FUNCTION, InvocationType: 'Event' }));

    // Assess
    await expect(sent).rejects.toMatchObject({ name: 'InvalidParameterValueException' });
    expect(invoke).not.toHaveBeenCalled();
  });

  it('when no invoke hook is given, Invoke goes to the upstream unchanged', async () => {
    // Prepare
    const client = await start(false);

    // Act
    const out = await client.send(new InvokeCommand({ FunctionName: FUNCTION }));

    // Assess
    expect(text(out.Payload)).toBe('{"from":"upstream"}');
    expect(upstream.paths).toEqual([`POST /2015-03-31/functions/${FUNCTION}/invocations`]);
  });
});

describe('Function: accountConcurrencyFromEnv', () => {
  it("when TENANG_LOCAL_ACCOUNT_CONCURRENCY is unset or empty, the quota is AWS's default 1,000", () => {
    expect(accountConcurrencyFromEnv({})).toBe(DEFAULT_ACCOUNT_CONCURRENCY);
    expect(accountConcurrencyFromEnv({ [ACCOUNT_CONCURRENCY_VARIABLE]: ' ' })).toBe(1000);
  });

  it("when it is a whole number (a new account's 10), that is the quota", () => {
    expect(accountConcurrencyFromEnv({ TENANG_LOCAL_ACCOUNT_CONCURRENCY: '10' })).toBe(10);
  });

  it.each(['0', '-5', '2.5', 'ten', '1e3'])(
    'when it is %s, it is refused naming the variable and the value',
    (raw) => {
      const read = (): number => accountConcurrencyFromEnv({ TENANG_LOCAL_ACCOUNT_CONCURRENCY: raw });
      // A LocalEnvError: bin/local's error funnel prints its message, as for a bad TENANG_MOTO_PORT.
      expect(read).toThrow(LocalEnvError);
      expect(read).toThrow(
        new Error(
          `TENANG_LOCAL_ACCOUNT_CONCURRENCY must be a whole number of at least 1 (the account's Lambda concurrency quota), got '${raw}'.`,
        ),
      );
    },
  );
});
