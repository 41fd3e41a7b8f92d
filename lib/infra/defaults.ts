/** Secure defaults shared by every construct, in one place (as AWS Solutions Constructs do). */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { METRICS_NAMESPACE } from '../config/metrics';

/** Queue defaults: encrypted at rest with SQS-managed keys, TLS-only access. */
export const QUEUE_DEFAULTS = {
  encryption: sqs.QueueEncryption.SQS_MANAGED,
  enforceSSL: true,
} as const satisfies Partial<sqs.QueueProps>;

/**
 * What happens to a named resource that holds data (tables, log groups) when its stack lets go
 * of it: kept on update and delete, but deleted when the create that made it fails
 * (CloudFormation `DeletionPolicy: RetainExceptOnCreate`). With plain `Retain`, a failed first
 * deploy leaves the fixed-name table or log group behind and every retry stops on "already
 * exists" (the Tenang-F2-RetainOnCreate rule checks it).
 */
export const DATA_REMOVAL_POLICY = RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE;

/** Table defaults: on-demand, encrypted, point-in-time recovery, kept on stack deletion. */
export const TABLE_DEFAULTS = {
  billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
  encryption: dynamodb.TableEncryption.AWS_MANAGED,
  pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
  removalPolicy: DATA_REMOVAL_POLICY,
} as const satisfies Partial<dynamodb.TableProps>;

/** Lets CommonJS code inside an ESM bundle call require(). */
export const BUNDLE_BANNER =
  "import { createRequire as __tenangCreateRequire } from 'node:module'; const require = __tenangCreateRequire(import.meta.url);";

/** Function defaults: current LTS runtime on Graviton, active tracing, bundled locally by esbuild. */
export const FUNCTION_DEFAULTS = {
  runtime: lambda.Runtime.NODEJS_22_X,
  architecture: lambda.Architecture.ARM_64,
  tracing: lambda.Tracing.ACTIVE,
  bundling: {
    // No Docker on the build machines: esbuild from node_modules.
    forceDockerBundling: false,
    minify: true,
    // Error class names go into DLQ attributes and replay filters: minification must keep them.
    keepNames: true,
    sourceMap: true,
    sourcesContent: false,
    target: 'node22',
    // The SDK is bundled so local runs (Node 20) and AWS run the same pinned versions.
    externalModules: [],
    // ESM lets esbuild tree-shake the SDK and Powertools (their ESM builds): in bench/REPORT.md
    // the same handler loads markedly faster than as CommonJS.
    format: nodejs.OutputFormat.ESM,
    mainFields: ['module', 'main'],
    // A few dependencies still call require(); give the ESM bundle one.
    banner: BUNDLE_BANNER,
    // An app's job module imports `tenang/runtime`: from the installed package, bundle its
    // TypeScript sources (ESM, tree-shaken) rather than the compiled CommonJS.
    esbuildArgs: { '--conditions': 'tenang-source' },
  },
} as const satisfies Partial<nodejs.NodejsFunctionProps>;

/** @default one month of function logs. */
export const LOG_RETENTION = logs.RetentionDays.ONE_MONTH;

/** Powertools environment shared by every function. */
export function powertoolsEnvironment(serviceName: string): Record<string, string> {
  return {
    POWERTOOLS_SERVICE_NAME: serviceName,
    POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
    POWERTOOLS_LOG_LEVEL: 'INFO',
    POWERTOOLS_LOGGER_LOG_EVENT: 'false',
    POWERTOOLS_TRACER_CAPTURE_RESPONSE: 'false',
  };
}

/** Stream consumer defaults: the failure settings of AWS Solutions Constructs' stream patterns. */
export const STREAM_DEFAULTS = {
  bisectBatchOnError: true,
  reportBatchItemFailures: true,
  startingPosition: lambda.StartingPosition.TRIM_HORIZON,
  maxBatchingWindow: Duration.seconds(1),
} as const;
