/**
 * Creates the template's CloudWatch metric alarms in the emulator with PutMetricAlarm: moto's
 * CloudFormation skips alarms, and they must exist there for `tenang status`, the alarm
 * evaluator and the drills. moto 5.2 does not implement PutCompositeAlarm, so composite alarms
 * are returned resolved for the local alarm evaluator to keep instead. Re-running overwrites
 * each alarm with the same definition: nothing changes.
 */
import {
  PutMetricAlarmCommand,
  type CloudWatchClient,
  type PutCompositeAlarmCommandInput,
  type PutMetricAlarmCommandInput,
} from '@aws-sdk/client-cloudwatch';
import { resolve, type ResolveContext } from './template';

/** What was created. */
export interface ProvisionedAlarms {
  /** Created in the emulator. */
  readonly metricAlarms: readonly string[];
  /** Resolved composite alarm definitions, kept by the local alarm evaluator. */
  readonly compositeAlarms: readonly PutCompositeAlarmCommandInput[];
}

/** Creates every alarm of the template. */
export async function provisionAlarms(
  cloudwatch: CloudWatchClient,
  ctx: ResolveContext,
): Promise<ProvisionedAlarms> {
  const metricAlarms: string[] = [];
  const compositeAlarms: PutCompositeAlarmCommandInput[] = [];
  const entries = Object.entries(ctx.template.Resources);
  for (const [, resource] of entries.filter(([, r]) => r.Type === 'AWS::CloudWatch::Alarm')) {
    const props = resolve(resource.Properties ?? {}, ctx) as PutMetricAlarmCommandInput;
    await cloudwatch.send(new PutMetricAlarmCommand(props));
    metricAlarms.push(props.AlarmName ?? '');
  }
  for (const [, resource] of entries.filter(([, r]) => r.Type === 'AWS::CloudWatch::CompositeAlarm')) {
    const raw = resolve(resource.Properties ?? {}, ctx) as Record<string, unknown>;
    const props: PutCompositeAlarmCommandInput = {
      ...(raw as unknown as PutCompositeAlarmCommandInput),
      AlarmName: String(raw.AlarmName),
      AlarmRule: String(raw.AlarmRule),
    };
    compositeAlarms.push(props);
  }
  return { metricAlarms, compositeAlarms };
}
