/**
 * What `tenang audit` reads: YAML with short-form intrinsics, SAM templates, cdk.out
 * assemblies (stacks, nested stacks, imports), stdin; and what it prints: SARIF 2.1.0 (validated
 * against the OASIS schema), markdown, and a JSON error for an input it refuses.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Ajv from 'ajv';
import { Command } from 'commander';
import type { ChecklistItem } from '../../../lib/audit/checklist';
import { auditTemplate, auditTemplates } from '../../../lib/audit/template-audit';
import { readCloudAssembly, readTemplateText } from '../../../lib/audit/template-input';
import { runCaptured } from '../../../bin/tenang';
import { TemplateFormatError, parseTemplateText } from '../../../lib/audit/template-text';
import { runAudit, type AuditResult } from '../../../lib/ops/audit';
import { renderMarkdown, renderSarif } from '../../../lib/ops/audit-report';
import { UsageError, type CliContext } from '../../../lib/ops/cli-context';
import { register } from '../../../lib/ops/commands/audit';

const FIXTURES = path.join(__dirname, 'fixtures');
const SAM_FILE = path.join(FIXTURES, 'sam-worker.yaml');

function statusOf(items: readonly ChecklistItem[], rule: string): string | undefined {
  return items.find((i) => i.ruleId === rule)?.status;
}

/** A context for template audits, which read no config and call no AWS API. */
function templateContext(out: string[] = []): CliContext {
  return {
    stage: 'dev',
    region: 'eu-west-1',
    stackName: 'tenang-dev',
    get config(): never {
      throw new Error('a template audit must not read the config');
    },
    get clients(): never {
      throw new Error('the audit must not call AWS');
    },
    out: (t: string) => out.push(t),
    err: () => undefined,
    now: () => new Date('2026-01-01T00:00:00Z'),
    actor: 'test',
  } as unknown as CliContext;
}

function tmpDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-audit-formats-'));
}

describe('Function: parseTemplateText', () => {
  it('when YAML uses every short-form intrinsic, it reads each as its long form', () => {
    // Act
    const { template } = parseTemplateText(
      fs.readFileSync(path.join(FIXTURES, 'short-forms.yaml'), 'utf8'),
      'y',
    );

    // Assess
    const t = template as {
      AWSTemplateFormatVersion: unknown;
      Conditions: Record<string, unknown>;
      Resources: { Queue: { Properties: { QueueName: unknown; Tags: { Value: unknown }[] } } };
    };
    expect(t.AWSTemplateFormatVersion).toBe('2010-09-09');
    expect(t.Conditions).toEqual({
      IsProd: { 'Fn::Equals': [{ Ref: 'Stage' }, 'prod'] },
      NotProd: { 'Fn::Not': [{ Condition: 'IsProd' }] },
      Both: {
        'Fn::And': [
          { Condition: 'IsProd' },
          { 'Fn::Or': [{ Condition: 'NotProd' }, { Condition: 'IsProd' }] },
        ],
      },
    });
    expect(t.Resources.Queue.Properties.QueueName).toEqual({ 'Fn::Sub': '${AWS::StackName}-jobs' });
    expect(t.Resources.Queue.Properties.Tags.map((tag) => tag.Value)).toEqual([
      { Ref: 'Stage' },
      { 'Fn::GetAtt': ['Dlq', 'Arn'] },
      { 'Fn::GetAtt': ['Dlq', 'QueueName'] },
      { 'Fn::Sub': ['${Name}-x', { Name: { Ref: 'Stage' } }] },
      { 'Fn::If': ['IsProd', { 'Fn::Join': ['-', ['a', { Ref: 'Stage' }]] }, { Ref: 'AWS::NoValue' }] },
      { 'Fn::Select': [0, { 'Fn::Split': [',', 'x,y'] }] },
      { 'Fn::FindInMap': ['Sizes', { Ref: 'Stage' }, 'Batch'] },
      { 'Fn::ImportValue': 'shared-topic-arn' },
      { 'Fn::Base64': { 'Fn::Sub': 'raw' } },
      { 'Fn::Select': [0, { 'Fn::Cidr': ['10.0.0.0/16', 4, 8] }] },
      { 'Fn::Select': [0, { 'Fn::GetAZs': '' }] },
      { 'Fn::GetAtt': ['Nested', 'Outputs.TopicArn'] },
    ]);
  });

  it('when the text is neither JSON nor YAML, it throws a TemplateFormatError naming the input and line', () => {
    // Act
    const act = (): unknown => parseTemplateText('Resources:\n  Q: [unclosed\n', 'bad.yaml');

    // Assess
    expect(act).toThrow(TemplateFormatError);
    expect(act).toThrow(/bad\.yaml is not a JSON or YAML template: .*line/);
  });

  it('when asked for a resource, it finds its line in YAML and in JSON', () => {
    // Prepare
    const yaml = parseTemplateText('Resources:\n  A:\n    Type: X\n  B:\n    Type: Y\n', 'y');
    const json = parseTemplateText(
      '{\n  "Resources": {\n    "A": { "Type": "X" },\n    "B": { "Type": "Y" }\n  }\n}',
      'j',
    );

    // Act / Assess
    expect(yaml.lineOf(['Resources', 'B'])).toBe(4);
    expect(json.lineOf(['Resources', 'B'])).toBe(4);
    expect(json.lineOf(['Resources', 'C'])).toBeUndefined();
  });
});

describe('Function: auditTemplates over a SAM template', () => {
  it('when a SAM function has Globals and SQS, DynamoDB and Kinesis events, it finds their flaws and names the function and event', () => {
    // Prepare
    const stack = readTemplateText(fs.readFileSync(SAM_FILE, 'utf8'), SAM_FILE);

    // Act
    const { items, findings } = auditTemplates([stack]);

    // Assess
    expect(statusOf(items, 'Tenang-D2')).toBe('fail'); // 30 s < 6 × 60 s, the Timeout from Globals
    expect(statusOf(items, 'Tenang-D4')).toBe('pass'); // Timeout and MemorySize both from Globals
    const byRule = (rule: string): string[] =>
      findings.filter((f) => f.ruleId === rule).map((f) => f.resource);
    // D3 covers stream events too: they report batch item failures as SQS events do.
    expect(byRule('Tenang-D3')).toEqual([
      'Worker (event MySQSEvent)',
      'Worker (event OrderStream)',
      'Worker (event KinesisEvent)',
    ]);
    expect(byRule('Tenang-R6')).toEqual(['Worker (event OrderStream)']); // the Kinesis event is bounded
    expect(byRule('Tenang-I1')).toEqual(['IdempotencyTable']); // a SimpleTable has no TTL
    const d3 = findings.find((f) => f.ruleId === 'Tenang-D3');
    expect(d3?.why).toMatch(
      /^Worker \(event MySQSEvent\) \(SQS\): does not report batch item failures: add /,
    );
    expect(d3?.line).toBe(
      fs
        .readFileSync(SAM_FILE, 'utf8')
        .split('\n')
        .findIndex((l) => l.trim() === 'MySQSEvent:') + 1,
    );
  });

  it("when a function sets a Globals property, the function's own value wins and maps merge", () => {
    // Prepare
    const template = {
      Transform: ['AWS::Serverless-2016-10-31'],
      Globals: { Function: { Timeout: 3, Environment: { Variables: { LOCK_TABLE: { Ref: 'Locks' } } } } },
      Resources: {
        Locks: { Type: 'AWS::DynamoDB::Table', Properties: {} },
        Jobs: { Type: 'AWS::SQS::Queue', Properties: { VisibilityTimeout: 180 } },
        Fn: {
          Type: 'AWS::Serverless::Function',
          Properties: {
            Timeout: 30,
            Environment: { Variables: { A: 'b' } },
            Events: { Jobs: { Type: 'SQS', Properties: { Queue: { 'Fn::GetAtt': ['Jobs', 'Arn'] } } } },
          },
        },
      },
    };

    // Act
    const items = auditTemplate(template);

    // Assess
    expect(items.find((i) => i.ruleId === 'Tenang-D4')?.why).toMatch(/^Fn: no MemorySize: set MemorySize /); // Timeout 30 kept
    expect(items.find((i) => i.ruleId === 'Tenang-L1')?.why).toContain('LOCK_TABLE'); // the global variable
  });

  const python = spawnSync('python3', ['-c', 'import samtranslator'], { encoding: 'utf8' });
  (python.status === 0 ? it : it.skip)(
    "when the SAM translator is installed, the audit of the model agrees with the audit of the translator's output",
    () => {
      // Prepare
      const dir = tmpDir();
      const source = path.join(dir, 'sam.yaml');
      fs.writeFileSync(
        source,
        fs.readFileSync(SAM_FILE, 'utf8').replace('CodeUri: src/', 'CodeUri: s3://b/k.zip'),
      );
      const script = [
        'import json, sys',
        'from samtranslator.yaml_helper import yaml_parse',
        'from samtranslator.translator.transform import transform',
        'class Loader:',
        '    def load(self): return {}',
        'print(json.dumps(transform(yaml_parse(open(sys.argv[1]).read()), {}, Loader())))',
      ].join('\n');
      const translated: unknown = JSON.parse(
        execFileSync('python3', ['-c', script, source], {
          encoding: 'utf8',
          env: { ...process.env, AWS_DEFAULT_REGION: 'eu-west-1' },
        }),
      );

      // Act
      const modelled = auditTemplate(readTemplateText(fs.readFileSync(source, 'utf8'), source).template);
      const byTranslator = auditTemplate(translated);

      // Assess
      expect(modelled.map((i) => [i.ruleId, i.status])).toEqual(
        byTranslator.map((i) => [i.ruleId, i.status]),
      );
    },
    60_000,
  );
});

/** A cloud assembly: stack Shared (a queue it exports), stack App (imports it; a nested stack). */
function writeAssembly(dir: string, options: { withNested: boolean; exportName: string }): void {
  const shared = {
    Resources: {
      Jobs: { Type: 'AWS::SQS::Queue', Properties: { VisibilityTimeout: 30 } },
    },
    Outputs: { JobsArn: { Value: { 'Fn::GetAtt': ['Jobs', 'Arn'] }, Export: { Name: options.exportName } } },
  };
  const app = {
    Resources: {
      Worker: { Type: 'AWS::Lambda::Function', Properties: { Timeout: 20, MemorySize: 256 } },
      Mapping: {
        Type: 'AWS::Lambda::EventSourceMapping',
        Properties: {
          EventSourceArn: { 'Fn::ImportValue': 'shared-jobs-arn' },
          FunctionName: { Ref: 'Worker' },
          FunctionResponseTypes: ['ReportBatchItemFailures'],
        },
      },
      Streams: {
        Type: 'AWS::CloudFormation::Stack',
        Properties: {
          TemplateURL: 'https://s3.amazonaws.com/cdk-assets/' + 'a'.repeat(64) + '.json',
          Parameters: { referencetoWorkerRef: { Ref: 'Worker' } },
        },
        Metadata: { 'aws:asset:path': 'AppStreams.nested.template.json' },
      },
    },
  };
  const nested = {
    Parameters: { referencetoWorkerRef: { Type: 'String' } },
    Resources: {
      Table: { Type: 'AWS::DynamoDB::Table', Properties: {} },
      StreamMapping: {
        Type: 'AWS::Lambda::EventSourceMapping',
        Properties: {
          EventSourceArn: { 'Fn::GetAtt': ['Table', 'StreamArn'] },
          FunctionName: { Ref: 'referencetoWorkerRef' },
        },
      },
    },
  };
  fs.writeFileSync(path.join(dir, 'Shared.template.json'), JSON.stringify(shared, null, 1));
  fs.writeFileSync(path.join(dir, 'App.template.json'), JSON.stringify(app, null, 1));
  if (options.withNested)
    fs.writeFileSync(path.join(dir, 'AppStreams.nested.template.json'), JSON.stringify(nested, null, 1));
  const stackArtifact = (file: string, stackName: string): unknown => ({
    type: 'aws:cloudformation:stack',
    properties: { templateFile: file, stackName },
  });
  fs.writeFileSync(
    path.join(dir, 'manifest.json'),
    JSON.stringify({
      version: '40.0.0',
      artifacts: {
        Tree: { type: 'cdk:tree', properties: { file: 'tree.json' } },
        Shared: stackArtifact('Shared.template.json', 'shared'),
        App: stackArtifact('App.template.json', 'app'),
      },
    }),
  );
}

describe('Function: auditTemplates over a cloud assembly', () => {
  it('when two stacks, a nested stack and an import deploy together, it audits them as one and says which stack each finding is in', () => {
    // Prepare
    const dir = tmpDir();
    writeAssembly(dir, { withNested: true, exportName: 'shared-jobs-arn' });

    // Act
    const stacks = readCloudAssembly(dir);
    const { items, findings } = auditTemplates(stacks);

    // Assess
    expect(stacks.map((s) => s.name)).toEqual(['shared', 'app', 'app/Streams']);
    // D2 joins the queue of one stack to the function of another through the import.
    expect(items.find((i) => i.ruleId === 'Tenang-D2')?.why).toBe(
      "shared/Jobs: visibility timeout 30 s < 6 × app/Worker timeout 20 s + batching window 0 s = 120 s: set the queue's VisibilityTimeout to at least 120 s (or lower the function's Timeout)",
    );
    const r3 = findings.find((f) => f.ruleId === 'Tenang-R3');
    expect(r3).toMatchObject({ resource: 'shared/Jobs', stack: 'shared', line: 3 });
    expect(r3?.file).toBe(path.join(dir, 'Shared.template.json'));
    // The nested stack's mapping reaches the parent's function through its parameter.
    expect(findings.find((f) => f.ruleId === 'Tenang-R6')).toMatchObject({
      resource: 'app/Streams/StreamMapping',
      stack: 'app/Streams',
    });
    // The SQS mapping reports batch item failures; the stream mapping does not (D3 covers streams).
    expect(findings.filter((f) => f.ruleId === 'Tenang-D3').map((f) => f.resource)).toEqual([
      'app/Streams/StreamMapping',
    ]);
  });

  it('when an import or a nested stack cannot be resolved, the rules that read it are not-checkable, naming what is unknown', () => {
    // Prepare
    const dir = tmpDir();
    writeAssembly(dir, { withNested: false, exportName: 'another-name' });

    // Act
    const { items, findings, notAudited } = auditTemplates(readCloudAssembly(dir));

    // Assess
    expect(statusOf(items, 'Tenang-D3')).toBe('not-checkable');
    expect(items.find((i) => i.ruleId === 'Tenang-D3')?.why).toContain(
      'app/Mapping: Fn::ImportValue "shared-jobs-arn": no stack given exports it',
    );
    // The nested stack not given is named once; a rule hears of it only through what it is passed
    // (Worker): D4 decided on Worker from the parent, so it stays decided.
    expect(notAudited).toEqual([
      'nested stack app/Streams: its template was not given (audit the whole cdk.out, or the nested template with this one)',
    ]);
    expect(
      findings.filter((f) => f.why.includes('nested stack app/Streams')).map((f) => f.ruleId),
    ).not.toContain('Tenang-D4');
    expect(statusOf(items, 'Tenang-D4')).toBe('pass');
    expect(findings.every((f) => f.status === 'not-checkable' || f.ruleId !== 'Tenang-D3')).toBe(true);
  });
});

describe('Function: runAudit', () => {
  it('when the template is - , it reads YAML from stdin (cdk synth | tenang audit -)', () => {
    // Prepare
    const yaml = fs.readFileSync(SAM_FILE, 'utf8');

    // Act
    const result = runAudit({ template: '-' }, templateContext(), () => yaml);

    // Assess
    expect(result.source).toBe('stdin');
    expect(result.failed).toBe(true);
    expect(result.findings?.find((f) => f.ruleId === 'Tenang-D3')?.file).toBe('stdin');
  });

  it('when stdin holds no template, it refuses with a usage error', () => {
    // Act
    const act = (): unknown => runAudit({ template: '-' }, templateContext(), () => 'just: text\n');

    // Assess
    expect(act).toThrow(UsageError);
    expect(act).toThrow(/no Resources object/);
  });
});

describe('Function: renderSarif', () => {
  function samResult(): AuditResult {
    return runAudit({ template: SAM_FILE }, templateContext());
  }

  it('when the audit fails, it writes a SARIF 2.1.0 log that the OASIS schema accepts', () => {
    // Prepare
    const schema = JSON.parse(
      fs.readFileSync(path.join(FIXTURES, 'sarif-schema-2.1.0.json'), 'utf8'),
    ) as Record<string, unknown>;
    // The schema is draft-04 (`id`); ajv 8 reads draft-07, which has the same keywords it uses.
    const { id, $schema: _draft, ...rest } = schema;
    const ajv = new Ajv({ strict: false, allErrors: true });
    ajv.addFormat('uri', /^[a-z][a-z0-9+.-]*:\S*$/i);
    ajv.addFormat('uri-reference', /^\S*$/);
    ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}T/);
    const validate = ajv.compile({ ...rest, $id: String(id) });

    // Act
    const log = JSON.parse(renderSarif(samResult())) as {
      runs: {
        tool: { driver: { rules: { id: string; helpUri: string }[] } };
        results: Record<string, unknown>[];
      }[];
    };

    // Assess
    expect(validate(log)).toBe(true);
    expect(validate.errors ?? []).toEqual([]);
    expect(log.runs).toHaveLength(1);
    const [run] = log.runs;
    expect(run?.tool.driver.rules.find((r) => r.id === 'Tenang-D3')?.helpUri).toMatch(
      /docs\/features\.md#d3$/,
    );
    expect(run?.results.find((r) => r.ruleId === 'Tenang-D3')).toMatchObject({
      level: 'error',
      locations: [
        {
          physicalLocation: {
            artifactLocation: { uri: expect.stringContaining('sam-worker.yaml') },
            region: { startLine: expect.any(Number) },
          },
          logicalLocations: [{ name: 'Worker (event MySQSEvent)', kind: 'resource' }],
        },
      ],
    });
  });

  it('when the audit fails, the markdown report leads with a summary line and the failures table', () => {
    // Act
    const markdown = renderMarkdown(samResult());

    // Assess
    const lines = markdown.split('\n');
    expect(lines[0]).toMatch(/^### tenang audit of .*sam-worker\.yaml: ❌ failed$/);
    expect(lines[2]).toMatch(/^7 error-level rules failed, 0 warnings, 0 not checkable, 2 passed/);
    expect(lines[4]).toBe('#### Failures');
    expect(markdown).toContain('| Worker (event MySQSEvent) |');
    expect(markdown.indexOf('#### Failures')).toBeLessThan(markdown.indexOf('<details>'));
  });
});

describe('Command: audit (formats)', () => {
  async function audit(ctx: CliContext, ...args: string[]): Promise<void> {
    const program = new Command().exitOverride().option('--json');
    register(program, () => ctx);
    await program.parseAsync(['node', 'tenang', 'audit', ...args]);
  }

  it('when --json is given and the input cannot be read, it prints a JSON error on stdout and fails as a usage error', async () => {
    // Prepare
    const dir = tmpDir();
    const file = path.join(dir, 'template.yaml');
    fs.writeFileSync(file, 'Resources: {\n');

    // Act: through the CLI's entry point, whose error funnel prints the JSON error.
    const run = await runCaptured(['audit', file, '--json']);

    // Assess
    expect(run.code).toBe(2);
    const printed = JSON.parse(run.out) as { error: { kind: string; message: string } };
    expect(printed.error.kind).toBe('usage');
    expect(printed.error.message).toContain('template.yaml is not a JSON or YAML template');
  });

  it('when --format sarif is given with a template, it prints SARIF and fails on the error-level findings', async () => {
    // Prepare
    const out: string[] = [];

    // Act
    const run = audit(templateContext(out), '--template', SAM_FILE, '--format', 'sarif');

    // Assess
    await expect(run).rejects.toThrow(/audit failed: Tenang-D2/);
    expect((JSON.parse(out.join('\n')) as { version: string }).version).toBe('2.1.0');
  });

  it('when --format is not a known format, it refuses with a usage error', async () => {
    // Act
    const run = audit(templateContext(), SAM_FILE, '--format', 'html');

    // Assess
    await expect(run).rejects.toThrow(/--format is one of text, json, sarif, markdown/);
  });
});
