/**
 * The `smoke` scenario end to end (what `npm start -- --scenario smoke` runs): its own moto on a
 * free port (not the shared one globalSetup reuses), its own redis-server, a real cdk deploy,
 * ~30 s of traffic with every incident, the drain, the invariants and the report files.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pingRedis, probeHttp } from '../../lib/local/probes';
import { runScenario, FUNCTION_LOG, type ScenarioOutcome } from '../../lib/local/scenario';
import { freePort } from '../../lib/local/ports';

/** Variables the scenario's environment depends on; globalSetup points some at the shared moto. */
const ENV_KEYS = ['AWS_ENDPOINT_URL', 'TENANG_MOTO_PORT', 'REDIS_URL'] as const;

describe('Local platform: the smoke scenario', () => {
  const savedEnv = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
  const lines: string[] = [];
  let reportsDir: string;
  let motoPort: number;
  let outcome: ScenarioOutcome | undefined;

  beforeAll(async () => {
    reportsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-smoke-'));
    motoPort = await freePort();
    // startLocalEnv prefers AWS_ENDPOINT_URL (the shared moto) over TENANG_MOTO_PORT.
    delete process.env.AWS_ENDPOINT_URL;
    process.env.TENANG_MOTO_PORT = String(motoPort);
    outcome = await runScenario({
      scenario: 'smoke',
      reportsDir,
      tty: false,
      log: (line) => lines.push(line),
      out: (text) => lines.push(text),
    });
  }, 240_000);

  afterAll(() => {
    for (const [k, v] of Object.entries(savedEnv)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    fs.rmSync(reportsDir, { recursive: true, force: true });
    // The platform keeps one cloud assembly per emulator port; this port was used once.
    if (outcome?.assemblyDir !== undefined) fs.rmSync(outcome.assemblyDir, { recursive: true, force: true });
  });

  function report(): NonNullable<ScenarioOutcome['report']> {
    if (outcome?.report === undefined)
      throw new Error(`the scenario produced no report:\n${lines.join('\n')}`);
    return outcome.report;
  }

  it('when the run is over, every invariant holds', () => {
    // Assess: the violations, if any, are the message.
    const violated = report()
      .invariants.filter((i) => !i.holds)
      .map((i) => `${i.name}: ${i.violations.join('; ')}`);
    expect(violated).toEqual([]);
    expect(report().invariants.length).toBeGreaterThanOrEqual(8);
    expect(report().ok).toBe(true);
  });

  it('when the run is over, alarms fired, CloudWatch published their notifications to the alarm topic and each reached its confirmed subscriber', () => {
    // The poison incident fills the DLQs: their alarms owe notifications, which the topic policy
    // must let cloudwatch.amazonaws.com publish (IAM is enforced on the platform), and which SNS
    // hands to the alarm e-mail the scenario confirmed before the run.
    const notified = report().invariants.find((i) => i.name.startsWith('every alarm notification'));
    const [, published, received] =
      /(\d+) of \d+ notifications published, (\d+) received by a subscriber/.exec(notified?.detail ?? '') ??
      [];
    expect(notified?.holds).toBe(true);
    expect(Number(published)).toBeGreaterThan(0);
    expect(Number(received)).toBe(Number(published));
  });

  it('when the run is over, every incident was injected', () => {
    // Assess
    const incidents = report().incidents;
    expect(incidents.map((i) => i.kind).sort()).toEqual([
      'consumer-crash',
      'duplicate-burst',
      'poison-message',
      'provider-outage',
      'redis-down',
    ]);
    expect(incidents.filter((i) => !i.injected).map((i) => `${i.title}: ${i.error ?? ''}`)).toEqual([]);
  });

  it('when the run is over, the three job types carried traffic and the poison went to the DLQs as ValidationError', () => {
    // Assess
    for (const j of report().jobs) expect(j.succeeded).toBeGreaterThan(0);
    const classes = report()
      .dlq.filter((d) => d.source.includes('.'))
      .map((d) => d.byErrorClass.ValidationError);
    expect(classes).toEqual([1, 1, 1]);
  });

  it('when the run is over, report.html, report.json and the function log exist', () => {
    // Assess
    const files = outcome?.files;
    expect(files).toBeDefined();
    for (const file of [files?.html, files?.json, path.join(files?.dir ?? '', FUNCTION_LOG)])
      expect(fs.statSync(file ?? '').size).toBeGreaterThan(0);
    expect(JSON.parse(fs.readFileSync(files?.json ?? '', 'utf8'))).toMatchObject({
      ok: true,
      scenario: { name: 'smoke' },
    });
  });

  it('when the run is over, the moto and the redis-server it started are gone', async () => {
    // Prepare
    const redisUrl = /redis:\/\/127\.0\.0\.1:\d+/.exec(report().scenario.redis)?.[0];

    // Assess
    expect((await probeHttp(`http://127.0.0.1:${motoPort}/moto-api/`, 1_000)).kind).toBe('refused');
    expect(redisUrl).toBeDefined();
    expect(await pingRedis(redisUrl ?? '', 1_000)).toBe(false);
  });
});
