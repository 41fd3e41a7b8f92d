/**
 * `tenang runbooks [--dir runbooks] [--check] [--force] [--json]`: in an app's directory (the
 * nearest cdk.json), writes the runbook pages the app's alarms and consumers link to into its
 * runbooks/ (lib/ops/app-runbooks.ts): tenang's generic pages, and the index and a fact page per
 * consumer generated from the app's declaration. The declaration is read as `tenang audit` reads
 * it offline: the app synthesized without AWS, its template's `tenang:pipeline` (TENANG_PIPELINE
 * still wins). Pages edited by hand are left alone unless `--force`; `--check` writes nothing and
 * exits 1 listing what is missing or out of date (for CI).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Command } from 'commander';
import type { PipelineConfig } from '../../config';
import * as z from '../../config/zod';
import { stackName } from '../../infra/stack-name';
import { nearestAppDirectory } from '../app-directory';
import type { PlannedRunbookPage, RunbookPlan } from '../app-runbooks';
import {
  CommandFailedError,
  configFree,
  UsageError,
  type CliContext,
  type RegisterCommand,
} from '../cli-context';
import { DRILL_CATALOG, type AppDrills } from '../drills/catalog';
import { parseOptions } from '../options';

const RunbooksOptionsSchema = z.object({
  dir: z.string().check(z.minLength(1, 'needs a directory')),
  check: z.optional(z.boolean()),
  force: z.optional(z.boolean()),
  json: z.optional(z.boolean()),
});
/** Parsed options of `tenang runbooks`. */
export type RunbooksOptions = z.infer<typeof RunbooksOptionsSchema>;

/** The context's declaration when it holds one (TENANG_PIPELINE), without loading one. */
function givenConfig(ctx: CliContext): PipelineConfig | undefined {
  try {
    return ctx.config;
  } catch (error) {
    if (error instanceof CommandFailedError) return undefined;
    throw error;
  }
}

/** The app's directory from `cwd`, or a usage error saying where to run. */
export function runbooksAppDirectory(cwd: string): string {
  const app = nearestAppDirectory(cwd);
  if (app !== undefined) return app;
  let inCheckout = false;
  for (let dir = path.resolve(cwd); !inCheckout; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest)) {
      try {
        inCheckout = (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: unknown }).name === 'tenang';
      } catch {
        // an unreadable package.json is no checkout of tenang
      }
      break;
    }
    if (path.dirname(dir) === dir) break;
  }
  throw new UsageError(
    inCheckout
      ? "tenang runbooks writes an app's runbooks: in tenang's own checkout, `npm run runbooks` writes the repository's"
      : `no cdk.json in ${path.resolve(cwd)} or above: run tenang runbooks in your CDK app's directory`,
  );
}

/**
 * The app's declaration: TENANG_PIPELINE when set, else the one its synthesized template carries
 * (the stage's stack, else the only one).
 */
export async function appDeclaration(appDir: string, ctx: CliContext): Promise<PipelineConfig> {
  const given = givenConfig(ctx);
  if (given !== undefined) return given;
  // Synthesizing loads aws-cdk-lib: only when the command runs.
  const { declaredStacks, synthesizeApp } = await import('../audit');
  const declared = declaredStacks(synthesizeApp(appDir, ctx, ctx.err));
  const chosen = declared.find((d) => d.stack === stackName(ctx.stage)) ?? declared[0];
  if (chosen === undefined)
    throw new CommandFailedError(
      `no stack of the app in ${appDir} carries tenang's declaration (tenang:pipeline): does its app call buildApp from tenang/infra?`,
    );
  return chosen.config;
}

const ACTION_LABEL: Readonly<Record<PlannedRunbookPage['action'], string>> = {
  create: 'wrote    ',
  update: 'updated  ',
  unchanged: 'unchanged',
  kept: 'kept     ',
  overwrite: 'overwrote',
};

const CHECK_LABEL: Readonly<Record<PlannedRunbookPage['action'], string>> = {
  create: 'missing  ',
  update: 'outdated ',
  unchanged: 'ok       ',
  kept: 'kept     ',
  overwrite: 'kept     ',
};

/** The plan as lines, paths as seen from `cwd`. */
export function describeRunbookPlan(plan: RunbookPlan, check: boolean, cwd: string = process.cwd()): string {
  const shown = (file: string): string => {
    const relative = path.relative(cwd, path.join(plan.dir, file));
    return relative.startsWith('..') ? path.join(plan.dir, file) : relative;
  };
  const labels = check ? CHECK_LABEL : ACTION_LABEL;
  const lines = plan.pages.map((p) => {
    const why =
      p.reason === undefined
        ? ''
        : ` (${p.reason}${p.action === 'kept' ? (check ? '' : ': --force replaces it') : ''})`;
    return `  ${labels[p.action]} ${shown(p.file)}${why}`;
  });
  const copied = plan.pages.filter((p) => p.kind === 'copied').length;
  return [
    `Runbooks in ${shown('.') || '.'}: ${copied} copied from tenang, ${plan.pages.length - copied} generated from the app's declaration`,
    ...lines,
    ...(plan.orphans.length === 0
      ? []
      : [
          `Generated pages the declaration no longer names (delete them): ${plan.orphans.map(shown).join(', ')}`,
        ]),
  ].join('\n');
}

/**
 * `tenang runbooks`, the pages naming the drills `drills` gives for the app's directory:
 * bin/tenang.ts hands in tenang's and the app's own (its extensions).
 */
export const runbooksCommand =
  (drills: AppDrills): RegisterCommand =>
  (program: Command, context: () => CliContext): void => {
    const runbooks = program
      .command('runbooks')
      .description(
        "Write the app's runbooks (the pages its alarms link to): tenang's generic pages, the index and a fact page per job type and consumer",
      )
      .option('--dir <path>', "the runbooks directory, relative to the app's directory", 'runbooks')
      .option('--check', 'write nothing; exit 1 listing the pages missing or out of date')
      .option('--force', 'also replace pages edited by hand')
      .option('--json', 'print the pages and what was done with each as JSON')
      .addHelpText(
        'after',
        `
The app is the nearest cdk.json at or above the working directory; its declaration is read as
tenang audit reads it offline (the app synthesized without AWS; TENANG_PIPELINE wins). Each page
starts with a mark: a page whose text no longer matches it was edited and is yours, and is left
alone without --force. Run it after adding a job type, and --check in CI.

Examples:
  $ npx tenang runbooks
  $ npx tenang runbooks --check`,
      )
      .action(async (_opts: unknown, cmd: Command) => {
        const opts = parseOptions(RunbooksOptionsSchema, cmd.optsWithGlobals());
        await runRunbooks(opts, context(), process.cwd(), drills);
      });
    // The declaration comes from the app itself: no deployed stack is read.
    configFree(runbooks);
  };

/** `tenang runbooks` with tenang's drills alone (an app's own come through runbooksCommand). */
export const register: RegisterCommand = (program, context) =>
  runbooksCommand(() => DRILL_CATALOG)(program, context);

/** Runs `tenang runbooks` for the app of `cwd`, its pages naming the drills `drills` gives. */
export async function runRunbooks(
  opts: RunbooksOptions,
  ctx: CliContext,
  cwd: string,
  drills: AppDrills = () => DRILL_CATALOG,
): Promise<RunbookPlan> {
  const appDir = runbooksAppDirectory(cwd);
  const config = await appDeclaration(appDir, ctx);
  const { outOfDate, planRunbooks, writeRunbookPlan } = await import('../app-runbooks');
  const check = opts.check === true;
  const plan = planRunbooks(config, path.resolve(appDir, opts.dir), {
    force: opts.force === true && !check,
    drills: drills(appDir),
  });
  const stale = outOfDate(plan);
  if (!check) writeRunbookPlan(plan);
  ctx.out(
    opts.json === true
      ? JSON.stringify(
          {
            app: appDir,
            dir: plan.dir,
            check,
            pages: plan.pages.map(({ content: _content, ...page }) => page),
            orphans: plan.orphans,
            ...(check ? { outOfDate: stale.map((p) => p.file) } : {}),
          },
          null,
          2,
        )
      : describeRunbookPlan(plan, check, cwd),
  );
  if (check && stale.length > 0)
    throw new CommandFailedError(
      `${stale.length} runbook page(s) missing or out of date: ${stale.map((p) => p.file).join(', ')}; run \`npx tenang runbooks\` and commit the result`,
    );
  return plan;
}
