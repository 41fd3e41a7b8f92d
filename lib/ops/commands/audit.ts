/**
 * `tenang audit [template | -] [--template path | --live] [--json | --format f]`: the
 * pre-automation checklist (P4). Without a template, in a CDK app's directory (a cdk.json), it
 * synthesizes the app offline and audits it with the declaration its template carries (no AWS);
 * elsewhere it synthesizes the declaration's stack (TENANG_PIPELINE or the deployed stack's) for
 * the context's stage and audits that template plus the pipeline config; with one it audits any
 * CloudFormation template — JSON or YAML, SAM, a Serverless Framework serverless.yml, a cdk.out
 * directory, or `-` for stdin
 * (`cdk synth | tenang audit -`); with --live it audits the stage's DEPLOYED stack through the
 * AWS APIs (the same rules, see lib/audit/live-audit.ts) plus the pipeline config. Exits 1
 * (CommandFailedError) when an error-level rule fails, 2 when the input cannot be read (with
 * --json or --format json, the CLI prints the error as JSON on stdout). The work is in
 * lib/ops/audit.ts, loaded when the command runs.
 */
import type { Command } from 'commander';
import * as z from '../../config/zod';
import type { ChecklistItem } from '../../audit/checklist';
import {
  answersInJson,
  CommandFailedError,
  configFree,
  UsageError,
  type CliContext,
  type RegisterCommand,
} from '../cli-context';
import { appDirectory } from '../app-directory';
import { renderTable } from '../table';
import { DRILL_CATALOG, type AppDrills } from '../drills/catalog';

/** The output formats of `tenang audit`. */
export const AUDIT_FORMATS = ['text', 'json', 'sarif', 'markdown'] as const;

const AuditOptionsSchema = z.object({
  template: z.optional(z.string().check(z.minLength(1, '--template needs a file path'))),
  live: z.optional(z.boolean()),
  json: z.optional(z.boolean()),
  format: z.optional(z.enum(AUDIT_FORMATS, { error: `--format is one of ${AUDIT_FORMATS.join(', ')}` })),
});
/** Parsed options of `tenang audit`. */
export type AuditOptions = z.infer<typeof AuditOptionsSchema>;

/** The format asked for: --format, or json for --json, else text. */
export function auditFormat(options: AuditOptions): (typeof AUDIT_FORMATS)[number] {
  return options.format ?? (options.json === true ? 'json' : 'text');
}

/**
 * Parses raw commander options (and the positional template, `-` for stdin), or throws
 * UsageError naming every problem.
 */
export function parseAuditOptions(raw: unknown, positional?: string): AuditOptions {
  const parsed = AuditOptionsSchema.safeParse(raw);
  if (!parsed.success) throw new UsageError(parsed.error.issues.map((i) => i.message).join('; '));
  const options = parsed.data;
  if (positional !== undefined && options.template !== undefined && positional !== options.template)
    throw new UsageError(
      `two templates given (${positional} and --template ${options.template}): audit one input`,
    );
  const template = positional ?? options.template;
  if (options.live === true && template !== undefined)
    throw new UsageError('--live audits the deployed stack: it cannot be combined with a template');
  if (options.json === true && options.format !== undefined && options.format !== 'json')
    throw new UsageError(`--json and --format ${options.format} ask for two formats: give one`);
  return template === undefined ? options : { ...options, template };
}

/**
 * The human checklist: one row per rule, with the level of a verdict that reports something (a
 * failure's error or warning, a not-checkable verdict's note); a passing rule shows how many
 * resources it checked.
 */
export function renderChecklist(items: readonly ChecklistItem[]): string {
  return renderTable(
    ['rule', 'feature', 'status', 'level', 'why'],
    items.map((i) => ({
      rule: i.ruleId,
      feature: i.featureId,
      status: i.status === 'fail' && i.level === 'warning' ? 'warn' : i.status,
      level: i.status === 'fail' || i.status === 'not-checkable' ? i.level : '',
      why: i.status === 'pass' ? `${i.resources.length} checked` : i.why,
    })),
  );
}

/**
 * The text report's line naming the nested stacks (Terraform: the remote modules) whose resources
 * were not audited, each with why (TemplateAudit.notAudited); empty when none.
 */
export function notAuditedText(stacks: readonly string[] | undefined): string {
  if (stacks === undefined || stacks.length === 0) return '';
  return `\nNot audited: ${stacks.join('; ')}`;
}

/** Exit codes of `tenang audit`, for --help. */
const AUDIT_EXIT_CODES = `
Exit codes: 0 nothing failed at error level (warnings, and not-checkable rules, notes, are reported only),
1 an error-level rule failed, 2 usage error or unreadable input (with --json: a JSON error object
on stdout), 3 no usable AWS credentials (--live).

Inputs: a CloudFormation template in JSON or YAML (short-form tags such as !Ref, !GetAtt, !Sub),
a SAM template (Transform: AWS::Serverless-2016-10-31), a Serverless Framework serverless.yml
(read as the CloudFormation it generates, without the framework), a cdk.out directory (every
stack, nested stacks and Fn::ImportValue between them), or - for stdin.

Examples:
  $ tenang audit template.yaml --format sarif > audit.sarif
  $ tenang audit serverless.yml
  $ cdk synth | tenang audit -
  $ tenang audit --template cdk.out --format markdown`;

/**
 * `tenang audit`, its P2 rule judging the drills `drills` gives for the app's directory:
 * bin/tenang.ts hands in tenang's and the app's own (lib/ never imports bin/, and the operator
 * code sits below the drills that load them).
 */
export const auditCommand =
  (drills: AppDrills): RegisterCommand =>
  (program, context) => {
    const audit = program
      .command('audit')
      .description(
        'audit the pipeline (synthesized, deployed with --live, or any CloudFormation/SAM template, serverless.yml or cdk.out) against the worker-queue checklist',
      )
      .argument(
        '[template]',
        'a template file (JSON or YAML, SAM, serverless.yml), a cdk.out directory, or - for stdin',
      )
      .option('--template <path>', 'the same as the [template] argument')
      .option('--live', "audit the stage's deployed stack through the AWS APIs instead of a template")
      .option('--json', 'print the checklist as JSON (the same as --format json)')
      .option('--format <format>', `output format: ${AUDIT_FORMATS.join(', ')}`)
      .addHelpText('after', AUDIT_EXIT_CODES)
      .action(async (positional: string | undefined, _raw: unknown, cmd: Command) => {
        // With globals: `tenang audit --json` hands --json to the program's own option.
        await runAndPrint(parseAuditOptions(cmd.optsWithGlobals(), positional), context(), drills);
      });
    // --format json answers in JSON as --json does: a refused input is then a JSON error object on
    // stdout (the CLI's error funnel prints it), so a pipeline reading it sees why.
    answersInJson(audit, (options) => options.format === 'json');
    // A given template is audited alone, with the declaration it carries; in a CDK app's directory
    // the app is synthesized and read the same way: neither reads the deployed stack (no credentials).
    configFree(
      audit,
      (options) =>
        options.template !== undefined ||
        audit.args.length > 0 ||
        (options.live !== true && appDirectory() !== undefined),
    );
  };

/** `tenang audit` with tenang's drills alone (an app's own come through auditCommand). */
export const register: RegisterCommand = (program, context) =>
  auditCommand(() => DRILL_CATALOG)(program, context);

/** Runs the audit, prints it in its format, and fails the command on an error-level failure. */
async function runAndPrint(options: AuditOptions, ctx: CliContext, drills: AppDrills): Promise<void> {
  // The audit synthesizes with aws-cdk-lib and the nag packs: loaded only when it runs.
  const { readStdinText, runAudit, runLiveAudit, STDIN_SOURCE } = await import('../audit');
  const { renderMarkdown, renderSarif } = await import('../audit-report');
  const stdin = options.template === STDIN_SOURCE ? await readStdinText() : '';
  const result =
    options.live === true
      ? await runLiveAudit(ctx, drills)
      : runAudit(options, ctx, () => stdin, process.cwd(), drills);
  const format = auditFormat(options);
  ctx.out(
    format === 'json'
      ? JSON.stringify(result, null, 2)
      : format === 'sarif'
        ? renderSarif(result)
        : format === 'markdown'
          ? renderMarkdown(result)
          : `Audit of ${result.source}\n${renderChecklist(result.items)}${notAuditedText(result.notAudited)}`,
  );
  if (result.failed) {
    const failing = result.items
      .filter((i) => i.status === 'fail' && i.level === 'error')
      .map((i) => i.ruleId);
    throw new CommandFailedError(`audit failed: ${failing.join(', ')}`);
  }
}
