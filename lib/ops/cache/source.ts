/**
 * The source of truth of the cached entities for the CLI's direct path: the declared table whose
 * stream invalidates the cache (cacheSourceTable), found in the stage's stack.
 */
import { DynamoDbEntitySource } from '../../adapters/aws/entity-source';
import { cacheSourceTable } from '../../config';
import { noEntitySource } from '../../core/cache-admin';
import type { CliContext } from '../cli-context';
import { discoverResources, tableName } from '../pipeline-resources';

/**
 * Finds the cached entities' table in the stage's stack and reads it with the CLI's credentials.
 * @throws CacheAdminRefusedError when no stream consumer uses the cache (answered as the function does)
 */
export async function discoverEntitySource(ctx: CliContext): Promise<DynamoDbEntitySource> {
  const source = cacheSourceTable(ctx.config);
  if (source === undefined) throw noEntitySource(ctx.stage);
  const table = tableName(ctx, await discoverResources(ctx), source.name);
  return new DynamoDbEntitySource(ctx.clients.dynamodb, table, source.partitionKey);
}
