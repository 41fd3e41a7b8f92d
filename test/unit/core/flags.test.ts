import fc from 'fast-check';
import {
  NOT_DEGRADED,
  NOT_PAUSED,
  planReconciliation,
  readDegradeFlag,
  readPauseFlag,
  type MappingObservation,
  type PauseState,
} from '../../../lib/core/flags';

const NOW = new Date('2030-06-01T12:00:00.000Z');
const notPausedState: PauseState = {
  paused: false,
  reason: undefined,
  until: undefined,
  overdue: false,
  invalid: undefined,
};

describe('Function: readPauseFlag', () => {
  it('when the parameter does not exist, it reads as not paused and valid', () => {
    // Act
    const state = readPauseFlag(undefined, NOW);

    // Assess
    expect(state).toEqual(notPausedState);
  });

  it('when the flag was created with NOT_PAUSED, it reads as not paused and valid', () => {
    // Act
    const state = readPauseFlag(JSON.stringify(NOT_PAUSED), NOW);

    // Assess
    expect(state).toEqual(notPausedState);
  });

  it('when paused with a reason and a future until, it is paused, not overdue, and keeps reason and until', () => {
    // Prepare
    const raw = JSON.stringify({
      paused: true,
      reason: 'provider outage',
      until: '2030-06-01T13:00:00Z',
      setBy: 'ops',
    });

    // Act
    const state = readPauseFlag(raw, NOW);

    // Assess
    expect(state).toEqual({
      paused: true,
      reason: 'provider outage',
      until: new Date('2030-06-01T13:00:00Z'),
      overdue: false,
      invalid: undefined,
    });
  });

  it('when paused and until has passed, it stays paused and is overdue', () => {
    // Prepare
    const raw = JSON.stringify({ paused: true, reason: 'migration', until: '2030-06-01T11:59:59Z' });

    // Act
    const state = readPauseFlag(raw, NOW);

    // Assess
    expect(state.paused).toBe(true);
    expect(state.overdue).toBe(true);
  });

  it('when paused and until is exactly now, it is overdue', () => {
    // Prepare
    const raw = JSON.stringify({ paused: true, reason: 'migration', until: NOW.toISOString() });

    // Act
    const state = readPauseFlag(raw, NOW);

    // Assess
    expect(state.overdue).toBe(true);
  });

  it('when until carries a UTC offset, it compares the instant, not the wall clock', () => {
    // Prepare: 13:30+02:00 is 11:30Z, before NOW (12:00Z).
    const raw = JSON.stringify({ paused: true, reason: 'migration', until: '2030-06-01T13:30:00+02:00' });

    // Act
    const state = readPauseFlag(raw, NOW);

    // Assess
    expect(state.until?.toISOString()).toBe('2030-06-01T11:30:00.000Z');
    expect(state.overdue).toBe(true);
  });

  it('when not paused and until has passed, it is not overdue', () => {
    // Prepare
    const raw = JSON.stringify({ paused: false, until: '2020-01-01T00:00:00Z' });

    // Act
    const state = readPauseFlag(raw, NOW);

    // Assess
    expect(state.paused).toBe(false);
    expect(state.overdue).toBe(false);
  });

  it.each([
    { case: 'not JSON', raw: 'paused', says: 'not JSON' },
    { case: 'an empty string', raw: '', says: 'not JSON' },
    { case: 'JSON null', raw: 'null', says: 'value:' },
    { case: 'paused as a string', raw: '{"paused":"true"}', says: 'paused:' },
    { case: 'without paused', raw: '{"reason":"x"}', says: 'paused:' },
    { case: 'an empty reason', raw: '{"paused":true,"reason":""}', says: 'reason:' },
    { case: 'until without an offset', raw: '{"paused":true,"until":"2030-06-01T13:00:00"}', says: 'until:' },
    { case: 'until that is not a date', raw: '{"paused":true,"until":"tomorrow"}', says: 'until:' },
  ])('when the value is $case, it is not paused and reports why it is invalid', ({ raw, says }) => {
    // Act
    const state = readPauseFlag(raw, NOW);

    // Assess
    expect(state.paused).toBe(false);
    expect(state.overdue).toBe(false);
    expect(state.invalid).toEqual(expect.stringContaining(says));
  });

  it('when given any string at all, it never throws and is paused only when the value is valid', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (raw) => {
        // Act
        const state = readPauseFlag(raw, NOW);

        // Assess
        if (state.invalid !== undefined) expect(state.paused).toBe(false);
        if (state.overdue) expect(state.paused).toBe(true);
      }),
    );
  });
});

describe('Function: readDegradeFlag', () => {
  it('when the parameter does not exist, it reads as not degraded', () => {
    // Act & Assess
    expect(readDegradeFlag(undefined)).toEqual(NOT_DEGRADED);
  });

  it('when degraded with a reason, it returns the flag', () => {
    // Prepare
    const raw = JSON.stringify({ degraded: true, reason: 'database overloaded', setBy: 'ops' });

    // Act
    const flag = readDegradeFlag(raw);

    // Assess
    expect(flag).toEqual({ degraded: true, reason: 'database overloaded', setBy: 'ops' });
  });

  it.each([
    { case: 'not JSON', raw: '{degraded' },
    { case: 'degraded as a number', raw: '{"degraded":1}' },
    { case: 'JSON null', raw: 'null' },
  ])('when the value is $case, it reads as not degraded', ({ raw }) => {
    // Act & Assess
    expect(readDegradeFlag(raw)).toEqual(NOT_DEGRADED);
  });
});

describe('Function: planReconciliation', () => {
  const paused: PauseState = { ...notPausedState, paused: true, reason: 'outage' };
  const observe = (consumer: string, enabled: boolean, flag: PauseState): MappingObservation => ({
    consumer,
    mappingId: `uuid-${consumer}`,
    enabled,
    flag,
  });

  it('when a paused consumer is enabled, it plans to disable it', () => {
    // Act
    const plan = planReconciliation([observe('payment-consumer', true, paused)]);

    // Assess
    expect(plan).toEqual([
      { consumer: 'payment-consumer', mappingId: 'uuid-payment-consumer', enabled: false },
    ]);
  });

  it('when a consumer that is not paused is disabled, it plans to enable it', () => {
    // Act
    const plan = planReconciliation([observe('notification-consumer', false, notPausedState)]);

    // Assess
    expect(plan).toEqual([
      { consumer: 'notification-consumer', mappingId: 'uuid-notification-consumer', enabled: true },
    ]);
  });

  it('when every mapping already matches its flag, it plans nothing', () => {
    // Act
    const plan = planReconciliation([observe('a', false, paused), observe('b', true, notPausedState)]);

    // Assess
    expect(plan).toEqual([]);
  });

  it('when given any observations, it plans exactly the mismatched ones, each to !paused', () => {
    const observation = fc.record({
      consumer: fc.string(),
      mappingId: fc.uuid(),
      enabled: fc.boolean(),
      flag: fc.boolean().map((p): PauseState => (p ? paused : notPausedState)),
    });
    fc.assert(
      fc.property(fc.array(observation), (observations) => {
        // Act
        const plan = planReconciliation(observations);

        // Assess
        const mismatched = observations.filter((o) => o.enabled === o.flag.paused);
        expect(plan).toEqual(
          mismatched.map((o) => ({ consumer: o.consumer, mappingId: o.mappingId, enabled: !o.flag.paused })),
        );
      }),
    );
  });
});
