/**
 * `npm run local -- up` as a user runs it: a child process (`tsx bin/local.ts up`) on a moto and
 * a redis-server of its own deploys the pipeline and prints `export` lines; `tenang` (another
 * child process, with only those variables) and HTTP calls operate it; SIGINT stops it, exit
 * code 0, and every process it started is gone. ~40 s, most of it the cdk deploy.
 */
import type { ChildProcess } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pollUntil } from '../../lib/local/poll';
import { freePort } from '../../lib/local/ports';
import { API_URL_VARIABLE } from '../../lib/local/start';
import { ROOT, runTenang, spawnTsx } from '../helpers/cli-process';

jest.setTimeout(240_000);

const READY = /\[local\] ready: /;

/** The variables of `export NAME='value'` lines (shell quoting undone). */
function parseExports(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const m of text.matchAll(/^export ([A-Z_][A-Z0-9_]*)='((?:[^']|'\\'')*)'$/gm)) {
    const [, name, quoted] = m;
    if (name !== undefined && quoted !== undefined) env[name] = quoted.replaceAll(`'\\''`, "'");
  }
  return env;
}

/** Process ids below `pid` (children, their children…), Linux and macOS alike. */
function descendants(pid: number): number[] {
  let out = '';
  try {
    out = execFileSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' });
  } catch {
    return []; // pgrep exits 1 when there is none
  }
  const children = out.split('\n').filter(Boolean).map(Number);
  return children.flatMap((c) => [c, ...descendants(c)]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('Command: local up (a child process)', () => {
  let child: ChildProcess;
  let stdout = '';
  let stderr = '';
  let exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  let motoPort: number;
  /** What the user exports in the other shell; nothing else of this process's environment. */
  let operator: Record<string, string>;
  let started: { moto: number; redis: number; all: number[] };

  beforeAll(async () => {
    motoPort = await freePort();
    // Its own moto (the shared one's AWS_ENDPOINT_URL removed) and its own redis-server (no REDIS_URL).
    const env = Object.fromEntries(
      Object.entries(process.env).filter(
        (e): e is [string, string] => e[1] !== undefined && !['AWS_ENDPOINT_URL', 'REDIS_URL'].includes(e[0]),
      ),
    );
    // Its own process group: if the test fails half-way, afterAll can end the whole of it.
    child = spawnTsx(
      'bin/local.ts',
      ['up', '--quiet'],
      { ...env, TENANG_MOTO_PORT: String(motoPort) },
      { detached: true },
    );
    child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    await pollUntil(
      () =>
        child.exitCode !== null
          ? Promise.reject(new Error(`local up ended before it was ready:\n${stderr}`))
          : Promise.resolve(READY.test(stderr) ? true : undefined),
      { description: 'local up to be ready', deadlineMs: 180_000, intervalMs: 250 },
    );
    operator = { HOME: process.env.HOME ?? '/tmp', ...parseExports(stdout) };
    const pidOf = (re: RegExp): number => Number(re.exec(stderr)?.[1]);
    started = {
      moto: pidOf(/started moto on port \d+ \(pid (\d+)\)/),
      redis: pidOf(/started redis-server on \S+ \(pid (\d+)\)/),
      all: descendants(child.pid ?? -1),
    };
  });

  afterAll(() => {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    fs.rmSync(path.join(ROOT, '.tenang', `cdk.out-dev-${motoPort}`), { recursive: true, force: true });
  });

  it('when it is ready, it printed the export lines another shell needs', () => {
    // Assess
    expect(Object.keys(operator).sort()).toEqual(
      expect.arrayContaining([
        'AWS_ACCESS_KEY_ID',
        'AWS_ENDPOINT_URL',
        'AWS_ENDPOINT_URL_LAMBDA',
        'AWS_REGION',
        'AWS_SECRET_ACCESS_KEY',
        'REDIS_URL',
        'TENANG_STAGE',
        API_URL_VARIABLE,
      ]),
    );
    expect(operator.AWS_ENDPOINT_URL).toBe(`http://localhost:${motoPort}`);
    expect(operator.TENANG_STAGE).toBe('dev');
    expect(started.moto).toBeGreaterThan(0);
    expect(started.redis).toBeGreaterThan(0);
    expect(started.all).toEqual(expect.arrayContaining([started.moto, started.redis]));
  });

  it('when tenang status runs with that environment, it lists the pipeline consumers', async () => {
    // Act
    const ran = await runTenang(['status', '--json'], operator);

    // Assess
    expect({ code: ran.code, stderr: ran.stderr }).toEqual({ code: 0, stderr: '' });
    const status = JSON.parse(ran.stdout) as { consumers: { consumer: string; state?: string }[] };
    expect(status.consumers.map((c) => c.consumer).sort()).toEqual([
      'cache-invalidator',
      'inventory-consumer',
      'notification-consumer',
      'outbox-relay',
      'payment-consumer',
    ]);
  });

  it('when tenang pauses and resumes a consumer and lists a DLQ with that environment, each succeeds', async () => {
    // Act
    const paused = await runTenang(
      ['pause', 'notification-consumer', '--reason', 'up test', '--for', '5m'],
      operator,
    );
    const resumed = await runTenang(['resume', 'notification-consumer'], operator);
    const dlq = await runTenang(['dlq', 'list', 'payment.capture'], operator);

    // Assess
    expect([paused.code, resumed.code, dlq.code]).toEqual([0, 0, 0]);
    expect(paused.stdout).toMatch(/paused notification-consumer .*Enabled → Disabled/);
    expect(resumed.stdout).toMatch(/resumed notification-consumer .*Disabled → Enabled/);
    expect(dlq.stdout).toContain('tenang-dev-payment-capture-dlq.fifo');
  });

  it('when an order is posted to the printed API URL and paid, the pipeline marks it PAID', async () => {
    // Prepare
    const api = operator[API_URL_VARIABLE] ?? '';
    const json = { 'content-type': 'application/json' };

    // Act
    const created = await fetch(`${api}/orders`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({
        customerEmail: 'up@example.com',
        lines: [{ sku: 'sku-1', quantity: 1 }],
        amountMinor: 1200,
        currency: 'EUR',
      }),
    });
    const { orderId } = (await created.json()) as { orderId: string };
    const paid = await fetch(`${api}/orders/${orderId}/payments`, {
      method: 'POST',
      headers: { ...json, 'idempotency-key': `up-${orderId}` },
      body: JSON.stringify({ paymentId: `pay-${orderId}`, amountMinor: 1200, currency: 'EUR' }),
    });
    const state = await pollUntil(
      async () => {
        const read = (await (await fetch(`${api}/orders/${orderId}`)).json()) as { state?: string };
        return read.state === 'PAID' || read.state === 'RESERVED' ? read.state : undefined;
      },
      { description: `order ${orderId} to be PAID`, deadlineMs: 30_000, intervalMs: 250 },
    );

    // Assess
    expect([created.status, paid.status]).toEqual([201, 202]);
    expect(['PAID', 'RESERVED']).toContain(state);
  });

  it('when it gets SIGINT, it exits 0 and every process it started is gone', async () => {
    // Prepare: every process below it now (function instances started since it was ready too)
    const all = [...new Set([...started.all, ...descendants(child.pid ?? -1)])];

    // Act
    child.kill('SIGINT');
    const { code, signal } = await exited;

    // Assess
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(stderr).toContain('[local] stopped');
    const left = await pollUntil(
      () => {
        const still = all.filter(alive);
        return Promise.resolve(still.length === 0 ? still : undefined);
      },
      { description: 'the processes it started to end', deadlineMs: 5_000 },
    ).catch(() => all.filter(alive));
    expect(left).toEqual([]);
  });
});
