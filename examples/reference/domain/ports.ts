/** The reference app's ports: its orders, the source of truth (DynamoDbOrderStore, the fakes). */
import type { Order } from './order';
import type { OrderState } from './state-machine';

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
