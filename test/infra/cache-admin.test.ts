/**
 * The cache-admin function (lib/infra/cache-admin.ts) in the reference's full stack: where it
 * runs (the cache's subnets, with the client security group the cache admits), what it is told
 * (the cache variables and the tables of the declared cached entities, stage.cache.entities: the
 * reference's orders) and what it may do (exactly what the operations use: elasticache:Connect as
 * the app user, GetItem on those tables and no other).
 */
import type { Template } from 'aws-cdk-lib/assertions';
import type { PipelineInput } from '../../lib/config';
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
  referenceDeclaration,
  synthPipeline,
  toText,
} from './helpers';

/** The reference declaration with `entities` as its cached entities. */
function withEntities(entities: NonNullable<PipelineInput['stage']['cache']['entities']>): PipelineInput {
  const declaration = referenceDeclaration('dev');
  return { ...declaration, stage: { ...declaration.stage, cache: { ...declaration.stage.cache, entities } } };
}

/** The DynamoDB actions of the cache-admin function's role and the tables they are on. */
function dynamoGrants(stack: PipelineStack, template: Template): { actions: string[]; tables: string[] } {
  const dynamo = statementsOfRole(template, roleIdOf(stack.cacheAdmin.function.function)).filter((s) =>
    actionsOf(s).some((a) => a.startsWith('dynamodb:')),
  );
  return {
    actions: [...new Set(dynamo.flatMap(actionsOf))].sort(),
    tables: dynamo.flatMap(resourcesOf).map(toText).sort(),
  };
}

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

  it("when the pipeline is built, it gets the cache variables the consumers get and each cached entity's table as <NAME>_TABLE", () => {
    // Act
    const variables = (propertiesOf(template, fn()).Environment as { Variables: Record<string, unknown> })
      .Variables;

    // Assess
    for (const [name, value] of Object.entries(stack.cache.connectionEnvironment)) {
      expect(toText(variables[name])).toBe(toText(stack.resolve(value)));
    }
    expect(variables.TENANG_STAGE).toBe('dev');
    expect(variables.ORDERS_TABLE).toEqual(stack.resolve(stack.tables.byName('orders').tableName));
    expect(Object.keys(variables).filter((v) => v.endsWith('_TABLE'))).toEqual(['ORDERS_TABLE']);
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

  it('when the declaration caches no entity, it reads no table and is given none', () => {
    // Act
    const { stack: bare, template: bareTemplate } = synthPipeline('aws', withEntities([]));
    const variables = (
      propertiesOf(bareTemplate, bare.cacheAdmin.function.function).Environment as {
        Variables: Record<string, unknown>;
      }
    ).Variables;

    // Assess
    expect(dynamoGrants(bare, bareTemplate)).toEqual({ actions: [], tables: [] });
    expect(Object.keys(variables).filter((v) => v.endsWith('_TABLE'))).toEqual([]);
  });

  it('when the declaration caches entities of two tables, it may GetItem on those two only', () => {
    // Prepare: the reference's inventory table holds a version too; a stock entity is declared on it.
    const declaration = referenceDeclaration('dev');
    const inventory = (declaration.tables ?? []).find((t) => t.name === 'inventory');
    if (inventory === undefined) throw new Error('the reference declares an inventory table');
    const entities = [
      ...(declaration.stage.cache.entities ?? []),
      { name: 'stock', table: 'inventory', key: inventory.partitionKey, version: 'version' },
    ];

    // Act
    const { stack: two, template: twoTemplate } = synthPipeline('aws', withEntities(entities));

    // Assess
    expect(dynamoGrants(two, twoTemplate)).toEqual({
      actions: ['dynamodb:GetItem'],
      tables: [
        toText(getAtt(two.tables.byName('orders'), 'Arn')),
        toText(getAtt(two.tables.byName('inventory'), 'Arn')),
      ].sort(),
    });
  });
});
