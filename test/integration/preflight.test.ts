/**
 * `tenang preflight` through the CLI entry point against moto (P5), no platform needed: a stage
 * of this run only is "destroyed" (no stack), and what a destroy leaves behind is created by
 * hand under its fixed names. The stage comes from the declaration (TENANG_PIPELINE, as the
 * tests' setup gives it).
 *
 * moto 5.2.1 does not implement Lambda GetAccountSettings (it answers an HTML 404): against moto
 * alone the concurrency check is reported skipped with that reason. The local Lambda control
 * plane answers it (lib/local/lambda-control.ts); one started in front of this moto with a new
 * account's quota of 10 fails the check. Its decisions are unit-tested
 * (test/unit/audit/preflight.test.ts).
 */
import { randomBytes } from 'node:crypto';
import {
  CloudWatchLogsClient,
  CreateLogGroupCommand,
  DeleteLogGroupCommand,
} from '@aws-sdk/client-cloudwatch-logs';
import { CreateTableCommand, DeleteTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteParameterCommand, PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { runCaptured } from '../../bin/tenang';
import { headroomFor, type PreflightCheck } from '../../lib/audit/preflight';
import { startLambdaControl } from '../../lib/local/lambda-control';
import { dynamoClient } from '../helpers/aws';

jest.setTimeout(60_000);

const STAGE = `pf${randomBytes(4).toString('hex')}`;
const STACK = `tenang-${STAGE}`;
const ORDERS = `${STACK}-orders`;
const RELAY_LOGS = `/aws/lambda/${STACK}-outbox-relay`;
const BOOTSTRAP_PARAMETER = '/cdk-bootstrap/hnb659fds/version';

let dynamo: DynamoDBClient;
let logs: CloudWatchLogsClient;
let ssm: SSMClient;
const savedEnv = { ...process.env };

/** `tenang preflight --json` for the stage, by check id. */
async function preflight(): Promise<{ code: number; err: string; checks: Record<string, PreflightCheck> }> {
  const { code, out, err } = await runCaptured(['--stage', STAGE, 'preflight', '--json']);
  const checks = JSON.parse(out) as PreflightCheck[];
  return { code, err, checks: Object.fromEntries(checks.map((c) => [c.id, c])) };
}

describe('CLI: tenang preflight (moto)', () => {
  beforeAll(() => {
    process.env.TENANG_ACTOR = 'jest';
    dynamo = dynamoClient();
    const config = { region: process.env.AWS_REGION, endpoint: process.env.AWS_ENDPOINT_URL };
    logs = new CloudWatchLogsClient(config);
    ssm = new SSMClient(config);
  });

  afterAll(() => {
    for (const c of [dynamo, logs, ssm]) c?.destroy();
    process.env = savedEnv;
  });

  it("when a destroyed stage's orders table and a log group are left, preflight fails naming them with what to do; unbootstrapped fails too", async () => {
    // Prepare: what a destroy keeps (RetainExceptOnCreate), with the stack gone.
    await dynamo.send(
      new CreateTableCommand({
        TableName: ORDERS,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: [{ AttributeName: 'orderId', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'orderId', KeyType: 'HASH' }],
      }),
    );
    await logs.send(new CreateLogGroupCommand({ logGroupName: RELAY_LOGS }));

    try {
      // Act
      const result = await preflight();

      // Assess
      expect(result.code).toBe(1);
      expect(result.checks['retained-resources']).toMatchObject({
        status: 'fail',
        resources: [`table ${ORDERS}`, `log group ${RELAY_LOGS}`],
      });
      expect(result.checks['retained-resources']?.message).toContain(`stack ${STACK} does not exist`);
      expect(result.checks['retained-resources']?.remedy).toContain(
        `aws dynamodb delete-table --table-name ${ORDERS}`,
      );
      expect(result.checks['retained-resources']?.remedy).toContain(
        `aws logs delete-log-group --log-group-name ${RELAY_LOGS}`,
      );
      expect(result.checks['retained-resources']?.remedy).toContain(`npx cdk import ${STACK}`);
      // moto has neither the bootstrap parameter nor a CDKToolkit stack.
      expect(result.checks.bootstrap).toMatchObject({ status: 'fail' });
      expect(result.checks.bootstrap?.remedy).toMatch(/npx cdk bootstrap aws:\/\/ACCOUNT-ID\//);
      expect(result.checks.concurrency?.status).toBe('skipped');
      expect(result.checks.concurrency?.message).toMatch(
        /GetAccountSettings: the endpoint does not implement it/,
      );
      // moto serves AWS's public global-infrastructure parameters for the region.
      expect(result.checks['region-services']?.status).toBe('pass');
      expect(result.err).toContain('error: preflight failed: retained-resources, bootstrap');
    } finally {
      await dynamo.send(new DeleteTableCommand({ TableName: ORDERS }));
      await logs.send(new DeleteLogGroupCommand({ logGroupName: RELAY_LOGS }));
    }
  });

  it('when nothing is left and the account is bootstrapped, preflight passes (exit 0)', async () => {
    // Prepare
    await ssm.send(
      new PutParameterCommand({ Name: BOOTSTRAP_PARAMETER, Value: '21', Type: 'String', Overwrite: true }),
    );

    try {
      // Act
      const result = await preflight();

      // Assess
      expect(result.code).toBe(0);
      expect(result.checks['retained-resources']?.status).toBe('pass');
      expect(result.checks.bootstrap).toMatchObject({ status: 'pass', resources: [BOOTSTRAP_PARAMETER] });
      expect(result.checks.bootstrap?.message).toMatch(/is version 21/);
    } finally {
      await ssm.send(new DeleteParameterCommand({ Name: BOOTSTRAP_PARAMETER }));
    }
  });

  it("when the account's concurrency quota is a new account's 10 (the local control plane), preflight fails the concurrency check with the Service Quotas request and exits 1", async () => {
    // Prepare: bootstrapped and nothing left, so concurrency is the only failure.
    await ssm.send(
      new PutParameterCommand({ Name: BOOTSTRAP_PARAMETER, Value: '21', Type: 'String', Overwrite: true }),
    );
    const control = await startLambdaControl({
      upstream: process.env.AWS_ENDPOINT_URL ?? '',
      accountConcurrency: 10,
    });
    const lambdaEndpoint = process.env.AWS_ENDPOINT_URL_LAMBDA;
    process.env.AWS_ENDPOINT_URL_LAMBDA = control.url;

    try {
      // Act
      const result = await preflight();

      // Assess
      expect(result.code).toBe(1);
      const concurrency = result.checks.concurrency;
      expect(concurrency?.status).toBe('fail');
      const demand = Number(
        /the stage can run (\d+) concurrent executions/.exec(concurrency?.message ?? '')?.[1],
      );
      expect(demand).toBeGreaterThan(10);
      // No function in this moto reserves concurrency, so all 10 are unreserved.
      expect(concurrency?.message).toContain('the account has 10 unreserved of 10 (GetAccountSettings)');
      const desired = demand + headroomFor(demand);
      expect(concurrency?.remedy).toMatch(
        new RegExp(`^ask for a "Concurrent executions" quota of at least ${desired} in Service Quotas`),
      );
      expect(concurrency?.remedy).toContain(
        `request-service-quota-increase --service-code lambda --quota-code L-B99A9384 --desired-value ${desired} --region ${process.env.AWS_REGION ?? ''}`,
      );
      expect(result.checks.bootstrap?.status).toBe('pass');
      expect(result.err).toContain('error: preflight failed: concurrency');
    } finally {
      if (lambdaEndpoint === undefined) delete process.env.AWS_ENDPOINT_URL_LAMBDA;
      else process.env.AWS_ENDPOINT_URL_LAMBDA = lambdaEndpoint;
      await control.close();
      await ssm.send(new DeleteParameterCommand({ Name: BOOTSTRAP_PARAMETER }));
    }
  });
});
