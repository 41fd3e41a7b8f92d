/** OrderStore in memory, with DynamoDbOrderStore's conditions, for unit tests. */
import { ConcurrentUpdateError, IllegalTransitionError } from '../../lib/core/errors';
import type { Order } from '../../examples/reference/domain/order';
import type { Clock } from '../../lib/core/ports';
import type { OrderStore } from '../../examples/reference/domain/ports';
import {
  explainRejectedTransition,
  statesOnlyAfter,
  type OrderState,
} from '../../examples/reference/domain/state-machine';

/** An in-memory OrderStore; every method is atomic (JavaScript runs it without interleaving). */
export class InMemoryOrderStore implements OrderStore {
  /** Orders by id, as stored. */
  public readonly orders = new Map<string, Order>();

  public constructor(private readonly clock: Clock = () => new Date()) {}

  public create(order: Order): Promise<boolean> {
    if (this.orders.has(order.orderId)) return Promise.resolve(false);
    this.orders.set(order.orderId, { ...order });
    return Promise.resolve(true);
  }

  public get(orderId: string): Promise<Order | undefined> {
    const order = this.orders.get(orderId);
    return Promise.resolve(order === undefined ? undefined : { ...order });
  }

  public transition(
    orderId: string,
    from: OrderState,
    to: OrderState,
    expectedVersion: number,
    changes: Partial<Order> = {},
  ): Promise<Order> {
    const current = this.orders.get(orderId);
    if (current === undefined || current.state !== from || current.version !== expectedVersion) {
      return Promise.reject(rejection(orderId, current, from, to));
    }
    const next: Order = {
      ...current,
      ...changes,
      orderId,
      state: to,
      version: expectedVersion + 1,
      createdAt: current.createdAt,
      updatedAt: this.clock().toISOString(),
    };
    this.orders.set(orderId, next);
    return Promise.resolve({ ...next });
  }
}

function rejection(orderId: string, current: Order | undefined, from: OrderState, to: OrderState): Error {
  if (current === undefined)
    return new IllegalTransitionError(`order ${orderId} does not exist; it cannot go to ${to}`);
  if (current.state === from)
    return new ConcurrentUpdateError(`order ${orderId} changed while it was processed`);
  return explainRejectedTransition(current.state, to, statesOnlyAfter(from, to));
}
