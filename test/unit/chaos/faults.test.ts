import { FAULT_CONFIGS, FAULT_EVIDENCE, faultConfigNamed, unfiredFaults } from '../../../lib/chaos/faults';

describe('Function: unfiredFaults', () => {
  it('when every fault of a configuration left its evidence, none is unfired', () => {
    // Act
    const unfired = unfiredFaults(faultConfigNamed('ddb-throttle+timeout+lost-ack'), {
      'ddb-window': 1,
      'ddb-throttle': 7,
      'ddb-timeout': 3,
      'ddb-lost-response': 4,
      'lost-ack': 3,
    });

    // Assess
    expect(unfired).toEqual([]);
  });

  it('when only the SDK window opened (bench/CHAOS.md, ddb-timeout run 1), the timeout is unfired', () => {
    // Act
    const unfired = unfiredFaults(faultConfigNamed('ddb-timeout'), { 'ddb-window': 1 });

    // Assess
    expect(unfired).toEqual(['ddb-timeout']);
  });

  it('when the single crash fault lost its line but the host reported the SIGKILL, it fired', () => {
    // Act
    const unfired = unfiredFaults(faultConfigNamed('crash-before-effect'), { 'process-killed': 1 });

    // Assess
    expect(unfired).toEqual([]);
  });

  it('when several crash faults are configured, a SIGKILL report alone proves none of them', () => {
    // Act (bench/CHAOS.md, crashes-every-step run 1)
    const unfired = unfiredFaults(faultConfigNamed('crashes-every-step'), {
      'crash:after-side-effect': 1,
      'crash:after-commit': 1,
      'process-killed': 2,
      'lost-ack': 8,
    });

    // Assess
    expect(unfired).toEqual(['crash-before-side-effect']);
  });

  it('when the baseline runs, there is no fault to fire', () => {
    expect(unfiredFaults(faultConfigNamed('baseline'), {})).toEqual([]);
  });

  it('when a configuration names a fault, that fault has evidence keys', () => {
    // Act
    const missing = FAULT_CONFIGS.flatMap((c) => c.faults).filter(
      (kind) => (FAULT_EVIDENCE[kind] ?? []).length === 0,
    );

    // Assess
    expect(missing).toEqual([]);
  });
});
