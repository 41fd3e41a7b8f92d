/**
 * The lease-lock protocol (L1–L4, D5). A lease is held by a random owner token until it
 * expires; only that owner extends or releases it. Every acquisition bumps the resource's
 * fencing token, and the protected resource's conditional write refuses a token older than the
 * newest it has accepted (L3): the lock keeps contention low, the fence keeps the data right.
 *
 * Fencing semantics, precisely: once the resource has accepted a write carrying fence `t`, it
 * never accepts one carrying a fence `≤ t` (`attribute_not_exists(fence) OR fence < :t`). A holder
 * whose lease expired can still write until a newer holder has written — which is harmless, the
 * newer holder's write comes after it — but never after.
 *
 * A critical section that is a single conditional write may skip the lease: in one atomic step,
 * the lock's fence advances to the clock (epoch ms) on condition that no lease is live and the
 * fence is below it, and the write carries that fence (DynamoDbLockStore.writeWithoutLease). The
 * semantics above still hold: fences issued before are below it, later acquires count on from it.
 */
import { LockBusyError, TransientError } from './errors';
import type { Clock } from './ports';

/** A held lease. */
export interface Lease {
  readonly resource: string;
  /** Random per acquisition: proves ownership on extend and release. */
  readonly ownerToken: string;
  /** Fencing token: strictly increasing per resource; the protected write checks it. */
  readonly fence: number;
  readonly acquiredAt: Date;
  readonly expiresAt: Date;
}

/** Who holds a resource, as the store last saw it. */
export interface LockHolder {
  readonly ownerToken: string;
  readonly fence: number;
  /** Epoch milliseconds. */
  readonly acquiredAtMs: number;
  /** Epoch milliseconds. */
  readonly expiresAtMs: number;
}

/** A lock record as stored; `holder` is undefined when the lease fields are clear. */
export interface LockRecord {
  readonly resource: string;
  /** The newest fence issued for the resource (kept across leases). */
  readonly fence: number;
  readonly holder: LockHolder | undefined;
}

/** Result of an acquisition attempt. */
export type AcquireResult =
  | { readonly acquired: true; readonly fence: number }
  | { readonly acquired: false; readonly holder: LockHolder | undefined };

/** Result of a release attempt; `holder` is who holds the resource instead, if anyone. */
export type LockReleaseResult =
  { readonly released: true } | { readonly released: false; readonly holder: LockHolder | undefined };

/**
 * Storage of lease records (one per resource; the record and its fence counter outlive leases).
 * Every method is one atomic conditional operation.
 */
export interface LockStore {
  /**
   * Takes the lease when it is clear or expired before `nowMs`, and bumps the fence: to
   * `storedFence + 1`, or to `nowMs + 1` for a record that does not exist (so a record swept
   * away by TTL never restarts below fences the resource has already accepted).
   */
  tryAcquire(request: {
    readonly resource: string;
    readonly ownerToken: string;
    readonly nowMs: number;
    readonly expiresAtMs: number;
  }): Promise<AcquireResult>;
  /** Moves the expiry of a live lease of `ownerToken` (same fence, not expired at `nowMs`); false otherwise. */
  extend(request: {
    readonly resource: string;
    readonly ownerToken: string;
    readonly fence: number;
    readonly nowMs: number;
    readonly expiresAtMs: number;
  }): Promise<boolean>;
  /** Clears the lease fields when `ownerToken` owns the lease (expired or not); keeps the fence. */
  release(request: { readonly resource: string; readonly ownerToken: string }): Promise<LockReleaseResult>;
  /**
   * Clears the lease of `ownerToken` only if it expired before `nowMs`: an orphan, whose owner
   * can no longer write past a newer holder (L4).
   */
  releaseExpired(request: {
    readonly resource: string;
    readonly ownerToken: string;
    readonly nowMs: number;
  }): Promise<LockReleaseResult>;
  /** The record of one resource, or undefined when it was never locked. */
  get(resource: string): Promise<LockRecord | undefined>;
  /** Every record whose lease fields are set (live or orphaned). */
  listHeld(): Promise<readonly LockRecord[]>;
}

/** A source of owner tokens: random, unguessable, never reused. */
export type TokenSource = () => string;

/** Something worth telling an operator about: a refused or failed release, or a lost lease. */
export type LockEvent =
  | {
      readonly kind: 'release-refused';
      readonly resource: string;
      readonly ownerToken: string;
      readonly holder: LockHolder | undefined;
    }
  | {
      readonly kind: 'lease-lost';
      readonly resource: string;
      readonly ownerToken: string;
      readonly fence: number;
    }
  | {
      readonly kind: 'release-failed';
      readonly resource: string;
      readonly ownerToken: string;
      readonly error: unknown;
    };

/** The lease is gone (expired, or taken after expiry): stop, and retry with a new lease. Transient. */
export class LeaseLostError extends TransientError {}

/** A busy lock, with who holds it and for how long; transient (retry later, never to the DLQ). */
export class LockHeldError extends LockBusyError {
  public constructor(
    public readonly resource: string,
    public readonly holder: LockHolder | undefined,
    /** How long until the holder's lease expires, ms (0 when unknown). */
    public readonly retryAfterMs: number,
  ) {
    super(`lock on ${resource} is held${holder === undefined ? '' : ` (fence ${holder.fence})`}`);
  }
}

/** Options of LeaseLock. */
export interface LeaseLockOptions {
  readonly store: LockStore;
  readonly clock: Clock;
  readonly newToken: TokenSource;
  /** Receives refused or failed releases and lost leases. @default - ignored */
  readonly report?: (event: LockEvent) => void;
}

/** Whether the resource accepts a write fenced with `fence`, given the newest fence it accepted. */
export function fenceAccepts(acceptedFence: number | undefined, fence: number): boolean {
  return acceptedFence === undefined || acceptedFence < fence;
}

/** Whether a held record is an orphan: its lease expired without a release. */
export function isOrphan(record: LockRecord, now: Date): boolean {
  return record.holder !== undefined && record.holder.expiresAtMs < now.getTime();
}

/** The lease-lock protocol over a LockStore. */
export class LeaseLock {
  private readonly report: (event: LockEvent) => void;

  public constructor(private readonly opts: LeaseLockOptions) {
    this.report = opts.report ?? ((): void => undefined);
  }

  /**
   * Acquires `resource` for `ttlMs`.
   * @throws LockHeldError (a LockBusyError, transient) when someone else holds a live lease.
   */
  public async acquire(resource: string, ttlMs: number): Promise<Lease> {
    assertTtl(ttlMs);
    const now = this.opts.clock();
    const ownerToken = this.opts.newToken();
    const expiresAt = new Date(now.getTime() + ttlMs);
    const result = await this.opts.store.tryAcquire({
      resource,
      ownerToken,
      nowMs: now.getTime(),
      expiresAtMs: expiresAt.getTime(),
    });
    if (!result.acquired) {
      const retryAfterMs =
        result.holder === undefined ? 0 : Math.max(0, result.holder.expiresAtMs - now.getTime());
      throw new LockHeldError(resource, result.holder, retryAfterMs);
    }
    return { resource, ownerToken, fence: result.fence, acquiredAt: now, expiresAt };
  }

  /**
   * Extends a live lease by `ttlMs` from now; the fence stays.
   * @throws LeaseLostError when the lease expired or is no longer this owner's.
   */
  public async extend(lease: Lease, ttlMs: number): Promise<Lease> {
    assertTtl(ttlMs);
    const now = this.opts.clock();
    const expiresAt = new Date(now.getTime() + ttlMs);
    const extended = await this.opts.store.extend({
      resource: lease.resource,
      ownerToken: lease.ownerToken,
      fence: lease.fence,
      nowMs: now.getTime(),
      expiresAtMs: expiresAt.getTime(),
    });
    if (!extended) {
      this.report({
        kind: 'lease-lost',
        resource: lease.resource,
        ownerToken: lease.ownerToken,
        fence: lease.fence,
      });
      throw new LeaseLostError(
        `lease on ${lease.resource} (fence ${lease.fence}) was lost before it could be extended`,
      );
    }
    return { ...lease, expiresAt };
  }

  /** Releases `lease` if its owner still holds it; a refused release is reported and returned, never thrown. */
  public async release(lease: Lease): Promise<LockReleaseResult> {
    const result = await this.opts.store.release({ resource: lease.resource, ownerToken: lease.ownerToken });
    if (!result.released) {
      this.report({
        kind: 'release-refused',
        resource: lease.resource,
        ownerToken: lease.ownerToken,
        holder: result.holder,
      });
    }
    return result;
  }

  /**
   * Releases like `release`, but a store failure is reported instead of thrown: the lease then
   * expires by itself, and an error from the protected work is never masked by one from here.
   */
  public async releaseQuietly(lease: Lease): Promise<LockReleaseResult> {
    try {
      return await this.release(lease);
    } catch (error) {
      this.report({ kind: 'release-failed', resource: lease.resource, ownerToken: lease.ownerToken, error });
      return { released: false, holder: undefined };
    }
  }

  /** Every orphan: held records whose lease expired without a release (L4). */
  public async listOrphans(): Promise<readonly LockRecord[]> {
    const now = this.opts.clock();
    return (await this.opts.store.listHeld()).filter((record) => isOrphan(record, now));
  }

  /**
   * Releases an orphan after verifying it has no live owner: refused when the lease is live or
   * owned by someone other than `ownerToken` (the owner the operator saw when listing).
   */
  public async releaseOrphan(resource: string, ownerToken: string): Promise<LockReleaseResult> {
    const result = await this.opts.store.releaseExpired({
      resource,
      ownerToken,
      nowMs: this.opts.clock().getTime(),
    });
    if (!result.released)
      this.report({ kind: 'release-refused', resource, ownerToken, holder: result.holder });
    return result;
  }
}

/** Schedules a repeated callback; returns its cancel function. Injected so tests control time. */
export type Every = (intervalMs: number, tick: () => void) => () => void;

/** The timer-based Every (intervals are unref'd: a heartbeat never keeps a process alive). */
export const everyInterval: Every = (intervalMs, tick) => {
  const handle = setInterval(tick, intervalMs);
  handle.unref();
  return () => clearInterval(handle);
};

/** What the protected work sees while it runs. */
export interface HeldLease {
  /** The lease as last extended; its fence never changes. */
  current(): Lease;
  /** Aborted when the heartbeat finds the lease lost: stop before the next write. */
  readonly signal: AbortSignal;
}

/** Options of withLease. */
export interface WithLeaseOptions {
  readonly ttlMs: number;
  /** Extend every this many ms while the work runs (D5). @default ttlMs / 3 */
  readonly heartbeatMs?: number;
  /** @default everyInterval */
  readonly every?: Every;
}

/** What withLease reports besides the work's result. */
export interface LeaseOutcome<T> {
  readonly value: T;
  /** The lease as last extended. */
  readonly lease: Lease;
  /** Whether the heartbeat lost the lease while the work ran (its fenced writes still decide). */
  readonly lost: boolean;
  /** The release; `released: false` when refused or when the store could not be reached. */
  readonly release: LockReleaseResult;
}

/**
 * Runs `work` under a lease on `resource`: acquires, extends the lease on a heartbeat while the
 * work runs, and always releases in `finally` (L1, L2, D5). The work should stop before its
 * next write once `signal` is aborted; its fenced writes are what keep the data right.
 * @throws LockHeldError when the lock is busy (nothing runs), or whatever `work` throws.
 */
export async function withLease<T>(
  lock: LeaseLock,
  resource: string,
  opts: WithLeaseOptions,
  work: (held: HeldLease) => Promise<T>,
): Promise<LeaseOutcome<T>> {
  let current = await lock.acquire(resource, opts.ttlMs);
  const controller = new AbortController();
  let extending: Promise<void> = Promise.resolve();
  const heartbeatMs = opts.heartbeatMs ?? Math.max(1, Math.floor(opts.ttlMs / 3));
  const cancel = (opts.every ?? everyInterval)(heartbeatMs, () => {
    // Extensions run one after another: a slow store never has two in flight.
    extending = extending.then(async () => {
      if (controller.signal.aborted) return;
      try {
        current = await lock.extend(current, opts.ttlMs);
      } catch (error) {
        // Lost, or the store is unreachable: either way the lease can no longer be trusted.
        controller.abort(error);
      }
    });
  });
  let release: LockReleaseResult = { released: false, holder: undefined };
  let value: T;
  try {
    value = await work({ current: () => current, signal: controller.signal });
  } finally {
    cancel();
    await extending;
    release = await lock.releaseQuietly(current);
  }
  return { value, lease: current, lost: controller.signal.aborted, release };
}

function assertTtl(ttlMs: number): void {
  if (!Number.isInteger(ttlMs) || ttlMs < 1)
    throw new RangeError(`ttlMs must be a positive integer, got ${ttlMs}`);
}
