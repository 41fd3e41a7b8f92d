/**
 * The Serverless Framework reader (lib/audit/serverless.ts): a serverless.yml read as the
 * CloudFormation the framework generates (functions, sqs and stream events, the execution role,
 * resources), its variables resolved or named when they cannot be, and the audit's findings in the
 * framework's words, from a file or stdin, in every output format.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Command } from 'commander';
import type { AuditFinding } from '../../../lib/audit/checklist';
import { isServerlessConfig, lambdaLogicalId, readServerlessConfig } from '../../../lib/audit/serverless';
import { auditTemplates } from '../../../lib/audit/template-audit';
import { readTemplateSource, readTemplateText } from '../../../lib/audit/template-input';
import { parseTemplateText } from '../../../lib/audit/template-text';
import { runAudit } from '../../../lib/ops/audit';
import { renderMarkdown, renderSarif } from '../../../lib/ops/audit-report';
import type { CliContext } from '../../../lib/ops/cli-context';
import { register } from '../../../lib/ops/commands/audit';

const SERVICE_FILE = path.join(__dirname, 'fixtures', 'serverless-service', 'serverless.yml');

type Json = Record<string, unknown>;

/** The generated template of a serverless.yml's text (file includes relative to `file`). */
function generate(text: string, file?: string): { resources: Record<string, Json>; template: Json } {
  const { template } = parseTemplateText(text, file ?? 'stdin');
  if (!isServerlessConfig(template)) throw new Error('not a service');
  const read = readServerlessConfig(template, file);
  return { resources: read.template.Resources as Record<string, Json>, template: read.template };
}

function propsOf(resources: Record<string, Json>, id: string): Json {
  return (resources[id]?.Properties ?? {}) as Json;
}

function fixtureFindings(): AuditFinding[] {
  return auditTemplates(readTemplateSource(SERVICE_FILE)).findings;
}

function findingOf(
  findings: readonly AuditFinding[],
  rule: string,
  resource: string,
): AuditFinding | undefined {
  return findings.find((f) => f.ruleId === `Tenang-${rule}` && f.resource === resource);
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

describe('Function: isServerlessConfig', () => {
  it('when a document has service and provider or functions and no Resources, it is a service', () => {
    // Assess
    expect(isServerlessConfig({ service: 's', provider: { name: 'aws' } })).toBe(true);
    expect(isServerlessConfig({ service: { name: 's' }, functions: {} })).toBe(true);
    expect(isServerlessConfig({ service: 's', provider: {}, Resources: {} })).toBe(false);
    expect(isServerlessConfig({ Resources: {} })).toBe(false);
    expect(isServerlessConfig({ provider: {} })).toBe(false);
  });
});

describe('Function: readServerlessConfig', () => {
  it("when a function states no timeout or memorySize, the model leaves them to the framework's defaults", () => {
    // Act
    const { resources } = generate(
      'service: s\nprovider:\n  name: aws\nfunctions:\n  my-fn_x:\n    handler: h\n',
    );

    // Assess: `-` → Dash, `_` → Underscore, first letter upper-cased.
    expect(lambdaLogicalId('my-fn_x')).toBe('MyDashfnUnderscorexLambdaFunction');
    const fn = resources.MyDashfnUnderscorexLambdaFunction;
    expect(fn?.Type).toBe('AWS::Lambda::Function');
    expect(fn?.Properties).toMatchObject({
      FunctionName: 's-dev-my-fn_x',
      Handler: 'h',
      Role: { 'Fn::GetAtt': ['IamRoleLambdaExecution', 'Arn'] },
    });
    expect(fn?.Properties).not.toHaveProperty('Timeout');
    expect(fn?.Properties).not.toHaveProperty('MemorySize');
    expect(resources.IamRoleLambdaExecution?.Type).toBe('AWS::IAM::Role');
  });

  it('when provider and function both state limits, the function wins and the provider fills the rest', () => {
    // Act
    const { resources } = generate(
      'service: s\nprovider:\n  timeout: 10\n  memorySize: 512\nfunctions:\n  a:\n    handler: h\n    timeout: 30\n',
    );

    // Assess
    expect(propsOf(resources, 'ALambdaFunction')).toMatchObject({ Timeout: 30, MemorySize: 512 });
  });

  it('when an sqs event is an ARN string or an object, it becomes the mapping the framework names', () => {
    // Act
    const { resources } = generate(fs.readFileSync(SERVICE_FILE, 'utf8'), SERVICE_FILE);

    // Assess
    expect(propsOf(resources, 'WorkerEventSourceMappingSQSJobsQueue')).toEqual({
      BatchSize: 7,
      EventSourceArn: { 'Fn::GetAtt': ['JobsQueue', 'Arn'] },
      FunctionName: { 'Fn::GetAtt': ['WorkerLambdaFunction', 'Arn'] },
      Enabled: true,
      MaximumBatchingWindowInSeconds: 5,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
    expect(propsOf(resources, 'PlainDashconsumerEventSourceMappingSQSExternalqueue')).toMatchObject({
      BatchSize: 10,
      EventSourceArn: 'arn:aws:sqs:eu-west-1:123456789012:external-queue',
    });
  });

  it('when a stream event is an object or an ARN string, it becomes a DynamoDB or Kinesis mapping', () => {
    // Act
    const { resources } = generate(fs.readFileSync(SERVICE_FILE, 'utf8'), SERVICE_FILE);

    // Assess
    expect(propsOf(resources, 'StreamUnderscorereaderEventSourceMappingDynamodbOrdersTable')).toEqual({
      BatchSize: 100,
      EventSourceArn: { 'Fn::GetAtt': ['OrdersTable', 'StreamArn'] },
      FunctionName: { 'Fn::GetAtt': ['StreamUnderscorereaderLambdaFunction', 'Arn'] },
      StartingPosition: 'TRIM_HORIZON',
      Enabled: true,
      MaximumRetryAttempts: 5,
      MaximumRecordAgeInSeconds: 3600,
      BisectBatchOnFunctionError: true,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': ['StreamFailures', 'Arn'] } } },
    });
    expect(propsOf(resources, 'StreamUnderscorereaderEventSourceMappingKinesisClicks')).toMatchObject({
      EventSourceArn: 'arn:aws:kinesis:eu-west-1:123456789012:stream/clicks',
    });
  });

  it("when the provider has role statements, the one execution role holds them and the events' grants", () => {
    // Act
    const { resources } = generate(fs.readFileSync(SERVICE_FILE, 'utf8'), SERVICE_FILE);

    // Assess
    const policies = propsOf(resources, 'IamRoleLambdaExecution').Policies as {
      PolicyDocument: { Statement: Json[] };
    }[];
    const statements = policies[0]?.PolicyDocument.Statement ?? [];
    expect(statements[0]).toEqual({
      Effect: 'Allow',
      Action: 'sqs:SendMessage',
      Resource: { 'Fn::GetAtt': ['JobsQueue', 'Arn'] },
    });
    expect(statements).toContainEqual({
      Effect: 'Allow',
      Action: ['sqs:SendMessage'],
      Resource: [{ 'Fn::GetAtt': ['StreamFailures', 'Arn'] }],
    });
  });

  it('when self, sls:stage, env and file variables are used, they resolve as the framework resolves them', () => {
    // Act
    const { resources, template } = generate(fs.readFileSync(SERVICE_FILE, 'utf8'), SERVICE_FILE);

    // Assess: nested self, the dev stage, a fallback after a missing path, an env default, a file key.
    expect(propsOf(resources, 'JobsQueue').QueueName).toBe('orders-dev-jobs');
    expect(propsOf(resources, 'WorkerLambdaFunction').Timeout).toBe(20);
    expect(propsOf(resources, 'WorkerEventSourceMappingSQSJobsQueue').BatchSize).toBe(7);
    expect(template.Outputs).toEqual({ JobsQueueUrl: { Value: { Ref: 'JobsQueue' } } });
  });

  it("when provider.stage is given through opt:stage's fallback, sls:stage is that stage", () => {
    // Act
    const { resources } = generate(
      "service: s\nprovider:\n  stage: ${opt:stage, 'prod'}\nfunctions:\n  a:\n    handler: h\n    name: ${self:service}-${sls:stage}-a\n",
    );

    // Assess
    expect(propsOf(resources, 'ALambdaFunction').FunctionName).toBe('s-prod-a');
  });

  it('when a variable cannot be resolved, it stays as written and is listed with its reason', () => {
    // Act
    const { template } = parseTemplateText(fs.readFileSync(SERVICE_FILE, 'utf8'), SERVICE_FILE);
    const read = readServerlessConfig(template as Json, SERVICE_FILE);

    // Assess
    const fn = (read.template.Resources as Record<string, Json>)['UnknownDashtimeoutLambdaFunction'];
    expect((fn?.Properties as Json).Timeout).toBe('${opt:workerTimeout}');
    expect([...(read.unresolved.get('UnknownDashtimeoutLambdaFunction')?.get('Timeout') ?? [])]).toEqual([
      'Timeout holds ${opt:workerTimeout}, unresolved: opt:workerTimeout is a command-line option of the deploy',
    ]);
  });

  it('when the service comes from stdin, a file include is unresolvable and says why', () => {
    // Act
    const text =
      'service: s\nprovider:\n  timeout: ${file(./limits.yml):timeout}\nfunctions:\n  a:\n    handler: h\n';
    const { template } = parseTemplateText(text, 'stdin');
    const read = readServerlessConfig(template as Json, undefined);

    // Assess
    expect([...(read.unresolved.get('ALambdaFunction')?.get('Timeout') ?? [])][0]).toMatch(
      /file\(\.\/limits\.yml\) is relative to a file, and the service was read from stdin/,
    );
  });

  it('when resources is a list of sections, each is merged in', () => {
    // Act
    const { resources } = generate(
      'service: s\nprovider: {}\nresources:\n  - Resources:\n      Q1: { Type: AWS::SQS::Queue }\n  - Resources:\n      Q2: { Type: AWS::SQS::Queue }\n',
    );

    // Assess
    expect(Object.keys(resources)).toEqual(['Q1', 'Q2']);
  });
});

describe('Function: auditTemplates (serverless.yml)', () => {
  it("when the queue's visibility covers 6 × the function's resolved timeout + the window, D2 passes; the framework's 6 s default counts", () => {
    // Prepare
    const text =
      'service: s\nprovider: {}\nfunctions:\n  w:\n    handler: h\n    events:\n      - sqs: { arn: !GetAtt Q.Arn }\nresources:\n  Resources:\n    Q: { Type: AWS::SQS::Queue }\n';

    // Act
    const { findings } = auditTemplates([readTemplateText(text, 'stdin')]);

    // Assess: 30 s < 6 × 6 s (Lambda's own 3 s default would pass).
    expect(findingOf(findings, 'D2', 'Q')?.why).toBe(
      "Q: visibility timeout 30 s < 6 × WLambdaFunction timeout 6 s + batching window 0 s = 36 s: set the queue's VisibilityTimeout (in resources.Resources) to at least 36 s (or lower the function's timeout)",
    );
  });

  it("when an sqs event lacks partial batch responses, D3 names the event's functionResponseType", () => {
    // Act
    const findings = fixtureFindings();

    // Assess
    const d3 = findingOf(findings, 'D3', 'PlainDashconsumerEventSourceMappingSQSExternalqueue');
    expect(d3?.status).toBe('fail');
    expect(d3?.why).toContain('add functionResponseType: ReportBatchItemFailures on the event');
    expect(d3?.why).not.toContain('FunctionResponseTypes');
  });

  it("when a consumer states no timeout or memorySize, D4 names timeout/provider.timeout and the framework's defaults", () => {
    // Act
    const findings = fixtureFindings();

    // Assess
    expect(findingOf(findings, 'D4', 'PlainDashconsumerLambdaFunction')?.why).toBe(
      "PlainDashconsumerLambdaFunction: no timeout: set timeout (seconds, above the slowest job's outbound timeouts) instead of the framework's 6 s default",
    );
    expect(findingOf(findings, 'D4', 'WorkerLambdaFunction')).toBeUndefined();
  });

  it('when a stream event is unbounded, R6 names the event options', () => {
    // Act
    const findings = fixtureFindings();

    // Assess
    const why = findingOf(findings, 'R6', 'StreamUnderscorereaderEventSourceMappingKinesisClicks')?.why ?? '';
    expect(why).toContain('set bisectBatchOnFunctionError: true');
    expect(why).toContain('maximumRetryAttempts is -1');
    expect(why).toContain('add destinations.onFailure');
    expect(
      findingOf(findings, 'R6', 'StreamUnderscorereaderEventSourceMappingDynamodbOrdersTable'),
    ).toBeUndefined();
  });

  it('when a timeout is an unresolved variable, the rules reading it are not checkable and name it', () => {
    // Act
    const findings = fixtureFindings();

    // Assess
    const d2 = findingOf(findings, 'D2', 'OtherQueue');
    expect(d2?.status).toBe('not-checkable');
    expect(d2?.why).toContain('${opt:workerTimeout}');
    expect(
      findings.some(
        (f) => f.status === 'not-checkable' && f.why.includes('opt:workerTimeout is a command-line option'),
      ),
    ).toBe(true);
  });

  it('when a finding is on an event, it points at the line of that event in serverless.yml', () => {
    // Act
    const findings = fixtureFindings();

    // Assess
    const lines = fs.readFileSync(SERVICE_FILE, 'utf8').split('\n');
    const d3 = findingOf(findings, 'D3', 'PlainDashconsumerEventSourceMappingSQSExternalqueue');
    expect(d3?.file).toBe(SERVICE_FILE);
    expect(lines[(d3?.line ?? 0) - 1]).toContain('- sqs: arn:aws:sqs:eu-west-1:123456789012:external-queue');
    const d4 = findingOf(findings, 'D4', 'PlainDashconsumerLambdaFunction');
    expect(lines[(d4?.line ?? 0) - 1]).toBe('  plain-consumer:');
  });
});

describe('Function: runAudit (serverless.yml)', () => {
  it('when the service is given on stdin, it is audited as from a file, without file includes', () => {
    // Act
    const result = runAudit({ template: '-' }, templateContext(), () =>
      fs.readFileSync(SERVICE_FILE, 'utf8'),
    );

    // Assess
    expect(result.source).toBe('stdin');
    expect(result.failed).toBe(true);
    const batch = result.findings?.find(
      (f) => f.status === 'not-checkable' && f.why.includes('${file(./config/queue.yml):batchSize}'),
    );
    expect(batch).toBeUndefined(); // BatchSize is read by no rule: its unresolved include stays silent
    expect(result.findings?.find((f) => f.ruleId === 'Tenang-D3')?.file).toBe('stdin');
  });

  it('when rendered as SARIF and markdown, the findings carry the serverless.yml and its lines', () => {
    // Act
    const result = runAudit({ template: SERVICE_FILE }, templateContext());
    const sarif = JSON.parse(renderSarif(result)) as {
      runs: { results: { ruleId: string; locations: { physicalLocation: Json }[] }[] }[];
    };
    const markdown = renderMarkdown(result);

    // Assess
    const d3 = sarif.runs[0]?.results.find((r) => r.ruleId === 'Tenang-D3');
    expect(d3?.locations[0]?.physicalLocation).toMatchObject({
      artifactLocation: { uri: expect.stringContaining('serverless.yml') },
      region: { startLine: expect.any(Number) },
    });
    expect(markdown).toContain('PlainDashconsumerEventSourceMappingSQSExternalqueue');
  });

  it('when the command prints text or JSON for a serverless.yml, it fails on the error-level findings', async () => {
    // Prepare
    const audit = async (out: string[], ...args: string[]): Promise<void> => {
      const program = new Command().exitOverride().option('--json');
      register(program, () => templateContext(out));
      await program.parseAsync(['node', 'tenang', 'audit', ...args]);
    };
    const text: string[] = [];
    const json: string[] = [];

    // Act
    const runText = audit(text, SERVICE_FILE);
    const runJson = audit(json, SERVICE_FILE, '--format', 'json');

    // Assess
    await expect(runText).rejects.toThrow(/audit failed: .*Tenang-D3/);
    await expect(runJson).rejects.toThrow(/audit failed/);
    expect(text.join('\n')).toContain('functionResponseType: ReportBatchItemFailures');
    expect(JSON.stringify(JSON.parse(json.join('\n')))).toContain('PlainDashconsumerLambdaFunction');
  });

  it('when a serverless.yml includes a file next to it, the include is read relative to the file', () => {
    // Prepare
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-sls-'));
    fs.writeFileSync(path.join(dir, 'limits.json'), '{ "timeout": 40 }');
    const file = path.join(dir, 'serverless.yml');
    fs.writeFileSync(
      file,
      'service: s\nprovider:\n  timeout: ${file(./limits.json):timeout}\nfunctions:\n  a:\n    handler: h\n',
    );

    // Act
    const [stack] = readTemplateSource(file);

    // Assess
    const resources = (stack?.template as Json).Resources as Record<string, Json>;
    expect(propsOf(resources, 'ALambdaFunction').Timeout).toBe(40);
  });
});
