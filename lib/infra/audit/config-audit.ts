/**
 * The checklist items a template cannot show, answered from the pipeline config: every queue
 * and stream has a named owner (P3), its runbooks exist (P1) and are drilled (P2), critical
 * work is declared idempotent (D1), and sheddable work says when it stops being useful (B5).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { PipelineConfig } from '../../config';
import { RUNBOOK } from '../observability';
import { checklistItem, type AuditLevel, type ChecklistItem, type ItemFinding } from './checklist';
import { RULE_PREFIX } from './rules';

/** The project root (lib/infra/audit → ../../..). */
const PROJECT_ROOT = path.join(__dirname, '..', '..', '..');

/** A drill, as far as the P2 rule reads it (lib/ops/drills/catalog.ts's DrillInfo). */
export interface AuditedDrill {
  readonly name: string;
  /** The runbook it executes: runbooks/<runbook>.md. */
  readonly runbook: string;
  /** Consumers it exercises: their fact sheets count as drilled. */
  readonly consumers: readonly string[];
}

/** Where the config audit looks for runbooks, and which drills exist. */
export interface ConfigAuditOptions {
  /** @default <project>/runbooks */
  readonly runbooksDir?: string;
  /**
   * The drills (lib/ops/drills/catalog.ts: DRILL_CATALOG, run by test/drills and `tenang drill`).
   * Handed in by the caller: the audit sits below the operator code that defines them.
   */
  readonly drills: readonly AuditedDrill[];
}

/** A rule over the pipeline config. */
interface ConfigRule {
  readonly ruleId: string;
  readonly featureId: string;
  readonly title: string;
  readonly level: AuditLevel;
  readonly check: (config: PipelineConfig, dirs: Required<ConfigAuditOptions>) => ItemFinding[];
}

/** Every consumer (job type or stream consumer) with its config path. */
function consumers(
  config: PipelineConfig,
): { at: string; name: string; consumer: string; owner: string; runbook: string }[] {
  return [
    ...config.jobTypes.map((j, i) => ({
      at: `jobTypes[${i}]`,
      name: j.name,
      consumer: j.consumer,
      owner: j.owner,
      runbook: j.runbook,
    })),
    ...config.streamConsumers.map((s, i) => ({
      at: `streamConsumers[${i}]`,
      name: s.consumer,
      consumer: s.consumer,
      owner: s.owner,
      runbook: s.runbook,
    })),
  ];
}

/** Every runbook the pipeline's alarms and consumers name, with who names it. */
function runbooks(config: PipelineConfig): Map<string, string> {
  const named = new Map<string, string>(Object.values(RUNBOOK).map((r) => [r, 'alarms']));
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
        const file = path.join(dirs.runbooksDir, `${runbook}.md`);
        const ok = fs.existsSync(file);
        return {
          resource: by,
          compliant: ok,
          why: `runbooks/${runbook}.md ${ok ? 'exists' : `does not exist (named by ${by})`}`,
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
      for (const c of consumers(config))
        for (const d of dirs.drills)
          if (d.consumers.includes(c.consumer) && d.runbook !== c.runbook) add(c.runbook, d.name);
      return [...runbooks(config)].map(([runbook, by]) => {
        const drills = byRunbook.get(runbook) ?? [];
        return {
          resource: by,
          compliant: drills.length > 0,
          why: `runbooks/${runbook}.md ${drills.length > 0 ? `is drilled by ${[...new Set(drills)].join(', ')}` : 'has no drill'}`,
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
  const dirs: Required<ConfigAuditOptions> = {
    runbooksDir: options.runbooksDir ?? path.join(PROJECT_ROOT, 'runbooks'),
    drills: options.drills,
  };
  return CONFIG_RULES.map((rule) => checklistItem(rule, rule.check(config, dirs)));
}
