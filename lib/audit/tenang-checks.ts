/**
 * The worker-queue audit as a cdk-nag pack: attach it to any CDK app with
 * `Validations.of(app).addPlugins(new TenangChecks(app))`. Each rule is a pure function of
 * lib/audit/rules.ts, run over the stack's L1 resources as CloudFormation will see them
 * (property overrides included), so the pack and `auditTemplate` always agree.
 */
import { CfnResource, Stack, type PolicyValidationPluginReport } from 'aws-cdk-lib';
import { NagMessageLevel, NagPack, NagRuleCompliance, type NagPackProps } from 'cdk-nag';
import type { IConstruct } from 'constructs';
import {
  RULE_PREFIX,
  TEMPLATE_RULES,
  TemplateIndex,
  ruleId,
  type ResourceFinding,
  type TemplateModel,
  type TemplateResource,
} from './rules';

/** The rule ids of the pack and the feature id (docs/features.md) each proves. */
export const TENANG_RULE_FEATURES: Readonly<Record<string, string>> = Object.fromEntries(
  TEMPLATE_RULES.map((r) => [ruleId(r), r.featureId]),
);

/** A stack's resources as its template will hold them, intrinsics resolved to Ref/GetAtt. */
export function stackTemplateModel(stack: Stack): TemplateModel {
  const resources: Record<string, TemplateResource> = {};
  for (const construct of stack.node.findAll()) {
    if (!CfnResource.isCfnResource(construct) || Stack.of(construct) !== stack) continue;
    // _toCloudFormation applies property overrides, which cfnProperties would miss.
    const rendered = stack.resolve(construct._toCloudFormation()) as {
      Resources?: Record<string, TemplateResource>;
    };
    Object.assign(resources, rendered.Resources ?? {});
  }
  return { Resources: resources };
}

/** Findings per rule id, then per logical id, of one stack. */
type StackFindings = Map<string, Map<string, ResourceFinding[]>>;

/** cdk-nag pack `Tenang`: rule `Tenang-<suffix>` per checklist item (see TENANG_RULE_FEATURES). */
export class TenangChecks extends NagPack {
  public readonly name = RULE_PREFIX;
  public override readonly ruleIds = TEMPLATE_RULES.map(ruleId);
  /** Built once per stack per validation run: the rules look across resources. */
  private findings = new WeakMap<Stack, StackFindings>();

  public constructor(scope?: IConstruct, props?: NagPackProps) {
    super(scope, props);
    this.packName = RULE_PREFIX;
  }

  /** Validates a construct tree, re-reading every stack (it may have changed since the last run). */
  public override validateScope(scope: IConstruct): PolicyValidationPluginReport {
    this.findings = new WeakMap();
    return super.validateScope(scope);
  }

  protected checkResource(node: CfnResource): void {
    const stack = Stack.of(node);
    const byRule = this.stackFindings(stack);
    const logicalId = stack.resolve(node.logicalId) as string;
    for (const rule of TEMPLATE_RULES) {
      const mine = byRule.get(ruleId(rule))?.get(logicalId) ?? [];
      const failing = mine.filter((f) => !f.compliant);
      this.applyRule({
        ruleSuffixOverride: rule.suffix,
        info: failing.length > 0 ? `${rule.title} ${failing.map((f) => f.why).join('; ')}` : rule.title,
        explanation: `${rule.explanation} (feature ${rule.featureId}, docs/features.md#${rule.featureId.toLowerCase()})`,
        level: NagMessageLevel.ERROR,
        node,
        rule: () =>
          mine.length === 0
            ? NagRuleCompliance.NOT_APPLICABLE
            : failing.length > 0
              ? NagRuleCompliance.NON_COMPLIANT
              : NagRuleCompliance.COMPLIANT,
      });
    }
  }

  private stackFindings(stack: Stack): StackFindings {
    const cached = this.findings.get(stack);
    if (cached !== undefined) return cached;
    const index = new TemplateIndex(stackTemplateModel(stack));
    const built: StackFindings = new Map();
    for (const rule of TEMPLATE_RULES) {
      const perResource = new Map<string, ResourceFinding[]>();
      for (const f of rule.check(index))
        perResource.set(f.logicalId, [...(perResource.get(f.logicalId) ?? []), f]);
      built.set(ruleId(rule), perResource);
    }
    this.findings.set(stack, built);
    return built;
  }
}
