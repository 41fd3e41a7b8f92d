import { Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { TENANG_RULE_FEATURES, TenangChecks } from '../../../lib/audit/tenang-checks';
import { auditTemplate } from '../../../lib/audit/template-audit';
import { synthPipeline, testStack } from '../helpers';
import { BAD_VARIANTS, workerQueueStack } from './bad-stacks';
import type { IConstruct } from 'constructs';

/** The Tenang rule ids the pack reports on a construct tree. */
function tenangFindings(scope: IConstruct): string[] {
  return new TenangChecks()
    .validateScope(scope)
    .violations.map((v) => v.ruleName)
    .sort();
}

/** The rule ids auditTemplate fails on a template. */
function failingRules(template: unknown): string[] {
  return auditTemplate(template)
    .filter((i) => i.status === 'fail')
    .map((i) => i.ruleId)
    .sort();
}

describe('Class: TenangChecks', () => {
  describe('Method: validateScope', () => {
    it.each(['aws', 'emulator'] as const)(
      'when run on the project stack (%s target), it reports no Tenang finding',
      (target) => {
        // Prepare
        const { stack } = synthPipeline(target);

        // Act
        const findings = tenangFindings(stack);

        // Assess
        expect(findings).toEqual([]);
      },
    );

    it('when run on a compliant worker-queue stack, it reports no finding', () => {
      // Prepare
      const stack = workerQueueStack(testStack());

      // Act
      const findings = tenangFindings(stack);

      // Assess
      expect(findings).toEqual([]);
    });

    it.each(BAD_VARIANTS)('when the stack has %s, it fails exactly that rule', (_name, flaws, rule) => {
      // Prepare
      const stack = workerQueueStack(testStack(), flaws);

      // Act
      const findings = tenangFindings(stack);

      // Assess
      expect(findings).toEqual([rule]);
    });

    it('when the queue feeds a function with a short visibility timeout, the finding names the queue and why', () => {
      // Prepare
      const stack = workerQueueStack(testStack(), { visibilitySeconds: 30 });

      // Act
      const report = new TenangChecks().validateScope(stack);

      // Assess
      expect(report.success).toBe(false);
      expect(report.violations).toHaveLength(1);
      const [violation] = report.violations;
      expect(violation?.violatingResources.map((r) => r.constructPath)).toEqual(['Test/Queue/Resource']);
      expect(violation?.description).toMatch(
        /visibility timeout 30 s < 6 × .* timeout 10 s \+ batching window 0 s = 60 s: set /,
      );
    });

    it('when a finding is acknowledged on the construct, it is not reported', () => {
      // Prepare
      const stack = workerQueueStack(testStack(), { lockTtl: false });
      Validations.of(stack.node.findChild('Locks')).acknowledge({
        id: 'Tenang-L1',
        reason: 'test: locks expire through a sweeper',
      });

      // Act
      const findings = tenangFindings(stack);

      // Assess
      expect(findings).toEqual([]);
    });

    it('when listing its rules, every rule maps to a feature id (docs/features.md)', () => {
      // Act
      const features = Object.entries(TENANG_RULE_FEATURES);

      // Assess
      expect(features.length).toBeGreaterThanOrEqual(10);
      for (const [rule, feature] of features) {
        expect(rule).toMatch(/^Tenang-[A-Z]\d/);
        expect(feature).toMatch(/^[A-Z]\d$/);
        expect(rule.startsWith(`Tenang-${feature}`)).toBe(true);
      }
    });
  });
});

describe('Function: auditTemplate agrees with TenangChecks', () => {
  it('when given the project template, every rule passes', () => {
    // Prepare
    const { template } = synthPipeline();

    // Act
    const items = auditTemplate(template.toJSON());

    // Assess: the pack's rules pass; the threshold rule needs the config's objectives.
    expect(items.filter((i) => i.ruleId in TENANG_RULE_FEATURES).map((i) => [i.ruleId, i.status])).toEqual(
      Object.keys(TENANG_RULE_FEATURES).map((id) => [id, 'pass']),
    );
    expect(items.filter((i) => !(i.ruleId in TENANG_RULE_FEATURES)).map((i) => [i.ruleId, i.status])).toEqual(
      [['Tenang-O3-QueueAgeThreshold', 'not-applicable']],
    );
  });

  it.each(BAD_VARIANTS)('when the template has %s, both fail the same rule', (_name, flaws) => {
    // Prepare
    const stack = workerQueueStack(testStack(), flaws);

    // Act
    const fromTemplate = failingRules(Template.fromStack(stack).toJSON());
    const fromPack = tenangFindings(stack);

    // Assess
    expect(fromTemplate).toEqual(fromPack);
  });
});
