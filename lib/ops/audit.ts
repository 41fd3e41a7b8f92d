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
import type { PipelineConfig, PipelineInput } from '../config';
import { buildApp } from '../infra/app';
import { auditFailed, type AuditFinding, type ChecklistItem } from '../infra/audit/checklist';
import { auditPipelineConfig } from '../infra/audit/config-audit';
import { auditLive } from '../infra/audit/live-audit';
import { LiveStackNotFoundError, readLiveStack } from '../infra/audit/live-reader';
import type { QueueObjective } from '../infra/audit/rules';
import { auditTemplates, type StackTemplate } from '../infra/audit/template-audit';
import { readTemplateSource, readTemplateText } from '../infra/audit/template-input';
import { TemplateFormatError } from '../infra/audit/template-text';
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
  /** The template rules' failing and not-checkable findings, each with its stack, file and line. */
  readonly findings?: readonly AuditFinding[];
}

/** What `-` stands for: the template's text on stdin (`cdk synth | tenang audit -`). */
export const STDIN_SOURCE = '-';

/** Reads the audit's input: a template file, a cdk.out directory, or stdin; refusals are usage errors. */
export function readAuditInput(source: string, readStdin: () => string): StackTemplate[] {
  try {
    if (source === STDIN_SOURCE) return [readTemplateText(readStdin(), 'stdin')];
    if (!fs.existsSync(source)) throw new UsageError(`no template at ${source}`);
    return readTemplateSource(source);
  } catch (error) {
    if (error instanceof TemplateFormatError) throw new UsageError(error.message);
    throw error;
  }
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
  // The audit reads the template, not the code, and skips bundling: the declaration's handler
  // modules only have to exist, so empty stand-ins do, wherever the audit runs. They go under the
  // working directory (git-ignored .tenang/), since NodejsFunction wants entries inside the
  // project it finds from there.
  fs.mkdirSync(path.join(process.cwd(), '.tenang'), { recursive: true });
  const appDir = fs.mkdtempSync(path.join(process.cwd(), '.tenang', 'audit-entries-'));
  try {
    for (const { entry } of [...pipeline.jobTypes, ...pipeline.streamConsumers]) {
      if (entry === undefined) continue;
      const file = path.resolve(appDir, entry);
      // Never write outside the stand-in directory (an entry such as ../x.ts).
      if (path.relative(appDir, file).startsWith('..')) {
        throw new UsageError(`the declaration's entry ${entry} leaves the app's directory`);
      }
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, 'export {};\n');
    }
    const app = new App({ outdir, context: { [STAGE_CONTEXT_KEY]: stage, 'aws:cdk:bundling-stacks': [] } });
    const { stack } = buildApp(app, () => pipeline, region, { appDir });
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
    fs.rmSync(appDir, { recursive: true, force: true });
  }
}

/** Each job type's queue with its latency objective: what the threshold rule (O3) judges alarms against. */
export function queueObjectives(config: PipelineConfig): QueueObjective[] {
  return config.jobTypes.map((j) => ({
    queueName: j.queueName,
    jobType: j.name,
    latencyObjectiveSeconds: j.latencyObjectiveSeconds,
  }));
}

/**
 * The whole of stdin. Read as a stream: a synchronous read of a pipe fails with EAGAIN when the
 * pipe is non-blocking (as under tsx).
 */
export async function readStdinText(stream: NodeJS.ReadableStream = process.stdin): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Runs the audit: a given template (file, cdk.out or stdin) alone, or the project's synthesized
 * template plus its config. `readStdin` gives stdin's text (read before, see readStdinText).
 */
export function runAudit(
  options: AuditOptions,
  ctx: CliContext,
  readStdin: () => string = () => {
    throw new UsageError('stdin was not read: pass its text to runAudit');
  },
): AuditResult {
  if (options.template !== undefined) {
    const stacks = readAuditInput(options.template, readStdin);
    let audit: ReturnType<typeof auditTemplates>;
    try {
      audit = auditTemplates(stacks);
    } catch (error) {
      if (error instanceof TemplateFormatError)
        throw new UsageError(
          `${options.template === STDIN_SOURCE ? 'stdin' : options.template}: ${error.message}`,
        );
      throw error;
    }
    const source =
      stacks.length > 1
        ? `${options.template} (${stacks.length} stacks: ${stacks.map((s) => s.name).join(', ')})`
        : options.template === STDIN_SOURCE
          ? 'stdin'
          : options.template;
    return { source, items: audit.items, failed: auditFailed(audit.items), findings: audit.findings };
  }
  const { stackName, template } = synthesizeProjectTemplate(
    ctx.config.declaration,
    ctx.stage,
    ctx.region,
    ctx.err,
  );
  const audit = auditTemplates([{ name: stackName, template }], { objectives: queueObjectives(ctx.config) });
  const items = [...audit.items, ...auditPipelineConfig(ctx.config, { drills: DRILL_CATALOG })];
  return { source: `synthesized ${stackName}`, items, failed: auditFailed(items), findings: audit.findings };
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
