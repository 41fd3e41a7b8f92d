/**
 * `tenang runbooks` in a team's app after a job type is added: an app made by `tenang init`
 * outside the repository (tenang installed the cheap way, test/helpers/linked-app.ts) gets a second
 * job type (its module and its entry). `--check` then fails naming the new job type's page and the
 * index; `tenang runbooks` writes them, leaves a page the team edited alone, and the offline audit
 * passes P1 and P2 with the new page in the app's runbooks/ (~30 s).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCaptured } from '../../bin/tenang';
import { linkTenang, REPO, tenangInApp } from '../helpers/linked-app';

jest.setTimeout(180_000);

/** The module of the job type the team adds. */
const JOB_MODULE = `/** email.welcome: sends the welcome e-mail of a new account, once. */
import { defineJob, jobHandler } from 'tenang/runtime';
import * as z from 'tenang/zod';

export const emailWelcome = defineJob({
  name: 'email.welcome',
  payload: z.object({ accountId: z.string().check(z.minLength(1)) }),
  async run(payload, ctx) {
    await ctx.providers.mailer.post('/messages', { template: 'welcome', accountId: payload.accountId });
  },
});

export const handler = jobHandler(emailWelcome);
`;

/** Its entry in the app's declaration. */
const ENTRY = `      {
        name: 'email.welcome',
        consumer: 'welcome-consumer',
        entry: 'jobs/email-welcome.ts',
        queue: { kind: 'standard' },
        function: { timeoutSeconds: 20, memoryMb: 256 },
        batch: { size: 10, maxConcurrency: 2 },
        maxReceiveCount: 4,
        retry: { baseDelaySeconds: 10, maxDelaySeconds: 600 },
        criticality: 'critical',
        latencyObjectiveSeconds: 600,
        owner: 'growth-team',
        resources: {
          tables: { idempotency: ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'] },
          providers: ['mailer'],
        },
        idempotent: true,
        pauseCost: 'New accounts get their welcome e-mail late.',
        runbook: 'email-welcome',
        samplePayload: { accountId: 'account-sample' },
      },
`;

function addJobType(app: string): void {
  fs.writeFileSync(path.join(app, 'jobs', 'email-welcome.ts'), JOB_MODULE);
  const file = path.join(app, 'pipeline.ts');
  const source = fs.readFileSync(file, 'utf8');
  const jobTypesEnd = '    ],\n    streamConsumers: [],';
  const providers = "        reports: 'https://reports.example.com',\n";
  if (!source.includes(jobTypesEnd) || !source.includes(providers))
    throw new Error('the initialized pipeline.ts changed shape: update where the test adds its entry');
  fs.writeFileSync(
    file,
    source
      .replace(providers, `${providers}        mailer: 'https://mailer.example.com',\n`)
      .replace(jobTypesEnd, `${ENTRY}${jobTypesEnd}`),
  );
}

describe('tenang runbooks: an app after a job type is added', () => {
  const work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-runbooks-')));
  const app = path.join(work, 'my-app');
  let edited = '';

  beforeAll(async () => {
    const init = await runCaptured(['init', app, '--yes', '--tenang-spec', `file:${REPO}`]);
    if (init.code !== 0) throw new Error(`tenang init failed (${init.code}):\n${init.err}`);
    linkTenang(app);
    addJobType(app);
    // A page the team made its own: tenang's, with a step of theirs added.
    const backlog = path.join(app, 'runbooks', 'backlog.md');
    edited = `${fs.readFileSync(backlog, 'utf8')}\n## Our escalation\nCall the reporting team first.\n`;
    fs.writeFileSync(backlog, edited);
  });

  afterAll(() => {
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('when checked, it fails naming the new job type page as missing and the index as out of date, and writes nothing', () => {
    // Act
    const check = tenangInApp(app, ['runbooks', '--check']);

    // Assess
    expect(check.code).toBe(1);
    expect(check.out).toMatch(/missing\s+runbooks\/email-welcome\.md/);
    expect(check.out).toMatch(/outdated\s+runbooks\/README\.md/);
    expect(check.out).toMatch(/kept\s+runbooks\/backlog\.md \(edited by hand\)/);
    expect(check.err).toContain('2 runbook page(s) missing or out of date: README.md, email-welcome.md');
    expect(fs.existsSync(path.join(app, 'runbooks', 'email-welcome.md'))).toBe(false);
  });

  it('when run, it writes the new page and the index, keeps the edited page, and the offline audit passes P1 and P2', () => {
    // Act
    const run = tenangInApp(app, ['runbooks']);
    const audit = tenangInApp(app, ['audit', '--json']);

    // Assess
    expect({ code: run.code, err: run.code === 0 ? '' : run.err }).toEqual({ code: 0, err: '' });
    expect(fs.readFileSync(path.join(app, 'runbooks', 'backlog.md'), 'utf8')).toBe(edited);
    const page = fs.readFileSync(path.join(app, 'runbooks', 'email-welcome.md'), 'utf8');
    expect(page).toContain('# email.welcome (welcome-consumer)');
    expect(page).toContain('`tenang drill dlq-not-empty --job-type email.welcome`');
    const index = fs.readFileSync(path.join(app, 'runbooks', 'README.md'), 'utf8');
    expect(index).toContain('[email-welcome](email-welcome.md)');
    expect({ code: audit.code, err: audit.code === 0 ? '' : audit.err }).toEqual({ code: 0, err: '' });
    const items = (JSON.parse(audit.out) as { items: { ruleId: string; status: string; why: string }[] })
      .items;
    expect(items.filter((i) => i.status === 'fail')).toEqual([]);
    const p1 = items.find((i) => i.ruleId === 'Tenang-P1-Runbook');
    expect(p1).toMatchObject({ status: 'pass' });
    expect(p1?.why).toContain('runbooks/email-welcome.md exists');
    expect(p1?.why).not.toContain("tenang's pages");
    expect(items.find((i) => i.ruleId === 'Tenang-P2-Drill')).toMatchObject({ status: 'pass' });
  });
});
