/**
 * inventory.reserve (L1–L4, D5): reserves stock for an order line under a lease lock per SKU
 * whose fencing token the stock write checks. A busy lock defers the message (re-sent with a
 * delay, so waiting never moves it towards the DLQ) and counts as lock contention.
 *
 * The critical section is the one stock write, so a reservation first goes lease-free: the lock
 * check, the fence and the write in one TransactWriteItems (one request instead of acquire,
 * write and release; DynamoDbLockStore.writeWithoutLease). A live lease (a stuck one, or a
 * holder on the lease path) still defers it; what the transaction cannot decide takes the lease.
 */
import { randomUUID } from 'node:crypto';
import type { ResolvedJobType } from 'tenang/config';
import {
  DynamoDbInventoryStore,
  DynamoDbUnleasedReservation,
  InventoryReservePayload,
  reserveStock,
  type InventoryStore,
  type UnleasedReservation,
} from '../domain';
import {
  defineJob,
  DynamoDbLockStore,
  jobHandler,
  LeaseLock,
  METRIC,
  MetricUnit,
  type Every,
  type JobRunContext,
  type LockEvent,
  type LockStore,
  type TokenSource,
} from 'tenang/runtime';

/**
 * The SKU lease: a third of the function timeout. A crashed holder frees the SKU that soon; a
 * live one keeps it with heartbeats (D5) for as long as its work takes.
 */
export function leaseTtlMs(jobType: ResolvedJobType): number {
  return Math.floor((jobType.function.timeoutSeconds * 1000) / 3);
}

/** The reservation's per-process state (tests pass fakes). */
export interface InventoryReserveState {
  readonly locks: LockStore;
  readonly inventory: InventoryStore;
  /** The lease-free path, tried first. @default - none: every reservation takes the lease */
  readonly unleased?: UnleasedReservation;
  readonly leaseTtlMs: number;
  /** @default crypto.randomUUID */
  readonly newToken?: TokenSource;
  /** @default a third of the lease */
  readonly heartbeatMs?: number;
  /** @default everyInterval */
  readonly every?: Every;
}

export const inventoryReserve = defineJob({
  name: 'inventory.reserve',
  payload: InventoryReservePayload,
  setup: ({ jobType, dynamodb, table }): InventoryReserveState => {
    const locks = new DynamoDbLockStore(dynamodb, table('locks'));
    return {
      locks,
      inventory: new DynamoDbInventoryStore(dynamodb, table('inventory')),
      unleased: new DynamoDbUnleasedReservation(locks, table('inventory')),
      leaseTtlMs: leaseTtlMs(jobType),
    };
  },
  // The lease and the fence keep it idempotent: the reservation is recorded on the SKU itself.
  idempotency: 'self',
  async run(payload, { state, logger, metrics, clock, random, crash }) {
    const lock = new LeaseLock({
      store: state.locks,
      clock,
      newToken: state.newToken ?? randomUUID,
      report: (event) => reportLockEvent(logger, event),
    });
    const outcome = await reserveStock(
      { ...state, lock, store: state.inventory, clock, random, crash },
      payload,
    );
    if (outcome.fallback !== undefined) {
      logger.info('reservation took the lease path', { sku: payload.sku, reason: outcome.fallback });
    }
    switch (outcome.kind) {
      case 'busy':
        metrics.addMetric(METRIC.lockContention, MetricUnit.Count, 1);
        if (outcome.holderAgeMs !== undefined) {
          metrics.addMetric(METRIC.lockAge, MetricUnit.Milliseconds, outcome.holderAgeMs);
        }
        return {
          kind: 'deferred',
          delaySeconds: outcome.deferSeconds,
          reason: `lock on SKU ${payload.sku} is busy`,
        };
      case 'reserved':
        logger.info('stock reserved', {
          orderId: payload.orderId,
          sku: payload.sku,
          fence: outcome.fence,
          via: outcome.via,
        });
        return;
      case 'duplicate':
        return { kind: 'duplicate_ignored' };
    }
  },
});

/** Refused releases and lost leases are warnings: the fence kept the data right, but an operator may ask why. */
function reportLockEvent(logger: JobRunContext['logger'], event: LockEvent): void {
  switch (event.kind) {
    case 'release-refused':
      logger.warn('lock release refused: this owner no longer holds the lease', {
        resource: event.resource,
        holderFence: event.holder?.fence,
      });
      return;
    case 'lease-lost':
      logger.warn('lease lost before it could be extended', { resource: event.resource, fence: event.fence });
      return;
    case 'release-failed':
      logger.warn('lock release failed; the lease expires by itself', {
        resource: event.resource,
        error: event.error as Error,
      });
  }
}

export const handler = jobHandler(inventoryReserve);
