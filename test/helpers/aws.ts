/** Clients and names for integration tests; the endpoint always comes from the environment. */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import Redis from 'ioredis';

// Shared with the benchmarks, which import nothing from test/.
export { uniqueName } from '../../lib/local/names';

/** SQS client for the emulator named by AWS_ENDPOINT_URL. */
export function sqsClient(): SQSClient {
  return new SQSClient(awsClientConfig());
}

/** DynamoDB client for the emulator named by AWS_ENDPOINT_URL. */
export function dynamoClient(): DynamoDBClient {
  return new DynamoDBClient(awsClientConfig());
}

/** Connected ioredis client for REDIS_URL, with short timeouts so a missing Redis fails the test fast; quit it in afterAll. */
export function redisClient(): Redis {
  return new Redis(requireEnv('REDIS_URL'), {
    lazyConnect: false,
    connectTimeout: 2000,
    commandTimeout: 2000,
    maxRetriesPerRequest: 1,
  });
}

function awsClientConfig(): { endpoint: string; region: string } {
  // Explicit endpoint: without one the SDK would quietly talk to real AWS.
  return { endpoint: requireEnv('AWS_ENDPOINT_URL'), region: requireEnv('AWS_REGION') };
}

function requireEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') {
    throw new Error(
      `${name} is not set: run integration tests through jest's integration project (its globalSetup ` +
        `starts the local environment) or 'tsx bin/local.ts run -- jest --selectProjects integration'.`,
    );
  }
  return value;
}
