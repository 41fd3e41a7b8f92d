import * as path from 'node:path';
import { Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import { METRICS_NAMESPACE } from '../../lib/config';
import { Cache } from '../../lib/infra/cache';
import { TenangFunction, type TenangFunctionProps } from '../../lib/infra/tenang-function';
import {
  actionsOf,
  logicalId,
  propertiesOf,
  propsErrorOf,
  ref,
  resourcesOf,
  roleIdOf,
  statementsOfRole,
  testStack,
  toText,
  REFERENCE_APP_DIR,
} from './helpers';

/** Props that pass validation; each test breaks or changes what it is about. */
function validProps(overrides: Partial<TenangFunctionProps> = {}): TenangFunctionProps {
  return {
    serviceName: 'payment-consumer',
    entry: path.join(REFERENCE_APP_DIR, 'jobs', 'payment-capture.ts'),
    timeoutSeconds: 30,
    memoryMb: 512,
    environment: { ORDERS_TABLE: 'tenang-dev-orders' },
    noAsyncDlqReason: 'Invoked synchronously by an SQS event source mapping.',
    ...overrides,
  };
}

function build(overrides: Partial<TenangFunctionProps> = {}): TenangFunction {
  return new TenangFunction(testStack(), 'Fn', validProps(overrides));
}

function roleOf(f: TenangFunction): iam.IRole {
  if (f.function.role === undefined) throw new Error('the function has no role');
  return f.function.role;
}

describe('Class: TenangFunction', () => {
  let fn: TenangFunction;
  let template: Template;
  beforeAll(() => {
    fn = build();
    template = Template.fromStack(Stack.of(fn));
  });
  const roleId = (f: TenangFunction): string => roleIdOf(f.function);

  describe('Defaults', () => {
    it('when built, it runs nodejs22.x on arm64 with active tracing and the explicit timeout and memory', () => {
      // Act
      const properties = propertiesOf(template, fn.function);

      // Assess
      expect(properties).toMatchObject({
        FunctionName: 'Test-payment-consumer',
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        TracingConfig: { Mode: 'Active' },
        Timeout: 30,
        MemorySize: 512,
        Handler: 'index.handler',
      });
    });

    it('when built, its environment has the Powertools variables and the given ones', () => {
      // Act
      const properties = propertiesOf(template, fn.function);

      // Assess
      expect(properties.Environment).toEqual({
        Variables: {
          POWERTOOLS_SERVICE_NAME: 'payment-consumer',
          POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
          POWERTOOLS_LOG_LEVEL: 'INFO',
          POWERTOOLS_LOGGER_LOG_EVENT: 'false',
          POWERTOOLS_TRACER_CAPTURE_RESPONSE: 'false',
          ORDERS_TABLE: 'tenang-dev-orders',
        },
      });
    });

    it('when built outside a VPC, it runs under its own role with no managed policy and no VpcConfig', () => {
      // Act
      const properties = propertiesOf(template, fn.function);
      const role = propertiesOf(template, roleOf(fn));

      // Assess
      expect(properties.Role).toEqual({ 'Fn::GetAtt': [roleId(fn), 'Arn'] });
      expect(properties.VpcConfig).toBeUndefined();
      expect(role.ManagedPolicyArns).toBeUndefined();
      expect(role.AssumeRolePolicyDocument).toMatchObject({
        Statement: [
          { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'lambda.amazonaws.com' } },
        ],
      });
      template.resourceCountIs('AWS::IAM::Role', 1);
    });

    it('when built, it logs to /aws/lambda/<stack>-<service>, kept 30 days', () => {
      // Act
      const logGroup = propertiesOf(template, fn.logGroup);

      // Assess
      expect(logGroup).toEqual({ LogGroupName: '/aws/lambda/Test-payment-consumer', RetentionInDays: 30 });
      expect(propertiesOf(template, fn.function).LoggingConfig).toEqual({ LogGroup: ref(fn.logGroup) });
    });

    it('when a log retention is given, it keeps the logs that long', () => {
      // Prepare
      const custom = build({ logRetention: logs.RetentionDays.ONE_WEEK });

      // Act
      const logGroup = propertiesOf(Template.fromStack(Stack.of(custom)), custom.logGroup);

      // Assess
      expect(logGroup.RetentionInDays).toBe(7);
    });

    it('when built, its role may write logs only to its own log group', () => {
      // Act
      const statements = statementsOfRole(template, roleId(fn));

      // Assess
      const logStatements = statements.filter((s) => actionsOf(s).some((a) => a.startsWith('logs:')));
      expect(logStatements).toEqual([
        {
          Effect: 'Allow',
          Action: ['logs:CreateLogStream', 'logs:PutLogEvents'],
          Resource: { 'Fn::GetAtt': [logicalId(fn.logGroup), 'Arn'] },
        },
      ]);
      // The only wildcard is X-Ray's, which has no resource-level permissions.
      const wildcard = statements.filter((s) => resourcesOf(s).includes('*'));
      expect(wildcard.flatMap(actionsOf).sort()).toEqual([
        'xray:PutTelemetryRecords',
        'xray:PutTraceSegments',
      ]);
    });

    it('when placed in a VPC, its role carries AWSLambdaVPCAccessExecutionRole, so Lambda can create its network interfaces', () => {
      // Prepare
      const stack = testStack();
      const cache = new Cache(stack, 'Cache', { stageName: 'dev', managed: false });
      const inVpc = new TenangFunction(stack, 'Fn', validProps({ vpc: cache.functionPlacement }));

      // Act
      const t = Template.fromStack(stack);

      // Assess
      expect(propertiesOf(t, inVpc.function).VpcConfig).toMatchObject({
        SecurityGroupIds: [{ 'Fn::GetAtt': [logicalId(cache.clientSecurityGroup), 'GroupId'] }],
      });
      // With an explicit role CDK adds no managed policy by itself; without ec2:CreateNetworkInterface
      // and friends, Lambda refuses to create a function in a VPC.
      const managed = (propertiesOf(t, roleOf(inVpc)).ManagedPolicyArns ?? []) as unknown[];
      expect(managed.map(toText)).toContainEqual(
        expect.stringMatching(/:iam::aws:policy\/service-role\/AWSLambdaVPCAccessExecutionRole$/),
      );
    });
  });

  describe('Validation', () => {
    it('when the entry file does not exist, it fails naming the file', () => {
      // Prepare
      const entry = path.join(REFERENCE_APP_DIR, 'functions', 'no-such-consumer.ts');

      // Act
      const error = propsErrorOf(() => build({ entry }));

      // Assess
      expect(error.message).toMatch(/^Invalid props for TenangFunction/);
      expect(error.problems).toEqual([`entry ${entry} does not exist`]);
    });

    it.each(['PaymentConsumer', 'payment_consumer', '1-consumer', ''])(
      'when the serviceName is "%s", it fails: kebab-case only',
      (serviceName) => {
        // Act
        const error = propsErrorOf(() => build({ serviceName }));

        // Assess
        expect(error.problems).toEqual(['serviceName must be kebab-case']);
      },
    );

    it.each([0, 901])('when the timeout is %i s, it fails: 1–900 s only', (timeoutSeconds) => {
      // Act
      const error = propsErrorOf(() => build({ timeoutSeconds }));

      // Assess
      expect(error.problems).toEqual(['timeoutSeconds must be 1–900']);
    });

    it.each([127, 10_241])('when the memory is %i MB, it fails: 128–10240 MB only', (memoryMb) => {
      // Act
      const error = propsErrorOf(() => build({ memoryMb }));

      // Assess
      expect(error.problems).toEqual(['memoryMb must be 128–10240']);
    });

    it.each(['', '   '])(
      'when noAsyncDlqReason is "%s", it fails asking why no DLQ is needed',
      (noAsyncDlqReason) => {
        // Act
        const error = propsErrorOf(() => build({ noAsyncDlqReason }));

        // Assess
        expect(error.problems).toEqual(['noAsyncDlqReason must say why no DLQ is needed']);
      },
    );

    it('when an environment variable looks like a secret, it fails naming it', () => {
      // Act
      const error = propsErrorOf(() => build({ environment: { DB_PASSWORD: 'hunter2' } }));

      // Assess
      expect(error.problems).toEqual([
        expect.stringMatching(/secrets never go into environment variables: DB_PASSWORD/),
      ]);
    });

    it('when several rules are broken, it lists every problem in one ConstructPropsError', () => {
      // Act
      const error = propsErrorOf(() =>
        build({
          entry: path.join(REFERENCE_APP_DIR, 'functions', 'no-such-consumer.ts'),
          serviceName: 'Bad_Name',
          timeoutSeconds: 0,
          memoryMb: 64,
          environment: { API_KEY: 'x' },
          noAsyncDlqReason: '',
        }),
      );

      // Assess
      expect(error.problems).toHaveLength(6);
      expect(error.message.split('\n').filter((line) => line.startsWith('  - '))).toHaveLength(6);
    });
  });
});
