import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { loadPipelineConfig, type PipelineConfig, type PipelineInput } from '../../../lib/config';
import { renderReportHtml } from '../../../lib/local/report-html';
import { SCENARIOS } from '../../../lib/local/scenario';
import {
  checkJobInvariants,
  declaredJobsDoneOnce,
  type JobInvariantFacts,
} from '../../../lib/local/scenario-invariants';
import { sendDeclaredJobsSteadily, type DeclaredJob } from '../../../lib/local/scenario-declared-jobs';
import { planJobIncidents } from '../../../lib/local/scenario-job-incidents';
import { resolveScenarioTargets, type DeployedPipeline } from '../../../lib/local/scenario-targets';
import { ownAppDeclaration } from '../../fixtures/own-app';
import { syntheticReport } from '../../fixtures/synthetic-report';

const ownApp = loadPipelineConfig(ownAppDeclaration('dev', 'us-east-1'));

/** A deployment of `config` as a LocalPlatform holds it: one function per consumer, `extra` beside them. */
function deployed(
  config: PipelineConfig,
  extra: Readonly<Record<string, Readonly<Record<string, string>>>> = {},
): DeployedPipeline {
  const fn = (logical: string): string => `tenang-dev-${logical}`;
  const functions = new Map<string, { environment: Readonly<Record<string, string>> }>();
  for (const j of config.jobTypes)
    functions.set(fn(j.consumer), {
      environment: { DLQ_URL: `https://sqs.test/${j.consumer}-dlq`, ...extra[j.consumer] },
    });
  for (const c of config.streamConsumers) functions.set(fn(c.consumer), { environment: {} });
  for (const [logical, environment] of Object.entries(extra))
    if (!functions.has(fn(logical))) functions.set(fn(logical), { environment });
  return {
    config,
    deployment: { functions },
    sqsSources: config.jobTypes.map((j) => ({
      spec: {
        functionName: fn(j.consumer),
        queueUrl: `https://sqs.test/${j.consumer}`,
        uuid: `uuid-${j.consumer}`,
      },
    })),
    streamSources: config.streamConsumers.map((c) => ({
      spec: { functionName: fn(c.consumer), onFailureQueueUrl: `https://sqs.test/${c.consumer}-failures` },
    })),
    functionNamed: (suffix) => {
      const found = [...functions.keys()].find((n) => n.endsWith(`-${suffix}`));
      if (found === undefined) throw new Error(`no deployed function named *-${suffix}`);
      return found;
    },
  };
}

/** The own app's declaration with `jobTypes` changed. */
function ownAppWith(change: (input: PipelineInput) => PipelineInput): PipelineConfig {
  return loadPipelineConfig(change(ownAppDeclaration('dev', 'us-east-1')));
}

describe('Module: scenario-targets', () => {
  describe('Function: resolveScenarioTargets', () => {
    it('when the pipeline is an app of its own, there is no order flow and every job type with a samplePayload gets traffic', () => {
      // Act
      const targets = resolveScenarioTargets(deployed(ownApp));

      // Assess
      expect(targets.flowJobTypes).toEqual([]);
      expect(targets.declared.map((j) => [j.name, j.fifo, j.dlqUrl])).toEqual([
        ['report.generate', false, 'https://sqs.test/report-consumer-dlq'],
        ['invoice.issue', true, 'https://sqs.test/invoice-consumer-dlq'],
      ]);
      expect(targets.streams).toEqual([]);
    });

    it('when an app without the order flow names a job type like one of it, that job type gets its sample traffic', () => {
      // Prepare: payment.capture with a samplePayload, but no orders or inventory table.
      const config = ownAppWith((input) => ({
        ...input,
        jobTypes: input.jobTypes.map((j, i) => (i === 0 ? { ...j, name: 'payment.capture' } : j)),
      }));

      // Act
      const targets = resolveScenarioTargets(deployed(config));

      // Assess
      expect(targets.flowJobTypes).toEqual([]);
      expect(targets.declared.map((j) => j.name)).toEqual(['payment.capture', 'invoice.issue']);
    });

    it('when a job type has no samplePayload, it gets no traffic (and the others still do)', () => {
      // Prepare
      const config = ownAppWith((input) => ({
        ...input,
        jobTypes: input.jobTypes.map((j, i) => (i === 1 ? { ...j, samplePayload: undefined } : j)),
      }));

      // Act & Assess
      expect(resolveScenarioTargets(deployed(config)).declared.map((j) => j.name)).toEqual([
        'report.generate',
      ]);
    });

    it('when a consumer was deployed without its DLQ_URL, it names the function and the variable', () => {
      // Prepare
      const d = deployed(ownApp, { 'report-consumer': { DLQ_URL: '' } });

      // Act & Assess
      expect(() => resolveScenarioTargets(d)).toThrow(
        'deployed function tenang-dev-report-consumer has no DLQ_URL',
      );
    });
  });
});

describe('Function: sendDeclaredJobsSteadily', () => {
  it('when it runs until aborted, the job types take turns, each numbering its own jobs, and a failed send does not stop it', async () => {
    // Prepare
    const sqs = mockClient(SQSClient);
    sqs.on(SendMessageCommand).rejectsOnce(new Error('throttled')).resolves({ MessageId: 'm' });
    const targets = resolveScenarioTargets(deployed(ownApp)).declared.map((j) => ({
      jobType: j.declared,
      queueUrl: j.queueUrl,
    }));
    const stop = new AbortController();
    const sent: DeclaredJob[] = [];
    const lines: string[] = [];

    // Act
    const done = sendDeclaredJobsSteadily(
      new SQSClient({ region: 'us-east-1' }),
      targets,
      'r1',
      100,
      stop.signal,
      (job) => {
        sent.push(job);
        if (sent.length === 5) stop.abort();
      },
      (line) => lines.push(line),
    );
    await done;

    // Assess: the first send failed (report.generate 1), the traffic went on.
    expect(lines).toEqual(['declared traffic: could not send a report.generate job: throttled']);
    expect(sent.map((j) => j.idempotencyKey)).toEqual([
      'r1:invoice.issue:1',
      'r1:report.generate:2',
      'r1:invoice.issue:2',
      'r1:report.generate:3',
      'r1:invoice.issue:3',
    ]);
    const fifo = sqs
      .commandCalls(SendMessageCommand)
      .find((c) => c.args[0].input.QueueUrl?.endsWith('invoice-consumer'));
    expect(fifo?.args[0].input.MessageGroupId).toBe('cust-1');
  });
});

describe('Module: scenario-job-incidents', () => {
  describe('Function: planJobIncidents', () => {
    const specs = [
      { kind: 'crash-after-effect', atSeconds: 1, shortenVisibility: true },
      { kind: 'malformed-message', atSeconds: 2 },
      { kind: 'duplicate-delivery', atSeconds: 3 },
    ] as const;

    it('when the job types are idempotent, the poison and the duplicate go to each, the crash to the standard queue', () => {
      // Act
      const plan = planJobIncidents(specs, resolveScenarioTargets(deployed(ownApp)).declared);

      // Assess
      expect(plan.map((p) => `${p.spec.kind} ${p.jobType.name}`)).toEqual([
        'crash-after-effect report.generate',
        'malformed-message report.generate',
        'malformed-message invoice.issue',
        'duplicate-delivery report.generate',
        'duplicate-delivery invoice.issue',
      ]);
    });

    it('when the FIFO job type has the shorter function timeout, the crash goes to it', () => {
      // Prepare
      const config = ownAppWith((input) => ({
        ...input,
        jobTypes: input.jobTypes.map((j, i) =>
          i === 1 ? { ...j, function: { ...j.function, timeoutSeconds: 5 } } : j,
        ),
      }));

      // Act
      const plan = planJobIncidents(specs, resolveScenarioTargets(deployed(config)).declared);

      // Assess
      expect(plan.filter((p) => p.spec.kind === 'crash-after-effect').map((p) => p.jobType.name)).toEqual([
        'invoice.issue',
      ]);
    });

    it('when a job type is not idempotent, it gets the poison only (nothing promises one effect of a second delivery)', () => {
      // Prepare
      const config = ownAppWith((input) => ({
        ...input,
        // Critical work must be idempotent: both deferrable here.
        jobTypes: input.jobTypes.map((j) => ({
          ...j,
          criticality: 'deferrable',
          idempotent: false,
          resources: { providers: j.resources?.providers ?? [] },
        })),
      }));

      // Act
      const plan = planJobIncidents(specs, resolveScenarioTargets(deployed(config)).declared);

      // Assess
      expect(plan.map((p) => `${p.spec.kind} ${p.jobType.name}`)).toEqual([
        'malformed-message report.generate',
        'malformed-message invoice.issue',
      ]);
    });
  });

  describe('Object: SCENARIOS', () => {
    it.each(Object.values(SCENARIOS).map((s) => [s.name, s] as const))(
      'when %s runs for its own duration, every generic incident starts within the traffic',
      (_, scenario) => {
        for (const i of scenario.jobIncidents(scenario.durationSeconds))
          expect(i.atSeconds).toBeLessThan(scenario.durationSeconds);
      },
    );

    it('when smoke runs, it plays the crash, the poison and the duplicate on the app’s job types', () => {
      expect(SCENARIOS.smoke?.jobIncidents(30).map((i) => i.kind)).toEqual([
        'crash-after-effect',
        'malformed-message',
        'duplicate-delivery',
      ]);
    });
  });
});

describe('Module: scenario-invariants (any app)', () => {
  const job = (
    n: string,
    done: boolean | undefined = true,
  ): NonNullable<JobInvariantFacts['declaredJobs']>[number] => ({
    jobType: 'report.generate',
    idempotencyKey: `r1:report.generate:${n}`,
    correlationId: `c-${n}`,
    done,
    evidence: done === true ? 'COMPLETED' : undefined,
  });
  const calls = (...keys: string[]): { provider: string; idempotencyKey: string }[] =>
    keys.map((k) => ({ provider: 'reports', idempotencyKey: `r1:report.generate:${k}` }));
  const facts = (overrides: Partial<JobInvariantFacts> = {}): JobInvariantFacts => ({
    dlq: [],
    poison: [],
    leftInQueues: { 'report.generate': 0 },
    alarmNotifications: { owed: 0, deliveries: [] },
    declaredJobs: [job('1'), job('duplicate'), job('crash')],
    declaredCalls: {
      providersOf: { 'report.generate': ['reports'] },
      calls: calls('1', 'duplicate', 'crash'),
    },
    redelivered: [
      { jobType: 'report.generate', idempotencyKey: 'r1:report.generate:duplicate', how: 'duplicate' },
      { jobType: 'report.generate', idempotencyKey: 'r1:report.generate:crash', how: 'crash' },
    ],
    ...overrides,
  });

  it('when every job was done once, the generic invariants hold and none of the order flow’s is among them', () => {
    // Act
    const results = checkJobInvariants(facts());

    // Assess
    expect(results.map((r) => [r.holds, r.name.split(' ').slice(0, 3).join(' ')])).toEqual([
      [true, 'poison messages dead-lettered'],
      [true, 'nothing stuck: every'],
      [true, 'every alarm notification'],
      [true, 'every job of'],
      [true, 'every job of'],
      [true, 'no request denied'],
    ]);
    expect(results[4]?.detail).toBe(
      '3 jobs (report.generate); 1 delivered twice, 1 redelivered after a crash',
    );
  });

  it('when a job delivered twice reached its provider twice, "done exactly once" fails naming it', () => {
    // Act
    const result = declaredJobsDoneOnce(
      facts({
        declaredCalls: {
          providersOf: { 'report.generate': ['reports'] },
          calls: calls('1', 'duplicate', 'duplicate', 'crash'),
        },
      }),
    );

    // Assess
    expect(result.holds).toBe(false);
    expect(result.violations).toEqual([
      'report.generate r1:report.generate:duplicate: duplicated (2 call(s) to reports, idempotency record COMPLETED)',
    ]);
  });

  it('when a crashed job never completed its record or a redelivered one was never read back, it fails', () => {
    // Act
    const result = declaredJobsDoneOnce(
      facts({
        declaredJobs: [job('1'), job('duplicate'), job('crash', false)],
        redelivered: [
          { jobType: 'report.generate', idempotencyKey: 'r1:report.generate:other', how: 'crash' },
        ],
      }),
    );

    // Assess
    expect(result.violations).toEqual([
      'report.generate r1:report.generate:crash: lost (1 call(s) to reports, no completed record)',
      'report.generate r1:report.generate:other (crash): not among the jobs read back',
    ]);
  });

  it('when the run sent no job of a declared job type, "done exactly once" is absent', () => {
    const names = checkJobInvariants(facts({ declaredCalls: undefined })).map((r) => r.name);

    expect(names).toHaveLength(5);
    expect(names.some((name) => name.includes('done exactly once'))).toBe(false);
  });
});

describe('Module: report-html (without a scenario flow)', () => {
  it('when the run had no scenario flow, the page leaves out the flow’s chart and rows; with one, they are there', () => {
    // Act
    const html = renderReportHtml(syntheticReport({ flow: undefined }));

    // Assess
    expect(html).not.toContain('data-chart="cache-hit-ratio"');
    expect(html).not.toContain('ingress: repeated Idempotency-Key');
    expect(html).toContain('none: no scenario flow of the app runs on this pipeline');
    expect(renderReportHtml(syntheticReport())).toContain('data-chart="cache-hit-ratio"');
  });
});
