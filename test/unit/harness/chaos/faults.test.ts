import {
  CI_FAULT_CONFIG_NAMES,
  FAULT_CONFIGS,
  FAULT_EVIDENCE,
  faultConfigNamed,
  faultEvidence,
  heldJobs,
  LATE_FEEDS,
  hitsInvalidator,
  paymentCrashPhases,
  unfiredFaults,
} from '../../../../harness/chaos/faults';

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

describe('Function: faultEvidence', () => {
  it('when functions and the platform report faults, it counts each by its evidence key and the SIGKILLs per function', () => {
    // Prepare: lines as the functions and the local platform print them.
    const functions = [
      { fn: 'tenang-dev-payment-consumer', line: '[tenang] injected crash at after-side-effect' },
      { fn: 'tenang-dev-cache-invalidator', line: '[tenang] injected hang at during-invalidation' },
      { fn: 'tenang-dev-ingress', line: '[tenang-trace] fault ddb-lost-response GetItemCommand' },
      { fn: 'tenang-dev-ingress', line: '[tenang-trace] fault ddb-lost-response PutItemCommand' },
      { fn: 'tenang-dev-inventory-consumer', line: '[tenang-trace] lock {"op":"acquire"}' },
      { fn: 'tenang-dev-ingress', line: '{"level":"INFO","message":"order created"}' },
    ];
    const platform = [
      'tenang-dev-payment-consumer: crash: Runtime.ExitError: the process was killed (SIGKILL)',
      'tenang-dev-notification-consumer: injected lost ack of 3 message(s)',
      'tenang-dev-notification-consumer: delete failed for 2 message(s): ReceiptHandleIsInvalid',
    ];

    // Act
    const fired = faultEvidence(functions, platform);

    // Assess
    expect(fired).toEqual({
      'crash:after-side-effect': 1,
      'hang:during-invalidation': 1,
      'ddb-lost-response': 2,
      'process-killed': 1,
      'process-killed:tenang-dev-payment-consumer': 1,
      'lost-ack': 1,
    });
  });

  it('when nothing was injected, it counts nothing', () => {
    expect(faultEvidence([{ fn: 'f', line: 'job done' }], ['f: poll failed: ECONNRESET'])).toEqual({});
  });
});

describe('Function: paymentCrashPhases', () => {
  it('when a configuration crashes the payment consumer at every step, the points come in the order of a capture', () => {
    expect(paymentCrashPhases(faultConfigNamed('crashes-every-step'))).toEqual([
      ['before-side-effect'],
      ['after-side-effect'],
      ['after-commit'],
    ]);
  });

  it('when the payment function times out, its hang is a phase; faults elsewhere are none', () => {
    expect(paymentCrashPhases(faultConfigNamed('payment-timeout'))).toEqual([['hang:after-side-effect']]);
    expect(paymentCrashPhases(faultConfigNamed('redis-down+mid-invalidation'))).toEqual([]);
  });
});

describe('Function: heldJobs', () => {
  it('when a configuration arms crash points, a payment is held per payment point, one plus the late feeds for the invalidator and for the lock holder', () => {
    const held = (name: string) => heldJobs(faultConfigNamed(name));
    const late = 1 + LATE_FEEDS;
    expect(LATE_FEEDS).toBeGreaterThanOrEqual(2);
    expect(held('crashes-every-step')).toEqual({ 'payment.capture': 3, 'inventory.reserve': 0 });
    expect(held('crash-mid-invalidation')).toEqual({ 'payment.capture': late, 'inventory.reserve': 0 });
    expect(held('invalidator-timeout')).toEqual({ 'payment.capture': late, 'inventory.reserve': 0 });
    expect(held('everything')).toEqual({ 'payment.capture': 1 + late, 'inventory.reserve': 0 });
    expect(held('crash-holding-lock')).toEqual({ 'payment.capture': 0, 'inventory.reserve': late });
    expect(held('ddb-timeout')).toEqual({ 'payment.capture': 0, 'inventory.reserve': 0 });
  });

  it('when only the invalidator is crashed or hung, hitsInvalidator says so', () => {
    expect(FAULT_CONFIGS.filter(hitsInvalidator).map((c) => c.name)).toEqual([
      'crash-mid-invalidation',
      'invalidator-timeout',
      'redis-down+mid-invalidation',
      'everything',
    ]);
  });
});

describe('Constant: CI_FAULT_CONFIG_NAMES', () => {
  it('when npm test runs the CI size, every fault of the matrix is still in one of its configurations', () => {
    const ci = FAULT_CONFIGS.filter((c) => CI_FAULT_CONFIG_NAMES.includes(c.name));
    expect(ci.map((c) => c.name)).toEqual([...CI_FAULT_CONFIG_NAMES]);
    const all = new Set(FAULT_CONFIGS.flatMap((c) => c.faults));
    const covered = new Set(ci.flatMap((c) => c.faults));
    expect([...all].filter((f) => !covered.has(f))).toEqual([]);
  });
});
