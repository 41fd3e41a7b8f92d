/**
 * The audit of a template that carries its declaration (`tenang:pipeline`, written by the stack):
 * what `tenang audit cdk.out` and `tenang audit` in an app's directory run (lib/ops/audit.ts
 * auditDeclaredStacks). The declaration turns on the latency-objective rule (O3) and the config
 * rules; a runbook is found in the app's runbooks/ or among tenang's packaged pages, so an
 * unmodified app (a directory without runbooks/) passes, and a job type of the app's own with no
 * page anywhere fails P1 saying how to create it.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PIPELINE_METADATA_KEY, type PipelineInput } from '../../../lib/config';
import type { ChecklistItem } from '../../../lib/audit/checklist';
import { auditFailed } from '../../../lib/audit/checklist';
import { CommandFailedError, type CliContext } from '../../../lib/ops/cli-context';
import { appDrillInfos, drillsOfAppAt } from '../../../lib/drills/app-drills';
import { auditDeclaredStacks, runAudit } from '../../../lib/ops/audit';
import { ON_CALL_EMAIL, REFERENCE_APP_DIR, REGION, synthPipeline } from '../helpers';

/** This checkout: its tsconfig maps `tenang/*` to the sources, as an installed package would resolve it. */
const ROOT = path.join(__dirname, '..', '..', '..');

/** The reference app's drills: tenang's and its own (its extensions), as `tenang audit` hands them. */
const REFERENCE_DRILLS = appDrillInfos(REFERENCE_APP_DIR);

type TemplateJson = { Metadata: Record<string, unknown> } & Record<string, unknown>;

/** The reference app's synthesized template (its alarm subscriber given, as the helpers deploy it). */
const REFERENCE = synthPipeline().template.toJSON() as TemplateJson;

/** The reference template carrying `declaration` instead of its own. */
function carrying(declaration: PipelineInput): TemplateJson {
  return {
    ...REFERENCE,
    Metadata: { ...REFERENCE.Metadata, [PIPELINE_METADATA_KEY]: JSON.stringify(declaration) },
  };
}

/** The reference's declaration as the template carries it. */
function referenceDeclaration(): PipelineInput {
  return JSON.parse(REFERENCE.Metadata[PIPELINE_METADATA_KEY] as string) as PipelineInput;
}

/** The reference declaration plus a job type of the app's own (README's invoice.issue). */
function withInvoiceIssue(samplePayload?: Record<string, unknown>): PipelineInput {
  const declaration = referenceDeclaration();
  const [first] = declaration.jobTypes;
  if (first === undefined) throw new Error('the reference declares no job type');
  const invoice = {
    ...first,
    name: 'invoice.issue',
    consumer: 'invoice-consumer',
    entry: 'jobs/invoice-issue.ts',
    queue: { kind: 'standard' },
    runbook: 'invoice-issue',
    ...(samplePayload === undefined ? {} : { samplePayload }),
  } as (typeof declaration.jobTypes)[number];
  return { ...declaration, jobTypes: [...declaration.jobTypes, invoice] };
}

function item(items: readonly ChecklistItem[], ruleId: string): ChecklistItem {
  const found = items.find((i) => i.ruleId === ruleId);
  if (found === undefined) throw new Error(`no ${ruleId} in the audit`);
  return found;
}

describe('Function: auditDeclaredStacks', () => {
  let appDir: string;

  beforeEach(() => {
    // Prepare: an app's directory with no runbooks/ of its own.
    appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-app-'));
  });

  afterEach(() => {
    fs.rmSync(appDir, { recursive: true, force: true });
  });

  it('when the reference template carries its declaration, O3 is judged against the objectives and P1/P2 pass from a directory without runbooks/', () => {
    // Act
    const { items } = auditDeclaredStacks(
      [{ name: 'tenang-dev', template: REFERENCE }],
      appDir,
      REFERENCE_DRILLS,
    );

    // Assess
    expect(item(items, 'Tenang-O3-QueueAgeThreshold')).toMatchObject({ status: 'pass' });
    expect(item(items, 'Tenang-O3-QueueAgeThreshold').resources).toHaveLength(3);
    const p1 = item(items, 'Tenang-P1-Runbook');
    expect(p1).toMatchObject({ status: 'pass' });
    expect(p1.why).toContain("runbooks/payment-capture.md exists among tenang's pages");
    expect(item(items, 'Tenang-P2-Drill')).toMatchObject({ status: 'pass' });
    expect(item(items, 'Tenang-P3-Owner')).toMatchObject({ status: 'pass' });
    expect(item(items, 'Tenang-D1')).toMatchObject({ status: 'pass' });
    expect(auditFailed(items)).toBe(false);
  });

  it('when the template carries no declaration, O3 has no objective and no config rule runs', () => {
    // Prepare
    const { [PIPELINE_METADATA_KEY]: _declaration, ...metadata } = REFERENCE.Metadata;

    // Act
    const { items } = auditDeclaredStacks(
      [{ name: 'tenang-dev', template: { ...REFERENCE, Metadata: metadata } }],
      appDir,
      REFERENCE_DRILLS,
    );

    // Assess
    expect(item(items, 'Tenang-O3-QueueAgeThreshold')).toMatchObject({ status: 'not-applicable' });
    expect(item(items, 'Tenang-O3-QueueAgeThreshold').why).toContain('no latency objective is known');
    expect(items.find((i) => i.ruleId === 'Tenang-P1-Runbook')).toBeUndefined();
  });

  it("when the app's page is in its runbooks/, P1 finds it there first", () => {
    // Prepare
    fs.mkdirSync(path.join(appDir, 'runbooks'));
    fs.writeFileSync(path.join(appDir, 'runbooks', 'invoice-issue.md'), '# invoice.issue\n');

    // Act
    const { items } = auditDeclaredStacks(
      [{ name: 'tenang-dev', template: carrying(withInvoiceIssue({ invoiceId: 'inv-1', amountMinor: 1 })) }],
      appDir,
      REFERENCE_DRILLS,
    );

    // Assess
    expect(item(items, 'Tenang-P1-Runbook')).toMatchObject({ status: 'pass' });
    expect(item(items, 'Tenang-P1-Runbook').why).toContain('runbooks/invoice-issue.md exists;');
  });

  it("when a job type of the app's own has no page anywhere, P1 fails naming it and how to create it", () => {
    // Act
    const { items } = auditDeclaredStacks(
      [{ name: 'tenang-dev', template: carrying(withInvoiceIssue({ invoiceId: 'inv-1', amountMinor: 1 })) }],
      appDir,
      REFERENCE_DRILLS,
    );

    // Assess
    const p1 = item(items, 'Tenang-P1-Runbook');
    expect(p1).toMatchObject({ status: 'fail', resources: ['jobTypes[3].runbook'] });
    expect(p1.why).toContain('runbooks/invoice-issue.md does not exist (named by jobTypes[3].runbook)');
    expect(p1.why).toContain(`create ${path.join(appDir, 'runbooks', 'invoice-issue.md')}`);
    expect(auditFailed(items)).toBe(true);
  });

  it("when a job type of the app's own has a samplePayload, the drills that take any job type drill it (P2)", () => {
    // Act
    const { items } = auditDeclaredStacks(
      [{ name: 'tenang-dev', template: carrying(withInvoiceIssue({ invoiceId: 'inv-1', amountMinor: 1 })) }],
      appDir,
      REFERENCE_DRILLS,
    );

    // Assess
    const p2 = item(items, 'Tenang-P2-Drill');
    expect(p2).toMatchObject({ status: 'pass' });
    expect(p2.why).toContain(
      'runbooks/invoice-issue.md is drilled by ' +
        [
          'retry-storm',
          'backlog',
          'dlq-not-empty',
          'stuck-jobs',
          'pause-overdue',
          'flag-reconciler',
          'permission-denied',
        ]
          .map((d) => `${d} --job-type invoice.issue`)
          .join(', '),
    );
  });

  it("when a job type of the app's own has no samplePayload, no drill can play on it: P2 fails saying to declare one", () => {
    // Act
    const { items } = auditDeclaredStacks(
      [{ name: 'tenang-dev', template: carrying(withInvoiceIssue()) }],
      appDir,
      REFERENCE_DRILLS,
    );

    // Assess
    const p2 = item(items, 'Tenang-P2-Drill');
    expect(p2).toMatchObject({ status: 'fail', resources: ['jobTypes[3].runbook'] });
    expect(p2.why).toContain(
      'runbooks/invoice-issue.md has no drill: declare a samplePayload for invoice.issue',
    );
  });
});

describe('Function: runAudit (in an app directory)', () => {
  it('when run without a template where a cdk.json is, it synthesizes the app offline and audits it with its declaration', () => {
    // Prepare: an app directory whose cdk.json runs the reference app, with no runbooks/ of its own;
    // a context that has no config and no AWS (the audit must need neither).
    // Inside the checkout (git-ignored .tenang/), as an app's directory is inside its project: the
    // functions' bundling setup wants the project's lock file above it.
    fs.mkdirSync(path.join(ROOT, '.tenang'), { recursive: true });
    const appDir = fs.mkdtempSync(path.join(ROOT, '.tenang', 'audit-app-'));
    const tsx = path.join(ROOT, 'node_modules', '.bin', 'tsx');
    fs.writeFileSync(
      path.join(appDir, 'package.json'),
      JSON.stringify({ name: 'my-pipeline', private: true }),
    );
    fs.writeFileSync(
      path.join(appDir, 'cdk.json'),
      JSON.stringify({
        app: `${tsx} --tsconfig ${path.join(ROOT, 'tsconfig.json')} ${path.join(REFERENCE_APP_DIR, 'app.ts')}`,
        context: {
          'tenang:alarmEmail': ON_CALL_EMAIL,
          // The reference's own drills, which P2 counts beside tenang's.
          'tenang:extensions': path.join(REFERENCE_APP_DIR, 'local', 'index.ts'),
        },
      }),
    );
    const err: string[] = [];
    const ctx = {
      stage: 'dev',
      region: REGION,
      get config(): never {
        throw new CommandFailedError('no pipeline config: the audit must not need one here');
      },
      stackName: 'tenang-dev',
      get clients(): never {
        throw new Error('the audit must not call AWS');
      },
      out: () => undefined,
      err: (t: string) => err.push(t),
      now: () => new Date('2026-01-01T00:00:00Z'),
      actor: 'test',
    } satisfies CliContext;

    try {
      // Act
      const result = runAudit({}, ctx, undefined, appDir, drillsOfAppAt);

      // Assess
      expect(result.source).toBe(`synthesized app ${appDir} (tenang-dev)`);
      expect(item(result.items, 'Tenang-O3-QueueAgeThreshold')).toMatchObject({ status: 'pass' });
      expect(item(result.items, 'Tenang-P1-Runbook')).toMatchObject({ status: 'pass' });
      expect(item(result.items, 'Tenang-P2-Drill')).toMatchObject({ status: 'pass' });
      expect(item(result.items, 'Tenang-F5-AlarmSubscriber')).toMatchObject({ status: 'pass' });
      expect(result.failed).toBe(false);
      expect(err).toEqual([]);
    } finally {
      fs.rmSync(appDir, { recursive: true, force: true });
    }
  }, 120_000);

  it("when run in tenang's own checkout, it keeps the checkout's audit: the declaration from the context", () => {
    // Prepare: the checkout has a cdk.json, but is no team's app.
    const ctx = {
      stage: 'dev',
      region: REGION,
      get config(): never {
        throw new CommandFailedError('no pipeline config for stage "dev"');
      },
      stackName: 'tenang-dev',
      get clients(): never {
        throw new Error('the audit must not call AWS');
      },
      out: () => undefined,
      err: () => undefined,
      now: () => new Date('2026-01-01T00:00:00Z'),
      actor: 'test',
    } satisfies CliContext;

    // Act
    const act = (): unknown => runAudit({}, ctx, undefined, ROOT);

    // Assess: it asked for the declaration instead of synthesizing the checkout's cdk.json app.
    expect(act).toThrow('no pipeline config for stage "dev"');
  });
});
