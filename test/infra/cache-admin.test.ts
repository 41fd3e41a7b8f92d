/**
 * The cache-admin function (lib/infra/cache-admin.ts) in the reference's full stack: where it
 * runs (the cache's subnets, with the client security group the cache admits), what it is told
 * (the cache variables and the cached entities' table: the one whose stream the cache-using
 * consumer reads, the reference's orders) and what it may do (exactly what the operations use:
 * elasticache:Connect as the app user, GetItem on that table).
 */
import type { Template } from 'aws-cdk-lib/assertions';
import { CACHE_ADMIN_SERVICE } from '../../lib/config/metrics';
import { CACHE_ADMIN_TIMEOUT_SECONDS } from '../../lib/infra/cache-admin';
import type { PipelineStack } from '../../lib/infra/pipeline-stack';
import {
  actionsOf,
  getAtt,
  logicalId,
  propertiesOf,
  resourcesOf,
  roleIdOf,
  statementsOfRole,
  synthPipeline,
  toText,
} from './helpers';

describe('Class: CacheAdmin', () => {
  let stack: PipelineStack;
  let template: Template;
  beforeAll(() => {
    ({ stack, template } = synthPipeline());
  });
  const fn = (): PipelineStack['cacheAdmin']['function']['function'] => stack.cacheAdmin.function.function;
  const statements = (): Record<string, unknown>[] => statementsOfRole(template, roleIdOf(fn()));

  it('when the pipeline is built, it is named <stack>-cache-admin with a timeout for a keyspace scan', () => {
    // Act
    const props = propertiesOf(template, fn());

    // Assess
    expect(props.FunctionName).toBe(`tenang-dev-${CACHE_ADMIN_SERVICE}`);
    expect(props.Timeout).toBe(CACHE_ADMIN_TIMEOUT_SECONDS);
    expect(props.ReservedConcurrentExecutions).toBeUndefined();
  });

  it("when the pipeline is built, it runs in the cache's isolated subnets with the client security group", () => {
    // Act
    const vpc = propertiesOf(template, fn()).VpcConfig as {
      SecurityGroupIds: unknown[];
      SubnetIds: unknown[];
    };

    // Assess
    expect(vpc.SecurityGroupIds).toEqual([getAtt(stack.cache.clientSecurityGroup, 'GroupId')]);
    const isolated = stack.cache.vpc.isolatedSubnets.map((s) => ({ Ref: logicalId(s) }));
    expect(vpc.SubnetIds).toEqual(isolated);
  });

  it('when the pipeline is built, it gets the cache variables the consumers get and, as ENTITY_TABLE, the table whose stream invalidates the cache', () => {
    // Act
    const variables = (propertiesOf(template, fn()).Environment as { Variables: Record<string, unknown> })
      .Variables;

    // Assess
    for (const [name, value] of Object.entries(stack.cache.connectionEnvironment)) {
      expect(toText(variables[name])).toBe(toText(stack.resolve(value)));
    }
    expect(variables.TENANG_STAGE).toBe('dev');
    expect(variables.ENTITY_TABLE).toEqual(stack.resolve(stack.tables.byName('orders').tableName));
  });

  it('when the pipeline is built, it may connect to the cache as the app user and read orders, nothing else of the data', () => {
    // Act
    const actions = statements()
      .flatMap(actionsOf)
      .filter((a) => !/^(logs|xray):/.test(a))
      .sort();
    const dynamo = statements().filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')));
    const connect = statements().filter((s) => actionsOf(s).includes('elasticache:Connect'));

    // Assess
    expect(actions).toEqual(['dynamodb:GetItem', 'elasticache:Connect']);
    expect(dynamo.flatMap(resourcesOf).map(toText)).toEqual([
      toText(getAtt(stack.tables.byName('orders'), 'Arn')),
    ]);
    expect(connect.flatMap(resourcesOf).map(toText).sort()).toEqual(
      [
        toText(getAtt(stack.cache.serverlessCache as never, 'ARN')),
        toText(getAtt(stack.cache.user as never, 'Arn')),
      ].sort(),
    );
  });
});
