import type { Template } from 'aws-cdk-lib/assertions';
import { logicalId, resources, resourceTypes, synthPipeline } from './helpers';

/** Names that announce a secret. */
const SECRET_NAME = /SECRET|PASSWORD|PASSWD|TOKEN|API_KEY|PRIVATE_KEY|CREDENTIAL/i;
/** Literal values that look like one: AWS keys, PEM keys, credentials in a URL, "password=…", long opaque strings. */
const SECRET_VALUE = [
  /\b(AKIA|ASIA)[A-Z0-9]{16}\b/,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----/,
  /:\/\/[^/\s:@]+:[^/\s@]+@/,
  /(password|passwd|secret|token|api[_-]?key)\s*[=:]/i,
  /^(?=.*[0-9])(?=.*[a-z])(?=.*[A-Z])[A-Za-z0-9+/=_-]{32,}$/,
];

/** Every literal string inside a CloudFormation value (intrinsics' own names and references excluded). */
function literals(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(literals);
  if (typeof value === 'object' && value !== null) {
    const v = value as Record<string, unknown>;
    if ('Ref' in v || 'Fn::GetAtt' in v) return [];
    return Object.values(v).flatMap(literals);
  }
  return [];
}

/** Function name → its environment variables. */
function environments(template: Template): Map<string, Record<string, unknown>> {
  return new Map(
    resources(template, 'AWS::Lambda::Function').map(([, fn]) => [
      String(fn.Properties.FunctionName),
      (fn.Properties.Environment as { Variables: Record<string, unknown> } | undefined)?.Variables ?? {},
    ]),
  );
}

describe('Class: PipelineStack', () => {
  // Both targets synthesized once for the whole file.
  let aws: ReturnType<typeof synthPipeline>;
  let emulator: ReturnType<typeof synthPipeline>;
  beforeAll(() => {
    aws = synthPipeline('aws');
    emulator = synthPipeline('emulator');
  });

  describe('Deploy readiness', () => {
    /** Properties that give a resource of these types a fixed physical name. */
    const NAME_PROPERTIES = ['TableName', 'LogGroupName', 'QueueName', 'TopicName', 'FunctionName', 'Name'];

    it.each(['aws', 'emulator'] as const)(
      'when the target is %s, no retained resource has a fixed name unless it is deleted when its own create fails',
      (target) => {
        // A failed first create would otherwise keep the named table or log group, and every
        // retry of the deploy would stop on "already exists".
        const template = target === 'aws' ? aws.template : emulator.template;
        const all = template.toJSON().Resources as Record<string, Record<string, unknown>>;

        // Act
        const named = Object.entries(all).filter(([, r]) =>
          NAME_PROPERTIES.some(
            (p) => (r.Properties as Record<string, unknown> | undefined)?.[p] !== undefined,
          ),
        );
        const retainedOnCreate = named.filter(([, r]) => r.DeletionPolicy === 'Retain').map(([id]) => id);
        const kept = named.filter(([, r]) => r.DeletionPolicy === 'RetainExceptOnCreate').map(([id]) => id);

        // Assess
        expect(retainedOnCreate).toEqual([]);
        // The tables and every function's log group hold data: they are kept on delete.
        expect(kept.length).toBeGreaterThanOrEqual(
          resources(template, 'AWS::DynamoDB::Table').length +
            resources(template, 'AWS::Lambda::Function').length,
        );
      },
    );
  });

  describe('Functions', () => {
    it('when synthesized, only the cache users run in the VPC: cache-invalidator, order-reader and cache-admin', () => {
      // Act
      const functions = resources(aws.template, 'AWS::Lambda::Function').map(([, fn]) => ({
        name: String(fn.Properties.FunctionName),
        inVpc: fn.Properties.VpcConfig !== undefined,
      }));

      // Assess
      expect(functions).toHaveLength(9);
      expect(
        functions
          .filter((f) => f.inVpc)
          .map((f) => f.name)
          .sort(),
      ).toEqual(['tenang-dev-cache-admin', 'tenang-dev-cache-invalidator', 'tenang-dev-order-reader']);
    });

    it('when synthesized, the VPC functions run in the isolated subnets behind the cache client security group', () => {
      // Prepare
      const { cache } = aws.stack;
      const expected = {
        SubnetIds: cache.vpc.isolatedSubnets.map((s) => ({ Ref: logicalId(s) })),
        SecurityGroupIds: [{ 'Fn::GetAtt': [logicalId(cache.clientSecurityGroup), 'GroupId'] }],
      };

      // Act
      const placements = resources(aws.template, 'AWS::Lambda::Function')
        .map(([, fn]) => fn.Properties.VpcConfig)
        .filter((v) => v !== undefined);

      // Assess
      expect(placements).toEqual([expected, expected, expected]);
    });

    it('when synthesized, no function environment holds anything that looks like a secret', () => {
      // Act
      const suspicious = [...environments(aws.template)].flatMap(([fn, variables]) =>
        Object.entries(variables)
          .filter(
            ([name, value]) =>
              SECRET_NAME.test(name) || literals(value).some((l) => SECRET_VALUE.some((p) => p.test(l))),
          )
          .map(([name]) => `${fn}: ${name}`),
      );

      // Assess
      expect(environments(aws.template).size).toBe(9);
      expect(suspicious).toEqual([]);
    });

    it('when synthesized, the cache functions authenticate to the cache with IAM, not a password', () => {
      // Act
      const env = environments(aws.template);

      // Assess
      for (const fn of [
        'tenang-dev-cache-invalidator',
        'tenang-dev-order-reader',
        'tenang-dev-cache-admin',
      ]) {
        expect(env.get(fn)).toMatchObject({
          CACHE_AUTH: 'iam',
          CACHE_TLS: 'true',
          CACHE_USER: 'tenang-dev-app',
        });
      }
    });
  });

  describe('Targets', () => {
    it('when the target is aws, every event source mapping starts enabled', () => {
      // Act
      const enabled = resources(aws.template, 'AWS::Lambda::EventSourceMapping').map(
        ([, m]) => m.Properties.Enabled,
      );

      // Assess
      expect(enabled).toEqual([true, true, true, true, true]);
    });

    it('when the target is the emulator, every event source mapping starts disabled', () => {
      // Act
      const enabled = resources(emulator.template, 'AWS::Lambda::EventSourceMapping').map(
        ([, m]) => m.Properties.Enabled,
      );

      // Assess
      expect(enabled).toEqual([false, false, false, false, false]);
    });

    it('when the target is the emulator, it creates no ElastiCache resource', () => {
      // Act
      const elastiCache = resourceTypes(emulator.template).filter((t) => t.startsWith('AWS::ElastiCache::'));

      // Assess
      expect(elastiCache).toEqual([]);
      expect(
        resourceTypes(aws.template)
          .filter((t) => t.startsWith('AWS::ElastiCache::'))
          .sort(),
      ).toEqual([
        'AWS::ElastiCache::ServerlessCache',
        'AWS::ElastiCache::User',
        'AWS::ElastiCache::User',
        'AWS::ElastiCache::UserGroup',
      ]);
    });

    it('when the target is the emulator, the cache functions connect without auth and get no Connect grant', () => {
      // Act
      const env = environments(emulator.template);
      const connect = JSON.stringify(emulator.template.findResources('AWS::IAM::Policy')).includes(
        'elasticache:',
      );

      // Assess
      expect(env.get('tenang-dev-order-reader')).toMatchObject({ CACHE_AUTH: 'none' });
      expect(env.get('tenang-dev-cache-invalidator')).toMatchObject({ CACHE_AUTH: 'none' });
      expect(connect).toBe(false);
    });

    it('when the target is the emulator, everything else is the same as on aws', () => {
      // Act
      // The cache's resources, including the password of its switched-off "default" user.
      const withoutCache = (template: Template): string[] =>
        resourceTypes(template)
          .filter((t) => !t.startsWith('AWS::ElastiCache::') && t !== 'AWS::SecretsManager::Secret')
          .sort();

      // Assess
      expect(withoutCache(emulator.template)).toEqual(withoutCache(aws.template));
    });
  });

  describe('Outputs', () => {
    it('when synthesized, it outputs the API endpoint', () => {
      // Act
      const outputs = aws.template.findOutputs('ApiUrl');

      // Assess
      expect(outputs).toEqual({
        ApiUrl: { Value: { 'Fn::GetAtt': [logicalId(aws.ingress.api), 'ApiEndpoint'] } },
      });
    });
  });
});
