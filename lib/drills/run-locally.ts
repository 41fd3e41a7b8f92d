/**
 * `tenang drill`'s work (lib/drills/command.ts is the command): starts a local platform of its
 * own (its own moto on a free port, the local Redis), runs the drills on it through the CLI it is
 * handed, and stops what it started. It never uses the AWS account or endpoint of the
 * environment: a drill is an exercise, not an incident. The platform deploys the app of the working
 * directory (its nearest cdk.json: a team's app, or tenang's checkout), never the copy of tenang
 * in node_modules, and writes its assembly and synth cache to that app's .tenang/.
 */
import { LocalPlatform } from '../local/platform';
import { freePort } from '../local/ports';
import { asCliError } from '../local/local-commands';
import { localAppDirectory } from '../local/project';
import { UsageError } from '../ops/cli-context';
import { appDrills } from './index';
import { runDrill, type Drill, type DrillResult, type RunDrillOptions } from './drill';

/** Runs drills on one fresh local platform; `progress` gets every step as it happens. */
export async function runDrillsLocally(
  names: readonly string[],
  opts: {
    readonly stage: string;
    readonly progress: (line: string) => void;
    /** The CLI the drills' steps run through (bin/tenang.ts's runCaptured). */
    readonly cli: RunDrillOptions['cli'];
    /** `--job-type`. @default the app's default for each drill (drill-jobs.ts) */
    readonly jobType?: string;
    /** The app the platform deploys. @default the nearest cdk.json at or above the working directory */
    readonly projectRoot?: string;
  },
): Promise<DrillResult[]> {
  // tenang's drills and the app's own (its extensions): an unknown name fails before the platform starts.
  let projectRoot: string;
  let drills: readonly Drill[];
  try {
    projectRoot = opts.projectRoot ?? localAppDirectory();
    drills = appDrills(projectRoot);
  } catch (error) {
    throw asCliError(error);
  }
  const unknown = names.filter((n) => !drills.some((d) => d.name === n));
  if (unknown.length > 0) throw new UsageError(`no drill named ${unknown.join(', ')}`);
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
      projectRoot,
      log: (line) => opts.progress(`platform: ${line}`),
      reconcileEveryMs: 5_000,
    });
    // The on-call confirms the alarm subscriptions, as after a deploy on AWS: the drills' alarms
    // then reach a subscriber, not only the topic.
    const confirmed = await platform.confirmSubscriptions();
    opts.progress(
      `platform: confirmed ${confirmed.length} alarm subscription(s): ${confirmed.map((c) => `${c.protocol} ${c.endpoint}`).join(', ') || 'none pending'}`,
    );
    for (const name of names) {
      const drill = drills.find((d) => d.name === name);
      if (drill === undefined) throw new UsageError(`no drill named ${name}`);
      opts.progress(`drill ${drill.name}: ${drill.incident}`);
      results.push(
        await runDrill(drill, {
          platform,
          cli: opts.cli,
          stage: opts.stage,
          jobType: opts.jobType,
          log: (l) => opts.progress(`  ${l}`),
        }),
      );
    }
    return results;
  } catch (error) {
    // A missing cdk, moto or redis-server, a failed cdk step: the CLI's message, not a trace.
    throw asCliError(error);
  } finally {
    await platform?.stop();
    if (savedEndpoint === undefined) delete process.env.AWS_ENDPOINT_URL;
    else process.env.AWS_ENDPOINT_URL = savedEndpoint;
    if (savedPort === undefined) delete process.env.TENANG_MOTO_PORT;
    else process.env.TENANG_MOTO_PORT = savedPort;
  }
}
