import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { Command } from 'commander';
import { drillsOfAppAt } from '../../../lib/drills/app-drills';
import { auditCommand } from '../../../lib/ops/commands/audit';
import { CommandFailedError, UsageError, type CliContext } from '../../../lib/ops/cli-context';
import { REGION, referenceConfig, testStack } from '../helpers';
import { workerQueueStack } from './bad-stacks';

/** A CLI context that records output; the audit uses no AWS client. */
function fakeContext(): { ctx: CliContext; out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  const ctx = {
    stage: 'dev',
    region: REGION,
    config: referenceConfig(),
    stackName: 'tenang-dev',
    get clients(): never {
      throw new Error('the audit must not call AWS');
    },
    out: (t: string) => out.push(t),
    err: (t: string) => err.push(t),
    now: () => new Date('2026-01-01T00:00:00Z'),
    actor: 'test',
  } satisfies CliContext;
  return { ctx, out, err };
}

/** Runs `tenang audit …args` through commander, registered as bin/tenang.ts does (the app's drills). */
async function audit(ctx: CliContext, ...args: string[]): Promise<void> {
  const program = new Command().exitOverride();
  auditCommand(drillsOfAppAt)(program, () => ctx);
  await program.parseAsync(['node', 'tenang', 'audit', ...args]);
}

function templateFile(flaws: Parameters<typeof workerQueueStack>[1]): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-audit-test-')), 'template.json');
  fs.writeFileSync(file, JSON.stringify(Template.fromStack(workerQueueStack(testStack(), flaws)).toJSON()));
  return file;
}

describe('Command: audit', () => {
  it('when run without --template, it synthesizes this app and every rule passes', async () => {
    // Prepare
    const { ctx, out } = fakeContext();

    // Act
    await audit(ctx);

    // Assess
    const text = out.join('\n');
    expect(text).toContain('Audit of synthesized tenang-dev');
    expect(text).toMatch(/Tenang-D2\s+D2\s+pass/);
    expect(text).toMatch(/Tenang-P3-Owner\s+P3\s+pass/);
    expect(text).not.toMatch(/\sfail\s/);
  }, 60_000);

  it('when a template breaks a rule, it prints the checklist and fails naming the rule', async () => {
    // Prepare
    const { ctx, out } = fakeContext();
    const file = templateFile({ reportBatchItemFailures: false });

    // Act
    const run = audit(ctx, '--template', file);

    // Assess
    await expect(run).rejects.toThrow(CommandFailedError);
    await expect(run).rejects.toThrow('audit failed: Tenang-D3');
    expect(out.join('\n')).toMatch(/Tenang-D3\s+D3\s+fail\s+.*does not report batch item failures/);
  });

  it('when --json is given, it prints the checklist as JSON', async () => {
    // Prepare
    const { ctx, out } = fakeContext();
    const file = templateFile({});

    // Act
    await audit(ctx, '--template', file, '--json');

    // Assess
    const result = JSON.parse(out.join('\n')) as {
      failed: boolean;
      items: { ruleId: string; status: string }[];
    };
    expect(result.failed).toBe(false);
    expect(result.items.map((i) => i.status)).not.toContain('fail');
    expect(result.items.map((i) => i.ruleId)).toContain('Tenang-R6');
  });

  it('when the template file does not exist, it is a usage error', async () => {
    // Prepare
    const { ctx } = fakeContext();

    // Act
    const run = audit(ctx, '--template', path.join(os.tmpdir(), 'no-such-template.json'));

    // Assess
    await expect(run).rejects.toThrow(UsageError);
  });
});
