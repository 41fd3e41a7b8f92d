/** Runs the template rules over a raw CloudFormation template (JSON), e.g. a synthesized one. */
import { checklistItem, type ChecklistItem } from './checklist';
import { TEMPLATE_RULES, TemplateIndex, ruleId, type TemplateModel, type TemplateResource } from './rules';

/** Raised when the input is not a CloudFormation template with a Resources section. */
export class TemplateFormatError extends Error {
  public constructor(message: string) {
    super(message);
    this.name = 'TemplateFormatError';
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Checks the shape a rule relies on: `Resources` whose entries have a string `Type`. */
export function toTemplateModel(template: unknown): TemplateModel {
  if (!isRecord(template) || !isRecord(template.Resources)) {
    throw new TemplateFormatError('not a CloudFormation template: no Resources object');
  }
  const bad = Object.entries(template.Resources)
    .filter(([, r]) => !isRecord(r) || typeof r.Type !== 'string')
    .map(([id]) => id);
  if (bad.length > 0) throw new TemplateFormatError(`resources without a Type: ${bad.join(', ')}`);
  return { Resources: template.Resources as Record<string, TemplateResource> };
}

/** The checklist for a template: one item per rule, in checklist order. */
export function auditTemplate(template: unknown): ChecklistItem[] {
  const index = new TemplateIndex(toTemplateModel(template));
  return TEMPLATE_RULES.map((rule) =>
    checklistItem(
      { ruleId: ruleId(rule), featureId: rule.featureId, title: rule.title },
      rule.check(index).map((f) => ({ resource: f.logicalId, compliant: f.compliant, why: f.why })),
    ),
  );
}
