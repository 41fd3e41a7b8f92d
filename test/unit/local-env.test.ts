import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LocalEnvError, startLocalEnv, type LocalEnvOptions } from '../../lib/local/env';
import { freePort } from '../../lib/local/ports';

const VARIABLES = [
  'AWS_ENDPOINT_URL',
  'REDIS_URL',
  'AWS_ACCESS_KEY_ID',
  'AWS_REGION',
  'TENANG_MOTO_PORT',
] as const;

describe('Function: startLocalEnv', () => {
  const savedEnv = { ...process.env };
  const closers: Array<() => Promise<void>> = [];

  beforeEach(() => {
    for (const name of VARIABLES) delete process.env[name];
  });

  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
    for (const name of Object.keys(process.env)) if (!(name in savedEnv)) delete process.env[name];
    Object.assign(process.env, savedEnv);
  });

  /** Options that never reach this machine's real moto, Redis or .venv. */
  async function isolatedOptions(overrides: LocalEnvOptions): Promise<LocalEnvOptions> {
    const projectRoot = await mkdtemp(path.join(tmpdir(), 'tenang-local-env-'));
    closers.push(() => rm(projectRoot, { recursive: true, force: true }));
    return {
      motoPort: await freePort(),
      redisPort: await freePort(),
      readinessDeadlineMs: 2000,
      projectRoot,
      installMoto: false,
      ...overrides,
    };
  }

  async function startHttpServer(status: number): Promise<string> {
    const server = http.createServer((_request, response) => response.writeHead(status).end('not moto'));
    const port = await listen(server);
    closers.push(() => close(server));
    return `http://127.0.0.1:${port}`;
  }

  /** A stand-in for Redis that answers every RESP command with +PONG. */
  async function startFakeRedis(): Promise<string> {
    const server = net.createServer((socket) => {
      socket.on('data', (data: Buffer) => {
        for (let i = 0; i < countCommands(data); i += 1) socket.write('+PONG\r\n');
      });
    });
    const port = await listen(server);
    closers.push(() => close(server));
    return `redis://127.0.0.1:${port}`;
  }

  describe('when python3 is missing', () => {
    it('throws a LocalEnvError naming the commands that install python3 and moto', async () => {
      // Prepare
      const options = await isolatedOptions({ python: 'tenang-no-such-python3' });

      // Act
      const starting = startLocalEnv(options);

      // Assess
      await expect(starting).rejects.toThrow(LocalEnvError);
      await expect(starting).rejects.toThrow('apt-get install python3');
      await expect(starting).rejects.toThrow(`python3 -m pip install 'moto[server]==5.2.1'`);
    });
  });

  describe('when python3 has no moto and installing it is not allowed', () => {
    it('throws a LocalEnvError with the pip command that installs moto', async () => {
      // Prepare: a python3 without site-packages cannot import moto
      const options = await isolatedOptions({});
      const python = path.join(options.projectRoot ?? '', 'python-without-moto');
      await writeFile(python, '#!/bin/sh\nexec python3 -S "$@"\n');
      await chmod(python, 0o755);

      // Act
      const starting = startLocalEnv({ ...options, python });

      // Assess
      await expect(starting).rejects.toThrow(LocalEnvError);
      await expect(starting).rejects.toThrow(`${python} -m pip install 'moto[server]==5.2.1'`);
      await expect(starting).rejects.toThrow("No module named 'moto'");
    });
  });

  describe('when the moto port answers something that is not moto', () => {
    it('throws a LocalEnvError naming the port and TENANG_MOTO_PORT', async () => {
      // Prepare
      const notMoto = new URL(await startHttpServer(404));
      const options = await isolatedOptions({ motoPort: Number(notMoto.port) });

      // Act
      const starting = startLocalEnv(options);

      // Assess
      await expect(starting).rejects.toThrow(LocalEnvError);
      await expect(starting).rejects.toThrow(`Port ${notMoto.port}`);
      await expect(starting).rejects.toThrow('TENANG_MOTO_PORT');
    });
  });

  describe('when TENANG_MOTO_PORT is not a port number', () => {
    it('throws a LocalEnvError quoting the value', async () => {
      // Prepare
      process.env.TENANG_MOTO_PORT = 'fifty';
      const options = await isolatedOptions({ motoPort: undefined });

      // Act
      const starting = startLocalEnv(options);

      // Assess
      await expect(starting).rejects.toThrow("TENANG_MOTO_PORT must be a port number (1-65535), got 'fifty'");
    });
  });

  describe('when redis-server is missing and no Redis answers', () => {
    it('throws a LocalEnvError with the apt-get command that installs it', async () => {
      // Prepare
      process.env.AWS_ENDPOINT_URL = await startHttpServer(404);
      const options = await isolatedOptions({ redisServer: 'tenang-no-such-redis-server' });

      // Act
      const starting = startLocalEnv(options);

      // Assess
      await expect(starting).rejects.toThrow(LocalEnvError);
      await expect(starting).rejects.toThrow('apt-get install redis-server');
    });
  });

  describe('when AWS_ENDPOINT_URL and REDIS_URL are set', () => {
    it('starts nothing and hands both on unchanged', async () => {
      // Prepare
      const endpoint = await startHttpServer(404);
      const redisUrl = await startFakeRedis();
      process.env.AWS_ENDPOINT_URL = endpoint;
      process.env.REDIS_URL = redisUrl;
      process.env.AWS_REGION = 'eu-west-1';
      const options = await isolatedOptions({
        python: 'tenang-no-such-python3',
        redisServer: 'tenang-no-such-redis-server',
      });

      // Act
      const env = await startLocalEnv(options);
      await env.stop();

      // Assess
      expect(env.started).toEqual([]);
      expect(env.env).toEqual({
        AWS_ENDPOINT_URL: endpoint,
        AWS_REGION: 'eu-west-1',
        AWS_DEFAULT_REGION: 'eu-west-1',
        REDIS_URL: redisUrl,
        AWS_EC2_METADATA_DISABLED: 'true',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      });
    });
  });

  describe('when AWS_ENDPOINT_URL is set but never answers', () => {
    it('gives up at the readiness deadline with a LocalEnvError naming the URL', async () => {
      // Prepare
      process.env.AWS_ENDPOINT_URL = `http://127.0.0.1:${await freePort()}`;
      const options = await isolatedOptions({ readinessDeadlineMs: 300 });

      // Act
      const starting = startLocalEnv(options);

      // Assess
      await expect(starting).rejects.toThrow(LocalEnvError);
      await expect(starting).rejects.toThrow(`AWS_ENDPOINT_URL ${process.env.AWS_ENDPOINT_URL}`);
    });
  });
});

/** Number of RESP arrays (commands) in a chunk: each starts with '*' at the start of a line. */
function countCommands(data: Buffer): number {
  return data
    .toString('utf8')
    .split('\r\n')
    .filter((line) => line.startsWith('*')).length;
}

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') reject(new Error('no TCP address'));
      else resolve(address.port);
    });
  });
}

function close(server: net.Server): Promise<void> {
  if (server instanceof http.Server) server.closeAllConnections();
  return new Promise((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
}
