/**
 * Pause and degrade flags as SSM parameters, and the reconciler that makes each event source
 * mapping's Enabled follow its pause flag (B3, B4, X4). The flag is the desired state; the
 * mapping is the actual state.
 */
import { grantParameterRead } from './grants';
import { Duration, Stack, Validations } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as ssm from 'aws-cdk-lib/aws-ssm';
import { Construct } from 'constructs';
import { RECONCILER_SERVICE } from '../config/metrics';
import { NOT_DEGRADED, NOT_PAUSED } from '../core/flags';
import { TenangFunction } from './tenang-function';
import { validateProps } from './validation';

/** A consumer whose mapping the reconciler controls. */
export interface ControlledConsumer {
  /** Consumer name (the flag's last path segment). */
  readonly consumer: string;
  /** Its SSM pause flag name. */
  readonly flagName: string;
  /** The event source mapping's UUID. */
  readonly eventSourceMappingId: string;
  /** The event source mapping's ARN, for least-privilege grants. */
  readonly eventSourceMappingArn: string;
}

/** Props of ControlFlags. */
export interface ControlFlagsProps {
  readonly stageName: string;
  /** The degrade flag's name. */
  readonly degradeFlagName: string;
  readonly consumers: readonly ControlledConsumer[];
  /** The reconciler's entry file. */
  readonly reconcilerEntry: string;
  /** How often the reconciler converges even without a change event. @default 1 minute */
  readonly reconcileEvery?: Duration;
}

/** The flags and their reconciler. */
export class ControlFlags extends Construct {
  /** Pause flags keyed by consumer. */
  public readonly pauseFlags: ReadonlyMap<string, ssm.StringParameter>;
  /** The stage's degrade flag. */
  public readonly degradeFlag: ssm.StringParameter;
  /** The reconciler. */
  public readonly reconciler: TenangFunction;

  public constructor(scope: Construct, id: string, props: ControlFlagsProps) {
    super(scope, id);
    validateProps('ControlFlags', props, [
      (p) => (p.consumers.length > 0 ? undefined : 'at least one consumer is needed'),
      (p) => {
        const names = p.consumers.map((c) => c.consumer);
        return new Set(names).size === names.length ? undefined : 'consumer names must be unique';
      },
      (p) =>
        p.consumers.every((c) => c.flagName.startsWith(`/tenang/${p.stageName}/flags/pause/`))
          ? undefined
          : `pause flags must live under /tenang/${p.stageName}/flags/pause/`,
    ]);

    const flags = new Map<string, ssm.StringParameter>();
    for (const c of props.consumers) {
      flags.set(
        c.consumer,
        new ssm.StringParameter(this, `Pause-${c.consumer}`, {
          parameterName: c.flagName,
          description: `Pause flag of ${c.consumer}: {"paused":bool,"reason":str,"until":ISO-8601}. Set it with "tenang pause".`,
          stringValue: JSON.stringify(NOT_PAUSED),
        }),
      );
    }
    this.pauseFlags = flags;
    this.degradeFlag = new ssm.StringParameter(this, 'Degrade', {
      parameterName: props.degradeFlagName,
      description: 'Degrade flag: {"degraded":bool,"reason":str}. Set it with "tenang degrade".',
      stringValue: JSON.stringify(NOT_DEGRADED),
    });

    const mappings = Object.fromEntries(props.consumers.map((c) => [c.consumer, c.eventSourceMappingId]));
    this.reconciler = new TenangFunction(this, 'Reconciler', {
      serviceName: RECONCILER_SERVICE,
      entry: props.reconcilerEntry,
      timeoutSeconds: 30,
      memoryMb: 256,
      environment: {
        TENANG_STAGE: props.stageName,
        TENANG_MAPPINGS: Stack.of(this).toJsonString(mappings),
      },
      noAsyncDlqReason:
        'Reconciliation is level-triggered: every run converges all mappings, and the schedule runs it again within a minute, so a lost event loses nothing.',
    });
    const fn = this.reconciler.function;
    // The reconciler reads every pause flag in batches of GetParameters (lib/adapters/aws/ssm-flags.ts).
    for (const flag of flags.values()) grantParameterRead(flag, fn, 'ssm:GetParameters');
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['lambda:GetEventSourceMapping', 'lambda:UpdateEventSourceMapping'],
        resources: props.consumers.map((c) => c.eventSourceMappingArn),
      }),
    );

    const target = new targets.LambdaFunction(fn, { retryAttempts: 2, maxEventAge: Duration.minutes(5) });
    const levelTriggered =
      'Reconciliation is level-triggered: the periodic rule converges every mapping within a minute, so a dropped event needs no DLQ.';
    const onChange = new events.Rule(this, 'OnFlagChange', {
      description: 'Reconcile event source mappings when a pause flag changes',
      eventPattern: {
        source: ['aws.ssm'],
        detailType: ['Parameter Store Change'],
        detail: { name: [{ prefix: `/tenang/${props.stageName}/flags/pause/` }] },
      },
      targets: [target],
    });
    const periodic = new events.Rule(this, 'Periodic', {
      description: 'Reconcile event source mappings periodically, and publish Paused / PauseOverdue',
      schedule: events.Schedule.rate(props.reconcileEvery ?? Duration.minutes(1)),
      targets: [target],
    });
    for (const rule of [onChange, periodic]) {
      Validations.of(rule).acknowledge({ id: 'Serverless-EventBusDLQ', reason: levelTriggered });
    }
  }
}
