/**
 * Tenang-F6-OperatorReach on the synthesized reference app: the cache commands reach the cache
 * through the cache-admin function; a template without it, or with it misplaced, fails naming
 * the commands that lose their path.
 */
import { operatorReach } from '../../../lib/audit/operator-reach';
import { TemplateIndex, type TemplateModel, type TemplateResource } from '../../../lib/audit/rules';
import { logicalId, synthPipeline } from '../helpers';

type Resources = Record<string, TemplateResource>;

describe('Rule: F6-OperatorReach', () => {
  let resources: Resources;
  let adminId: string;
  let adminRoleId: string;
  beforeAll(() => {
    const { stack, template } = synthPipeline();
    resources = (template.toJSON() as TemplateModel).Resources as Resources;
    adminId = logicalId(stack.cacheAdmin.function.function);
    adminRoleId = logicalId(stack.cacheAdmin.function.function.role as never);
  });
  const check = (r: Resources): ReturnType<typeof operatorReach.check> =>
    operatorReach.check(new TemplateIndex({ Resources: r }));
  const clone = (): Resources => JSON.parse(JSON.stringify(resources)) as Resources;

  it('when the synthesized app is checked, the cache commands reach the cache through the cache-admin function', () => {
    // Act
    const findings = check(resources);

    // Assess
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ compliant: true });
    expect(findings[0]?.why).toContain(adminId);
  });

  it('when the cache-admin function is removed, it fails naming tenang cache invalidate and flush', () => {
    // Prepare
    const without = clone();
    delete without[adminId];

    // Act
    const [finding] = check(without);

    // Assess
    expect(finding?.compliant).toBe(false);
    expect(finding?.why).toContain('`tenang cache invalidate`');
    expect(finding?.why).toContain('`tenang cache flush`');
    expect(finding?.why).toContain('no function of service cache-admin');
  });

  it("when the function's security group is not one the cache admits, it fails saying so", () => {
    // Prepare
    const moved = clone();
    const fn = moved[adminId] as unknown as { Properties: { VpcConfig: { SecurityGroupIds: unknown[] } } };
    fn.Properties.VpcConfig.SecurityGroupIds = [{ 'Fn::GetAtt': ['SomeOtherGroup', 'GroupId'] }];

    // Act
    const [finding] = check(moved);

    // Assess
    expect(finding?.compliant).toBe(false);
    expect(finding?.why).toContain('are not admitted');
  });

  it('when the function is outside any VPC, it fails saying it cannot reach the cache', () => {
    // Prepare
    const outside = clone();
    delete (outside[adminId] as unknown as { Properties: Record<string, unknown> }).Properties.VpcConfig;

    // Act
    const [finding] = check(outside);

    // Assess
    expect(finding?.compliant).toBe(false);
    expect(finding?.why).toContain('is not in a VPC');
  });

  it("when the function's role may not connect to the cache, it fails naming elasticache:Connect", () => {
    // Prepare
    const denied = clone();
    for (const r of Object.values(denied)) {
      const p = r.Properties as { Roles?: unknown[]; PolicyDocument?: { Statement: { Action: unknown }[] } };
      if (r.Type !== 'AWS::IAM::Policy' || !JSON.stringify(p.Roles).includes(adminRoleId)) continue;
      p.PolicyDocument!.Statement = p.PolicyDocument!.Statement.filter(
        (s) => !JSON.stringify(s.Action).includes('elasticache:Connect'),
      );
    }

    // Act
    const [finding] = check(denied);

    // Assess
    expect(finding?.compliant).toBe(false);
    expect(finding?.why).toContain('elasticache:Connect');
  });

  it('when the template has no ElastiCache cache (the emulator target), it applies to nothing', () => {
    // Prepare
    const { template } = synthPipeline('emulator');

    // Act
    const findings = check((template.toJSON() as TemplateModel).Resources as Resources);

    // Assess
    expect(findings).toEqual([]);
  });
});
