import { withAlarmEmail } from '../../../lib/config/alarm-email';
import { pipelineInput, stageInput } from './builders';

describe('Function: withAlarmEmail', () => {
  const declared = (deliverTo?: unknown) =>
    pipelineInput({
      stage: stageInput({ alarmTopic: { name: 'tenang-test-alarms', deliverTo } as never }),
    });

  it('when no e-mail is given (no -c tenang:alarmEmail, or an empty one), it returns the declaration as it is', () => {
    // Prepare
    const input = declared([{ email: 'ops@example.com' }]);

    // Act / Assess
    expect(withAlarmEmail(input, undefined)).toBe(input);
    expect(withAlarmEmail(input, '')).toBe(input);
  });

  it('when an e-mail is given, it is added after the declared subscribers, and to an omitted list', () => {
    // Act
    const added = withAlarmEmail(declared([{ https: 'https://events.pagerduty.com/x' }]), 'me@example.com');
    const alone = withAlarmEmail(declared(), 'me@example.com');

    // Assess
    expect(added.stage.alarmTopic.deliverTo).toEqual([
      { https: 'https://events.pagerduty.com/x' },
      { email: 'me@example.com' },
    ]);
    expect(alone.stage.alarmTopic.deliverTo).toEqual([{ email: 'me@example.com' }]);
  });

  it('when the declaration says no one is told, the given e-mail replaces the { none }', () => {
    // Act
    const result = withAlarmEmail(declared({ none: 'scratch stage' }), 'me@example.com');

    // Assess
    expect(result.stage.alarmTopic.deliverTo).toEqual([{ email: 'me@example.com' }]);
  });

  it('when the e-mail is already a subscriber, it is not added twice (CDK refuses a second subscription of one address)', () => {
    // Prepare
    const input = declared([{ email: 'me@example.com' }]);

    // Act
    const result = withAlarmEmail(withAlarmEmail(input, 'me@example.com'), 'me@example.com');

    // Assess
    expect(result.stage.alarmTopic.deliverTo).toEqual([{ email: 'me@example.com' }]);
  });

  it('when the context value is not a string, it fails naming the context key', () => {
    // Act / Assess
    expect(() => withAlarmEmail(declared(), 42)).toThrow('CDK context tenang:alarmEmail must be a string');
  });
});
