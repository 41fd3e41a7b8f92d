/**
 * `tenang init [dir] [--example reference] [--force] [--yes] [--tenang-spec spec]
 * [--alarm-email address] [--json]`: writes a new app that installs tenang (lib/ops/init/init-app.ts):
 * by default a minimal one with one job type, its unit test, the declaration, the CDK entry point,
 * cdk.json, package.json and the runbooks its alarms link to; with `--example reference` the
 * reference example. It never asks and never installs; it refuses a directory that is not empty
 * unless `--force`, and prints the files written and what to run next.
 */
import * as path from 'node:path';
import type { Command } from 'commander';
import * as z from '../../config/zod';
import { configFree, type CliContext, type RegisterCommand } from '../cli-context';
import { parseOptions } from '../options';
import { INIT_EXAMPLES } from '../init/templates';

const InitOptionsSchema = z.object({
  example: z.optional(z.enum(INIT_EXAMPLES, { error: `--example is one of ${INIT_EXAMPLES.join(', ')}` })),
  force: z.optional(z.boolean()),
  yes: z.optional(z.boolean()),
  tenangSpec: z.optional(z.string().check(z.minLength(1, 'needs a version or a path'))),
  alarmEmail: z.optional(z.email('must be an e-mail address, e.g. on-call@example.com')),
  json: z.optional(z.boolean()),
});

/** Registers `tenang init`. */
export const register: RegisterCommand = (program: Command, context: () => CliContext): void => {
  const init = program
    .command('init')
    .description(
      'Create a new app that uses tenang: one job type with its unit test, the declaration, the CDK app and the runbooks its alarms link to',
    )
    .argument('[dir]', "the app's directory (created when missing)", '.')
    .option('--example <name>', `copy an example instead of the minimal app: ${INIT_EXAMPLES.join(', ')}`)
    .option('--force', 'write into a directory that is not empty, overwriting the files init writes')
    .option('--yes', 'never ask (init asks nothing: accepted for scripts that pass it to every command)')
    .option(
      '--tenang-spec <spec>',
      "the app's tenang dependency: a version range, a tarball or a directory (default: ^<this tenang's version>)",
    )
    .option('--alarm-email <address>', "who is told of the stage's alarms (cdk.json's tenang:alarmEmail)")
    .option('--json', 'print the files written and the next steps as JSON')
    .addHelpText(
      'after',
      `
Nothing is installed: run the next steps it prints. The app's alarms need someone to tell
(Tenang-F5-AlarmSubscriber): cdk.json's "tenang:alarmEmail" is on-call@example.com until you
give --alarm-email or edit it. A directory holding only .git counts as empty.

Examples:
  $ npx tenang init my-app
  $ npx tenang init my-app --alarm-email on-call@acme.example
  $ npx tenang init my-reference --example reference
  $ npx tenang init . --force --yes`,
    )
    .action(async (dir: string, _opts: unknown, cmd: Command) => {
      const opts = parseOptions(InitOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
      const { describeApp, nextSteps, planInit, writeInit } = await import('../init/init-app');
      const plan = planInit({
        dir,
        ...(opts.force === undefined ? {} : { force: opts.force }),
        ...(opts.example === undefined ? {} : { example: opts.example }),
        ...(opts.tenangSpec === undefined ? {} : { tenangSpec: opts.tenangSpec }),
        ...(opts.alarmEmail === undefined ? {} : { alarmEmail: opts.alarmEmail }),
      });
      const written = writeInit(plan);
      const steps = nextSteps(plan);
      if (opts.json === true) {
        ctx.out(
          JSON.stringify(
            {
              dir: plan.dir,
              name: plan.name,
              example: plan.example ?? null,
              tenang: plan.tenangSpec,
              alarmEmail: plan.alarmEmail,
              files: plan.files.map((f) => ({ path: f.path, action: f.action })),
              nextSteps: steps,
            },
            null,
            2,
          ),
        );
        return;
      }
      const shown = path.relative(process.cwd(), plan.dir) || '.';
      ctx.out(
        [
          `Created ${shown}: ${describeApp(plan)}.`,
          ...plan.files.map(
            (f) =>
              `  ${f.action === 'create' ? 'wrote    ' : f.action === 'overwrite' ? 'overwrote' : 'unchanged'} ${f.path}`,
          ),
          `${written.length} file(s) written.`,
          '',
          'Next steps:',
          ...steps.map((s) => `  ${s}`),
        ].join('\n'),
      );
    });
  // Writes files only: no deployed stack is read, no AWS is called.
  configFree(init);
};
