/**
 * Ports the core needs; adapters implement them (lib/adapters/aws, redis, http, fakes).
 * No port module imports an adapter.
 */
import type { Order } from './order';
import type { OrderState } from './state-machine';

/** Time. */
export type Clock = () => Date;

/** Orders: the source of truth. */
export interface OrderStore {
  /** Creates an order; false when one with this id exists. */
  create(order: Order): Promise<boolean>;
  get(orderId: string): Promise<Order | undefined>;
  /**
   * Moves `orderId` from `from` to `to` with version + 1, conditionally on the state and the
   * version read (optimistic concurrency).
   * @throws TransitionAlreadyDoneError / IllegalTransitionError when the condition fails.
   */
  transition(
    orderId: string,
    from: OrderState,
    to: OrderState,
    expectedVersion: number,
    changes?: Partial<Order>,
  ): Promise<Order>;
}

/** Producer-side and consumer-side dedup records (Q1), with a TTL. */
export interface DedupStore {
  /** Claims `key` for `ttlSeconds`: 'claimed' the first time, 'duplicate' after. */
  claim(key: string, ttlSeconds: number): Promise<'claimed' | 'duplicate'>;
  /** Gives a claim back (the work it guarded failed and must be retried). */
  release(key: string): Promise<void>;
}
