/** The deployable pipeline, driven entirely by the pipeline config. */
import { grantItems, grantParameterRead, grantSend } from './grants';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import {
  encodePipeline,
  loadPipelineConfig,
  PIPELINE_CONTEXT_KEY,
  PIPELINE_METADATA_KEY,
  type PipelineConfig,
  providerVariable,
  tableVariable,
  type PipelineInput,
  type ResolvedJobType,
  type ResolvedStreamConsumer,
  type TableAction,
  type TableName,
} from '../config';
import { Cache } from './cache';
import { ControlFlags, type ControlledConsumer } from './control-flags';
import { Ingress } from './ingress';
import { Observability } from './observability';
import { StreamConsumer } from './stream-consumer';
import { Tables } from './tables';
import type { TargetTraits } from './target';
import { WorkerQueue } from './worker-queue';

/**
 * Handler entry of a deployed function: lambdas/<name>/index.ts, found from a checkout's
 * lib/infra or the installed package's dist/lib/infra (the package ships the sources so esbuild
 * bundles them as ESM, tree-shaken: a bundle of the compiled CommonJS is about twice the size).
 */
export function lambdaEntry(name: string): string {
  const candidates = [
    path.join(__dirname, '..', '..', 'lambdas', name, 'index.ts'),
    path.join(__dirname, '..', '..', '..', 'lambdas', name, 'index.ts'),
  ];
  return candidates.find((c) => fs.existsSync(c)) ?? (candidates[0] as string);
}

/** `payment.capture` → `PaymentCapture`: a job type's construct id (and so its logical ids). */
export function constructIdOf(jobTypeName: string): string {
  return jobTypeName
    .split(/[.-]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
}

/** The handler module of a job type: its declared `entry`, or the package's lambdas/<consumer>. */
export function jobEntry(jobType: ResolvedJobType, appDir: string = process.cwd()): string {
  return jobType.entry === undefined ? lambdaEntry(jobType.consumer) : path.resolve(appDir, jobType.entry);
}

/** Props of PipelineStack. */
export interface PipelineStackProps extends StackProps {
  /** The app's declaration for this stage (validated here; every problem fails synthesis). */
  readonly pipeline: PipelineInput;
  /** Where the job types' `entry` paths are relative to. @default process.cwd() */
  readonly appDir?: string;
  readonly traits: TargetTraits;
}

function streamConsumer(config: PipelineConfig, name: string): ResolvedStreamConsumer {
  const found = config.streamConsumers.find((s) => s.consumer === name);
  if (found === undefined) throw new Error(`the pipeline config declares no stream consumer "${name}"`);
  return found;
}

/** One stack per stage: tables, worker queues, stream consumers, cache, ingress, flags, alarms. */
export class PipelineStack extends Stack {
  /** The validated declaration with its derived values. */
  public readonly config: PipelineConfig;
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
    const { traits } = props;
    const config = loadPipelineConfig(props.pipeline);
    this.config = config;
    // The declaration travels with the deployment: into every function's bundle (TenangFunction
    // reads this context) and into the template, where the CLI and the local platform find it.
    const encoded = encodePipeline(props.pipeline);
    this.node.setContext(PIPELINE_CONTEXT_KEY, encoded);
    // As a JSON string: cfn-lint refuses a fractional number in template metadata (E4002).
    this.templateOptions.metadata = { ...this.templateOptions.metadata, [PIPELINE_METADATA_KEY]: encoded };
    const stage = config.stage.name;
    const enabled = traits.eventSourcesEnabled;
    const common = { TENANG_STAGE: stage };

    this.tables = new Tables(this, 'Tables', { stageName: stage });
    const t = this.tables;
    this.cache = new Cache(this, 'Cache', { stageName: stage, managed: traits.managedCache });

    // One worker queue per declared job type, wired from what it declares it uses: each table's
    // variable and a grant of exactly its actions, each provider's URL, and the degrade flag for
    // work that is not critical (the runner defers it while the stage is degraded).
    const workerQueues = new Map<string, WorkerQueue>();
    for (const jobType of config.jobTypes) {
      const environment: Record<string, string> = { ...common };
      for (const table of Object.keys(jobType.resources.tables) as TableName[])
        environment[tableVariable(table)] = t.byName(table).tableName;
      for (const provider of jobType.resources.providers)
        environment[providerVariable(provider)] = config.stage.providers[provider] as string;
      if (jobType.criticality !== 'critical') environment.DEGRADE_FLAG = config.degradeFlagName;
      const worker = new WorkerQueue(this, constructIdOf(jobType.name), {
        jobType,
        entry: jobEntry(jobType, props.appDir),
        eventSourceEnabled: enabled,
        environment,
      });
      for (const [table, actions] of Object.entries(jobType.resources.tables) as [TableName, TableAction[]][])
        grantItems(t.byName(table), worker.consumer.function, actions);
      workerQueues.set(jobType.name, worker);
    }
    this.workerQueues = workerQueues;
    const referenceQueue = (name: string): WorkerQueue => {
      const found = workerQueues.get(name);
      if (found === undefined)
        throw new Error(`the reference's ingress and stream consumers need the job type "${name}"`);
      return found;
    };
    const payment = referenceQueue('payment.capture');
    const notification = referenceQueue('notification.send');
    const inventory = referenceQueue('inventory.reserve');

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
      ...config.jobTypes
        .filter((j) => j.criticality !== 'critical')
        .map((j) => referenceQueue(j.name).consumer.function),
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
