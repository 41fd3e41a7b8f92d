import { createServer, type AddressInfo } from 'node:net';
import { FunctionEnvError, parseFunctionEnv } from '../../../lib/adapters/lambda-env';
import {
  CACHE_ENV_SHAPE,
  cacheConnectionSettings,
  cacheEnvCheck,
  RedisConnection,
} from '../../../lib/adapters/redis/connect';
import * as z from '../../../lib/config/zod';

const Schema = z.object({ ...CACHE_ENV_SHAPE }).check(cacheEnvCheck());

const AWS_ENV = {
  AWS_REGION: 'eu-west-1',
  CACHE_HOST: 'tenang-prod-abc.serverless.euw1.cache.amazonaws.com',
  CACHE_PORT: '6379',
  CACHE_NAME: 'tenang-prod',
  CACHE_USER: 'tenang-prod-app',
  CACHE_TLS: 'true',
  CACHE_AUTH: 'iam',
};

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    parseFunctionEnv('test-fn', Schema, env);
    return [];
  } catch (error) {
    if (error instanceof FunctionEnvError) return error.problems;
    throw error;
  }
}

/** A free loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('Function: cacheEnvCheck', () => {
  it('when REDIS_URL is set (the local platform), nothing else is needed', () => {
    // Act
    const problems = problemsOf({
      REDIS_URL: 'redis://127.0.0.1:6379',
      CACHE_NAME: 'tenang-dev',
      CACHE_AUTH: 'none',
    });

    // Assess
    expect(problems).toEqual([]);
  });

  it('when the AWS variables are complete, they parse', () => {
    // Act
    const problems = problemsOf(AWS_ENV);

    // Assess
    expect(problems).toEqual([]);
  });

  it('when neither REDIS_URL nor the endpoint is set, it names every missing variable at once', () => {
    // Act
    const problems = problemsOf({});

    // Assess
    expect(problems).toEqual([
      'CACHE_HOST: is not set (needed when REDIS_URL is not set)',
      'CACHE_PORT: is not set (needed when REDIS_URL is not set)',
      'CACHE_AUTH: is not set (needed when REDIS_URL is not set)',
    ]);
  });

  it('when CACHE_AUTH is iam without a name, user or region, it names each', () => {
    // Act
    const problems = problemsOf({ CACHE_HOST: 'h', CACHE_PORT: '6379', CACHE_AUTH: 'iam' });

    // Assess
    expect(problems).toEqual([
      'CACHE_NAME: is not set (needed for CACHE_AUTH=iam)',
      'CACHE_USER: is not set (needed for CACHE_AUTH=iam)',
      'AWS_REGION: is not set (needed for CACHE_AUTH=iam)',
    ]);
  });

  it('when values are malformed, it says which', () => {
    // Act
    const problems = problemsOf({
      ...AWS_ENV,
      CACHE_PORT: 'six',
      CACHE_AUTH: 'password',
      REDIS_URL: 'http://x',
    });

    // Assess
    expect(problems.map((p) => p.split(':')[0])).toEqual(['REDIS_URL', 'CACHE_AUTH', 'CACHE_PORT']);
  });
});

describe('Function: cacheConnectionSettings', () => {
  it('when REDIS_URL is set, it wins', () => {
    // Act
    const settings = cacheConnectionSettings({
      ...AWS_ENV,
      CACHE_AUTH: 'iam',
      CACHE_TLS: 'true',
      REDIS_URL: 'redis://127.0.0.1:6379',
    });

    // Assess
    expect(settings).toEqual({ kind: 'url', url: 'redis://127.0.0.1:6379' });
  });

  it('when on AWS, it connects to the endpoint with TLS and IAM for the serverless cache', () => {
    // Act
    const settings = cacheConnectionSettings({ ...AWS_ENV, CACHE_AUTH: 'iam', CACHE_TLS: 'true' });

    // Assess
    expect(settings).toEqual({
      kind: 'endpoint',
      host: AWS_ENV.CACHE_HOST,
      port: 6379,
      tls: true,
      iam: { cacheName: 'tenang-prod', userId: 'tenang-prod-app', region: 'eu-west-1', serverless: true },
    });
  });
});

describe('Class: RedisConnection', () => {
  it('when IAM auth is on, the first use signs a token as the password of the cache user, and errors never carry it', async () => {
    // Prepare
    const port = await closedPort();
    const errors: Error[] = [];
    const credentials = jest.fn(() =>
      Promise.resolve({ accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret', sessionToken: 'session' }),
    );
    const connection = new RedisConnection(
      {
        kind: 'endpoint',
        host: '127.0.0.1',
        port,
        tls: false,
        iam: { cacheName: 'tenang-unit', userId: 'tenang-unit-app', region: 'eu-west-1', serverless: true },
      },
      {
        commandTimeoutMs: 50,
        connectTimeoutMs: 200,
        credentials,
        onError: (e) => errors.push(e),
        errorReportIntervalMs: 0,
      },
    );

    try {
      // Act
      await connection.ready();

      // Assess
      const password = connection.client.options.password ?? '';
      expect(password.startsWith('tenang-unit/?Action=connect&')).toBe(true);
      expect(connection.client.options.username).toBe('tenang-unit-app');
      expect(credentials).toHaveBeenCalledTimes(1);
      expect(errors.length).toBeGreaterThan(0);
      for (const error of errors)
        expect(`${error.message} ${error.stack ?? ''}`).not.toContain('X-Amz-Signature');
    } finally {
      await connection.close();
    }
  });

  it('when Redis cannot be reached, the first use waits at most connectTimeoutMs and later uses return at once', async () => {
    // Prepare
    const port = await closedPort();
    const connection = new RedisConnection(
      { kind: 'url', url: `redis://127.0.0.1:${port}` },
      { commandTimeoutMs: 50, connectTimeoutMs: 300 },
    );

    try {
      // Act
      const t0 = Date.now();
      await connection.ready();
      const first = Date.now() - t0;
      const t1 = Date.now();
      await connection.ready();
      const second = Date.now() - t1;

      // Assess
      expect(first).toBeGreaterThanOrEqual(250);
      expect(first).toBeLessThan(1_500);
      expect(second).toBeLessThan(50);
      await expect(connection.client.get('k')).rejects.toThrow(/enableOfflineQueue|writeable|Connection/i);
    } finally {
      await connection.close();
    }
  });
});
