/**
 * ElastiCache Serverless for Valkey in the private subnets of its own VPC.
 *
 * Why serverless and not a replication group: no node sizing or failover to operate, TLS in
 * transit and encryption at rest are always on, and it scales with the cache-aside load; the
 * cache is derived data, so its only job is to be fast and to be safe to lose.
 * Authentication is IAM (short-lived SigV4 tokens, `elasticache:Connect`): the app user has no
 * password, so none can leak into a log or an environment variable (the group's switched-off
 * "default" user has one, in Secrets Manager, because Valkey groups admit no password-less user).
 */
import { Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as elasticache from 'aws-cdk-lib/aws-elasticache';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import type { FunctionVpcPlacement } from './tenang-function';
import { validateProps } from './validation';

/** Props of Cache. */
export interface CacheProps {
  /** Stage name, part of the cache and user names. */
  readonly stageName: string;
  /** @default 2 */
  readonly maxAzs?: number;
  /** @default '8' */
  readonly majorEngineVersion?: string;
  /**
   * Whether to create the ElastiCache resources; the emulator target has none (see target.ts)
   * and the functions use REDIS_URL instead.
   * @default true
   */
  readonly managed?: boolean;
}

/** Valkey port of ElastiCache Serverless (6380 serves reads from replicas). */
export const CACHE_PORTS = { primary: 6379, replica: 6380 } as const;

/** The cache, its network, and the placement for functions that need it. */
export class Cache extends Construct {
  /** The VPC: isolated subnets only, no NAT; DynamoDB through a gateway endpoint. */
  public readonly vpc: ec2.Vpc;
  /** Security group of the functions allowed to reach the cache. */
  public readonly clientSecurityGroup: ec2.SecurityGroup;
  /** Where a cache-using function runs. */
  public readonly functionPlacement: FunctionVpcPlacement;
  /** The serverless cache; undefined on the emulator target. */
  public readonly serverlessCache: elasticache.CfnServerlessCache | undefined;
  /** The IAM-authenticated cache user the functions connect as; undefined on the emulator target. */
  public readonly user: elasticache.CfnUser | undefined;
  /** Variables a function needs to connect (no secret among them). */
  public readonly connectionEnvironment: Readonly<Record<string, string>>;

  public constructor(scope: Construct, id: string, props: CacheProps) {
    super(scope, id);
    validateProps('Cache', props, [
      (p) =>
        p.maxAzs === undefined || (p.maxAzs >= 2 && p.maxAzs <= 3) ? undefined : 'maxAzs must be 2 or 3',
    ]);
    const cacheName = `tenang-${props.stageName}`;

    this.vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: props.maxAzs ?? 2,
      natGateways: 0,
      subnetConfiguration: [{ name: 'cache', subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 24 }],
      gatewayEndpoints: { DynamoDb: { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB } },
      flowLogs: { all: { trafficType: ec2.FlowLogTrafficType.REJECT } },
    });
    const subnets: ec2.SubnetSelection = { subnetType: ec2.SubnetType.PRIVATE_ISOLATED };

    const cacheSecurityGroup = new ec2.SecurityGroup(this, 'CacheSecurityGroup', {
      vpc: this.vpc,
      description: 'Valkey serverless cache: reachable only from the cache client security group',
      allowAllOutbound: false,
    });
    this.clientSecurityGroup = new ec2.SecurityGroup(this, 'ClientSecurityGroup', {
      vpc: this.vpc,
      description: 'Functions that use the cache: Valkey and HTTPS (DynamoDB gateway endpoint) only',
      allowAllOutbound: false,
    });
    cacheSecurityGroup.addIngressRule(
      this.clientSecurityGroup,
      ec2.Port.tcpRange(CACHE_PORTS.primary, CACHE_PORTS.replica),
      'Valkey from cache clients',
    );
    this.clientSecurityGroup.addEgressRule(
      cacheSecurityGroup,
      ec2.Port.tcpRange(CACHE_PORTS.primary, CACHE_PORTS.replica),
      'Valkey',
    );
    // Isolated subnets have no route out: 443 reaches only the DynamoDB gateway endpoint.
    this.clientSecurityGroup.addEgressRule(
      ec2.Peer.anyIpv4(),
      ec2.Port.tcp(443),
      'DynamoDB gateway endpoint',
    );
    this.functionPlacement = { vpc: this.vpc, subnets, securityGroups: [this.clientSecurityGroup] };

    if (props.managed === false) {
      this.serverlessCache = undefined;
      this.user = undefined;
      this.connectionEnvironment = { CACHE_NAME: cacheName, CACHE_AUTH: 'none' };
      return;
    }
    const user = new elasticache.CfnUser(this, 'AppUser', {
      engine: 'valkey',
      // IAM users must have userName === userId.
      userId: `${cacheName}-app`,
      userName: `${cacheName}-app`,
      accessString: 'on ~* +@all -@dangerous +@keyspace +scan +info',
      authenticationMode: { Type: 'iam' },
    });
    // A user named "default" is kept in the group, switched off ("off -@all"). ElastiCache's RBAC
    // documentation: "A user group configured for the VALKEY engine can only contain users who are
    // using an authentication mechanism (either password or IAM)", so it cannot be a
    // no-password user (the first deploy would fail; Tenang-F1-ValkeyAuth checks it). An IAM user
    // must have userName === userId, and the id "default" belongs to ElastiCache's built-in user,
    // so it gets a password: generated by Secrets Manager and read by CloudFormation through a
    // dynamic reference, never written into the template. The user is off, so the password opens
    // nothing.
    const defaultPassword = new secretsmanager.Secret(this, 'DisabledDefaultUserPassword', {
      description: `Password of the switched-off "default" user of ${cacheName} (opens nothing)`,
      generateSecretString: { passwordLength: 32, excludePunctuation: true },
    });
    Validations.of(defaultPassword).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'The password belongs to a user whose access string is "off -@all": it can authenticate nothing, so rotating it protects nothing.',
    });
    const disabledDefault = new elasticache.CfnUser(this, 'DisabledDefaultUser', {
      engine: 'valkey',
      userId: `${cacheName}-default-off`,
      userName: 'default',
      accessString: 'off -@all',
      authenticationMode: {
        Type: 'password',
        Passwords: [defaultPassword.secretValue.unsafeUnwrap()],
      },
    });
    const userGroup = new elasticache.CfnUserGroup(this, 'UserGroup', {
      engine: 'valkey',
      userGroupId: `${cacheName}-users`,
      userIds: [user.userId, disabledDefault.userId],
    });
    userGroup.addResourceDependency(user);
    userGroup.addResourceDependency(disabledDefault);

    this.user = user;
    const serverlessCache = new elasticache.CfnServerlessCache(this, 'Cache', {
      serverlessCacheName: cacheName,
      engine: 'valkey',
      majorEngineVersion: props.majorEngineVersion ?? '8',
      description: 'tenang cache-aside for orders (derived data; DynamoDB is the source of truth)',
      subnetIds: this.vpc.selectSubnets(subnets).subnetIds,
      securityGroupIds: [cacheSecurityGroup.securityGroupId],
      userGroupId: userGroup.userGroupId,
      snapshotRetentionLimit: 1,
    });
    serverlessCache.addResourceDependency(userGroup);
    this.serverlessCache = serverlessCache;

    this.connectionEnvironment = {
      CACHE_HOST: serverlessCache.attrEndpointAddress,
      CACHE_PORT: serverlessCache.attrEndpointPort,
      CACHE_NAME: cacheName,
      CACHE_USER: user.userId,
      CACHE_TLS: 'true',
      CACHE_AUTH: 'iam',
    };
  }

  /** Lets a principal connect as the app user (IAM authentication). */
  public grantConnect(grantee: iam.IGrantable): iam.Grant {
    if (this.serverlessCache === undefined || this.user === undefined)
      return iam.Grant.drop(grantee, "connect to the emulator target's Redis");
    return iam.Grant.addToPrincipal({
      grantee,
      actions: ['elasticache:Connect'],
      resourceArns: [this.serverlessCache.attrArn, this.user.attrArn],
    });
  }
}
