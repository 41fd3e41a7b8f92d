/**
 * The checklist items a template cannot show, answered from the pipeline config: every queue
 * and stream has a named owner (P3), its runbooks exist (P1) and are drilled (P2), critical
 * work is declared idempotent (D1), and sheddable work says when it stops being useful (B5).
 *
 * A runbook is looked up where an alarm's link (`Runbook: runbooks/<name>.md`, observability.ts)
 * leads an operator of the app: the app's own runbooks/ first, then the pages tenang ships in its
 * package (the generic alarm and symptom runbooks, and the reference's consumer pages).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { PipelineConfig } from '../config';
import { RUNBOOK } from '../infra/observability';
import { checklistItem, type ChecklistItem, type ItemFinding, type RuleLevel } from './checklist';
import { RULE_PREFIX } from './rules';

/** The package's name in its package.json. */
const PACKAGE_NAME = 'tenang';

/**
 * tenang's package root: the first directory above this module (lib/audit in the sources,
 * dist/lib/audit compiled) whose package.json is tenang's; its runbooks/ ships in the package.
 */
function packageRoot(): string {
  for (let dir = __dirname; path.dirname(dir) !== dir; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (
      fs.existsSync(file) &&
      (JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: unknown }).name === PACKAGE_NAME
    )
      return dir;
  }
  return path.join(__dirname, '..', '..');
}

/** The runbook pages tenang's package ships (runbooks/ at its root). */
export function packageRunbooksDir(): string {
  return path.join(packageRoot(), 'runbooks');
}

/** A drill, as far as the P2 rule reads it (lib/ops/drills/catalog.ts's AppDrillInfo). */
export interface AuditedDrill {
  readonly name: string;
  /** The runbook it executes: runbooks/<runbook>.md. */
  readonly runbook: string;
  /** Consumers it exercises: their fact sheets count as drilled. */
  readonly consumers: readonly string[];
  /**
   * Set when the drill holds for any job type (`tenang drill <name> --job-type <type>`): it then
   * drills every declared job type it can play on (one with a `samplePayload`).
   * @default false: the drill is about the app's own domain, its consumers listed
   */
  readonly anyJobType?: boolean;
  /** The job type a drill that takes any job type plays on by default in this app (its extensions'). */
  readonly defaultJobType?: string;
}

/** Where the config audit looks for runbooks, and which drills exist. */
export interface ConfigAuditOptions {
  /** The app's own runbooks (`<app>/runbooks`). @default tenang's packaged runbooks (packageRunbooksDir) */
  readonly runbooksDir?: string;
  /**
   * The pages tenang ships, found when the app has no page of that name.
   * @default packageRunbooksDir()
   */
  readonly packageRunbooksDir?: string;
  /**
   * The drills: tenang's (lib/ops/drills/catalog.ts DRILL_CATALOG) and the app's own
   * (lib/drills/app-drills.ts appDrillInfos), run by test/drills and `tenang drill`. Handed in by
   * the caller: the audit sits below the operator code that defines them.
   */
  readonly drills: readonly AuditedDrill[];
}

/** A rule over the pipeline config. */
interface ConfigRule {
  readonly ruleId: string;
  readonly featureId: string;
  readonly title: string;
  readonly level: RuleLevel;
  readonly check: (config: PipelineConfig, dirs: Required<ConfigAuditOptions>) => ItemFinding[];
}

/** Every consumer (job type or stream consumer) with its config path. */
function consumers(config: PipelineConfig): {
  at: string;
  name: string;
  consumer: string;
  owner: string;
  runbook: string;
  /**
   * A job type a drill that takes any job type can play on with --job-type: one with jobs to
   * send (a samplePayload), as lib/drills/drill-jobs.ts accepts it.
   */
  anyJobTypeDrills: boolean;
}[] {
  return [
    ...config.jobTypes.map((j, i) => ({
      at: `jobTypes[${i}]`,
      name: j.name,
      consumer: j.consumer,
      owner: j.owner,
      runbook: j.runbook,
      anyJobTypeDrills: j.samplePayload !== undefined,
    })),
    ...config.streamConsumers.map((s, i) => ({
      at: `streamConsumers[${i}]`,
      name: s.consumer,
      consumer: s.consumer,
      owner: s.owner,
      runbook: s.runbook,
      anyJobTypeDrills: false,
    })),
  ];
}

/** Every runbook the pipeline's alarms and consumers name, with who names it. */
function runbooks(config: PipelineConfig): Map<string, string> {
  // The stream consumers' on-failure alarms are the only ones that name stream-failures: a
  // pipeline without stream consumers has no alarm linking to it.
  const alarmed = Object.values(RUNBOOK).filter(
    (r) => r !== RUNBOOK.streamFailures || config.streamConsumers.length > 0,
  );
  const named = new Map<string, string>(alarmed.map((r) => [r, 'alarms']));
  for (const c of consumers(config)) named.set(c.runbook, `${c.at}.runbook`);
  return named;
}

const CONFIG_RULES: readonly ConfigRule[] = [
  {
    ruleId: `${RULE_PREFIX}-P3-Owner`,
    featureId: 'P3',
    title: 'Every queue and stream consumer names an owner.',
    level: 'error',
    check: (config) =>
      consumers(config).map((c) => {
        const ok = c.owner.trim().length > 0;
        return {
          resource: `${c.at}.owner`,
          compliant: ok,
          why: `${c.name}: ${ok ? `owned by ${c.owner}` : 'no owner'}`,
        };
      }),
  },
  {
    ruleId: `${RULE_PREFIX}-P1-Runbook`,
    featureId: 'P1',
    title: 'Every runbook a consumer or an alarm names exists under runbooks/.',
    level: 'error',
    check: (config, dirs) =>
      [...runbooks(config)].map(([runbook, by]) => {
        const page = `${runbook}.md`;
        const own = fs.existsSync(path.join(dirs.runbooksDir, page));
        const shipped = !own && fs.existsSync(path.join(dirs.packageRunbooksDir, page));
        const sameDir = path.resolve(dirs.runbooksDir) === path.resolve(dirs.packageRunbooksDir);
        return {
          resource: by,
          compliant: own || shipped,
          why: own
            ? `runbooks/${page} exists`
            : shipped
              ? `runbooks/${page} exists among tenang's pages (${dirs.packageRunbooksDir})`
              : `runbooks/${page} does not exist (named by ${by}) in ${dirs.runbooksDir}${sameDir ? '' : " nor among tenang's pages"}: create ${path.join(dirs.runbooksDir, page)}, the page its alarms link to (what pages, the safe mitigation, recovery, each step a \`tenang\` command), or name one of tenang's pages (${path.join(dirs.packageRunbooksDir, 'README.md')}) in ${by}`,
        };
      }),
  },
  {
    ruleId: `${RULE_PREFIX}-P2-Drill`,
    featureId: 'P2',
    title:
      "Every runbook is drilled: a drill executes it, and each consumer's fact sheet is covered by a drill that exercises the consumer.",
    level: 'error',
    check: (config, dirs) => {
      const byRunbook = new Map<string, string[]>();
      const add = (runbook: string, drill: string): void => {
        byRunbook.set(runbook, [...(byRunbook.get(runbook) ?? []), drill]);
      };
      for (const d of dirs.drills) add(d.runbook, d.name);
      const anyJobType = dirs.drills.filter((d) => d.anyJobType === true);
      const undrillable = new Map<string, string>();
      for (const c of consumers(config)) {
        for (const d of dirs.drills)
          if (
            (d.consumers.includes(c.consumer) ||
              (d.anyJobType === true && c.at.startsWith('jobTypes') && d.defaultJobType === c.name)) &&
            d.runbook !== c.runbook
          )
            add(c.runbook, d.name);
        // A drill that holds for any job type plays on this one with --job-type: it drills the
        // job type's own runbook, once the job type has jobs to send (lib/drills/drill-jobs.ts).
        if (c.anyJobTypeDrills)
          for (const d of anyJobType)
            if (d.runbook !== c.runbook) add(c.runbook, `${d.name} --job-type ${c.name}`);
        // A job type no drill exercises by name could be drilled once it has jobs to send.
        if (
          !c.anyJobTypeDrills &&
          c.at.startsWith('jobTypes') &&
          !dirs.drills.some((d) => d.consumers.includes(c.consumer) || d.defaultJobType === c.name) &&
          anyJobType.length > 0
        )
          undrillable.set(c.runbook, c.name);
      }
      return [...runbooks(config)].map(([runbook, by]) => {
        const drills = byRunbook.get(runbook) ?? [];
        const jobType = undrillable.get(runbook);
        const hint =
          jobType === undefined
            ? ''
            : `: declare a samplePayload for ${jobType}, so ${anyJobType.map((d) => d.name).join(', ')} can play on it (\`tenang drill <name> --job-type ${jobType}\`)`;
        return {
          resource: by,
          compliant: drills.length > 0,
          why: `runbooks/${runbook}.md ${drills.length > 0 ? `is drilled by ${[...new Set(drills)].join(', ')}` : `has no drill${hint}`}`,
        };
      });
    },
  },
  {
    ruleId: `${RULE_PREFIX}-D1`,
    featureId: 'D1',
    title: 'Critical job types are declared idempotent.',
    level: 'error',
    check: (config) =>
      config.jobTypes
        .map((j, i) => ({ j, at: `jobTypes[${i}].idempotent` }))
        .filter(({ j }) => j.criticality === 'critical')
        .map(({ j, at }) => ({
          resource: at,
          compliant: j.idempotent,
          why: `${j.name} (critical): ${j.idempotent ? 'idempotent' : 'not declared idempotent'}`,
        })),
  },
  {
    ruleId: `${RULE_PREFIX}-B5-UsefulAge`,
    featureId: 'B5',
    title:
      'Every sheddable job type says how long its work stays useful (usefulAgeSeconds): older jobs go to its side queue, counted, instead of being done late.',
    level: 'warning',
    check: (config) =>
      config.jobTypes
        .map((j, i) => ({ j, at: `jobTypes[${i}].usefulAgeSeconds` }))
        .filter(({ j }) => j.criticality === 'sheddable')
        .map(({ j, at }) => ({
          resource: at,
          compliant: j.usefulAgeSeconds !== undefined,
          why:
            j.usefulAgeSeconds === undefined
              ? `${j.name} (sheddable): no useful age; after a long pause its whole backlog is done, however late`
              : `${j.name} (sheddable): useful for ${j.usefulAgeSeconds} s, then moved to tenang-<stage>-${j.name}-expired`,
        })),
  },
];

/** The config part of the checklist. */
export function auditPipelineConfig(config: PipelineConfig, options: ConfigAuditOptions): ChecklistItem[] {
  const shipped = options.packageRunbooksDir ?? packageRunbooksDir();
  const dirs: Required<ConfigAuditOptions> = {
    runbooksDir: options.runbooksDir ?? shipped,
    packageRunbooksDir: shipped,
    drills: options.drills,
  };
  return CONFIG_RULES.map((rule) => checklistItem(rule, rule.check(config, dirs)));
}
