/**
 * Verdicts on synthesized stacks with nested stacks (what `tenang audit cdk.out` reads): a nested
 * stack that only creates a Cognito user changes no verdict when its template is missing, and is
 * audited when it is given; a nested stack passed a queue makes the queue's rules not-checkable
 * for it when missing (a note, not a failure), and judges the mapping it holds when given.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App, NestedStack, Stack } from 'aws-cdk-lib';
import * as cognito from 'aws-cdk-lib/aws-cognito';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { auditFailed } from '../../../lib/audit/checklist';
import { auditTemplates, type TemplateAudit } from '../../../lib/audit/template-audit';
import { readCloudAssembly } from '../../../lib/audit/template-input';

/** Synthesizes an app with one stack and returns its assembly's directory. */
function synth(build: (stack: Stack) => void): string {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-nested-verdicts-'));
  const app = new App({ outdir });
  build(new Stack(app, 'Parent', { env: { account: '123456789012', region: 'eu-west-1' } }));
  app.synth();
  return outdir;
}

/** The parent stack alone: the nested templates left out, as when only the parent template is audited. */
function parentOnly(outdir: string): TemplateAudit {
  const [parent] = readCloudAssembly(outdir);
  if (parent === undefined) throw new Error('no stack synthesized');
  return auditTemplates([parent]);
}

function status(result: TemplateAudit, ruleId: string): string | undefined {
  return result.items.find((i) => i.ruleId === ruleId)?.status;
}

describe('Verdicts on synthesized stacks with nested stacks', () => {
  it('when a nested stack only creates a Cognito user, its missing template leaves every rule decided or not-applicable', () => {
    // Prepare
    const outdir = synth((stack) => {
      const users = new NestedStack(stack, 'Users');
      const pool = new cognito.UserPool(users, 'Pool');
      new cognito.CfnUserPoolUser(users, 'Admin', { userPoolId: pool.userPoolId, username: 'admin' });
    });

    // Act
    const alone = parentOnly(outdir);
    const whole = auditTemplates(readCloudAssembly(outdir));

    // Assess
    expect(alone.items.filter((i) => i.status === 'not-checkable').map((i) => i.ruleId)).toEqual([]);
    expect(status(alone, 'Tenang-D2')).toBe('not-applicable');
    expect(alone.notAudited).toHaveLength(1);
    expect(whole.notAudited).toEqual([]);
    expect(whole.items.filter((i) => i.status === 'not-checkable').map((i) => i.ruleId)).toEqual([]);
  });

  it('when a nested stack is passed a queue and consumes it, its missing template makes the queue rules notes; given, its mapping is judged', () => {
    // Prepare
    const outdir = synth((stack) => {
      const jobs = new sqs.Queue(stack, 'Jobs');
      const workers = new NestedStack(stack, 'Workers');
      const fn = new lambda.Function(workers, 'Worker', {
        runtime: lambda.Runtime.NODEJS_22_X,
        handler: 'index.handler',
        code: lambda.Code.fromInline('exports.handler = async () => ({ batchItemFailures: [] });'),
      });
      new lambda.EventSourceMapping(workers, 'Mapping', { target: fn, eventSourceArn: jobs.queueArn });
    });

    // Act
    const alone = parentOnly(outdir);
    const whole = auditTemplates(readCloudAssembly(outdir));

    // Assess: alone, the queue may be consumed where the audit cannot see: not-checkable, a note.
    const d2 = alone.items.find((i) => i.ruleId === 'Tenang-D2');
    expect(d2).toMatchObject({ status: 'not-checkable', level: 'note', ruleLevel: 'error' });
    expect(d2?.why).toContain('it is passed to nested stack');
    expect(auditFailed(alone.items)).toBe(false);
    // Given, the nested mapping is judged: it reports no batch item failures.
    expect(status(whole, 'Tenang-D3')).toBe('fail');
    expect(whole.notAudited).toEqual([]);
  });
});
