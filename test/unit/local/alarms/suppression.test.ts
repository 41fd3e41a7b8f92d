import { actionsSuppression } from '../../../../lib/local/alarms/suppression';

describe('Function: actionsSuppression', () => {
  const base = {
    now: 1_000_000,
    suppressorState: 'OK' as const,
    suppressorLeftAlarmAt: undefined,
    compositeChangedAt: 0,
    waitMs: 60_000,
    extensionMs: 300_000,
  };

  it('when the suppressor is in ALARM, actions are suppressed', () => {
    expect(actionsSuppression({ ...base, suppressorState: 'ALARM' })).toEqual({
      suppressed: true,
      held: true,
    });
  });

  it('when the suppressor left ALARM within the extension period, actions are still suppressed', () => {
    expect(actionsSuppression({ ...base, suppressorLeftAlarmAt: base.now - 299_000 }).suppressed).toBe(true);
    expect(actionsSuppression({ ...base, suppressorLeftAlarmAt: base.now - 300_000 }).suppressed).toBe(false);
  });

  it('when the composite changed within the wait period, actions are held but not suppressed', () => {
    expect(actionsSuppression({ ...base, compositeChangedAt: base.now - 30_000 })).toEqual({
      suppressed: false,
      held: true,
    });
  });
});
