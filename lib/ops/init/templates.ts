/**
 * The minimal app `tenang init` writes: one job type (`report.generate`, which asks a reports
 * provider to build a report, exactly once per job), its module and unit test, the declaration, the
 * CDK entry point and the project files. The TypeScript files are text here; the package test
 * (test/package/init-app.test.ts) type-checks, unit-tests, synthesizes and audits an initialized
 * app, so a template that stops compiling or synthesizing fails there.
 *
 * INIT_DECLARATION is the same declaration as PIPELINE_TS, as data: `tenang init` generates the
 * app's runbook pages from it before the app has its node_modules (and so before its pipeline.ts
 * can run). The package test runs `tenang runbooks --check` on the initialized app: the pages must
 * be what the app's own pipeline.ts gives.
 */
import type { PipelineInput } from '../../config';

/** The examples `tenang init --example` copies (directories under the package's examples/). */
export const INIT_EXAMPLES = ['reference'] as const;
/** An example `--example` copies. */
export type InitExample = (typeof INIT_EXAMPLES)[number];

/** The job type the app starts with. */
export const INIT_JOB_TYPE = 'report.generate';

/** Who is told of the stage's alarms until the team sets its own (cdk.json's `tenang:alarmEmail`). */
export const PLACEHOLDER_ALARM_EMAIL = 'on-call@example.com';

/** The reports provider's URL until the team sets its own (pipeline.ts's `stage.providers`). */
export const PLACEHOLDER_PROVIDER_URL = 'https://reports.example.com';

/** The declaration of PIPELINE_TS, as data (see the module's comment). */
export function initDeclaration(stageName: string, region: string): PipelineInput {
  return {
    stage: {
      name: stageName,
      region,
      alarmTopic: { name: `tenang-${stageName}-alarms`, deliverTo: [] },
      providers: { reports: PLACEHOLDER_PROVIDER_URL },
      cache: { ttlSeconds: 300, ttlJitterRatio: 0.2, loadLockMs: 2_000, commandTimeoutMs: 250, hotKeys: [] },
    },
    tables: [],
    jobTypes: [
      {
        name: INIT_JOB_TYPE,
        consumer: 'report-consumer',
        entry: 'jobs/report-generate.ts',
        queue: { kind: 'standard' },
        function: { timeoutSeconds: 30, memoryMb: 256 },
        batch: { size: 5, maxConcurrency: 2 },
        maxReceiveCount: 5,
        retry: { baseDelaySeconds: 5, maxDelaySeconds: 300 },
        criticality: 'deferrable',
        latencyObjectiveSeconds: 900,
        owner: 'reporting-team',
        resources: {
          tables: { idempotency: ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'] },
          providers: ['reports'],
        },
        idempotent: true,
        pauseCost: 'Reports are generated late; nothing is lost while the consumer is paused.',
        runbook: 'report-generate',
        samplePayload: { reportId: 'report-sample', kind: 'monthly-summary', period: '2026-01' },
      },
    ],
    streamConsumers: [],
  };
}

/** pipeline.ts: the app's declaration (INIT_DECLARATION as the team reads and edits it). */
export const PIPELINE_TS = `/**
 * The app's declaration: its stage, its tables and its job types. app.ts hands it to tenang's
 * buildApp, which derives the stack from it (queue, DLQ, consumer, grants, alarms, dashboard,
 * pause flag) and bakes it into every function and into the template, where \`tenang\` reads it.
 * A job type is its module in jobs/ and its entry here; after adding one, run \`npx tenang runbooks\`.
 */
import type { PipelineInput } from 'tenang/config';

/** The declaration for a stage; only the stage name and region vary between stages. */
export function pipeline(stageName: string, region: string): PipelineInput {
  return {
    stage: {
      name: stageName,
      region,
      alarmTopic: {
        name: \`tenang-\${stageName}-alarms\`,
        // Who is told of an alarm, besides cdk.json's "tenang:alarmEmail": { email }, { https }
        // (a PagerDuty / Opsgenie URL) or { topicArn } (e.g. your AWS Chatbot topic). With no one
        // at all, the synth refuses the stage (Tenang-F5-AlarmSubscriber).
        deliverTo: [],
      },
      // The HTTP providers the job types call (each call carries the job's idempotency key).
      // Replace with your reports service before deploying.
      providers: {
        reports: '${PLACEHOLDER_PROVIDER_URL}',
      },
      // The stage's cache settings (used by consumers that declare resources.cache).
      cache: { ttlSeconds: 300, ttlJitterRatio: 0.2, loadLockMs: 2_000, commandTimeoutMs: 250, hotKeys: [] },
    },
    // The app's own DynamoDB tables; tenang adds its idempotency table by itself.
    tables: [],
    jobTypes: [
      {
        name: '${INIT_JOB_TYPE}',
        consumer: 'report-consumer',
        entry: 'jobs/report-generate.ts',
        queue: { kind: 'standard' },
        function: { timeoutSeconds: 30, memoryMb: 256 },
        batch: { size: 5, maxConcurrency: 2 },
        maxReceiveCount: 5,
        retry: { baseDelaySeconds: 5, maxDelaySeconds: 300 },
        // Deferred (never dropped) while the stage is in degrade mode.
        criticality: 'deferrable',
        latencyObjectiveSeconds: 900,
        owner: 'reporting-team',
        // The runner keeps each job's idempotency record in tenang's idempotency table.
        resources: {
          tables: { idempotency: ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'] },
          providers: ['reports'],
        },
        idempotent: true,
        pauseCost: 'Reports are generated late; nothing is lost while the consumer is paused.',
        // runbooks/report-generate.md, written by \`npx tenang runbooks\`.
        runbook: 'report-generate',
        // A valid payload: the local platform's traffic and the drills (\`tenang drill backlog --job-type ${INIT_JOB_TYPE}\`) send it.
        samplePayload: { reportId: 'report-sample', kind: 'monthly-summary', period: '2026-01' },
      },
    ],
    streamConsumers: [],
  };
}
`;

/** app.ts: the CDK entry point. */
export const APP_TS = `#!/usr/bin/env node
/** CDK entry point: \`npx cdk synth\`, \`npx cdk deploy [-c tenang:stage=dev] [-c tenang:alarmEmail=you@example.com]\`. */
import { App } from 'aws-cdk-lib';
import { buildApp, DEFAULT_REGION } from 'tenang/infra';
import { pipeline } from './pipeline';

const app = new App();
const region = process.env.CDK_DEFAULT_REGION ?? process.env.AWS_REGION ?? DEFAULT_REGION;
// Job types' \`entry\` paths are relative to this directory.
buildApp(app, pipeline, region, { appDir: __dirname });
app.synth();
`;

/** jobs/report-generate.ts: the job type's module (its payload schema, its business function, its handler). */
export const JOB_TS = `/**
 * ${INIT_JOB_TYPE}: asks the reports provider to build one report. The provider call carries the
 * job's idempotency key, and the runner keeps an idempotency record (\`idempotent: true\` in
 * pipeline.ts): a job delivered twice is generated once. Throw a PermanentError for a job that can
 * never succeed (it goes to the DLQ at once); any other error is retried with backoff.
 */
import { defineJob, jobHandler } from 'tenang/runtime';
import * as z from 'tenang/zod'; // a namespace import keeps only the builders used in the bundle

/** What a ${INIT_JOB_TYPE} job carries. */
export const ReportGeneratePayload = z.object({
  reportId: z.string().check(z.minLength(1)),
  kind: z.enum(['monthly-summary', 'usage']),
  /** The month the report covers, YYYY-MM. */
  period: z.string().check(z.regex(/^\\d{4}-(0[1-9]|1[0-2])$/, 'must be a month, YYYY-MM')),
});

export const reportGenerate = defineJob({
  name: '${INIT_JOB_TYPE}',
  payload: ReportGeneratePayload,
  async run(payload, ctx) {
    const answer = await ctx.providers.reports.post<{ id: string }>('/reports', payload);
    ctx.logger.info('report generated', { reportId: payload.reportId, providerReportId: answer.id });
  },
});

/** The consumer's Lambda handler: the runner does the rest from the job type's declaration. */
export const handler = jobHandler(reportGenerate);
`;

/** test/report-generate.test.ts: the job's unit test (node's test runner through tsx, no AWS). */
export const JOB_TEST_TS = `/**
 * ${INIT_JOB_TYPE}'s business function against a fake reports provider: what it sends, what it
 * refuses, and that a provider failure reaches the runner (which retries it). \`npm test\`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { JobRunContext, ProviderClient } from 'tenang/runtime';
import type * as z from 'tenang/zod';
import { ReportGeneratePayload, reportGenerate } from '../jobs/report-generate';
import { pipeline } from '../pipeline';

type Payload = z.output<typeof ReportGeneratePayload>;

/** A reports provider that records each call and answers \`answer\` (or throws it). */
function fakeProvider(answer: unknown = { id: 'provider-report-1' }) {
  const calls: { path: string; body: unknown }[] = [];
  const provider: ProviderClient = {
    post<T>(path: string, body: unknown): Promise<T> {
      calls.push({ path, body });
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer as T);
    },
  };
  return { calls, provider };
}

/** What the job's run uses of its context; the rest is the runner's. */
function contextWith(provider: ProviderClient): JobRunContext<Payload> {
  const logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
  return { providers: { reports: provider }, logger } as unknown as JobRunContext<Payload>;
}

const sample = pipeline('dev', 'us-east-1').jobTypes.find((j) => j.name === '${INIT_JOB_TYPE}')?.samplePayload;

void test('the declared samplePayload is a valid payload (the local traffic and the drills send it)', () => {
  assert.equal(ReportGeneratePayload.safeParse(sample).success, true);
});

void test('a job asks the reports provider for its report, once', async () => {
  const { calls, provider } = fakeProvider();
  const payload = ReportGeneratePayload.parse(sample);

  await reportGenerate.run(payload, contextWith(provider));

  assert.deepEqual(calls, [{ path: '/reports', body: payload }]);
});

void test('a payload of another kind or without a month is refused before anything runs', () => {
  const result = ReportGeneratePayload.safeParse({ reportId: 'r-1', kind: 'weekly', period: '2026-13' });

  assert.equal(result.success, false);
  assert.deepEqual(result.error?.issues.map((i) => i.path.join('.')).sort(), ['kind', 'period']);
});

void test('a provider failure is thrown to the runner, which retries the job', async () => {
  const { provider } = fakeProvider(new Error('503 from the reports provider'));
  const payload = ReportGeneratePayload.parse(sample);

  await assert.rejects(reportGenerate.run(payload, contextWith(provider)), /503/);
});
`;

/** tsconfig.json: type-checks the app (`npm run typecheck`); tsx and the CDK run the sources as they are. */
export const TSCONFIG_JSON = `${JSON.stringify(
  {
    compilerOptions: {
      target: 'ES2022',
      module: 'node16',
      moduleResolution: 'node16',
      lib: ['ES2023'],
      types: ['node'],
      strict: true,
      esModuleInterop: true,
      skipLibCheck: true,
      noEmit: true,
    },
    include: ['*.ts', 'jobs/**/*.ts', 'test/**/*.ts'],
  },
  null,
  2,
)}\n`;

/** .gitignore: what the CDK, npm and the local platform write into the app. */
export const GITIGNORE = `node_modules/
cdk.out/
.tenang/
reports/
.venv/
`;

/** cdk.json: how the CDK CLI synthesizes the app, and its context (stage, target, alarm e-mail). */
export function cdkJson(alarmEmail: string): string {
  return `${JSON.stringify(
    {
      app: 'npx tsx app.ts',
      watch: { include: ['*.ts', 'jobs/**/*.ts'] },
      context: { 'tenang:stage': 'dev', 'tenang:target': 'aws', 'tenang:alarmEmail': alarmEmail },
    },
    null,
    2,
  )}\n`;
}

/** README.md: what the app is and what to run. */
export function readmeMd(name: string, alarmEmail: string): string {
  const placeholder = alarmEmail === PLACEHOLDER_ALARM_EMAIL;
  return `# ${name}

A worker-queue pipeline on AWS built with [tenang](https://www.npmjs.com/package/tenang): one job
type, \`${INIT_JOB_TYPE}\` (\`jobs/report-generate.ts\`, declared in \`pipeline.ts\`).

\`\`\`sh
npm install
npm test              # the job's unit tests (no AWS)
npm start             # tenang local start: the app on a local platform (moto and Redis)
npx cdk synth         # the stack, checked by the AwsSolutions, Serverless and Tenang packs
npx tenang audit      # the worker-queue checklist, offline
npm run deploy        # cdk deploy to the account of your AWS credentials
\`\`\`

Before deploying, set who is told of alarms: \`tenang:alarmEmail\` in \`cdk.json\`${placeholder ? ` (now the placeholder ${PLACEHOLDER_ALARM_EMAIL})` : ''}
or \`stage.alarmTopic.deliverTo\` in \`pipeline.ts\`; and the reports provider's URL in
\`pipeline.ts\` (\`stage.providers.reports\`).

A job type is its module in \`jobs/\` and its entry in \`pipeline.ts\`. After adding one, run
\`npx tenang runbooks\`: it writes the job type's fact page in \`runbooks/\` and keeps the index up
to date (\`npx tenang runbooks --check\` in CI). The alarms link to the pages in \`runbooks/\`.
`;
}
