/**
 * `tenang preflight` through the CLI (bin/tenang.ts's run), the account mocked with
 * aws-sdk-client-mock: the text and JSON outputs, where the stage model comes from, and the exit
 * codes (0 with warnings only, 1 on a failed check, 2 on usage, 3 without credentials).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  CloudFormationClient,
  CloudFormationServiceException,
  DescribeStacksCommand,
  GetTemplateCommand,
} from '@aws-sdk/client-cloudformation';
import { CloudWatchLogsClient, DescribeLogGroupsCommand } from '@aws-sdk/client-cloudwatch-logs';
import { DescribeTableCommand, DynamoDBClient, ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { GetAccountSettingsCommand, LambdaClient, LambdaServiceException } from '@aws-sdk/client-lambda';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import { runCaptured } from '../../../bin/tenang';
import { PREFLIGHT_CHECK_IDS, type PreflightCheck } from '../../../lib/audit/preflight';

const STAGE = 'unit';
const STACK = `tenang-${STAGE}`;
const REGION = 'eu-west-1';

const cfn = mockClient(CloudFormationClient);
const lambda = mockClient(LambdaClient);
const dynamodb = mockClient(DynamoDBClient);
const streams = mockClient(DynamoDBStreamsClient);
const logs = mockClient(CloudWatchLogsClient);
const ssm = mockClient(SSMClient);
const savedEnv = { ...process.env };

const missingStack = (name: string): CloudFormationServiceException =>
  new CloudFormationServiceException({
    name: 'ValidationError',
    $fault: 'client',
    $metadata: { httpStatusCode: 400 },
    message: `Stack with id ${name} does not exist`,
  });

/** An account without the stage, bootstrapped, with `unreserved` concurrency. */
function account(unreserved: number): void {
  for (const m of [cfn, lambda, dynamodb, streams, logs, ssm]) m.reset();
  cfn.on(DescribeStacksCommand).rejects(missingStack(STACK));
  cfn.on(GetTemplateCommand).rejects(missingStack(STACK));
  lambda.on(GetAccountSettingsCommand).resolves({
    AccountLimit: { ConcurrentExecutions: unreserved, UnreservedConcurrentExecutions: unreserved },
  });
  dynamodb
    .on(DescribeTableCommand)
    .rejects(new ResourceNotFoundException({ $metadata: { httpStatusCode: 400 }, message: 'not found' }));
  logs.on(DescribeLogGroupsCommand).resolves({ logGroups: [] });
  ssm.on(GetParameterCommand).resolves({ Parameter: { Value: '21' } });
}

beforeEach(() => {
  Object.assign(process.env, { AWS_REGION: REGION, TENANG_STAGE: STAGE, TENANG_ACTOR: 'tester' });
  account(1000);
});

afterAll(() => {
  process.env = savedEnv;
});

describe('Command: preflight', () => {
  it('when only the headroom is short, --json prints every check as { id, status, message, remedy, resources } and exits 0', async () => {
    // Prepare: the declaration's 23 fit in 25, but not with 5 to spare.
    account(25);

    // Act
    const result = await runCaptured(['preflight', '--json']);

    // Assess
    expect(result.code).toBe(0);
    const checks = JSON.parse(result.out) as PreflightCheck[];
    expect(checks.map((c) => c.id)).toEqual([...PREFLIGHT_CHECK_IDS]);
    for (const c of checks)
      expect(Object.keys(c).sort()).toEqual(['id', 'message', 'remedy', 'resources', 'status']);
    expect(checks.map((c) => c.status)).toEqual(['warn', 'pass', 'pass', 'pass', 'skipped']);
    expect(result.err).toContain('preflight: the stage as the pipeline declaration');
    expect(result.err).toMatch(/note: functions the app adds/);
  });

  it('when a table of the destroyed stage is left, the text names it with what to do and the command exits 1', async () => {
    // Prepare
    dynamodb
      .on(DescribeTableCommand, { TableName: `${STACK}-orders` })
      .resolves({ Table: { TableName: `${STACK}-orders` } });

    // Act
    const result = await runCaptured(['preflight']);

    // Assess
    expect(result.code).toBe(1);
    expect(result.out).toMatch(new RegExp(`^preflight of stage ${STAGE} \\(stack ${STACK}, ${REGION}\\)`));
    expect(result.out).toMatch(
      new RegExp(
        `^fail {4}retained-resources {2}table ${STACK}-orders exists outside .* -> to do: either delete it`,
        'm',
      ),
    );
    expect(result.out).toMatch(/^pass {4}concurrency/m);
    expect(result.err).toContain('error: preflight failed: retained-resources');
  });

  it('when --cdk-out holds the stage, the template is the stage model (its functions and bootstrap requirement)', async () => {
    // Prepare
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-preflight-'));
    fs.writeFileSync(
      path.join(dir, 'manifest.json'),
      JSON.stringify({
        artifacts: {
          [`${STACK}.assets`]: {
            type: 'cdk:asset-manifest',
            properties: { requiresBootstrapStackVersion: 30 },
          },
          [STACK]: {
            type: 'aws:cloudformation:stack',
            properties: { templateFile: `${STACK}.template.json`, requiresBootstrapStackVersion: 6 },
            dependencies: [`${STACK}.assets`],
          },
        },
      }),
    );
    fs.writeFileSync(
      path.join(dir, `${STACK}.template.json`),
      JSON.stringify({
        Resources: { Api: { Type: 'AWS::Lambda::Function', Properties: { FunctionName: `${STACK}-api` } } },
      }),
    );

    try {
      // Act
      const result = await runCaptured(['preflight', '--cdk-out', dir, '--json']);

      // Assess: the asset manifest's 30 is the highest requirement; the account has 21.
      expect(result.code).toBe(1);
      const checks = JSON.parse(result.out) as PreflightCheck[];
      expect(checks.find((c) => c.id === 'bootstrap')?.message).toMatch(
        /needs bootstrap version 30 .*is version 21/,
      );
      expect(checks.find((c) => c.id === 'concurrency')?.message).toMatch(/can run 1 concurrent executions/);
      expect(result.err).toContain(path.join(dir, `${STACK}.template.json`));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('when --cdk-out has no manifest or --shards is not a count, it is a usage error (exit 2)', async () => {
    expect(
      (await runCaptured(['preflight', '--cdk-out', path.join(os.tmpdir(), 'no-such-cdk-out')])).code,
    ).toBe(2);
    const shards = await runCaptured(['preflight', '--shards', '0']);
    expect(shards.code).toBe(2);
    expect(shards.err).toContain('--shards: must be a whole number of at least 1');
  });

  it('when the stack is gone and no declaration is given, it says how to give one (exit 2)', async () => {
    // Prepare
    delete process.env.TENANG_PIPELINE;

    try {
      // Act
      const result = await runCaptured(['preflight']);

      // Assess
      expect(result.code).toBe(2);
      expect(result.err).toMatch(
        /nothing says what stage "unit" deploys: .*--cdk-out <dir>.*TENANG_PIPELINE/,
      );
    } finally {
      process.env.TENANG_PIPELINE = savedEnv.TENANG_PIPELINE;
    }
  });

  it('when the credentials have expired, it exits 3 with the credentials message', async () => {
    // Prepare
    lambda.on(GetAccountSettingsCommand).rejects(
      new LambdaServiceException({
        name: 'ExpiredTokenException',
        $fault: 'client',
        $metadata: { httpStatusCode: 403 },
        message: 'The security token included in the request is expired',
      }),
    );

    // Act
    const result = await runCaptured(['preflight']);

    // Assess
    expect(result.code).toBe(3);
    expect(result.err).toMatch(/the AWS credentials have expired/);
  });

  it('when asked for help, it shows the statuses, the exit codes and examples', async () => {
    // Act
    const result = await runCaptured(['preflight', '--help']);

    // Assess
    expect(result.code).toBe(0);
    expect(result.out).toMatch(/Statuses: pass, warn \(exit 0\), fail \(exit 1\)/);
    expect(result.out).toContain('$ tenang preflight --cdk-out cdk.out --json');
  });
});
