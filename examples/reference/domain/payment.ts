/**
 * payment.capture (D1, I2–I4): charge an order exactly once in effect. Three mechanisms, none
 * trusted alone: the idempotency record around the capture (the consumer's), the order's guard
 * (PENDING, with the job's amount and currency), and the provider's own idempotency key.
 *
 * The guard is not read here: the consumer checks it in the same transaction that claims the job
 * (writes the INPROGRESS record), so nothing is charged unless it held, and a duplicate that finds
 * the order PAID costs one call and no provider call. The PAID transition is not written here
 * either but staged: the consumer commits it in the same transaction that completes the
 * idempotency record, so no crash can separate them.
 */
import {
  type JobEnvelope,
  ConcurrentUpdateError,
  IllegalTransitionError,
  PermanentError,
  TransitionAlreadyDoneError,
  type Clock,
} from 'tenang/runtime';
import type { PaymentCapturePayload } from './payloads';
import type { Order } from './order';
import { statesOnlyAfter, type OrderState } from './state-machine';

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

/** What must hold of the order before a capture charges anything. */
export interface CaptureGuard {
  readonly orderId: string;
  /** The state a capture charges from. */
  readonly state: OrderState;
  readonly amountMinor: number;
  readonly currency: string;
}

/** A state transition that commits together with the job's completion record. */
export interface StagedTransition {
  readonly orderId: string;
  readonly from: OrderState;
  readonly to: OrderState;
  /**
   * The version read; the write is conditional on it (optimistic concurrency).
   * @default - no version condition: the write is conditional on `from` only and raises the
   * stored version by one in place (nothing was read to compare with)
   */
  readonly expectedVersion?: number;
  readonly changes: Partial<Order>;
  readonly at: Date;
}

/** Points around the side effect where the chaos suite crashes the consumer (I4). */
export type SideEffectPoint = 'before-side-effect' | 'after-side-effect';

/** What capturePayment needs. */
export interface PaymentPorts {
  readonly provider: PaymentProvider;
  /** Stages the transition; it is written only when the job completes, atomically with it. */
  readonly stageTransition: (transition: StagedTransition) => void;
  /** Called at each side-effect point; a no-op in production. */
  readonly crash: (point: SideEffectPoint) => void;
  readonly clock: Clock;
}

/** What a capture did; stored in the idempotency record and returned to duplicates. */
export interface CaptureResult {
  readonly outcome: 'captured';
  readonly orderId: string;
  readonly paymentId: string;
  readonly chargeId: string;
}

/** The job names an order that does not exist. */
export class OrderNotFoundError extends PermanentError {}

/** The job's amount or currency differ from the order's: charging it would take the wrong sum. */
export class PaymentMismatchError extends PermanentError {}

/**
 * The order is PAID or past it: the capture is a duplicate, found before anything was charged
 * (the consumer reports it as duplicate_ignored). A TransitionAlreadyDoneError raised after a
 * charge is not one of these: it means money moved and goes to the DLQ.
 */
export class OrderAlreadyPaidError extends TransitionAlreadyDoneError {
  public constructor(
    public readonly orderId: string,
    public readonly state: OrderState,
    options?: { cause?: unknown },
  ) {
    super(`order ${orderId} is already ${state}; nothing was charged`, options);
  }
}

/** The only state a capture charges from. */
const CAPTURE_FROM: OrderState = 'PENDING';

/** States that prove PENDING → PAID happened already. */
const PAID_ALREADY: readonly OrderState[] = ['PAID', ...statesOnlyAfter(CAPTURE_FROM, 'PAID')];

/** The guard of `job`: its order is PENDING and asks for exactly the job's amount and currency. */
export function captureGuard(job: Pick<JobEnvelope<PaymentCapturePayload>, 'payload'>): CaptureGuard {
  const { orderId, amountMinor, currency } = job.payload;
  return { orderId, state: CAPTURE_FROM, amountMinor, currency };
}

/** Whether `order` satisfies `guard` (the store checks the same condition atomically). */
export function satisfiesGuard(guard: CaptureGuard, order: Order | undefined): boolean {
  return (
    order !== undefined &&
    order.state === guard.state &&
    order.amountMinor === guard.amountMinor &&
    order.currency === guard.currency
  );
}

/**
 * Why `order` (undefined: there is none) failed `guard`, as the error the capture ends with. An
 * order that satisfies the guard now changed since the check: ConcurrentUpdateError, retry.
 */
export function explainFailedGuard(
  guard: CaptureGuard,
  order: Order | undefined,
  options?: { cause?: unknown },
): Error {
  const { orderId } = guard;
  if (order === undefined) return new OrderNotFoundError(`order ${orderId} does not exist`, options);
  if (PAID_ALREADY.includes(order.state)) return new OrderAlreadyPaidError(orderId, order.state, options);
  if (order.state !== guard.state) {
    return new IllegalTransitionError(`order ${orderId} is ${order.state}; it cannot go to PAID`, options);
  }
  const problems: string[] = [];
  if (order.amountMinor !== guard.amountMinor) {
    problems.push(`amountMinor: the job says ${guard.amountMinor}, the order ${order.amountMinor}`);
  }
  if (order.currency !== guard.currency) {
    problems.push(`currency: the job says ${guard.currency}, the order ${order.currency}`);
  }
  if (problems.length > 0) {
    return new PaymentMismatchError(
      `the payment does not match order ${orderId}: ${problems.join('; ')}`,
      options,
    );
  }
  return new ConcurrentUpdateError(
    `order ${orderId} satisfies the capture guard now; it changed since the check`,
    options,
  );
}

/**
 * Captures the payment of `job` and stages PENDING → PAID. It reads nothing: call it only once
 * captureGuard(job) held, checked atomically with the claim of the job.
 * @throws the provider's errors.
 */
export async function capturePayment(
  job: Pick<JobEnvelope<PaymentCapturePayload>, 'payload' | 'correlationId'>,
  ports: PaymentPorts,
): Promise<CaptureResult> {
  const { orderId, paymentId, amountMinor, currency } = job.payload;

  ports.crash('before-side-effect');
  const charge = await ports.provider.capture(
    { orderId, paymentId, amountMinor, currency },
    { idempotencyKey: paymentCaptureKey(paymentId), correlationId: job.correlationId },
  );
  ports.crash('after-side-effect');

  ports.stageTransition({
    orderId,
    from: CAPTURE_FROM,
    to: 'PAID',
    changes: { paymentId, chargeId: charge.chargeId },
    at: ports.clock(),
  });
  return { outcome: 'captured', orderId, paymentId, chargeId: charge.chargeId };
}
