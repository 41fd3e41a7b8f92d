/**
 * `tenang drill <name>|all [--json]` and `tenang drill --list` (P2): starts a local platform of
 * its own (its own moto on a free port, the local Redis), creates the drill's incident, runs the
 * runbook's commands through this CLI, checks the outcome and stops what it started. It never
 * uses the AWS account or endpoint of the environment: a drill is an exercise, not an incident.
 */
import type { Command } from 'commander';
import * as z from '../../config/zod';
import { LocalPlatform } from '../../local/platform';
import { freePort } from '../../local/ports';
import { CommandFailedError, UsageError, type CliContext, type RegisterCommand } from '../cli-context';
import { renderDrillResult, runDrill, type DrillResult } from '../drills/drill';
import { DRILLS, drillNamed } from '../drills';
import { parseOptions } from '../options';
import { renderTable } from '../table';

const DrillOptionsSchema = z.object({
  list: z.optional(z.boolean()),
  json: z.optional(z.boolean()),
  stage: z.string(),
});

/** Runs the CLI in-process with `env`, capturing its output (the drill's steps). */
async function cliRunner(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; out: string; err: string }> {
  // Loaded at run time: bin/tenang.ts registers this command, so a static import would be a cycle.
  const { runCaptured } = await import('../../../bin/tenang');
  return runCaptured(argv, { env });
}

/** Runs drills on one fresh local platform; `progress` gets every step as it happens. */
export async function runDrillsLocally(
  names: readonly string[],
  opts: { readonly stage: string; readonly progress: (line: string) => void },
): Promise<DrillResult[]> {
  const savedEndpoint = process.env.AWS_ENDPOINT_URL;
  const savedPort = process.env.TENANG_MOTO_PORT;
  // Its own emulator: never the endpoint the operator's shell points at.
  delete process.env.AWS_ENDPOINT_URL;
  process.env.TENANG_MOTO_PORT = String(await freePort());
  opts.progress('starting a local platform for the drill (about 30 s)…');
  let platform: LocalPlatform | undefined;
  const results: DrillResult[] = [];
  try {
    platform = await LocalPlatform.start({
      stage: opts.stage,
      log: (line) => opts.progress(`platform: ${line}`),
      reconcileEveryMs: 5_000,
    });
    for (const name of names) {
      const drill = drillNamed(name);
      if (drill === undefined) throw new UsageError(`no drill named ${name}`);
      opts.progress(`drill ${drill.name}: ${drill.incident}`);
      results.push(
        await runDrill(drill, {
          platform,
          cli: cliRunner,
          stage: opts.stage,
          log: (l) => opts.progress(`  ${l}`),
        }),
      );
    }
    return results;
  } finally {
    await platform?.stop();
    if (savedEndpoint === undefined) delete process.env.AWS_ENDPOINT_URL;
    else process.env.AWS_ENDPOINT_URL = savedEndpoint;
    if (savedPort === undefined) delete process.env.TENANG_MOTO_PORT;
    else process.env.TENANG_MOTO_PORT = savedPort;
  }
}

/** Registers `drill`. */
export const register: RegisterCommand = (program: Command, context: () => CliContext): void => {
  program
    .command('drill')
    .description(
      "Rehearse a runbook: create its incident on a local platform, run the runbook's commands, check recovery",
    )
    .argument('[name]', 'a drill name, or "all" (see --list)')
    .option('--list', 'list the drills and the runbooks they execute')
    .option('--json', 'print the results as JSON')
    .addHelpText(
      'after',
      `
A drill starts its own local platform (moto on a free port, the local Redis; npm start's
machinery), so it needs python3 with moto and redis-server, never an AWS account. It takes
30 s to start plus up to a few minutes per drill. Exit code 1 when a drill fails.

Examples:
  $ tenang drill --list
  $ tenang drill retry-storm
  $ tenang drill all --json > drills.json`,
    )
    .action(async (name: string | undefined, _opts: unknown, cmd: Command) => {
      const opts = parseOptions(DrillOptionsSchema, cmd.optsWithGlobals());
      // The drill uses no AWS clients of the operator's environment; the context only supplies output.
      const ctx = context();
      if (opts.list === true) {
        const rows = DRILLS.map((d) => ({
          drill: d.name,
          runbook: `runbooks/${d.runbook}.md`,
          incident: d.incident,
        }));
        ctx.out(
          opts.json === true
            ? JSON.stringify(rows, null, 2)
            : renderTable(['drill', 'runbook', 'incident'], rows),
        );
        return;
      }
      if (name === undefined)
        throw new UsageError('name a drill (or "all"); `tenang drill --list` shows them');
      const names = name === 'all' ? DRILLS.map((d) => d.name) : [name];
      const unknown = names.filter((n) => drillNamed(n) === undefined);
      if (unknown.length > 0)
        throw new UsageError(
          `no drill named ${unknown.join(', ')}; choose from: ${DRILLS.map((d) => d.name).join(', ')}, all`,
        );
      const results = await runDrillsLocally(names, { stage: opts.stage, progress: ctx.err });
      ctx.out(
        opts.json === true ? JSON.stringify(results, null, 2) : results.map(renderDrillResult).join('\n\n'),
      );
      const failed = results.filter((r) => !r.passed);
      if (failed.length > 0)
        throw new CommandFailedError(`drill failed: ${failed.map((r) => r.drill).join(', ')}`);
    });
};
