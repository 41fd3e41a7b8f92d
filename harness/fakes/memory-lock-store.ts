/** LockStore in memory, with the DynamoDB adapter's conditions, for unit and property tests. */
import type {
  AcquireResult,
  LockHolder,
  LockRecord,
  LockReleaseResult,
  LockStore,
} from '../../lib/core/lease-lock';

/** An in-memory LockStore; every method is atomic (JavaScript runs it without interleaving). */
export class InMemoryLockStore implements LockStore {
  private readonly records = new Map<string, { fence: number; holder: LockHolder | undefined }>();

  public tryAcquire(request: {
    resource: string;
    ownerToken: string;
    nowMs: number;
    expiresAtMs: number;
  }): Promise<AcquireResult> {
    const record = this.records.get(request.resource);
    if (record?.holder !== undefined && record.holder.expiresAtMs >= request.nowMs) {
      return Promise.resolve({ acquired: false, holder: record.holder });
    }
    // A record that does not exist starts from the clock, as the DynamoDB adapter does.
    const fence = (record?.fence ?? request.nowMs) + 1;
    this.records.set(request.resource, {
      fence,
      holder: {
        ownerToken: request.ownerToken,
        fence,
        acquiredAtMs: request.nowMs,
        expiresAtMs: request.expiresAtMs,
      },
    });
    return Promise.resolve({ acquired: true, fence });
  }

  public extend(request: {
    resource: string;
    ownerToken: string;
    fence: number;
    nowMs: number;
    expiresAtMs: number;
  }): Promise<boolean> {
    const record = this.records.get(request.resource);
    const holder = record?.holder;
    if (
      record === undefined ||
      holder === undefined ||
      holder.ownerToken !== request.ownerToken ||
      holder.fence !== request.fence ||
      holder.expiresAtMs < request.nowMs
    ) {
      return Promise.resolve(false);
    }
    record.holder = { ...holder, expiresAtMs: request.expiresAtMs };
    return Promise.resolve(true);
  }

  public release(request: { resource: string; ownerToken: string }): Promise<LockReleaseResult> {
    return Promise.resolve(this.clearIf(request.resource, (h) => h.ownerToken === request.ownerToken));
  }

  public releaseExpired(request: {
    resource: string;
    ownerToken: string;
    nowMs: number;
  }): Promise<LockReleaseResult> {
    return Promise.resolve(
      this.clearIf(
        request.resource,
        (h) => h.ownerToken === request.ownerToken && h.expiresAtMs < request.nowMs,
      ),
    );
  }

  public get(resource: string): Promise<LockRecord | undefined> {
    const record = this.records.get(resource);
    return Promise.resolve(record === undefined ? undefined : { resource, ...record });
  }

  public listHeld(): Promise<readonly LockRecord[]> {
    return Promise.resolve(
      [...this.records.entries()]
        .filter(([, r]) => r.holder !== undefined)
        .map(([resource, r]) => ({ resource, ...r })),
    );
  }

  /**
   * The lock side of DynamoDbLockStore.writeWithoutLease at `nowMs`: busy under a live lease,
   * 'ahead' when the fence is not below `nowMs`, else free, with `advance` to set the fence to
   * `nowMs`. Synchronous, so a fake store checks its own condition in between and stays atomic.
   */
  public unleased(
    resource: string,
    nowMs: number,
  ):
    | { readonly kind: 'free'; readonly advance: () => void }
    | { readonly kind: 'busy'; readonly holder: LockHolder }
    | { readonly kind: 'ahead'; readonly fence: number } {
    const record = this.records.get(resource);
    if (record?.holder !== undefined && record.holder.expiresAtMs >= nowMs)
      return { kind: 'busy', holder: record.holder };
    if (record !== undefined && record.fence >= nowMs) return { kind: 'ahead', fence: record.fence };
    return {
      kind: 'free',
      // An expired holder's fields stay, as the DynamoDB adapter leaves them.
      advance: () => this.records.set(resource, { fence: nowMs, holder: record?.holder }),
    };
  }

  /** Drops a record as a TTL sweep would (tests of fence continuity). */
  public sweep(resource: string): void {
    this.records.delete(resource);
  }

  private clearIf(resource: string, owns: (holder: LockHolder) => boolean): LockReleaseResult {
    const record = this.records.get(resource);
    if (record?.holder === undefined || !owns(record.holder)) {
      return { released: false, holder: record?.holder };
    }
    record.holder = undefined;
    return { released: true };
  }
}
