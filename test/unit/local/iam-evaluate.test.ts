/**
 * lib/local/iam/evaluate.ts against the examples of AWS's documentation. Each describe block names
 * the page its examples come from (https://docs.aws.amazon.com/IAM/latest/UserGuide/… unless said
 * otherwise). The documentation's IAM users are replaced by role sessions, the principals the local
 * platform has; account 111122223333/123456789012 is the stack's account throughout.
 */
import fc from 'fast-check';
import {
  PolicyError,
  accessDeniedMessage,
  evaluate,
  parsePolicy,
  type AuthorizationRequest,
  type ContextValue,
  type Decision,
  type NamedPolicy,
  type PoliciesInForce,
  type PolicyStatement,
  type RequestPrincipal,
} from '../../../lib/local/iam/evaluate';

const ACCOUNT = '123456789012';
const ROLE_ARN = `arn:aws:iam::${ACCOUNT}:role/PaymentConsumerRole`;
const SESSION_ARN = `arn:aws:sts::${ACCOUNT}:assumed-role/PaymentConsumerRole/payment-consumer`;
const QUEUE = `arn:aws:sqs:us-east-1:${ACCOUNT}:orders`;
const TOPIC = `arn:aws:sns:us-east-1:${ACCOUNT}:alarms`;
const KEY = `arn:aws:kms:us-east-1:${ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab`;

const role = (name = 'PaymentConsumerRole', sessionName = 'payment-consumer'): RequestPrincipal => ({
  type: 'role',
  roleArn: `arn:aws:iam::${ACCOUNT}:role/${name}`,
  sessionName,
  accountId: ACCOUNT,
});
const service = (name: string): RequestPrincipal => ({ type: 'service', service: name });

const policy = (id: string, ...statements: PolicyStatement[]): NamedPolicy =>
  parsePolicy({ Version: '2012-10-17', Statement: statements }, id);

interface Scenario {
  readonly principal?: RequestPrincipal;
  readonly action: string;
  readonly resource: string;
  readonly context?: Record<string, ContextValue | undefined>;
  readonly identity?: readonly PolicyStatement[];
  readonly resourcePolicy?: readonly PolicyStatement[];
  readonly kind?: 'standard' | 'kms';
}

/** One identity policy 'RolePolicy' and one resource policy 'ResourcePolicy', from statements. */
function decide(scenario: Scenario): Decision {
  const request: AuthorizationRequest = {
    principal: scenario.principal ?? role(),
    action: scenario.action,
    resource: scenario.resource,
    ...(scenario.context ? { context: scenario.context } : {}),
  };
  const principal = request.principal;
  const identity =
    principal.type === 'role' && scenario.identity ? [policy('RolePolicy', ...scenario.identity)] : [];
  return evaluate(request, {
    identity,
    ...(scenario.resourcePolicy ? { resource: policy('ResourcePolicy', ...scenario.resourcePolicy) } : {}),
    resourceAccountId: ACCOUNT,
    ...(scenario.kind ? { resourceKind: scenario.kind } : {}),
  });
}

const sids = (refs: Decision['allowedBy']): string[] =>
  refs.map((ref) => `${ref.policyId}/${ref.sid ?? ref.index}`);

describe('policy evaluation logic (reference_policies_evaluation-logic.html)', () => {
  // "Example identity-based and resource-based policy evaluation" (Carlos and his buckets).
  const carlos = role('carlossalazar', 'carlos');
  const identity: PolicyStatement[] = [
    {
      Sid: 'AllowS3ListRead',
      Effect: 'Allow',
      Action: [
        's3:GetBucketLocation',
        's3:GetAccountPublicAccessBlock',
        's3:ListAccessPoints',
        's3:ListAllMyBuckets',
      ],
      Resource: 'arn:aws:s3:::*',
    },
    {
      Sid: 'AllowS3Self',
      Effect: 'Allow',
      Action: 's3:*',
      Resource: ['arn:aws:s3:::carlossalazar/*', 'arn:aws:s3:::carlossalazar'],
    },
    { Sid: 'DenyS3Logs', Effect: 'Deny', Action: 's3:*', Resource: 'arn:aws:s3:::*log*' },
  ];
  const bucketPolicy: PolicyStatement[] = [
    {
      Sid: 'OnlyCarlos',
      Effect: 'Allow',
      Principal: { AWS: `arn:aws:iam::${ACCOUNT}:role/carlossalazar` },
      Action: 's3:*',
      Resource: ['arn:aws:s3:::carlossalazar/*', 'arn:aws:s3:::carlossalazar'],
    },
  ];

  it('denies saving to the logs bucket: the explicit deny in the identity-based policy wins', () => {
    const decision = decide({
      principal: carlos,
      action: 's3:PutObject',
      resource: 'arn:aws:s3:::carlossalazar-logs/file.txt',
      identity,
      resourcePolicy: bucketPolicy,
    });
    expect(decision.decision).toBe('explicit-deny');
    expect(sids(decision.deniedBy)).toEqual(['RolePolicy/DenyS3Logs']);
    expect(decision.reason).toBe('with an explicit deny in an identity-based policy');
  });

  it('allows saving to his own bucket, where both the identity and the bucket policy allow', () => {
    const decision = decide({
      principal: carlos,
      action: 's3:PutObject',
      resource: 'arn:aws:s3:::carlossalazar/file.txt',
      identity,
      resourcePolicy: bucketPolicy,
    });
    expect(decision.decision).toBe('allow');
    expect(sids(decision.allowedBy)).toEqual(['RolePolicy/AllowS3Self', 'ResourcePolicy/OnlyCarlos']);
    expect(decision.reason).toBe('allowed by an identity-based policy and a resource-based policy');
  });

  it('allows when only one of the two allows ("the request is still allowed")', () => {
    const identityOnly = decide({
      principal: carlos,
      action: 's3:PutObject',
      resource: 'arn:aws:s3:::carlossalazar/file.txt',
      identity,
    });
    expect(identityOnly.decision).toBe('allow');
    expect(identityOnly.reason).toBe('allowed by an identity-based policy');
    const resourceOnly = decide({
      principal: carlos,
      action: 's3:PutObject',
      resource: 'arn:aws:s3:::carlossalazar/file.txt',
      resourcePolicy: bucketPolicy,
    });
    expect(resourceOnly.decision).toBe('allow');
    expect(resourceOnly.reason).toBe('allowed by a resource-based policy');
  });

  // "The difference between explicit and implicit denies": AllowGetList and DenyReports.
  const getList: PolicyStatement[] = [
    { Sid: 'AllowGetList', Effect: 'Allow', Action: ['iam:Get*', 'iam:List*'], Resource: '*' },
    { Sid: 'DenyReports', Effect: 'Deny', Action: 'iam:*Report', Resource: '*' },
  ];
  it.each([
    ['iam:GetRole', 'allow'],
    ['iam:ListRoles', 'allow'],
    ['iam:CreatePolicy', 'implicit-deny'],
    ['iam:GetOrganizationsAccessReport', 'explicit-deny'],
    ['iam:GenerateCredentialReport', 'explicit-deny'],
  ] as const)('%s is %s under AllowGetList/DenyReports', (action, expected) => {
    expect(decide({ action, resource: '*', identity: getList }).decision).toBe(expected);
  });

  it('an explicit deny in the resource-based policy overrides an identity-based allow', () => {
    const decision = decide({
      action: 'sqs:SendMessage',
      resource: QUEUE,
      identity: [{ Effect: 'Allow', Action: 'sqs:*', Resource: QUEUE }],
      resourcePolicy: [
        { Sid: 'NoSend', Effect: 'Deny', Principal: '*', Action: 'sqs:SendMessage', Resource: QUEUE },
      ],
    });
    expect(decision.decision).toBe('explicit-deny');
    expect(sids(decision.deniedBy)).toEqual(['ResourcePolicy/NoSend']);
    expect(decision.allowedBy).toEqual([]);
    expect(decision.reason).toBe('with an explicit deny in a resource-based policy');
  });

  it('a role is allowed by a queue policy alone', () => {
    const decision = decide({
      action: 'sqs:SendMessage',
      resource: QUEUE,
      resourcePolicy: [
        { Sid: 'Producer', Effect: 'Allow', Principal: { AWS: ROLE_ARN }, Action: 'sqs:SendMessage' },
      ],
    });
    expect(decision.decision).toBe('allow');
    expect(sids(decision.allowedBy)).toEqual(['ResourcePolicy/Producer']);
  });

  it('with nothing allowing, it is an implicit deny worded as AWS words it', () => {
    const decision = decide({
      action: 'sqs:SendMessage',
      resource: QUEUE,
      identity: [{ Effect: 'Allow', Action: 'sqs:ReceiveMessage', Resource: QUEUE }],
    });
    expect(decision).toEqual({
      decision: 'implicit-deny',
      allowedBy: [],
      deniedBy: [],
      reason: 'because no identity-based policy allows the sqs:SendMessage action',
    });
  });

  it('lists every matching Allow, from every identity-based policy', () => {
    const decision = evaluate(
      { principal: role(), action: 'sqs:SendMessage', resource: QUEUE },
      {
        identity: [
          policy('First', { Sid: 'A', Effect: 'Allow', Action: 'sqs:*', Resource: '*' }),
          policy('Second', { Sid: 'B', Effect: 'Allow', Action: 'sqs:SendMessage', Resource: QUEUE }),
        ],
        resourceAccountId: ACCOUNT,
      },
    );
    expect(sids(decision.allowedBy)).toEqual(['First/A', 'Second/B']);
  });
});

describe('access denied error messages (troubleshoot_access-denied.html)', () => {
  it('formats "User: … is not authorized to perform: … on resource: … because …"', () => {
    const request: AuthorizationRequest = { principal: role(), action: 'sqs:SendMessage', resource: QUEUE };
    const decision = evaluate(request, { identity: [], resourceAccountId: ACCOUNT });
    expect(accessDeniedMessage(request, decision)).toBe(
      `User: ${SESSION_ARN} is not authorized to perform: sqs:SendMessage on resource: ${QUEUE} because no identity-based policy allows the sqs:SendMessage action`,
    );
  });

  it('has no message for an allowed request', () => {
    const request: AuthorizationRequest = { principal: role(), action: 'sqs:SendMessage', resource: QUEUE };
    const allowed = evaluate(request, {
      identity: [policy('P', { Effect: 'Allow', Action: 'sqs:*', Resource: '*' })],
      resourceAccountId: ACCOUNT,
    });
    expect(() => accessDeniedMessage(request, allowed)).toThrow('allowed');
  });
});

describe('Action (reference_policies_elements_action.html)', () => {
  it('"The prefix and the action name are case insensitive": iam:ListAccessKeys is IAM:listaccesskeys', () => {
    const identity: PolicyStatement[] = [{ Effect: 'Allow', Action: 'IAM:listaccesskeys', Resource: '*' }];
    expect(decide({ action: 'iam:ListAccessKeys', resource: '*', identity }).decision).toBe('allow');
  });

  it.each([
    ['iam:CreateAccessKey', 'allow'],
    ['iam:ListAccessKeys', 'allow'],
    ['iam:UpdateAccessKey', 'allow'],
    ['iam:GetUser', 'implicit-deny'],
    ['s3:CreateAccessKey', 'implicit-deny'],
  ] as const)('"iam:*AccessKey*" and %s: %s', (action, expected) => {
    const identity: PolicyStatement[] = [{ Effect: 'Allow', Action: 'iam:*AccessKey*', Resource: '*' }];
    expect(decide({ action, resource: '*', identity }).decision).toBe(expected);
  });

  it('"?" matches exactly one character', () => {
    const identity: PolicyStatement[] = [{ Effect: 'Allow', Action: 'sqs:?etQueueUrl', Resource: '*' }];
    expect(decide({ action: 'sqs:GetQueueUrl', resource: '*', identity }).decision).toBe('allow');
    expect(decide({ action: 'sqs:GGetQueueUrl', resource: '*', identity }).decision).toBe('implicit-deny');
  });
});

describe('NotAction (reference_policies_elements_notaction.html)', () => {
  it('"Effect": "Allow", "NotAction": "iam:*" allows every action except IAM', () => {
    const identity: PolicyStatement[] = [{ Effect: 'Allow', NotAction: 'iam:*', Resource: '*' }];
    expect(decide({ action: 'sqs:SendMessage', resource: QUEUE, identity }).decision).toBe('allow');
    expect(decide({ action: 'iam:CreateUser', resource: '*', identity }).decision).toBe('implicit-deny');
  });

  describe('DenyAllUsersNotUsingMFA ("NotAction": "iam:*" with BoolIfExists)', () => {
    const identity: PolicyStatement[] = [
      { Effect: 'Allow', Action: '*', Resource: '*' },
      {
        Sid: 'DenyAllUsersNotUsingMFA',
        Effect: 'Deny',
        NotAction: 'iam:*',
        Resource: '*',
        Condition: { BoolIfExists: { 'aws:MultiFactorAuthPresent': 'false' } },
      },
    ];
    it('denies non-IAM actions without MFA, the key being absent', () => {
      const decision = decide({ action: 's3:GetObject', resource: 'arn:aws:s3:::b/k', identity });
      expect(decision.decision).toBe('explicit-deny');
      expect(sids(decision.deniedBy)).toEqual(['RolePolicy/DenyAllUsersNotUsingMFA']);
    });
    it('denies them with MultiFactorAuthPresent false', () => {
      const context = { 'aws:MultiFactorAuthPresent': false };
      expect(decide({ action: 's3:GetObject', resource: '*', identity, context }).decision).toBe(
        'explicit-deny',
      );
    });
    it('does not deny IAM actions, nor anything with MFA', () => {
      expect(decide({ action: 'iam:ListUsers', resource: '*', identity }).decision).toBe('allow');
      const context = { 'aws:MultiFactorAuthPresent': 'true' };
      expect(decide({ action: 's3:GetObject', resource: '*', identity, context }).decision).toBe('allow');
    });
  });

  // reference_policies_examples_s3_deny-except-bucket.html: "deny access to every AWS service except
  // Amazon S3", outside the bucket.
  describe('restrict management to a specific S3 bucket (Deny with NotAction and NotResource)', () => {
    const identity: PolicyStatement[] = [
      {
        Sid: 'Bucket',
        Effect: 'Allow',
        Action: 's3:*',
        Resource: ['arn:aws:s3:::bucket-name', 'arn:aws:s3:::bucket-name/*'],
      },
      {
        Sid: 'DenyAllExceptS3',
        Effect: 'Deny',
        NotAction: 's3:*',
        NotResource: ['arn:aws:s3:::bucket-name', 'arn:aws:s3:::bucket-name/*'],
      },
    ];
    const fullEc2: NamedPolicy = policy('AmazonEC2FullAccess', {
      Effect: 'Allow',
      Action: 'ec2:*',
      Resource: '*',
    });

    it('denies EC2 even when another policy allows it', () => {
      const decision = evaluate(
        { principal: role(), action: 'ec2:RunInstances', resource: '*' },
        { identity: [policy('RolePolicy', ...identity), fullEc2], resourceAccountId: ACCOUNT },
      );
      expect(decision.decision).toBe('explicit-deny');
      expect(sids(decision.deniedBy)).toEqual(['RolePolicy/DenyAllExceptS3']);
    });
    it('allows S3 on the bucket and its objects', () => {
      expect(
        decide({ action: 's3:GetObject', resource: 'arn:aws:s3:::bucket-name/a/b', identity }).decision,
      ).toBe('allow');
    });
    it('does not explicitly deny S3 on another bucket, and nothing allows it', () => {
      expect(decide({ action: 's3:GetObject', resource: 'arn:aws:s3:::other/a', identity }).decision).toBe(
        'implicit-deny',
      );
    });
  });
});

describe('NotResource (reference_policies_elements_notresource.html)', () => {
  // HRPayroll: "explicitly denies access to all Amazon S3 resources other than the listed resources".
  const identity: PolicyStatement[] = [
    { Effect: 'Allow', Action: ['s3:*', 'ec2:*'], Resource: '*' },
    {
      Sid: 'OnlyPayroll',
      Effect: 'Deny',
      Action: 's3:*',
      NotResource: ['arn:aws:s3:::HRBucket/Payroll', 'arn:aws:s3:::HRBucket/Payroll/*'],
    },
  ];
  it.each([
    ['arn:aws:s3:::HRBucket/Payroll', 'allow'],
    ['arn:aws:s3:::HRBucket/Payroll/2024/march.csv', 'allow'],
    ['arn:aws:s3:::HRBucket/Benefits/plan.pdf', 'explicit-deny'],
    ['arn:aws:s3:::OtherBucket', 'explicit-deny'],
  ] as const)('s3:GetObject on %s: %s', (resource, expected) => {
    expect(decide({ action: 's3:GetObject', resource, identity }).decision).toBe(expected);
  });
  it('"the policy affects only Amazon S3 actions": EC2 is not denied', () => {
    expect(decide({ action: 'ec2:StartInstances', resource: '*', identity }).decision).toBe('allow');
  });
});

describe('Resource and its wildcards (reference_policies_elements_resource.html)', () => {
  const allow = (resource: string | string[]): PolicyStatement[] => [
    { Effect: 'Allow', Action: '*', Resource: resource },
  ];

  it.each([
    [`arn:aws:dynamodb:us-east-1:${ACCOUNT}:table/orders/index/byCustomer`, 'allow'],
    [`arn:aws:dynamodb:us-east-1:${ACCOUNT}:table/orders/index/by/nested`, 'allow'],
    [`arn:aws:dynamodb:us-east-1:${ACCOUNT}:table/orders`, 'implicit-deny'],
    [`arn:aws:dynamodb:us-east-1:${ACCOUNT}:table/orders-archive/index/byCustomer`, 'implicit-deny'],
    [`arn:aws:dynamodb:us-east-1:${ACCOUNT}:table/Orders/index/byCustomer`, 'implicit-deny'],
    [`arn:aws:dynamodb:us-west-2:${ACCOUNT}:table/orders/index/byCustomer`, 'implicit-deny'],
  ] as const)('table/orders/index/* and %s: %s', (resource, expected) => {
    const identity = allow(`arn:aws:dynamodb:us-east-1:${ACCOUNT}:table/orders/index/*`);
    expect(decide({ action: 'dynamodb:Query', resource, identity }).decision).toBe(expected);
  });

  // "The wildcards in the ARN apply to all of the following objects in the bucket" / "would not match".
  const pattern = 'arn:aws:s3:::amzn-s3-demo-bucket/*/test/*';
  it.each([
    '1/test/object.jpg',
    '1/2/test/object.jpg',
    '1/2/test/3/object.jpg',
    '1/2/3/test/4/object.jpg',
    '1///test///object.jpg',
    '1/test/.jpg',
    '/test/object.jpg',
    '1/test/',
  ])('%s matches "bucket/*/test/*"', (key) => {
    const resource = `arn:aws:s3:::amzn-s3-demo-bucket/${key}`;
    expect(decide({ action: 's3:GetObject', resource, identity: allow(pattern) }).decision).toBe('allow');
  });
  it.each(['1-test/object.jpg', 'test/object.jpg', '1/2/test.jpg'])(
    '%s does not match "bucket/*/test/*"',
    (key) => {
      const resource = `arn:aws:s3:::amzn-s3-demo-bucket/${key}`;
      expect(decide({ action: 's3:GetObject', resource, identity: allow(pattern) }).decision).toBe(
        'implicit-deny',
      );
    },
  );

  it('a * ending a segment expands beyond colons; one inside a segment does not', () => {
    const logGroup = `arn:aws:logs:us-east-1:${ACCOUNT}:log-group:/aws/lambda/fn:*`;
    const stream = `arn:aws:logs:us-east-1:${ACCOUNT}:log-group:/aws/lambda/fn:log-stream:2024/01/01`;
    expect(
      decide({ action: 'logs:PutLogEvents', resource: stream, identity: allow(logGroup) }).decision,
    ).toBe('allow');
    expect(
      decide({ action: 'sqs:SendMessage', resource: QUEUE, identity: allow('arn:aws:sqs:*') }).decision,
    ).toBe('allow');
    const inside = 'arn:aws:s3:::bucket/a*b';
    expect(
      decide({ action: 's3:GetObject', resource: 'arn:aws:s3:::bucket/axyb', identity: allow(inside) })
        .decision,
    ).toBe('allow');
    expect(
      decide({ action: 's3:GetObject', resource: 'arn:aws:s3:::bucket/a:x:b', identity: allow(inside) })
        .decision,
    ).toBe('implicit-deny');
  });

  it('"*" matches every resource, "?" one character, and the match is case-sensitive', () => {
    expect(decide({ action: 'sqs:SendMessage', resource: QUEUE, identity: allow('*') }).decision).toBe(
      'allow',
    );
    expect(decide({ action: 'sqs:ListQueues', resource: '*', identity: allow('*') }).decision).toBe('allow');
    const q = `arn:aws:sqs:us-east-1:${ACCOUNT}:order?`;
    expect(decide({ action: 'sqs:SendMessage', resource: QUEUE, identity: allow(q) }).decision).toBe('allow');
    expect(decide({ action: 'sqs:SendMessage', resource: `${QUEUE}-dlq`, identity: allow(q) }).decision).toBe(
      'implicit-deny',
    );
    const upper = `arn:aws:iam::${ACCOUNT}:user/Bob`;
    expect(
      decide({ action: 'iam:GetUser', resource: `arn:aws:iam::${ACCOUNT}:user/bob`, identity: allow(upper) })
        .decision,
    ).toBe('implicit-deny');
  });

  it('a resource-policy statement without Resource applies to the resource itself', () => {
    const resourcePolicy: PolicyStatement[] = [
      { Effect: 'Allow', Principal: { AWS: ROLE_ARN }, Action: 'sqs:*' },
    ];
    expect(decide({ action: 'sqs:SendMessage', resource: QUEUE, resourcePolicy }).decision).toBe('allow');
  });
});

describe('Principal (reference_policies_elements_principal.html)', () => {
  const grant = (principal: PolicyStatement['Principal']): PolicyStatement[] => [
    { Sid: 'Grant', Effect: 'Allow', Principal: principal, Action: 'sqs:SendMessage', Resource: QUEUE },
  ];

  it.each([
    ['the role ARN', { AWS: ROLE_ARN }],
    ['the assumed-role session ARN', { AWS: SESSION_ARN }],
    ['the role among several', { AWS: [`arn:aws:iam::${ACCOUNT}:role/Other`, ROLE_ARN] }],
    ['"*"', '*' as const],
    ['{"AWS": "*"}', { AWS: '*' }],
  ])('%s grants the role session by itself', (_, principal) => {
    expect(
      decide({ action: 'sqs:SendMessage', resource: QUEUE, resourcePolicy: grant(principal) }).decision,
    ).toBe('allow');
  });

  it.each([
    ['another role', { AWS: `arn:aws:iam::${ACCOUNT}:role/Other` }],
    [
      'another session of the role',
      { AWS: `arn:aws:sts::${ACCOUNT}:assumed-role/PaymentConsumerRole/other` },
    ],
    [
      'a partial wildcard ("You cannot use a wildcard to match part of a principal name")',
      { AWS: `arn:aws:iam::${ACCOUNT}:role/*` },
    ],
    ['a service principal', { Service: 'sns.amazonaws.com' }],
  ])('%s does not grant the role', (_, principal) => {
    expect(
      decide({ action: 'sqs:SendMessage', resource: QUEUE, resourcePolicy: grant(principal) }).decision,
    ).toBe('implicit-deny');
  });

  it.each([
    ['the account ARN', `arn:aws:iam::${ACCOUNT}:root`],
    ['the bare account id', ACCOUNT],
  ])(
    '%s "delegates authority to the account": no grant by itself, identity policies decide',
    (_, account) => {
      const resourcePolicy = grant({ AWS: account });
      expect(decide({ action: 'sqs:SendMessage', resource: QUEUE, resourcePolicy }).decision).toBe(
        'implicit-deny',
      );
      const withIdentity = decide({
        action: 'sqs:SendMessage',
        resource: QUEUE,
        resourcePolicy,
        identity: [{ Sid: 'Send', Effect: 'Allow', Action: 'sqs:SendMessage', Resource: QUEUE }],
      });
      expect(withIdentity.decision).toBe('allow');
      expect(sids(withIdentity.allowedBy)).toEqual(['RolePolicy/Send']);
    },
  );

  // id_roles_create_policy-examples.html: "The deny propagates to the users under that account".
  it('a Deny naming the account applies to the principals in it', () => {
    const decision = decide({
      action: 's3:GetObject',
      resource: 'arn:aws:s3:::mybucket/a',
      identity: [{ Effect: 'Allow', Action: 's3:*', Resource: '*' }],
      resourcePolicy: [
        {
          Sid: 'AccountDeny',
          Effect: 'Deny',
          Principal: { AWS: ACCOUNT },
          Action: 's3:*',
          Resource: 'arn:aws:s3:::mybucket/*',
        },
      ],
    });
    expect(decision.decision).toBe('explicit-deny');
    expect(sids(decision.deniedBy)).toEqual(['ResourcePolicy/AccountDeny']);
  });

  it('a Service principal grants that service, and "*" grants every service', () => {
    const principal = service('sns.amazonaws.com');
    const action = 'sqs:SendMessage';
    const byName = decide({
      principal,
      action,
      resource: QUEUE,
      resourcePolicy: grant({ Service: 'sns.amazonaws.com' }),
    });
    expect(byName.decision).toBe('allow');
    expect(decide({ principal, action, resource: QUEUE, resourcePolicy: grant({ AWS: '*' }) }).decision).toBe(
      'allow',
    );
    const other = decide({
      principal,
      action,
      resource: QUEUE,
      resourcePolicy: grant({ Service: 'events.amazonaws.com' }),
    });
    expect(other.decision).toBe('implicit-deny');
    const account = decide({ principal, action, resource: QUEUE, resourcePolicy: grant({ AWS: ACCOUNT }) });
    expect(account.decision).toBe('implicit-deny');
  });

  it('a service principal without a resource policy is implicitly denied', () => {
    const decision = decide({
      principal: service('cloudwatch.amazonaws.com'),
      action: 'sns:Publish',
      resource: TOPIC,
    });
    expect(decision).toEqual({
      decision: 'implicit-deny',
      allowedBy: [],
      deniedBy: [],
      reason: 'because no resource-based policy allows the sns:Publish action',
    });
  });
});

describe('NotPrincipal (reference_policies_elements_notprincipal.html)', () => {
  const identity: PolicyStatement[] = [{ Effect: 'Allow', Action: 's3:*', Resource: '*' }];
  const denyAllBut = (names: string[]): PolicyStatement[] => [
    {
      Sid: 'DenyAllBut',
      Effect: 'Deny',
      NotPrincipal: { AWS: names },
      Action: 's3:*',
      Resource: ['arn:aws:s3:::Bucket_AccountAudit', 'arn:aws:s3:::Bucket_AccountAudit/*'],
    },
  ];
  const resource = 'arn:aws:s3:::Bucket_AccountAudit/report.csv';

  it('spares the session when the session, its role and its account are all named', () => {
    const resourcePolicy = denyAllBut([SESSION_ARN, ROLE_ARN, `arn:aws:iam::${ACCOUNT}:root`]);
    expect(decide({ action: 's3:GetObject', resource, identity, resourcePolicy }).decision).toBe('allow');
  });

  it.each([
    ['the account is missing', [SESSION_ARN, ROLE_ARN]],
    ['the role is missing', [SESSION_ARN, `arn:aws:iam::${ACCOUNT}:root`]],
    ['the session is missing', [ROLE_ARN, ACCOUNT]],
  ])('denies when %s ("might deny access to the entire account")', (_, names) => {
    const decision = decide({
      action: 's3:GetObject',
      resource,
      identity,
      resourcePolicy: denyAllBut(names),
    });
    expect(decision.decision).toBe('explicit-deny');
  });

  it('denies everyone else', () => {
    const resourcePolicy = denyAllBut([SESSION_ARN, ROLE_ARN, ACCOUNT]);
    const other = decide({
      principal: role('Other'),
      action: 's3:GetObject',
      resource,
      identity,
      resourcePolicy,
    });
    expect(other.decision).toBe('explicit-deny');
  });

  it('"NotPrincipal must be used with "Effect":"Deny""', () => {
    const statement = { Effect: 'Allow', NotPrincipal: { AWS: ROLE_ARN }, Action: 's3:*', Resource: '*' };
    expect(() => parsePolicy({ Version: '2012-10-17', Statement: [statement] }, 'Bucket')).toThrow(
      /Bucket, statement 0: NotPrincipal must be used with "Effect": "Deny"/,
    );
  });
});

describe('Condition operators (reference_policies_elements_condition_operators.html)', () => {
  describe('Bool: aws:SecureTransport "false", as CDK enforceSSL writes it', () => {
    const resourcePolicy: PolicyStatement[] = [
      {
        Sid: 'EnforceSSL',
        Effect: 'Deny',
        Principal: { AWS: '*' },
        Action: 'sqs:*',
        Resource: QUEUE,
        Condition: { Bool: { 'aws:SecureTransport': 'false' } },
      },
    ];
    const identity: PolicyStatement[] = [{ Effect: 'Allow', Action: 'sqs:SendMessage', Resource: QUEUE }];
    it.each([false, 'false', 'FALSE'])('denies a request with aws:SecureTransport %p', (secure) => {
      const context = { 'aws:SecureTransport': secure };
      const decision = decide({
        action: 'sqs:SendMessage',
        resource: QUEUE,
        identity,
        resourcePolicy,
        context,
      });
      expect(decision.decision).toBe('explicit-deny');
      expect(decision.reason).toBe('with an explicit deny in a resource-based policy');
    });
    it.each([true, 'true'])('allows one with aws:SecureTransport %p', (secure) => {
      const context = { 'aws:securetransport': secure };
      expect(
        decide({ action: 'sqs:SendMessage', resource: QUEUE, identity, resourcePolicy, context }).decision,
      ).toBe('allow');
    });
    it('does not deny when the key is absent ("the values do not match")', () => {
      expect(decide({ action: 'sqs:SendMessage', resource: QUEUE, identity, resourcePolicy }).decision).toBe(
        'allow',
      );
    });
    it('denies a service principal too', () => {
      const decision = decide({
        principal: service('sns.amazonaws.com'),
        action: 'sqs:SendMessage',
        resource: QUEUE,
        resourcePolicy,
        context: { 'aws:SecureTransport': false },
      });
      expect(decision.decision).toBe('explicit-deny');
    });
  });

  describe('ArnEquals on aws:SourceArn: SNS sending to an SQS queue', () => {
    const resourcePolicy: PolicyStatement[] = [
      {
        Sid: 'TopicToQueue',
        Effect: 'Allow',
        Principal: { Service: 'sns.amazonaws.com' },
        Action: 'SQS:SendMessage',
        Resource: QUEUE,
        Condition: { ArnEquals: { 'aws:SourceArn': TOPIC } },
      },
    ];
    const sns = service('sns.amazonaws.com');
    it('allows the named topic', () => {
      const context = { 'aws:SourceArn': TOPIC };
      const decision = decide({
        principal: sns,
        action: 'sqs:SendMessage',
        resource: QUEUE,
        resourcePolicy,
        context,
      });
      expect(decision.decision).toBe('allow');
      expect(sids(decision.allowedBy)).toEqual(['ResourcePolicy/TopicToQueue']);
    });
    it('does not allow another topic, nor a request without aws:SourceArn', () => {
      const other = { 'aws:SourceArn': `${TOPIC}-other` };
      expect(
        decide({ principal: sns, action: 'sqs:SendMessage', resource: QUEUE, resourcePolicy, context: other })
          .decision,
      ).toBe('implicit-deny');
      expect(
        decide({ principal: sns, action: 'sqs:SendMessage', resource: QUEUE, resourcePolicy }).decision,
      ).toBe('implicit-deny');
    });
  });

  it('ArnLike matches component by component, where StringLike does not (the doc example)', () => {
    const pattern = 'arn:aws:someservice:*:111122223333:finance/*';
    const value = 'arn:aws:someservice:us-east-2:999999999999:store/abc:111122223333:finance/document.txt';
    const run = (operator: string): string =>
      decide({
        action: 'someservice:Get',
        resource: '*',
        identity: [
          {
            Effect: 'Allow',
            Action: '*',
            Resource: '*',
            Condition: { [operator]: { 'aws:SourceArn': pattern } },
          },
        ],
        context: { 'aws:SourceArn': value },
      }).decision;
    expect(run('StringLike')).toBe('allow');
    expect(run('ArnLike')).toBe('implicit-deny');
    expect(run('ArnNotLike')).toBe('allow');
  });

  describe('a service principal publishing to an SNS topic (aws:SourceArn ArnLike, aws:SourceAccount StringEquals)', () => {
    // reference_policies_condition-keys.html, aws:SourceArn and aws:SourceAccount ("confused deputy").
    const resourcePolicy: PolicyStatement[] = [
      {
        Sid: 'AlarmsPublish',
        Effect: 'Allow',
        Principal: { Service: 'cloudwatch.amazonaws.com' },
        Action: 'sns:Publish',
        Resource: TOPIC,
        Condition: {
          ArnLike: { 'aws:SourceArn': `arn:aws:cloudwatch:us-east-1:${ACCOUNT}:alarm:*` },
          StringEquals: { 'aws:SourceAccount': ACCOUNT },
        },
      },
    ];
    const cloudwatch = service('cloudwatch.amazonaws.com');
    const alarm = `arn:aws:cloudwatch:us-east-1:${ACCOUNT}:alarm:tenang-dlq-depth`;
    it('allows an alarm of the account', () => {
      const context = { 'aws:SourceArn': alarm, 'aws:SourceAccount': ACCOUNT };
      expect(
        decide({ principal: cloudwatch, action: 'sns:Publish', resource: TOPIC, resourcePolicy, context })
          .decision,
      ).toBe('allow');
    });
    it.each([
      ['another account', { 'aws:SourceArn': alarm, 'aws:SourceAccount': '999999999999' }],
      ['no aws:SourceAccount', { 'aws:SourceArn': alarm }],
      [
        'an alarm in another Region',
        { 'aws:SourceArn': alarm.replace('us-east-1', 'eu-west-1'), 'aws:SourceAccount': ACCOUNT },
      ],
    ])('does not allow %s', (_, context) => {
      expect(
        decide({ principal: cloudwatch, action: 'sns:Publish', resource: TOPIC, resourcePolicy, context })
          .decision,
      ).toBe('implicit-deny');
    });
  });

  describe('String operators', () => {
    const tagged = (operator: string, value: string | string[]): PolicyStatement[] => [
      {
        Effect: 'Allow',
        Action: 'iam:*AccessKey*',
        Resource: `arn:aws:iam::${ACCOUNT}:user/*`,
        Condition: { [operator]: { 'aws:PrincipalTag/job-category': value } },
      },
    ];
    const attempt = (identity: PolicyStatement[], tag?: string): string =>
      decide({
        action: 'iam:CreateAccessKey',
        resource: `arn:aws:iam::${ACCOUNT}:user/alice`,
        identity,
        context: { 'aws:PrincipalTag/job-category': tag },
      }).decision;

    it('StringEquals is exact and case-sensitive; an untagged principal does not match', () => {
      const identity = tagged('StringEquals', 'iamuser-admin');
      expect(attempt(identity, 'iamuser-admin')).toBe('allow');
      expect(attempt(identity, 'IAMUSER-ADMIN')).toBe('implicit-deny');
      expect(attempt(identity)).toBe('implicit-deny');
    });
    it('StringEqualsIgnoreCase ignores case', () => {
      expect(attempt(tagged('StringEqualsIgnoreCase', 'iamuser-admin'), 'IAMUser-Admin')).toBe('allow');
    });
    it('StringLike takes * and ?; StringNotLike negates it', () => {
      expect(attempt(tagged('StringLike', 'iamuser-*'), 'iamuser-admin')).toBe('allow');
      expect(attempt(tagged('StringLike', 'iamuser-?dmin'), 'iamuser-admin')).toBe('allow');
      expect(attempt(tagged('StringLike', 'iamuser-?'), 'iamuser-admin')).toBe('implicit-deny');
      expect(attempt(tagged('StringNotLike', 'iamuser-*'), 'iamuser-admin')).toBe('implicit-deny');
      expect(attempt(tagged('StringNotLike', 'iamuser-*'), 'developer')).toBe('allow');
    });
    it('a negated operator is true when the key is absent', () => {
      expect(attempt(tagged('StringNotEquals', 'iamuser-admin'))).toBe('allow');
      expect(attempt(tagged('StringNotEqualsIgnoreCase', 'iamuser-admin'))).toBe('allow');
    });
    it('condition key names are case-insensitive', () => {
      const identity: PolicyStatement[] = [
        {
          Effect: 'Allow',
          Action: '*',
          Resource: '*',
          Condition: { StringEquals: { 'AWS:PrincipalTag/Job-Category': 'x' } },
        },
      ];
      expect(attempt(identity, 'x')).toBe('allow');
    });
  });

  it('NumericLessThanEquals on s3:max-keys "10"', () => {
    const identity: PolicyStatement[] = [
      {
        Effect: 'Allow',
        Action: 's3:ListBucket',
        Resource: 'arn:aws:s3:::example_bucket',
        Condition: { NumericLessThanEquals: { 's3:max-keys': '10' } },
      },
    ];
    const list = (maxKeys?: ContextValue): string =>
      decide({
        action: 's3:ListBucket',
        resource: 'arn:aws:s3:::example_bucket',
        identity,
        context: { 's3:max-keys': maxKeys },
      }).decision;
    expect(list(10)).toBe('allow');
    expect(list('7')).toBe('allow');
    expect(list(10.5)).toBe('implicit-deny');
    expect(list(11)).toBe('implicit-deny');
    expect(list('many')).toBe('implicit-deny');
    expect(list()).toBe('implicit-deny');
  });

  it.each([
    ['NumericEquals', 5, 'allow'],
    ['NumericEquals', 6, 'implicit-deny'],
    ['NumericNotEquals', 6, 'allow'],
    ['NumericLessThan', 4, 'allow'],
    ['NumericLessThan', 5, 'implicit-deny'],
    ['NumericGreaterThan', 6, 'allow'],
    ['NumericGreaterThan', 5, 'implicit-deny'],
    ['NumericGreaterThanEquals', 5, 'allow'],
  ] as const)('%s 5 with %p: %s', (operator, value, expected) => {
    const identity: PolicyStatement[] = [
      { Effect: 'Allow', Action: '*', Resource: '*', Condition: { [operator]: { 'svc:count': 5 } } },
    ];
    expect(
      decide({ action: 'svc:Do', resource: '*', identity, context: { 'svc:count': value } }).decision,
    ).toBe(expected);
  });

  it('DateGreaterThan on aws:TokenIssueTime: temporary credentials issued after the date', () => {
    const identity: PolicyStatement[] = [
      {
        Effect: 'Allow',
        Action: 'iam:*AccessKey*',
        Resource: `arn:aws:iam::${ACCOUNT}:user/*`,
        Condition: { DateGreaterThan: { 'aws:TokenIssueTime': '2020-01-01T00:00:01Z' } },
      },
    ];
    const attempt = (issued?: ContextValue): string =>
      decide({
        action: 'iam:ListAccessKeys',
        resource: `arn:aws:iam::${ACCOUNT}:user/alice`,
        identity,
        context: { 'aws:TokenIssueTime': issued },
      }).decision;
    expect(attempt('2024-06-01T12:00:00Z')).toBe('allow');
    expect(attempt('2019-12-31T23:59:59Z')).toBe('implicit-deny');
    expect(attempt('2020-01-01T00:00:01Z')).toBe('implicit-deny');
    expect(attempt(1717243200)).toBe('allow'); // epoch seconds, 2024-06-01
    expect(attempt()).toBe('implicit-deny'); // "The key is not present … using access keys"
  });

  it.each([
    ['DateLessThan', '2024-06-01', '2024-05-31T23:59:59Z', 'allow'],
    ['DateLessThanEquals', '2024-06-01T00:00:00+00:00', '2024-06-01T00:00:00Z', 'allow'],
    ['DateEquals', '1717200000', '2024-06-01T00:00:00Z', 'allow'],
    ['DateNotEquals', '2024-06-01', '2024-06-01T00:00:00Z', 'implicit-deny'],
    ['DateGreaterThanEquals', '2024-06-01T02:00:00+02:00', '2024-06-01T00:00:00Z', 'allow'],
  ] as const)('%s %s with aws:CurrentTime %s: %s', (operator, policyValue, now, expected) => {
    const identity: PolicyStatement[] = [
      {
        Effect: 'Allow',
        Action: '*',
        Resource: '*',
        Condition: { [operator]: { 'aws:CurrentTime': policyValue } },
      },
    ];
    expect(
      decide({ action: 'svc:Do', resource: '*', identity, context: { 'aws:CurrentTime': now } }).decision,
    ).toBe(expected);
  });

  describe('IpAddress / NotIpAddress on aws:SourceIp', () => {
    const identity = (operator: string, ranges: string | string[]): PolicyStatement[] => [
      {
        Effect: 'Allow',
        Action: 'someservice:*',
        Resource: '*',
        Condition: { [operator]: { 'aws:SourceIp': ranges } },
      },
    ];
    const from = (statements: PolicyStatement[], ip?: string): string =>
      decide({
        action: 'someservice:Get',
        resource: '*',
        identity: statements,
        context: { 'aws:SourceIp': ip },
      }).decision;
    const mixed = identity('IpAddress', ['203.0.113.0/24', '2001:DB8:1234:5678::/64']);
    it.each([
      ['203.0.113.0', 'allow'],
      ['203.0.113.255', 'allow'],
      ['203.0.114.1', 'implicit-deny'],
      ['2001:db8:1234:5678:abcd::1', 'allow'],
      ['2001:db8:1234:5679::1', 'implicit-deny'],
      ['::ffff:203.0.113.5', 'implicit-deny'],
      ['not-an-ip', 'implicit-deny'],
    ] as const)('the IPv4+IPv6 example and %s: %s', (ip, expected) => {
      expect(from(mixed, ip)).toBe(expected);
    });
    it('an address without a prefix is a /32; a VPC endpoint request (no aws:SourceIp) does not match', () => {
      expect(from(identity('IpAddress', '203.0.113.7'), '203.0.113.7')).toBe('allow');
      expect(from(identity('IpAddress', '203.0.113.7'), '203.0.113.8')).toBe('implicit-deny');
      expect(from(identity('IpAddress', '203.0.113.0/24'))).toBe('implicit-deny');
    });
    it('NotIpAddress is true outside every range, and when the key is absent', () => {
      const not = identity('NotIpAddress', ['203.0.113.0/24', '198.51.100.0/24']);
      expect(from(not, '192.0.2.1')).toBe('allow');
      expect(from(not, '198.51.100.9')).toBe('implicit-deny');
      expect(from(not)).toBe('allow');
    });
  });

  it('BinaryEquals compares the bytes of base-64 values', () => {
    const identity: PolicyStatement[] = [
      {
        Effect: 'Allow',
        Action: '*',
        Resource: '*',
        Condition: { BinaryEquals: { key: 'QmluYXJ5VmFsdWVJbkJhc2U2NA==' } },
      },
    ];
    const context = (key: string): Record<string, string> => ({ key });
    expect(
      decide({ action: 'svc:Do', resource: '*', identity, context: context('QmluYXJ5VmFsdWVJbkJhc2U2NA==') })
        .decision,
    ).toBe('allow');
    expect(decide({ action: 'svc:Do', resource: '*', identity, context: context('b3RoZXI=') }).decision).toBe(
      'implicit-deny',
    );
  });

  describe('...IfExists', () => {
    // THISPOLICYDOESNOTWORK vs RunInstance: "These additional resources do not have the
    // ec2:InstanceType condition key".
    const run = (operator: string, resource: string, instanceType?: string): string =>
      decide({
        action: 'ec2:RunInstances',
        resource,
        identity: [
          {
            Effect: 'Allow',
            Action: 'ec2:RunInstances',
            Resource: '*',
            Condition: { [operator]: { 'ec2:InstanceType': ['t1.*', 't2.*', 'm3.*'] } },
          },
        ],
        context: { 'ec2:InstanceType': instanceType },
      }).decision;
    const image = 'arn:aws:ec2:us-east-1::image/ami-12345678';
    const instance = `arn:aws:ec2:us-east-1:${ACCOUNT}:instance/*`;
    it('StringLike fails on the image, which has no ec2:InstanceType', () => {
      expect(run('StringLike', image)).toBe('implicit-deny');
      expect(run('StringLike', instance, 't2.micro')).toBe('allow');
    });
    it('StringLikeIfExists passes the image and still checks the instance', () => {
      expect(run('StringLikeIfExists', image)).toBe('allow');
      expect(run('StringLikeIfExists', instance, 't2.micro')).toBe('allow');
      expect(run('StringLikeIfExists', instance, 'm5.large')).toBe('implicit-deny');
    });
    it('"with a negated condition operator like StringNotEqualsIfExists, the request is still denied even if the tag is missing"', () => {
      const decision = decide({
        action: 'ec2:TerminateInstances',
        resource: instance,
        identity: [
          { Effect: 'Allow', Action: 'ec2:*', Resource: '*' },
          {
            Sid: 'OnlyTeamA',
            Effect: 'Deny',
            Action: 'ec2:TerminateInstances',
            Resource: '*',
            Condition: { StringNotEqualsIfExists: { 'aws:ResourceTag/team': 'a' } },
          },
        ],
      });
      expect(decision.decision).toBe('explicit-deny');
      expect(
        decide({
          action: 'ec2:TerminateInstances',
          resource: instance,
          identity: [
            { Effect: 'Allow', Action: 'ec2:*', Resource: '*' },
            {
              Effect: 'Deny',
              Action: '*',
              Resource: '*',
              Condition: { StringNotEquals: { 'aws:ResourceTag/team': 'a' } },
            },
          ],
          context: { 'aws:ResourceTag/team': 'a' },
        }).decision,
      ).toBe('allow');
    });
  });

  describe('Null', () => {
    // "the user must not be using temporary credentials (the key must not exist)".
    const identity = (value: string | boolean): PolicyStatement[] => [
      {
        Effect: 'Allow',
        Action: 'ec2:*',
        Resource: '*',
        Condition: { Null: { 'aws:TokenIssueTime': value } },
      },
    ];
    const attempt = (statements: PolicyStatement[], issued?: string): string =>
      decide({
        action: 'ec2:DescribeInstances',
        resource: '*',
        identity: statements,
        context: { 'aws:TokenIssueTime': issued },
      }).decision;
    it('"true": allowed only while the key is absent', () => {
      expect(attempt(identity('true'))).toBe('allow');
      expect(attempt(identity(true))).toBe('allow');
      expect(attempt(identity('true'), '2024-06-01T00:00:00Z')).toBe('implicit-deny');
    });
    it('"false": allowed only while the key is present', () => {
      expect(attempt(identity('false'), '2024-06-01T00:00:00Z')).toBe('allow');
      expect(attempt(identity('false'))).toBe('implicit-deny');
    });
  });
});

describe('conditions with multiple keys or values (reference_policies_multi-value-conditions.html)', () => {
  // The two tables of the page ("Match"/"No match"), with role ARNs for its user ARNs and the
  // condition in an identity-based policy (its bucket policy names the account, which delegates).
  const ana = 'arn:aws:iam::222222222222:role/Ana';
  const mary = 'arn:aws:iam::222222222222:role/Mary';
  const statement = (arnOperator: 'ArnLike' | 'ArnNotLike'): PolicyStatement => ({
    Effect: 'Allow',
    Action: 's3:ListBucket',
    Resource: 'arn:aws:s3:::amzn-s3-demo-bucket',
    Condition: {
      StringEquals: {
        'aws:PrincipalTag/department': ['finance', 'hr', 'legal'],
        'aws:PrincipalTag/role': ['audit', 'security'],
      },
      [arnOperator]: { 'aws:PrincipalArn': [ana, mary] },
    },
  });
  const row = (
    arnOperator: 'ArnLike' | 'ArnNotLike',
    department?: string,
    tagRole?: string,
    arnName = 'Mary',
  ): string =>
    decide({
      action: 's3:ListBucket',
      resource: 'arn:aws:s3:::amzn-s3-demo-bucket',
      identity: [statement(arnOperator)],
      context: {
        'aws:PrincipalTag/department': department,
        'aws:PrincipalTag/role': tagRole,
        'aws:PrincipalArn': `arn:aws:iam::222222222222:role/${arnName}`,
      },
    }).decision;

  it.each([
    ['legal', 'audit', 'Mary', 'allow'],
    ['hr', 'audit', 'Nikki', 'implicit-deny'],
    ['hr', 'payroll', 'Mary', 'implicit-deny'],
    ['hr', undefined, 'Mary', 'implicit-deny'],
    [undefined, undefined, 'Mary', 'implicit-deny'],
  ] as const)(
    'StringEquals + ArnLike: department %p, role %p, %s: %s',
    (department, tagRole, name, expected) => {
      expect(row('ArnLike', department, tagRole, name)).toBe(expected);
    },
  );

  it.each([
    ['legal', 'audit', 'Nikki', 'allow'],
    ['hr', 'audit', 'Mary', 'implicit-deny'],
    ['hr', 'payroll', 'Nikki', 'implicit-deny'],
    ['hr', undefined, 'Nikki', 'implicit-deny'],
    [undefined, undefined, 'Nikki', 'implicit-deny'],
  ] as const)(
    'StringEquals + ArnNotLike (NOR): department %p, role %p, %s: %s',
    (department, tagRole, name, expected) => {
      expect(row('ArnNotLike', department, tagRole, name)).toBe(expected);
    },
  );

  it('a negated operator with several values: "the string cannot match any of the values listed"', () => {
    const identity: PolicyStatement[] = [
      { Effect: 'Allow', Action: '*', Resource: '*' },
      {
        Effect: 'Deny',
        Action: '*',
        Resource: '*',
        Condition: { StringNotEquals: { 'aws:PrincipalAccount': ['123456789012', '555555555555'] } },
      },
    ];
    expect(decide({ action: 's3:GetObject', resource: '*', identity }).decision).toBe('allow');
    expect(
      decide({
        action: 's3:GetObject',
        resource: '*',
        identity,
        context: { 'aws:PrincipalAccount': '999999999999' },
      }).decision,
    ).toBe('explicit-deny');
  });

  describe('ForAllValues / ForAnyValue on dynamodb:Attributes', () => {
    const getItem: PolicyStatement[] = [
      {
        Effect: 'Allow',
        Action: 'dynamodb:GetItem',
        Resource: 'arn:aws:dynamodb:*:*:table/Thread',
        Condition: { 'ForAllValues:StringEquals': { 'dynamodb:Attributes': ['ID', 'Message', 'Tags'] } },
      },
    ];
    const table = `arn:aws:dynamodb:us-east-1:${ACCOUNT}:table/Thread`;
    const get = (attributes?: readonly string[]): string =>
      decide({
        action: 'dynamodb:GetItem',
        resource: table,
        identity: getItem,
        context: { 'dynamodb:Attributes': attributes },
      }).decision;
    it('allows a request for listed attributes only', () => {
      expect(get(['Message', 'Tags'])).toBe('allow');
      expect(get(['ID', 'Message', 'Tags'])).toBe('allow');
    });
    it('denies a request including UserName', () => {
      expect(get(['Message', 'UserName'])).toBe('implicit-deny');
    });
    it('"returns true if there are no keys in the request, or … a null data set"', () => {
      expect(get()).toBe('allow');
      expect(get([])).toBe('allow');
    });

    const putItem: PolicyStatement[] = [
      { Effect: 'Allow', Action: 'dynamodb:*', Resource: '*' },
      {
        Sid: 'NoKeyChanges',
        Effect: 'Deny',
        Action: 'dynamodb:PutItem',
        Resource: 'arn:aws:dynamodb:*:*:table/Thread',
        Condition: { 'ForAnyValue:StringEquals': { 'dynamodb:Attributes': ['ID', 'PostDateTime'] } },
      },
    ];
    const put = (attributes?: readonly string[]): string =>
      decide({
        action: 'dynamodb:PutItem',
        resource: table,
        identity: putItem,
        context: { 'dynamodb:Attributes': attributes },
      }).decision;
    it('ForAnyValue denies when any requested attribute is listed', () => {
      expect(put(['UserName', 'Message', 'PostDateTime'])).toBe('explicit-deny');
    });
    it('ForAnyValue is false for no match, no key or an empty set', () => {
      expect(put(['UserName'])).toBe('allow');
      expect(put()).toBe('allow');
      expect(put([])).toBe('allow');
    });
    it('ForAnyValue...IfExists on an absent key: "For no matching context key or a null dataset, the condition returns false"', () => {
      // IfExists does not change it: AWS denies sqs:ListQueues (no aws:TagKeys) under an Allow with
      // ForAnyValue:StringEqualsIfExists on aws:TagKeys (re:Post, "ForAnyValue:StringEqualsIfExists
      // behaving unexpectedly").
      const statements: PolicyStatement[] = [
        {
          Effect: 'Allow',
          Action: 'sqs:*',
          Resource: '*',
          Condition: { 'ForAnyValue:StringEqualsIfExists': { 'aws:TagKeys': ['team'] } },
        },
      ];
      const list = (keys?: string[]): string =>
        decide({
          action: 'sqs:ListQueues',
          resource: '*',
          identity: statements,
          context: { 'aws:TagKeys': keys },
        }).decision;
      expect(list()).toBe('implicit-deny');
      expect(list([])).toBe('implicit-deny');
      expect(list(['cost-center'])).toBe('implicit-deny');
      expect(list(['team', 'cost-center'])).toBe('allow');
    });
    it('ForAllValues...IfExists on an absent key: "It also returns true if there are no context keys in the request"', () => {
      const statements: PolicyStatement[] = [
        {
          Effect: 'Allow',
          Action: 'sqs:*',
          Resource: '*',
          Condition: { 'ForAllValues:StringEqualsIfExists': { 'aws:TagKeys': ['team'] } },
        },
      ];
      const tag = (keys?: string[]): string =>
        decide({
          action: 'sqs:TagQueue',
          resource: QUEUE,
          identity: statements,
          context: { 'aws:TagKeys': keys },
        }).decision;
      expect(tag()).toBe('allow');
      expect(tag([])).toBe('allow');
      expect(tag(['team'])).toBe('allow');
      expect(tag(['team', 'cost-center'])).toBe('implicit-deny');
    });
    it('ForAllValues with a negated operator: no requested value may match', () => {
      const statements: PolicyStatement[] = [
        {
          Effect: 'Allow',
          Action: '*',
          Resource: '*',
          Condition: { 'ForAllValues:StringNotLike': { 'aws:TagKeys': ['aws:*', 'owner'] } },
        },
      ];
      const tag = (keys: string[]): string =>
        decide({
          action: 'ec2:CreateTags',
          resource: '*',
          identity: statements,
          context: { 'aws:TagKeys': keys },
        }).decision;
      expect(tag(['team', 'cost-center'])).toBe('allow');
      expect(tag(['team', 'owner'])).toBe('implicit-deny');
    });
  });
});

describe('policy variables (reference_policies_variables.html)', () => {
  it('substitutes a variable in the resource portion of a Resource ARN ("after the fifth colon")', () => {
    const identity: PolicyStatement[] = [
      {
        Effect: 'Allow',
        Action: 'sqs:*',
        Resource: `arn:aws:sqs:us-east-1:${ACCOUNT}:\${aws:PrincipalTag/queue}`,
      },
    ];
    const send = (resource: string, queue?: string): string =>
      decide({ action: 'sqs:SendMessage', resource, identity, context: { 'aws:PrincipalTag/queue': queue } })
        .decision;
    expect(send(QUEUE, 'orders')).toBe('allow');
    expect(send(`${QUEUE}-dlq`, 'orders')).toBe('implicit-deny');
    expect(send(QUEUE)).toBe('implicit-deny'); // no value: "will not match any resource"
  });

  it('"You can\'t use a variable to replace parts of the ARN before the fifth colon, such as the service or account": it stays literal text', () => {
    const account: PolicyStatement[] = [
      { Effect: 'Allow', Action: 'sqs:*', Resource: 'arn:aws:sqs:*:${aws:PrincipalAccount}:*' },
    ];
    expect(decide({ action: 'sqs:SendMessage', resource: QUEUE, identity: account }).decision).toBe(
      'implicit-deny',
    );
    const region: PolicyStatement[] = [
      { Effect: 'Allow', Action: 'sqs:*', Resource: `arn:aws:sqs:\${aws:RequestedRegion}:${ACCOUNT}:orders` },
    ];
    expect(
      decide({
        action: 'sqs:SendMessage',
        resource: QUEUE,
        identity: region,
        context: { 'aws:RequestedRegion': 'us-east-1' },
      }).decision,
    ).toBe('implicit-deny');
    // The same variables in a condition are substituted: the restriction is the Resource element's.
    const condition: PolicyStatement[] = [
      {
        Effect: 'Allow',
        Action: 'sqs:*',
        Resource: '*',
        Condition: { ArnLike: { 'aws:SourceArn': 'arn:aws:sns:*:${aws:PrincipalAccount}:*' } },
      },
    ];
    expect(
      decide({
        action: 'sqs:SendMessage',
        resource: QUEUE,
        identity: condition,
        context: { 'aws:SourceArn': TOPIC },
      }).decision,
    ).toBe('allow');
  });

  it('treats variables as literal text without Version 2012-10-17', () => {
    const old = parsePolicy(
      {
        Version: '2008-10-17',
        Statement: [
          {
            Effect: 'Allow',
            Action: 'sqs:*',
            Resource: `arn:aws:sqs:us-east-1:${ACCOUNT}:\${aws:PrincipalTag/queue}`,
          },
        ],
      },
      'Old',
    );
    const decision = evaluate(
      {
        principal: role(),
        action: 'sqs:SendMessage',
        resource: QUEUE,
        context: { 'aws:PrincipalTag/queue': 'orders' },
      },
      { identity: [old], resourceAccountId: ACCOUNT },
    );
    expect(decision.decision).toBe('implicit-deny');
  });

  it('a Resource with a variable that has no value matches no resource (aws:username for a role session)', () => {
    const identity: PolicyStatement[] = [
      {
        Effect: 'Allow',
        Action: 'iam:*AccessKey*',
        Resource: `arn:aws:iam::${ACCOUNT}:user/\${aws:username}`,
      },
    ];
    expect(
      decide({ action: 'iam:CreateAccessKey', resource: `arn:aws:iam::${ACCOUNT}:user/`, identity }).decision,
    ).toBe('implicit-deny');
    const context = { 'aws:username': 'David' };
    const own = `arn:aws:iam::${ACCOUNT}:user/David`;
    expect(decide({ action: 'iam:CreateAccessKey', resource: own, identity, context }).decision).toBe(
      'allow',
    );
  });

  it("takes a default value: ${aws:PrincipalTag/team, 'company-wide'}", () => {
    const identity: PolicyStatement[] = [
      {
        Effect: 'Allow',
        Action: 's3:*',
        Resource: "arn:aws:s3:::DOC-EXAMPLE-BUCKET-${aws:PrincipalTag/team, 'company-wide'}",
      },
    ];
    const attempt = (bucket: string, team?: string): string =>
      decide({
        action: 's3:ListBucket',
        resource: `arn:aws:s3:::${bucket}`,
        identity,
        context: { 'aws:PrincipalTag/team': team },
      }).decision;
    expect(attempt('DOC-EXAMPLE-BUCKET-yellow', 'yellow')).toBe('allow');
    expect(attempt('DOC-EXAMPLE-BUCKET-company-wide', 'yellow')).toBe('implicit-deny');
    expect(attempt('DOC-EXAMPLE-BUCKET-company-wide')).toBe('allow');
  });

  it('${*}, ${?} and ${$} are literal characters, not wildcards', () => {
    const identity: PolicyStatement[] = [
      {
        Effect: 'Allow',
        Action: '*',
        Resource: '*',
        Condition: { StringLike: { 's3:prefix': 'a${*}b${?}c${$}' } },
      },
    ];
    const list = (prefix: string): string =>
      decide({ action: 's3:ListBucket', resource: '*', identity, context: { 's3:prefix': prefix } }).decision;
    expect(list('a*b?c$')).toBe('allow');
    expect(list('axxbyc$')).toBe('implicit-deny');
  });

  it('StringLike with the home-directory prefixes', () => {
    const identity: PolicyStatement[] = [
      {
        Effect: 'Allow',
        Action: 's3:ListBucket',
        Resource: 'arn:aws:s3:::BUCKET-NAME',
        Condition: { StringLike: { 's3:prefix': ['', 'home/', 'home/${aws:username}/'] } },
      },
    ];
    const list = (prefix: string, username?: string): string =>
      decide({
        action: 's3:ListBucket',
        resource: 'arn:aws:s3:::BUCKET-NAME',
        identity,
        context: { 's3:prefix': prefix, 'aws:username': username },
      }).decision;
    expect(list('home/')).toBe('allow');
    expect(list('home/carlos/', 'carlos')).toBe('allow');
    expect(list('home/carlos/', 'maria')).toBe('implicit-deny');
    expect(list('home/carlos/')).toBe('implicit-deny');
  });

  it('a negated operator matches a variable with no value: denied when aws:PrincipalTag/Team is not set', () => {
    const identity: PolicyStatement[] = [
      { Effect: 'Allow', Action: 's3:GetObject', Resource: '*' },
      {
        Effect: 'Deny',
        Action: 's3:GetObject',
        Resource: 'arn:aws:s3:::example-bucket/*',
        Condition: { StringNotEquals: { 's3:ExistingObjectTag/Team': '${aws:PrincipalTag/Team}' } },
      },
    ];
    const read = (context: Record<string, string>): string =>
      decide({ action: 's3:GetObject', resource: 'arn:aws:s3:::example-bucket/a', identity, context })
        .decision;
    expect(read({ 's3:ExistingObjectTag/Team': 'blue', 'aws:PrincipalTag/Team': 'blue' })).toBe('allow');
    expect(read({ 's3:ExistingObjectTag/Team': 'blue', 'aws:PrincipalTag/Team': 'red' })).toBe(
      'explicit-deny',
    );
    expect(read({ 's3:ExistingObjectTag/Team': 'blue' })).toBe('explicit-deny');
  });

  it('adds the principal keys the request context carries for a role session and a service', () => {
    const byKey = (key: string, value: string, principal = role()): string =>
      decide({
        principal,
        action: 'sqs:SendMessage',
        resource: QUEUE,
        resourcePolicy: [
          { Effect: 'Allow', Principal: '*', Action: 'sqs:*', Condition: { StringEquals: { [key]: value } } },
        ],
      }).decision;
    expect(byKey('aws:PrincipalArn', ROLE_ARN)).toBe('allow'); // the role, "not the ARN of the user that assumed the role"
    expect(byKey('aws:PrincipalArn', SESSION_ARN)).toBe('implicit-deny');
    expect(byKey('aws:PrincipalAccount', ACCOUNT)).toBe('allow');
    expect(byKey('aws:PrincipalType', 'AssumedRole')).toBe('allow');
    expect(byKey('aws:PrincipalServiceName', 'sns.amazonaws.com', service('sns.amazonaws.com'))).toBe(
      'allow',
    );
    expect(byKey('aws:PrincipalServiceName', 'sns.amazonaws.com')).toBe('implicit-deny');
    const userid = (): string =>
      decide({
        action: 'sqs:SendMessage',
        resource: QUEUE,
        resourcePolicy: [
          {
            Effect: 'Allow',
            Principal: '*',
            Action: 'sqs:*',
            Condition: { StringLike: { 'aws:userid': 'AROA*:payment-consumer' } },
          },
        ],
      }).decision;
    expect(userid()).toBe('allow');
  });

  it('keeps a context value the caller gave over the one it would add', () => {
    const decision = decide({
      action: 'sqs:SendMessage',
      resource: QUEUE,
      context: { 'aws:principalaccount': '999999999999' },
      resourcePolicy: [
        {
          Effect: 'Allow',
          Principal: '*',
          Action: 'sqs:*',
          Condition: { StringEquals: { 'aws:PrincipalAccount': ACCOUNT } },
        },
      ],
    });
    expect(decision.decision).toBe('implicit-deny');
  });
});

describe('KMS key policies (kms/latest/developerguide/key-policy-default.html)', () => {
  const enableIam: PolicyStatement = {
    Sid: 'Enable IAM policies',
    Effect: 'Allow',
    Principal: { AWS: `arn:aws:iam::${ACCOUNT}:root` },
    Action: 'kms:*',
    Resource: '*',
  };
  const keyUsers: PolicyStatement = {
    Sid: 'Allow use of the key',
    Effect: 'Allow',
    Principal: { AWS: [`arn:aws:iam::${ACCOUNT}:role/ExampleRole`] },
    Action: ['kms:Encrypt', 'kms:Decrypt', 'kms:ReEncrypt*', 'kms:GenerateDataKey*', 'kms:DescribeKey'],
    Resource: '*',
  };
  const decrypt: PolicyStatement = { Sid: 'Decrypt', Effect: 'Allow', Action: 'kms:Decrypt', Resource: KEY };
  const kms = (scenario: Omit<Scenario, 'action' | 'resource' | 'kind'> & { action?: string }): Decision =>
    decide({ action: 'kms:Decrypt', resource: KEY, kind: 'kms', ...scenario });

  it('the default key policy lets IAM policies allow', () => {
    const decision = kms({ identity: [decrypt], resourcePolicy: [enableIam] });
    expect(decision.decision).toBe('allow');
    expect(sids(decision.allowedBy)).toEqual(['ResourcePolicy/Enable IAM policies', 'RolePolicy/Decrypt']);
  });

  it('the account principal "doesn\'t give any IAM users or roles permission" by itself', () => {
    expect(kms({ resourcePolicy: [enableIam] })).toEqual({
      decision: 'implicit-deny',
      allowedBy: [],
      deniedBy: [],
      reason: 'because no identity-based policy allows the kms:Decrypt action',
    });
  });

  it('without the account statement, "IAM policies that allow access to the key are ineffective"', () => {
    expect(kms({ identity: [decrypt], resourcePolicy: [keyUsers] })).toEqual({
      decision: 'implicit-deny',
      allowedBy: [],
      deniedBy: [],
      reason: 'because no resource-based policy allows the kms:Decrypt action',
    });
  });

  it('unlike other resources: the same policies allow on a queue', () => {
    const decision = decide({
      action: 'sqs:SendMessage',
      resource: QUEUE,
      identity: [{ Effect: 'Allow', Action: 'sqs:SendMessage', Resource: QUEUE }],
      resourcePolicy: [
        { Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${ACCOUNT}:role/ExampleRole` }, Action: 'sqs:*' },
      ],
    });
    expect(decision.decision).toBe('allow');
  });

  it('a key user named in the key policy needs no IAM policy', () => {
    const decision = kms({ principal: role('ExampleRole'), resourcePolicy: [keyUsers] });
    expect(decision.decision).toBe('allow');
    expect(sids(decision.allowedBy)).toEqual(['ResourcePolicy/Allow use of the key']);
  });

  it('"IAM policies that deny access to the key are still effective"', () => {
    const decision = kms({
      principal: role('ExampleRole'),
      identity: [{ Sid: 'NoDecrypt', Effect: 'Deny', Action: 'kms:Decrypt', Resource: '*' }],
      resourcePolicy: [enableIam, keyUsers],
    });
    expect(decision.decision).toBe('explicit-deny');
    expect(sids(decision.deniedBy)).toEqual(['RolePolicy/NoDecrypt']);
  });

  it('delegates only what the account statement covers', () => {
    const describeOnly: PolicyStatement = { ...enableIam, Action: 'kms:Describe*' };
    expect(kms({ identity: [decrypt], resourcePolicy: [describeOnly] }).decision).toBe('implicit-deny');
    expect(
      kms({
        action: 'kms:DescribeKey',
        identity: [{ Effect: 'Allow', Action: 'kms:*', Resource: KEY }],
        resourcePolicy: [describeOnly],
      }).decision,
    ).toBe('allow');
  });

  it('a key without a key policy allows nothing', () => {
    expect(kms({ identity: [decrypt] }).decision).toBe('implicit-deny');
  });

  it('"A key policy statement without a Resource element doesn\'t apply to any KMS key"', () => {
    const { Resource: _, ...noResource } = keyUsers;
    expect(kms({ principal: role('ExampleRole'), resourcePolicy: [noResource] }).decision).toBe(
      'implicit-deny',
    );
  });

  it('a service principal named in the key policy may use the key', () => {
    const decision = kms({
      principal: service('logs.amazonaws.com'),
      action: 'kms:GenerateDataKey',
      resourcePolicy: [
        enableIam,
        {
          Sid: 'Logs',
          Effect: 'Allow',
          Principal: { Service: 'logs.amazonaws.com' },
          Action: 'kms:GenerateDataKey*',
          Resource: '*',
        },
      ],
    });
    expect(decision.decision).toBe('allow');
    expect(sids(decision.allowedBy)).toEqual(['ResourcePolicy/Logs']);
  });
});

describe('parsePolicy and PolicyError', () => {
  const statement = { Effect: 'Allow', Action: 'sqs:*', Resource: '*' };
  const parse = (document: unknown): NamedPolicy => parsePolicy(document, 'QueuePolicy');

  it('parses a JSON string and a single statement object', () => {
    const parsed = parse(JSON.stringify({ Version: '2012-10-17', Statement: statement }));
    expect(parsed).toEqual({ id: 'QueuePolicy', document: { Version: '2012-10-17', Statement: statement } });
  });

  it.each([
    ['not JSON', '{"Version":', /QueuePolicy: not valid JSON/],
    ['an array', [statement], /a policy document is a JSON object/],
    [
      'an unknown top-level element',
      { Statement: statement, Statements: [] },
      /unknown top-level element "Statements"/,
    ],
    ['an unknown Version', { Version: '2012-10-18', Statement: statement }, /Version must be/],
    ['no Statement', { Version: '2012-10-17' }, /no Statement/],
    [
      'a lower-case Effect',
      { Statement: { ...statement, Effect: 'allow' } },
      /statement 0: Effect must be "Allow" or "Deny"/,
    ],
    ['a misspelt element', { Statement: { ...statement, Resources: '*' } }, /unknown element "Resources"/],
    ['no Action', { Statement: { Effect: 'Allow', Resource: '*' } }, /needs Action or NotAction/],
    [
      'Action and NotAction',
      { Statement: { ...statement, NotAction: 'sqs:Purge*' } },
      /Action or NotAction, not both/,
    ],
    [
      'Resource and NotResource',
      { Statement: { ...statement, NotResource: '*' } },
      /Resource or NotResource, not both/,
    ],
    [
      'an action without a service',
      { Statement: { ...statement, Action: 'SendMessage' } },
      /is not an action/,
    ],
    ['an empty Action list', { Statement: { ...statement, Action: [] } }, /Action is an empty list/],
    [
      'a non-string Resource',
      { Statement: { ...statement, Resource: 42 } },
      /Resource values must be strings/,
    ],
    [
      'an unknown principal type',
      { Statement: { ...statement, Principal: { Aws: '*' } } },
      /unknown principal type "Aws"/,
    ],
    [
      'an unknown operator',
      { Statement: { ...statement, Condition: { StringEqualz: { k: 'v' } } } },
      /unknown condition operator "StringEqualz"/,
    ],
    [
      'an unknown set operator',
      { Statement: { ...statement, Condition: { 'ForSomeValues:StringEquals': { k: 'v' } } } },
      /unknown condition operator/,
    ],
    [
      'NullIfExists',
      { Statement: { ...statement, Condition: { NullIfExists: { k: 'true' } } } },
      /Null takes neither IfExists/,
    ],
    [
      'ForAllValues:Null',
      { Statement: { ...statement, Condition: { 'ForAllValues:Null': { k: 'true' } } } },
      /Null takes neither/,
    ],
    [
      'a non-numeric Numeric value',
      { Statement: { ...statement, Condition: { NumericLessThan: { 's3:max-keys': 'ten' } } } },
      /"ten" is not a number/,
    ],
    [
      'a bad date',
      { Statement: { ...statement, Condition: { DateLessThan: { 'aws:CurrentTime': 'tomorrow' } } } },
      /is not an ISO 8601 date/,
    ],
    [
      'a bad CIDR',
      { Statement: { ...statement, Condition: { IpAddress: { 'aws:SourceIp': '203.0.113.0/33' } } } },
      /not an IP address or CIDR/,
    ],
    [
      'a Bool that is not true or false',
      { Statement: { ...statement, Condition: { Bool: { 'aws:SecureTransport': 'no' } } } },
      /"no" is not true or false/,
    ],
    [
      'a condition without keys',
      { Statement: { ...statement, Condition: { StringEquals: {} } } },
      /must map one or more context keys/,
    ],
    [
      'an object as a condition value',
      { Statement: { ...statement, Condition: { StringEquals: { k: { v: 1 } } } } },
      /values must be strings/,
    ],
  ])('rejects %s', (_, document, message) => {
    expect(() => parse(document)).toThrow(PolicyError);
    expect(() => parse(document)).toThrow(message);
  });

  it('names the Sid of the faulty statement', () => {
    expect(() =>
      parse({ Statement: [statement, { ...statement, Sid: 'Broken', Effect: 'Permit' }] }),
    ).toThrow('policy QueuePolicy, statement 1 (Broken): Effect must be "Allow" or "Deny", not "Permit"');
  });

  it('rejects Principal in an identity-based policy and a resource-based statement without one', () => {
    const withPrincipal = policy('RolePolicy', {
      Effect: 'Allow',
      Principal: '*',
      Action: 'sqs:*',
      Resource: '*',
    });
    const request: AuthorizationRequest = { principal: role(), action: 'sqs:SendMessage', resource: QUEUE };
    expect(() => evaluate(request, { identity: [withPrincipal], resourceAccountId: ACCOUNT })).toThrow(
      /RolePolicy, statement 0: Principal in an identity-based policy/,
    );
    const noPrincipal = policy('QueuePolicy', { Effect: 'Allow', Action: 'sqs:*', Resource: '*' });
    expect(() =>
      evaluate(request, { identity: [], resource: noPrincipal, resourceAccountId: ACCOUNT }),
    ).toThrow(/needs Principal or NotPrincipal/);
    const noResource = policy('RolePolicy', { Effect: 'Allow', Action: 'sqs:*' });
    expect(() => evaluate(request, { identity: [noResource], resourceAccountId: ACCOUNT })).toThrow(
      /identity-based policy needs Resource or NotResource/,
    );
  });

  it('refuses what it does not model: another account, identity policies for a service', () => {
    const request: AuthorizationRequest = { principal: role(), action: 'sqs:SendMessage', resource: QUEUE };
    expect(() => evaluate(request, { identity: [], resourceAccountId: '999999999999' })).toThrow(
      /cross-account/,
    );
    const sns: AuthorizationRequest = {
      principal: service('sns.amazonaws.com'),
      action: 'sqs:SendMessage',
      resource: QUEUE,
    };
    const any = policy('P', { Effect: 'Allow', Action: '*', Resource: '*' });
    expect(() => evaluate(sns, { identity: [any], resourceAccountId: ACCOUNT })).toThrow(
      /no identity-based policies/,
    );
    expect(() =>
      evaluate(
        {
          principal: {
            type: 'role',
            roleArn: `arn:aws:iam::${ACCOUNT}:user/bob`,
            sessionName: 's',
            accountId: ACCOUNT,
          },
          action: 'sqs:SendMessage',
          resource: QUEUE,
        },
        { identity: [], resourceAccountId: ACCOUNT },
      ),
    ).toThrow(/not a role ARN/);
  });
});

describe('properties', () => {
  const ACTIONS = ['sqs:SendMessage', 'sqs:ReceiveMessage', 'sns:Publish', 'kms:Decrypt'];
  const RESOURCES = [QUEUE, TOPIC, KEY, `${QUEUE}-dlq`];
  const actionPattern = fc.constantFrom(
    'sqs:*',
    'sqs:SendMessage',
    'sns:Publish',
    'kms:*',
    '*',
    'SQS:send*',
    'sqs:Receive?essage',
  );
  const resourcePattern = fc.constantFrom(
    '*',
    QUEUE,
    `${QUEUE}*`,
    TOPIC,
    'arn:aws:kms:*',
    `arn:aws:sqs:us-east-1:${ACCOUNT}:*`,
  );
  const condition = fc.constantFrom<PolicyStatement['Condition'] | undefined>(
    undefined,
    { Bool: { 'aws:SecureTransport': 'false' } },
    { StringEquals: { 'aws:SourceAccount': ACCOUNT } },
    { ArnLikeIfExists: { 'aws:SourceArn': `arn:aws:sns:*:${ACCOUNT}:*` } },
    { Null: { 'aws:SourceArn': 'true' } },
    { 'ForAllValues:StringEquals': { 'aws:TagKeys': ['team'] } },
  );
  const statementArb = (kind: 'identity' | 'resource'): fc.Arbitrary<PolicyStatement> =>
    fc
      .record({
        effect: fc.constantFrom<'Allow' | 'Deny'>('Allow', 'Deny'),
        not: fc.boolean(),
        action: actionPattern,
        notResource: fc.boolean(),
        resource: resourcePattern,
        principal: fc.constantFrom<PolicyStatement['Principal']>(
          '*',
          { AWS: ROLE_ARN },
          { AWS: ACCOUNT },
          { Service: 'sns.amazonaws.com' },
          { AWS: `arn:aws:iam::${ACCOUNT}:role/Other` },
        ),
        condition,
      })
      .map(({ effect, not, action, notResource, resource, principal, condition: c }) => ({
        Effect: effect,
        ...(not ? { NotAction: action } : { Action: action }),
        ...(notResource ? { NotResource: resource } : { Resource: resource }),
        ...(kind === 'resource' ? { Principal: principal } : {}),
        ...(c === undefined ? {} : { Condition: c }),
      }));
  const withSids = (statements: PolicyStatement[], prefix: string): PolicyStatement[] =>
    statements.map((statement, i) => ({ ...statement, Sid: `${prefix}${i}` }));
  const world = fc.record({
    principal: fc.constantFrom<RequestPrincipal>(role(), role('Other'), service('sns.amazonaws.com')),
    action: fc.constantFrom(...ACTIONS),
    resource: fc.constantFrom(...RESOURCES),
    context: fc.record(
      {
        'aws:SecureTransport': fc.boolean(),
        'aws:SourceAccount': fc.constantFrom(ACCOUNT, '999999999999'),
        'aws:SourceArn': fc.constantFrom(TOPIC, `arn:aws:sns:us-east-1:999999999999:x`),
        'aws:TagKeys': fc.subarray(['team', 'owner']),
      },
      { requiredKeys: [] },
    ),
    identity: fc.array(fc.array(statementArb('identity'), { maxLength: 4 }), { maxLength: 3 }),
    resourcePolicy: fc.option(fc.array(statementArb('resource'), { minLength: 1, maxLength: 4 }), {
      nil: undefined,
    }),
    kind: fc.constantFrom<'standard' | 'kms'>('standard', 'kms'),
  });
  type World = typeof world extends fc.Arbitrary<infer T> ? T : never;

  const build = (w: World): [AuthorizationRequest, PoliciesInForce] => [
    { principal: w.principal, action: w.action, resource: w.resource, context: w.context },
    {
      identity:
        w.principal.type === 'role'
          ? w.identity.map((statements, i) => policy(`Identity${i}`, ...withSids(statements, `i${i}s`)))
          : [],
      ...(w.resourcePolicy ? { resource: policy('Resource', ...withSids(w.resourcePolicy, 'r')) } : {}),
      resourceAccountId: ACCOUNT,
      resourceKind: w.kind,
    },
  ];
  const keyOf = (refs: Decision['allowedBy']): string[] =>
    refs.map((ref) => `${ref.policyId}/${ref.sid ?? ''}`).sort();

  it('adding a Deny that matches the request always yields an explicit deny, never an allow', () => {
    fc.assert(
      fc.property(world, fc.boolean(), (w, inResource) => {
        const [request, policies] = build(w);
        const before = evaluate(request, policies);
        const deny: PolicyStatement = {
          Sid: 'AddedDeny',
          Effect: 'Deny',
          Action: request.action,
          Resource: request.resource,
        };
        const useResource = inResource || request.principal.type === 'service';
        const after = evaluate(
          request,
          useResource
            ? {
                ...policies,
                resource: policy('Resource', ...withSids(w.resourcePolicy ?? [], 'r'), {
                  ...deny,
                  Principal: '*',
                }),
              }
            : { ...policies, identity: [...policies.identity, policy('Added', deny)] },
        );
        expect(after.decision).toBe('explicit-deny');
        expect(keyOf(after.deniedBy)).toContain(useResource ? 'Resource/AddedDeny' : 'Added/AddedDeny');
        if (before.decision !== 'allow') expect(after.decision).not.toBe('allow');
      }),
      { numRuns: 300 },
    );
  });

  it('adding an Allow never turns an allow into a deny', () => {
    fc.assert(
      fc.property(world, statementArb('identity'), (w, extra) => {
        fc.pre(w.principal.type === 'role');
        const [request, policies] = build(w);
        const before = evaluate(request, policies);
        const allow: PolicyStatement = { ...extra, Effect: 'Allow', Sid: 'Extra' };
        const after = evaluate(request, {
          ...policies,
          identity: [...policies.identity, policy('Extra', allow)],
        });
        if (before.decision === 'allow') expect(after.decision).toBe('allow');
        if (before.decision === 'explicit-deny') expect(after.decision).toBe('explicit-deny');
      }),
      { numRuns: 300 },
    );
  });

  it('the order of statements and of policies never matters', () => {
    fc.assert(
      fc.property(world, fc.integer(), (w, seed) => {
        const [request, policies] = build(w);
        const shuffle = <T>(items: readonly T[], salt: number): T[] =>
          items
            .map((item, i) => ({ item, rank: Math.sin(seed + salt * 31 + i * 7919) }))
            .sort((a, b) => a.rank - b.rank)
            .map(({ item }) => item);
        const reorder = (named: NamedPolicy, salt: number): NamedPolicy => {
          const statements = named.document.Statement;
          return {
            id: named.id,
            document: {
              ...named.document,
              Statement: shuffle(Array.isArray(statements) ? statements : [statements], salt),
            },
          };
        };
        const shuffled: PoliciesInForce = {
          ...policies,
          identity: shuffle(
            policies.identity.map((named, i) => reorder(named, i + 1)),
            0,
          ),
          ...(policies.resource ? { resource: reorder(policies.resource, 99) } : {}),
        };
        const a = evaluate(request, policies);
        const b = evaluate(request, shuffled);
        expect(b.decision).toBe(a.decision);
        expect(b.reason).toBe(a.reason);
        expect(keyOf(b.allowedBy)).toEqual(keyOf(a.allowedBy));
        expect(keyOf(b.deniedBy)).toEqual(keyOf(a.deniedBy));
      }),
      { numRuns: 300 },
    );
  });
});
