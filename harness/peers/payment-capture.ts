/**
 * payment.capture's by-the-book peer as a deployed handler module (bench/bundles.ts bundles it
 * with NodejsFunction's defaults): clients, tools and the idempotent capture built at module
 * scope, as the SDK and Powertools guides advise; harness/powertools-baseline.ts holds the code.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { HttpPaymentProvider } from '../../examples/reference/domain/payment-provider';
import { createBaselinePaymentHandler, peerEnv } from '../powertools-baseline';

/** The payment queue's handler. */
export const handler = createBaselinePaymentHandler({
  dynamo: new DynamoDBClient({}),
  ordersTable: peerEnv('ORDERS_TABLE'),
  idempotencyTable: peerEnv('IDEMPOTENCY_TABLE'),
  // The consumer's provider timeout: a third of the function's 30 s, at most 10 s.
  provider: new HttpPaymentProvider({ baseUrl: peerEnv('PAYMENT_PROVIDER_URL'), timeoutMs: 10_000 }),
  logger: new Logger(),
  metrics: new Metrics(),
});
