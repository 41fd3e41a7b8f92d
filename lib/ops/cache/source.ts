/**
 * The source of truth of the cached entities for the CLI's direct path: each declared entity's
 * table (stage.cache.entities), found in the stage's stack.
 */
import { DynamoDbEntitySource } from '../../adapters/aws/entity-source';
import { cachedEntitySources } from '../../config';
import { noEntitySource } from '../../core/cache-admin';
import type { CliContext } from '../cli-context';
import { discoverResources, tableName } from '../pipeline-resources';

/**
 * Finds the cached entities' tables in the stage's stack and reads them with the CLI's credentials.
 * @throws CacheAdminRefusedError when the declaration names no cached entity (answered as the function does)
 */
export async function discoverEntitySource(ctx: CliContext): Promise<DynamoDbEntitySource> {
  const sources = cachedEntitySources(ctx.config);
  if (sources.length === 0) throw noEntitySource(ctx.stage);
  const resources = await discoverResources(ctx);
  return new DynamoDbEntitySource(
    ctx.clients.dynamodb,
    sources.map(({ entity, table }) => ({ entity, tableName: tableName(ctx, resources, table.name) })),
  );
}
