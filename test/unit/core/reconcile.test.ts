import fc from 'fast-check';
import {
  MappingBusyError,
  MappingNotConvergedError,
  MappingNotFoundError,
  ReconciliationError,
  mappingStatus,
  reconcileMappings,
  type ConsumerReconciliation,
  type ControlledMapping,
  type FlagReader,
  type MappingControl,
  type MappingStatus,
  type MetricsSink,
} from '../../../lib/core/reconcile';

const NOW = new Date('2030-06-01T12:00:00.000Z');
const PAUSED = JSON.stringify({ paused: true, reason: 'provider outage', until: '2030-06-01T13:00:00Z' });
const PAUSED_OVERDUE = JSON.stringify({ paused: true, reason: 'migration', until: '2030-06-01T11:00:00Z' });
const NOT_PAUSED = JSON.stringify({ paused: false });

/** Every state the Lambda API reports for a mapping. */
const ESM_STATES = ['Creating', 'Enabling', 'Enabled', 'Disabling', 'Disabled', 'Updating'] as const;

/** Flags in a map; `readAll` returns only the names asked for, undefined for the missing ones. */
class FakeFlagReader implements FlagReader {
  public readonly reads: string[][] = [];

  public constructor(private readonly values: ReadonlyMap<string, string> = new Map()) {}

  public async readAll(names: readonly string[]): Promise<Map<string, string | undefined>> {
    this.reads.push([...names]);
    return new Map(names.map((name) => [name, this.values.get(name)]));
  }
}

/**
 * Mappings that behave like the Lambda API: an update leaves the mapping Enabling / Disabling,
 * and the next read finds it settled. `target` is where a mapping really is going, which the
 * API hides while it is Creating or Updating.
 */
class FakeMappings implements MappingControl {
  public readonly updates: { mappingId: string; enabled: boolean }[] = [];
  public readonly failUpdate = new Map<string, Error>();
  public readonly failGet = new Map<string, Error>();
  /** Read back this state after an update instead of the one asked for. */
  public readonly stateAfterUpdate = new Map<string, string>();
  private readonly states = new Map<string, string>();
  private readonly targets = new Map<string, boolean>();

  public constructor(initial: Record<string, string> = {}, targets: Record<string, boolean> = {}) {
    for (const [id, state] of Object.entries(initial)) this.states.set(id, state);
    for (const [id, target] of Object.entries(targets)) this.targets.set(id, target);
  }

  public async get(mappingId: string): Promise<MappingStatus> {
    const failure = this.failGet.get(mappingId);
    if (failure !== undefined) throw failure;
    const state = this.states.get(mappingId);
    if (state === undefined) throw new MappingNotFoundError(`no mapping ${mappingId}`, mappingId);
    const status = mappingStatus(state);
    // Transitions finish between two reads.
    if (state === 'Enabling' || state === 'Disabling')
      this.states.set(mappingId, state === 'Enabling' ? 'Enabled' : 'Disabled');
    return status;
  }

  public async setEnabled(mappingId: string, enabled: boolean): Promise<void> {
    const failure = this.failUpdate.get(mappingId);
    if (failure !== undefined) throw failure;
    if (!this.states.has(mappingId)) throw new MappingNotFoundError(`no mapping ${mappingId}`, mappingId);
    this.updates.push({ mappingId, enabled });
    this.targets.set(mappingId, enabled);
    this.states.set(mappingId, this.stateAfterUpdate.get(mappingId) ?? (enabled ? 'Enabling' : 'Disabling'));
  }

  /** Where the mapping ends up once every transition finishes. */
  public finalEnabled(mappingId: string): boolean | undefined {
    const state = this.states.get(mappingId);
    if (state === undefined) return undefined;
    return mappingStatus(state).enabled ?? this.targets.get(mappingId);
  }
}

class FakeMetrics implements MetricsSink {
  public readonly published: ConsumerReconciliation[] = [];

  public publish(outcome: ConsumerReconciliation): void {
    this.published.push(outcome);
  }
}

const consumer = (name: string): ControlledMapping => ({
  consumer: name,
  mappingId: `uuid-${name}`,
  flagName: `/tenang/test/flags/pause/${name}`,
});

interface Scenario {
  readonly consumers: readonly ControlledMapping[];
  readonly flags?: Record<string, string>;
  readonly states: Record<string, string>;
  readonly targets?: Record<string, boolean>;
}

/** Fakes for a scenario keyed by consumer name. */
function setUp(scenario: Scenario): {
  flags: FakeFlagReader;
  mappings: FakeMappings;
  metrics: FakeMetrics;
  run: () => Promise<ConsumerReconciliation[]>;
} {
  const byName = new Map(scenario.consumers.map((c) => [c.consumer, c]));
  const idOf = (name: string): string => byName.get(name)?.mappingId ?? `uuid-${name}`;
  const flagOf = (name: string): string => byName.get(name)?.flagName ?? `/unknown/${name}`;
  const flags = new FakeFlagReader(
    new Map(Object.entries(scenario.flags ?? {}).map(([n, v]) => [flagOf(n), v])),
  );
  const mappings = new FakeMappings(
    Object.fromEntries(Object.entries(scenario.states).map(([n, s]) => [idOf(n), s])),
    Object.fromEntries(Object.entries(scenario.targets ?? {}).map(([n, t]) => [idOf(n), t])),
  );
  const metrics = new FakeMetrics();
  const run = () =>
    reconcileMappings({ consumers: scenario.consumers, now: NOW, ports: { flags, mappings, metrics } });
  return { flags, mappings, metrics, run };
}

/** Runs `action`, expecting a ReconciliationError, and returns it. */
async function reconciliationError(action: () => Promise<unknown>): Promise<ReconciliationError> {
  const thrown = await action().then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(thrown).toBeInstanceOf(ReconciliationError);
  return thrown as ReconciliationError;
}

describe('Function: mappingStatus', () => {
  it.each([
    { state: 'Enabled', enabled: true },
    { state: 'Enabling', enabled: true },
    { state: 'Disabled', enabled: false },
    { state: 'Disabling', enabled: false },
    { state: 'Creating', enabled: undefined },
    { state: 'Updating', enabled: undefined },
    { state: 'Deleting', enabled: undefined },
  ])('when the API reports $state, it reads enabled = $enabled', ({ state, enabled }) => {
    // Act & Assess
    expect(mappingStatus(state)).toEqual({ state, enabled });
  });
});

describe('Function: reconcileMappings', () => {
  it('when a consumer is paused and its mapping is enabled, it disables the mapping', async () => {
    // Prepare
    const { mappings, run } = setUp({
      consumers: [consumer('payment')],
      flags: { payment: PAUSED },
      states: { payment: 'Enabled' },
    });

    // Act
    const [outcome] = await run();

    // Assess
    expect(mappings.updates).toEqual([{ mappingId: 'uuid-payment', enabled: false }]);
    expect(outcome).toMatchObject({
      consumer: 'payment',
      paused: true,
      reason: 'provider outage',
      overdue: false,
      invalid: undefined,
      stateBefore: 'Enabled',
      changed: true,
      enabledAfter: false,
      error: undefined,
    });
    expect(mappings.finalEnabled('uuid-payment')).toBe(false);
  });

  it('when a consumer is not paused and its mapping is disabled, it enables the mapping', async () => {
    // Prepare
    const { mappings, run } = setUp({
      consumers: [consumer('notification')],
      flags: { notification: NOT_PAUSED },
      states: { notification: 'Disabled' },
    });

    // Act
    const [outcome] = await run();

    // Assess
    expect(mappings.updates).toEqual([{ mappingId: 'uuid-notification', enabled: true }]);
    expect(outcome).toMatchObject({
      paused: false,
      changed: true,
      enabledAfter: true,
      stateBefore: 'Disabled',
    });
  });

  it('when every mapping already follows its flag, it sends no update and publishes every consumer', async () => {
    // Prepare
    const { mappings, metrics, run } = setUp({
      consumers: [consumer('payment'), consumer('notification')],
      flags: { payment: PAUSED, notification: NOT_PAUSED },
      states: { payment: 'Disabled', notification: 'Enabled' },
    });

    // Act
    const outcomes = await run();

    // Assess
    expect(mappings.updates).toEqual([]);
    expect(outcomes.map((o) => [o.consumer, o.changed, o.enabledAfter])).toEqual([
      ['payment', false, false],
      ['notification', false, true],
    ]);
    expect(metrics.published).toEqual(outcomes);
  });

  it('when a pause flag is missing, it treats the consumer as not paused and valid', async () => {
    // Prepare
    const { mappings, run } = setUp({
      consumers: [consumer('inventory')],
      states: { inventory: 'Disabled' },
    });

    // Act
    const [outcome] = await run();

    // Assess
    expect(mappings.updates).toEqual([{ mappingId: 'uuid-inventory', enabled: true }]);
    expect(outcome).toMatchObject({ paused: false, invalid: undefined, enabledAfter: true });
  });

  it('when a pause is past its until, it keeps the consumer paused and reports it overdue', async () => {
    // Prepare
    const { mappings, metrics, run } = setUp({
      consumers: [consumer('payment')],
      flags: { payment: PAUSED_OVERDUE },
      states: { payment: 'Disabled' },
    });

    // Act
    const [outcome] = await run();

    // Assess
    expect(mappings.updates).toEqual([]);
    expect(outcome).toMatchObject({ paused: true, overdue: true, enabledAfter: false });
    expect(metrics.published[0]?.overdue).toBe(true);
  });

  it('when a pause flag is invalid, it treats the consumer as not paused and reports it invalid', async () => {
    // Prepare
    const { mappings, metrics, run } = setUp({
      consumers: [consumer('payment')],
      flags: { payment: '{"paused":"yes"}' },
      states: { payment: 'Disabled' },
    });

    // Act
    const [outcome] = await run();

    // Assess
    expect(mappings.updates).toEqual([{ mappingId: 'uuid-payment', enabled: true }]);
    expect(outcome?.paused).toBe(false);
    expect(outcome?.invalid).toEqual(expect.stringContaining('paused'));
    expect(metrics.published[0]?.invalid).toBeDefined();
  });

  it.each([
    { state: 'Enabling', flag: NOT_PAUSED, enabledAfter: true },
    { state: 'Disabling', flag: PAUSED, enabledAfter: false },
  ])(
    'when a mapping is $state toward what its flag wants, it sends no update',
    async ({ state, flag, enabledAfter }) => {
      // Prepare
      const { mappings, run } = setUp({
        consumers: [consumer('payment')],
        flags: { payment: flag },
        states: { payment: state },
      });

      // Act
      const [outcome] = await run();

      // Assess
      expect(mappings.updates).toEqual([]);
      expect(outcome).toMatchObject({ changed: false, stateBefore: state, enabledAfter });
    },
  );

  it.each([
    { state: 'Enabling', flag: PAUSED, enabled: false },
    { state: 'Disabling', flag: NOT_PAUSED, enabled: true },
  ])(
    'when a mapping is $state away from what its flag wants, it sends Enabled=$enabled',
    async ({ state, flag, enabled }) => {
      // Prepare
      const { mappings, run } = setUp({
        consumers: [consumer('payment')],
        flags: { payment: flag },
        states: { payment: state },
      });

      // Act
      await run();

      // Assess
      expect(mappings.updates).toEqual([{ mappingId: 'uuid-payment', enabled }]);
    },
  );

  it.each(['Updating', 'Creating'])(
    'when a mapping is %s (target unknown), it sends the desired Enabled anyway',
    async (state) => {
      // Prepare: the hidden target is the wrong one.
      const { mappings, run } = setUp({
        consumers: [consumer('payment')],
        flags: { payment: PAUSED },
        states: { payment: state },
        targets: { payment: true },
      });

      // Act
      const [outcome] = await run();

      // Assess
      expect(mappings.updates).toEqual([{ mappingId: 'uuid-payment', enabled: false }]);
      expect(outcome).toMatchObject({ changed: true, enabledAfter: false });
      expect(mappings.finalEnabled('uuid-payment')).toBe(false);
    },
  );

  it('when the update is accepted but the mapping still reads Updating, it reports no error and enabledAfter unknown', async () => {
    // Prepare
    const { mappings, run } = setUp({
      consumers: [consumer('payment')],
      flags: { payment: PAUSED },
      states: { payment: 'Enabled' },
    });
    mappings.stateAfterUpdate.set('uuid-payment', 'Updating');

    // Act
    const [outcome] = await run();

    // Assess
    expect(outcome).toMatchObject({
      changed: true,
      stateAfter: 'Updating',
      enabledAfter: undefined,
      error: undefined,
    });
  });

  it('when one mapping update throws, it still reconciles the others, publishes all, then throws one aggregate error', async () => {
    // Prepare
    const { mappings, metrics, run } = setUp({
      consumers: [consumer('payment'), consumer('notification'), consumer('inventory')],
      flags: { payment: PAUSED, notification: PAUSED, inventory: NOT_PAUSED },
      states: { payment: 'Enabled', notification: 'Enabled', inventory: 'Disabled' },
    });
    const busy = new MappingBusyError('in use', 'uuid-notification');
    mappings.failUpdate.set('uuid-notification', busy);

    // Act
    const error = await reconciliationError(run);

    // Assess
    expect(mappings.updates).toEqual(
      expect.arrayContaining([
        { mappingId: 'uuid-payment', enabled: false },
        { mappingId: 'uuid-inventory', enabled: true },
      ]),
    );
    expect(mappings.finalEnabled('uuid-payment')).toBe(false);
    expect(mappings.finalEnabled('uuid-inventory')).toBe(true);
    expect(error.failures).toEqual([
      { consumer: 'notification', mappingId: 'uuid-notification', step: 'update', error: busy },
    ]);
    expect(error.errors).toEqual([busy]);
    expect(error.message).toContain('notification (update: MappingBusyError: in use)');
    expect(metrics.published.map((o) => o.consumer)).toEqual(['payment', 'notification', 'inventory']);
    expect(error.outcomes.find((o) => o.consumer === 'notification')).toMatchObject({
      paused: true,
      changed: false,
      enabledAfter: true,
      error: { step: 'update', message: 'MappingBusyError: in use' },
    });
  });

  it('when a mapping cannot be read, it reconciles the others and fails that consumer at observe', async () => {
    // Prepare: no state for "gone" — the mapping does not exist.
    const { mappings, metrics, run } = setUp({
      consumers: [consumer('gone'), consumer('payment')],
      flags: { gone: PAUSED, payment: PAUSED },
      states: { payment: 'Enabled' },
    });

    // Act
    const error = await reconciliationError(run);

    // Assess
    expect(mappings.updates).toEqual([{ mappingId: 'uuid-payment', enabled: false }]);
    expect(error.failures).toEqual([expect.objectContaining({ consumer: 'gone', step: 'observe' })]);
    expect(error.failures[0]?.error).toBeInstanceOf(MappingNotFoundError);
    // The flag was read, so its metrics are still published.
    expect(metrics.published.find((o) => o.consumer === 'gone')).toMatchObject({
      paused: true,
      stateBefore: undefined,
    });
  });

  it('when the mapping reads back the opposite of what was set, it fails that consumer at verify', async () => {
    // Prepare
    const { mappings, run } = setUp({
      consumers: [consumer('payment')],
      flags: { payment: PAUSED },
      states: { payment: 'Enabled' },
    });
    mappings.stateAfterUpdate.set('uuid-payment', 'Enabled');

    // Act
    const error = await reconciliationError(run);

    // Assess
    const [failure] = error.failures;
    expect(failure?.step).toBe('verify');
    expect(failure?.error).toBeInstanceOf(MappingNotConvergedError);
    expect(failure?.error).toMatchObject({
      mappingId: 'uuid-payment',
      desiredEnabled: false,
      observedState: 'Enabled',
    });
    expect(error.outcomes[0]).toMatchObject({ changed: true, enabledAfter: true });
  });

  it('when the update is accepted but the mapping cannot be read back, it fails that consumer at verify', async () => {
    // Prepare: moto, for one, accepts an update of a mapping that does not exist.
    const { mappings, run } = setUp({
      consumers: [consumer('payment')],
      flags: { payment: PAUSED },
      states: { payment: 'Enabled' },
    });
    const origSet = mappings.setEnabled.bind(mappings);
    jest.spyOn(mappings, 'setEnabled').mockImplementation(async (id, enabled) => {
      await origSet(id, enabled);
      mappings.failGet.set(id, new MappingNotFoundError('deleted meanwhile', id));
    });

    // Act
    const error = await reconciliationError(run);

    // Assess
    expect(error.failures).toEqual([expect.objectContaining({ consumer: 'payment', step: 'verify' })]);
    expect(error.outcomes[0]).toMatchObject({ changed: true, enabledAfter: undefined });
  });

  it('when the flags cannot be read, it throws that error without touching mappings or publishing', async () => {
    // Prepare
    const { mappings, metrics } = setUp({ consumers: [consumer('payment')], states: { payment: 'Enabled' } });
    const denied = new Error('AccessDenied');
    const flags: FlagReader = { readAll: () => Promise.reject(denied) };

    // Act
    const run = reconcileMappings({
      consumers: [consumer('payment')],
      now: NOW,
      ports: { flags, mappings, metrics },
    });

    // Assess
    await expect(run).rejects.toBe(denied);
    expect(mappings.updates).toEqual([]);
    expect(metrics.published).toEqual([]);
  });

  it('when run, it reads every flag in one call', async () => {
    // Prepare
    const { flags, run } = setUp({
      consumers: [consumer('a'), consumer('b'), consumer('c')],
      states: { a: 'Enabled', b: 'Enabled', c: 'Enabled' },
    });

    // Act
    await run();

    // Assess
    expect(flags.reads).toEqual([
      ['/tenang/test/flags/pause/a', '/tenang/test/flags/pause/b', '/tenang/test/flags/pause/c'],
    ]);
  });

  describe('when an operator changes a flag while a run is reconciling it', () => {
    /** A flag whose stored value changes after the n-th read, as an operator's write would. */
    class RacingFlag implements FlagReader {
      public reads = 0;
      public constructor(
        private readonly name: string,
        private readonly values: readonly (string | undefined)[],
      ) {}
      public async readAll(names: readonly string[]): Promise<Map<string, string | undefined>> {
        const value = this.values[Math.min(this.reads, this.values.length - 1)];
        this.reads += 1;
        return new Map(names.map((n) => [n, n === this.name ? value : undefined]));
      }
    }

    it("when the pause lands (flag and mapping) between the run's read and its update, the run sends no stale enable", async () => {
      // Prepare: the run read the flag before the operator's pause ("not paused") and then found
      // the mapping already disabled by it; the fresh read before updating sees the pause.
      const c = consumer('notify');
      const flags = new RacingFlag(c.flagName, [NOT_PAUSED, PAUSED]);
      const mappings = new FakeMappings({ [c.mappingId]: 'Disabled' });
      const metrics = new FakeMetrics();

      // Act
      await reconcileMappings({ consumers: [c], now: NOW, ports: { flags, mappings, metrics } });

      // Assess
      expect(mappings.updates).toEqual([]);
      expect(mappings.finalEnabled(c.mappingId)).toBe(false);
      expect(metrics.published[0]).toMatchObject({ changed: false, paused: false });
    });

    it("when the pause lands just after the run's update, the run reads the flag again and follows it", async () => {
      // Prepare: stale read, fresh read still "not paused", then the operator's pause.
      const c = consumer('notify');
      const flags = new RacingFlag(c.flagName, [NOT_PAUSED, NOT_PAUSED, PAUSED]);
      const mappings = new FakeMappings({ [c.mappingId]: 'Disabled' });
      const metrics = new FakeMetrics();

      // Act
      await reconcileMappings({ consumers: [c], now: NOW, ports: { flags, mappings, metrics } });

      // Assess
      expect(mappings.updates).toEqual([
        { mappingId: c.mappingId, enabled: true },
        { mappingId: c.mappingId, enabled: false },
      ]);
      expect(mappings.finalEnabled(c.mappingId)).toBe(false);
    });

    it('when the flag keeps flipping, the run stops after a few rounds and leaves the rest to the next run', async () => {
      // Prepare
      const c = consumer('notify');
      const flags = new RacingFlag(c.flagName, [
        NOT_PAUSED,
        NOT_PAUSED,
        PAUSED,
        NOT_PAUSED,
        PAUSED,
        NOT_PAUSED,
      ]);
      const mappings = new FakeMappings({ [c.mappingId]: 'Disabled' });

      // Act
      await reconcileMappings({
        consumers: [c],
        now: NOW,
        ports: { flags, mappings, metrics: new FakeMetrics() },
      });

      // Assess
      expect(mappings.updates).toHaveLength(3);
    });
  });

  it('when given any flags and any mapping states, it leaves every mapping enabled exactly when its consumer is not paused', async () => {
    const flagValue = fc.oneof(
      fc.constant(undefined),
      fc.constant(PAUSED),
      fc.constant(PAUSED_OVERDUE),
      fc.constant(NOT_PAUSED),
      fc.constant('not json'),
      fc.constant('{"paused":1}'),
      fc.record({ paused: fc.boolean(), reason: fc.constant('r') }).map((f) => JSON.stringify(f)),
    );
    const mappingArb = fc.record({
      flag: flagValue,
      state: fc.constantFrom(...ESM_STATES),
      target: fc.boolean(),
    });

    await fc.assert(
      fc.asyncProperty(fc.array(mappingArb, { minLength: 1, maxLength: 8 }), async (specs) => {
        // Prepare
        const consumers = specs.map((_, i) => consumer(`c${i}`));
        const flags: Record<string, string> = {};
        specs.forEach((s, i) => {
          if (s.flag !== undefined) flags[`c${i}`] = s.flag;
        });
        const { mappings, run } = setUp({
          consumers,
          flags,
          states: Object.fromEntries(specs.map((s, i) => [`c${i}`, s.state])),
          targets: Object.fromEntries(specs.map((s, i) => [`c${i}`, s.target])),
        });

        // Act
        const outcomes = await run();

        // Assess
        for (const outcome of outcomes) {
          expect(mappings.finalEnabled(outcome.mappingId)).toBe(!outcome.paused);
          expect(outcome.error).toBeUndefined();
        }
        // Idempotent: a second run finds nothing to change.
        const updatesBefore = mappings.updates.length;
        await run();
        expect(mappings.updates.length).toBe(updatesBefore);
      }),
    );
  });
});
