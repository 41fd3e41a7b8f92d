/**
 * inventory.reserve's by-the-book peer as a deployed handler module (bench/bundles.ts bundles it
 * with NodejsFunction's defaults): clients, tools and the idempotent reservation built at module
 * scope; the degrade flag read with getParameter, cached as long as the consumer caches it.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { getParameter } from '@aws-lambda-powertools/parameters/ssm';
import { DEGRADE_FLAG_MAX_AGE_SECONDS } from '../../lib/adapters/aws/ssm-degrade-flag';
import { readDegradeFlag } from '../../lib/core/flags';
import { createBaselineInventoryHandler, peerEnv } from '../powertools-baseline';

const degradeFlag = peerEnv('DEGRADE_FLAG');

/** The reservation queue's handler. */
export const handler = createBaselineInventoryHandler({
  dynamo: new DynamoDBClient({}),
  inventoryTable: peerEnv('INVENTORY_TABLE'),
  idempotencyTable: peerEnv('IDEMPOTENCY_TABLE'),
  logger: new Logger(),
  metrics: new Metrics(),
  isDegraded: async () =>
    readDegradeFlag(await getParameter(degradeFlag, { maxAge: DEGRADE_FLAG_MAX_AGE_SECONDS })).degraded,
});
