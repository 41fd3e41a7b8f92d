/**
 * Verdicts a user can act on: a not-checkable verdict is a note (text, JSON, SARIF) and never
 * fails the audit; a rule with nothing of its kind is not-applicable, a nested stack not given
 * changes only the rules whose subjects it is passed; one verdict per rule and resource; what a
 * SAM event decides by itself is decided; and an input of another format says what it is.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { auditFailed, type ChecklistItem } from '../../../lib/audit/checklist';
import { auditTemplates, type TemplateAudit } from '../../../lib/audit/template-audit';
import { readTemplateSource, readTemplateText } from '../../../lib/audit/template-input';
import { TemplateFormatError } from '../../../lib/audit/template-text';
import { describeUnsupported } from '../../../lib/audit/unsupported-input';
import type { AuditResult } from '../../../lib/ops/audit';
import { renderMarkdown, renderSarif } from '../../../lib/ops/audit-report';
import { notAuditedText, renderChecklist } from '../../../lib/ops/commands/audit';

function audit(template: Record<string, unknown> | string): TemplateAudit {
  const stack =
    typeof template === 'string'
      ? readTemplateText(template, 'template.yaml')
      : { name: 'template', template };
  return auditTemplates([stack]);
}

function item(result: TemplateAudit, ruleId: string): ChecklistItem {
  const found = result.items.find((i) => i.ruleId === ruleId);
  if (found === undefined) throw new Error(`no checklist item ${ruleId}`);
  return found;
}

function tmpDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-verdicts-'));
}

/** A queue the template consumes through a mapping whose queue is imported from a stack not given. */
const IMPORTED_QUEUE = {
  Resources: {
    Worker: { Type: 'AWS::Lambda::Function', Properties: { Timeout: 10, MemorySize: 256 } },
    Mapping: {
      Type: 'AWS::Lambda::EventSourceMapping',
      Properties: {
        EventSourceArn: { 'Fn::ImportValue': 'shared-jobs-arn' },
        FunctionName: { Ref: 'Worker' },
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      },
    },
  },
};

/** A SAM worker whose SQS event reads a queue given at deploy time (a parameter without a default). */
const SAM_QUEUE_PARAMETER = `
Transform: AWS::Serverless-2016-10-31
Parameters:
  QueueArn:
    Type: String
Resources:
  Worker:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: nodejs22.x
      Handler: index.handler
      InlineCode: "exports.handler = async () => ({})"
      Timeout: 10
      Events:
        Jobs:
          Type: SQS
          Properties:
            Queue: !Ref QueueArn
`;

describe('Verdict levels: not-checkable is a note', () => {
  it('when a rule is not-checkable, its item and findings are notes, the rule keeps its level, and the audit does not fail', () => {
    // Act
    const result = audit(IMPORTED_QUEUE);

    // Assess
    const d2 = item(result, 'Tenang-D2');
    expect(d2).toMatchObject({ status: 'not-checkable', level: 'note', ruleLevel: 'error' });
    const notes = result.findings.filter((f) => f.status === 'not-checkable');
    expect(notes.length).toBeGreaterThan(0);
    expect(notes.every((f) => f.level === 'note')).toBe(true);
    expect(result.items.filter((i) => i.status === 'not-checkable').every((i) => i.level === 'note')).toBe(
      true,
    );
    expect(auditFailed(result.items)).toBe(false);
  });

  it('when the result is printed, text, JSON and SARIF say note for what is not checkable and error for a failure', () => {
    // Prepare
    const result = audit(IMPORTED_QUEUE);
    const printed: AuditResult = {
      source: 'template.yaml',
      items: result.items,
      failed: auditFailed(result.items),
      findings: result.findings,
    };

    // Act
    const text = renderChecklist(printed.items);
    const json = JSON.parse(JSON.stringify(printed)) as AuditResult;
    const sarif = JSON.parse(renderSarif(printed)) as {
      runs: {
        tool: { driver: { rules: { id: string; defaultConfiguration: { level: string } }[] } };
        results: { ruleId: string; level: string }[];
      }[];
    };

    // Assess
    expect(text.split('\n')[0]).toMatch(/rule\s+feature\s+status\s+level\s+why/);
    expect(text).toMatch(/Tenang-D2\s+D2\s+not-checkable\s+note\s/);
    expect(json.items.find((i) => i.ruleId === 'Tenang-D2')?.level).toBe('note');
    const [run] = sarif.runs;
    expect(run?.results.filter((r) => r.level === 'error')).toEqual([]);
    expect(run?.results.find((r) => r.ruleId === 'Tenang-D2')?.level).toBe('note');
    // The rule's own configuration stays what a failure of it would be.
    expect(run?.tool.driver.rules.find((r) => r.id === 'Tenang-D2')?.defaultConfiguration.level).toBe(
      'error',
    );
  });

  it('when a rule fails, its failing findings keep the rule’s level', () => {
    // Act
    const result = audit(SAM_QUEUE_PARAMETER);

    // Assess
    expect(item(result, 'Tenang-D3')).toMatchObject({ status: 'fail', level: 'error' });
    expect(result.findings.find((f) => f.ruleId === 'Tenang-D3')).toMatchObject({
      status: 'fail',
      level: 'error',
    });
    expect(auditFailed(result.items)).toBe(true);
  });
});

describe('not-applicable and nested stacks', () => {
  /** A template with no queue, no alarm and no mapping: a function and a nested stack creating a Cognito user. */
  function cognitoNested(parameters?: Record<string, unknown>): Record<string, unknown> {
    return {
      Resources: {
        Api: { Type: 'AWS::Lambda::Function', Properties: { Timeout: 10, MemorySize: 256 } },
        Users: {
          Type: 'AWS::CloudFormation::Stack',
          Properties: {
            TemplateURL: 'https://example.com/cognito-user.yaml',
            ...(parameters === undefined ? {} : { Parameters: parameters }),
          },
        },
      },
    };
  }

  it('when a template has no queue and no alarm, the queue and alarm rules are not-applicable, not not-checkable, despite a nested stack not given', () => {
    // Act
    const result = audit(cognitoNested({ UserName: 'admin' }));

    // Assess
    expect(result.items.filter((i) => i.status === 'not-checkable')).toEqual([]);
    for (const rule of [
      'Tenang-D2',
      'Tenang-D3',
      'Tenang-R3',
      'Tenang-R6',
      'Tenang-O3-QueueAge',
      'Tenang-P1',
    ])
      expect(item(result, rule).status).toBe('not-applicable');
    expect(result.findings).toEqual([]);
    // What the nested stack itself holds is said once, not per rule.
    expect(result.notAudited).toEqual([
      'nested stack Users: its template was not given (audit the whole cdk.out, or the nested template with this one)',
    ]);
    expect(notAuditedText(result.notAudited)).toContain('Not audited: nested stack Users');
  });

  it('when a SAM application (a nested stack) is not given, it changes no rule it is passed nothing for', () => {
    // Act
    const result = audit(`
Transform: AWS::Serverless-2016-10-31
Resources:
  Users:
    Type: AWS::Serverless::Application
    Properties:
      Location:
        ApplicationId: arn:aws:serverlessrepo:us-east-1:123456789012:applications/cognito-user
        SemanticVersion: 1.0.0
      Parameters:
        UserName: admin
`);

    // Assess
    expect(result.items.filter((i) => i.status === 'not-checkable')).toEqual([]);
    expect(result.notAudited).toEqual([
      'nested stack Users: its template was not given (audit the whole cdk.out, or the nested template with this one)',
    ]);
  });

  it('when the parent passes a queue to a nested stack not given, the rules about that queue are not-checkable for it', () => {
    // Prepare
    const template = {
      Resources: {
        Jobs: { Type: 'AWS::SQS::Queue', Properties: {} },
        Workers: {
          Type: 'AWS::CloudFormation::Stack',
          Properties: {
            TemplateURL: 'https://example.com/workers.yaml',
            Parameters: { JobsArn: { 'Fn::GetAtt': ['Jobs', 'Arn'] } },
          },
        },
      },
    };

    // Act
    const result = audit(template);

    // Assess: the nested stack may consume the queue; it holds no mapping the parent can see.
    expect(item(result, 'Tenang-D2')).toMatchObject({ status: 'not-checkable', resources: ['Jobs'] });
    expect(item(result, 'Tenang-D2').why).toContain('Jobs: it is passed to nested stack Workers');
    // A rule about mappings alone (D3) is passed no mapping: not-applicable.
    expect(item(result, 'Tenang-D3').status).toBe('not-applicable');
  });
});

describe('One verdict per rule and resource, decided where the input decides it', () => {
  it('when a stream mapping fails R6 and its destination is an unresolved import, R6 says fail once, not also not-checkable', () => {
    // Prepare
    const template = {
      Resources: {
        Table: {
          Type: 'AWS::DynamoDB::Table',
          Properties: { StreamSpecification: { StreamViewType: 'NEW_IMAGE' } },
        },
        Worker: { Type: 'AWS::Lambda::Function', Properties: { Timeout: 10, MemorySize: 256 } },
        Mapping: {
          Type: 'AWS::Lambda::EventSourceMapping',
          Properties: {
            EventSourceArn: { 'Fn::GetAtt': ['Table', 'StreamArn'] },
            FunctionName: { Ref: 'Worker' },
            FunctionResponseTypes: ['ReportBatchItemFailures'],
            DestinationConfig: { OnFailure: { Destination: { 'Fn::ImportValue': 'shared-dlq-arn' } } },
          },
        },
      },
    };

    // Act
    const result = audit(template);

    // Assess
    const r6 = result.findings.filter((f) => f.ruleId === 'Tenang-R6' && f.resource === 'Mapping');
    expect(r6.map((f) => f.status)).toEqual(['fail']);
  });

  it('when an SQS event’s queue is imported, the stream rule R6 says nothing of it', () => {
    // Act
    const result = audit(`
Transform: AWS::Serverless-2016-10-31
Resources:
  Worker:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: nodejs22.x
      Handler: index.handler
      InlineCode: "exports.handler = async () => ({})"
      Timeout: 10
      MemorySize: 256
      Events:
        Jobs:
          Type: SQS
          Properties:
            Queue: !ImportValue shared-jobs-arn
            FunctionResponseTypes: [ReportBatchItemFailures]
`);

    // Assess
    expect(item(result, 'Tenang-R6').status).toBe('not-applicable');
    expect(result.findings.filter((f) => f.ruleId === 'Tenang-R6')).toEqual([]);
    // D2 and R3 need the queue itself: those are not checkable.
    expect(item(result, 'Tenang-D2').status).toBe('not-checkable');
  });

  it('when an SQS event’s queue is a parameter without a default, D3 still fails the event lacking FunctionResponseTypes, and R6 ignores it', () => {
    // Act
    const result = audit(SAM_QUEUE_PARAMETER);

    // Assess
    expect(item(result, 'Tenang-D3')).toMatchObject({ status: 'fail', resources: ['Worker (event Jobs)'] });
    expect(item(result, 'Tenang-D3').why).toContain('(SQS): does not report batch item failures');
    expect(item(result, 'Tenang-R6').status).toBe('not-applicable');
    expect(item(result, 'Tenang-R3')).toMatchObject({ status: 'not-checkable' });
    expect(item(result, 'Tenang-R3').why).toContain('parameter QueueArn has no Default');
  });

  it('when a consumer sets its Timeout but not its MemorySize, D4 says what is missing without timeout advice', () => {
    // Act
    const result = audit({
      Resources: {
        Jobs: { Type: 'AWS::SQS::Queue', Properties: {} },
        Worker: { Type: 'AWS::Lambda::Function', Properties: { Timeout: 4 } },
        Mapping: {
          Type: 'AWS::Lambda::EventSourceMapping',
          Properties: { EventSourceArn: { 'Fn::GetAtt': ['Jobs', 'Arn'] }, FunctionName: { Ref: 'Worker' } },
        },
      },
    });

    // Assess
    const d4 = item(result, 'Tenang-D4');
    expect(d4.status).toBe('fail');
    expect(d4.why).toBe("Worker: no MemorySize: set MemorySize (MB) instead of Lambda's 128 MB default");
  });
});

describe('Function: describeUnsupported (an input of another format)', () => {
  const cases: [string, string, RegExp][] = [
    [
      'deployment.yaml',
      'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: worker\n---\napiVersion: v1\nkind: Service\n',
      /looks like a Kubernetes manifest \(kind Deployment\)/,
    ],
    ['compose.yaml', 'services:\n  worker:\n    image: worker:1\n', /looks like a Docker Compose file/],
    [
      'ci.yml',
      'on:\n  push:\njobs:\n  audit:\n    runs-on: ubuntu-latest\n',
      /looks like a GitHub Actions workflow.*npx tenang audit <template or cdk\.out> --format sarif/,
    ],
    [
      'package.json',
      '{"name": "app", "version": "1.0.0", "dependencies": {}}',
      /looks like a Node\.js package manifest.*npx cdk synth/,
    ],
    [
      'api.yaml',
      'openapi: 3.0.3\ninfo:\n  title: x\n  version: "1"\npaths: {}\n',
      /looks like an OpenAPI document/,
    ],
    [
      'Pulumi.yaml',
      'name: app\nruntime: yaml\nresources:\n  jobs:\n    type: aws:sqs:Queue\n',
      /looks like a Pulumi project/,
    ],
    [
      'azuredeploy.json',
      '{"$schema": "https://schema.management.azure.com/schemas/2019-04-01/deploymentTemplate.json#", "resources": []}',
      /looks like an Azure Resource Manager template/,
    ],
    [
      'terraform.tfstate',
      '{"version": 4, "terraform_version": "1.9.0", "serial": 3, "resources": []}',
      /looks like a Terraform state file/,
    ],
  ];

  it.each(cases)(
    'when %s is audited, it says what the file looks like and what to run instead',
    (name, text, message) => {
      // Prepare
      const file = path.join(tmpDir(), name);
      fs.writeFileSync(file, text);

      // Act
      const read = (): unknown => readTemplateSource(file);

      // Assess
      expect(read).toThrow(TemplateFormatError);
      expect(read).toThrow(message);
    },
  );

  it('when a CDK app directory has no cdk.out, it says to synthesize it and audit cdk.out', () => {
    // Prepare
    const dir = tmpDir();
    fs.writeFileSync(path.join(dir, 'cdk.json'), '{"app": "npx tsx bin/app.ts"}');

    // Act
    const read = (): unknown => readTemplateSource(dir);

    // Assess
    expect(read).toThrow(/is a CDK app without a synthesized assembly \(no cdk\.out\): run `npx cdk synth`/);
    expect(read).toThrow(`tenang audit ${path.join(dir, 'cdk.out')}`);
  });

  it('when a document is a CloudFormation template, or like nothing known, it describes nothing', () => {
    // Assess
    expect(describeUnsupported({ Resources: {} })).toBeUndefined();
    expect(describeUnsupported({ Metadata: {} })).toBeUndefined();
    expect(describeUnsupported('text')).toBeUndefined();
  });

  it('when the markdown report has nested stacks not audited, it names them', () => {
    // Act
    const markdown = renderMarkdown({
      source: 't.yaml',
      items: [],
      failed: false,
      notAudited: ['nested stack Users: its template was not given'],
    });

    // Assess
    expect(markdown).toContain('Not audited: nested stack Users: its template was not given');
  });
});
