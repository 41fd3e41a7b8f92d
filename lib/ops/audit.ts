/**
 * What `tenang audit` does (lib/ops/commands/audit.ts is its command): in a CDK app's directory
 * synthesizes the app offline and audits its assembly; audits a given template; or audits the
 * deployed stack through the AWS APIs (lib/audit/live-audit.ts). Wherever a template carries
 * the declaration it was built from (`tenang:pipeline` metadata), the audit judges it with that
 * declaration too: the latency objectives (O3) and the config rules (owners, runbooks, drills,
 * idempotent critical work). Loads aws-cdk-lib and the nag packs: the command imports it only
 * when it runs.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App } from 'aws-cdk-lib';
import {
  PIPELINE_METADATA_KEY,
  pipelineFromTemplate,
  type PipelineConfig,
  type PipelineInput,
} from '../config';
import { buildApp } from '../infra/app';
import { auditFailed, type AuditFinding, type ChecklistItem } from '../audit/checklist';
import { auditPipelineConfig, type AuditedDrill } from '../audit/config-audit';
import { auditLive } from '../audit/live-audit';
import { LiveStackNotFoundError, readLiveStack } from '../audit/live-reader';
import type { QueueObjective } from '../audit/rules';
import { auditTemplates, type StackTemplate } from '../audit/template-audit';
import { readTemplateSource, readTemplateText } from '../audit/template-input';
import { TemplateFormatError } from '../audit/template-text';
import { STAGE_CONTEXT_KEY } from '../infra/target';
import { appDirectory, CDK_PROJECT_FILE } from './app-directory';
import { CommandFailedError, UsageError, type CliContext } from './cli-context';
import type { AuditOptions } from './commands/audit';
import { DRILL_CATALOG, type AppDrills } from './drills/catalog';

/** What an audit run found. */
export interface AuditResult {
  /** The template file audited, `synthesized <stack>` or `live stack <stack> (<region>)`. */
  readonly source: string;
  readonly items: readonly ChecklistItem[];
  readonly failed: boolean;
  /** The template rules' failing and not-checkable findings, each with its stack, file and line. */
  readonly findings?: readonly AuditFinding[];
  /** Nested stacks whose template the input did not hold: their own resources were not audited. */
  readonly notAudited?: readonly string[];
}

/** tenang's drills alone: for an audit or runbooks handed no app's. */
export const KIT_DRILLS: AppDrills = () => DRILL_CATALOG;

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

/** A stack's declaration, read back from its template's `tenang:pipeline` metadata. */
export interface DeclaredStack {
  readonly stack: string;
  readonly config: PipelineConfig;
}

/**
 * The declarations the stacks carry (`tenang:pipeline`, written by the PipelineStack), each loaded
 * as the stack was built (its own stage and region).
 * @throws PipelineConfigError when a stack's declaration is not valid
 */
export function declaredStacks(stacks: readonly StackTemplate[]): DeclaredStack[] {
  return stacks.flatMap((s) => {
    const template = s.template as { Metadata?: Record<string, unknown> } | null;
    if (
      typeof template !== 'object' ||
      template === null ||
      template.Metadata?.[PIPELINE_METADATA_KEY] === undefined
    )
      return [];
    return [{ stack: s.name, config: pipelineFromTemplate(template, `stack ${s.name}`) }];
  });
}

/**
 * The config rules over several declarations (an assembly with more than one tenang stack): one
 * item per rule, failing where any stack's fails, each finding prefixed with its stack.
 */
function mergeConfigItems(
  perStack: readonly { stack: string; items: readonly ChecklistItem[] }[],
): ChecklistItem[] {
  const [first] = perStack;
  if (first === undefined) return [];
  if (perStack.length === 1) return [...first.items];
  const rank = { fail: 3, 'not-checkable': 2, pass: 1, 'not-applicable': 0 } as const;
  return first.items.map((item) => {
    const all = perStack.map((p) => ({
      stack: p.stack,
      item: p.items.find((i) => i.ruleId === item.ruleId) ?? item,
    }));
    const worst = all.reduce((a, b) => (rank[b.item.status] > rank[a.item.status] ? b : a)).item.status;
    const shown = all.filter((a) => a.item.status === worst);
    return {
      ...item,
      status: worst,
      why: shown.map((a) => `${a.stack}: ${a.item.why}`).join('; '),
      resources: shown.flatMap((a) => a.item.resources.map((r) => `${a.stack}/${r}`)),
    };
  });
}

/**
 * Audits stacks with the declarations they carry: the template rules with each job type's latency
 * objective (O3), plus the config rules (P1 looks for runbooks in `appDir`/runbooks, then among
 * tenang's own pages). Stacks without the metadata get the template rules alone.
 */
export function auditDeclaredStacks(
  stacks: readonly StackTemplate[],
  appDir: string,
  drills: readonly AuditedDrill[] = DRILL_CATALOG,
): { items: ChecklistItem[]; findings: AuditFinding[]; notAudited: string[] } {
  const declared = declaredStacks(stacks);
  const audit = auditTemplates(
    stacks,
    declared.length === 0 ? {} : { objectives: declared.flatMap((d) => queueObjectives(d.config)) },
  );
  const config = mergeConfigItems(
    declared.map((d) => ({
      stack: d.stack,
      items: auditPipelineConfig(d.config, {
        drills,
        runbooksDir: path.join(appDir, 'runbooks'),
      }),
    })),
  );
  return { items: [...audit.items, ...config], findings: audit.findings, notAudited: audit.notAudited };
}

/** `notAudited` for a result, only when some nested stack was not given (results stay as they were otherwise). */
function notAuditedOf(audit: { readonly notAudited: readonly string[] }): { notAudited?: readonly string[] } {
  return audit.notAudited.length === 0 ? {} : { notAudited: audit.notAudited };
}

/** How long the app's own synth may take (a tsx start, the constructs, the nag packs). */
const APP_SYNTH_TIMEOUT_MS = 300_000;

/** A JSON file's object, or {} when it does not exist. */
function readJsonObject(file: string): Record<string, unknown> {
  if (!fs.existsSync(file)) return {};
  let value: unknown;
  try {
    value = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (error) {
    throw new UsageError(`${file} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new UsageError(`${file} is not a JSON object`);
  return value as Record<string, unknown>;
}

/**
 * Synthesizes the CDK app in `appDir` as the CDK CLI does, without it and without AWS: runs
 * cdk.json's `app` command with the cloud executable protocol's variables (CDK_OUTDIR, the
 * assembly's directory; CDK_CONTEXT_JSON, the context: cdk.json's and cdk.context.json's, the
 * stage, and no bundling, since the audit reads templates, not code), then reads the assembly.
 * A synth that fails validation (a nag finding) still writes the assembly: it is audited anyway,
 * the failure reported through `warn`. The templates are kept in memory; the directory is removed.
 */
export function synthesizeApp(
  appDir: string,
  context: { readonly stage: string; readonly region: string; readonly env?: NodeJS.ProcessEnv },
  warn: (text: string) => void,
): StackTemplate[] {
  const project = readJsonObject(path.join(appDir, CDK_PROJECT_FILE));
  const command = project.app;
  if (typeof command !== 'string' || command.trim() === '')
    throw new UsageError(
      `${path.join(appDir, CDK_PROJECT_FILE)} has no "app" command to synthesize the app with`,
    );
  const declaredContext =
    typeof project.context === 'object' && project.context !== null ? project.context : {};
  const cdkContext = {
    ...readJsonObject(path.join(appDir, 'cdk.context.json')),
    ...declaredContext,
    [STAGE_CONTEXT_KEY]: context.stage,
    'aws:cdk:bundling-stacks': [],
  };
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-audit-app-'));
  try {
    const env = context.env ?? process.env;
    const result = spawnSync(command, {
      cwd: appDir,
      shell: true,
      encoding: 'utf8',
      timeout: APP_SYNTH_TIMEOUT_MS,
      env: {
        ...env,
        CDK_OUTDIR: outdir,
        CDK_CONTEXT_JSON: JSON.stringify(cdkContext),
        CDK_DEFAULT_REGION: env.CDK_DEFAULT_REGION ?? context.region,
      },
    });
    const assembled = fs.existsSync(path.join(outdir, 'manifest.json'));
    if (result.status !== 0 || result.error !== undefined) {
      // The app's own report, without the stack frames of its uncaught error.
      const output = result.error?.message ?? result.stderr;
      const lines = output.split('\n').filter((l) => !/^\s+at |^\s+\.\.\./.test(l));
      const why = lines.join('\n').trim().split('\n').slice(-20).join('\n');
      if (!assembled)
        throw new CommandFailedError(`synthesizing the app in ${appDir} (\`${command}\`) failed:\n${why}`);
      warn(`synthesis reported findings: ${why}`);
    }
    // The files are removed below: findings name stacks and resources, not the temporary files.
    return readAuditInput(outdir, () => '').map(({ file: _file, lineOf: _lineOf, ...stack }) => stack);
  } finally {
    fs.rmSync(outdir, { recursive: true, force: true });
  }
}

/**
 * The context's config when it holds one already (TENANG_PIPELINE, or a caller's), without loading
 * it: in an app's directory the CLI loads none (the command is config-free there).
 */
function givenConfig(ctx: CliContext): PipelineConfig | undefined {
  try {
    return ctx.config;
  } catch (error) {
    if (error instanceof CommandFailedError) return undefined;
    throw error;
  }
}

/**
 * Runs the audit: a given template (file, cdk.out or stdin); in a CDK app's directory (a cdk.json
 * there) the app synthesized offline, unless the context holds a declaration already
 * (TENANG_PIPELINE); else the project's template synthesized from the declaration (TENANG_PIPELINE
 * or the deployed stack's). Templates carrying
 * `tenang:pipeline` are judged with it (auditDeclaredStacks). `readStdin` gives stdin's text (read
 * before, see readStdinText); `cwd` is the app's directory, where its runbooks/ are; `drills`
 * gives the drills of the app there.
 */
export function runAudit(
  options: AuditOptions,
  ctx: CliContext,
  readStdin: () => string = () => {
    throw new UsageError('stdin was not read: pass its text to runAudit');
  },
  cwd: string = process.cwd(),
  drills: AppDrills = KIT_DRILLS,
): AuditResult {
  if (options.template !== undefined) {
    const stacks = readAuditInput(options.template, readStdin);
    let audit: ReturnType<typeof auditDeclaredStacks>;
    try {
      audit = auditDeclaredStacks(stacks, cwd, drills(cwd));
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
    return {
      source,
      items: audit.items,
      failed: auditFailed(audit.items),
      findings: audit.findings,
      ...notAuditedOf(audit),
    };
  }
  const appDir = appDirectory(cwd);
  if (appDir !== undefined && givenConfig(ctx) === undefined) {
    const stacks = synthesizeApp(appDir, ctx, ctx.err);
    if (declaredStacks(stacks).length === 0)
      ctx.err(
        `audit: no stack of the app in ${appDir} carries ${PIPELINE_METADATA_KEY}: the config rules (owners, runbooks, drills) are not run`,
      );
    const audit = auditDeclaredStacks(stacks, appDir, drills(appDir));
    return {
      source: `synthesized app ${appDir} (${stacks.map((s) => s.name).join(', ')})`,
      items: audit.items,
      failed: auditFailed(audit.items),
      findings: audit.findings,
      ...notAuditedOf(audit),
    };
  }
  const { stackName, template } = synthesizeProjectTemplate(
    ctx.config.declaration,
    ctx.stage,
    ctx.region,
    ctx.err,
  );
  const audit = auditTemplates([{ name: stackName, template }], { objectives: queueObjectives(ctx.config) });
  const items = [
    ...audit.items,
    ...auditPipelineConfig(ctx.config, {
      drills: drills(cwd),
      runbooksDir: path.join(cwd, 'runbooks'),
    }),
  ];
  return { source: `synthesized ${stackName}`, items, failed: auditFailed(items), findings: audit.findings };
}

/** Audits the stage's deployed stack through the AWS APIs, plus the pipeline config it was deployed from. */
export async function runLiveAudit(ctx: CliContext, drills: AppDrills = KIT_DRILLS): Promise<AuditResult> {
  const answers = await readLiveStack(ctx.clients, ctx.stackName, (line) =>
    ctx.err(`audit --live: ${line}`),
  ).catch((error: unknown) => {
    // CommandFailedError takes no cause: the missing stack is the whole story.
    if (error instanceof LiveStackNotFoundError)
      throw new CommandFailedError(`${error.message}: is stage "${ctx.stage}" deployed?`);
    throw error;
  });
  const items = [
    ...auditLive(answers),
    ...auditPipelineConfig(ctx.config, { drills: drills(process.cwd()) }),
  ];
  return { source: `live stack ${ctx.stackName} (${ctx.region})`, items, failed: auditFailed(items) };
}
