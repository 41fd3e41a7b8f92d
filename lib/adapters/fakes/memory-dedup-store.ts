/** DedupStore in memory, with the DynamoDB adapter's expiry rule, for unit tests. */
import type { ConfirmableDedupStore } from '../../core/notification';
import type { Clock } from '../../core/ports';

/** An in-memory dedup store; an expired claim counts as absent, as in DynamoDbDedupStore. */
export class InMemoryDedupStore implements ConfirmableDedupStore {
  /** Claims by key: expiry in epoch seconds. */
  public readonly claims = new Map<string, number>();

  public constructor(private readonly clock: Clock = () => new Date()) {}

  public claim(key: string, ttlSeconds: number): Promise<'claimed' | 'duplicate'> {
    const now = this.nowEpoch();
    const expiry = this.claims.get(key);
    if (expiry !== undefined && expiry >= now) return Promise.resolve('duplicate');
    this.claims.set(key, now + ttlSeconds);
    return Promise.resolve('claimed');
  }

  public confirm(key: string, ttlSeconds: number): Promise<void> {
    this.claims.set(key, this.nowEpoch() + ttlSeconds);
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
