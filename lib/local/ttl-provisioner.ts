/**
 * Turns on the template's DynamoDB time to live in the emulator with UpdateTimeToLive: moto's
 * CloudFormation creates the tables but ignores their TimeToLiveSpecification, so without this
 * the idempotency, lock and dedup tables would look TTL-less to `tenang audit --live` locally.
 */
import { UpdateTimeToLiveCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { ResolveContext } from './template';

/** Enables TTL on every table whose template enables it; returns `table.attribute` per table. */
export async function provisionTimeToLive(dynamodb: DynamoDBClient, ctx: ResolveContext): Promise<string[]> {
  const enabled: string[] = [];
  for (const [logicalId, resource] of Object.entries(ctx.template.Resources)) {
    if (resource.Type !== 'AWS::DynamoDB::Table') continue;
    const spec = (resource.Properties ?? {}).TimeToLiveSpecification as
      { AttributeName?: string; Enabled?: boolean } | undefined;
    if (spec?.Enabled !== true || spec.AttributeName === undefined) continue;
    const table = ctx.resources.get(logicalId)?.physicalId;
    if (table === undefined) throw new Error(`table ${logicalId} of the template is not deployed`);
    await dynamodb.send(
      new UpdateTimeToLiveCommand({
        TableName: table,
        TimeToLiveSpecification: { AttributeName: spec.AttributeName, Enabled: true },
      }),
    );
    enabled.push(`${table}.${spec.AttributeName}`);
  }
  return enabled;
}
