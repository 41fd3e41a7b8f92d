import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as elasticache from 'aws-cdk-lib/aws-elasticache';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Cache } from '../../lib/infra/cache';
import {
  actionsOf,
  getAtt,
  logicalId,
  onlyResource,
  propertiesOf,
  propsErrorOf,
  ref,
  resources,
  resourceTypes,
  resourcesOf,
  statementsOfRole,
  testStack,
  toText,
} from './helpers';

/** The serverless cache of a managed Cache. */
function serverlessCache(cache: Cache): elasticache.CfnServerlessCache {
  if (cache.serverlessCache === undefined) throw new Error('the cache is not managed');
  return cache.serverlessCache;
}

/** The IAM-authenticated app user of a managed Cache. */
function appUser(cache: Cache): elasticache.CfnUser {
  if (cache.user === undefined) throw new Error('the cache is not managed');
  return cache.user;
}

/** The cache's own security group (not exposed: only the client group is). */
function cacheSecurityGroup(cache: Cache): ec2.ISecurityGroup {
  return cache.node.findChild('CacheSecurityGroup') as ec2.ISecurityGroup;
}

describe('Class: Cache', () => {
  // One managed cache, and a role that was granted Connect.
  let cache: Cache;
  let grantee: iam.Role;
  let template: Template;
  beforeAll(() => {
    const stack = testStack();
    cache = new Cache(stack, 'Cache', { stageName: 'dev' });
    grantee = new iam.Role(stack, 'Grantee', { assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com') });
    cache.grantConnect(grantee);
    template = Template.fromStack(stack);
  });
  const connectStatements = (): Record<string, unknown>[] =>
    statementsOfRole(template, logicalId(grantee)).filter((s) =>
      actionsOf(s).includes('elasticache:Connect'),
    );

  describe('Network', () => {
    it('when built, its VPC has only isolated subnets: no public subnet, internet gateway or NAT gateway', () => {
      // Act
      const subnets = resources(template, 'AWS::EC2::Subnet');

      // Assess
      expect(subnets).toHaveLength(2);
      for (const [, subnet] of subnets) {
        expect(subnet.Properties.MapPublicIpOnLaunch).toBe(false);
        expect(subnet.Properties.Tags).toContainEqual({ Key: 'aws-cdk:subnet-type', Value: 'Isolated' });
      }
      expect(cache.vpc.publicSubnets).toHaveLength(0);
      expect(cache.vpc.privateSubnets).toHaveLength(0);
      template.resourceCountIs('AWS::EC2::NatGateway', 0);
      template.resourceCountIs('AWS::EC2::InternetGateway', 0);
      template.resourceCountIs('AWS::EC2::EIP', 0);
    });

    it('when built, its VPC reaches DynamoDB through a gateway endpoint on the isolated route tables', () => {
      // Act
      const [, endpoint] = onlyResource(template, 'AWS::EC2::VPCEndpoint', {});

      // Assess
      expect(endpoint.Properties).toMatchObject({ VpcEndpointType: 'Gateway', VpcId: ref(cache.vpc) });
      expect(toText(endpoint.Properties.ServiceName)).toBe('com.amazonaws.${AWS::Region}.dynamodb');
      expect(endpoint.Properties.RouteTableIds).toEqual(
        cache.vpc.isolatedSubnets.map((s) => ({ Ref: logicalId(s.node.findChild('RouteTable')) })),
      );
    });

    it('when built, its VPC has flow logs', () => {
      // Act
      const [, flowLog] = onlyResource(template, 'AWS::EC2::FlowLog', {});

      // Assess
      expect(flowLog.Properties).toMatchObject({ ResourceType: 'VPC', ResourceId: ref(cache.vpc) });
    });

    it('when built, the cache security group admits only the client security group, on 6379–6380', () => {
      // Prepare
      const sg = cacheSecurityGroup(cache);

      // Act
      const inline = propertiesOf(template, sg).SecurityGroupIngress;
      const ingress = resources(template, 'AWS::EC2::SecurityGroupIngress', {
        Properties: { GroupId: getAtt(sg, 'GroupId') },
      });

      // Assess
      expect(inline).toBeUndefined();
      expect(ingress.map(([, r]) => r.Properties)).toEqual([
        {
          GroupId: getAtt(sg, 'GroupId'),
          SourceSecurityGroupId: getAtt(cache.clientSecurityGroup, 'GroupId'),
          IpProtocol: 'tcp',
          FromPort: 6379,
          ToPort: 6380,
          Description: 'Valkey from cache clients',
        },
      ]);
    });

    it('when built, the client security group may reach only the cache on 6379–6380 and HTTPS', () => {
      // Prepare
      const client = cache.clientSecurityGroup;

      // Act
      const inline = propertiesOf(template, client).SecurityGroupEgress;
      const egress = resources(template, 'AWS::EC2::SecurityGroupEgress', {
        Properties: { GroupId: getAtt(client, 'GroupId') },
      });

      // Assess
      expect(inline).toEqual([
        {
          CidrIp: '0.0.0.0/0',
          IpProtocol: 'tcp',
          FromPort: 443,
          ToPort: 443,
          Description: 'DynamoDB gateway endpoint',
        },
      ]);
      expect(egress.map(([, r]) => r.Properties)).toEqual([
        {
          GroupId: getAtt(client, 'GroupId'),
          DestinationSecurityGroupId: getAtt(cacheSecurityGroup(cache), 'GroupId'),
          IpProtocol: 'tcp',
          FromPort: 6379,
          ToPort: 6380,
          Description: 'Valkey',
        },
      ]);
    });

    it('when built, the function placement is the isolated subnets with the client security group', () => {
      // Act
      const placement = cache.functionPlacement;

      // Assess
      expect(placement.vpc).toBe(cache.vpc);
      expect(placement.securityGroups).toEqual([cache.clientSecurityGroup]);
      expect(cache.vpc.selectSubnets(placement.subnets).subnets).toEqual(cache.vpc.isolatedSubnets);
    });
  });

  describe('Serverless cache', () => {
    it('when built, it creates a Valkey serverless cache in the isolated subnets behind the cache security group', () => {
      // Act
      const [, serverless] = onlyResource(template, 'AWS::ElastiCache::ServerlessCache', {});

      // Assess
      expect(serverless.Properties).toMatchObject({
        ServerlessCacheName: 'tenang-dev',
        Engine: 'valkey',
        MajorEngineVersion: '8',
        SubnetIds: cache.vpc.isolatedSubnets.map((s) => ref(s)),
        SecurityGroupIds: [getAtt(cacheSecurityGroup(cache), 'GroupId')],
        UserGroupId: 'tenang-dev-users',
      });
    });

    it('when built, the app user authenticates with IAM and the group holds it and a disabled "default" user', () => {
      // Act
      const [, appUser] = onlyResource(template, 'AWS::ElastiCache::User', {
        Properties: { AuthenticationMode: { Type: 'iam' } },
      });
      const [, defaultUser] = onlyResource(template, 'AWS::ElastiCache::User', {
        Properties: { UserName: 'default' },
      });
      const [, group] = onlyResource(template, 'AWS::ElastiCache::UserGroup', {});

      // Assess
      // IAM authentication requires the user name to equal the user id.
      expect(appUser.Properties.UserName).toBe(appUser.Properties.UserId);
      expect(appUser.Properties.Passwords).toBeUndefined();
      expect(defaultUser.Properties.AccessString).toMatch(/^off /);
      expect(group.Properties.UserIds).toEqual([appUser.Properties.UserId, defaultUser.Properties.UserId]);
    });

    it('when built, every user of the Valkey group has an authentication mechanism (password or IAM), none is password-less', () => {
      // ElastiCache RBAC: "A user group configured for the VALKEY engine can only contain users
      // who are using an authentication mechanism (either password or IAM)".
      const [, group] = onlyResource(template, 'AWS::ElastiCache::UserGroup', {});
      const users = Object.values(template.findResources('AWS::ElastiCache::User')) as {
        Properties: Record<string, unknown>;
      }[];
      expect(group.Properties.Engine).toBe('valkey');
      expect(users.length).toBe((group.Properties.UserIds as unknown[]).length);
      for (const user of users) {
        expect(user.Properties.NoPasswordRequired).not.toBe(true);
        expect(['iam', 'password']).toContain(
          (user.Properties.AuthenticationMode as { Type?: string } | undefined)?.Type,
        );
      }
    });

    it('when built, the disabled "default" user\'s password comes from Secrets Manager by dynamic reference, not the template', () => {
      const [, defaultUser] = onlyResource(template, 'AWS::ElastiCache::User', {
        Properties: { UserName: 'default' },
      });
      const passwords = JSON.stringify(
        (defaultUser.Properties.AuthenticationMode as { Passwords: unknown }).Passwords,
      );
      expect(passwords).toContain('{{resolve:secretsmanager:');
      expect(Object.keys(template.findResources('AWS::SecretsManager::Secret'))).toHaveLength(1);
    });

    it('when built, its connection environment names the endpoint, the IAM user and TLS, and no secret', () => {
      // Act
      const env = Stack.of(cache).resolve(cache.connectionEnvironment) as Record<string, unknown>;

      // Assess
      expect(env).toEqual({
        CACHE_HOST: getAtt(serverlessCache(cache), 'Endpoint.Address'),
        CACHE_PORT: getAtt(serverlessCache(cache), 'Endpoint.Port'),
        CACHE_NAME: 'tenang-dev',
        CACHE_USER: 'tenang-dev-app',
        CACHE_TLS: 'true',
        CACHE_AUTH: 'iam',
      });
    });
  });

  describe('Method: grantConnect', () => {
    it('when a principal is granted, it may elasticache:Connect on exactly the cache and the app user, no wildcard', () => {
      // Act
      const statements = connectStatements();

      // Assess
      expect(statements).toHaveLength(1);
      const [statement] = statements;
      expect(statement).toMatchObject({ Effect: 'Allow', Action: 'elasticache:Connect' });
      const targets = resourcesOf(statement ?? {});
      expect(targets).toHaveLength(2);
      expect(targets[0]).toEqual(getAtt(serverlessCache(cache), 'ARN'));
      // The app user, by its Arn attribute or by an ARN ending in its id.
      const userArn = toText(targets[1]);
      expect(userArn === `\${${logicalId(appUser(cache))}.Arn}` || userArn.endsWith('tenang-dev-app')).toBe(
        true,
      );
      expect(targets.map(toText).some((t) => t.includes('*'))).toBe(false);
    });

    it('when a principal is granted, the user resource is an ElastiCache user ARN (…:user:<user id>)', () => {
      // Act
      const [statement] = connectStatements();

      // Assess
      // ElastiCache ARNs separate the resource type with a colon: a ".../user/<id>" ARN matches no
      // user, so IAM would deny every connection. The user's Arn attribute is right too.
      const userArn = toText(resourcesOf(statement ?? {})[1]);
      expect([
        `\${${logicalId(appUser(cache))}.Arn}`,
        'arn:${AWS::Partition}:elasticache:${AWS::Region}:${AWS::AccountId}:user:tenang-dev-app',
      ]).toContain(userArn);
    });

    it('when the cache is not managed, granting adds no policy', () => {
      // Prepare
      const stack = testStack();
      const unmanaged = new Cache(stack, 'Cache', { stageName: 'dev', managed: false });
      const role = new iam.Role(stack, 'Grantee', {
        assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      });

      // Act
      const grant = unmanaged.grantConnect(role);

      // Assess
      expect(grant.success).toBe(false);
      expect(statementsOfRole(Template.fromStack(stack), logicalId(role))).toEqual([]);
    });
  });

  describe('Unmanaged (emulator target)', () => {
    it('when managed is false, it creates no ElastiCache resource and connects without auth', () => {
      // Prepare
      const stack = testStack();

      // Act
      const unmanaged = new Cache(stack, 'Cache', { stageName: 'dev', managed: false });

      // Assess
      const types = resourceTypes(Template.fromStack(stack));
      expect(types.filter((t) => t.startsWith('AWS::ElastiCache::'))).toEqual([]);
      expect(types).toContain('AWS::EC2::VPC');
      expect(unmanaged.serverlessCache).toBeUndefined();
      expect(unmanaged.user).toBeUndefined();
      expect(unmanaged.connectionEnvironment).toEqual({ CACHE_NAME: 'tenang-dev', CACHE_AUTH: 'none' });
    });
  });

  describe('Validation', () => {
    it.each([1, 5])('when maxAzs is %i, it fails: 2 or 3 only', (maxAzs) => {
      // Act
      const error = propsErrorOf(() => new Cache(testStack(), 'Cache', { stageName: 'dev', maxAzs }));

      // Assess
      expect(error.message).toMatch(/^Invalid props for Cache/);
      expect(error.problems).toEqual(['maxAzs must be 2 or 3']);
    });
  });
});
