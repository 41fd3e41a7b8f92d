/**
 * `tenang audit [--template path | --live] [--json]`: the pre-automation checklist (P4). Without
 * --template it synthesizes this project's app for the context's stage and audits that template
 * plus the pipeline config; with --template it audits any CloudFormation template; with --live
 * it audits the stage's DEPLOYED stack through the AWS APIs (the same rules, see
 * lib/infra/audit/live-audit.ts) plus the pipeline config. Exits 1 (CommandFailedError) when an
 * error-level rule fails. The work is in lib/ops/audit.ts, loaded when the command runs.
 */
import type { Command } from 'commander';
import * as z from '../../config/zod';
import type { ChecklistItem } from '../../infra/audit/checklist';
import { CommandFailedError, configFree, UsageError, type RegisterCommand } from '../cli-context';
import { renderTable } from '../table';

const AuditOptionsSchema = z.object({
  template: z.optional(z.string().check(z.minLength(1, '--template needs a file path'))),
  live: z.optional(z.boolean()),
  json: z.optional(z.boolean()),
});
/** Parsed options of `tenang audit`. */
export type AuditOptions = z.infer<typeof AuditOptionsSchema>;

/** Parses raw commander options, or throws UsageError naming every problem. */
export function parseAuditOptions(raw: unknown): AuditOptions {
  const parsed = AuditOptionsSchema.safeParse(raw);
  if (!parsed.success) throw new UsageError(parsed.error.issues.map((i) => i.message).join('; '));
  if (parsed.data.live === true && parsed.data.template !== undefined)
    throw new UsageError('--live audits the deployed stack: it cannot be combined with --template');
  return parsed.data;
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
  const audit = program
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
      // The audit synthesizes with aws-cdk-lib and the nag packs: loaded only when it runs.
      const { runAudit, runLiveAudit } = await import('../audit');
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
  // A given template is audited alone: nothing of this app's config is read.
  configFree(audit, (options) => options.template !== undefined);
};
