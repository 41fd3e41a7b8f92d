/** A NodejsFunction with tenang's defaults: explicit timeout and memory, Powertools, its own log group. */
import { Duration, Stack, Validations } from 'aws-cdk-lib';
import type * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import * as fs from 'node:fs';
import { PIPELINE_CONTEXT_KEY, pipelineBundleDefines } from '../config/source';
import { DATA_REMOVAL_POLICY, FUNCTION_DEFAULTS, LOG_RETENTION, powertoolsEnvironment } from './defaults';
import { environmentProblems, validateProps } from './validation';

/** Where a function runs in a VPC. */
export interface FunctionVpcPlacement {
  readonly vpc: ec2.IVpc;
  readonly subnets: ec2.SubnetSelection;
  readonly securityGroups: readonly ec2.ISecurityGroup[];
}

/** Props of TenangFunction. */
export interface TenangFunctionProps {
  /** Logical name; becomes POWERTOOLS_SERVICE_NAME and part of the function name. */
  readonly serviceName: string;
  /** Handler entry file (TypeScript). */
  readonly entry: string;
  /** Explicit timeout, never the 3 s default. */
  readonly timeoutSeconds: number;
  /** Explicit memory, never the 128 MB default. */
  readonly memoryMb: number;
  /** Variables besides the Powertools ones; no secrets. @default {} */
  readonly environment?: Readonly<Record<string, string>>;
  /** @default - not in a VPC: only functions that reach Redis run in one */
  readonly vpc?: FunctionVpcPlacement;
  /** @default one month */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Why the function needs no asynchronous-invocation DLQ (cdk-nag Serverless-LambdaDLQ), e.g.
   * "invoked synchronously by an SQS event source mapping; failures go to the queue's DLQ".
   */
  readonly noAsyncDlqReason: string;
}

/** The runtime pinned by the project (the Lambda runtime users deploy on). */
export const RUNTIME_REASON =
  'nodejs22.x is the runtime this project targets and tests against (the local host runs the same bundles on Node 20 and 22); moving to a newer runtime is a deliberate upgrade.';

/**
 * The bundling of a function inside a pipeline stack: the app's declaration (the stack sets it
 * as construct context, see PipelineStack) replaces `process.env.TENANG_PIPELINE` in the code,
 * and the config loaded from it `process.env.TENANG_PIPELINE_RESOLVED`, so the function runs with
 * the config it was deployed with, not a copy typed into the library.
 */
function bundlingFor(scope: Construct): nodejs.BundlingOptions {
  const encoded: unknown = scope.node.tryGetContext(PIPELINE_CONTEXT_KEY);
  if (encoded === undefined) return FUNCTION_DEFAULTS.bundling;
  if (typeof encoded !== 'string')
    throw new Error(`construct context ${PIPELINE_CONTEXT_KEY} must be a JSON string`);
  return {
    ...FUNCTION_DEFAULTS.bundling,
    define: pipelineBundleDefines(encoded),
  };
}

/** A Lambda function bundled locally by esbuild with secure, observable defaults. */
export class TenangFunction extends Construct {
  /** The function. */
  public readonly function: nodejs.NodejsFunction;
  /** Its log group. */
  public readonly logGroup: logs.LogGroup;

  public constructor(scope: Construct, id: string, props: TenangFunctionProps) {
    super(scope, id);
    validateProps('TenangFunction', props, [
      (p) => (fs.existsSync(p.entry) ? undefined : `entry ${p.entry} does not exist`),
      (p) => (/^[a-z][a-z0-9-]*$/.test(p.serviceName) ? undefined : 'serviceName must be kebab-case'),
      (p) => (p.timeoutSeconds >= 1 && p.timeoutSeconds <= 900 ? undefined : 'timeoutSeconds must be 1–900'),
      (p) => (p.memoryMb >= 128 && p.memoryMb <= 10_240 ? undefined : 'memoryMb must be 128–10240'),
      (p) => environmentProblems(p.environment),
      (p) =>
        p.noAsyncDlqReason.trim().length > 0 ? undefined : 'noAsyncDlqReason must say why no DLQ is needed',
    ]);
    const stack = Stack.of(this);
    const functionName = `${stack.stackName}-${props.serviceName}`;

    this.logGroup = new logs.LogGroup(this, 'Logs', {
      logGroupName: `/aws/lambda/${functionName}`,
      retention: props.logRetention ?? LOG_RETENTION,
      removalPolicy: DATA_REMOVAL_POLICY,
    });
    // An explicit role: log writes scoped to this function's log group, no AWS managed policy.
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Execution role of ${functionName}`,
    });
    this.logGroup.grantWrite(role);
    if (props.vpc !== undefined) {
      // Lambda creates the function's network interfaces with its role; CDK adds this policy
      // only to roles it creates itself.
      role.addManagedPolicy(
        iam.ManagedPolicy.fromAwsManagedPolicyName('service-role/AWSLambdaVPCAccessExecutionRole'),
      );
    }
    this.function = new nodejs.NodejsFunction(this, 'Function', {
      role,
      ...FUNCTION_DEFAULTS,
      functionName,
      entry: props.entry,
      handler: 'handler',
      timeout: Duration.seconds(props.timeoutSeconds),
      memorySize: props.memoryMb,
      logGroup: this.logGroup,
      environment: { ...powertoolsEnvironment(props.serviceName), ...props.environment },
      vpc: props.vpc?.vpc,
      vpcSubnets: props.vpc?.subnets,
      securityGroups: props.vpc ? [...props.vpc.securityGroups] : undefined,
      bundling: bundlingFor(this),
    });

    const acknowledge = (id: string, reason: string): void =>
      Validations.of(this).acknowledge({ id, reason });
    acknowledge(
      'AwsSolutions-IAM5[Resource::*]',
      'Active tracing needs xray:PutTraceSegments and xray:PutTelemetryRecords, which support no resource-level permissions.',
    );
    acknowledge('AwsSolutions-L1', RUNTIME_REASON);
    acknowledge('Serverless-LambdaLatestVersion', RUNTIME_REASON);
    acknowledge('Serverless-LambdaDLQ', props.noAsyncDlqReason);
    if (props.vpc !== undefined) {
      acknowledge(
        'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]',
        'Lambda needs the ENI actions of this AWS-maintained policy to place the function in its VPC; they require Resource "*", so a hand-written copy would be no narrower.',
      );
    }
  }
}
