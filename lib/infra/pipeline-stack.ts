/** The deployable pipeline, driven entirely by the pipeline config. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Stack, type StackProps } from 'aws-cdk-lib';
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import {
  cachedEntityTables,
  encodePipeline,
  loadPipelineConfig,
  PIPELINE_CONTEXT_KEY,
  PIPELINE_METADATA_KEY,
  type PipelineConfig,
  providerVariable,
  queueUrlVariable,
  tableVariable,
  type PipelineInput,
  type TableAction,
} from '../config';
import { Cache } from './cache';
import { CacheAdmin } from './cache-admin';
import { constructIdOf } from './construct-id';
import { ControlFlags, type ControlledConsumer } from './control-flags';
import { grantItems, grantParameterRead, grantSend } from './grants';
import { Observability } from './observability';
import { StreamConsumer } from './stream-consumer';
import { Tables } from './tables';
import type { TargetTraits } from './target';
import { WorkerQueue } from './worker-queue';

/**
 * Handler entry of tenang's own functions (the flag reconciler, the cache admin): lambdas/<name>/index.ts, found
 * from a checkout's lib/infra or the installed package's dist/lib/infra (the package ships the
 * sources so esbuild bundles them as ESM, tree-shaken: a bundle of the compiled CommonJS is about
 * twice the size).
 */
export function lambdaEntry(name: string): string {
  const candidates = [
    path.join(__dirname, '..', '..', 'lambdas', name, 'index.ts'),
    path.join(__dirname, '..', '..', '..', 'lambdas', name, 'index.ts'),
  ];
  return candidates.find((c) => fs.existsSync(c)) ?? (candidates[0] as string);
}

/** The handler module of a consumer: its declared `entry`, relative to the app's directory. */
export function jobEntry(declared: { readonly entry: string }, appDir: string = process.cwd()): string {
  return path.resolve(appDir, declared.entry);
}

/** Props of PipelineStack. */
export interface PipelineStackProps extends StackProps {
  /** The app's declaration for this stage (validated here; every problem fails synthesis). */
  readonly pipeline: PipelineInput;
  /** Where the consumers' `entry` paths are relative to. @default process.cwd() */
  readonly appDir?: string;
  readonly traits: TargetTraits;
}

/** What the stack built for a declared name; throws listing the known ones. */
function declared<T>(built: ReadonlyMap<string, T>, kind: string, name: string): T {
  const found = built.get(name);
  if (found === undefined) {
    throw new Error(`the pipeline declares no ${kind} "${name}" (known: ${[...built.keys()].join(', ')})`);
  }
  return found;
}

/**
 * One stack per stage: the declared tables (and tenang's idempotency table), a worker queue per
 * job type, a stream consumer per declared stream consumer, the cache, the flags and alarms.
 * Each consumer's variables and grants are derived from its `resources`; what an app adds of its
 * own (the reference's HTTP ingress) it builds on the stack afterwards, from `tables`,
 * `workerQueues`, `cache` and `controlFlags`.
 */
export class PipelineStack extends Stack {
  /** The validated declaration with its derived values. */
  public readonly config: PipelineConfig;
  /** The deploy target's traits the stack was built for. */
  public readonly traits: TargetTraits;
  public readonly tables: Tables;
  /** Worker queues keyed by job type name. */
  public readonly workerQueues: ReadonlyMap<string, WorkerQueue>;
  /** Stream consumers keyed by consumer name. */
  public readonly streamConsumers: ReadonlyMap<string, StreamConsumer>;
  public readonly cache: Cache;
  /** The function the `tenang cache` commands invoke to act on the cache from inside its VPC. */
  public readonly cacheAdmin: CacheAdmin;
  public readonly controlFlags: ControlFlags;
  public readonly observability: Observability;

  public constructor(scope: Construct, id: string, props: PipelineStackProps) {
    super(scope, id, props);
    const { traits } = props;
    this.traits = traits;
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

    this.tables = new Tables(this, 'Tables', { tables: config.tables });
    this.cache = new Cache(this, 'Cache', { stageName: stage, managed: traits.managedCache });
    this.cacheAdmin = new CacheAdmin(this, 'CacheAdmin', {
      stageName: stage,
      cache: this.cache,
      entry: lambdaEntry('cache-admin'),
      entityTables: new Map(cachedEntityTables(config).map((t) => [t.name, this.tables.byName(t.name)])),
    });
    // Functions that read the degrade flag; granted once ControlFlags exists.
    const degradeReaders: iam.IGrantable[] = [];

    // One worker queue per declared job type, wired from what it declares it uses: each table's
    // variable and a grant of exactly its actions, each provider's URL, and the degrade flag for
    // work that is not critical (the runner defers it while the stage is degraded).
    const workerQueues = new Map<string, WorkerQueue>();
    for (const jobType of config.jobTypes) {
      const environment: Record<string, string> = {
        ...common,
        ...this.tableEnvironment(jobType.resources.tables),
      };
      for (const provider of jobType.resources.providers)
        environment[providerVariable(provider)] = config.stage.providers[provider] as string;
      if (jobType.criticality !== 'critical') environment.DEGRADE_FLAG = config.degradeFlagName;
      const worker = new WorkerQueue(this, constructIdOf(jobType.name), {
        jobType,
        entry: jobEntry(jobType, props.appDir),
        eventSourceEnabled: enabled,
        environment,
      });
      this.grantTables(jobType.resources.tables, worker.consumer.function);
      if (jobType.criticality !== 'critical') degradeReaders.push(worker.consumer.function);
      workerQueues.set(jobType.name, worker);
    }
    this.workerQueues = workerQueues;

    // One stream consumer per declaration, on its table's stream, wired the same way: tables,
    // the queues of the job types it sends to, the cache (variables, VPC, connect) and the flag.
    const streamConsumers = new Map<string, StreamConsumer>();
    for (const sc of config.streamConsumers) {
      const { resources } = sc;
      const environment: Record<string, string> = {
        ...common,
        ...(resources.cache ? this.cache.connectionEnvironment : {}),
      };
      for (const jobType of resources.queues)
        environment[queueUrlVariable(jobType)] = this.queueOf(jobType).queueUrl;
      if (resources.degradeFlag) environment.DEGRADE_FLAG = config.degradeFlagName;
      Object.assign(environment, this.tableEnvironment(resources.tables));
      const consumer = new StreamConsumer(this, constructIdOf(sc.consumer), {
        consumer: sc,
        table: this.tables.byName(sc.table),
        entry: jobEntry(sc, props.appDir),
        environment,
        ...(resources.cache ? { vpc: this.cache.functionPlacement } : {}),
        eventSourceEnabled: enabled,
        decoupleFromStream: traits.decoupleStreamMappings,
      });
      const fn = consumer.consumer.function;
      if (resources.cache) this.cache.grantConnect(fn);
      this.grantTables(resources.tables, fn);
      for (const jobType of resources.queues) grantSend(this.queueOf(jobType), fn);
      if (resources.degradeFlag) degradeReaders.push(fn);
      streamConsumers.set(sc.consumer, consumer);
    }
    this.streamConsumers = streamConsumers;

    const consumers: ControlledConsumer[] = [
      ...config.jobTypes.map((j) => {
        const w = this.workerQueue(j.name);
        return {
          consumer: j.consumer,
          flagName: j.pauseFlagName,
          eventSourceMappingId: w.eventSource.eventSourceMappingId,
          eventSourceMappingArn: w.eventSource.eventSourceMappingArn,
        };
      }),
      ...config.streamConsumers.map((sc) => {
        const s = this.streamConsumer(sc.consumer);
        return {
          consumer: sc.consumer,
          flagName: sc.pauseFlagName,
          eventSourceMappingId: s.eventSource.eventSourceMappingId,
          eventSourceMappingArn: s.eventSource.eventSourceMappingArn,
        };
      }),
    ];
    this.controlFlags = new ControlFlags(this, 'ControlFlags', {
      stageName: stage,
      degradeFlagName: config.degradeFlagName,
      consumers,
      reconcilerEntry: lambdaEntry('flag-reconciler'),
    });
    for (const fn of degradeReaders) this.grantDegradeFlagRead(fn);

    this.observability = new Observability(this, 'Observability', {
      stageName: stage,
      topicName: config.stage.alarmTopic.name,
      deliverTo: config.stage.alarmTopic.deliverTo,
      jobTypes: config.jobTypes.map((j) => {
        const w = this.workerQueue(j.name);
        return {
          jobType: j,
          queue: w.queue,
          deadLetterQueue: w.deadLetterQueue,
          expiredQueue: w.expiredQueue,
          consumer: w.consumer.function,
        };
      }),
      streamConsumers: config.streamConsumers.map((sc) => {
        const s = this.streamConsumer(sc.consumer);
        return { streamConsumer: sc, consumer: s.consumer.function, failureQueue: s.failureQueue };
      }),
      reconciler: this.controlFlags.reconciler.function,
    });
  }

  /** The worker queue of a declared job type; throws listing the known ones. */
  public workerQueue(jobTypeName: string): WorkerQueue {
    return declared(this.workerQueues, 'job type', jobTypeName);
  }

  /** The stream consumer of a declared name; throws listing the known ones. */
  public streamConsumer(consumer: string): StreamConsumer {
    return declared(this.streamConsumers, 'stream consumer', consumer);
  }

  /** Lets `grantee` read the stage's degrade flag (`DEGRADE_FLAG`) with the one call Powertools' get() makes. */
  public grantDegradeFlagRead(grantee: iam.IGrantable): iam.Grant {
    return grantParameterRead(this.controlFlags.degradeFlag, grantee, 'ssm:GetParameter');
  }

  /** `<NAME>_TABLE` for each table a consumer uses. */
  public tableEnvironment(tables: Readonly<Record<string, readonly TableAction[]>>): Record<string, string> {
    return Object.fromEntries(
      Object.keys(tables).map((table) => [tableVariable(table), this.tables.byName(table).tableName]),
    );
  }

  /** Grants exactly the listed item actions on each table. */
  public grantTables(
    tables: Readonly<Record<string, readonly TableAction[]>>,
    grantee: iam.IGrantable,
  ): void {
    for (const [table, actions] of Object.entries(tables))
      grantItems(this.tables.byName(table), grantee, actions);
  }

  private queueOf(jobTypeName: string): sqs.Queue {
    return this.workerQueue(jobTypeName).queue;
  }
}
