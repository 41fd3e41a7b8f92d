/**
 * The single switch between a deployment to AWS and one into the local emulator (moto).
 * Every difference between the two is a named field here and listed in the README.
 */
import type { Construct } from 'constructs';

/** Where the synthesized app will be deployed. */
export type DeployTarget = 'aws' | 'emulator';

/** CDK context key that selects the target: `cdk deploy -c tenang:target=emulator`. */
export const TARGET_CONTEXT_KEY = 'tenang:target';
/** CDK context key that selects the stage. */
export const STAGE_CONTEXT_KEY = 'tenang:stage';
export { ALARM_EMAIL_CONTEXT_KEY } from '../config/alarm-email';

/** What changes when the target is the emulator. */
export interface TargetTraits {
  readonly target: DeployTarget;
  /**
   * Event source mappings are created disabled: an enabled mapping in moto consumes the queue
   * itself; the local platform plays the Lambda service and polls instead.
   */
  readonly eventSourcesEnabled: boolean;
  /**
   * ElastiCache is created only on AWS: moto does not emulate it (its CloudFormation skips the
   * resource). Locally the functions reach a real Redis through REDIS_URL, an endpoint variable
   * like AWS_ENDPOINT_URL.
   */
  readonly managedCache: boolean;
  /**
   * The BootstrapVersion parameter and rule are left out on the emulator: moto's UpdateStack
   * fails on the parameter (KeyError 'BootstrapVersion'), so a re-deploy could never update.
   */
  readonly bootstrapVersionRule: boolean;
  /**
   * On the emulator, a DynamoDB stream mapping is attached to its on-failure queue instead of
   * the stream (the real stream ARN goes into the resource's `tenang:stream-arn` metadata for
   * the local platform): moto invokes every function mapped to a table's stream on each write,
   * Enabled or not, and then discards the stream's records, so no local poller could read them.
   */
  readonly decoupleStreamMappings: boolean;
}

/** Reads the target from CDK context; anything but the two known values is an error. */
export function targetTraits(scope: Construct): TargetTraits {
  const raw: unknown = scope.node.tryGetContext(TARGET_CONTEXT_KEY) ?? 'aws';
  if (raw !== 'aws' && raw !== 'emulator') {
    throw new Error(
      `CDK context ${TARGET_CONTEXT_KEY} must be "aws" or "emulator", got ${JSON.stringify(raw)}`,
    );
  }
  return {
    target: raw,
    eventSourcesEnabled: raw === 'aws',
    managedCache: raw === 'aws',
    bootstrapVersionRule: raw === 'aws',
    decoupleStreamMappings: raw === 'emulator',
  };
}
