/**
 * Adding a job type is its module plus its config entry. In a scratch copy of the repository the
 * test writes exactly two files — a job module made with defineJob (an idempotent, critical
 * `invoice.issue` that calls an HTTP provider) and its entry in the example's declaration — and
 * deploys the copy to a local platform of its own. Everything else must pick the job type up by
 * itself: the stack (queue, DLQ, alarms, dashboard, grants), the local platform (its function, a
 * fake for its provider, IAM), the runner (payload validation, idempotency, the DLQ with the
 * error class), the CLI reading the config from the deployed stack (status, pause/resume,
 * dlq list/replay, the live audit), the runbook index and the scenario's traffic and verdict for
 * job types it knows only from their config (run here on this platform: a whole second scenario
 * run would double the test's time), and a drill that takes any job type (`--job-type`).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  GetQueueAttributesCommand,
  PurgeQueueCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { runCaptured } from '../../bin/tenang';
import { makeEnvelope } from '../../lib/core/envelope';
import { renderDrillResult, runDrill } from '../../lib/drills/drill';
import { dlqNotEmpty } from '../../lib/drills/dlq-not-empty';
import { flagReconciler } from '../../lib/drills/flag-reconciler';
import { permissionDenied } from '../../lib/drills/permission-denied';
import { retryStorm } from '../../lib/drills/retry-storm';
import { stuckJobs } from '../../lib/drills/stuck-jobs';
import type { FakeProvider } from '../../lib/local/fake-provider';
import type { LocalPlatform } from '../../lib/local/platform';
import { pollUntil } from '../../lib/local/poll';
import { generateRunbookFiles } from '../../lib/ops/runbook-index';
import { declaredJobFacts, declaredJobTypes, sendDeclaredJobs } from '../../lib/local/scenario-declared-jobs';
import { everyDeclaredJobDone } from '../../lib/local/scenario-invariants';
import { startTestPlatform } from '../helpers/local-platform';
import { changedFiles, scratchCopy } from '../helpers/scratch-copy';

jest.setTimeout(300_000);

/** The job module a team writes: payload schema, business function, one line of wiring. */
const JOB_MODULE = `/** invoice.issue: issue an invoice with the invoicing provider, exactly once. */
import { defineJob, jobHandler, z } from 'tenang/runtime';

export const invoiceIssue = defineJob({
  name: 'invoice.issue',
  payload: z.object({
    invoiceId: z.string().check(z.minLength(1)),
    amountMinor: z.int().check(z.positive()),
  }),
  async run(payload, ctx) {
    const answer = await ctx.providers.invoicing.post<{ id: string }>('/invoices', payload);
    ctx.logger.info('invoice issued', { invoiceId: payload.invoiceId, providerId: answer.id });
  },
});

export const handler = jobHandler(invoiceIssue);
`;

/** Its config entry (and the provider's URL), in the example's declaration. */
const CONFIG_ENTRY = `      {
        name: 'invoice.issue',
        consumer: 'invoice-consumer',
        entry: 'jobs/invoice-issue.ts',
        queue: { kind: 'standard' },
        function: { timeoutSeconds: 20, memoryMb: 256 },
        batch: { size: 5, maxConcurrency: 2 },
        maxReceiveCount: 4,
        retry: { baseDelaySeconds: 2, maxDelaySeconds: 60 },
        criticality: 'critical',
        latencyObjectiveSeconds: 300,
        owner: 'billing-team',
        dependencies: ['invoicing-provider', 'idempotency-table'],
        resources: {
          tables: { idempotency: ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'] },
          providers: ['invoicing'],
        },
        idempotent: true,
        pauseCost: 'Invoices go out late; nothing is lost.',
        runbook: 'invoice-issue',
        samplePayload: { invoiceId: 'inv-sample', amountMinor: 1200 },
      },
`;

function addJobType(dir: string): void {
  fs.mkdirSync(path.join(dir, 'examples', 'reference', 'jobs'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'examples', 'reference', 'jobs', 'invoice-issue.ts'), JOB_MODULE);
  const file = path.join(dir, 'examples', 'reference', 'pipeline.ts');
  const source = fs.readFileSync(file, 'utf8');
  const jobTypesEnd = '    ],\n    streamConsumers: [';
  const providers = "        messaging: 'https://messaging.example.com',\n";
  if (!source.includes(jobTypesEnd) || !source.includes(providers))
    throw new Error('the example declaration changed shape: update where the test adds its entry');
  fs.writeFileSync(
    file,
    source
      .replace(providers, `${providers}        invoicing: 'https://invoicing.example.com',\n`)
      .replace(jobTypesEnd, `${CONFIG_ENTRY}${jobTypesEnd}`),
  );
}

describe('Adding a job type: its module and its config entry, nothing else', () => {
  let scratch: string;
  let platform: LocalPlatform;
  let lines: string[];
  let sqs: SQSClient;
  let provider: FakeProvider;
  let queueUrl: string;
  let dlqUrl: string;
  const savedPipeline = process.env.TENANG_PIPELINE;

  /** The CLI as an operator runs it: the config read from the deployed stack, not from the checkout. */
  function cli(...argv: string[]): ReturnType<typeof runCaptured> {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...platform.env.env,
      AWS_ENDPOINT_URL_LAMBDA: platform.control.url,
      TENANG_STAGE: 'dev',
    };
    delete env.TENANG_PIPELINE;
    return runCaptured(argv, { env });
  }

  function job(id: string, payload: unknown = { invoiceId: id, amountMinor: 1200 }): string {
    return JSON.stringify(
      makeEnvelope('invoice.issue', payload, {
        idempotencyKey: `invoice:${id}`,
        correlationId: `c-${id}`,
        now: new Date(),
      }),
    );
  }

  async function inFlight(url: string): Promise<number> {
    const { Attributes: a = {} } = await sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: url,
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return Number(a.ApproximateNumberOfMessages) + Number(a.ApproximateNumberOfMessagesNotVisible);
  }

  const issued = (id: string): number =>
    provider.ledger().filter((e) => e.idempotencyKey === `invoice:${id}`).length;

  beforeAll(async () => {
    scratch = scratchCopy('tenang-add-job-');
    addJobType(scratch);
    ({ platform, lines } = await startTestPlatform({ projectRoot: scratch }));
    sqs = new SQSClient({
      endpoint: platform.env.endpoint,
      region: platform.env.region,
      useQueueUrlAsEndpoint: false,
    });
    const fn = platform.deployment.functions.get('tenang-dev-invoice-consumer');
    if (fn === undefined) throw new Error(`no invoice consumer deployed:\n${lines.slice(-40).join('\n')}`);
    queueUrl = fn.environment.QUEUE_URL ?? '';
    dlqUrl = fn.environment.DLQ_URL ?? '';
    const fake = platform.providers.declared.get('INVOICING_PROVIDER_URL');
    if (fake === undefined) throw new Error('the platform started no fake for the invoicing provider');
    provider = fake;
  });

  afterAll(async () => {
    await platform?.stop();
    sqs?.destroy();
    if (savedPipeline !== undefined) process.env.TENANG_PIPELINE = savedPipeline;
    if (scratch !== undefined) fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('when added, exactly two files differ from the repository', () => {
    expect(changedFiles(scratch)).toEqual([
      'examples/reference/jobs/invoice-issue.ts',
      'examples/reference/pipeline.ts',
    ]);
  });

  it('when deployed, the stack has its queue, DLQ, alarms and dashboard, and the platform runs its function', () => {
    // Assess
    const template = platform.provisioned.context.template;
    const queueNames = Object.values(template.Resources)
      .filter((r) => r.Type === 'AWS::SQS::Queue')
      .map((r) => r.Properties?.QueueName);
    expect(queueNames).toEqual(
      expect.arrayContaining(['tenang-dev-invoice-issue', 'tenang-dev-invoice-issue-dlq']),
    );
    expect(platform.provisioned.alarms.metricAlarms.filter((a) => a.includes('invoice'))).not.toEqual([]);
    const dashboards = JSON.stringify(
      Object.values(template.Resources).filter((r) => r.Type === 'AWS::CloudWatch::Dashboard'),
    );
    expect(dashboards).toContain('invoice');
    expect(platform.config.jobTypes.map((j) => j.name)).toContain('invoice.issue');
    expect(platform.hosts.has('tenang-dev-invoice-consumer')).toBe(true);
  });

  it('when jobs arrive, each is issued once, a duplicate is ignored and a bad payload goes to the DLQ with its class', async () => {
    // Act
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: job('inv-1') }));
    await pollUntil(async () => (issued('inv-1') === 1 ? true : undefined), {
      description: 'the invoice to be issued',
      deadlineMs: 60_000,
      intervalMs: 250,
    });
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: job('inv-1') }));
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: job('inv-bad', { invoiceId: '', amountMinor: -1 }),
      }),
    );
    await pollUntil(
      async () => ((await inFlight(queueUrl)) === 0 && (await inFlight(dlqUrl)) === 1 ? true : undefined),
      {
        description: 'the queue to drain and the bad job to reach the DLQ',
        deadlineMs: 60_000,
        intervalMs: 500,
      },
    );
    const list = await cli('dlq', 'list', 'invoice.issue', '--json');

    // Assess
    expect(issued('inv-1')).toBe(1);
    expect(provider.requestCount()).toBe(1);
    expect(list.code).toBe(0);
    expect(list.out).toContain('ValidationError');
    expect(list.out).toContain('c-inv-bad');
    expect(lines.filter((l) => l.includes('[iam] denied'))).toEqual([]);
  });

  it('when its DLQ holds a job already done and a new one, replay skips the first and runs the second', async () => {
    // Prepare
    await sqs.send(new SendMessageCommand({ QueueUrl: dlqUrl, MessageBody: job('inv-1') }));
    await sqs.send(new SendMessageCommand({ QueueUrl: dlqUrl, MessageBody: job('inv-2') }));
    const audit = path.join(scratch, 'replay-audit.jsonl');

    // Act
    const replay = await cli(
      'dlq',
      'replay',
      'invoice.issue',
      '--yes',
      '--json',
      '--rate',
      '20/s',
      '--audit-log',
      audit,
    );
    await pollUntil(async () => (issued('inv-2') === 1 ? true : undefined), {
      description: 'the replayed invoice to be issued',
      deadlineMs: 60_000,
      intervalMs: 250,
    });

    // Assess
    expect(replay.code).toBe(0);
    const outcome = JSON.parse(replay.out) as { messages: { correlationId: string; outcome: string }[] };
    expect(outcome.messages.find((m) => m.correlationId === 'c-inv-1')?.outcome).toBe('skipped-already-done');
    expect(outcome.messages.find((m) => m.correlationId === 'c-inv-2')?.outcome).toBe('replayed');
    expect(issued('inv-1')).toBe(1);
  });

  it('when an operator asks, status lists it, pause and resume work, and the live audit judges it', async () => {
    // Act
    const status = await cli('status', '--json');
    const pause = await cli(
      'pause',
      'invoice-consumer',
      '--reason',
      'add-job-type test',
      '--for',
      '10m',
      '--json',
    );
    const paused = await cli('status', '--json');
    const resume = await cli('resume', 'invoice-consumer', '--json');
    const audit = await cli('audit', '--live', '--json');

    // Assess
    expect(status.code).toBe(0);
    expect(status.out).toContain('invoice-consumer');
    expect(`${pause.code} ${pause.err}`).toBe('0 ');
    const row = (
      JSON.parse(paused.out) as { consumers: { consumer: string; paused: boolean; mappingState: string }[] }
    ).consumers.find((c) => c.consumer === 'invoice-consumer');
    expect(row).toMatchObject({ paused: true, mappingState: 'Disabled' });
    expect(resume.code).toBe(0);
    expect(audit.out).toContain('invoice');
  });

  it('when the runbook index is generated from the deployed config, it has the job type', () => {
    // Act
    const files = generateRunbookFiles(platform.config);

    // Assess
    expect(files.map((f) => f.file)).toContain('invoice-issue.md');
    expect(files.find((f) => f.file === 'README.md')?.content).toContain('invoice-consumer');
  });

  it("when the scenario's traffic for declared job types runs, every job it sent is judged done", async () => {
    // Prepare
    const declared = declaredJobTypes(platform.config.jobTypes);
    const fn = platform.deployment.functions.get('tenang-dev-invoice-consumer');
    const table = fn?.environment.IDEMPOTENCY_TABLE ?? '';

    // Act
    const sent = await sendDeclaredJobs(
      sqs,
      declared.map((jobType) => ({ jobType, queueUrl })),
      'scenario-run',
      3,
    );
    await pollUntil(async () => ((await inFlight(queueUrl)) === 0 ? true : undefined), {
      description: 'the scenario jobs to drain',
      deadlineMs: 60_000,
      intervalMs: 500,
    });
    const dynamodb = new DynamoDBClient({ endpoint: platform.env.endpoint, region: platform.env.region });
    const facts = await declaredJobFacts(dynamodb, table, declared, sent);
    dynamodb.destroy();
    const verdict = everyDeclaredJobDone({ declaredJobs: facts } as Parameters<
      typeof everyDeclaredJobDone
    >[0]);

    // Assess
    expect(declared.map((j) => j.name)).toEqual(['invoice.issue']);
    expect(sent).toHaveLength(3);
    expect(verdict).toMatchObject({ holds: true, detail: '3 of 3 jobs judged (invoice.issue)' });
  });

  it('when the DLQ drill runs on it (--job-type), the exhausted job is replayed once, the done one skipped, the poison kept', async () => {
    // Prepare: the drill counts what it leaves in the DLQ; the tests above left theirs there.
    await sqs.send(new PurgeQueueCommand({ QueueUrl: dlqUrl }));

    // Act
    const result = await runDrill(dlqNotEmpty, {
      platform,
      jobType: 'invoice.issue',
      cli: (argv, env) => {
        const fromStack = { ...env };
        delete fromStack.TENANG_PIPELINE;
        return runCaptured(argv, { env: fromStack });
      },
    });

    // Assess
    if (!result.passed) throw new Error(renderDrillResult(result));
    expect(result.steps.map((s) => s.argv.slice(0, 3).join(' '))).toContain('dlq replay invoice.issue');
    expect(result.checks.map((c) => c.name)).toEqual(
      expect.arrayContaining(['exhausted invoice.issue done once', 'done invoice.issue not repeated']),
    );
  });
  it.each([
    [
      'retry-storm',
      retryStorm,
      'no provider calls while paused',
      ['pause invoice-consumer', 'resume invoice-consumer'],
    ],
    [
      'flag-reconciler',
      flagReconciler,
      'pause enforced without the reconciler',
      ['pause invoice-consumer', 'resume invoice-consumer'],
    ],
    [
      'permission-denied',
      permissionDenied,
      'denied jobs held, not dead-lettered',
      ['pause invoice-consumer', 'resume invoice-consumer'],
    ],
    // A critical consumer is not paused for one stuck job: the runbook reads status and waits.
    ['stuck-jobs', stuckJobs, 'no effect while stuck', []],
  ] as const)(
    'when the %s drill runs on it (--job-type), its runbook holds for the new job type and every job is done once',
    async (_name, drill, check, steps) => {
      // Act
      const result = await runDrill(drill, {
        platform,
        jobType: 'invoice.issue',
        cli: (argv, env) => {
          const fromStack = { ...env };
          delete fromStack.TENANG_PIPELINE;
          return runCaptured(argv, { env: fromStack });
        },
      });

      // Assess
      if (!result.passed) throw new Error(renderDrillResult(result));
      expect(result.steps.map((s) => s.argv.slice(0, 2).join(' '))).toEqual(
        expect.arrayContaining([...steps]),
      );
      expect(result.checks.map((c) => c.name)).toEqual(
        expect.arrayContaining([check, 'every invoice.issue job done once']),
      );
    },
  );
});
