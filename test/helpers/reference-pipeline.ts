/**
 * Jest setup of every project: code under test that runs unbundled reads the app's declaration
 * from TENANG_PIPELINE, as a bundled function reads what the stack baked in. The tests' app is
 * the reference example as the local platform deploys it: with the platform's alarm subscriber
 * (`-c tenang:alarmEmail`), without which its synth refuses the stage (Tenang-F5-AlarmSubscriber).
 */
import { encodePipeline } from '../../lib/config';
import { withAlarmEmail } from '../../lib/config/alarm-email';
import { LOCAL_ALARM_EMAIL } from '../../lib/local/names';
import { referencePipeline } from '../../examples/reference/pipeline';

process.env.TENANG_PIPELINE ??= encodePipeline(
  withAlarmEmail(referencePipeline('dev', 'us-east-1'), LOCAL_ALARM_EMAIL),
);
