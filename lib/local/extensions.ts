/**
 * An app's own additions to what tenang runs locally: the drills of its domain's incidents, the
 * job types tenang's drills play on by default (and the jobs they send there when the app's
 * domain makes them), and its scenario's traffic. The kit knows no
 * app's domain; an app that has one hands it in through the module its cdk.json names in the
 * context key `tenang:extensions` (a path relative to the app's directory), whose default export
 * (or `extensions` export) is an AppExtensions made with defineExtensions. The reference app's is
 * examples/reference/local/index.ts.
 *
 * The module is the app's code, so it is loaded as the app runs its own TypeScript: by the
 * process's own loader when one is active (tsx, ts-jest), else with the app's tsx registered
 * for the load (`tsx/cjs/api`, from the app's node_modules); a .js module needs neither.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Drill, DrillContext } from '../drills/drill';
import type { DrillJobs } from '../drills/drill-jobs';
import { LocalEnvError } from './errors';
import type { ScenarioFlow } from './scenario-flow';

/** cdk.json's context key naming the app's extensions module. */
export const EXTENSIONS_CONTEXT_KEY = 'tenang:extensions';

/** What an app adds to tenang's drills and scenario. */
export interface AppExtensions {
  /**
   * Drills of the app's own incidents (facts of its domain, beyond what holds for any job type),
   * listed after tenang's by `tenang drill --list` and run by `tenang drill <name>|all`. Their
   * names must not repeat tenang's.
   */
  readonly drills?: readonly Drill[];
  /**
   * The job type each of tenang's drills that take any job type plays on when `--job-type` is not
   * given, by drill name. @default the first job type the pipeline declares with a samplePayload
   */
  readonly drillJobTypes?: Readonly<Record<string, string>>;
  /**
   * The jobs tenang's drills send on a job type of the app's, by job type name, where jobs made
   * from a samplePayload cannot stand for it (its jobs need the app's own state, such as an order
   * to charge) or cannot be judged by what holds for any job type. @default jobs made from the
   * job type's samplePayload (DeclaredDrillJobs)
   */
  readonly drillJobs?: Readonly<Record<string, (ctx: DrillContext) => DrillJobs>>;
  /**
   * The scenario's traffic of the app's own domain, beside the declared job types' jobs: its
   * incidents, invariants and report sections (lib/local/scenario-flow.ts), and its `seed` hook,
   * which `tenang local up` calls once the pipeline runs.
   */
  readonly scenarioFlow?: ScenarioFlow;
}

/** Types an app's extensions module (the identity: it exists for the type check). */
export function defineExtensions(extensions: AppExtensions): AppExtensions {
  return extensions;
}

/** The extensions module cdk.json in `appDir` names, as an absolute path, or undefined. */
export function extensionsPath(appDir: string): string | undefined {
  const file = path.join(appDir, 'cdk.json');
  if (!fs.existsSync(file)) return undefined;
  let context: Record<string, unknown> | undefined;
  try {
    context = (JSON.parse(fs.readFileSync(file, 'utf8')) as { context?: Record<string, unknown> }).context;
  } catch (error) {
    throw new LocalEnvError(`${file} is not valid JSON: ${(error as Error).message}`);
  }
  const named = context?.[EXTENSIONS_CONTEXT_KEY];
  if (named === undefined) return undefined;
  if (typeof named !== 'string' || named.length === 0)
    throw new LocalEnvError(
      `${file}: context "${EXTENSIONS_CONTEXT_KEY}" must be the path of the app's extensions module (relative to ${appDir}), not ${JSON.stringify(named)}`,
    );
  const resolved = path.resolve(appDir, named);
  if (!fs.existsSync(resolved))
    throw new LocalEnvError(
      `${file}: context "${EXTENSIONS_CONTEXT_KEY}" names ${named}, which does not exist in ${appDir}`,
    );
  return resolved;
}

/**
 * Whether this process already loads TypeScript itself: tsx and ts-node register `.ts` with
 * Node's CommonJS loader; jest's require has its own transforms and an empty `extensions`. (Not
 * JEST_WORKER_ID: the CLI a test runs as a child process inherits it and loads no TypeScript.)
 */
function loadsTypeScript(): boolean {
  const extensions = require.extensions as Record<string, unknown> | undefined;
  return extensions === undefined || '.ts' in extensions || Object.keys(extensions).length === 0;
}

/** Requires `file`, a module of the app in `appDir`, as the app runs its TypeScript. */
function requireAppModule(file: string, appDir: string): unknown {
  // The app's module is found at run time: a require, not an import the bundler would follow.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  if (!/\.[mc]?ts$/.test(file) || loadsTypeScript()) return require(file);
  let tsx: { register: () => () => void };
  try {
    const api = require.resolve('tsx/cjs/api', { paths: [appDir] });
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    tsx = require(api) as typeof tsx;
  } catch (error) {
    throw new LocalEnvError(
      `${file} is TypeScript and the app has no tsx to load it with: npm install -D tsx (in ${appDir})`,
      { cause: error },
    );
  }
  // Registered for this load only, on Node's own loader (not tsx.require's namespace): the
  // module's imports of tenang then resolve to the very modules this process runs, so it shares
  // their state and no dependency is evaluated twice (ioredis, evaluated again, throws).
  const unregister = tsx.register();
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(file);
  } finally {
    unregister();
  }
}

const loaded = new Map<string, AppExtensions>();

/** The checks every extensions module passes before it is used. */
function validated(file: string, value: unknown): AppExtensions {
  const exported = value as { default?: unknown; extensions?: unknown } | undefined;
  const candidate = (exported?.extensions ?? exported?.default ?? exported) as
    Record<string, unknown> | undefined;
  if (candidate === undefined || typeof candidate !== 'object')
    throw new LocalEnvError(`${file} exports no extensions (export default defineExtensions({ … }))`);
  const drills = candidate.drills;
  if (drills !== undefined && !Array.isArray(drills))
    throw new LocalEnvError(`${file}: drills must be a list of drills`);
  for (const d of (drills ?? []) as { name?: unknown; run?: unknown }[])
    if (typeof d?.name !== 'string' || typeof d.run !== 'function')
      throw new LocalEnvError(`${file}: every drill needs a name and a run function`);
  const flow = candidate.scenarioFlow as Record<string, unknown> | undefined;
  if (flow !== undefined) {
    if (flow === null || typeof flow !== 'object')
      throw new LocalEnvError(`${file}: scenarioFlow must be a scenario flow (lib/local/scenario-flow.ts)`);
    const missing = [
      ...(typeof flow.name === 'string' && flow.name.length > 0 ? [] : ['a name']),
      ...(['jobTypes', 'prepare'] as const).filter((m) => typeof flow[m] !== 'function'),
      ...(flow.seed === undefined || typeof flow.seed === 'function' ? [] : ['seed as a function']),
    ];
    if (missing.length > 0) throw new LocalEnvError(`${file}: scenarioFlow needs ${missing.join(', ')}`);
  }
  const drillJobs = candidate.drillJobs;
  if (
    drillJobs !== undefined &&
    (typeof drillJobs !== 'object' ||
      drillJobs === null ||
      Object.values(drillJobs).some((make) => typeof make !== 'function'))
  )
    throw new LocalEnvError(
      `${file}: drillJobs must map job type names to functions that make a drill's jobs (ctx) => DrillJobs`,
    );
  return candidate as AppExtensions;
}

/**
 * The extensions of the app in `appDir` (none when its cdk.json names no module); loaded once
 * per module. A module that cannot load is a LocalEnvError naming it and why.
 */
export function loadAppExtensions(appDir: string | undefined): AppExtensions {
  if (appDir === undefined) return {};
  const file = extensionsPath(appDir);
  if (file === undefined) return {};
  const cached = loaded.get(file);
  if (cached !== undefined) return cached;
  let value: unknown;
  try {
    value = requireAppModule(file, appDir);
  } catch (error) {
    if (error instanceof LocalEnvError) throw error;
    throw new LocalEnvError(`cannot load the app's extensions ${file}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const extensions = validated(file, value);
  loaded.set(file, extensions);
  return extensions;
}
