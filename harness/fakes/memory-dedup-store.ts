/** DedupStore in memory, with the DynamoDB adapter's expiry and status rules, for unit tests. */
import type { ClaimResult, Clock, DedupStore } from '../../lib/core/ports';

/** One dedup record: its status and its expiry in epoch seconds. */
export interface DedupRecord {
  readonly status: 'in-flight' | 'done';
  readonly expiration: number;
  /** Who claimed it, when the claim named an owner. */
  readonly owner?: string;
}

/** An in-memory dedup store; an expired record counts as absent, as in DynamoDbDedupStore. */
export class InMemoryDedupStore implements DedupStore {
  /** Records by key. */
  public readonly claims = new Map<string, DedupRecord>();

  public constructor(private readonly clock: Clock = () => new Date()) {}

  public claim(key: string, ttlSeconds: number, owner?: string): Promise<ClaimResult> {
    const now = this.nowEpoch();
    const held = this.claims.get(key);
    const ownTakeOver = owner !== undefined && held?.status === 'in-flight' && held.owner === owner;
    if (held !== undefined && held.expiration >= now && !ownTakeOver) return Promise.resolve(held.status);
    this.claims.set(key, {
      status: 'in-flight',
      expiration: now + ttlSeconds,
      ...(owner === undefined ? {} : { owner }),
    });
    return Promise.resolve('claimed');
  }

  public confirm(key: string, ttlSeconds: number): Promise<void> {
    this.claims.set(key, { status: 'done', expiration: this.nowEpoch() + ttlSeconds });
    return Promise.resolve();
  }

  public release(key: string): Promise<void> {
    this.claims.delete(key);
    return Promise.resolve();
  }

  private nowEpoch(): number {
    return Math.floor(this.clock().getTime() / 1000);
  }
}
