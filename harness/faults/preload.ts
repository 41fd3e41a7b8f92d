/**
 * Preloaded into a local function instance by the chaos harness (PlatformOptions.functionExecArgv,
 * faultPreloadArgv, bundled by esbuild): registers the SDK fault injection on every DynamoDB
 * client the function builds (lib/adapters/aws/clients.ts DYNAMODB_CLIENT_HOOKS), with the faults
 * TENANG_FAULTS names for this instance. Nothing that ships loads it: a deployed function and a
 * team's local platform build their clients without it.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DYNAMODB_CLIENT_HOOKS } from '../../lib/adapters/aws/clients';
import { withSdkFaults } from './fault-injection';

const registry = globalThis as { [DYNAMODB_CLIENT_HOOKS]?: ((client: DynamoDBClient) => void)[] };
registry[DYNAMODB_CLIENT_HOOKS] = [
  ...(registry[DYNAMODB_CLIENT_HOOKS] ?? []),
  (client) => {
    withSdkFaults(client);
  },
];
