/**
 * AWS SDK clients as every function builds them: explicit timeouts shorter than any function's
 * (D4), and SQS addressed through the configured endpoint rather than each queue URL's host.
 * Queue URLs deployed by CloudFormation name the regional host; on AWS that is the configured
 * endpoint anyway, and locally (AWS_ENDPOINT_URL) it must not be contacted.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';

/**
 * Connection and request timeouts of every SDK client. Without throwOnRequestTimeout the SDK's
 * handler only warns when a request exceeds requestTimeout and keeps waiting, so a hung request
 * holds the invocation until the function timeout (seen in the chaos suite's notification
 * consumer); with it the request fails and the job runner retries it.
 */
export const SDK_CLIENT_CONFIG = {
  requestHandler: { connectionTimeout: 1_000, requestTimeout: 3_000, throwOnRequestTimeout: true },
} as const;

/** An SQS client that sends every request to the configured endpoint. */
export function newSqsClient(): SQSClient {
  return new SQSClient({ ...SDK_CLIENT_CONFIG, useQueueUrlAsEndpoint: false });
}

/**
 * The global under which a module preloaded into a function's process may register what is
 * applied to every DynamoDB client the function builds (this repository's chaos harness adds its
 * SDK fault injection so, on the local platform only). Nothing registers one in a deployment or
 * on a team's local platform: the list is then absent and clients are built as they are.
 */
export const DYNAMODB_CLIENT_HOOKS = Symbol.for('tenang.dynamodb-client-hooks');

type ClientHook = (client: DynamoDBClient) => void;

/** A DynamoDB client with the standard timeouts, passed to the hooks registered, if any. */
export function newDynamoDbClient(): DynamoDBClient {
  const client = new DynamoDBClient(SDK_CLIENT_CONFIG);
  const hooks = (globalThis as { [DYNAMODB_CLIENT_HOOKS]?: readonly ClientHook[] })[DYNAMODB_CLIENT_HOOKS];
  for (const hook of hooks ?? []) hook(client);
  return client;
}

/** An SSM client with the standard timeouts. */
export function newSsmClient(): SSMClient {
  return new SSMClient(SDK_CLIENT_CONFIG);
}

/**
 * The variable @aws-sdk/core checks before it warns, once per process on the first client
 * created, that SDK versions published after January 2027 need Node.js 22
 * (emitWarningIfUnsupportedVersion: the warning is skipped when it is exactly "true").
 */
export const SDK_NODE_VERSION_WARNING_VARIABLE = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';

/**
 * Turns the SDK's Node.js version notice off for this process, unless the variable is already
 * set (a user who sets it to anything else keeps the notice). Call before the first client is
 * created: the SDK reads the variable then, and never again. The SDK versions are pinned in the
 * lockfile, so the notice tells an operator nothing on each command.
 */
export function silenceSdkNodeVersionWarning(env: NodeJS.ProcessEnv = process.env): void {
  env[SDK_NODE_VERSION_WARNING_VARIABLE] ??= 'true';
}
