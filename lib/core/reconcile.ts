/**
 * The flag reconciler (B4, X4): makes every event source mapping's Enabled equal to `!paused`
 * of its consumer's pause flag. Every run reconciles every consumer, so a run is idempotent and
 * a missed change event is repaired by the next scheduled run. A run never applies a flag value
 * that has changed since it was read: an operator's `tenang pause` (flag, then mapping) can land
 * between a run's read and its update, and the stale update would re-enable the consumer it just
 * paused until the next run. So a needed update is decided on a fresh read of that flag, and the
 * flag is read again after the update; if it changed meanwhile, the mapping follows it.
 */
import {
  planReconciliation,
  readPauseFlag,
  type MappingChange,
  type MappingObservation,
  type PauseState,
} from './flags';

/** Reads stored flag values. */
export interface FlagReader {
  /**
   * The stored value of each named flag, read fresh (no cache): undefined for a parameter that
   * does not exist. Throws only when the store itself cannot be read.
   */
  readAll(names: readonly string[]): Promise<Map<string, string | undefined>>;
}

/** An event source mapping's state as the Lambda API reports it. */
export interface MappingStatus {
  /** The API's `State`: Creating, Enabling, Enabled, Disabling, Disabled, Updating, Deleting. */
  readonly state: string;
  /**
   * Whether the mapping is enabled or on its way there (Enabling counts as enabled, Disabling as
   * disabled); undefined when the state does not say where it is going (Creating, Updating, …).
   */
  readonly enabled: boolean | undefined;
}

/** Reads and switches event source mappings by UUID. */
export interface MappingControl {
  /** The mapping's current status; throws MappingNotFoundError when it does not exist. */
  get(mappingId: string): Promise<MappingStatus>;
  /** Asks for Enabled = `enabled`; throws MappingBusyError while the mapping cannot be updated. */
  setEnabled(mappingId: string, enabled: boolean): Promise<void>;
}

/** Receives every consumer's outcome once per run, e.g. to publish Paused / PauseOverdue / FlagInvalid. */
export interface MetricsSink {
  /** Records one consumer's outcome. */
  publish(outcome: ConsumerReconciliation): void;
}

/** One consumer the reconciler controls. */
export interface ControlledMapping {
  readonly consumer: string;
  /** UUID of the consumer's event source mapping. */
  readonly mappingId: string;
  /** SSM name of its pause flag (`pauseFlagName(stage, consumer)`). */
  readonly flagName: string;
}

/** Input of {@link reconcileMappings}. */
export interface ReconcileInput {
  readonly consumers: readonly ControlledMapping[];
  /** The instant flags are judged at (pause expiry). */
  readonly now: Date;
  readonly ports: {
    readonly flags: FlagReader;
    readonly mappings: MappingControl;
    readonly metrics: MetricsSink;
  };
}

/** The step of a consumer's reconciliation that failed. */
export type ReconcileStep = 'observe' | 'update' | 'verify';

/** What one run did for one consumer. */
export interface ConsumerReconciliation {
  readonly consumer: string;
  readonly mappingId: string;
  /** Desired state: the mapping must be disabled. */
  readonly paused: boolean;
  readonly reason: string | undefined;
  /** Paused past the flag's `until`: still paused, but alarming (X4). */
  readonly overdue: boolean;
  /** Why the stored flag was rejected (and treated as not paused); undefined when valid or absent. */
  readonly invalid: string | undefined;
  /** The mapping's state before this run; undefined when it could not be read. */
  readonly stateBefore: string | undefined;
  /** An update was sent and accepted. */
  readonly changed: boolean;
  /** The last state read in this run (after the update, if one was sent); undefined when none could be read. */
  readonly stateAfter: string | undefined;
  /** Enabled (or enabling) according to `stateAfter`; undefined when unknown. */
  readonly enabledAfter: boolean | undefined;
  /** The step that failed, with its message; undefined when the consumer converged. */
  readonly error: { readonly step: ReconcileStep; readonly message: string } | undefined;
}

/** Base of the errors a MappingControl raises about one mapping. */
export class MappingError extends Error {
  override readonly name: string = 'MappingError';

  /** Creates the error for the mapping `mappingId`; pass the SDK error as `cause`. */
  constructor(
    message: string,
    public readonly mappingId: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The mapping does not exist (deleted, or the configured UUID is wrong). */
export class MappingNotFoundError extends MappingError {
  override readonly name: string = 'MappingNotFoundError';
}

/** The mapping is being changed by someone else and cannot be updated now; a later run will retry. */
export class MappingBusyError extends MappingError {
  override readonly name: string = 'MappingBusyError';
}

/** The update was accepted but the mapping reports the opposite state afterwards. */
export class MappingNotConvergedError extends MappingError {
  override readonly name: string = 'MappingNotConvergedError';

  /** Creates the error from what was asked and what was read back. */
  constructor(
    mappingId: string,
    public readonly desiredEnabled: boolean,
    public readonly observedState: string,
  ) {
    super(
      `mapping ${mappingId} reports state ${observedState} after being set to Enabled=${String(desiredEnabled)}`,
      mappingId,
    );
  }
}

/** One consumer's failure inside a {@link ReconciliationError}. */
export interface ConsumerFailure {
  readonly consumer: string;
  readonly mappingId: string;
  readonly step: ReconcileStep;
  readonly error: unknown;
}

/**
 * Some consumers could not be reconciled. Raised after every other consumer was reconciled and
 * every outcome was published, so the invocation fails (and is retried) without holding up the rest.
 */
export class ReconciliationError extends AggregateError {
  override readonly name: string = 'ReconciliationError';

  /** Creates the error from the failures and the whole run's outcomes. */
  constructor(
    public readonly failures: readonly ConsumerFailure[],
    public readonly outcomes: readonly ConsumerReconciliation[],
  ) {
    super(
      failures.map((f) => f.error),
      `Could not reconcile ${failures.length} of ${outcomes.length} consumer(s): ` +
        failures.map((f) => `${f.consumer} (${f.step}: ${messageOf(f.error)})`).join('; '),
    );
  }
}

/** How a Lambda ESM `State` relates to Enabled. */
export function mappingStatus(state: string): MappingStatus {
  switch (state) {
    case 'Enabled':
    case 'Enabling':
      return { state, enabled: true };
    case 'Disabled':
    case 'Disabling':
      return { state, enabled: false };
    default:
      return { state, enabled: undefined };
  }
}

type Observed =
  { readonly ok: true; readonly status: MappingStatus } | { readonly ok: false; readonly error: unknown };

interface Applied {
  readonly changed: boolean;
  readonly status: MappingStatus | undefined;
  readonly failure: { readonly step: ReconcileStep; readonly error: unknown } | undefined;
}

/**
 * Reads every pause flag, observes every mapping, updates the mappings whose Enabled differs from
 * `!paused`, and reads each updated mapping back. A failure for one consumer never stops the
 * others: all outcomes are published, then a single ReconciliationError is thrown.
 * Failing to read the flags at all throws at once: without them there is nothing to converge to.
 */
export async function reconcileMappings(input: ReconcileInput): Promise<ConsumerReconciliation[]> {
  const { consumers, now, ports } = input;
  const raw = await ports.flags.readAll(consumers.map((c) => c.flagName));
  const flags = new Map<string, PauseState>(
    consumers.map((c) => [c.consumer, readPauseFlag(raw.get(c.flagName), now)]),
  );

  const observed = new Map<string, Observed>(
    await Promise.all(
      consumers.map(async (c): Promise<[string, Observed]> => {
        try {
          return [c.consumer, { ok: true, status: await ports.mappings.get(c.mappingId) }];
        } catch (error) {
          return [c.consumer, { ok: false, error }];
        }
      }),
    ),
  );

  const observations: MappingObservation[] = [];
  for (const c of consumers) {
    const seen = observed.get(c.consumer);
    const flag = flags.get(c.consumer);
    if (seen === undefined || !seen.ok || flag === undefined) continue;
    // A state that does not say where it is going (Updating, Creating) counts as the wrong one,
    // so the desired value is sent: setting Enabled to what it already is changes nothing.
    const enabled = seen.status.enabled ?? flag.paused;
    observations.push({ consumer: c.consumer, mappingId: c.mappingId, enabled, flag });
  }
  const changes = new Map<string, MappingChange>(
    planReconciliation(observations).map((ch) => [ch.consumer, ch]),
  );

  const flagNames = new Map(consumers.map((c) => [c.consumer, c.flagName]));
  const applied = new Map<string, Applied>(
    await Promise.all(
      [...changes.values()].map(async (change): Promise<[string, Applied]> => [
        change.consumer,
        await applyFresh(
          ports,
          change,
          flagNames.get(change.consumer) ?? '',
          now,
          observed.get(change.consumer),
        ),
      ]),
    ),
  );

  const outcomes: ConsumerReconciliation[] = [];
  const failures: ConsumerFailure[] = [];
  for (const c of consumers) {
    const flag = flags.get(c.consumer) ?? readPauseFlag(undefined, now);
    const seen = observed.get(c.consumer);
    const before = seen?.ok === true ? seen.status : undefined;
    const done = applied.get(c.consumer);
    const after = done === undefined ? before : done.status;
    const failure = seen?.ok === false ? { step: 'observe' as const, error: seen.error } : done?.failure;
    if (failure !== undefined) failures.push({ consumer: c.consumer, mappingId: c.mappingId, ...failure });
    outcomes.push({
      consumer: c.consumer,
      mappingId: c.mappingId,
      paused: flag.paused,
      reason: flag.reason,
      overdue: flag.overdue,
      invalid: flag.invalid,
      stateBefore: before?.state,
      changed: done?.changed ?? false,
      stateAfter: after?.state,
      enabledAfter: after?.enabled,
      error: failure === undefined ? undefined : { step: failure.step, message: messageOf(failure.error) },
    });
  }

  for (const outcome of outcomes) ports.metrics.publish(outcome);
  if (failures.length > 0) throw new ReconciliationError(failures, outcomes);
  return outcomes;
}

/** Rounds of "read the flag, update, read the flag again" before a run leaves a racing flag to the next run. */
const FRESH_ROUNDS = 3;

/**
 * Applies a planned change on a fresh read of its flag, then reads the flag again: while it keeps
 * changing under the update (an operator racing this run), the mapping follows its latest value.
 * When the fresh read no longer asks for a change, nothing is sent.
 */
async function applyFresh(
  ports: ReconcileInput['ports'],
  change: MappingChange,
  flagName: string,
  now: Date,
  before: Observed | undefined,
): Promise<Applied> {
  const desired = async (): Promise<boolean> =>
    !readPauseFlag((await ports.flags.readAll([flagName])).get(flagName), now).paused;
  let enabled = await desired();
  if (enabled !== change.enabled && before?.ok === true && before.status.enabled === enabled) {
    return { changed: false, status: before.status, failure: undefined };
  }
  let result: Applied = { changed: false, status: undefined, failure: undefined };
  for (let round = 1; round <= FRESH_ROUNDS; round += 1) {
    const outcome = await applyChange(ports.mappings, { ...change, enabled }, before);
    result = { ...outcome, changed: result.changed || outcome.changed };
    if (outcome.failure !== undefined) return result;
    const latest = await desired();
    if (latest === enabled) return result;
    enabled = latest;
  }
  return result;
}

/** Sends one update and reads the mapping back. */
async function applyChange(
  mappings: MappingControl,
  change: MappingChange,
  before: Observed | undefined,
): Promise<Applied> {
  try {
    await mappings.setEnabled(change.mappingId, change.enabled);
  } catch (error) {
    // Rejected: the state read before the update is the last one known.
    return {
      changed: false,
      status: before?.ok === true ? before.status : undefined,
      failure: { step: 'update', error },
    };
  }
  let status: MappingStatus;
  try {
    status = await mappings.get(change.mappingId);
  } catch (error) {
    return { changed: true, status: undefined, failure: { step: 'verify', error } };
  }
  // Still in a transition without a known target (Updating): our update is being applied; the
  // next run reads it again. Only the opposite of what was asked is a failure.
  if (status.enabled === !change.enabled) {
    return {
      changed: true,
      status,
      failure: {
        step: 'verify',
        error: new MappingNotConvergedError(change.mappingId, change.enabled, status.state),
      },
    };
  }
  return { changed: true, status, failure: undefined };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
