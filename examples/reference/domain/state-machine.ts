/**
 * Order states and the transitions allowed between them (I2). Every write of a state is a
 * conditional write from the expected previous state, so a duplicate finds its transition done.
 */
import { IllegalTransitionError, TransitionAlreadyDoneError } from 'tenang/runtime';

/** States of an order. */
export const ORDER_STATES = ['PENDING', 'PAID', 'RESERVED', 'PAYMENT_FAILED', 'CANCELLED'] as const;
export type OrderState = (typeof ORDER_STATES)[number];

/** Allowed transitions: from → to. */
export const ORDER_TRANSITIONS: Readonly<Record<OrderState, readonly OrderState[]>> = {
  PENDING: ['PAID', 'PAYMENT_FAILED', 'CANCELLED'],
  PAID: ['RESERVED', 'CANCELLED'],
  RESERVED: ['CANCELLED'],
  PAYMENT_FAILED: ['PENDING', 'CANCELLED'],
  CANCELLED: [],
};

/** Whether `from → to` is allowed. */
export function canTransition(from: OrderState, to: OrderState): boolean {
  return ORDER_TRANSITIONS[from].includes(to);
}

/** States reachable from `state` by allowed transitions (excluding itself unless a cycle returns). */
export function reachableFrom(state: OrderState): ReadonlySet<OrderState> {
  const seen = new Set<OrderState>();
  const stack: OrderState[] = [...ORDER_TRANSITIONS[state]];
  while (stack.length > 0) {
    const next = stack.pop() as OrderState;
    if (seen.has(next)) continue;
    seen.add(next);
    stack.push(...ORDER_TRANSITIONS[next]);
  }
  return seen;
}

/** The outcome of planning a transition for a job. */
export type TransitionPlan =
  | { readonly kind: 'apply'; readonly from: OrderState; readonly to: OrderState }
  | { readonly kind: 'duplicate_ignored'; readonly current: OrderState };

/**
 * Plans `to` for an entity currently in `current`. If the entity already is in `to` or past it
 * (a state that can only be reached through `to`), the job is a duplicate: no side effect.
 * @throws IllegalTransitionError when `to` can never follow `current`.
 */
export function planTransition(
  current: OrderState,
  to: OrderState,
  after: readonly OrderState[] = [],
): TransitionPlan {
  if (current === to || after.includes(current)) return { kind: 'duplicate_ignored', current };
  if (canTransition(current, to)) return { kind: 'apply', from: current, to };
  throw new IllegalTransitionError(`order cannot go from ${current} to ${to}`);
}

/** Turns a failed conditional write into the domain's meaning: done already, or illegal. */
export function explainRejectedTransition(
  current: OrderState,
  to: OrderState,
  after: readonly OrderState[],
  options?: { cause?: unknown },
): Error {
  if (current === to || after.includes(current)) {
    return new TransitionAlreadyDoneError(`order is already ${current}; ${to} was done before`, options);
  }
  return new IllegalTransitionError(`order is ${current}; it cannot go to ${to}`, options);
}

/**
 * States that can only be reached through `to` when starting from `from`: finding the entity in
 * one of them means `from → to` happened already. PENDING → PAID gives [RESERVED] (CANCELLED is
 * also reachable without paying, so it proves nothing).
 */
export function statesOnlyAfter(from: OrderState, to: OrderState): OrderState[] {
  const withoutTo = new Set<OrderState>();
  const stack: OrderState[] = ORDER_TRANSITIONS[from].filter((s) => s !== to);
  while (stack.length > 0) {
    const next = stack.pop() as OrderState;
    if (withoutTo.has(next)) continue;
    withoutTo.add(next);
    stack.push(...ORDER_TRANSITIONS[next].filter((s) => s !== to));
  }
  const afterTo = reachableFrom(to);
  return ORDER_STATES.filter((s) => s !== from && s !== to && afterTo.has(s) && !withoutTo.has(s));
}
