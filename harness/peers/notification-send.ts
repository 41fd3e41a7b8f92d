/**
 * notification.send's by-the-book peer as a deployed handler module (bench/bundles.ts bundles it
 * with NodejsFunction's defaults): clients, tools and the idempotent send built at module scope;
 * the degrade flag read with getParameter, cached as long as the consumer caches it.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { getParameter } from '@aws-lambda-powertools/parameters/ssm';
import { HttpMessagingProvider } from '../../examples/reference/domain/messaging-provider';
import { DEGRADE_FLAG_MAX_AGE_SECONDS } from '../../lib/adapters/aws/ssm-degrade-flag';
import { readDegradeFlag } from '../../lib/core/flags';
import { createBaselineNotificationHandler, peerEnv } from '../powertools-baseline';

const degradeFlag = peerEnv('DEGRADE_FLAG');

/** The notification queue's handler. */
export const handler = createBaselineNotificationHandler({
  dynamo: new DynamoDBClient({}),
  idempotencyTable: peerEnv('IDEMPOTENCY_TABLE'),
  provider: new HttpMessagingProvider({
    baseUrl: peerEnv('MESSAGING_PROVIDER_URL'),
    // The consumer's per-call timeout (MESSAGING_LIMITS; its job module is not imported, as its
    // module scope builds tenang's handler).
    timeoutMs: 2_000,
  }),
  logger: new Logger(),
  metrics: new Metrics(),
  isDegraded: async () =>
    readDegradeFlag(await getParameter(degradeFlag, { maxAge: DEGRADE_FLAG_MAX_AGE_SECONDS })).degraded,
});
