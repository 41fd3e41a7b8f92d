/**
 * payment.capture (D1, I2–I4): charge an order exactly once in effect. Three mechanisms, none
 * trusted alone: the idempotency record around this function (the consumer's), the order's state
 * guard (a duplicate that finds the order PAID makes no provider call), and the provider's own
 * idempotency key. The PAID transition is not written here but staged: the consumer commits it in
 * the same transaction that completes the idempotency record, so no crash can separate them.
 */
import type { JobEnvelope } from './envelope';
import { PermanentError } from './errors';
import type { Order } from './order';
import type { Clock, OrderStore } from './ports';
import { planTransition, statesOnlyAfter, type OrderState } from './state-machine';

/** The business idempotency key of a capture (I1): one per payment, never the message id. */
export function paymentCaptureKey(paymentId: string): string {
  return `payment:${paymentId}:capture`;
}

/** What a capture asks the provider for. */
export interface ChargeRequest {
  readonly orderId: string;
  readonly paymentId: string;
  readonly amountMinor: number;
  readonly currency: string;
}

/** The provider's answer. */
export interface Charge {
  readonly chargeId: string;
  /** The provider answered from its idempotency store: the charge was made by an earlier call. */
  readonly replayed: boolean;
}

/** The external payment provider (I3). */
export interface PaymentProvider {
  /**
   * Captures `request`; a repeated `idempotencyKey` returns the first charge and charges nothing.
   * @throws TransientError (timeouts, 5xx) or PermanentError (refused) subclasses.
   */
  capture(request: ChargeRequest, opts: { idempotencyKey: string; correlationId: string }): Promise<Charge>;
}

/** A state transition that commits together with the job's completion record. */
export interface StagedTransition {
  readonly orderId: string;
  readonly from: OrderState;
  readonly to: OrderState;
  /** The version read; the write is conditional on it (optimistic concurrency). */
  readonly expectedVersion: number;
  readonly changes: Partial<Order>;
  readonly at: Date;
}

/** Points around the side effect where the chaos suite crashes the consumer (I4). */
export type SideEffectPoint = 'before-side-effect' | 'after-side-effect';

/** What capturePayment needs. */
export interface PaymentPorts {
  readonly orders: Pick<OrderStore, 'get'>;
  readonly provider: PaymentProvider;
  /** Stages the transition; it is written only when the job completes, atomically with it. */
  readonly stageTransition: (transition: StagedTransition) => void;
  /** Called at each side-effect point; a no-op in production. */
  readonly crash: (point: SideEffectPoint) => void;
  readonly clock: Clock;
}

/** What a capture did; stored in the idempotency record and returned to duplicates. */
export type CaptureResult =
  | {
      readonly outcome: 'captured';
      readonly orderId: string;
      readonly paymentId: string;
      readonly chargeId: string;
      /** The order's version once the staged transition commits. */
      readonly orderVersion: number;
    }
  | { readonly outcome: 'duplicate_ignored'; readonly orderId: string; readonly state: OrderState };

/** The job names an order that does not exist. */
export class OrderNotFoundError extends PermanentError {}

/** The job's amount or currency differ from the order's: charging it would take the wrong sum. */
export class PaymentMismatchError extends PermanentError {}

/** States that prove PENDING → PAID happened already. */
const PAID_ALREADY: readonly OrderState[] = statesOnlyAfter('PENDING', 'PAID');

/**
 * Captures the payment of `job` and stages PENDING → PAID.
 * @throws OrderNotFoundError, PaymentMismatchError, IllegalTransitionError (permanent), or the
 * provider's errors.
 */
export async function capturePayment(
  job: JobEnvelope<'payment.capture'>,
  ports: PaymentPorts,
): Promise<CaptureResult> {
  const { orderId, paymentId, amountMinor, currency } = job.payload;
  const order = await ports.orders.get(orderId);
  if (order === undefined) throw new OrderNotFoundError(`order ${orderId} does not exist`);

  const plan = planTransition(order.state, 'PAID', PAID_ALREADY);
  if (plan.kind === 'duplicate_ignored')
    return { outcome: 'duplicate_ignored', orderId, state: plan.current };

  const problems: string[] = [];
  if (order.amountMinor !== amountMinor) {
    problems.push(`amountMinor: the job says ${amountMinor}, the order ${order.amountMinor}`);
  }
  if (order.currency !== currency)
    problems.push(`currency: the job says ${currency}, the order ${order.currency}`);
  if (problems.length > 0) {
    throw new PaymentMismatchError(
      `payment ${paymentId} does not match order ${orderId}: ${problems.join('; ')}`,
    );
  }

  ports.crash('before-side-effect');
  const charge = await ports.provider.capture(
    { orderId, paymentId, amountMinor, currency },
    { idempotencyKey: paymentCaptureKey(paymentId), correlationId: job.correlationId },
  );
  ports.crash('after-side-effect');

  ports.stageTransition({
    orderId,
    from: plan.from,
    to: plan.to,
    expectedVersion: order.version,
    changes: { paymentId, chargeId: charge.chargeId },
    at: ports.clock(),
  });
  return {
    outcome: 'captured',
    orderId,
    paymentId,
    chargeId: charge.chargeId,
    orderVersion: order.version + 1,
  };
}
