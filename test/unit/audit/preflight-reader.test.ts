/**
 * What the preflight reads from the account (preflight-reader.ts), with aws-sdk-client-mock:
 * each answer becomes the fact the checks judge, an answer the endpoint will not give becomes a
 * reason, and any other error (credentials) is thrown to the CLI's funnel.
 */
import {
  CloudFormationClient,
  CloudFormationServiceException,
  DescribeStacksCommand,
  ListStackResourcesCommand,
} from '@aws-sdk/client-cloudformation';
import { CloudWatchLogsClient, DescribeLogGroupsCommand } from '@aws-sdk/client-cloudwatch-logs';
import { DescribeTableCommand, DynamoDBClient, ResourceNotFoundException } from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { GetAccountSettingsCommand, LambdaClient, LambdaServiceException } from '@aws-sdk/client-lambda';
import { GetParameterCommand, ParameterNotFound, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import { loadPipelineConfig } from '../../../lib/config';
import { referencePipeline } from '../../../examples/reference/pipeline';
import { evaluatePreflight, stageFromConfig } from '../../../lib/audit/preflight';
import {
  readPreflightFacts,
  stackPresence,
  unansweredReason,
  type PreflightClients,
} from '../../../lib/audit/preflight-reader';

const STACK = 'tenang-unit';
const REGION = 'eu-west-1';
const stage = stageFromConfig(loadPipelineConfig(referencePipeline('unit', REGION)), STACK);
const ORDERS_STREAM =
  'arn:aws:dynamodb:eu-west-1:123456789012:table/tenang-unit-orders/stream/2026-01-01T00:00:00.000';

const cfn = mockClient(CloudFormationClient);
const lambda = mockClient(LambdaClient);
const dynamodb = mockClient(DynamoDBClient);
const streams = mockClient(DynamoDBStreamsClient);
const logs = mockClient(CloudWatchLogsClient);
const ssm = mockClient(SSMClient);

const clients = (): PreflightClients => ({
  cloudformation: new CloudFormationClient({ region: REGION }),
  lambda: new LambdaClient({ region: REGION }),
  dynamodb: new DynamoDBClient({ region: REGION }),
  streams: new DynamoDBStreamsClient({ region: REGION }),
  logs: new CloudWatchLogsClient({ region: REGION }),
  ssm: new SSMClient({ region: REGION }),
});

const missingStack = (name: string): CloudFormationServiceException =>
  new CloudFormationServiceException({
    name: 'ValidationError',
    $fault: 'client',
    $metadata: { httpStatusCode: 400 },
    message: `Stack with id ${name} does not exist`,
  });

const parameterNotFound = (): ParameterNotFound =>
  new ParameterNotFound({ $metadata: { httpStatusCode: 400 }, message: 'not found' });

/** An account where nothing of the stage is left, bootstrapped at 21, offering every service. */
function cleanAccount(): void {
  for (const m of [cfn, lambda, dynamodb, streams, logs, ssm]) m.reset();
  cfn.on(DescribeStacksCommand).rejects(missingStack(STACK));
  lambda.on(GetAccountSettingsCommand).resolves({
    AccountLimit: { ConcurrentExecutions: 1000, UnreservedConcurrentExecutions: 950 },
  });
  dynamodb.on(DescribeTableCommand).rejects(
    new ResourceNotFoundException({
      $metadata: { httpStatusCode: 400 },
      message: 'Requested resource not found',
    }),
  );
  logs.on(DescribeLogGroupsCommand).resolves({ logGroups: [] });
  ssm.on(GetParameterCommand).resolves({ Parameter: { Value: 'x' } });
  ssm
    .on(GetParameterCommand, { Name: '/cdk-bootstrap/hnb659fds/version' })
    .resolves({ Parameter: { Value: '21' } });
}

const read = () => readPreflightFacts(clients(), stage, { region: REGION, assumedShards: 1 });

describe('Module: preflight-reader', () => {
  beforeEach(cleanAccount);

  describe('Function: readPreflightFacts', () => {
    it('when the account is clean, every check passes but the features, which are never passed', async () => {
      // Act
      const facts = await read();

      // Assess
      expect(facts.concurrency).toEqual({ ok: true, value: { limit: 1000, unreserved: 950 } });
      expect(facts.stack).toEqual({ exists: false });
      expect(evaluatePreflight(facts).map((c) => [c.id, c.status])).toEqual([
        ['concurrency', 'pass'],
        ['retained-resources', 'pass'],
        ['bootstrap', 'pass'],
        ['region-services', 'pass'],
        ['region-features', 'skipped'],
      ]);
      // Each service is asked for by its public parameter in the stage's region.
      expect(ssm.commandCalls(GetParameterCommand).map((c) => c.args[0].input.Name)).toContain(
        '/aws/service/global-infrastructure/regions/eu-west-1/services/elasticache',
      );
    });

    it('when a table and a log group of the stage are left and no stack exists, the retained check fails naming both', async () => {
      // Prepare
      dynamodb
        .on(DescribeTableCommand, { TableName: 'tenang-unit-dedup' })
        .resolves({ Table: { TableName: 'tenang-unit-dedup' } });
      // A prefix listing also returns longer names: only the exact one counts.
      logs
        .on(DescribeLogGroupsCommand, { logGroupNamePrefix: '/aws/lambda/tenang-unit-outbox-relay' })
        .resolves({
          logGroups: [
            { logGroupName: '/aws/lambda/tenang-unit-outbox-relay' },
            { logGroupName: '/aws/lambda/tenang-unit-outbox-relay-old' },
          ],
        });
      logs
        .on(DescribeLogGroupsCommand, { logGroupNamePrefix: '/aws/lambda/tenang-unit-cache-invalidator' })
        .resolves({
          logGroups: [{ logGroupName: '/aws/lambda/tenang-unit-cache-invalidator-old' }],
        });

      // Act
      const retained = evaluatePreflight(await read()).find((c) => c.id === 'retained-resources');

      // Assess
      expect(retained).toMatchObject({
        status: 'fail',
        resources: ['table tenang-unit-dedup', 'log group /aws/lambda/tenang-unit-outbox-relay'],
      });
    });

    it("when the stage's stream exists, its open shards are counted (every page of DescribeStream)", async () => {
      // Prepare
      dynamodb
        .on(DescribeTableCommand, { TableName: 'tenang-unit-orders' })
        .resolves({ Table: { TableName: 'tenang-unit-orders', LatestStreamArn: ORDERS_STREAM } });
      streams
        .on(DescribeStreamCommand, { StreamArn: ORDERS_STREAM, ExclusiveStartShardId: undefined })
        .resolves({
          StreamDescription: {
            Shards: [
              {
                ShardId: 's1',
                SequenceNumberRange: { StartingSequenceNumber: '1', EndingSequenceNumber: '9' },
              },
              { ShardId: 's2', SequenceNumberRange: { StartingSequenceNumber: '10' } },
            ],
            LastEvaluatedShardId: 's2',
          },
        })
        .on(DescribeStreamCommand, { StreamArn: ORDERS_STREAM, ExclusiveStartShardId: 's2' })
        .resolves({
          StreamDescription: {
            Shards: [{ ShardId: 's3', SequenceNumberRange: { StartingSequenceNumber: '11' } }],
          },
        });

      // Act
      const facts = await read();

      // Assess: two open shards (s2, s3); the closed one is not read by Lambda any more.
      expect(facts.streamShards).toEqual(new Map([['tenang-unit-orders', 2]]));
    });

    it('when the stack exists, its physical ids are what is inside it', async () => {
      // Prepare
      cfn.on(DescribeStacksCommand).resolves({
        Stacks: [{ StackName: STACK, StackStatus: 'UPDATE_COMPLETE', CreationTime: new Date() }],
      });
      cfn.on(ListStackResourcesCommand).resolves({
        StackResourceSummaries: [
          {
            LogicalResourceId: 'Dedup',
            ResourceType: 'AWS::DynamoDB::Table',
            PhysicalResourceId: 'tenang-unit-dedup',
            ResourceStatus: 'CREATE_COMPLETE',
            LastUpdatedTimestamp: new Date(),
          },
        ],
      });

      // Act
      const presence = await stackPresence(clients().cloudformation, STACK);

      // Assess
      expect(presence).toEqual({
        exists: true,
        status: 'UPDATE_COMPLETE',
        physicalIds: new Set(['tenang-unit-dedup']),
      });
    });

    it('when neither the bootstrap parameter nor the CDKToolkit stack exists, the bootstrap check fails', async () => {
      // Prepare
      ssm.on(GetParameterCommand, { Name: '/cdk-bootstrap/hnb659fds/version' }).rejects(parameterNotFound());
      cfn.on(DescribeStacksCommand, { StackName: 'CDKToolkit' }).rejects(missingStack('CDKToolkit'));

      // Act
      const facts = await read();

      // Assess
      expect(facts.bootstrap).toEqual({
        ok: true,
        value: {
          version: undefined,
          from: 'neither SSM parameter /cdk-bootstrap/hnb659fds/version nor stack CDKToolkit exists',
        },
      });
      expect(evaluatePreflight(facts).find((c) => c.id === 'bootstrap')?.status).toBe('fail');
    });

    it('when only the CDKToolkit stack tells the version and it is old, the bootstrap check fails saying so', async () => {
      // Prepare
      ssm.on(GetParameterCommand, { Name: '/cdk-bootstrap/hnb659fds/version' }).rejects(parameterNotFound());
      cfn.on(DescribeStacksCommand, { StackName: 'CDKToolkit' }).resolves({
        Stacks: [
          {
            StackName: 'CDKToolkit',
            StackStatus: 'CREATE_COMPLETE',
            CreationTime: new Date(),
            Outputs: [{ OutputKey: 'BootstrapVersion', OutputValue: '4' }],
          },
        ],
      });

      // Act
      const bootstrap = evaluatePreflight(await read()).find((c) => c.id === 'bootstrap');

      // Assess
      expect(bootstrap?.status).toBe('fail');
      expect(bootstrap?.message).toMatch(
        /is version 4 \(no SSM parameter .*stack CDKToolkit has BootstrapVersion 4\)/,
      );
    });

    it('when the region does not serve the public service parameters (even Lambda is missing), the check is skipped, not failed', async () => {
      // Prepare
      ssm.on(GetParameterCommand).rejects(parameterNotFound());
      ssm
        .on(GetParameterCommand, { Name: '/cdk-bootstrap/hnb659fds/version' })
        .resolves({ Parameter: { Value: '21' } });

      // Act
      const region = evaluatePreflight(await read()).find((c) => c.id === 'region-services');

      // Assess
      expect(region?.status).toBe('skipped');
      expect(region?.message).toMatch(/does not serve \/aws\/service\/global-infrastructure/);
    });

    it('when GetAccountSettings is denied, the concurrency check is skipped with the reason', async () => {
      // Prepare
      lambda.on(GetAccountSettingsCommand).rejects(
        new LambdaServiceException({
          name: 'AccessDeniedException',
          $fault: 'client',
          $metadata: { httpStatusCode: 403 },
          message: 'User is not authorized to perform: lambda:GetAccountSettings',
        }),
      );

      // Act
      const facts = await read();

      // Assess
      expect(facts.concurrency).toEqual({
        ok: false,
        reason:
          'GetAccountSettings: not allowed (AccessDeniedException: User is not authorized to perform: lambda:GetAccountSettings)',
      });
      expect(evaluatePreflight(facts)[0]?.status).toBe('skipped');
    });

    it('when the token has expired, the error is thrown (the CLI answers it with exit 3), not turned into a skip', async () => {
      // Prepare
      lambda.on(GetAccountSettingsCommand).rejects(
        new LambdaServiceException({
          name: 'ExpiredTokenException',
          $fault: 'client',
          $metadata: { httpStatusCode: 403 },
          message: 'The security token included in the request is expired',
        }),
      );

      // Act / Assess
      await expect(read()).rejects.toMatchObject({ name: 'ExpiredTokenException' });
    });
  });

  describe('Function: unansweredReason', () => {
    it("when an endpoint answers with a page the SDK cannot parse (moto's 404 for GetAccountSettings), it says the endpoint does not implement it", () => {
      // Prepare
      const error = new SyntaxError(
        'Unexpected token \'<\', "<!doctype "... is not valid JSON\n  Deserialization error: …',
      );

      // Act / Assess
      expect(unansweredReason(error)).toMatch(
        /^the endpoint does not implement it \(SyntaxError: Unexpected token/,
      );
      expect(unansweredReason(new Error('socket hang up'))).toBeUndefined();
    });
  });
});
