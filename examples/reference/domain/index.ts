/**
 * The reference app's domain (payments, notifications, stock reservations, orders) and its
 * adapters: what its job modules, stream functions and declaration import, built on tenang's
 * public entry points (tenang/runtime, tenang/config, tenang/zod) like any app's own code. The
 * kit holds none of it. What is generic (the outbox relay, the dedup store) is re-exported here
 * for the reference's modules, as it always was. Its HTTP ingress is CDK code, so it is not
 * exported here (functions import this module): reference-app.ts imports ./domain/ingress.
 */
export {
  PaymentCapturePayload,
  NotificationSendPayload,
  InventoryReservePayload,
  PAYLOADS,
  isReferenceJobType,
  type JobTypeName,
  type PayloadOf,
} from './payloads';
export { REFERENCE_TABLE_KEYS } from './tables';
export { OrderSchema, OrderLineSchema, CorruptOrderError, type Order, type OrderLine } from './order';
export { ORDER_STATES, type OrderState } from './state-machine';
export { relayFollowUps, type Enqueue, type FollowUp, type FollowUpOutcome } from 'tenang/runtime';
export { becamePaid, followUpKey, followUpsForOrderChange } from './order-follow-ups';
export { ORDER_ENTITY, orderCacheKey, keysForOrderChange, type OrderKeyFields } from './order-cache';
export { readOrderChange, type OrderStreamChange, type UnknownStreamRecord } from './order-stream';
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
} from './payment';
export {
  sendNotification,
  notificationKey,
  type MessagingProvider,
  type OutgoingMessage,
  type NotificationOutcome,
} from './notification';
export {
  reserveStock,
  skuLockResource,
  InsufficientStockError,
  UnknownSkuError,
  type InventoryStore,
  type ReserveOutcome,
  type UnleasedReservation,
  type UnleasedReserveResult,
} from './inventory';
export type { DedupStore } from 'tenang/runtime';
export type { OrderStore } from './ports';
export { DynamoDbOrderStore } from './dynamodb-order-store';
export { DynamoDbDedupStore } from 'tenang/runtime';
export { DynamoDbInventoryStore, DynamoDbUnleasedReservation } from './dynamodb-inventory-store';
export { HttpPaymentProvider } from './payment-provider';
export { HttpMessagingProvider } from './messaging-provider';
