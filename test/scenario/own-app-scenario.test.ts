/**
 * The `smoke` scenario on an app of its own, none of the reference's parts (test/fixtures/own-app.ts:
 * report.generate on a standard queue, invoice.issue on a FIFO queue, each calling one provider;
 * no orders table, no ingress, no stream consumer), laid out in a temporary directory as a team's
 * app with tenang installed: `tenang local start --scenario smoke` from that directory. Without
 * the order flow the scenario runs its generic part only: jobs made from each job type's
 * samplePayload, a duplicate delivery, a crash right after a job's effect and a malformed message
 * among valid ones, judged by the idempotency records, the providers' recording fakes and the
 * DLQs; the order flow's invariants are absent. Its own moto and redis-server, IAM enforced. ~70 s.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { freePort } from '../../lib/local/ports';
import { runScenario, type ScenarioOutcome } from '../../lib/local/scenario';
import { OWN_APP_JOB_TYPES, writeOwnApp } from '../fixtures/own-app';

/** Variables the scenario's environment depends on; globalSetup and the jest setup set some. */
const ENV_KEYS = ['AWS_ENDPOINT_URL', 'TENANG_MOTO_PORT', 'REDIS_URL', 'TENANG_PIPELINE'] as const;

describe('Local platform: the smoke scenario on an app of its own (no order flow)', () => {
  const savedEnv = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
  const lines: string[] = [];
  let appDir: string;
  let outcome: ScenarioOutcome | undefined;
  let elapsedMs = 0;

  beforeAll(async () => {
    appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-own-app-'));
    writeOwnApp(appDir);
    // The platform deploys the app's own declaration: the jest setup's (the reference's) must not leak in.
    delete process.env.TENANG_PIPELINE;
    // startLocalEnv prefers AWS_ENDPOINT_URL (the shared moto) over TENANG_MOTO_PORT.
    delete process.env.AWS_ENDPOINT_URL;
    process.env.TENANG_MOTO_PORT = String(await freePort());
    const started = Date.now();
    outcome = await runScenario({
      scenario: 'smoke',
      projectRoot: appDir,
      tty: false,
      log: (line) => lines.push(line),
      out: (text) => lines.push(text),
    });
    elapsedMs = Date.now() - started;
  }, 300_000);

  afterAll(() => {
    for (const [k, v] of Object.entries(savedEnv)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    // The assembly, the synth cache and the report are the app's (its .tenang/ and reports/).
    fs.rmSync(appDir, { recursive: true, force: true });
    if (outcome?.assemblyDir !== undefined) fs.rmSync(outcome.assemblyDir, { recursive: true, force: true });
  });

  function report(): NonNullable<ScenarioOutcome['report']> {
    if (outcome?.report === undefined)
      throw new Error(`the scenario produced no report:\n${lines.join('\n')}`);
    return outcome.report;
  }

  function incident(
    kind: string,
    jobType: string,
  ): NonNullable<ScenarioOutcome['report']>['incidents'][number] {
    const found = report().incidents.find((i) => i.kind === kind && i.title.startsWith(`${jobType}:`));
    if (found === undefined)
      throw new Error(
        `no ${kind} incident on ${jobType}: ${report()
          .incidents.map((i) => i.title)
          .join('; ')}`,
      );
    return found;
  }

  it('when the run is over, the verdict passes on the invariants that hold for any app, and none of the order flow’s is there', () => {
    // Assess: the violations, if any, are the message.
    const violated = report()
      .invariants.filter((i) => !i.holds)
      .map((i) => `${i.name}: ${i.violations.join('; ')}`);
    expect(violated).toEqual([]);
    expect(report().ok).toBe(true);
    expect(report().flow).toBeUndefined();
    const names = report().invariants.map((i) => i.name);
    expect(names).toEqual([
      expect.stringMatching(/^poison messages dead-lettered/),
      expect.stringMatching(/^nothing stuck/),
      expect.stringMatching(/^every alarm notification/),
      expect.stringMatching(/^every job of the app's own job types ran/),
      expect.stringMatching(/^every job of the app's own job types done exactly once/),
      expect.stringMatching(/^no request denied by the deployed IAM policies/),
    ]);
    expect(names.filter((n) => /charge|PAID|stock|stream|notification sent twice/.test(n))).toEqual([]);
    expect(lines.filter((l) => l.includes('[iam] denied'))).toEqual([]);
    process.stdout.write(
      `own-app smoke scenario: ${(elapsedMs / 1000).toFixed(1)} s in all, ${JSON.stringify(report().timings)}\n`,
    );
  });

  it('when the run is over, both job types are named and carried traffic, each job done once at its provider with its record COMPLETED', () => {
    // Assess
    expect(report().jobTypes.map((j) => j.name)).toEqual([...OWN_APP_JOB_TYPES]);
    for (const name of OWN_APP_JOB_TYPES) {
      const jobs = report().jobs.find((j) => j.jobType === name);
      expect(jobs?.succeeded).toBeGreaterThanOrEqual(5);
      expect(jobs?.leftInQueue).toBe(0);
    }
    const once = report().invariants.find((i) => i.name.includes('done exactly once'));
    expect(once?.holds).toBe(true);
    // Steady traffic (2 jobs/s for 30 s) plus the incidents' jobs, both job types; each one judged.
    const [, judged] = /^(\d+) jobs \(report\.generate, invoice\.issue\)/.exec(once?.detail ?? '') ?? [];
    expect(Number(judged)).toBeGreaterThan(40);
    expect(once?.detail).toMatch(/2 delivered twice, [1-9]\d* redelivered after a crash$/);
    const ran = report().invariants.find((i) => i.name.includes('ran (its idempotency record completed)'));
    expect(ran?.detail).toBe(`${judged} of ${judged} jobs judged (report.generate, invoice.issue)`);
    // Each provider's fake: one effect per job.
    expect(Object.keys(report().providers).sort()).toEqual(['invoicing', 'reports']);
  });

  it('when one job of each job type was delivered twice, its effect happened once and the second delivery was ignored', () => {
    for (const name of OWN_APP_JOB_TYPES) {
      const duplicate = incident('duplicate-delivery', name);
      expect(duplicate.injected).toBe(true);
      expect(duplicate.observed.join('\n')).toMatch(
        /after the drain: \S+:duplicate: done once \(1 call\(s\) to \w+, idempotency record COMPLETED\)/,
      );
      expect(duplicate.observed.join('\n')).toMatch(/DuplicateIgnored \+[1-9]/);
    }
  });

  it('when the consumer crashed right after a job’s effect, the job was redelivered and done once', () => {
    // The crash goes to the job type whose batch returns soonest: the standard queue's.
    const crash = incident('crash-after-effect', 'report.generate');
    const text = crash.observed.join('\n');
    expect(crash.injected).toBe(true);
    expect(crash.how).toMatch(/'after-commit'/);
    expect(text).toMatch(/crashed at \d+\.\d s; the batch returns after the 15 s visibility timeout/);
    // The job that had completed when the process died came back and was found done, not run again.
    expect(text).toMatch(
      /redelivered, found done: \S+: done once \(1 call\(s\) to reports, idempotency record COMPLETED\)/,
    );
    expect(report().incidents.filter((i) => i.kind === 'crash-after-effect')).toHaveLength(1);
  });

  it('when a malformed message went to each job type among valid ones, it is in that DLQ with its error class and its batch-mates were done', () => {
    for (const name of OWN_APP_JOB_TYPES) {
      const text = incident('malformed-message', name).observed.join('\n');
      expect(text).toMatch(
        /the malformed message dead-lettered as ValidationError \(permanent\) after 1 attempt\(s\)/,
      );
      expect(text.match(/batch-mate \S+: done once/g)).toHaveLength(2);
      expect(report().dlq.find((d) => d.source === name)?.byErrorClass).toEqual({ ValidationError: 1 });
    }
  });

  it('when the DLQs filled, their alarms fired and each notification reached the stage’s confirmed subscriber', () => {
    // Assess
    const notified = report().invariants.find((i) => i.name.startsWith('every alarm notification'));
    const [, published, received] =
      /(\d+) of \d+ notifications published, (\d+) received by a subscriber/.exec(notified?.detail ?? '') ??
      [];
    expect(notified?.holds).toBe(true);
    expect(Number(published)).toBeGreaterThan(0);
    expect(Number(received)).toBe(Number(published));
    const dlqAlarms = report().alarms.timeline.filter((t) => t.to === 'ALARM' && /dlq/i.test(t.alarm));
    expect(dlqAlarms.map((t) => t.alarm).join(' ')).toMatch(/report-consumer/);
  });

  it('when the report is written, its page names the app’s job types and leaves the order flow’s parts out', () => {
    const html = fs.readFileSync(outcome?.files?.html ?? '', 'utf8');
    expect(html).toContain('report.generate (report-consumer), invoice.issue (invoice-consumer)');
    expect(html).toContain('none: no scenario flow of the app runs on this pipeline');
    expect(html).not.toContain('data-chart="cache-hit-ratio"');
    expect(html).not.toContain('ingress: repeated Idempotency-Key');
  });
});
