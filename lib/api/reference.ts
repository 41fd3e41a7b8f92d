/**
 * `tenang/reference`: the reference pipeline's domain (payments, notifications, stock
 * reservations) and its adapters, for the job modules of examples/reference and apps that reuse
 * them. The kit itself (runner, idempotency, locks, breakers) is `tenang/runtime`.
 */
export {
  PaymentCapturePayload,
  NotificationSendPayload,
  InventoryReservePayload,
  type JobTypeName,
} from '../core/envelope';
export { OrderSchema, OrderLineSchema, type Order, type OrderLine } from '../core/order';
export { ORDER_STATES, type OrderState } from '../core/state-machine';
export {
  becamePaid,
  followUpsForOrderChange,
  relayFollowUps,
  type Enqueue,
  type FollowUp,
  type FollowUpOutcome,
} from '../core/outbox';
export { orderCacheKey, keysForOrderChange, type OrderKeyFields } from '../core/cache-keys';
export {
  readOrderChange,
  type OrderStreamChange,
  type UnknownStreamRecord,
} from '../adapters/aws/order-stream';
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
} from '../core/payment';
export {
  sendNotification,
  notificationKey,
  type MessagingProvider,
  type OutgoingMessage,
  type NotificationOutcome,
} from '../core/notification';
export {
  reserveStock,
  skuLockResource,
  InsufficientStockError,
  UnknownSkuError,
  type InventoryStore,
  type ReserveOutcome,
} from '../core/inventory';
export type { DedupStore, OrderStore } from '../core/ports';
export { DynamoDbOrderStore } from '../adapters/aws/dynamodb-order-store';
export { DynamoDbDedupStore } from '../adapters/aws/dynamodb-dedup-store';
export { DynamoDbInventoryStore } from '../adapters/aws/dynamodb-inventory-store';
export { HttpPaymentProvider } from '../adapters/http/payment-provider';
export { HttpMessagingProvider } from '../adapters/http/messaging-provider';
