/**
 * payment.capture (D1, D3, I1–I4): charges an order once. The idempotency record lives on the
 * order it guards (its `idempotency` attribute): the claim is one conditional UpdateItem of the
 * order (the guard — PENDING, same amount — and Powertools' claim condition), the PAID
 * transition commits with the record's completion in another. Two single-item writes per capture
 * (2 write units for an order under 1 KB), one per duplicate, and no transaction.
 */
import type { PaymentCapturePayload, PaymentProvider, StagedTransition } from '../domain';
import {
  captureGuard,
  capturePayment,
  DynamoDbOrderStore,
  HttpPaymentProvider,
  OrderAlreadyPaidError,
  PaymentCapturePayload as Payload,
  paymentCaptureKey,
} from '../domain';
import {
  defineJob,
  GUARDED_ITEM_RECORD_ATTR,
  jobHandler,
  TransactionalDynamoDBPersistenceLayer,
  type StagedPrecondition,
  type StagedWrite,
} from 'tenang/runtime';

/** Orders as the capture uses them: a guard checked in the claim, a transition staged for the completion. */
export interface StagingOrderStore {
  captureGuardCheck(guard: ReturnType<typeof captureGuard>): StagedPrecondition;
  stagedTransition(transition: StagedTransition): StagedWrite;
}

/** The capture's per-process state (tests pass fakes). */
export interface PaymentCaptureState {
  readonly orders: StagingOrderStore;
  readonly provider: PaymentProvider;
  readonly persistence: TransactionalDynamoDBPersistenceLayer;
}

export const paymentCapture = defineJob({
  name: 'payment.capture',
  payload: Payload,
  setup: (ctx): PaymentCaptureState => ({
    orders: new DynamoDbOrderStore(ctx.dynamodb, ctx.table('orders')),
    // At most 10 s: room for the runner to report the failure within the function timeout.
    provider: new HttpPaymentProvider({
      baseUrl: ctx.providerUrl('payment'),
      timeoutMs: Math.min(10_000, ctx.providerTimeoutMs),
    }),
    persistence: new TransactionalDynamoDBPersistenceLayer({
      // Never written: every capture stages its guard, so its record goes on the order (a record
      // without one would be refused there: the orders table's key is not Powertools' `id`).
      tableName: ctx.table('orders'),
      awsSdkV3Client: ctx.dynamodb,
      warnings: ctx.logger,
      // The record on the order the claim guards: no transaction, one write unit per write.
      guardedItemRecordAttr: GUARDED_ITEM_RECORD_ATTR,
    }),
  }),
  idempotencyKey: (payload: PaymentCapturePayload) => paymentCaptureKey(payload.paymentId),
  idempotency: {
    persistence: (_ctx, state) => state.persistence,
    // The core reads nothing: the guard is checked in the claim, or nothing is charged. The staged
    // transition is an Update of that same order, so it completes the record in one UpdateItem.
    claimPrecondition: (job, state) => state.orders.captureGuardCheck(captureGuard(job)),
    alreadyDone: (error) => error instanceof OrderAlreadyPaidError,
  },
  async run(payload, ctx) {
    const captured = await capturePayment(ctx.job, {
      provider: ctx.state.provider,
      crash: ctx.crash,
      clock: ctx.clock,
      stageTransition: (transition) => ctx.stage(ctx.state.orders.stagedTransition(transition)),
    });
    ctx.logger.info('payment captured', { orderId: payload.orderId, chargeId: captured.chargeId });
  },
});

export const handler = jobHandler(paymentCapture);
