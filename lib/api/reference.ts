/**
 * `tenang/reference`: the reference app's domain (payments, notifications, stock reservations)
 * and its adapters, for the job modules of examples/reference and apps that reuse them; its
 * sources are lib/reference/ (and, while the kit's cache operations still know the cache's one
 * entity, the order, lib/core/order.ts, state-machine.ts and cache-keys.ts). The kit itself
 * (runner, idempotency, locks, dedup, the outbox relay, breakers) is `tenang/runtime`; what is
 * generic is exported here too, as it always was, for the reference's modules.
 */
export {
  PaymentCapturePayload,
  NotificationSendPayload,
  InventoryReservePayload,
  PAYLOADS,
  isReferenceJobType,
  type JobTypeName,
  type PayloadOf,
} from '../reference/payloads';
export { REFERENCE_TABLE_KEYS } from '../reference/tables';
export { OrderSchema, OrderLineSchema, CorruptOrderError, type Order, type OrderLine } from '../core/order';
export { ORDER_STATES, type OrderState } from '../core/state-machine';
export { relayFollowUps, type Enqueue, type FollowUp, type FollowUpOutcome } from '../core/outbox';
export { becamePaid, followUpKey, followUpsForOrderChange } from '../reference/order-follow-ups';
export {
  ORDER_ENTITY,
  orderCacheKey,
  keysForOrderChange,
  type OrderKeyFields,
} from '../reference/order-cache';
export { readOrderChange, type OrderStreamChange, type UnknownStreamRecord } from '../reference/order-stream';
export {
  capturePayment,
  captureGuard,
  paymentCaptureKey,
  OrderAlreadyPaidError,
  OrderNotFoundError,
  PaymentMismatchError,
  type CaptureGuard,
  type CaptureResult,
  type PaymentProvider,
  type StagedTransition,
} from '../reference/payment';
export {
  sendNotification,
  notificationKey,
  type MessagingProvider,
  type OutgoingMessage,
  type NotificationOutcome,
} from '../reference/notification';
export {
  reserveStock,
  skuLockResource,
  InsufficientStockError,
  UnknownSkuError,
  type InventoryStore,
  type ReserveOutcome,
} from '../reference/inventory';
export type { DedupStore } from '../core/ports';
export type { OrderStore } from '../reference/ports';
export { DynamoDbOrderStore } from '../reference/dynamodb-order-store';
export { DynamoDbDedupStore } from '../adapters/aws/dynamodb-dedup-store';
export { DynamoDbInventoryStore } from '../reference/dynamodb-inventory-store';
export { HttpPaymentProvider } from '../reference/payment-provider';
export { HttpMessagingProvider } from '../reference/messaging-provider';
