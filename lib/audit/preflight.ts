/**
 * Preflight (P5): whether the account and region can take a stage before `cdk deploy`, as pure
 * decisions over what the account answered (preflight-reader.ts reads it; `tenang preflight` and
 * `tenang audit --live` print the verdicts). Five checks:
 *
 * - concurrency: the stage's worst-case concurrent executions against Lambda's unreserved
 *   concurrency. New accounts can have a quota far below the 1,000 default, and an SQS mapping
 *   whose function is throttled backs off (Lambda's "Configuring scaling behavior for SQS event
 *   source mappings").
 * - retained-resources: a fixed-name table or log group the stack keeps when it is deleted
 *   (DATA_REMOVAL_POLICY, the F2 trade-off) that exists outside the stack: the next create of
 *   that name fails on "already exists".
 * - bootstrap: the CDK bootstrap the template checks exists and is new enough.
 * - region-services: every service the stage uses is offered in the region.
 * - region-features: what the service list cannot tell (a runtime, an architecture, ElastiCache
 *   Serverless): no read-only API answers it, so it is reported `skipped`, never passed.
 *
 * What the stage needs comes from a template (a synthesized cdk.out or the deployed one:
 * stageFromTemplate) or, before any synth, from the declaration (stageFromConfig), which cannot
 * know the functions an app adds to the stack by itself and says so.
 *
 * No SDK and no aws-cdk-lib here: `tenang preflight` loads it, and only `tenang audit` may load
 * the CDK.
 */
import type { PipelineConfig } from '../config';
import { CACHE_ADMIN_SERVICE, RECONCILER_SERVICE } from '../config/metrics';
import { levels, type ChecklistItem } from './checklist';

/** The feature the preflight rules prove (docs/features.md#p5). */
export const PREFLIGHT_FEATURE_ID = 'P5';

/**
 * A share of the unreserved concurrency left free for the account's other functions and bursts:
 * a stage that fits only without it is a warning. @default 10 % of the stage's need, at least 5
 */
export const HEADROOM_RATIO = 0.1;
/** The least headroom, however small the stage. */
export const HEADROOM_MIN = 5;

/**
 * What an SQS mapping without a maximum concurrency can take: "The maximum number of batches that
 * an event source mapping can process simultaneously is 1,000" (Lambda, "Configuring scaling
 * behavior for SQS event source mappings").
 */
export const SQS_MAPPING_CEILING = 1_000;

/** Shards assumed per stream that does not exist yet. @default 1 */
export const DEFAULT_ASSUMED_SHARDS = 1;

/** The CDK's default bootstrap qualifier and the SSM parameter holding its version. */
export const DEFAULT_BOOTSTRAP_PARAMETER = '/cdk-bootstrap/hnb659fds/version';
/**
 * The bootstrap version templates of the current CDK require when no cdk.out says otherwise
 * (a synthesized template's CheckBootstrapVersion rule refuses versions 1–5).
 */
export const DEFAULT_BOOTSTRAP_VERSION = 6;
/** The bootstrap stack's default name. */
export const BOOTSTRAP_STACK = 'CDKToolkit';

/** A function of the stage. */
export interface StageFunction {
  readonly name: string;
  /** ReservedConcurrentExecutions, when set. */
  readonly reservedConcurrency?: number;
}

/** An event source mapping of the stage. */
export interface StageMapping {
  /** The function it invokes. */
  readonly functionName: string;
  readonly kind: 'queue' | 'stream';
  /** ScalingConfig.MaximumConcurrency (SQS only); undefined: not bounded. */
  readonly maxConcurrency?: number;
  /** Batches per shard at once (streams). @default 1 */
  readonly parallelizationFactor: number;
  /** The table whose stream it reads, when it is a DynamoDB stream of a named table. */
  readonly streamTable?: string;
}

/** What the template requires of the CDK bootstrap. */
export interface BootstrapRequirement {
  readonly version: number;
  /** The SSM parameter holding the bootstrap version (it names the qualifier). */
  readonly parameter: string;
  /** Where the requirement was read, e.g. `cdk.out manifest`. */
  readonly from: string;
}

/** What a stage needs from the account: functions, mappings, fixed names, services. */
export interface StageModel {
  readonly stackName: string;
  /** Where the model was read, e.g. `cdk.out/tenang-dev.template.json`. */
  readonly source: string;
  readonly functions: readonly StageFunction[];
  readonly mappings: readonly StageMapping[];
  /** Fixed-name tables the stack keeps when it is deleted. */
  readonly retainedTables: readonly string[];
  /** Fixed-name log groups the stack keeps when it is deleted. */
  readonly retainedLogGroups: readonly string[];
  /** Service codes as AWS's global-infrastructure parameters name them (`lambda`, `sqs`, …). */
  readonly services: readonly string[];
  /** Regional capabilities beyond the services, e.g. `Lambda runtime nodejs22.x`. */
  readonly features: readonly string[];
  /** undefined: the template checks no bootstrap version (e.g. built for the emulator). */
  readonly bootstrap: BootstrapRequirement | undefined;
  /** What the model cannot know, said with the verdicts. */
  readonly notes: readonly string[];
}

/** A fact read from the account, or why it could not be read (not allowed, not implemented). */
export type Reading<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly reason: string };

/** Lambda GetAccountSettings' AccountLimit. */
export interface AccountConcurrency {
  /** ConcurrentExecutions. */
  readonly limit: number;
  /** UnreservedConcurrentExecutions: what functions without reserved concurrency share. */
  readonly unreserved: number;
}

/** Whether the stage's stack exists, and what it holds. */
export type StackPresence =
  | { readonly exists: false }
  | {
      readonly exists: true;
      readonly status: string;
      /** Physical ids of its resources (a table's or log group's is its name). */
      readonly physicalIds: ReadonlySet<string>;
    };

/** The deployed bootstrap: its version, or undefined when there is none. */
export interface BootstrapState {
  readonly version: number | undefined;
  /** Where it was read, e.g. `SSM parameter /cdk-bootstrap/hnb659fds/version`. */
  readonly from: string;
}

/** Everything the checks judge. */
export interface PreflightFacts {
  readonly stage: StageModel;
  readonly region: string;
  readonly concurrency: Reading<AccountConcurrency>;
  /** Open shards per table whose stream exists. */
  readonly streamShards: ReadonlyMap<string, number>;
  /** Shards assumed for a stream that does not exist yet. */
  readonly assumedShards: number;
  readonly stack: StackPresence;
  /** Which of the stage's retained names exist in the account. */
  readonly existing: Reading<{
    readonly tables: ReadonlySet<string>;
    readonly logGroups: ReadonlySet<string>;
  }>;
  readonly bootstrap: Reading<BootstrapState>;
  /** Per service code: offered in the region. */
  readonly services: Reading<ReadonlyMap<string, boolean>>;
}

/** A check's verdict; `warn` does not fail the preflight. */
export type PreflightStatus = 'pass' | 'warn' | 'fail' | 'skipped';

/** The checks, in the order they are printed. */
export const PREFLIGHT_CHECK_IDS = [
  'concurrency',
  'retained-resources',
  'bootstrap',
  'region-services',
  'region-features',
] as const;
/** A check's id (`tenang preflight --json`'s `id`). */
export type PreflightCheckId = (typeof PREFLIGHT_CHECK_IDS)[number];

/** One verdict. */
export interface PreflightCheck {
  readonly id: PreflightCheckId;
  readonly status: PreflightStatus;
  readonly message: string;
  /** What to do; null when nothing is to be done. */
  readonly remedy: string | null;
  /** The resources at fault on a fail, the ones judged otherwise, as an operator names them. */
  readonly resources: readonly string[];
}

/** The audit rule of each check (`tenang audit --live`), quoted on docs/features.md#p5. */
export const PREFLIGHT_RULES: Readonly<Record<PreflightCheckId, { ruleId: string; title: string }>> = {
  concurrency: {
    ruleId: 'Tenang-P5-Concurrency',
    title:
      "The account's unreserved Lambda concurrency holds the stage's worst case (its mappings' maximum concurrency, its streams' shards × parallelization factor, 1 per other function) plus 10 % headroom.",
  },
  'retained-resources': {
    ruleId: 'Tenang-P5-RetainedResources',
    title: 'No fixed-name table or log group of the stage exists outside its stack.',
  },
  bootstrap: {
    ruleId: 'Tenang-P5-Bootstrap',
    title:
      'The CDK bootstrap the template checks exists in the account and region at the version it requires.',
  },
  'region-services': {
    ruleId: 'Tenang-P5-RegionServices',
    title: 'Every AWS service the stage uses is offered in its region.',
  },
  'region-features': {
    ruleId: 'Tenang-P5-RegionFeatures',
    title:
      "The region offers the stage's runtime, architecture and ElastiCache Serverless (reported not checkable: no read-only API says so).",
  },
};

// ---------------------------------------------------------------------------------------------
// The stage model

type Json = Readonly<Record<string, unknown>>;

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Deletion policies that leave the resource behind when the stack is deleted. */
const RETAINING_POLICIES = new Set(['Retain', 'RetainExceptOnCreate', 'Snapshot']);

/** `AWS::Lambda::Function` → `lambda`: the service codes of AWS's global-infrastructure parameters. */
const SERVICE_OF_TYPE_PREFIX: Readonly<Record<string, string>> = {
  'AWS::Lambda': 'lambda',
  'AWS::SQS': 'sqs',
  'AWS::DynamoDB': 'dynamodb',
  'AWS::SSM': 'ssm',
  'AWS::CloudWatch': 'cloudwatch',
  'AWS::SNS': 'sns',
  'AWS::Logs': 'logs',
  'AWS::ElastiCache': 'elasticache',
  'AWS::ApiGatewayV2': 'apigatewayv2',
  'AWS::ApiGateway': 'apigateway',
  'AWS::Events': 'events',
  'AWS::KMS': 'kms',
  'AWS::EC2': 'ec2',
  'AWS::SecretsManager': 'secretsmanager',
  'AWS::Kinesis': 'kinesis',
  'AWS::S3': 's3',
  'AWS::StepFunctions': 'stepfunctions',
};

/** The function name in a function ARN (`…:function:name[:qualifier]`), or the value itself. */
function functionNameOf(arnOrName: string): string {
  return /:function:([^:]+)/.exec(arnOrName)?.[1] ?? arnOrName;
}

/** The table in a DynamoDB stream ARN (`…:table/<name>/stream/<label>`). */
function tableOfStreamArn(arn: string): string | undefined {
  return /:dynamodb:[^:]*:[^:]*:table\/([^/]+)\/stream\//.exec(arn)?.[1];
}

/** The template's requirement of the CDK bootstrap, from its BootstrapVersion parameter and rule. */
function templateBootstrap(template: Json): BootstrapRequirement | undefined {
  const parameter = isRecord(template.Parameters) ? template.Parameters.BootstrapVersion : undefined;
  if (!isRecord(parameter)) return undefined;
  const name = typeof parameter.Default === 'string' ? parameter.Default : DEFAULT_BOOTSTRAP_PARAMETER;
  // CheckBootstrapVersion asserts the version is not one of a list ("1".."5"): the one after it.
  const refused = JSON.stringify(
    isRecord(template.Rules) ? (template.Rules.CheckBootstrapVersion ?? {}) : {},
  );
  const listed = [...refused.matchAll(/"(\d+)"/g)].map((m) => Number(m[1]));
  return {
    version: listed.length === 0 ? DEFAULT_BOOTSTRAP_VERSION : Math.max(...listed) + 1,
    parameter: name,
    from: 'the template (CheckBootstrapVersion)',
  };
}

/** What a cdk.out manifest says of a stack's bootstrap (its artifact and its asset manifests). */
export interface ManifestBootstrap {
  readonly requiresBootstrapStackVersion?: number;
  readonly bootstrapStackVersionSsmParameter?: string;
}

/**
 * The stage model of a template: a synthesized one (with its cdk.out manifest's bootstrap
 * requirement, which wins over the template's) or the deployed one.
 */
export function stageFromTemplate(
  template: unknown,
  stackName: string,
  source: string,
  manifest?: ManifestBootstrap,
): StageModel {
  const t: Json = isRecord(template) ? template : {};
  const resources = Object.entries(isRecord(t.Resources) ? t.Resources : {}).filter(
    (entry): entry is [string, Json] => isRecord(entry[1]),
  );
  const props = (r: Json): Json => (isRecord(r.Properties) ? r.Properties : {});
  const byId = new Map(resources);
  const nameOf = (id: string, property: string): string | undefined => {
    const value = props(byId.get(id) ?? {})[property];
    return typeof value === 'string' ? value : undefined;
  };
  const referenced = (value: unknown): string | undefined => {
    if (!isRecord(value)) return undefined;
    if (typeof value.Ref === 'string') return value.Ref;
    const getAtt = value['Fn::GetAtt'];
    return Array.isArray(getAtt) && typeof getAtt[0] === 'string' ? getAtt[0] : undefined;
  };

  const functions: StageFunction[] = [];
  const mappings: StageMapping[] = [];
  const retainedTables: string[] = [];
  const retainedLogGroups: string[] = [];
  const services = new Set<string>(['cloudformation']);
  const runtimes = new Set<string>();
  const architectures = new Set<string>();
  const features = new Set<string>();
  for (const [id, r] of resources) {
    const type = typeof r.Type === 'string' ? r.Type : '';
    const p = props(r);
    const prefix = type.split('::').slice(0, 2).join('::');
    const service = SERVICE_OF_TYPE_PREFIX[prefix];
    if (service !== undefined) services.add(service);
    const retained = typeof r.DeletionPolicy === 'string' && RETAINING_POLICIES.has(r.DeletionPolicy);
    if (type === 'AWS::Lambda::Function') {
      const reserved = p.ReservedConcurrentExecutions;
      functions.push({
        name: typeof p.FunctionName === 'string' ? p.FunctionName : id,
        ...(typeof reserved === 'number' ? { reservedConcurrency: reserved } : {}),
      });
      if (typeof p.Runtime === 'string') runtimes.add(p.Runtime);
      const archs = Array.isArray(p.Architectures) ? p.Architectures : ['x86_64'];
      for (const a of archs) if (typeof a === 'string') architectures.add(a);
    } else if (type === 'AWS::Lambda::EventSourceMapping') {
      const target = referenced(p.FunctionName);
      const fn =
        target !== undefined
          ? (nameOf(target, 'FunctionName') ?? target)
          : typeof p.FunctionName === 'string'
            ? functionNameOf(p.FunctionName)
            : id;
      // The emulator target attaches stream mappings elsewhere and says so in the metadata.
      const metadata = isRecord(r.Metadata) ? r.Metadata : {};
      const eventSource = metadata['tenang:stream-arn'] ?? p.EventSourceArn;
      const sourceId = referenced(eventSource);
      const sourceType = sourceId === undefined ? undefined : byId.get(sourceId)?.Type;
      const arn = typeof eventSource === 'string' ? eventSource : '';
      const streamTable =
        sourceType === 'AWS::DynamoDB::Table' && sourceId !== undefined
          ? (nameOf(sourceId, 'TableName') ?? sourceId)
          : tableOfStreamArn(arn);
      const isStream =
        streamTable !== undefined || sourceType === 'AWS::Kinesis::Stream' || arn.includes(':kinesis:');
      const scaling = isRecord(p.ScalingConfig) ? p.ScalingConfig.MaximumConcurrency : undefined;
      const factor = p.ParallelizationFactor;
      mappings.push({
        functionName: fn,
        kind: isStream ? 'stream' : 'queue',
        ...(typeof scaling === 'number' ? { maxConcurrency: scaling } : {}),
        parallelizationFactor: typeof factor === 'number' ? factor : 1,
        ...(streamTable === undefined ? {} : { streamTable }),
      });
    } else if (type === 'AWS::DynamoDB::Table') {
      if (retained && typeof p.TableName === 'string') retainedTables.push(p.TableName);
      if (isRecord(p.StreamSpecification)) services.add('dynamodbstreams');
    } else if (type === 'AWS::Logs::LogGroup') {
      if (retained && typeof p.LogGroupName === 'string') retainedLogGroups.push(p.LogGroupName);
    } else if (type === 'AWS::ElastiCache::ServerlessCache') {
      features.add(
        `ElastiCache Serverless (${typeof p.Engine === 'string' ? p.Engine : 'engine not given'})`,
      );
    } else if (type === 'AWS::SQS::Queue' && (p.FifoQueue === true || p.FifoQueue === 'true')) {
      features.add('SQS FIFO queues');
    }
  }
  const fromTemplate = templateBootstrap(t);
  const bootstrap: BootstrapRequirement | undefined =
    manifest?.requiresBootstrapStackVersion !== undefined
      ? {
          version: manifest.requiresBootstrapStackVersion,
          parameter:
            manifest.bootstrapStackVersionSsmParameter ??
            fromTemplate?.parameter ??
            DEFAULT_BOOTSTRAP_PARAMETER,
          from: 'the cdk.out manifest (requiresBootstrapStackVersion)',
        }
      : fromTemplate;
  return {
    stackName,
    source,
    functions,
    mappings,
    retainedTables,
    retainedLogGroups,
    services: [...services].sort(),
    features: [
      ...[...runtimes].sort().map((r) => `Lambda runtime ${r}`),
      ...[...architectures].sort().map((a) => `Lambda architecture ${a}`),
      ...[...features].sort(),
    ],
    bootstrap,
    notes: [],
  };
}

/**
 * Services PipelineStack always uses (lib/infra/pipeline-stack.ts: queues, functions, tables,
 * the SSM flags, alarms and their topic with its key, the reconciler's rules, the cache in its
 * VPC with its disabled default user's secret, and log groups); the template-based model reads
 * them from the template instead.
 */
const PIPELINE_STACK_SERVICES = [
  'cloudformation',
  'cloudwatch',
  'dynamodb',
  'ec2',
  'elasticache',
  'events',
  'kms',
  'lambda',
  'logs',
  'secretsmanager',
  'sns',
  'sqs',
  'ssm',
];

/**
 * The stage model of the declaration alone (no synth): the pipeline's functions and their log
 * groups, its tables and mappings. Functions an app adds to the stack itself are unknown here.
 */
export function stageFromConfig(config: PipelineConfig, stackName: string): StageModel {
  const fn = (service: string): string => `${stackName}-${service}`;
  const queueMappings: StageMapping[] = config.jobTypes.map((j) => ({
    functionName: fn(j.consumer),
    kind: 'queue',
    maxConcurrency: j.batch.maxConcurrency,
    parallelizationFactor: 1,
  }));
  const tableName = new Map(config.tables.map((t) => [t.name, t.tableName]));
  const streamMappings: StageMapping[] = config.streamConsumers.map((s) => ({
    functionName: fn(s.consumer),
    kind: 'stream',
    // StreamConsumer sets no parallelization factor: Lambda's default of 1.
    parallelizationFactor: 1,
    streamTable: tableName.get(s.table) ?? fn(s.table),
  }));
  const functions = [
    ...config.jobTypes.map((j) => j.consumer),
    ...config.streamConsumers.map((s) => s.consumer),
    // tenang's own functions: PipelineStack always builds both.
    RECONCILER_SERVICE,
    CACHE_ADMIN_SERVICE,
  ].map((service) => ({ name: fn(service) }));
  const hasStream = config.tables.some((t) => t.stream !== undefined);
  return {
    stackName,
    source: "the pipeline declaration (TENANG_PIPELINE or the stage's config)",
    functions,
    mappings: [...queueMappings, ...streamMappings],
    retainedTables: config.tables.map((t) => t.tableName),
    // TenangFunction names each function's log group as Lambda does.
    retainedLogGroups: functions.map((f) => `/aws/lambda/${f.name}`),
    services: [...PIPELINE_STACK_SERVICES, ...(hasStream ? ['dynamodbstreams'] : [])].sort(),
    features: [],
    bootstrap: {
      version: DEFAULT_BOOTSTRAP_VERSION,
      parameter: DEFAULT_BOOTSTRAP_PARAMETER,
      from: "the CDK's default (no cdk.out given)",
    },
    notes: [
      "functions the app adds to the stack itself (e.g. the reference app's HTTP ingress and order reader) are not in the declaration: give --cdk-out <dir> (after cdk synth) to count them",
    ],
  };
}

// ---------------------------------------------------------------------------------------------
// The checks

/** The stage's worst-case concurrent executions, part by part. */
export interface ConcurrencyDemand {
  readonly total: number;
  /** e.g. `queue mappings 10+5+5`. */
  readonly parts: readonly string[];
  /** What was assumed rather than read. */
  readonly assumptions: readonly string[];
}

/**
 * What the stage can run at once: each queue mapping's maximum concurrency (1,000 when unbounded),
 * each stream mapping's shards × parallelization factor (one invocation per shard and factor: the
 * open shards when the stream exists, else `assumedShards`), and 1 per function no mapping
 * invokes (its reserved concurrency, when set: it is taken from the pool either way).
 */
export function concurrencyDemand(
  stage: StageModel,
  streamShards: ReadonlyMap<string, number>,
  assumedShards: number,
): ConcurrencyDemand {
  const assumptions: string[] = [];
  const queue = stage.mappings.filter((m) => m.kind === 'queue');
  const queueCounts = queue.map((m) => {
    if (m.maxConcurrency !== undefined) return m.maxConcurrency;
    assumptions.push(
      `${m.functionName}'s queue mapping has no maximum concurrency: counted as ${SQS_MAPPING_CEILING}`,
    );
    return SQS_MAPPING_CEILING;
  });
  const streamCounts = stage.mappings
    .filter((m) => m.kind === 'stream')
    .map((m) => {
      const known = m.streamTable === undefined ? undefined : streamShards.get(m.streamTable);
      if (known === undefined)
        assumptions.push(
          `${m.functionName}: ${assumedShards} shard${assumedShards === 1 ? '' : 's'} assumed (its stream does not exist yet; a stream's shards grow with its table's partitions)`,
        );
      return (known ?? assumedShards) * m.parallelizationFactor;
    });
  const invoked = new Set(stage.mappings.map((m) => m.functionName));
  const others = stage.functions.filter((f) => !invoked.has(f.name));
  const otherCounts = others.map((f) => f.reservedConcurrency ?? 1);
  const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);
  const parts = [
    queue.length > 0 ? `queue mappings ${queueCounts.join('+')}` : undefined,
    streamCounts.length > 0
      ? `stream mappings ${streamCounts.join('+')} (shards × parallelization factor)`
      : undefined,
    others.length > 0
      ? `${others.length} other function${others.length === 1 ? '' : 's'} ${sum(otherCounts)}`
      : undefined,
  ].filter((p): p is string => p !== undefined);
  return { total: sum(queueCounts) + sum(streamCounts) + sum(otherCounts), parts, assumptions };
}

/** The headroom asked for on top of a need. */
export function headroomFor(need: number): number {
  return Math.max(HEADROOM_MIN, Math.ceil(need * HEADROOM_RATIO));
}

function check(
  id: PreflightCheckId,
  status: PreflightStatus,
  message: string,
  remedy: string | null = null,
  resources: readonly string[] = [],
): PreflightCheck {
  return { id, status, message, remedy, resources };
}

/** Concurrency: fail when the need does not fit the unreserved pool, warn when the headroom does not. */
export function checkConcurrency(facts: PreflightFacts): PreflightCheck {
  const demand = concurrencyDemand(facts.stage, facts.streamShards, facts.assumedShards);
  const needs = `the stage can run ${demand.total} concurrent executions at once (${demand.parts.join(', ') || 'no functions'})${
    demand.assumptions.length > 0 ? `; assumed: ${demand.assumptions.join('; ')}` : ''
  }`;
  if (!facts.concurrency.ok)
    return check(
      'concurrency',
      'skipped',
      `${needs}; the account's concurrency could not be read: ${facts.concurrency.reason}`,
      'allow lambda:GetAccountSettings, or compare with the quota in Service Quotas (Lambda, "Concurrent executions")',
    );
  const { limit, unreserved } = facts.concurrency.value;
  const headroom = headroomFor(demand.total);
  const has = `the account has ${unreserved} unreserved of ${limit} (GetAccountSettings)`;
  // Functions without reserved concurrency share the unreserved pool; what others reserved is gone.
  const desired = limit - unreserved + demand.total + headroom;
  const remedy =
    `ask for a "Concurrent executions" quota of at least ${desired} in Service Quotas ` +
    `(aws service-quotas request-service-quota-increase --service-code lambda --quota-code L-B99A9384 --desired-value ${desired} --region ${facts.region}), ` +
    `or lower the job types' batch.maxConcurrency (at least 2 each) so the stage fits; ` +
    'reserving concurrency for a function needs more still: Lambda keeps at least 100 of the account unreserved';
  if (demand.total > unreserved)
    return check(
      'concurrency',
      'fail',
      `${needs}; ${has}: under load its functions are throttled and the mappings back off`,
      remedy,
    );
  if (demand.total + headroom > unreserved)
    return check(
      'concurrency',
      'warn',
      `${needs}; ${has}: it fits, but with less than ${headroom} to spare (10 % headroom) for the account's other functions`,
      remedy,
    );
  return check(
    'concurrency',
    'pass',
    `${needs}; ${has}, with ${unreserved - demand.total} to spare`,
    null,
    facts.stage.functions.map((f) => `function ${f.name}`),
  );
}

/** Retained resources: a fixed name of the stage taken by a resource outside its stack. */
export function checkRetainedResources(facts: PreflightFacts): PreflightCheck {
  const { stage, stack } = facts;
  const names = stage.retainedTables.length + stage.retainedLogGroups.length;
  const where = stack.exists
    ? `stack ${stage.stackName} (${stack.status})`
    : `stack ${stage.stackName} does not exist`;
  if (!facts.existing.ok)
    return check(
      'retained-resources',
      'skipped',
      `the stage's ${names} fixed-name tables and log groups could not be looked up: ${facts.existing.reason}`,
      'allow dynamodb:DescribeTable and logs:DescribeLogGroups',
    );
  const existing = facts.existing.value;
  const outside = (name: string): boolean => !stack.exists || !stack.physicalIds.has(name);
  const tables = stage.retainedTables.filter((t) => existing.tables.has(t) && outside(t));
  const logGroups = stage.retainedLogGroups.filter((g) => existing.logGroups.has(g) && outside(g));
  if (tables.length === 0 && logGroups.length === 0)
    return check(
      'retained-resources',
      'pass',
      `none of the stage's ${stage.retainedTables.length} fixed-name tables and ${stage.retainedLogGroups.length} log groups exists outside its stack (${where})`,
      null,
      [
        ...stage.retainedTables.map((t) => `table ${t}`),
        ...stage.retainedLogGroups.map((g) => `log group ${g}`),
      ],
    );
  const resources = [...tables.map((t) => `table ${t}`), ...logGroups.map((g) => `log group ${g}`)];
  const deletes = [
    ...tables.map(
      (t) =>
        `aws dynamodb create-backup --table-name ${t} --backup-name ${t}-retained && aws dynamodb delete-table --table-name ${t}`,
    ),
    ...logGroups.map((g) => `aws logs delete-log-group --log-group-name ${g}`),
  ];
  return check(
    'retained-resources',
    'fail',
    `${resources.join(', ')} exist${resources.length === 1 ? 's' : ''} outside the stage's stack (${where}): the stack keeps them when it is deleted, and a deploy that creates the same fixed name fails on "already exists"`,
    `either delete ${resources.length === 1 ? 'it' : 'them'} (the table's data goes; the backup keeps it): ${deletes.join('; ')}; ` +
      `or keep ${resources.length === 1 ? 'it' : 'them'} and adopt ${resources.length === 1 ? 'it' : 'them'} into the stack before deploying: npx cdk import ${stage.stackName} ` +
      '(CloudFormation resource import; it needs bootstrap version 12, and an import may only add the imported resources)',
    resources,
  );
}

/** Bootstrap: the bootstrap the template checks exists at the version it requires. */
export function checkBootstrap(facts: PreflightFacts): PreflightCheck {
  const required = facts.stage.bootstrap;
  if (required === undefined)
    return check(
      'bootstrap',
      'pass',
      "the stage's template checks no CDK bootstrap version (no BootstrapVersion parameter: built for the emulator target)",
    );
  const qualifier = /^\/cdk-bootstrap\/([^/]+)\/version$/.exec(required.parameter)?.[1];
  const qualifierFlag =
    qualifier === undefined || qualifier === 'hnb659fds' ? '' : ` --qualifier ${qualifier}`;
  const bootstrapCommand = `npx cdk bootstrap aws://ACCOUNT-ID/${facts.region}${qualifierFlag}`;
  const needs = `the template needs bootstrap version ${required.version} or later (from ${required.from})`;
  if (!facts.bootstrap.ok)
    return check(
      'bootstrap',
      'skipped',
      `${needs}; the bootstrap could not be read: ${facts.bootstrap.reason}`,
      `allow ssm:GetParameter on ${required.parameter} and cloudformation:DescribeStacks on ${BOOTSTRAP_STACK}`,
    );
  const { version, from } = facts.bootstrap.value;
  if (version === undefined)
    return check(
      'bootstrap',
      'fail',
      `${needs}; the account is not bootstrapped in ${facts.region}: ${from}`,
      `bootstrap it: ${bootstrapCommand}`,
      [required.parameter],
    );
  if (version < required.version)
    return check(
      'bootstrap',
      'fail',
      `${needs}; the bootstrap in ${facts.region} is version ${version} (${from}): the deploy stops at CheckBootstrapVersion`,
      `bootstrap again with a current CDK CLI (it upgrades in place): ${bootstrapCommand}`,
      [required.parameter],
    );
  return check(
    'bootstrap',
    'pass',
    `${needs}; the bootstrap in ${facts.region} is version ${version} (${from})`,
    null,
    [required.parameter],
  );
}

/** Region services: each service the stage uses is offered in the region. */
export function checkRegionServices(facts: PreflightFacts): PreflightCheck {
  const used = facts.stage.services;
  if (!facts.services.ok)
    return check(
      'region-services',
      'skipped',
      `whether ${facts.region} offers ${used.join(', ')} could not be read: ${facts.services.reason}`,
      'check the AWS regional services list for the region',
    );
  const offered = facts.services.value;
  const missing = used.filter((s) => offered.get(s) !== true);
  if (missing.length > 0)
    return check(
      'region-services',
      'fail',
      `${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} not offered in ${facts.region} (SSM public parameters /aws/service/global-infrastructure): the deploy fails creating ${missing.length === 1 ? 'its' : 'their'} resources`,
      `deploy the stage to a region that offers every service it uses (AWS_REGION), or drop what needs ${missing.join(', ')}`,
      missing,
    );
  return check(
    'region-services',
    'pass',
    `the ${used.length} services the stage uses are offered in ${facts.region} (${used.join(', ')}; SSM public parameters /aws/service/global-infrastructure)`,
    null,
    used,
  );
}

/** Region features: not checkable read-only, reported as such. */
export function checkRegionFeatures(facts: PreflightFacts): PreflightCheck {
  const features = facts.stage.features;
  const what =
    features.length > 0
      ? features.join(', ')
      : "the stage's runtime, architecture and ElastiCache Serverless (the declaration does not say which: give --cdk-out)";
  return check(
    'region-features',
    'skipped',
    `not checkable read-only: whether ${facts.region} offers ${what} has no read-only API (the service list only says the service is there)`,
    "check the region in AWS's regional product services list and each service's documentation before the first deploy there",
    features,
  );
}

/** Every check over the facts, in PREFLIGHT_CHECK_IDS order. */
export function evaluatePreflight(facts: PreflightFacts): PreflightCheck[] {
  return [
    checkConcurrency(facts),
    checkRetainedResources(facts),
    checkBootstrap(facts),
    checkRegionServices(facts),
    checkRegionFeatures(facts),
  ];
}

/** Whether the preflight fails: a check failed (a warning or a skipped check does not). */
export function preflightFailed(checks: readonly PreflightCheck[]): boolean {
  return checks.some((c) => c.status === 'fail');
}

/**
 * The checks as checklist items (the live audit's findings): a warning is a warning-level
 * failure, a skipped check not-checkable, the remedy part of the why.
 */
export function preflightChecklist(checks: readonly PreflightCheck[]): ChecklistItem[] {
  return checks.map((c) => {
    const rule = PREFLIGHT_RULES[c.id];
    const status = c.status === 'pass' ? 'pass' : c.status === 'skipped' ? 'not-checkable' : 'fail';
    return {
      ruleId: rule.ruleId,
      featureId: PREFLIGHT_FEATURE_ID,
      title: rule.title,
      status,
      ...levels(status, c.status === 'warn' ? 'warning' : 'error'),
      why: c.remedy === null || c.status === 'pass' ? c.message : `${c.message}; to fix: ${c.remedy}`,
      resources: c.resources,
    };
  });
}
