/**
 * `tenang audit [--template path | --live] [--json]`: the pre-automation checklist (P4). Without
 * --template it synthesizes this project's app for the context's stage and audits that template
 * plus the pipeline config; with --template it audits any CloudFormation template; with --live
 * it audits the stage's DEPLOYED stack through the AWS APIs (the same rules, see
 * lib/infra/audit/live-audit.ts) plus the pipeline config. Exits 1 (CommandFailedError) when an
 * error-level rule fails.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import type { Command } from 'commander';
import * as z from '../../config/zod';
import { buildApp } from '../../infra/app';
import { auditFailed, type ChecklistItem } from '../../infra/audit/checklist';
import { auditPipelineConfig } from '../../infra/audit/config-audit';
import { auditLive } from '../../infra/audit/live-audit';
import { LiveStackNotFoundError, readLiveStack } from '../../infra/audit/live-reader';
import { auditTemplate } from '../../infra/audit/template-audit';
import { STAGE_CONTEXT_KEY } from '../../infra/target';
import { CommandFailedError, UsageError, type CliContext, type RegisterCommand } from '../cli-context';
import { renderTable } from '../table';

const AuditOptionsSchema = z.object({
  template: z.optional(z.string().check(z.minLength(1, '--template needs a file path'))),
  live: z.optional(z.boolean()),
  json: z.optional(z.boolean()),
});
/** Parsed options of `tenang audit`. */
export type AuditOptions = z.infer<typeof AuditOptionsSchema>;

/** What an audit run found. */
export interface AuditResult {
  /** The template file audited, `synthesized <stack>` or `live stack <stack> (<region>)`. */
  readonly source: string;
  readonly items: readonly ChecklistItem[];
  readonly failed: boolean;
}

/** Parses raw commander options, or throws UsageError naming every problem. */
export function parseAuditOptions(raw: unknown): AuditOptions {
  const parsed = AuditOptionsSchema.safeParse(raw);
  if (!parsed.success) throw new UsageError(parsed.error.issues.map((i) => i.message).join('; '));
  if (parsed.data.live === true && parsed.data.template !== undefined)
    throw new UsageError('--live audits the deployed stack: it cannot be combined with --template');
  return parsed.data;
}

/**
 * Synthesizes the project's app for a stage without bundling (the audit reads templates, not
 * code) and returns its template. A validation failure (a nag pack finding) still leaves the
 * template on disk: it is audited anyway, and the failure is reported on stderr.
 */
export function synthesizeProjectTemplate(
  stage: string,
  region: string,
  warn: (text: string) => void,
): { stackName: string; template: unknown } {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-audit-'));
  try {
    const app = new App({ outdir, context: { [STAGE_CONTEXT_KEY]: stage, 'aws:cdk:bundling-stacks': [] } });
    const { stack } = buildApp(app, region);
    const file = path.join(outdir, stack.templateFile);
    try {
      app.synth();
    } catch (error) {
      if (!fs.existsSync(file)) throw error;
      warn(`synthesis reported findings: ${error instanceof Error ? error.message : String(error)}`);
    }
    return { stackName: stack.stackName, template: JSON.parse(fs.readFileSync(file, 'utf8')) as unknown };
  } finally {
    fs.rmSync(outdir, { recursive: true, force: true });
  }
}

/** Runs the audit: a given template alone, or the project's synthesized template plus its config. */
export function runAudit(options: AuditOptions, ctx: CliContext): AuditResult {
  if (options.template !== undefined) {
    if (!fs.existsSync(options.template)) throw new UsageError(`no template at ${options.template}`);
    let template: unknown;
    try {
      template = JSON.parse(fs.readFileSync(options.template, 'utf8'));
    } catch (error) {
      throw new UsageError(
        `${options.template} is not JSON: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    const items = auditTemplate(template);
    return { source: options.template, items, failed: auditFailed(items) };
  }
  const { stackName, template } = synthesizeProjectTemplate(ctx.stage, ctx.region, ctx.err);
  const items = [...auditTemplate(template), ...auditPipelineConfig(ctx.config)];
  return { source: `synthesized ${stackName}`, items, failed: auditFailed(items) };
}

/** Audits the stage's deployed stack through the AWS APIs, plus the pipeline config it was deployed from. */
export async function runLiveAudit(ctx: CliContext): Promise<AuditResult> {
  const answers = await readLiveStack(ctx.clients, ctx.stackName, (line) =>
    ctx.err(`audit --live: ${line}`),
  ).catch((error: unknown) => {
    // CommandFailedError takes no cause: the missing stack is the whole story.
    if (error instanceof LiveStackNotFoundError)
      throw new CommandFailedError(`${error.message}: is stage "${ctx.stage}" deployed?`);
    throw error;
  });
  const items = [...auditLive(answers), ...auditPipelineConfig(ctx.config)];
  return { source: `live stack ${ctx.stackName} (${ctx.region})`, items, failed: auditFailed(items) };
}

/** The human checklist: one row per rule; a passing rule shows how many resources it checked. */
export function renderChecklist(items: readonly ChecklistItem[]): string {
  return renderTable(
    ['rule', 'feature', 'status', 'why'],
    items.map((i) => ({
      rule: i.ruleId,
      feature: i.featureId,
      status: i.status === 'fail' && i.level === 'warning' ? 'warn' : i.status,
      why: i.status === 'pass' ? `${i.resources.length} checked` : i.why,
    })),
  );
}

/** Registers `tenang audit`. */
export const register: RegisterCommand = (program, context) => {
  program
    .command('audit')
    .description(
      'audit the pipeline (synthesized, deployed with --live, or any CloudFormation template) against the worker-queue checklist',
    )
    .option('--template <path>', 'a synthesized CloudFormation template (JSON) to audit instead of this app')
    .option('--live', "audit the stage's deployed stack through the AWS APIs instead of a template")
    .option('--json', 'print the checklist as JSON')
    .action(async (_raw: unknown, cmd: Command) => {
      // With globals: `tenang audit --json` hands --json to the program's own option.
      const options = parseAuditOptions(cmd.optsWithGlobals());
      const ctx = context();
      const result = options.live === true ? await runLiveAudit(ctx) : runAudit(options, ctx);
      ctx.out(
        options.json === true
          ? JSON.stringify(result, null, 2)
          : `Audit of ${result.source}\n${renderChecklist(result.items)}`,
      );
      if (result.failed) {
        const failing = result.items
          .filter((i) => i.status === 'fail' && i.level === 'error')
          .map((i) => i.ruleId);
        throw new CommandFailedError(`audit failed: ${failing.join(', ')}`);
      }
    });
};
