/** Secure defaults shared by every construct, in one place (as AWS Solutions Constructs do). */
import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as sqs from 'aws-cdk-lib/aws-sqs';

/** Queue defaults: encrypted at rest with SQS-managed keys, TLS-only access. */
export const QUEUE_DEFAULTS = {
  encryption: sqs.QueueEncryption.SQS_MANAGED,
  enforceSSL: true,
} as const satisfies Partial<sqs.QueueProps>;

/** Table defaults: on-demand, encrypted, point-in-time recovery, kept on stack deletion. */
export const TABLE_DEFAULTS = {
  billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
  encryption: dynamodb.TableEncryption.AWS_MANAGED,
  pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
  removalPolicy: RemovalPolicy.RETAIN,
} as const satisfies Partial<dynamodb.TableProps>;
