/**
 * The IAM policies of a deployed stack, read from its template with every `Ref`/`Fn::GetAtt`
 * resolved to what the emulator really created (lib/local/template.ts): each role's identity
 * policies (`AWS::IAM::Policy` attached through `Roles`, the role's inline `Policies`, the AWS
 * managed policies it names) and the resource policies of queues (`AWS::SQS::QueuePolicy`),
 * topics (`AWS::SNS::TopicPolicy`) and KMS keys (`KeyPolicy`). moto evaluates none of them; the
 * local platform's IAM proxy does, with lib/local/iam/evaluate.ts.
 */
import { resolve, type ResolveContext } from '../template';
import { parsePolicy, type NamedPolicy, type PolicyDocument } from './evaluate';
import { queueArnFromUrl } from './request-actions';

/** A deployed execution role and the identity policies attached to it. */
export interface DeployedRole {
  readonly logicalId: string;
  /** The role's name (its physical id). */
  readonly name: string;
  /** arn:aws:iam::<account>:role/<name> */
  readonly arn: string;
  readonly identity: readonly NamedPolicy[];
}

/** Everything the authorizer evaluates a request against. */
export interface DeployedPolicies {
  readonly accountId: string;
  readonly region: string;
  /** By role ARN. */
  readonly roles: ReadonlyMap<string, DeployedRole>;
  /** Resource ARN → its resource-based policy (queue, topic or key policy). */
  readonly resourcePolicies: ReadonlyMap<string, NamedPolicy>;
  /** Topic ARN → the ARN of the KMS key that encrypts it (publishers need that key too). */
  readonly topicKeys: ReadonlyMap<string, string>;
  /** Key ARNs (their policy is evaluated by KMS's rule: the key policy must allow). */
  readonly keys: ReadonlySet<string>;
}

/** Raised when a policy of the stack cannot be read; names the resource. */
export class PolicyReadError extends Error {
  public constructor(message: string) {
    super(message);
    this.name = 'PolicyReadError';
  }
}

/**
 * The AWS managed policies tenang's roles use, as AWS publishes them (AWS Managed Policy
 * Reference: AWSLambdaBasicExecutionRole, AWSLambdaVPCAccessExecutionRole). A role naming any
 * other managed policy fails the read rather than being allowed or denied by a guess.
 */
const MANAGED_POLICIES: Readonly<Record<string, PolicyDocument>> = {
  'service-role/AWSLambdaBasicExecutionRole': {
    Version: '2012-10-17',
    Statement: [
      {
        Effect: 'Allow',
        Action: ['logs:CreateLogGroup', 'logs:CreateLogStream', 'logs:PutLogEvents'],
        Resource: '*',
      },
    ],
  },
  'service-role/AWSLambdaVPCAccessExecutionRole': {
    Version: '2012-10-17',
    Statement: [
      {
        Sid: 'AWSLambdaVPCAccessExecutionPermissions',
        Effect: 'Allow',
        Action: [
          'logs:CreateLogGroup',
          'logs:CreateLogStream',
          'logs:PutLogEvents',
          'ec2:CreateNetworkInterface',
          'ec2:DescribeNetworkInterfaces',
          'ec2:DescribeSubnets',
          'ec2:DeleteNetworkInterface',
          'ec2:AssignPrivateIpAddresses',
          'ec2:UnassignPrivateIpAddresses',
        ],
        Resource: '*',
      },
    ],
  },
};

function refsOf(value: unknown): string[] {
  const list = Array.isArray(value) ? value : [value];
  return list
    .map((v) => (v !== null && typeof v === 'object' ? (v as { Ref?: unknown }).Ref : undefined))
    .filter((r): r is string => typeof r === 'string');
}

/** Reads the stack's roles and resource policies. */
export function readDeployedPolicies(ctx: ResolveContext): DeployedPolicies {
  const resources = ctx.template.Resources;
  const read = (logicalId: string, what: string, document: unknown): NamedPolicy => {
    try {
      return parsePolicy(resolve(document, ctx), logicalId);
    } catch (error) {
      throw new PolicyReadError(`${what} of ${logicalId}: ${(error as Error).message}`);
    }
  };

  const identity = new Map<string, NamedPolicy[]>();
  const attach = (roleLogicalId: string, policy: NamedPolicy): void => {
    identity.set(roleLogicalId, [...(identity.get(roleLogicalId) ?? []), policy]);
  };
  const resourcePolicies = new Map<string, NamedPolicy>();
  const addResourcePolicy = (arn: string, policy: NamedPolicy): void => {
    const existing = resourcePolicies.get(arn);
    // Several policy resources on one resource: AWS keeps one policy document per resource.
    if (existing !== undefined)
      throw new PolicyReadError(`${arn} has two resource policies (${existing.id}, ${policy.id})`);
    resourcePolicies.set(arn, policy);
  };
  const topicKeys = new Map<string, string>();
  const keys = new Set<string>();

  for (const [logicalId, r] of Object.entries(resources)) {
    const props = r.Properties ?? {};
    switch (r.Type) {
      case 'AWS::IAM::Role': {
        const inline = (props.Policies ?? []) as { PolicyName?: string; PolicyDocument?: unknown }[];
        for (const p of inline)
          attach(
            logicalId,
            read(`${logicalId}/${p.PolicyName ?? 'inline'}`, 'inline policy', p.PolicyDocument),
          );
        const managed = (resolve(props.ManagedPolicyArns ?? [], ctx) as unknown[]).map(String);
        for (const arn of managed) {
          const name = arn.replace(/^arn:aws:iam::aws:policy\//, '');
          const document = MANAGED_POLICIES[name];
          if (document === undefined)
            throw new PolicyReadError(
              `${logicalId} uses the managed policy ${arn}, whose content is not known locally`,
            );
          attach(logicalId, parsePolicy(document, `aws-managed:${name}`));
        }
        break;
      }
      case 'AWS::IAM::Policy':
      case 'AWS::IAM::ManagedPolicy': {
        const policy = read(logicalId, 'policy', props.PolicyDocument);
        for (const role of refsOf(props.Roles)) attach(role, policy);
        break;
      }
      case 'AWS::SQS::QueuePolicy': {
        const policy = read(logicalId, 'queue policy', props.PolicyDocument);
        for (const url of resolve(props.Queues ?? [], ctx) as string[])
          addResourcePolicy(queueArnFromUrl(url, logicalId, ctx), policy);
        break;
      }
      case 'AWS::SNS::TopicPolicy': {
        const policy = read(logicalId, 'topic policy', props.PolicyDocument);
        for (const topic of resolve(props.Topics ?? [], ctx) as string[]) addResourcePolicy(topic, policy);
        break;
      }
      case 'AWS::KMS::Key': {
        const arn = String(resolve({ 'Fn::GetAtt': [logicalId, 'Arn'] }, ctx));
        keys.add(arn);
        addResourcePolicy(arn, read(logicalId, 'key policy', props.KeyPolicy));
        break;
      }
      case 'AWS::SNS::Topic': {
        if (props.KmsMasterKeyId !== undefined) {
          const topic = String(resolve({ Ref: logicalId }, ctx));
          topicKeys.set(topic, String(resolve(props.KmsMasterKeyId, ctx)));
        }
        break;
      }
      default:
        break;
    }
  }

  const roles = new Map<string, DeployedRole>();
  for (const [logicalId, r] of Object.entries(resources)) {
    if (r.Type !== 'AWS::IAM::Role') continue;
    const arn = String(resolve({ 'Fn::GetAtt': [logicalId, 'Arn'] }, ctx));
    roles.set(arn, {
      logicalId,
      name: arn.slice(arn.lastIndexOf('/') + 1),
      arn,
      identity: identity.get(logicalId) ?? [],
    });
  }
  return { accountId: ctx.accountId, region: ctx.region, roles, resourcePolicies, topicKeys, keys };
}
