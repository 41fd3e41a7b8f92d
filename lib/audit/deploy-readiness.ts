/**
 * Deploy readiness: rules that a template deploys, redeploys after a failure and
 * pages as intended, and that its alarms reach a person. They read the same template model as the worker-queue checklist and are part
 * of TEMPLATE_RULES (rules.ts), so the cdk-nag pack, `tenang audit` and the raw-template audit
 * run them alike.
 *
 * Only types come from rules.ts: rules.ts imports this module, and a value import back would make
 * the two load each other.
 *
 * Not checkable: the pack has no not-checkable verdict. As the other rules do with what lies
 * outside the template (a mapping's function that is not in it yields no finding), a rule here
 * judges only what the template shows; where part of a resource's case lies outside it (a user id
 * not defined here, an imported role or key), the finding is compliant and its `why` says what
 * could not be checked.
 */
import { operatorReach } from './operator-reach';
import type { ResourceFinding, TemplateIndex, TemplateResource, TemplateRule } from './rules';

/** ElastiCache RBAC user group type. */
export const USER_GROUP = 'AWS::ElastiCache::UserGroup';
/** ElastiCache RBAC user type. */
export const CACHE_USER = 'AWS::ElastiCache::User';
/** SNS topic type. */
export const TOPIC = 'AWS::SNS::Topic';
/** SNS topic policy type (a policy for a list of topics). */
export const TOPIC_POLICY = 'AWS::SNS::TopicPolicy';
/** SNS topic inline policy type (a policy for one topic). */
export const TOPIC_INLINE_POLICY = 'AWS::SNS::TopicInlinePolicy';
/** SNS subscription type. */
export const SUBSCRIPTION = 'AWS::SNS::Subscription';
/**
 * Topic metadata: why no one subscribes to it, on purpose (a tenang declaration's
 * `deliverTo: { none: '<reason>' }` writes it); F5-AlarmSubscriber accepts the topic with it.
 */
export const NO_SUBSCRIBER_METADATA_KEY = 'tenang:no-subscriber-reason';
/**
 * Subscription metadata the live audit writes for a subscription SNS lists as
 * `PendingConfirmation`: it exists but delivers nothing until its endpoint confirms it.
 */
export const PENDING_CONFIRMATION_METADATA_KEY = 'tenang:pending-confirmation';
/** KMS key type. */
export const KMS_KEY = 'AWS::KMS::Key';
/** KMS alias type. */
export const KMS_ALIAS = 'AWS::KMS::Alias';
/** IAM role type. */
export const ROLE = 'AWS::IAM::Role';

// Kept literal here (rules.ts has the same constants) so that this module imports no values from it.
const QUEUE = 'AWS::SQS::Queue';
const FUNCTION = 'AWS::Lambda::Function';
const MAPPING = 'AWS::Lambda::EventSourceMapping';
const ALARM = 'AWS::CloudWatch::Alarm';
const COMPOSITE_ALARM = 'AWS::CloudWatch::CompositeAlarm';
const IAM_POLICY = 'AWS::IAM::Policy';
const IAM_MANAGED_POLICY = 'AWS::IAM::ManagedPolicy';
const IAM_ROLE_POLICY = 'AWS::IAM::RolePolicy';
const QUEUE_POLICY = 'AWS::SQS::QueuePolicy';
const QUEUE_INLINE_POLICY = 'AWS::SQS::QueueInlinePolicy';

/** CloudWatch's service principal: the publisher of alarm notifications. */
export const CLOUDWATCH_PRINCIPAL = 'cloudwatch.amazonaws.com';

/**
 * The property that fixes a resource's physical name, per type (F2-RetainOnCreate). Each type's
 * CloudFormation reference says of it: "If you specify a name, you can't perform updates that
 * require replacement of this resource."
 */
export const NAME_PROPERTIES: Readonly<Record<string, string>> = {
  'AWS::DynamoDB::Table': 'TableName',
  'AWS::DynamoDB::GlobalTable': 'TableName',
  'AWS::Logs::LogGroup': 'LogGroupName',
  [QUEUE]: 'QueueName',
  [TOPIC]: 'TopicName',
  'AWS::S3::Bucket': 'BucketName',
  [FUNCTION]: 'FunctionName',
  'AWS::SSM::Parameter': 'Name',
  [KMS_ALIAS]: 'AliasName',
  'AWS::ElastiCache::ServerlessCache': 'ServerlessCacheName',
  'AWS::ElastiCache::ReplicationGroup': 'ReplicationGroupId',
  'AWS::ElastiCache::CacheCluster': 'ClusterName',
  [CACHE_USER]: 'UserId',
  [USER_GROUP]: 'UserGroupId',
  'AWS::Kinesis::Stream': 'Name',
  'AWS::SecretsManager::Secret': 'Name',
  [ROLE]: 'RoleName',
  [IAM_MANAGED_POLICY]: 'ManagedPolicyName',
  'AWS::Events::EventBus': 'Name',
  'AWS::StepFunctions::StateMachine': 'StateMachineName',
  'AWS::ECR::Repository': 'RepositoryName',
  [ALARM]: 'AlarmName',
  [COMPOSITE_ALARM]: 'AlarmName',
};

/**
 * AWS managed policies a Lambda role commonly carries that grant no `sqs:SendMessage`
 * (AWSLambdaSQSQueueExecutionRole grants receiving and deleting only); any other managed policy
 * not defined in the template might grant it, and is reported as not checkable.
 */
const MANAGED_POLICIES_WITHOUT_SEND = [
  'AWSLambdaBasicExecutionRole',
  'AWSLambdaVPCAccessExecutionRole',
  'AWSLambdaSQSQueueExecutionRole',
  'AWSLambdaDynamoDBExecutionRole',
  'AWSLambdaKinesisExecutionRole',
  'AWSXRayDaemonWriteAccess',
  'CloudWatchLambdaInsightsExecutionRolePolicy',
];

type Json = Readonly<Record<string, unknown>>;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A property that may hold one value or a list, as a list. */
function list(value: unknown): readonly unknown[] {
  if (value === undefined || value === null) return [];
  return Array.isArray(value) ? value : [value];
}

function finding(logicalId: string, compliant: boolean, why: string): ResourceFinding {
  return { logicalId, compliant, why };
}

/** The logical id and attribute a `Ref` (attribute undefined) or `Fn::GetAtt` names. */
export function intrinsicTarget(value: unknown): { id: string; attribute: string | undefined } | undefined {
  if (!isRecord(value)) return undefined;
  if (typeof value.Ref === 'string') return { id: value.Ref, attribute: undefined };
  const getAtt = value['Fn::GetAtt'];
  if (Array.isArray(getAtt) && typeof getAtt[0] === 'string') {
    return { id: getAtt[0], attribute: typeof getAtt[1] === 'string' ? getAtt[1] : undefined };
  }
  if (typeof getAtt === 'string') {
    const [id, ...attribute] = getAtt.split('.');
    return id === undefined || id === '' ? undefined : { id, attribute: attribute.join('.') || undefined };
  }
  return undefined;
}

/**
 * The logical id of a resource of `type` that a value names by `Ref` or `Fn::GetAtt`; with
 * `attributes`, only those (`undefined` in it stands for a `Ref`).
 */
function targetOfType(
  index: TemplateIndex,
  value: unknown,
  type: string,
  attributes?: readonly (string | undefined)[],
): string | undefined {
  const target = intrinsicTarget(value);
  if (target === undefined || index.resources.get(target.id)?.Type !== type) return undefined;
  return attributes === undefined || attributes.includes(target.attribute) ? target.id : undefined;
}

/** A string value of a resource's property, when it is a literal. */
function literalProperty(resource: TemplateResource | undefined, key: string): string | undefined {
  const value = resource?.Properties?.[key];
  return typeof value === 'string' ? value : undefined;
}

/**
 * Renders a value with its intrinsics as `${Id}` / `${Id.Attr}`, Fn::Join joined and Fn::Sub's
 * variables put in (Fn::Sub's own syntax): two values that deploy the same render the same, so
 * `!GetAtt Q.QueueName`, `!Sub '${Q.QueueName}'` and `!Join ['', [!GetAtt Q.QueueName]]` compare equal.
 */
export function render(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const target = intrinsicTarget(value);
  if (target !== undefined)
    return target.attribute === undefined ? `\${${target.id}}` : `\${${target.id}.${target.attribute}}`;
  if (isRecord(value)) {
    const join = value['Fn::Join'];
    if (Array.isArray(join) && typeof join[0] === 'string' && Array.isArray(join[1]))
      return (join[1] as unknown[]).map(render).join(join[0]);
    const sub = value['Fn::Sub'];
    if (typeof sub === 'string') return sub;
    if (Array.isArray(sub) && typeof sub[0] === 'string') {
      const variables = isRecord(sub[1]) ? sub[1] : {};
      return sub[0].replace(/\$\{([^!}][^}]*)\}/g, (whole, name: string) =>
        name in variables ? render(variables[name]) : whole,
      );
    }
  }
  return JSON.stringify(value) ?? '';
}

/** IAM-style wildcard match (`*`, `?`); actions are case-insensitive, resource names are not. */
function globMatches(pattern: string, value: string, ignoreCase: boolean): boolean {
  const source = [...pattern]
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`, ignoreCase ? 'i' : '').test(value);
}

/** The statements of a policy document (raw templates may hold it as a JSON string). */
function statementsOf(document: unknown): Json[] {
  let parsed = document;
  if (typeof parsed === 'string') {
    try {
      parsed = JSON.parse(parsed) as unknown;
    } catch {
      return [];
    }
  }
  return isRecord(parsed) ? list(parsed.Statement).filter(isRecord) : [];
}

function effectIs(statement: Json, effect: 'Allow' | 'Deny'): boolean {
  return statement.Effect === effect;
}

/** A statement without a condition applies to every request. */
function unconditional(statement: Json): boolean {
  return !isRecord(statement.Condition) || Object.keys(statement.Condition).length === 0;
}

/** Whether a statement's Action (or NotAction) covers `action`; wildcards count. */
function coversAction(statement: Json, action: string): boolean {
  const matches = (v: unknown): boolean => typeof v === 'string' && globMatches(v, action, true);
  if (statement.Action !== undefined) return list(statement.Action).some(matches);
  if (statement.NotAction !== undefined) return !list(statement.NotAction).some(matches);
  return false;
}

/** Who a resource-policy principal names: a service principal, a role of the template, or everyone. */
interface PrincipalQuery {
  readonly service?: string;
  readonly roleId?: string;
}

function principalNames(principal: unknown, query: PrincipalQuery): boolean {
  if (principal === '*') return true;
  if (!isRecord(principal)) return false;
  const aws = list(principal.AWS);
  if (aws.includes('*')) return true;
  if (query.service !== undefined && list(principal.Service).includes(query.service)) return true;
  return query.roleId !== undefined && aws.some((p) => intrinsicTarget(p)?.id === query.roleId);
}

/** Whether a resource-policy statement's Principal (or NotPrincipal) covers the principal asked about. */
function coversPrincipal(statement: Json, query: PrincipalQuery): boolean {
  if (statement.Principal !== undefined) return principalNames(statement.Principal, query);
  if (statement.NotPrincipal !== undefined) return !principalNames(statement.NotPrincipal, query);
  return false;
}

/** A resource as a statement's Resource may name it. */
interface ResourceTarget {
  readonly id: string;
  /** What `Ref`/`Fn::GetAtt` return its ARN (`undefined` stands for a `Ref`). */
  readonly arnAttributes: readonly (string | undefined)[];
  /** The attribute holding its name, the last part of its ARN. */
  readonly nameAttribute: string;
  /** Its literal name, when the template fixes one. */
  readonly literalName: string | undefined;
}

function namesResource(value: unknown, target: ResourceTarget): boolean {
  const ref = intrinsicTarget(value);
  if (ref !== undefined) return ref.id === target.id && target.arnAttributes.includes(ref.attribute);
  const text = render(value);
  if (text === '*') return true;
  const name = text.split(':').pop() ?? '';
  if (name === '*' || name === `\${${target.id}.${target.nameAttribute}}`) return true;
  return (
    text.startsWith('arn:') &&
    !name.includes('${') &&
    target.literalName !== undefined &&
    globMatches(name, target.literalName, false)
  );
}

/** Whether a statement's Resource (or NotResource) covers the target. */
function coversResource(statement: Json, target: ResourceTarget): boolean {
  if (statement.Resource !== undefined) return list(statement.Resource).some((r) => namesResource(r, target));
  if (statement.NotResource !== undefined)
    return !list(statement.NotResource).some((r) => namesResource(r, target));
  return false;
}

function literalBoolean(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (value === 'true' || value === 'false') return value === 'true';
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// F1-ValkeyAuth
// ---------------------------------------------------------------------------------------------

/**
 * The id and user name of ElastiCache's own default user. ElastiCache RBAC docs ("Applying RBAC
 * to a cache", https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/Clusters.RBAC.html):
 * ElastiCache configures a user with user ID and user name "default" and adds it to all user
 * groups; it is "intended for compatibility with the default behavior of previous Redis OSS
 * versions" (every command, every key) — that is, it needs no password, so it is no member for a
 * VALKEY group; to change it, create a user with the user name default and swap it in.
 */
export const BUILT_IN_DEFAULT_USER = 'default';

/** How a user of the template authenticates; undefined when it sets no mechanism at all. */
function authentication(user: TemplateResource): 'password' | 'iam' | 'none' | undefined {
  const p = user.Properties ?? {};
  const mode = isRecord(p.AuthenticationMode) ? p.AuthenticationMode.Type : undefined;
  const type = typeof mode === 'string' ? mode.toLowerCase() : undefined;
  if (literalBoolean(p.NoPasswordRequired) === true || type === 'no-password-required') return 'none';
  if (type === 'iam') return 'iam';
  if (type === 'password' || list(p.Passwords).length > 0) return 'password';
  return undefined;
}

/**
 * F1-ValkeyAuth: a Valkey user group holds only users that authenticate, and a user named default.
 *
 * ElastiCache RBAC docs (https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/Clusters.RBAC.html):
 * "A user group configured for the VALKEY engine can only contain users who are using an
 * authentication mechanism (either password or IAM)." CloudFormation's AWS::ElastiCache::UserGroup
 * reference (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-elasticache-usergroup.html),
 * whose Engine takes `redis | valkey`, says of UserIds: "A user named default must be included",
 * and makes no exception for Valkey; so a Valkey group needs a member whose UserName is default,
 * and by the first rule that member must have a password or IAM (ElastiCache's own `default`
 * user has neither).
 */
const valkeyAuth: TemplateRule = {
  suffix: 'F1-ValkeyAuth',
  featureId: 'F1', // deploy readiness
  title:
    'A Valkey user group holds only users with a password or IAM authentication, one of them named "default".',
  explanation:
    'A VALKEY user group may only contain users with an authentication mechanism: a member with NoPasswordRequired, AuthenticationMode no-password-required, or ElastiCache\'s own "default" user makes the user group fail to deploy, and the cache that uses it with it.',
  reads: { [USER_GROUP]: ['UserIds'] },
  check: (index) =>
    index.ofType(USER_GROUP).flatMap(([groupId, group]) => {
      const engine = group.Properties?.Engine;
      if (typeof engine !== 'string' || engine.toLowerCase() !== 'valkey') return [];
      const users = index.ofType(CACHE_USER);
      const noAuth: string[] = [];
      const unchecked: string[] = [];
      let hasDefault = false;
      for (const member of list(group.Properties?.UserIds)) {
        const userId =
          targetOfType(index, member, CACHE_USER) ??
          (typeof member === 'string'
            ? users.find(([, u]) => literalProperty(u, 'UserId') === member)?.[0]
            : undefined);
        if (userId === undefined) {
          if (member === BUILT_IN_DEFAULT_USER) {
            hasDefault = true;
            noAuth.push(`"default" (ElastiCache's own default user, no password)`);
          } else unchecked.push(typeof member === 'string' ? `"${member}"` : render(member));
          continue;
        }
        const user = index.resources.get(userId);
        if (user === undefined) continue;
        if (literalProperty(user, 'UserName') === BUILT_IN_DEFAULT_USER) hasDefault = true;
        const auth = authentication(user);
        if (auth === 'none') noAuth.push(`${userId} (no password required)`);
        else if (auth === undefined) noAuth.push(`${userId} (sets no Passwords and no AuthenticationMode)`);
      }
      const fixes: string[] = [];
      if (noAuth.length > 0)
        fixes.push(
          `holds ${noAuth.join(', ')}: give each member AuthenticationMode Type password (with Passwords) or iam, and replace NoPasswordRequired users`,
        );
      if (!hasDefault && unchecked.length === 0)
        fixes.push(
          'has no user named "default": add a user with UserName default that authenticates with a password (an access string starting "off" keeps it unusable)',
        );
      const note =
        unchecked.length > 0
          ? `; ${unchecked.join(', ')} not defined in this template, so not checked${hasDefault ? '' : ' (nor whether one of them is the user named "default")'}`
          : '';
      return [
        finding(
          groupId,
          fixes.length === 0,
          fixes.length === 0
            ? `${groupId} (valkey): every member checked authenticates with a password or IAM, and a user named "default" is in it${note}`
            : `${groupId} (valkey) ${fixes.join('; it ')}${note}`,
        ),
      ];
    }),
};

// ---------------------------------------------------------------------------------------------
// F2-RetainOnCreate
// ---------------------------------------------------------------------------------------------

/**
 * F2-RetainOnCreate: a retained resource with a fixed name is deleted when its first create rolls
 * back.
 *
 * CloudFormation DeletionPolicy attribute (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-attribute-deletionpolicy.html):
 * "RetainExceptOnCreate behaves like Retain for stack operations, except for the stack operation
 * that initially created the resource. If the stack operation that created the resource is rolled
 * back, CloudFormation deletes the resource." (Same wording in CDK's CfnDeletionPolicy reference.)
 * A stack operation can ask the same of every new resource (CreateStack/UpdateStack
 * RetainExceptOnCreate: "newly created resources are deleted when the operation rolls back. This
 * includes newly created resources marked with a deletion policy of Retain"), but that flag is
 * not in the template, so the rule asks for the attribute.
 *
 * UpdateReplacePolicy attribute (https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-attribute-updatereplacepolicy.html)
 * takes Delete, Retain or Snapshot only (no RetainExceptOnCreate: it acts only on a replacement,
 * never on a create), and it "is only executed if you update a resource property whose update
 * behavior is specified as Replacement"; CloudFormation "creates the replacement resource first".
 * With a fixed name that replacement cannot be created at all (each type's name property: "If you
 * specify a name, you can't perform updates that require replacement"), whatever the policy says.
 * So the rule requires nothing of UpdateReplacePolicy: Retain there is accepted (CDK's
 * RETAIN_ON_UPDATE_OR_DELETE writes exactly RetainExceptOnCreate + Retain), and the finding says
 * that a change needing replacement needs a new name.
 */
/**
 * Whether a name is built from the generated physical name of another resource of the template
 * (`!Sub /aws/lambda/${Fn}` of a function without FunctionName): a retried create generates that
 * name anew, so the retained leftover does not block it.
 */
function derivesFromGeneratedName(index: TemplateIndex, name: unknown): boolean {
  return [...render(name).matchAll(/\$\{([A-Za-z0-9]+)(?:\.[A-Za-z.]+)?\}/g)].some(([, id]) => {
    const resource = id === undefined ? undefined : index.resources.get(id);
    if (resource === undefined) return false;
    const nameProperty = NAME_PROPERTIES[resource.Type];
    return nameProperty === undefined || resource.Properties?.[nameProperty] === undefined;
  });
}

const retainOnCreate: TemplateRule = {
  suffix: 'F2-RetainOnCreate',
  featureId: 'F2', // deploy readiness
  title:
    'A retained resource with a fixed physical name has DeletionPolicy RetainExceptOnCreate, not Retain.',
  explanation:
    'With DeletionPolicy Retain, a first deploy that fails and rolls back keeps the named resource: every retry of the deploy then stops on "already exists" until someone deletes it by hand. RetainExceptOnCreate deletes it on that rollback only and retains it otherwise (CDK: RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE).',
  check: (index) =>
    [...index.resources].flatMap(([id, resource]) => {
      const nameProperty = NAME_PROPERTIES[resource.Type];
      if (nameProperty === undefined) return [];
      const name = resource.Properties?.[nameProperty];
      const fixed = typeof name === 'string' ? name.trim() !== '' : name !== undefined && name !== null;
      if (!fixed || derivesFromGeneratedName(index, name)) return [];
      const deletion = resource.DeletionPolicy;
      const replace = resource.UpdateReplacePolicy;
      if (deletion !== 'Retain' && replace !== 'Retain') return [];
      const shown = `${nameProperty} ${typeof name === 'string' ? `"${name}"` : render(name)}`;
      const onReplace =
        replace === 'Retain'
          ? '; UpdateReplacePolicy Retain accepted (it takes no RetainExceptOnCreate): a change that needs replacement needs a new name'
          : '';
      return [
        deletion === 'Retain'
          ? finding(
              id,
              false,
              `${id} (${shown}): DeletionPolicy Retain keeps it when its first create rolls back, and every retry then fails on "already exists": set DeletionPolicy RetainExceptOnCreate (CDK RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE)${onReplace}`,
            )
          : finding(
              id,
              true,
              `${id} (${shown}): DeletionPolicy ${deletion ?? 'Delete (default)'}${onReplace}`,
            ),
      ];
    }),
};

// ---------------------------------------------------------------------------------------------
// F3-AlarmTopicPublish
// ---------------------------------------------------------------------------------------------

const ALARM_ACTION_PROPERTIES = ['AlarmActions', 'OKActions', 'InsufficientDataActions'] as const;

/** The topics of the template that alarms notify, each with the alarms notifying it. */
function notifiedTopics(index: TemplateIndex): Map<string, string[]> {
  const topics = new Map<string, string[]>();
  for (const [alarmId, alarm] of [...index.ofType(ALARM), ...index.ofType(COMPOSITE_ALARM)]) {
    for (const key of ALARM_ACTION_PROPERTIES) {
      for (const action of list(alarm.Properties?.[key])) {
        const topicId = topicNamed(index, action);
        if (topicId === undefined) continue;
        const alarms = topics.get(topicId) ?? [];
        if (!alarms.includes(alarmId)) alarms.push(alarmId);
        topics.set(topicId, alarms);
      }
    }
  }
  return topics;
}

/** The topic of the template a value names: `Ref` (its ARN), GetAtt TopicArn, or a literal ARN of its literal name. */
function topicNamed(index: TemplateIndex, value: unknown): string | undefined {
  const byRef = targetOfType(index, value, TOPIC, [undefined, 'TopicArn']);
  if (byRef !== undefined || typeof value !== 'string' || !value.startsWith('arn:')) return byRef;
  const name = value.split(':').pop();
  return index.ofType(TOPIC).find(([, t]) => literalProperty(t, 'TopicName') === name)?.[0];
}

function topicTarget(index: TemplateIndex, topicId: string): ResourceTarget {
  return {
    id: topicId,
    arnAttributes: [undefined, 'TopicArn'],
    nameAttribute: 'TopicName',
    literalName: literalProperty(index.resources.get(topicId), 'TopicName'),
  };
}

/** Topic policies of the template that set the topic's policy, as [logicalId, document]. */
function topicPolicies(index: TemplateIndex, topicId: string): [string, unknown][] {
  return [
    ...index
      .ofType(TOPIC_POLICY)
      .filter(([, p]) => list(p.Properties?.Topics).some((t) => topicNamed(index, t) === topicId)),
    ...index
      .ofType(TOPIC_INLINE_POLICY)
      .filter(([, p]) => topicNamed(index, p.Properties?.TopicArn) === topicId),
  ].map(([id, p]) => [id, p.Properties?.PolicyDocument]);
}

/** What stops CloudWatch publishing under a topic policy, or undefined when it may. */
function topicPolicyProblem(policyId: string, document: unknown, target: ResourceTarget): string | undefined {
  const cloudwatch = { service: CLOUDWATCH_PRINCIPAL };
  const statements = statementsOf(document);
  const applies = (s: Json): boolean =>
    coversAction(s, 'sns:Publish') && coversPrincipal(s, cloudwatch) && coversResource(s, target);
  const deny = statements.find((s) => effectIs(s, 'Deny') && unconditional(s) && applies(s));
  if (deny !== undefined)
    return `its topic policy ${policyId} denies sns:Publish to ${CLOUDWATCH_PRINCIPAL} without a condition${typeof deny.Sid === 'string' ? ` (statement ${deny.Sid})` : ''}: remove or condition that Deny`;
  if (!statements.some((s) => effectIs(s, 'Allow') && applies(s)))
    return `its topic policy ${policyId} replaces the default policy and allows no sns:Publish to ${CLOUDWATCH_PRINCIPAL}: add an Allow statement for Service ${CLOUDWATCH_PRINCIPAL}, Action sns:Publish, Resource the topic (CDK: topic.addToResourcePolicy)`;
  return undefined;
}

/** Key policy actions CloudWatch needs on an encrypted topic's key. */
const KMS_ACTIONS_FOR_PUBLISH = ['kms:Decrypt', 'kms:GenerateDataKey'] as const;

/** The KMS key of the template a KmsMasterKeyId names (directly or through an alias of the template). */
function keyOf(index: TemplateIndex, value: unknown): string | undefined {
  const direct = targetOfType(index, value, KMS_KEY);
  if (direct !== undefined) return direct;
  const aliasId =
    targetOfType(index, value, KMS_ALIAS) ??
    (typeof value === 'string'
      ? index
          .ofType(KMS_ALIAS)
          .find(([, a]) => literalProperty(a, 'AliasName') === value.split(':').pop())?.[0]
      : undefined);
  return aliasId === undefined ? undefined : targetOfType(index, index.props(aliasId).TargetKeyId, KMS_KEY);
}

/** What stops CloudWatch using the topic's key; undefined when it may; a note when it cannot be checked. */
function topicKeyProblem(
  index: TemplateIndex,
  keyValue: unknown,
): { readonly problem?: string; readonly note?: string } {
  if (keyValue === undefined) return {};
  if (typeof keyValue === 'string' && /(^|:)alias\/aws\/sns$/.test(keyValue))
    return {
      problem:
        'it is encrypted with the AWS managed key alias/aws/sns, whose key policy cannot be changed to let CloudWatch use it: encrypt it with a customer managed key whose policy allows cloudwatch.amazonaws.com kms:Decrypt and kms:GenerateDataKey*',
    };
  const keyId = keyOf(index, keyValue);
  if (keyId === undefined)
    return {
      note: `its key ${render(keyValue)} is not defined in this template, so its key policy was not checked`,
    };
  const cloudwatch = { service: CLOUDWATCH_PRINCIPAL };
  const statements = statementsOf(index.props(keyId).KeyPolicy);
  const missing = KMS_ACTIONS_FOR_PUBLISH.filter(
    (action) =>
      !statements.some(
        (s) => effectIs(s, 'Allow') && coversAction(s, action) && coversPrincipal(s, cloudwatch),
      ) ||
      statements.some(
        (s) =>
          effectIs(s, 'Deny') &&
          unconditional(s) &&
          coversAction(s, action) &&
          coversPrincipal(s, cloudwatch),
      ),
  );
  return missing.length === 0
    ? {}
    : {
        problem: `its key ${keyId}'s policy does not allow ${CLOUDWATCH_PRINCIPAL} ${missing.join(' and ')}: add a key policy statement for Service ${CLOUDWATCH_PRINCIPAL}, Action kms:Decrypt and kms:GenerateDataKey*`,
      };
}

/**
 * F3-AlarmTopicPublish: CloudWatch may publish to every topic an alarm notifies.
 *
 * - Topic policy: AWS re:Post "Why didn't I receive an SNS notification for my CloudWatch alarm
 *   trigger?" (https://repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger): a
 *   trigger action fails when the SNS access policy does not let CloudWatch publish ("… is not
 *   authorized to perform: SNS:Publish …"); the fix is a statement allowing Service
 *   cloudwatch.amazonaws.com sns:Publish on the topic. A topic has one access policy, its Policy
 *   attribute; SetTopicAttributes "allows a topic owner to set an attribute of the topic to a new
 *   value" (https://docs.aws.amazon.com/sns/latest/api/API_SetTopicAttributes.html), which is what
 *   an AWS::SNS::TopicPolicy does to each topic it lists, so once one covers a topic the default
 *   policy is gone. (Its CloudFormation page speaks of "permissions to add"; read here as setting
 *   the one document, the reading that makes CDK's enforceSSL-only policy lock CloudWatch out.)
 *   SNS evaluation logic (https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-language-evaluation-logic.html):
 *   "An explicit deny overrides any allows"; a Deny with a condition (aws:SecureTransport false)
 *   does not apply to CloudWatch's TLS calls, so only an unconditional Deny counts as blocking.
 * - No topic policy: the default policy applies. Its statement (`__default_statement_ID`, shown in
 *   the SNS example cases, https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-use-cases.html,
 *   section "aws:SourceAccount versus aws:SourceOwner") allows sns:Publish to any principal acting
 *   for the owner account (condition AWS:SourceOwner); an alarm of the same template is in the same
 *   account, so it may publish. Only a cross-account alarm needs an explicit grant ("Allow any
 *   CloudWatch alarm to publish to a topic in a different account", same page).
 * - Encryption: AWS re:Post "How do I configure a CloudWatch alarm with an encrypted SNS topic?"
 *   (https://repost.aws/knowledge-center/cloudwatch-configure-alarm-sns): a customer managed key is
 *   required; with the AWS managed key alias/aws/sns the alarm cannot run its action, because that
 *   key's policy does not allow CloudWatch kms:Decrypt and kms:GenerateDataKey and cannot be edited.
 *   SNS "Key management", "Enable compatibility between event sources from AWS services and
 *   encrypted topics" (https://docs.aws.amazon.com/sns/latest/dg/sns-key-management.html): the
 *   key policy allows the service principal kms:GenerateDataKey* and kms:Decrypt.
 */
const alarmTopicPublish: TemplateRule = {
  suffix: 'F3-AlarmTopicPublish',
  featureId: 'F3', // deploy readiness
  title:
    'CloudWatch may publish to every SNS topic an alarm notifies: its topic policy allows cloudwatch.amazonaws.com sns:Publish, and its KMS key (if any) is customer managed and lets CloudWatch use it.',
  explanation:
    'An alarm whose topic refuses CloudWatch still changes state, but its action fails silently (the error is only in the alarm history): nobody is paged. A topic policy replaces the default policy, so a policy with only a TLS-enforcing Deny (CDK enforceSSL) lets nobody publish.',
  reads: {
    [ALARM]: ['AlarmActions', 'OKActions', 'InsufficientDataActions'],
    [COMPOSITE_ALARM]: ['AlarmActions', 'OKActions', 'InsufficientDataActions'],
    [TOPIC]: ['KmsMasterKeyId'],
    [TOPIC_POLICY]: ['Topics', 'PolicyDocument'],
  },
  check: (index) =>
    [...notifiedTopics(index)].map(([topicId, alarms]) => {
      const target = topicTarget(index, topicId);
      const policies = topicPolicies(index, topicId);
      const problems = policies.flatMap(([policyId, document]) => {
        const problem = topicPolicyProblem(policyId, document, target);
        return problem === undefined ? [] : [problem];
      });
      const key = topicKeyProblem(index, index.props(topicId).KmsMasterKeyId);
      if (key.problem !== undefined) problems.push(key.problem);
      const shownAlarms = alarms.length > 3 ? [...alarms.slice(0, 3), `${alarms.length - 3} more`] : alarms;
      const notified = `${topicId} (notified by ${shownAlarms.join(', ')})`;
      const policyText =
        policies.length === 0
          ? 'no topic policy, so the default policy lets same-account CloudWatch alarms publish'
          : `topic policy ${policies.map(([id]) => id).join(', ')} allows ${CLOUDWATCH_PRINCIPAL} sns:Publish`;
      const note = key.note === undefined ? '' : `; ${key.note}`;
      return problems.length > 0
        ? finding(topicId, false, `${notified}: ${problems.join('; ')}${note}`)
        : finding(topicId, true, `${notified}: ${policyText}${note}`);
    }),
};

// ---------------------------------------------------------------------------------------------
// F4-QueueSendGrant
// ---------------------------------------------------------------------------------------------

/** The queue attributes an environment variable may carry (`undefined`: a `Ref`, the URL). */
const QUEUE_REFERENCE_ATTRIBUTES = [undefined, 'QueueUrl', 'QueueName', 'Arn'] as const;

/** Queues of the template a value names, anywhere inside it (Fn::Join, Fn::Sub, …). */
function queuesIn(index: TemplateIndex, value: unknown): string[] {
  const byRef = targetOfType(index, value, QUEUE, QUEUE_REFERENCE_ATTRIBUTES);
  if (byRef !== undefined) return [byRef];
  if (Array.isArray(value)) return value.flatMap((v) => queuesIn(index, v));
  if (!isRecord(value)) return [];
  const sub = value['Fn::Sub'];
  if (typeof sub === 'string' || (Array.isArray(sub) && typeof sub[0] === 'string')) {
    const text = typeof sub === 'string' ? sub : (sub[0] as string);
    const variables = Array.isArray(sub) && isRecord(sub[1]) ? sub[1] : {};
    const named = [...text.matchAll(/\$\{([A-Za-z0-9]+)(?:\.([A-Za-z]+))?\}/g)].flatMap((m) => {
      const [, id, attribute] = m;
      if (id === undefined || id in variables || index.resources.get(id)?.Type !== QUEUE) return [];
      return (QUEUE_REFERENCE_ATTRIBUTES as readonly (string | undefined)[]).includes(attribute) ? [id] : [];
    });
    return [...named, ...Object.values(variables).flatMap((v) => queuesIn(index, v))];
  }
  return Object.values(value).flatMap((v) => queuesIn(index, v));
}

function queueTarget(index: TemplateIndex, queueId: string): ResourceTarget {
  return {
    id: queueId,
    arnAttributes: ['Arn'],
    nameAttribute: 'QueueName',
    literalName: literalProperty(index.resources.get(queueId), 'QueueName'),
  };
}

/** Whether a value names the role `roleId` of the template (`Ref` gives its name), or its literal name. */
function namesRole(index: TemplateIndex, value: unknown, roleId: string): boolean {
  const target = intrinsicTarget(value);
  if (target !== undefined) return target.id === roleId && target.attribute === undefined;
  const name = literalProperty(index.resources.get(roleId), 'RoleName');
  return typeof value === 'string' && name !== undefined && value === name;
}

/** The identity-policy statements of a role the template can read, and the managed policies it cannot. */
function roleStatements(index: TemplateIndex, roleId: string): { statements: Json[]; unreadable: string[] } {
  const role = index.props(roleId);
  const statements: Json[] = list(role.Policies)
    .filter(isRecord)
    .flatMap((p) => statementsOf(p.PolicyDocument));
  for (const [, policy] of index.ofType(IAM_POLICY)) {
    if (list(policy.Properties?.Roles).some((r) => namesRole(index, r, roleId)))
      statements.push(...statementsOf(policy.Properties?.PolicyDocument));
  }
  for (const [, policy] of index.ofType(IAM_ROLE_POLICY)) {
    if (namesRole(index, policy.Properties?.RoleName, roleId))
      statements.push(...statementsOf(policy.Properties?.PolicyDocument));
  }
  const attached = list(role.ManagedPolicyArns);
  for (const [policyId, policy] of index.ofType(IAM_MANAGED_POLICY)) {
    const byRole = list(policy.Properties?.Roles).some((r) => namesRole(index, r, roleId));
    const byArn = attached.some((a) => intrinsicTarget(a)?.id === policyId);
    if (byRole || byArn) statements.push(...statementsOf(policy.Properties?.PolicyDocument));
  }
  const unreadable = attached
    .filter((a) => targetOfType(index, a, IAM_MANAGED_POLICY) === undefined)
    .map(render)
    .filter((arn) => !MANAGED_POLICIES_WITHOUT_SEND.some((name) => arn.endsWith(`/${name}`)));
  return { statements, unreadable };
}

/** The queue-policy statements of the template that apply to a queue. */
function queuePolicyStatements(index: TemplateIndex, queueId: string): Json[] {
  const name = literalProperty(index.resources.get(queueId), 'QueueName');
  const namesQueue = (q: unknown): boolean =>
    targetOfType(index, q, QUEUE, [undefined, 'QueueUrl']) === queueId ||
    (typeof q === 'string' && name !== undefined && q.endsWith(`/${name}`));
  return [
    ...index.ofType(QUEUE_POLICY).filter(([, p]) => list(p.Properties?.Queues).some(namesQueue)),
    ...index.ofType(QUEUE_INLINE_POLICY).filter(([, p]) => namesQueue(p.Properties?.Queue)),
  ].flatMap(([, p]) => statementsOf(p.Properties?.PolicyDocument));
}

/** The environment variables of a function that name each queue, by queue. */
export function queueVariables(index: TemplateIndex, fn: TemplateResource): Map<string, string[]> {
  const environment = fn.Properties?.Environment;
  const variables = isRecord(environment) && isRecord(environment.Variables) ? environment.Variables : {};
  const byQueue = new Map<string, string[]>();
  for (const [name, value] of Object.entries(variables)) {
    for (const queueId of new Set(queuesIn(index, value)))
      byQueue.set(queueId, [...(byQueue.get(queueId) ?? []), name]);
  }
  return byQueue;
}

/** Whether `queueId` is a FIFO queue that an event source mapping of function `fnId` consumes. */
function fifoSourceOf(index: TemplateIndex, fnId: string, queueId: string): boolean {
  const fifo = index.props(queueId).FifoQueue;
  if (fifo !== true && fifo !== 'true') return false;
  return index
    .ofType(MAPPING)
    .some(
      ([, m]) =>
        intrinsicTarget(m.Properties?.FunctionName)?.id === fnId &&
        targetOfType(index, m.Properties?.EventSourceArn, QUEUE, ['Arn']) === queueId,
    );
}

/** What the template says of a role's sqs:SendMessage on a queue (identity and queue policies). */
function sendPermission(
  index: TemplateIndex,
  roleId: string,
  queueId: string,
): { denied: boolean; allowed: boolean; unreadable: string[] } {
  const target = queueTarget(index, queueId);
  const { statements, unreadable } = roleStatements(index, roleId);
  const resourcePolicy = queuePolicyStatements(index, queueId);
  const role = { roleId };
  const identityApplies = (s: Json): boolean =>
    coversAction(s, 'sqs:SendMessage') && coversResource(s, target);
  const resourceApplies = (s: Json): boolean => identityApplies(s) && coversPrincipal(s, role);
  const denied =
    statements.some((s) => effectIs(s, 'Deny') && unconditional(s) && identityApplies(s)) ||
    resourcePolicy.some((s) => effectIs(s, 'Deny') && unconditional(s) && resourceApplies(s));
  const allowed =
    statements.some((s) => effectIs(s, 'Allow') && identityApplies(s)) ||
    resourcePolicy.some((s) => effectIs(s, 'Allow') && resourceApplies(s));
  return { denied, allowed, unreadable };
}

/** Whether the template lets function `fnId` send to queue `queueId` (its role is in the template, allowed, not denied). */
export function maySendTo(index: TemplateIndex, fnId: string, queueId: string): boolean {
  const roleId = targetOfType(index, index.props(fnId).Role, ROLE, ['Arn']);
  if (roleId === undefined) return false;
  const { denied, allowed } = sendPermission(index, roleId, queueId);
  return allowed && !denied;
}

/**
 * F4-QueueSendGrant: a function given a queue in its environment may send to it, except the
 * FIFO queue it consumes (a FIFO deferral holds the message instead of re-sending it).
 *
 * Tenang's job runner re-sends a deferred job to its own source queue (`QUEUE_URL`) and
 * dead-letters to `DLQ_URL`, so a function that receives a queue sends to it. SQS grants
 * `sqs:SendMessage` on a queue's ARN (SQS "Basic examples of Amazon SQS policies",
 * https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-basic-examples-of-sqs-policies.html).
 * IAM "Policy evaluation for requests within a single account"
 * (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic_policy-eval-basics.html):
 * "If either the identity-based policy or the resource-based policy within the same account allows
 * the request and the other doesn't, the request is still allowed", and "An explicit deny in any
 * of the policies overrides the allow". So the role's policies or the queue's policy naming the
 * role may grant it, and an unconditional Deny in either refuses it.
 */
const queueSendGrant: TemplateRule = {
  suffix: 'F4-QueueSendGrant',
  featureId: 'F4', // deploy readiness
  title:
    "A function whose environment names a queue may send to it: its role is allowed sqs:SendMessage on the queue's ARN (role policy, or the queue's policy naming the role).",
  explanation:
    'The job runner re-sends deferred jobs to their source queue and dead-letters to the DLQ; without sqs:SendMessage those sends fail with AccessDenied at run time: the job is held and the permission-denied alarm pages (runbooks/permission-denied.md), and nothing it should do happens until the grant is deployed.',
  reads: {
    [FUNCTION]: ['Environment', 'Role'],
    [ROLE]: ['Policies', 'ManagedPolicyArns'],
    [IAM_POLICY]: ['Roles', 'PolicyDocument'],
    [QUEUE_POLICY]: ['Queues', 'PolicyDocument'],
  },
  check: (index) =>
    index.ofType(FUNCTION).flatMap(([fnId, fn]) => {
      const byQueue = queueVariables(index, fn);
      if (byQueue.size === 0) return [];
      const roleId = targetOfType(index, fn.Properties?.Role, ROLE, ['Arn']);
      return [...byQueue].map(([queueId, names]) => {
        const subject = `${fnId} names ${queueId} in ${names.join(', ')}`;
        if (roleId === undefined)
          return finding(
            fnId,
            true,
            `${subject}: its role ${render(fn.Properties?.Role)} is not defined in this template (imported), so its sqs:SendMessage grant was not checked`,
          );
        if (fifoSourceOf(index, fnId, queueId))
          return finding(
            fnId,
            true,
            `${subject}: it is the FIFO queue the function consumes, which has no per-message delay: the runner defers there by holding the message (ChangeMessageVisibility, part of consuming), it never re-sends to it`,
          );
        const { denied, allowed, unreadable } = sendPermission(index, roleId, queueId);
        if (denied)
          return finding(
            fnId,
            false,
            `${subject}: a Deny without a condition refuses its role ${roleId} sqs:SendMessage on it: remove that Deny`,
          );
        if (allowed)
          return finding(fnId, true, `${subject}: its role ${roleId} is allowed sqs:SendMessage on it`);
        if (unreadable.length > 0)
          return finding(
            fnId,
            true,
            `${subject}: no statement of the template allows its role ${roleId} sqs:SendMessage on it, and its managed policies ${unreadable.join(', ')} are not defined in this template, so not checked`,
          );
        return finding(
          fnId,
          false,
          `${subject}: its role ${roleId} is not allowed sqs:SendMessage on it: grant it (CDK: queue.grantSendMessages(fn), or a role policy statement sqs:SendMessage on the queue's Arn)`,
        );
      });
    }),
};

// ---------------------------------------------------------------------------------------------
// F5-AlarmSubscriber
// ---------------------------------------------------------------------------------------------

/** Every action value of each alarm of the template that has any, by alarm. */
function alarmActions(index: TemplateIndex): Map<string, unknown[]> {
  const byAlarm = new Map<string, unknown[]>();
  for (const [alarmId, alarm] of [...index.ofType(ALARM), ...index.ofType(COMPOSITE_ALARM)]) {
    const values = ALARM_ACTION_PROPERTIES.flatMap((key) => [...list(alarm.Properties?.[key])]);
    if (values.length > 0) byAlarm.set(alarmId, values);
  }
  return byAlarm;
}

/**
 * An SNS topic an action names that the template does not create: a literal topic ARN, or a
 * reference that resolves outside the template (a parameter, an import).
 */
function outsideTopic(index: TemplateIndex, value: unknown): string | undefined {
  if (topicNamed(index, value) !== undefined) return undefined;
  const target = intrinsicTarget(value);
  if (target !== undefined && index.resources.has(target.id)) return undefined;
  const text = render(value);
  return /^arn:[^:]*:sns:/.test(text) || (target !== undefined && !index.resources.has(target.id))
    ? text
    : undefined;
}

/** The subscriptions of a template topic, as `id (protocol endpoint)`, confirmed and pending apart. */
function subscriptionsOf(index: TemplateIndex, topicId: string): { confirmed: string[]; pending: string[] } {
  const confirmed: string[] = [];
  const pending: string[] = [];
  for (const [id, sub] of index.ofType(SUBSCRIPTION)) {
    if (topicNamed(index, sub.Properties?.TopicArn) !== topicId) continue;
    const endpoint = `${render(sub.Properties?.Protocol)} ${render(sub.Properties?.Endpoint)}`;
    // The live model's keys already say it.
    const shown = id.endsWith(endpoint) ? id : `${id} (${endpoint})`;
    (sub.Metadata?.[PENDING_CONFIRMATION_METADATA_KEY] === true ? pending : confirmed).push(shown);
  }
  // AWS::SNS::Topic's own Subscription property subscribes too.
  list(index.props(topicId).Subscription)
    .filter(isRecord)
    .forEach((s) => confirmed.push(`${topicId}.Subscription (${render(s.Protocol)} ${render(s.Endpoint)})`));
  return { confirmed, pending };
}

/** How a reader fixes a topic without a subscriber, in a template, with CDK and in a declaration. */
const ADD_SUBSCRIBER =
  "add a subscriber: an AWS::SNS::Subscription on the topic (CDK: topic.addSubscription(new EmailSubscription('on-call@example.com'))); in a tenang declaration stage.alarmTopic.deliverTo: [{ email: 'on-call@example.com' }] (or { https: '<PagerDuty / Opsgenie integration URL>' }, or { topicArn: '<an existing topic, e.g. your AWS Chatbot one>' }), or pass -c tenang:alarmEmail=you@example.com to cdk synth / deploy. If no one is to be told, say why: deliverTo: { none: '<reason>' } (in a template: topic Metadata " +
  `${NO_SUBSCRIBER_METADATA_KEY})`;

/** What to do about subscriptions that wait for their endpoint. */
function pendingAdvice(pending: readonly string[]): string {
  const one = pending.length === 1;
  return `${pending.join(', ')} ${one ? 'is' : 'are'} PendingConfirmation and deliver${one ? 's' : ''} nothing until confirmed: an e-mail subscriber follows the "Confirm subscription" link in the "AWS Notification - Subscription Confirmation" mail; an HTTPS endpoint confirms by visiting the SubscribeURL of the SubscriptionConfirmation message (or ConfirmSubscription with its Token); unconfirmed, the token expires after 3 days and the subscription must be made again`;
}

/**
 * F5-AlarmSubscriber: every alarm notification reaches someone.
 *
 * A topic delivers only to its subscriptions; an alarm whose topic has none still publishes
 * successfully, and nobody is told. An e-mail or HTTP/S subscription delivers nothing until its
 * endpoint confirms it: ListSubscriptionsByTopic lists it with SubscriptionArn
 * `PendingConfirmation` (SNS API Subscribe, https://docs.aws.amazon.com/sns/latest/api/API_Subscribe.html:
 * the endpoint owner must call ConfirmSubscription with the token sent to the endpoint;
 * ConfirmSubscription, https://docs.aws.amazon.com/sns/latest/api/API_ConfirmSubscription.html).
 * A template cannot show confirmation: there every AWS::SNS::Subscription counts, and the live
 * audit marks the pending ones (PENDING_CONFIRMATION_METADATA_KEY) so that they do not.
 *
 * Per topic of the template that alarms notify: compliant when it has a subscription, when its
 * metadata gives the reason no one subscribes (NO_SUBSCRIBER_METADATA_KEY), or when every alarm
 * notifying it also notifies a topic that delivers; a topic outside the template delivers as far
 * as the template can tell (its subscriptions are the operator's), so that finding is
 * not-checkable.
 */
const alarmSubscriber: TemplateRule = {
  suffix: 'F5-AlarmSubscriber',
  featureId: 'F5', // every alarm reaches a person
  title:
    'Every SNS topic an alarm notifies has a subscriber (an AWS::SNS::Subscription, confirmed when live), or a written reason that no one is told, or each of its alarms also notifies a topic that has one.',
  explanation:
    'SNS delivers only to subscriptions: an alarm whose topic has none publishes successfully and nobody is told. An e-mail or HTTPS subscription delivers nothing until its endpoint confirms it (PendingConfirmation).',
  reads: {
    [ALARM]: ['AlarmActions', 'OKActions', 'InsufficientDataActions'],
    [COMPOSITE_ALARM]: ['AlarmActions', 'OKActions', 'InsufficientDataActions'],
    [SUBSCRIPTION]: ['TopicArn'],
  },
  check: (index) => {
    const topics = notifiedTopics(index);
    const reasonOf = (topicId: string): string | undefined => {
      const reason = index.resources.get(topicId)?.Metadata?.[NO_SUBSCRIBER_METADATA_KEY];
      return typeof reason === 'string' && reason.trim() !== '' ? reason.trim() : undefined;
    };
    const delivers = (topicId: string): boolean =>
      subscriptionsOf(index, topicId).confirmed.length > 0 || reasonOf(topicId) !== undefined;
    const actions = alarmActions(index);
    return [...topics].map(([topicId, alarms]) => {
      const { confirmed, pending } = subscriptionsOf(index, topicId);
      const shownAlarms = alarms.length > 3 ? [...alarms.slice(0, 3), `${alarms.length - 3} more`] : alarms;
      const subject = `${topicId} (notified by ${shownAlarms.join(', ')})`;
      const pendingNote = pending.length > 0 ? `; ${pendingAdvice(pending)}` : '';
      if (confirmed.length > 0)
        return finding(topicId, true, `${subject}: subscribed by ${confirmed.join(', ')}${pendingNote}`);
      const reason = reasonOf(topicId);
      if (reason !== undefined)
        return finding(topicId, true, `${subject}: no subscriber, acknowledged: ${reason}${pendingNote}`);
      // Each alarm may still reach someone through another of its actions.
      const elsewhere = alarms.map((alarmId) => {
        const others = actions.get(alarmId) ?? [];
        const inTemplate = others
          .map((v) => topicNamed(index, v))
          .filter((t): t is string => t !== undefined && t !== topicId && delivers(t));
        const outside = others.map((v) => outsideTopic(index, v)).filter((t): t is string => t !== undefined);
        return { alarmId, inTemplate, outside };
      });
      const unreached = elsewhere.filter((e) => e.inTemplate.length === 0 && e.outside.length === 0);
      if (unreached.length === 0) {
        const viaOutside = elsewhere.filter((e) => e.inTemplate.length === 0);
        const outsideTopics = [...new Set(viaOutside.flatMap((e) => e.outside))];
        const why = `${subject}: no subscriber, but every alarm notifying it also notifies a topic that delivers${
          outsideTopics.length > 0
            ? `: ${outsideTopics.join(', ')}, outside this template, whose subscribers (and its policy letting CloudWatch publish) are the operator's and not checked`
            : ''
        }${pendingNote}`;
        return outsideTopics.length > 0
          ? { ...finding(topicId, true, why), checkable: false }
          : finding(topicId, true, why);
      }
      const shownUnreached = unreached.map((e) => e.alarmId);
      const unreachedText =
        unreached.length === alarms.length
          ? 'no alarm notifying it notifies another topic that delivers'
          : `${shownUnreached.length > 3 ? `${shownUnreached.slice(0, 3).join(', ')} and ${shownUnreached.length - 3} more` : shownUnreached.join(', ')} notify no other topic that delivers`;
      const state =
        pending.length > 0 ? `has no confirmed subscriber (${pendingAdvice(pending)})` : 'has no subscriber';
      return finding(
        topicId,
        false,
        `${subject} ${state}, and ${unreachedText}: their notifications are published and read by no one. ${pending.length > 0 ? `Confirm a subscription, or ${ADD_SUBSCRIBER}` : `A${ADD_SUBSCRIBER.slice(1)}`}`,
      );
    });
  },
};

/** The deploy-readiness rules, in the order the checklist lists them. */
export const DEPLOY_READINESS_RULES: readonly TemplateRule[] = [
  valkeyAuth,
  retainOnCreate,
  alarmTopicPublish,
  queueSendGrant,
  alarmSubscriber,
  operatorReach,
];
