/**
 * What `tenang audit` does (lib/ops/commands/audit.ts is its command): synthesizes this project's
 * app and audits the template plus the pipeline config, audits a given template, or audits the
 * deployed stack through the AWS APIs (lib/infra/audit/live-audit.ts). Loads aws-cdk-lib and the
 * nag packs: the command imports it only when it runs.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import type { PipelineInput } from '../config';
import { buildApp } from '../infra/app';
import { auditFailed, type ChecklistItem } from '../infra/audit/checklist';
import { auditPipelineConfig } from '../infra/audit/config-audit';
import { auditLive } from '../infra/audit/live-audit';
import { LiveStackNotFoundError, readLiveStack } from '../infra/audit/live-reader';
import { auditTemplate } from '../infra/audit/template-audit';
import { STAGE_CONTEXT_KEY } from '../infra/target';
import { CommandFailedError, UsageError, type CliContext } from './cli-context';
import type { AuditOptions } from './commands/audit';
import { DRILL_CATALOG } from './drills/catalog';

/** What an audit run found. */
export interface AuditResult {
  /** The template file audited, `synthesized <stack>` or `live stack <stack> (<region>)`. */
  readonly source: string;
  readonly items: readonly ChecklistItem[];
  readonly failed: boolean;
}

/**
 * Synthesizes the project's app for a stage without bundling (the audit reads templates, not
 * code) and returns its template. A validation failure (a nag pack finding) still leaves the
 * template on disk: it is audited anyway, and the failure is reported on stderr.
 */
export function synthesizeProjectTemplate(
  pipeline: PipelineInput,
  stage: string,
  region: string,
  warn: (text: string) => void,
): { stackName: string; template: unknown } {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-audit-'));
  try {
    const app = new App({ outdir, context: { [STAGE_CONTEXT_KEY]: stage, 'aws:cdk:bundling-stacks': [] } });
    const { stack } = buildApp(app, () => pipeline, region);
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
  const { stackName, template } = synthesizeProjectTemplate(
    ctx.config.declaration,
    ctx.stage,
    ctx.region,
    ctx.err,
  );
  const items = [...auditTemplate(template), ...auditPipelineConfig(ctx.config, { drills: DRILL_CATALOG })];
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
  const items = [...auditLive(answers), ...auditPipelineConfig(ctx.config, { drills: DRILL_CATALOG })];
  return { source: `live stack ${ctx.stackName} (${ctx.region})`, items, failed: auditFailed(items) };
}
