/** The deployable pipeline, driven entirely by the pipeline config. */
import { grantItems, grantParameterRead, grantSend } from './grants';
import * as path from 'node:path';
import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { jobTypeByName, type PipelineConfig, type ResolvedStreamConsumer } from '../config';
import { Cache } from './cache';
import { ControlFlags, type ControlledConsumer } from './control-flags';
import { Ingress } from './ingress';
import { Observability } from './observability';
import { StreamConsumer } from './stream-consumer';
import { Tables } from './tables';
import type { TargetTraits } from './target';
import { WorkerQueue } from './worker-queue';

/** Handler entry of a deployed function: lambdas/<name>/index.ts. */
export function lambdaEntry(name: string): string {
  return path.join(__dirname, '..', '..', 'lambdas', name, 'index.ts');
}

/** Props of PipelineStack. */
export interface PipelineStackProps extends StackProps {
  readonly config: PipelineConfig;
  readonly traits: TargetTraits;
}

function streamConsumer(config: PipelineConfig, name: string): ResolvedStreamConsumer {
  const found = config.streamConsumers.find((s) => s.consumer === name);
  if (found === undefined) throw new Error(`the pipeline config declares no stream consumer "${name}"`);
  return found;
}

/** One stack per stage: tables, worker queues, stream consumers, cache, ingress, flags, alarms. */
export class PipelineStack extends Stack {
  public readonly tables: Tables;
  /** Worker queues keyed by job type name. */
  public readonly workerQueues: ReadonlyMap<string, WorkerQueue>;
  public readonly cacheInvalidator: StreamConsumer;
  public readonly outboxRelay: StreamConsumer;
  public readonly cache: Cache;
  public readonly ingress: Ingress;
  public readonly controlFlags: ControlFlags;
  public readonly observability: Observability;

  public constructor(scope: Construct, id: string, props: PipelineStackProps) {
    super(scope, id, props);
    const { config, traits } = props;
    const stage = config.stage.name;
    const enabled = traits.eventSourcesEnabled;
    const common = { TENANG_STAGE: stage };

    this.tables = new Tables(this, 'Tables', { stageName: stage });
    const t = this.tables;
    this.cache = new Cache(this, 'Cache', { stageName: stage, managed: traits.managedCache });

    const payment = new WorkerQueue(this, 'PaymentCapture', {
      jobType: jobTypeByName(config, 'payment.capture'),
      entry: lambdaEntry('payment-consumer'),
      eventSourceEnabled: enabled,
      environment: {
        ...common,
        ORDERS_TABLE: t.orders.tableName,
        IDEMPOTENCY_TABLE: t.idempotency.tableName,
        PAYMENT_PROVIDER_URL: config.stage.providers.paymentUrl,
      },
    });
    // The capture: the order read and guarded (GetItem, ConditionCheckItem) and moved to PAID
    // (UpdateItem); the idempotency record claimed, completed and given back (Powertools' layer).
    grantItems(t.orders, payment.consumer.function, ['GetItem', 'UpdateItem', 'ConditionCheckItem']);
    grantItems(t.idempotency, payment.consumer.function, ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem']);

    const notification = new WorkerQueue(this, 'NotificationSend', {
      jobType: jobTypeByName(config, 'notification.send'),
      entry: lambdaEntry('notification-consumer'),
      eventSourceEnabled: enabled,
      environment: {
        ...common,
        DEDUP_TABLE: t.dedup.tableName,
        MESSAGING_PROVIDER_URL: config.stage.providers.messagingUrl,
        DEGRADE_FLAG: config.degradeFlagName,
      },
    });
    // Dedup per (order, template): a conditional claim, and its release when the send fails.
    grantItems(t.dedup, notification.consumer.function, ['PutItem', 'DeleteItem']);

    const inventory = new WorkerQueue(this, 'InventoryReserve', {
      jobType: jobTypeByName(config, 'inventory.reserve'),
      entry: lambdaEntry('inventory-consumer'),
      eventSourceEnabled: enabled,
      environment: {
        ...common,
        LOCKS_TABLE: t.locks.tableName,
        INVENTORY_TABLE: t.inventory.tableName,
        DEGRADE_FLAG: config.degradeFlagName,
      },
    });
    // Leases are acquired, extended and cleared with conditional updates; stock is read and fenced-updated.
    grantItems(t.locks, inventory.consumer.function, ['UpdateItem']);
    grantItems(t.inventory, inventory.consumer.function, ['UpdateItem']);
    this.workerQueues = new Map([
      ['payment.capture', payment],
      ['notification.send', notification],
      ['inventory.reserve', inventory],
    ]);

    this.cacheInvalidator = new StreamConsumer(this, 'CacheInvalidator', {
      consumer: streamConsumer(config, 'cache-invalidator'),
      table: t.orders,
      entry: lambdaEntry('cache-invalidator'),
      environment: { ...common, ...this.cache.connectionEnvironment },
      vpc: this.cache.functionPlacement,
      eventSourceEnabled: enabled,
      decoupleFromStream: traits.decoupleStreamMappings,
    });
    this.cache.grantConnect(this.cacheInvalidator.consumer.function);

    this.outboxRelay = new StreamConsumer(this, 'OutboxRelay', {
      consumer: streamConsumer(config, 'outbox-relay'),
      table: t.orders,
      entry: lambdaEntry('outbox-relay'),
      environment: {
        ...common,
        NOTIFICATION_QUEUE_URL: notification.queue.queueUrl,
        INVENTORY_QUEUE_URL: inventory.queue.queueUrl,
        DEGRADE_FLAG: config.degradeFlagName,
        DEDUP_TABLE: t.dedup.tableName,
      },
      eventSourceEnabled: enabled,
      decoupleFromStream: traits.decoupleStreamMappings,
    });
    // Producer-side dedup of follow-up jobs: a stream retry never enqueues twice (Q1).
    grantItems(t.dedup, this.outboxRelay.consumer.function, ['PutItem', 'DeleteItem']);
    grantSend(notification.queue, this.outboxRelay.consumer.function);
    grantSend(inventory.queue, this.outboxRelay.consumer.function);

    this.ingress = new Ingress(this, 'Ingress', {
      ingressEntry: lambdaEntry('ingress'),
      readerEntry: lambdaEntry('order-reader'),
      ingressEnvironment: {
        ...common,
        ORDERS_TABLE: t.orders.tableName,
        DEDUP_TABLE: t.dedup.tableName,
        PAYMENT_QUEUE_URL: payment.queue.queueUrl,
        DEGRADE_FLAG: config.degradeFlagName,
      },
      readerEnvironment: { ...common, ORDERS_TABLE: t.orders.tableName, ...this.cache.connectionEnvironment },
      readerVpc: this.cache.functionPlacement,
    });
    // Orders are created (PutItem) and read (GetItem); Idempotency-Key claims are put and given back.
    grantItems(t.orders, this.ingress.ingress.function, ['GetItem', 'PutItem']);
    grantItems(t.dedup, this.ingress.ingress.function, ['PutItem', 'DeleteItem']);
    grantSend(payment.queue, this.ingress.ingress.function);
    grantItems(t.orders, this.ingress.reader.function, ['GetItem']);
    this.cache.grantConnect(this.ingress.reader.function);

    const streams: readonly (readonly [StreamConsumer, ResolvedStreamConsumer])[] = [
      [this.cacheInvalidator, streamConsumer(config, 'cache-invalidator')],
      [this.outboxRelay, streamConsumer(config, 'outbox-relay')],
    ];
    const consumers: ControlledConsumer[] = [
      ...config.jobTypes.map((j) => {
        const w = this.workerQueues.get(j.name);
        if (w === undefined) throw new Error(`no worker queue for ${j.name}`);
        return {
          consumer: j.consumer,
          flagName: j.pauseFlagName,
          eventSourceMappingId: w.eventSource.eventSourceMappingId,
          eventSourceMappingArn: w.eventSource.eventSourceMappingArn,
        };
      }),
      ...streams.map(([s, sc]) => ({
        consumer: sc.consumer,
        flagName: sc.pauseFlagName,
        eventSourceMappingId: s.eventSource.eventSourceMappingId,
        eventSourceMappingArn: s.eventSource.eventSourceMappingArn,
      })),
    ];
    this.controlFlags = new ControlFlags(this, 'ControlFlags', {
      stageName: stage,
      degradeFlagName: config.degradeFlagName,
      consumers,
      reconcilerEntry: lambdaEntry('flag-reconciler'),
    });
    for (const fn of [
      notification.consumer.function,
      inventory.consumer.function,
      this.outboxRelay.consumer.function,
      this.ingress.ingress.function,
    ]) {
      // Powertools Parameters' get() is one GetParameter.
      grantParameterRead(this.controlFlags.degradeFlag, fn, 'ssm:GetParameter');
    }

    this.observability = new Observability(this, 'Observability', {
      stageName: stage,
      topicName: config.stage.alarmTopic.name,
      alarmEmails: config.stage.alarmTopic.emails,
      jobTypes: config.jobTypes.map((j) => {
        const w = this.workerQueues.get(j.name);
        if (w === undefined) throw new Error(`no worker queue for ${j.name}`);
        return {
          jobType: j,
          queue: w.queue,
          deadLetterQueue: w.deadLetterQueue,
          expiredQueue: w.expiredQueue,
          consumer: w.consumer.function,
        };
      }),
      streamConsumers: streams.map(([s, sc]) => ({
        streamConsumer: sc,
        consumer: s.consumer.function,
        failureQueue: s.failureQueue,
      })),
      reconciler: this.controlFlags.reconciler.function,
    });

    // moto skips the HTTP API (the local platform serves its routes), so no output refers to it there.
    if (traits.target === 'aws') new CfnOutput(this, 'ApiUrl', { value: this.ingress.api.apiEndpoint });
  }
}
