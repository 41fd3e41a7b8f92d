/**
 * The reference pipeline's declaration: three job types (a FIFO payment capture, a sheddable
 * notification, a deferrable stock reservation), the four tables they use (tenang adds its own
 * idempotency table) and two stream consumers on the orders table.
 * The app (app.ts) hands it to the stack, which bakes it into every function's bundle and the
 * stack's template metadata: functions, the CLI and the local platform read it from there.
 */
import { TABLE_KEYS, type PipelineInput } from 'tenang/config';
import { ORDER_ENTITY, REFERENCE_TABLE_KEYS } from './domain';

/** The declaration for a stage; only the stage name and region vary between stages. */
export function referencePipeline(stageName: string, region: string): PipelineInput {
  return {
    stage: {
      name: stageName,
      region,
      alarmTopic: {
        name: `tenang-${stageName}-alarms`,
        // Who is told of an alarm. Deploy with `-c tenang:alarmEmail=you@example.com` (it adds
        // { email } here; confirm the mail AWS sends), or list your on-call here: { email },
        // { https } (a PagerDuty / Opsgenie URL), { topicArn } (e.g. your AWS Chatbot topic).
        // With no one, the synth refuses the stage (Tenang-F5-AlarmSubscriber).
        deliverTo: [],
      },
      // Replace with the real providers' endpoints before deploying to an account.
      providers: {
        payment: 'https://payments.example.com',
        messaging: 'https://messaging.example.com',
      },
      cache: {
        ttlSeconds: 300,
        ttlJitterRatio: 0.2,
        loadLockMs: 2_000,
        commandTimeoutMs: 250,
        hotKeys: [],
        // The order is read through the cache (order-reader) and fenced on its version.
        entities: [ORDER_ENTITY],
      },
    },
    // Each with the key layout of the adapter that reads it: the reference's own (DynamoDbOrderStore,
    // DynamoDbInventoryStore) or the kit's (DynamoDbLockStore, DynamoDbDedupStore).
    tables: [
      // The source of truth; its stream drives the cache invalidator and the outbox relay.
      { name: 'orders', ...REFERENCE_TABLE_KEYS.orders, stream: 'NEW_AND_OLD_IMAGES' },
      // Lease locks with fencing counters.
      { name: 'locks', ...TABLE_KEYS.locks },
      // Producer-side dedup records for standard queues (Q1).
      { name: 'dedup', ...TABLE_KEYS.dedup },
      // Stock per SKU, protected by lease locks with fencing.
      { name: 'inventory', ...REFERENCE_TABLE_KEYS.inventory },
    ],
    jobTypes: [
      {
        name: 'payment.capture',
        consumer: 'payment-consumer',
        entry: 'jobs/payment-capture.ts',
        queue: { kind: 'fifo', groupBy: 'orderId' },
        function: { timeoutSeconds: 30, memoryMb: 512 },
        batch: { size: 10, maxConcurrency: 10 },
        maxReceiveCount: 5,
        retry: { baseDelaySeconds: 5, maxDelaySeconds: 300 },
        criticality: 'critical',
        latencyObjectiveSeconds: 120,
        owner: 'payments-team',
        // The capture keeps its idempotency record on the order it guards: claimed with the guard,
        // completed with the PAID transition and given back, each one UpdateItem of the order; the
        // order read (GetItem) only to explain a claim that found no order.
        resources: {
          tables: {
            orders: ['GetItem', 'UpdateItem'],
          },
          providers: ['payment'],
        },
        idempotent: true,
        pauseCost: 'Captures wait: revenue is delayed and customers see "payment pending"; nothing is lost.',
        runbook: 'payment-capture',
      },
      {
        name: 'notification.send',
        consumer: 'notification-consumer',
        entry: 'jobs/notification-send.ts',
        queue: { kind: 'standard' },
        function: { timeoutSeconds: 20, memoryMb: 256 },
        batch: { size: 10, windowSeconds: 2, maxConcurrency: 5 },
        maxReceiveCount: 4,
        retry: { baseDelaySeconds: 10, maxDelaySeconds: 600 },
        criticality: 'sheddable',
        latencyObjectiveSeconds: 900,
        // An order-paid e-mail six hours late confuses more than it helps: moved aside, counted.
        usefulAgeSeconds: 21_600,
        owner: 'growth-team',
        // Dedup per (order, template): a conditional claim, its release when the send fails, its
        // confirmations batched (BatchWriteItem puts); the fleet's rate limit is one record there,
        // written with conditional updates.
        resources: {
          tables: { dedup: ['PutItem', 'DeleteItem', 'BatchWriteItem', 'UpdateItem'] },
          providers: ['messaging'],
        },
        idempotent: true,
        pauseCost: 'Customers get order e-mails late; no money or stock is affected.',
        runbook: 'notification-send',
      },
      {
        name: 'inventory.reserve',
        consumer: 'inventory-consumer',
        entry: 'jobs/inventory-reserve.ts',
        queue: { kind: 'standard' },
        function: { timeoutSeconds: 30, memoryMb: 256 },
        batch: { size: 5, windowSeconds: 1, maxConcurrency: 5 },
        maxReceiveCount: 6,
        retry: { baseDelaySeconds: 2, maxDelaySeconds: 120 },
        criticality: 'deferrable',
        latencyObjectiveSeconds: 300,
        owner: 'fulfilment-team',
        // Leases are acquired, extended and cleared with conditional updates; the stock is
        // fenced-updated, under a lease or in one TransactWriteItems with the SKU's lock item, which
        // IAM authorizes item by item (UpdateItem on each table): no grant of its own.
        resources: { tables: { locks: ['UpdateItem'], inventory: ['UpdateItem'] } },
        idempotent: true,
        pauseCost: 'Paid orders wait for stock reservation; oversell risk grows with the pause.',
        runbook: 'inventory-reserve',
      },
    ],
    streamConsumers: [
      {
        consumer: 'cache-invalidator',
        table: 'orders',
        entry: 'functions/cache-invalidator.ts',
        // Deletes the changed order's cache keys.
        resources: { cache: true },
        function: { timeoutSeconds: 10, memoryMb: 256 },
        batchSize: 100,
        retryAttempts: 10,
        maxRecordAgeSeconds: 3_600,
        latencyObjectiveSeconds: 60,
        owner: 'platform-team',
        pauseCost: 'Cached orders go stale until their TTL; readers may see old states.',
        runbook: 'stale-cache',
      },
      {
        consumer: 'outbox-relay',
        table: 'orders',
        entry: 'functions/outbox-relay.ts',
        // Enqueues an order's follow-up jobs, each claimed once in dedup (Q1); defers what is not
        // critical while the stage is degraded. A batch's claims are confirmed together: confirms
        // made while another is written go in one BatchWriteItem (DynamoDbDedupStore.confirm).
        resources: {
          tables: { dedup: ['PutItem', 'DeleteItem', 'BatchWriteItem'] },
          queues: ['notification.send', 'inventory.reserve'],
          degradeFlag: true,
        },
        function: { timeoutSeconds: 15, memoryMb: 256 },
        batchSize: 50,
        retryAttempts: 10,
        maxRecordAgeSeconds: 21_600,
        latencyObjectiveSeconds: 300,
        owner: 'platform-team',
        pauseCost: 'Follow-up jobs (notifications, reservations) wait; the stream keeps them for 24 h.',
        neededForRecovery: true,
        runbook: 'outbox-relay',
      },
    ],
  };
}
