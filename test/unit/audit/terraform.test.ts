/**
 * `tenang audit` on Terraform: the expression evaluator (lib/audit/terraform-expr.ts) and the
 * reader (lib/audit/terraform.ts) of .tf directories, files, HCL on stdin and plan JSON, judged
 * by the same rules as CloudFormation, with findings in Terraform's addresses and words.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AuditFinding } from '../../../lib/audit/checklist';
import { auditTemplates } from '../../../lib/audit/template-audit';
import { readTemplateSource, readTemplateText } from '../../../lib/audit/template-input';
import { ResourceRef, Unresolved, evaluateValue, type Scope } from '../../../lib/audit/terraform-expr';
import { runAudit } from '../../../lib/ops/audit';
import { renderSarif } from '../../../lib/ops/audit-report';
import type { CliContext } from '../../../lib/ops/cli-context';

// Each Terraform read runs the HCL parser in a child process (about a second and a half).
jest.setTimeout(60_000);

const CORPUS = path.join(__dirname, '..', '..', 'fixtures', 'audit-corpus');

/** A scope with given variables and locals, and resources of the listed addresses. */
function scope(
  variables: Record<string, unknown> = {},
  locals: Record<string, unknown> = {},
  resources: string[] = [],
): Scope {
  const s: Scope = {
    directory: '/nowhere',
    variable: (name) =>
      name in variables ? evaluateValue(variables[name], s) : new Unresolved(`var.${name} has no default`),
    local: (name) => evaluateValue(locals[name], s),
    resource: (type, name) => (resources.includes(`${type}.${name}`) ? `${type}.${name}` : undefined),
    moduleOutput: (name, output) => new Unresolved(`module.${name}.${output}`),
  };
  return s;
}

/** Writes .tf files into a new directory. */
function configuration(files: Record<string, string>): string {
  const directory = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-terraform-'));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(directory, name)), { recursive: true });
    fs.writeFileSync(path.join(directory, name), text);
  }
  return directory;
}

function audit(source: string): AuditFinding[] {
  return auditTemplates(readTemplateSource(source)).findings;
}

function finding(
  findings: readonly AuditFinding[],
  rule: string,
  resource: string,
): AuditFinding | undefined {
  return findings.find((f) => f.ruleId === `Tenang-${rule}` && f.resource === resource);
}

const CONSUMER = `
resource "aws_sqs_queue" "jobs" {
  name = "jobs"
}
resource "aws_lambda_function" "worker" {
  function_name = "worker"
  timeout       = 10
  memory_size   = 256
}
resource "aws_lambda_event_source_mapping" "jobs" {
  event_source_arn = aws_sqs_queue.jobs.arn
  function_name    = aws_lambda_function.worker.arn
}
`;

describe('Function: evaluateValue', () => {
  it('when a value holds literals, arithmetic, a template and a conditional, it evaluates them', () => {
    // Act
    const value = evaluateValue(
      { a: 30, b: '${6 * 5 + 2}', c: 'q-${var.stage}', d: '${var.stage == "prod" ? 60 : 30}' },
      scope({ stage: 'dev' }),
    );

    // Assess
    expect(value).toEqual({ a: 30, b: 32, c: 'q-dev', d: 30 });
  });

  it('when a variable has no default, its value is unresolved and names it', () => {
    // Act
    const value = evaluateValue('${var.timeout * 6}', scope());

    // Assess
    expect(value).toBeInstanceOf(Unresolved);
    expect((value as Unresolved).why).toMatch(/var\.timeout/);
  });

  it('when a local refers to a variable, it is evaluated through it', () => {
    // Act
    const value = evaluateValue(
      '${local.visibility}',
      scope({ timeout: 20 }, { visibility: '${var.timeout * 6}' }),
    );

    // Assess
    expect(value).toBe(120);
  });

  it('when jsonencode builds a redrive policy, it stays an object with a reference to the DLQ', () => {
    // Act
    const value = evaluateValue(
      '${jsonencode({ deadLetterTargetArn = aws_sqs_queue.dlq.arn, maxReceiveCount = 5 })}',
      scope({}, {}, ['aws_sqs_queue.dlq']),
    );

    // Assess
    expect(value).toEqual({
      deadLetterTargetArn: new ResourceRef('aws_sqs_queue.dlq', 'arn'),
      maxReceiveCount: 5,
    });
  });

  it('when a heredoc policy interpolates a queue ARN, the document is parsed and the Resource is a reference', () => {
    // Act
    const value = evaluateValue(
      '{"Statement": [{"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "${aws_sqs_queue.q.arn}"}]}\n',
      scope({}, {}, ['aws_sqs_queue.q']),
    );

    // Assess
    expect(value).toEqual({
      Statement: [
        { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: new ResourceRef('aws_sqs_queue.q', 'arn') },
      ],
    });
  });

  it('when a data source or an unknown function is used, the value is unresolved, saying which', () => {
    // Act
    const data = evaluateValue('${data.aws_caller_identity.current.account_id}', scope());
    const call = evaluateValue('${templatefile("p.tftpl", {})}', scope());

    // Assess
    expect((data as Unresolved).why).toMatch(/data\.aws_caller_identity\.current\.account_id/);
    expect((call as Unresolved).why).toMatch(/templatefile\(\)/);
  });
});

describe('Function: readTemplateSource (Terraform)', () => {
  it("when a queue and a function leave timeouts unset, Terraform's defaults apply: visibility 30 s, timeout 3 s", () => {
    // Prepare
    const directory = configuration({ 'main.tf': CONSUMER.replace(/\n\s*timeout\s+= 10/, '') });

    // Act
    const findings = audit(directory);

    // Assess: 30 ≥ 6 × 3, so D2 passes and raises no finding; D3 fails in Terraform's words.
    expect(finding(findings, 'D2', 'aws_sqs_queue.jobs')).toBeUndefined();
    expect(finding(findings, 'D4', 'aws_lambda_function.worker')?.why).toMatch(/no timeout/);
    expect(finding(findings, 'D3', 'aws_lambda_event_source_mapping.jobs')?.why).toContain(
      'function_response_types = ["ReportBatchItemFailures"]',
    );
  });

  it('when the function timeout is 10 s and the queue keeps the default visibility, D2 fails at visibility_timeout_seconds', () => {
    // Prepare
    const directory = configuration({ 'main.tf': CONSUMER });

    // Act
    const d2 = finding(audit(directory), 'D2', 'aws_sqs_queue.jobs');

    // Assess
    expect(d2?.status).toBe('fail');
    expect(d2?.why).toMatch(/visibility timeout 30 s < 6 × aws_lambda_function\.worker timeout 10 s/);
    expect(d2?.why).toMatch(/visibility_timeout_seconds to at least 60 s/);
    expect(d2?.file).toBe(path.join(directory, 'main.tf'));
    expect(d2?.line).toBe(2);
  });

  it('when the visibility comes from a variable default and another without default, it uses the one and names the other', () => {
    // Prepare
    const directory = configuration({
      'main.tf': CONSUMER.replace(
        'name = "jobs"',
        'name = "jobs"\n  visibility_timeout_seconds = var.visibility',
      ),
      'variables.tf': 'variable "visibility" {\n  type = number\n}\n',
    });
    const withDefault = configuration({
      'main.tf': CONSUMER.replace('name = "jobs"', 'name = "jobs"\n  visibility_timeout_seconds = local.v'),
      'variables.tf': 'variable "visibility" {\n  default = 60\n}\nlocals {\n  v = var.visibility * 2\n}\n',
    });

    // Act
    const unknown = finding(audit(directory), 'D2', 'aws_sqs_queue.jobs');
    const known = finding(audit(withDefault), 'D2', 'aws_sqs_queue.jobs');

    // Assess
    expect(unknown?.status).toBe('not-checkable');
    expect(unknown?.why).toMatch(/var\.visibility has no default/);
    expect(known).toBeUndefined(); // 120 ≥ 60: passes
  });

  it('when resources use count and a literal for_each, count is one instance and for_each is expanded', () => {
    // Prepare
    const directory = configuration({
      'main.tf': `
resource "aws_sqs_queue" "jobs" {
  for_each = toset(["a", "b"])
  name     = "jobs-\${each.key}"
}
resource "aws_sqs_queue" "off" {
  count = 0
}
resource "aws_lambda_function" "worker" {
  count       = 2
  timeout     = 3
  memory_size = 128
}
resource "aws_lambda_event_source_mapping" "jobs" {
  for_each         = aws_sqs_queue.jobs
  event_source_arn = aws_sqs_queue.jobs["a"].arn
  function_name    = aws_lambda_function.worker[0].arn
}
`,
    });

    // Act
    const stack = readTemplateSource(directory)[0];
    const findings = auditTemplates(readTemplateSource(directory)).findings;

    // Assess
    const names = Object.keys((stack?.template as { Resources: object }).Resources).map(
      (id) => stack?.locate?.(id)?.display,
    );
    expect(names).toEqual(
      expect.arrayContaining([
        'aws_sqs_queue.jobs["a"]',
        'aws_sqs_queue.jobs["b"]',
        'aws_lambda_function.worker[0]',
      ]),
    );
    expect(names).not.toContain('aws_sqs_queue.off[0]');
    expect(finding(findings, 'R3', 'aws_sqs_queue.jobs["a"]')?.status).toBe('fail');
  });

  it('when a module is local, its resources are read with the arguments of the call; a remote one is named as not audited', () => {
    // Prepare
    const directory = configuration({
      'main.tf': `
module "worker" {
  source  = "./modules/worker"
  timeout = 20
}
module "sqs" {
  source  = "terraform-aws-modules/sqs/aws"
  version = "~> 4.0"
}
`,
      'modules/worker/main.tf': CONSUMER.replace('timeout       = 10', 'timeout       = var.timeout'),
      'modules/worker/variables.tf': 'variable "timeout" {\n  default = 3\n}\n',
    });

    // Act
    const findings = audit(directory);

    // Assess
    const d2 = finding(findings, 'D2', 'module.worker.aws_sqs_queue.jobs');
    expect(d2?.why).toMatch(/timeout 20 s/);
    expect(d2?.file).toBe(path.join(directory, 'modules', 'worker', 'main.tf'));
    // A remote module is not audited, named once with why (not a verdict per rule: only what the
    // configuration passes it or reads of it could change one).
    expect(findings.filter((f) => f.resource === 'module.sqs')).toEqual([]);
    expect(auditTemplates(readTemplateSource(directory)).notAudited).toEqual([
      'module.sqs: its source is not a local path: the audit reads no registry or remote module (vendor it to audit it)',
    ]);
  });

  it('when alarms, topics and IAM grants are in the configuration, the alarm and grant rules follow them', () => {
    // Prepare: a worker with a DLQ, an age alarm that pages, a DLQ alarm that does not, a send grant on its queue only.
    const directory = path.join(__dirname, 'fixtures', 'terraform-worker');

    // Act
    const { items, findings } = auditTemplates(readTemplateSource(directory));

    // Assess
    const status = (rule: string): string | undefined =>
      items.find((i) => i.ruleId === `Tenang-${rule}`)?.status;
    expect(
      ['D2', 'D3', 'R3', 'O3-QueueAge', 'D4', 'F3-AlarmTopicPublish', 'F5-AlarmSubscriber'].map(status),
    ).toEqual(Array(7).fill('pass'));
    expect(finding(findings, 'O3-DlqDepth', 'aws_sqs_queue.dlq')?.why).toMatch(/has no alarm_actions/);
    expect(finding(findings, 'P1', 'aws_cloudwatch_metric_alarm.dlq')?.status).toBe('fail');
    const f4 = findings.filter((f) => f.ruleId === 'Tenang-F4-QueueSendGrant');
    expect(f4.map((f) => f.why)).toEqual([
      expect.stringMatching(
        /names aws_sqs_queue\.dlq in DLQ_URL: its role aws_iam_role\.worker is not allowed/,
      ),
    ]);
  });

  it('when given one .tf file, it reads that file alone', () => {
    // Prepare
    const directory = configuration({ 'queue.tf': CONSUMER, 'other.tf': 'this is { not hcl' });

    // Act
    const findings = audit(path.join(directory, 'queue.tf'));

    // Assess
    expect(finding(findings, 'D2', 'aws_sqs_queue.jobs')?.status).toBe('fail');
  });

  it('when a file is not HCL, it refuses naming the file', () => {
    // Prepare
    const directory = configuration({ 'main.tf': 'resource "aws_sqs_queue" {{{\n' });

    // Act
    const act = (): unknown => readTemplateSource(directory);

    // Assess
    expect(act).toThrow(/main\.tf is not Terraform HCL/);
  });
});

describe('Function: readTemplateText (Terraform plan JSON)', () => {
  const PLAN = path.join(CORPUS, 'hand-built--sqs-lambda-terraform-python.plan.json');

  it('when a plan value is known only after apply, a reference from the configuration follows it; defaults not written are unset', () => {
    // Act
    const findings = auditTemplates([readTemplateText(fs.readFileSync(PLAN, 'utf8'), PLAN)]).findings;

    // Assess
    expect(
      finding(findings, 'D3', 'aws_lambda_event_source_mapping.sqs_lambda_demo_sourcemapping')?.status,
    ).toBe('fail');
    expect(finding(findings, 'R3', 'aws_sqs_queue.sqs_lambda_demo_queue')?.status).toBe('fail');
    expect(finding(findings, 'D4', 'aws_lambda_function.sqs_lambda_demo_function')?.why).toMatch(
      /no timeout or memory_size/,
    );
  });

  it('when an attribute the configuration writes is known only after apply and names no resource, the rule is not-checkable', () => {
    // Prepare
    const plan = JSON.parse(fs.readFileSync(PLAN, 'utf8')) as {
      resource_changes: { address: string; change: { after_unknown: Record<string, unknown> } }[];
      configuration: {
        root_module: { resources: { address: string; expressions: Record<string, unknown> }[] };
      };
    };
    const queue = 'aws_sqs_queue.sqs_lambda_demo_queue';
    const change = plan.resource_changes.find((c) => c.address === queue);
    if (change !== undefined) change.change.after_unknown.visibility_timeout_seconds = true;
    const config = plan.configuration.root_module.resources.find((r) => r.address === queue);
    if (config !== undefined)
      config.expressions.visibility_timeout_seconds = { references: ['data.external.settings.result'] };

    // Act
    const findings = auditTemplates([readTemplateText(JSON.stringify(plan), 'plan.json')]).findings;

    // Assess
    const d2 = finding(findings, 'D2', queue);
    expect(d2?.status).toBe('not-checkable');
    expect(d2?.why).toMatch(/visibility_timeout_seconds is known only after apply/);
  });
});

describe('Function: runAudit (Terraform on stdin)', () => {
  const context = {
    stage: 'dev',
    region: 'eu-west-1',
    stackName: 'tenang-dev',
    out: () => undefined,
    err: () => undefined,
  } as unknown as CliContext;

  it('when stdin holds HCL, it is read as Terraform and every output format names the Terraform address', () => {
    // Act
    const result = runAudit({ template: '-' }, context, () => CONSUMER);

    // Assess
    expect(result.failed).toBe(true);
    const d2 = result.findings?.find((f) => f.ruleId === 'Tenang-D2');
    expect(d2?.resource).toBe('aws_sqs_queue.jobs');
    expect(d2?.file).toBe('stdin');
    const sarif = JSON.parse(renderSarif(result)) as {
      runs: {
        results: { locations?: { logicalLocations?: { name?: string }[] }[]; message: { text: string } }[];
      }[];
    };
    expect(JSON.stringify(sarif.runs[0]?.results)).toContain('aws_sqs_queue.jobs');
  });
});
