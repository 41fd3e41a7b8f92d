/** The audit checklist shared by the template audit, the config audit and `tenang audit`. */

/**
 * A rule's verdict. `not-checkable`: the source audited cannot show the fact (e.g. a live
 * account cannot tell an explicit setting from a default); said so rather than passed.
 */
export type AuditStatus = 'pass' | 'fail' | 'not-applicable' | 'not-checkable';

/**
 * How a rule's failure counts: an `error` fails the audit (exit 1); a `warning` is reported but
 * does not fail it (a control the project does not have yet).
 */
export type RuleLevel = 'error' | 'warning';

/**
 * A verdict's level: a failing (or passing, or not-applicable) rule's own level; `note` for a
 * not-checkable verdict, which fails nothing and asks the user to audit what the input lacks
 * (SARIF's `note`).
 */
export type AuditLevel = RuleLevel | 'note';

/** The level of a verdict of a rule of `ruleLevel`: a not-checkable verdict is a note. */
export function verdictLevel(status: AuditStatus, ruleLevel: RuleLevel): AuditLevel {
  return status === 'not-checkable' ? 'note' : ruleLevel;
}

/** One line of the checklist. */
export interface ChecklistItem {
  /** e.g. `Tenang-D2`. */
  readonly ruleId: string;
  /** The feature id the rule proves (docs/features.md), e.g. `D2`. */
  readonly featureId: string;
  readonly title: string;
  readonly status: AuditStatus;
  /** The verdict's level (verdictLevel): `note` when not-checkable, else the rule's. */
  readonly level: AuditLevel;
  /**
   * The rule's own level, when the verdict's differs (a not-checkable verdict): what a failure
   * of the rule would count as (SARIF's rule configuration).
   * @default - the same as level
   */
  readonly ruleLevel?: RuleLevel;
  /** Why, one reason per failing (or, when passing, checked) resource. */
  readonly why: string;
  /**
   * Logical ids (template rules), deployed resources (live rules, e.g. `queue <name>`) or config
   * paths (config rules): the failing ones on a fail.
   */
  readonly resources: readonly string[];
}

/** One finding that goes into a checklist item. */
export interface ItemFinding {
  readonly resource: string;
  readonly compliant: boolean;
  readonly why: string;
  /** `false`: the input cannot show the fact (e.g. a reference into a stack not given); not a pass. */
  readonly checkable?: boolean;
}

/** A failing or not-checkable finding with where it is: what SARIF and markdown reports list. */
export interface AuditFinding {
  readonly ruleId: string;
  readonly featureId: string;
  /** A failing finding's rule level; `note` for a not-checkable one. */
  readonly level: AuditLevel;
  readonly status: 'fail' | 'not-checkable';
  /** The resource as the user wrote it, e.g. `Queue`, `MyFunction (event MySQSEvent)`, `Stack/Queue`. */
  readonly resource: string;
  /** The stack it is in, when the input has more than one. */
  readonly stack?: string;
  /** The template file it is in, and its 1-based line there, when known. */
  readonly file?: string;
  readonly line?: number;
  readonly why: string;
}

/**
 * Folds a rule's findings into one checklist line: any failure fails it, else any not-checkable
 * finding makes it not-checkable; no finding is not-applicable.
 */
export function checklistItem(
  rule: {
    readonly ruleId: string;
    readonly featureId: string;
    readonly title: string;
    readonly level?: RuleLevel;
  },
  findings: readonly ItemFinding[],
): ChecklistItem {
  const failing = findings.filter((f) => !f.compliant);
  const unknown = findings.filter((f) => f.compliant && f.checkable === false);
  const shown = failing.length > 0 ? failing : unknown.length > 0 ? unknown : findings;
  const status: AuditStatus =
    findings.length === 0
      ? 'not-applicable'
      : failing.length > 0
        ? 'fail'
        : unknown.length > 0
          ? 'not-checkable'
          : 'pass';
  return {
    ruleId: rule.ruleId,
    featureId: rule.featureId,
    title: rule.title,
    ...levels(status, rule.level ?? 'error'),
    status,
    why: findings.length === 0 ? 'nothing in scope' : shown.map((f) => f.why).join('; '),
    resources: [...new Set(shown.map((f) => f.resource))],
  };
}

/** An item's `level` (and `ruleLevel` when they differ) for a verdict of a rule of `ruleLevel`. */
export function levels(
  status: AuditStatus,
  ruleLevel: RuleLevel,
): { level: AuditLevel; ruleLevel?: RuleLevel } {
  const level = verdictLevel(status, ruleLevel);
  return level === ruleLevel ? { level } : { level, ruleLevel };
}

/** Whether a checklist fails the audit: an error-level rule failed (never a not-checkable one, a note). */
export function auditFailed(items: readonly ChecklistItem[]): boolean {
  return items.some((i) => i.status === 'fail' && i.level === 'error');
}
