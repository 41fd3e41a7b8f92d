/** The source of truth of the cached entities for the CLI's direct path: the stage's orders table, found in its stack. */
import { DynamoDbEntitySource, ENTITY_TABLE } from '../../adapters/aws/entity-source';
import type { CliContext } from '../cli-context';
import { discoverResources, tableName } from '../pipeline-resources';

/** Finds the stage's orders table in its stack and reads it with the CLI's credentials. */
export async function discoverEntitySource(ctx: CliContext): Promise<DynamoDbEntitySource> {
  const table = tableName(ctx, await discoverResources(ctx), ENTITY_TABLE);
  return new DynamoDbEntitySource(ctx.clients.dynamodb, table);
}
