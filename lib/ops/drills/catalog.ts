/**
 * What each of tenang's drills is, as data (no platform code): the CLI's `drill --list`, the
 * config audit's P2 rule and the runbook index read it without loading the drills themselves.
 * These drills hold for any job type; an app adds the drills of its own domain's incidents
 * through its extensions (lib/local/extensions.ts), each carrying its own DrillInfo.
 */

/** A drill's description. */
export interface DrillInfo {
  /** `tenang drill <name>`. */
  readonly name: string;
  /** The runbook it executes: runbooks/<runbook>.md. */
  readonly runbook: string;
  /** The incident, in one line. */
  readonly incident: string;
  /**
   * Consumers (function logical names) the drill exercises whatever job type it plays on: their
   * fact sheets count as drilled. A drill that takes any job type exercises that job type's
   * consumer besides.
   */
  readonly consumers: readonly string[];
  /** Longest the drill may take, seconds, when it waits out something real (a hold). @default 300 */
  readonly timeoutSeconds?: number;
  /**
   * Set when the drill's incident and recovery hold for any job type: it plays on `--job-type`,
   * else the job type the app's extensions name for it (drillJobTypes), else the pipeline's first
   * job type with a samplePayload.
   * @default false: the drill is about a fact of the app's own domain and takes no `--job-type`
   */
  readonly anyJobType?: boolean;
}

/**
 * A drill as one app runs it: for a drill that takes any job type, the job type the app's
 * extensions name as its default (drillJobTypes), if any.
 */
export interface AppDrillInfo extends DrillInfo {
  readonly defaultJobType?: string;
}

/**
 * The drills of the app at or above a directory (its nearest cdk.json, tenang's checkout
 * included: the reference app's): tenang's and the app's own. Handed in by bin/tenang.ts
 * (lib/drills/app-drills.ts drillsOfAppAt, which loads the app's extensions) to the commands that
 * read them (audit, runbooks): the operator code sits below the drills and the emulator.
 */
export type AppDrills = (dir: string) => readonly AppDrillInfo[];

/** tenang's drills, in the order `tenang drill --list` shows them (an app's own follow). */
export const DRILL_CATALOG = [
  {
    name: 'retry-storm',
    runbook: 'retry-storm',
    incident: 'the provider a consumer calls answers 503 to every request while jobs keep arriving',
    consumers: [],
    anyJobType: true,
  },
  {
    name: 'backlog',
    runbook: 'backlog',
    incident: 'a consumer is paused for maintenance while its jobs keep arriving',
    consumers: [],
    anyJobType: true,
  },
  {
    name: 'dlq-not-empty',
    runbook: 'dlq-not-empty',
    incident: 'a DLQ holds a poison message, an exhausted job and a job already done',
    consumers: [],
    anyJobType: true,
  },
  {
    name: 'stuck-jobs',
    runbook: 'stuck-jobs',
    incident: 'a job hangs until its function times out',
    consumers: [],
    anyJobType: true,
  },
  {
    name: 'pause-overdue',
    runbook: 'pause-overdue',
    incident: 'a short pause of a consumer was forgotten and has expired',
    consumers: [],
    anyJobType: true,
  },
  {
    name: 'flag-reconciler',
    runbook: 'flag-reconciler',
    incident: 'the flag reconciler stops running while a pause flag is set directly in SSM',
    consumers: ['flag-reconciler'],
    anyJobType: true,
  },
  {
    name: 'permission-denied',
    runbook: 'permission-denied',
    incident: "a deploy drops a consumer's grant on one of its tables, so every job it receives is denied",
    consumers: [],
    // The held jobs return when their first hold ends: the drill compresses it to 20 s.
    anyJobType: true,
  },
] as const satisfies readonly DrillInfo[];

/** The name of one of tenang's drills. */
export type DrillName = (typeof DRILL_CATALOG)[number]['name'];

/** The description of tenang's drill `name`. */
export function drillInfo(name: DrillName): DrillInfo {
  const info = DRILL_CATALOG.find((d) => d.name === name);
  if (info === undefined) throw new Error(`no drill ${name} in the catalog`);
  return info;
}

/**
 * tenang's drills and an app's own (`extra`, after them), each with the default job type the
 * app names for it in `drillJobTypes`. An app's drill may not take a name of tenang's, nor may
 * drillJobTypes name a drill that does not take any job type.
 */
export function appDrillCatalog(
  extra: readonly DrillInfo[] = [],
  drillJobTypes: Readonly<Record<string, string>> = {},
): AppDrillInfo[] {
  const all: readonly DrillInfo[] = [...DRILL_CATALOG, ...extra];
  const seen = new Set<string>();
  for (const d of all) {
    if (seen.has(d.name))
      throw new Error(`two drills are named ${d.name}: an app's drill must not repeat a name of tenang's`);
    seen.add(d.name);
  }
  for (const name of Object.keys(drillJobTypes)) {
    const d = all.find((x) => x.name === name);
    if (d?.anyJobType !== true)
      throw new Error(
        `drillJobTypes names ${name}, which is ${d === undefined ? 'no drill' : 'not a drill that takes any job type'}; drills that take one: ${all
          .filter((x) => x.anyJobType === true)
          .map((x) => x.name)
          .join(', ')}`,
      );
  }
  return all.map((d) => {
    const defaultJobType = drillJobTypes[d.name];
    return defaultJobType === undefined ? d : { ...d, defaultJobType };
  });
}
