/**
 * The deploy-readiness rules over hand-written templates, one failing and one passing
 * variant per rule plus the edge cases, and once through cdk-nag on a tiny CDK stack.
 */
import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { DEPLOY_READINESS_RULES } from '../../../lib/audit/deploy-readiness';
import {
  TEMPLATE_RULES,
  TemplateIndex,
  ruleId,
  type ResourceFinding,
  type TemplateResource,
} from '../../../lib/audit/rules';
import { auditTemplate } from '../../../lib/audit/template-audit';
import { TenangChecks } from '../../../lib/audit/tenang-checks';

type Resources = Record<string, TemplateResource>;

/** The findings of one deploy-readiness rule over a template's resources. */
function check(suffix: string, resources: Resources): readonly ResourceFinding[] {
  const rule = DEPLOY_READINESS_RULES.find((r) => r.suffix === suffix);
  if (rule === undefined) throw new Error(`no rule ${suffix}`);
  return rule.check(new TemplateIndex({ Resources: resources }));
}

/** The one finding a rule makes (fails the test when it makes none or several). */
function only(suffix: string, resources: Resources): ResourceFinding {
  const findings = check(suffix, resources);
  expect(findings).toHaveLength(1);
  const [first] = findings;
  if (first === undefined) throw new Error('no finding');
  return first;
}

const ref = (id: string): { Ref: string } => ({ Ref: id });
const getAtt = (id: string, attribute: string): { 'Fn::GetAtt': [string, string] } => ({
  'Fn::GetAtt': [id, attribute],
});

describe('Constant: DEPLOY_READINESS_RULES', () => {
  it('when the checklist is listed, it holds the five rules with their feature ids', () => {
    // Act
    const ids = TEMPLATE_RULES.map((r) => [ruleId(r), r.featureId]);

    // Assess
    expect(ids).toEqual(
      expect.arrayContaining([
        ['Tenang-F1-ValkeyAuth', 'F1'],
        ['Tenang-F2-RetainOnCreate', 'F2'],
        ['Tenang-F3-AlarmTopicPublish', 'F3'],
        ['Tenang-F4-QueueSendGrant', 'F4'],
        ['Tenang-F5-AlarmSubscriber', 'F5'],
      ]),
    );
  });
});

describe('Rule: F1-ValkeyAuth', () => {
  const iamUser = (userId: string): TemplateResource => ({
    Type: 'AWS::ElastiCache::User',
    Properties: {
      Engine: 'valkey',
      UserId: userId,
      UserName: userId,
      AccessString: 'on ~* +@all',
      AuthenticationMode: { Type: 'iam' },
    },
  });
  const passwordDefault: TemplateResource = {
    Type: 'AWS::ElastiCache::User',
    Properties: {
      Engine: 'valkey',
      UserId: 'app-default-off',
      UserName: 'default',
      AccessString: 'off -@all',
      AuthenticationMode: { Type: 'password', Passwords: ['a-long-enough-password-1'] },
    },
  };
  const group = (userIds: unknown[], engine = 'valkey'): TemplateResource => ({
    Type: 'AWS::ElastiCache::UserGroup',
    Properties: { Engine: engine, UserGroupId: 'app-users', UserIds: userIds },
  });

  it('when a member has NoPasswordRequired, the group fails and the why says how to authenticate it', () => {
    // Prepare
    const resources: Resources = {
      App: iamUser('app'),
      DefaultOff: {
        Type: 'AWS::ElastiCache::User',
        Properties: {
          Engine: 'valkey',
          UserId: 'app-default-off',
          UserName: 'default',
          AccessString: 'off -@all',
          NoPasswordRequired: true,
        },
      },
      Users: group([ref('App'), ref('DefaultOff')]),
    };

    // Act
    const result = only('F1-ValkeyAuth', resources);

    // Assess
    expect(result).toMatchObject({ logicalId: 'Users', compliant: false });
    expect(result.why).toContain('DefaultOff (no password required)');
    expect(result.why).toContain('AuthenticationMode Type password');
  });

  it('when a member named by its literal id has AuthenticationMode no-password-required, the group fails', () => {
    // Prepare
    const resources: Resources = {
      Open: {
        Type: 'AWS::ElastiCache::User',
        Properties: {
          Engine: 'valkey',
          UserId: 'open-default',
          UserName: 'default',
          AccessString: 'on ~* +@all',
          AuthenticationMode: { Type: 'no-password-required' },
        },
      },
      Users: group(['open-default']),
    };

    // Act
    const result = only('F1-ValkeyAuth', resources);

    // Assess
    expect(result.compliant).toBe(false);
    expect(result.why).toContain('Open (no password required)');
  });

  it('when every member authenticates and one is named default, the group passes', () => {
    // Prepare
    const resources: Resources = {
      App: iamUser('app'),
      DefaultOff: passwordDefault,
      Users: group([ref('App'), 'app-default-off']),
    };

    // Act
    const result = only('F1-ValkeyAuth', resources);

    // Assess
    expect(result).toMatchObject({ logicalId: 'Users', compliant: true });
  });

  it('when no member is named default, the group fails and the why says to add one with a password', () => {
    // Prepare
    const resources: Resources = { App: iamUser('app'), Users: group([ref('App')]) };

    // Act
    const result = only('F1-ValkeyAuth', resources);

    // Assess
    expect(result.compliant).toBe(false);
    expect(result.why).toContain('has no user named "default"');
    expect(result.why).toContain('UserName default');
  });

  it("when the group names ElastiCache's own default user, it fails: that user has no password", () => {
    // Prepare
    const resources: Resources = { App: iamUser('app'), Users: group([ref('App'), 'default']) };

    // Act
    const result = only('F1-ValkeyAuth', resources);

    // Assess
    expect(result.compliant).toBe(false);
    expect(result.why).toContain("ElastiCache's own default user");
  });

  it('when a member id is not defined in the template, the group passes and the why says it was not checked', () => {
    // Prepare
    const resources: Resources = {
      DefaultOff: passwordDefault,
      Users: group([ref('DefaultOff'), 'shared-ops']),
    };

    // Act
    const result = only('F1-ValkeyAuth', resources);

    // Assess
    expect(result.compliant).toBe(true);
    expect(result.why).toContain('"shared-ops" not defined in this template, so not checked');
  });

  it('when the group is a Redis OSS one, the rule does not apply', () => {
    // Prepare
    const resources: Resources = { Users: group(['default'], 'redis') };

    // Act
    const findings = check('F1-ValkeyAuth', resources);

    // Assess
    expect(findings).toEqual([]);
  });
});

describe('Rule: F2-RetainOnCreate', () => {
  /** A queue named `name` (none when null). */
  const queue = (extra: Partial<TemplateResource>, name: unknown = 'jobs'): TemplateResource => ({
    Type: 'AWS::SQS::Queue',
    Properties: name === null ? {} : { QueueName: name },
    ...extra,
  });

  it('when a named queue has DeletionPolicy Retain, it fails and the why asks for RetainExceptOnCreate', () => {
    // Prepare
    const resources: Resources = { Jobs: queue({ DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' }) };

    // Act
    const result = only('F2-RetainOnCreate', resources);

    // Assess
    expect(result).toMatchObject({ logicalId: 'Jobs', compliant: false });
    expect(result.why).toContain('set DeletionPolicy RetainExceptOnCreate');
    expect(result.why).toContain('already exists');
  });

  it('when a named table has RetainExceptOnCreate and UpdateReplacePolicy Retain, it passes and notes replacement needs a new name', () => {
    // Prepare
    const resources: Resources = {
      Records: {
        Type: 'AWS::DynamoDB::Table',
        Properties: { TableName: 'records' },
        DeletionPolicy: 'RetainExceptOnCreate',
        UpdateReplacePolicy: 'Retain',
      },
    };

    // Act
    const result = only('F2-RetainOnCreate', resources);

    // Assess
    expect(result.compliant).toBe(true);
    expect(result.why).toContain('a change that needs replacement needs a new name');
  });

  it('when only UpdateReplacePolicy is Retain (DeletionPolicy default), it passes', () => {
    // Prepare
    const resources: Resources = {
      Logs: {
        Type: 'AWS::Logs::LogGroup',
        Properties: { LogGroupName: '/tenang/jobs' },
        UpdateReplacePolicy: 'Retain',
      },
    };

    // Act
    const result = only('F2-RetainOnCreate', resources);

    // Assess
    expect(result.compliant).toBe(true);
    expect(result.why).toContain('DeletionPolicy Delete (default)');
  });

  it('when the name is an intrinsic (any non-empty value), a Retain still fails', () => {
    // Prepare
    const resources: Resources = {
      Jobs: queue({ DeletionPolicy: 'Retain' }, { 'Fn::Sub': '${AWS::StackName}-jobs' }),
    };

    // Act
    const result = only('F2-RetainOnCreate', resources);

    // Assess
    expect(result.compliant).toBe(false);
  });

  it('when a retained resource has no fixed name, the rule does not apply', () => {
    // Prepare
    const resources: Resources = { Jobs: queue({ DeletionPolicy: 'Retain' }, null) };

    // Act
    const findings = check('F2-RetainOnCreate', resources);

    // Assess
    expect(findings).toEqual([]);
  });
});

describe('Rule: F3-AlarmTopicPublish', () => {
  /** Exactly what CDK writes for `new sns.Topic(stack, 'Topic', { enforceSSL: true })`. */
  const ENFORCE_SSL_STATEMENT = {
    Action: 'sns:Publish',
    Condition: { Bool: { 'aws:SecureTransport': 'false' } },
    Effect: 'Deny',
    Principal: '*',
    Resource: { Ref: 'Topic' },
    Sid: 'AllowPublishThroughSSLOnly',
  };
  const CLOUDWATCH_PUBLISH = {
    Action: 'sns:Publish',
    Effect: 'Allow',
    Principal: { Service: 'cloudwatch.amazonaws.com' },
    Resource: { Ref: 'Topic' },
    Sid: 'AllowCloudWatchAlarms',
  };
  const alarm = (key = 'AlarmActions', type = 'AWS::CloudWatch::Alarm'): TemplateResource => ({
    Type: type,
    Properties: { [key]: [ref('Topic')] },
  });
  const topicPolicy = (statements: unknown[]): TemplateResource => ({
    Type: 'AWS::SNS::TopicPolicy',
    Properties: {
      PolicyDocument: { Statement: statements, Version: '2012-10-17' },
      Topics: [ref('Topic')],
    },
  });
  const topic = (properties: Record<string, unknown> = {}): TemplateResource => ({
    Type: 'AWS::SNS::Topic',
    Properties: properties,
  });

  it('when the topic has the CDK enforceSSL policy only, it fails: that policy replaces the default and allows no one', () => {
    // Prepare
    const resources: Resources = {
      Topic: topic(),
      TopicPolicy: topicPolicy([ENFORCE_SSL_STATEMENT]),
      Alarm: alarm(),
    };

    // Act
    const result = only('F3-AlarmTopicPublish', resources);

    // Assess
    expect(result).toMatchObject({ logicalId: 'Topic', compliant: false });
    expect(result.why).toContain('notified by Alarm');
    expect(result.why).toContain('add an Allow statement for Service cloudwatch.amazonaws.com');
  });

  it('when the enforceSSL Deny sits beside an Allow for CloudWatch, it passes: the SecureTransport Deny does not block', () => {
    // Prepare
    const resources: Resources = {
      Topic: topic(),
      TopicPolicy: topicPolicy([ENFORCE_SSL_STATEMENT, CLOUDWATCH_PUBLISH]),
      Alarm: alarm(),
    };

    // Act
    const result = only('F3-AlarmTopicPublish', resources);

    // Assess
    expect(result.compliant).toBe(true);
  });

  it.each([
    ['sns:Publish', { Service: ['cloudwatch.amazonaws.com'] }],
    ['SNS:Publish', { Service: 'cloudwatch.amazonaws.com' }],
    ['sns:*', '*'],
    ['sns:Pub*', { AWS: '*' }],
    [['sns:Subscribe', '*'], { AWS: ['*'] }],
  ])('when an Allow grants %j to %j, it passes', (action, principal) => {
    // Prepare
    const resources: Resources = {
      Topic: topic(),
      TopicPolicy: topicPolicy([
        { Effect: 'Allow', Action: action, Principal: principal, Resource: ref('Topic') },
      ]),
      Alarm: alarm(),
    };

    // Act
    const result = only('F3-AlarmTopicPublish', resources);

    // Assess
    expect(result.compliant).toBe(true);
  });

  it('when an Allow names CloudWatch but for another action, it fails', () => {
    // Prepare
    const resources: Resources = {
      Topic: topic(),
      TopicPolicy: topicPolicy([{ ...CLOUDWATCH_PUBLISH, Action: 'sns:Subscribe' }]),
      Alarm: alarm(),
    };

    // Act
    const result = only('F3-AlarmTopicPublish', resources);

    // Assess
    expect(result.compliant).toBe(false);
  });

  it('when a Deny without a condition covers CloudWatch, it fails even beside an Allow', () => {
    // Prepare
    const { Condition: _condition, ...unconditional } = ENFORCE_SSL_STATEMENT;
    const resources: Resources = {
      Topic: topic(),
      TopicPolicy: topicPolicy([CLOUDWATCH_PUBLISH, { ...unconditional, Action: 'SNS:*' }]),
      Alarm: alarm(),
    };

    // Act
    const result = only('F3-AlarmTopicPublish', resources);

    // Assess
    expect(result.compliant).toBe(false);
    expect(result.why).toContain('denies sns:Publish to cloudwatch.amazonaws.com without a condition');
    expect(result.why).toContain('remove or condition that Deny');
  });

  it('when no topic policy covers the topic, it passes on the default policy', () => {
    // Prepare
    const resources: Resources = { Topic: topic(), Alarm: alarm('OKActions') };

    // Act
    const result = only('F3-AlarmTopicPublish', resources);

    // Assess
    expect(result.compliant).toBe(true);
    expect(result.why).toContain('default policy');
  });

  it('when the topic is encrypted with alias/aws/sns, it fails and the why asks for a customer managed key', () => {
    // Prepare
    const resources: Resources = {
      Topic: topic({ KmsMasterKeyId: 'alias/aws/sns' }),
      Alarm: alarm('InsufficientDataActions', 'AWS::CloudWatch::CompositeAlarm'),
    };

    // Act
    const result = only('F3-AlarmTopicPublish', resources);

    // Assess
    expect(result.compliant).toBe(false);
    expect(result.why).toContain('AWS managed key alias/aws/sns');
    expect(result.why).toContain('customer managed key');
  });

  it('when the topic key of the template does not let CloudWatch use it, it fails and names the missing actions', () => {
    // Prepare
    const resources: Resources = {
      Key: {
        Type: 'AWS::KMS::Key',
        Properties: {
          KeyPolicy: {
            Statement: [
              {
                Effect: 'Allow',
                Principal: { AWS: 'arn:aws:iam::123456789012:root' },
                Action: 'kms:*',
                Resource: '*',
              },
              {
                Effect: 'Allow',
                Principal: { Service: 'cloudwatch.amazonaws.com' },
                Action: 'kms:Decrypt',
                Resource: '*',
              },
            ],
          },
        },
      },
      Topic: topic({ KmsMasterKeyId: getAtt('Key', 'Arn') }),
      Alarm: alarm(),
    };

    // Act
    const result = only('F3-AlarmTopicPublish', resources);

    // Assess
    expect(result.compliant).toBe(false);
    expect(result.why).toContain(
      "key Key's policy does not allow cloudwatch.amazonaws.com kms:GenerateDataKey",
    );
    expect(result.why).toContain('does not allow cloudwatch.amazonaws.com kms:GenerateDataKey: add');
  });

  it.each([[['kms:Decrypt', 'kms:GenerateDataKey*']], ['kms:*'], [['kms:Decrypt', 'kms:GenerateDataKey']]])(
    'when the key policy allows CloudWatch %j, it passes',
    (action) => {
      // Prepare
      const resources: Resources = {
        Key: {
          Type: 'AWS::KMS::Key',
          Properties: {
            KeyPolicy: {
              Statement: [
                {
                  Effect: 'Allow',
                  Principal: { Service: 'cloudwatch.amazonaws.com' },
                  Action: action,
                  Resource: '*',
                },
              ],
            },
          },
        },
        Topic: topic({ KmsMasterKeyId: ref('Key') }),
        Alarm: alarm(),
      };

      // Act
      const result = only('F3-AlarmTopicPublish', resources);

      // Assess
      expect(result.compliant).toBe(true);
    },
  );

  it('when the topic key is imported, it passes and the why says its policy was not checked', () => {
    // Prepare
    const resources: Resources = {
      Topic: topic({
        KmsMasterKeyId: 'arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab',
      }),
      Alarm: alarm(),
    };

    // Act
    const result = only('F3-AlarmTopicPublish', resources);

    // Assess
    expect(result.compliant).toBe(true);
    expect(result.why).toContain('not defined in this template, so its key policy was not checked');
  });

  it('when no alarm notifies a topic, the rule does not apply', () => {
    // Prepare
    const resources: Resources = { Topic: topic(), TopicPolicy: topicPolicy([ENFORCE_SSL_STATEMENT]) };

    // Act
    const findings = check('F3-AlarmTopicPublish', resources);

    // Assess
    expect(findings).toEqual([]);
  });
});

describe('Rule: F4-QueueSendGrant', () => {
  const role = (properties: Record<string, unknown> = {}): TemplateResource => ({
    Type: 'AWS::IAM::Role',
    Properties: {
      AssumeRolePolicyDocument: {
        Statement: [
          { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' } },
        ],
      },
      ManagedPolicyArns: [
        {
          'Fn::Join': [
            '',
            ['arn:', ref('AWS::Partition'), ':iam::aws:policy/service-role/AWSLambdaBasicExecutionRole'],
          ],
        },
      ],
      ...properties,
    },
  });
  const worker = (
    variables: Record<string, unknown>,
    roleValue: unknown = getAtt('Role', 'Arn'),
  ): TemplateResource => ({
    Type: 'AWS::Lambda::Function',
    Properties: { Role: roleValue, Environment: { Variables: variables } },
  });
  const policy = (statement: Record<string, unknown>, roleId = 'Role'): TemplateResource => ({
    Type: 'AWS::IAM::Policy',
    Properties: {
      PolicyDocument: { Statement: [statement], Version: '2012-10-17' },
      PolicyName: 'WorkerPolicy',
      Roles: [ref(roleId)],
    },
  });
  const sendToJobs = {
    Action: ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl'],
    Effect: 'Allow',
    Resource: getAtt('Jobs', 'Arn'),
  };
  const jobs: TemplateResource = { Type: 'AWS::SQS::Queue', Properties: {} };

  it("when the function's role may not send to its QUEUE_URL queue, it fails and the why says how to grant it", () => {
    // Prepare
    const resources: Resources = { Jobs: jobs, Role: role(), Worker: worker({ QUEUE_URL: ref('Jobs') }) };

    // Act
    const result = only('F4-QueueSendGrant', resources);

    // Assess
    expect(result).toMatchObject({ logicalId: 'Worker', compliant: false });
    expect(result.why).toContain('Worker names Jobs in QUEUE_URL');
    expect(result.why).toContain('queue.grantSendMessages(fn)');
  });

  it('when the queue is the FIFO queue the function consumes, it passes without a send grant (a FIFO deferral holds the message); a standard one fails', () => {
    const mapping: TemplateResource = {
      Type: 'AWS::Lambda::EventSourceMapping',
      Properties: { FunctionName: ref('Worker'), EventSourceArn: getAtt('Jobs', 'Arn') },
    };
    const fifo: TemplateResource = { Type: 'AWS::SQS::Queue', Properties: { FifoQueue: true } };
    const base = { Role: role(), Worker: worker({ QUEUE_URL: ref('Jobs') }), Mapping: mapping };

    expect(only('F4-QueueSendGrant', { ...base, Jobs: fifo })).toMatchObject({ compliant: true });
    expect(only('F4-QueueSendGrant', { ...base, Jobs: fifo }).why).toContain('FIFO');
    expect(only('F4-QueueSendGrant', { ...base, Jobs: jobs })).toMatchObject({ compliant: false });
  });

  it('when a policy attached to the role allows sqs:SendMessage on the queue ARN, it passes (what CDK grantSendMessages writes)', () => {
    // Prepare
    const resources: Resources = {
      Jobs: jobs,
      Role: role(),
      Policy: policy(sendToJobs),
      Worker: worker({ QUEUE_URL: ref('Jobs') }),
    };

    // Act
    const result = only('F4-QueueSendGrant', resources);

    // Assess
    expect(result.compliant).toBe(true);
  });

  it.each([
    ['sqs:*', getAtt('Jobs', 'Arn')],
    ['sqs:Send*', '*'],
    ['SQS:SendMessage', 'arn:aws:sqs:*:*:*'],
    ['*', { 'Fn::Sub': 'arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:${Jobs.QueueName}' }],
  ])('when the role is allowed %s on %j, it passes', (action, resource) => {
    // Prepare
    const resources: Resources = {
      Jobs: jobs,
      Role: role(),
      Policy: policy({ Effect: 'Allow', Action: action, Resource: resource }),
      Worker: worker({ QUEUE_URL: ref('Jobs') }),
    };

    // Act
    const result = only('F4-QueueSendGrant', resources);

    // Assess
    expect(result.compliant).toBe(true);
  });

  it("when the role's inline Policies allow it, it passes", () => {
    // Prepare
    const resources: Resources = {
      Jobs: jobs,
      Role: role({ Policies: [{ PolicyName: 'send', PolicyDocument: { Statement: [sendToJobs] } }] }),
      Worker: worker({ DLQ_URL: getAtt('Jobs', 'QueueUrl') }),
    };

    // Act
    const result = only('F4-QueueSendGrant', resources);

    // Assess
    expect(result.compliant).toBe(true);
  });

  it('when the queue policy allows the role, it passes', () => {
    // Prepare
    const resources: Resources = {
      Jobs: jobs,
      Role: role(),
      JobsPolicy: {
        Type: 'AWS::SQS::QueuePolicy',
        Properties: {
          Queues: [ref('Jobs')],
          PolicyDocument: {
            Statement: [
              {
                Effect: 'Allow',
                Principal: { AWS: getAtt('Role', 'Arn') },
                Action: 'sqs:SendMessage',
                Resource: getAtt('Jobs', 'Arn'),
              },
            ],
          },
        },
      },
      Worker: worker({ QUEUE_URL: ref('Jobs') }),
    };

    // Act
    const result = only('F4-QueueSendGrant', resources);

    // Assess
    expect(result.compliant).toBe(true);
  });

  it.each([
    ['Fn::Join', { 'Fn::Join': ['', ['https://', getAtt('Jobs', 'QueueName')]] }],
    ['Fn::Sub', { 'Fn::Sub': 'queue=${Jobs}' }],
    ['Fn::Sub with variables', { 'Fn::Sub': ['${Q}', { Q: getAtt('Jobs', 'Arn') }] }],
  ])('when the queue is named inside %s, the function is checked', (_kind, value) => {
    // Prepare
    const resources: Resources = { Jobs: jobs, Role: role(), Worker: worker({ TARGET: value }) };

    // Act
    const result = only('F4-QueueSendGrant', resources);

    // Assess
    expect(result).toMatchObject({ logicalId: 'Worker', compliant: false });
  });

  it('when the grant is on another queue or attached to another role, it fails', () => {
    // Prepare
    const resources: Resources = {
      Jobs: jobs,
      Other: { Type: 'AWS::SQS::Queue', Properties: {} },
      Role: role(),
      OtherRole: role(),
      OtherQueuePolicy: policy({ ...sendToJobs, Resource: getAtt('Other', 'Arn') }),
      OtherRolePolicy: policy(sendToJobs, 'OtherRole'),
      Worker: worker({ QUEUE_URL: ref('Jobs') }),
    };

    // Act
    const result = only('F4-QueueSendGrant', resources);

    // Assess
    expect(result.compliant).toBe(false);
  });

  it('when a Deny without a condition covers the send, it fails even beside an Allow', () => {
    // Prepare
    const resources: Resources = {
      Jobs: jobs,
      Role: role(),
      Policy: policy(sendToJobs),
      Deny: policy({ Effect: 'Deny', Action: 'sqs:*', Resource: '*' }),
      Worker: worker({ QUEUE_URL: ref('Jobs') }),
    };

    // Act
    const result = only('F4-QueueSendGrant', resources);

    // Assess
    expect(result.compliant).toBe(false);
    expect(result.why).toContain('remove that Deny');
  });

  it('when the role is imported by ARN, it passes and the why says the grant was not checked', () => {
    // Prepare
    const resources: Resources = {
      Jobs: jobs,
      Worker: worker({ QUEUE_URL: ref('Jobs') }, 'arn:aws:iam::123456789012:role/shared-worker'),
    };

    // Act
    const result = only('F4-QueueSendGrant', resources);

    // Assess
    expect(result.compliant).toBe(true);
    expect(result.why).toContain(
      'is not defined in this template (imported), so its sqs:SendMessage grant was not checked',
    );
  });

  it('when a function names no queue, the rule does not apply', () => {
    // Prepare
    const resources: Resources = { Role: role(), Worker: worker({ TABLE: 'records' }) };

    // Act
    const findings = check('F4-QueueSendGrant', resources);

    // Assess
    expect(findings).toEqual([]);
  });
});

describe('Rule: F5-AlarmSubscriber', () => {
  const OUTSIDE = 'arn:aws:sns:eu-west-1:123456789012:chatbot-alarms';
  const alarm = (...actionValues: unknown[]): TemplateResource => ({
    Type: 'AWS::CloudWatch::Alarm',
    Properties: { AlarmActions: actionValues, OKActions: actionValues },
  });
  const topic = (metadata?: Record<string, unknown>): TemplateResource => ({
    Type: 'AWS::SNS::Topic',
    Properties: { TopicName: 'tenang-dev-alarms' },
    ...(metadata === undefined ? {} : { Metadata: metadata }),
  });
  const subscription = (
    topicValue: unknown,
    protocol = 'email',
    endpoint = 'on-call@example.com',
    metadata?: Record<string, unknown>,
  ): TemplateResource => ({
    Type: 'AWS::SNS::Subscription',
    Properties: { TopicArn: topicValue, Protocol: protocol, Endpoint: endpoint },
    ...(metadata === undefined ? {} : { Metadata: metadata }),
  });

  it('when the topic alarms notify has no subscription, it fails, naming the alarms and what to add', () => {
    // Prepare
    const resources: Resources = { Topic: topic(), Backlog: alarm(ref('Topic')), Dlq: alarm(ref('Topic')) };

    // Act
    const result = only('F5-AlarmSubscriber', resources);

    // Assess
    expect(result.compliant).toBe(false);
    expect(result.logicalId).toBe('Topic');
    expect(result.why).toMatch(
      /^Topic \(notified by Backlog, Dlq\) has no subscriber, and no alarm notifying it/,
    );
    expect(result.why).toContain("stage.alarmTopic.deliverTo: [{ email: 'on-call@example.com' }]");
    expect(result.why).toContain('-c tenang:alarmEmail=you@example.com');
    expect(result.why).toContain("deliverTo: { none: '<reason>' }");
  });

  it.each([
    [
      'an AWS::SNS::Subscription by Ref',
      { Sub: subscription(ref('Topic')) },
      'subscribed by Sub (email on-call@example.com)',
    ],
    [
      'an HTTPS subscription by its literal ARN',
      {
        Sub: subscription(
          'arn:aws:sns:eu-west-1:123456789012:tenang-dev-alarms',
          'https',
          'https://events.pagerduty.com/x',
        ),
      },
      'subscribed by Sub (https https://events.pagerduty.com/x)',
    ],
  ])('when the topic has %s, it passes', (_case, extra, says) => {
    // Prepare
    const resources: Resources = { Topic: topic(), Backlog: alarm(ref('Topic')), ...extra };

    // Act
    const result = only('F5-AlarmSubscriber', resources);

    // Assess
    expect(result).toMatchObject({ compliant: true, logicalId: 'Topic' });
    expect(result.why).toContain(says);
  });

  it("when the topic's own Subscription property subscribes, it passes", () => {
    // Prepare
    const resources: Resources = {
      Topic: {
        Type: 'AWS::SNS::Topic',
        Properties: { Subscription: [{ Protocol: 'email', Endpoint: 'a@example.com' }] },
      },
      Backlog: alarm(ref('Topic')),
    };

    // Act / Assess
    expect(only('F5-AlarmSubscriber', resources).compliant).toBe(true);
  });

  it('when the only subscription is marked pending confirmation (live), it fails and says to confirm it', () => {
    // Prepare
    const resources: Resources = {
      Topic: topic(),
      Backlog: alarm(ref('Topic')),
      Sub: subscription(ref('Topic'), 'email', 'on-call@example.com', {
        'tenang:pending-confirmation': true,
      }),
    };

    // Act
    const result = only('F5-AlarmSubscriber', resources);

    // Assess
    expect(result.compliant).toBe(false);
    expect(result.why).toContain(
      'has no confirmed subscriber (Sub (email on-call@example.com) is PendingConfirmation',
    );
    expect(result.why).toContain('Confirm a subscription, or add a subscriber');
  });

  it('when the topic carries the reason no one subscribes, it passes as an acknowledged exception with that reason', () => {
    // Prepare
    const resources: Resources = {
      Topic: topic({
        'tenang:no-subscriber-reason': 'a scratch stage: its alarms are read on the dashboard',
      }),
      Backlog: alarm(ref('Topic')),
    };

    // Act
    const result = only('F5-AlarmSubscriber', resources);

    // Assess
    expect(result.compliant).toBe(true);
    expect(result.why).toContain(
      'no subscriber, acknowledged: a scratch stage: its alarms are read on the dashboard',
    );
  });

  it('when a blank reason is given, it is no acknowledgement', () => {
    // Prepare
    const resources: Resources = {
      Topic: topic({ 'tenang:no-subscriber-reason': '  ' }),
      Backlog: alarm(ref('Topic')),
    };

    // Act / Assess
    expect(only('F5-AlarmSubscriber', resources).compliant).toBe(false);
  });

  it('when every alarm also notifies a topic outside the template, it passes as not checkable, naming that topic', () => {
    // Prepare
    const resources: Resources = { Topic: topic(), Backlog: alarm(ref('Topic'), OUTSIDE) };

    // Act
    const result = only('F5-AlarmSubscriber', resources);

    // Assess
    expect(result).toMatchObject({ compliant: true, checkable: false });
    expect(result.why).toContain(`${OUTSIDE}, outside this template`);
  });

  it('when only some alarms also notify a topic that delivers, it fails naming the others', () => {
    // Prepare
    const resources: Resources = {
      Topic: topic(),
      Paged: { Type: 'AWS::SNS::Topic', Properties: {} },
      PagedSub: subscription(ref('Paged')),
      Backlog: alarm(ref('Topic'), ref('Paged')),
      Dlq: alarm(ref('Topic')),
    };

    // Act
    const findings = check('F5-AlarmSubscriber', resources);

    // Assess
    const byTopic = Object.fromEntries(findings.map((f) => [f.logicalId, f]));
    expect(byTopic.Paged?.compliant).toBe(true);
    expect(byTopic.Topic?.compliant).toBe(false);
    expect(byTopic.Topic?.why).toContain('Dlq notify no other topic that delivers');
  });

  it('when alarms notify only topics outside the template, it applies to nothing', () => {
    // Act / Assess
    expect(check('F5-AlarmSubscriber', { Backlog: alarm(OUTSIDE) })).toEqual([]);
  });
});

describe('Function: auditTemplate with the deploy-readiness rules', () => {
  it('when a raw template retains a named queue, the F2-RetainOnCreate item fails on it', () => {
    // Prepare
    const template = {
      Resources: {
        Jobs: { Type: 'AWS::SQS::Queue', Properties: { QueueName: 'jobs' }, DeletionPolicy: 'Retain' },
      },
    };

    // Act
    const items = auditTemplate(template);

    // Assess
    expect(items.find((i) => i.ruleId === 'Tenang-F2-RetainOnCreate')).toMatchObject({
      featureId: 'F2',
      status: 'fail',
      resources: ['Jobs'],
    });
  });
});

describe('Class: TenangChecks with the deploy-readiness rules', () => {
  /** A stack with an alarm notifying an enforceSSL topic, and a retained named queue. */
  function alarmStack(grantCloudWatch: boolean): Stack {
    const stack = new Stack(new App(), 'Tiny');
    const queue = new sqs.Queue(stack, 'Jobs', {
      queueName: 'tiny-jobs',
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const topic = new sns.Topic(stack, 'AlarmTopic', { enforceSSL: true });
    if (grantCloudWatch)
      topic.addToResourcePolicy(
        new iam.PolicyStatement({
          principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
          actions: ['sns:Publish'],
          resources: [topic.topicArn],
        }),
      );
    new cloudwatch.Alarm(stack, 'Backlog', {
      metric: queue.metricApproximateAgeOfOldestMessage(),
      threshold: 60,
      evaluationPeriods: 1,
      alarmDescription: 'Backlog. Runbook: runbooks/backlog.md',
    }).addAlarmAction(new actions.SnsAction(topic));
    return stack;
  }

  /** The resources each Tenang rule reports on a stack. */
  function violations(stack: Stack): Record<string, (string | undefined)[]> {
    return Object.fromEntries(
      new TenangChecks()
        .validateScope(stack)
        .violations.map((v) => [v.ruleName, v.violatingResources.map((r) => r.constructPath)]),
    );
  }

  it('when an alarm notifies an enforceSSL topic, cdk-nag reports Tenang-F3-AlarmTopicPublish on the topic', () => {
    // Act
    const found = violations(alarmStack(false));

    // Assess
    expect(found['Tenang-F3-AlarmTopicPublish']).toEqual(['Tiny/AlarmTopic/Resource']);
    expect(found['Tenang-F2-RetainOnCreate']).toEqual(['Tiny/Jobs/Resource']);
  });

  it('when the topic policy also allows CloudWatch to publish, cdk-nag reports no Tenang-F3-AlarmTopicPublish', () => {
    // Act
    const found = violations(alarmStack(true));

    // Assess
    expect(found['Tenang-F3-AlarmTopicPublish']).toBeUndefined();
  });

  it('when the alarm topic has no subscription, cdk-nag reports Tenang-F5-AlarmSubscriber on it, and not once one is added', () => {
    // Prepare
    const bare = alarmStack(true);
    const subscribed = alarmStack(true);
    const topic = subscribed.node.findChild('AlarmTopic') as sns.Topic;
    new sns.Subscription(subscribed, 'OnCall', {
      topic,
      protocol: sns.SubscriptionProtocol.EMAIL,
      endpoint: 'a@example.com',
    });

    // Act / Assess
    expect(violations(bare)['Tenang-F5-AlarmSubscriber']).toEqual(['Tiny/AlarmTopic/Resource']);
    expect(violations(subscribed)['Tenang-F5-AlarmSubscriber']).toBeUndefined();
  });
});
