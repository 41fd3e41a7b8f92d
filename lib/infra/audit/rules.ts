/**
 * The worker-queue audit checklist (the pre-automation checklist, docs/features.md#p4) as pure rules over a
 * CloudFormation-template-like model. The same rules back the cdk-nag pack (TenangChecks, built
 * from a stack's L1 resources) and `auditTemplate` (a raw template file), so both always agree.
 * No CDK import here: a rule sees only
 * `{ Resources: { id: { Type, Properties, Metadata, DeletionPolicy, UpdateReplacePolicy } } }`.
 * The deploy-readiness rules (issue 13) live in deploy-readiness.ts and are listed here too.
 */
import { DEPLOY_READINESS_RULES } from './deploy-readiness';

/** One resource as a template holds it, intrinsics unresolved. */
export interface TemplateResource {
  readonly Type: string;
  readonly Properties?: Readonly<Record<string, unknown>>;
  readonly Metadata?: Readonly<Record<string, unknown>>;
  /** `Delete` (the default when absent), `Retain`, `RetainExceptOnCreate` or `Snapshot`. */
  readonly DeletionPolicy?: string;
  /** `Delete` (the default when absent), `Retain` or `Snapshot`. */
  readonly UpdateReplacePolicy?: string;
}

/** The part of a CloudFormation template the rules read. */
export interface TemplateModel {
  readonly Resources: Readonly<Record<string, TemplateResource>>;
}

/** What a rule says about one resource. */
export interface ResourceFinding {
  readonly logicalId: string;
  readonly compliant: boolean;
  /** Why, in words an on-call engineer can act on. */
  readonly why: string;
}

/** A checklist rule over a template. */
export interface TemplateRule {
  /** Rule id without the pack prefix, e.g. `D2` (the pack reports `Tenang-D2`). */
  readonly suffix: string;
  /** The feature id the rule proves (docs/features.md). */
  readonly featureId: string;
  /** One line: what a compliant resource looks like. */
  readonly title: string;
  /** Why the rule exists (the audit question it answers). */
  readonly explanation: string;
  /** Findings for the resources the rule applies to; none means not applicable. */
  readonly check: (index: TemplateIndex) => readonly ResourceFinding[];
}

/** Prefix of every rule id, the cdk-nag pack name. */
export const RULE_PREFIX = 'Tenang';

/** AWS guidance: a queue's visibility timeout is at least 6 × its consumer's timeout (D2). */
export const MIN_VISIBILITY_FACTOR = 6;
/** Bounds on maxReceiveCount: at least one retry, and few enough that a poison message reaches the DLQ. */
export const MAX_RECEIVE_COUNT_RANGE = { min: 2, max: 20 } as const;
/** SQS's default visibility timeout, seconds. */
export const SQS_DEFAULT_VISIBILITY_SECONDS = 30;
/** Lambda's default function timeout, seconds. */
export const LAMBDA_DEFAULT_TIMEOUT_SECONDS = 3;
/**
 * Metadata key under which an emulator deployment keeps a stream mapping's real stream ARN
 * (lib/infra/stream-consumer.ts STREAM_ARN_METADATA); kept literal so this module stays CDK-free.
 */
export const STREAM_ARN_METADATA_KEY = 'tenang:stream-arn';

/** SQS queue type (these types are shared with the live audit, which builds such resources). */
export const QUEUE = 'AWS::SQS::Queue';
/** DynamoDB table type. */
export const TABLE = 'AWS::DynamoDB::Table';
/** Lambda function type. */
export const FUNCTION = 'AWS::Lambda::Function';
/** Lambda event source mapping type. */
export const MAPPING = 'AWS::Lambda::EventSourceMapping';
/** CloudWatch metric alarm type. */
export const ALARM = 'AWS::CloudWatch::Alarm';
/** CloudWatch composite alarm type. */
export const COMPOSITE_ALARM = 'AWS::CloudWatch::CompositeAlarm';

/** Names that mark a table as an idempotency or dedup store (I1, Q1). */
const IDEMPOTENCY_PATTERN = /idempot|dedup/i;
/** Names that mark a table as a lock store (L1). */
const LOCK_PATTERN = /lock/i;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A literal number, or a numeric string (raw templates often quote numbers); undefined otherwise. */
export function literalNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
    return Number(value);
  return undefined;
}

/** A literal boolean, or "true"/"false". */
function literalBoolean(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (value === 'true' || value === 'false') return value === 'true';
  return undefined;
}

/** Renders a value as text, intrinsics as `<Id.Attr>` placeholders and Fn::Join joined. */
export function flattenText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return value.map(flattenText).join(',');
  if (isRecord(value)) {
    if (typeof value.Ref === 'string') return `<${value.Ref}>`;
    const getAtt = value['Fn::GetAtt'];
    if (Array.isArray(getAtt)) return `<${getAtt.map(String).join('.')}>`;
    if (typeof getAtt === 'string') return `<${getAtt}>`;
    const join = value['Fn::Join'];
    if (Array.isArray(join) && typeof join[0] === 'string' && Array.isArray(join[1])) {
      return (join[1] as unknown[]).map(flattenText).join(join[0]);
    }
    const sub = value['Fn::Sub'];
    if (typeof sub === 'string') return sub;
  }
  return JSON.stringify(value) ?? '';
}

/** What an event source mapping reads from. */
export type MappingSourceKind = 'sqs' | 'stream' | 'other';

/** An event source mapping with its source and function resolved inside the template. */
export interface ResolvedMapping {
  readonly logicalId: string;
  readonly properties: Readonly<Record<string, unknown>>;
  readonly sourceKind: MappingSourceKind;
  /** Logical id of the source queue or table, when it is in the template. */
  readonly sourceId: string | undefined;
  /** Logical id of the function, when it is in the template. */
  readonly functionId: string | undefined;
}

/** A metric an alarm watches (plain or inside a metric-math expression). */
interface WatchedMetric {
  readonly namespace: string;
  readonly metricName: string;
  readonly dimensions: readonly { readonly name: string; readonly value: unknown }[];
}

/** Lookups the rules share, built once per template. */
export class TemplateIndex {
  /** Every resource, by logical id. */
  public readonly resources: ReadonlyMap<string, TemplateResource>;
  /** Every event source mapping, resolved. */
  public readonly mappings: readonly ResolvedMapping[];

  public constructor(model: TemplateModel) {
    this.resources = new Map(Object.entries(model.Resources).filter(([, r]) => isRecord(r)));
    this.mappings = this.ofType(MAPPING).map(([id, r]) => this.resolveMapping(id, r));
  }

  /** Resources of a type, as [logicalId, resource]. */
  public ofType(type: string): [string, TemplateResource][] {
    return [...this.resources].filter(([, r]) => r.Type === type);
  }

  /** A resource's properties (empty when it has none). */
  public props(logicalId: string): Readonly<Record<string, unknown>> {
    return this.resources.get(logicalId)?.Properties ?? {};
  }

  /**
   * The logical id a value points to: `Ref`, `Fn::GetAtt`, or a literal name or ARN matching a
   * resource of `type` in the template (by its name property).
   */
  public referencedId(value: unknown, type: string): string | undefined {
    if (isRecord(value)) {
      const target =
        typeof value.Ref === 'string'
          ? value.Ref
          : Array.isArray(value['Fn::GetAtt'])
            ? String((value['Fn::GetAtt'] as unknown[])[0])
            : typeof value['Fn::GetAtt'] === 'string'
              ? value['Fn::GetAtt'].split('.')[0]
              : undefined;
      return target !== undefined && this.resources.get(target)?.Type === type ? target : undefined;
    }
    if (typeof value !== 'string') return undefined;
    const nameProperty = { [QUEUE]: 'QueueName', [TABLE]: 'TableName', [FUNCTION]: 'FunctionName' }[type];
    if (nameProperty === undefined) return undefined;
    // arn:aws:sqs:region:account:name, arn:aws:dynamodb:…:table/name/stream/…, arn:aws:lambda:…:function:name
    const name =
      /:table\/([^/]+)/.exec(value)?.[1] ?? /:function:([^:]+)/.exec(value)?.[1] ?? value.split(':').pop();
    return this.ofType(type).find(([, r]) => r.Properties?.[nameProperty] === name)?.[0];
  }

  private resolveMapping(logicalId: string, resource: TemplateResource): ResolvedMapping {
    const properties = resource.Properties ?? {};
    // An emulator deployment points a stream mapping at a queue and keeps the stream here.
    const decoupled = resource.Metadata?.[STREAM_ARN_METADATA_KEY];
    const source = decoupled ?? properties.EventSourceArn;
    const queueId = this.referencedId(source, QUEUE);
    const tableId = this.referencedId(source, TABLE);
    const text = flattenText(source);
    const sourceKind: MappingSourceKind =
      queueId !== undefined || /:sqs:/.test(text)
        ? 'sqs'
        : tableId !== undefined || /StreamArn|\/stream\/|:kinesis:/.test(text)
          ? 'stream'
          : 'other';
    return {
      logicalId,
      properties,
      sourceKind,
      sourceId: queueId ?? tableId,
      functionId: this.referencedId(properties.FunctionName, FUNCTION),
    };
  }

  /** Source queues: queues an SQS event source mapping reads, by logical id. */
  public sourceQueueIds(): string[] {
    return [
      ...new Set(
        this.mappings
          .filter((m) => m.sourceKind === 'sqs' && m.sourceId !== undefined)
          .map((m) => m.sourceId),
      ),
    ] as string[];
  }

  /** Dead-letter queues: redrive targets and on-failure destinations that are queues in the template. */
  public deadLetterQueueIds(): string[] {
    const ids = new Set<string>();
    for (const [, q] of this.ofType(QUEUE)) {
      const target = redrivePolicy(q.Properties?.RedrivePolicy)?.deadLetterTargetArn;
      const id = this.referencedId(target, QUEUE);
      if (id !== undefined) ids.add(id);
    }
    for (const m of this.mappings) {
      const destination = onFailureDestination(m.properties);
      const id = this.referencedId(destination, QUEUE);
      if (id !== undefined) ids.add(id);
    }
    return [...ids];
  }

  /** Whether an alarm in the template watches a metric of a queue. */
  public hasQueueAlarm(queueId: string, metricName: string): boolean {
    const queueName = this.props(queueId).QueueName;
    return this.ofType(ALARM).some(([, alarm]) =>
      watchedMetrics(alarm.Properties ?? {}).some(
        (m) =>
          m.namespace === 'AWS/SQS' &&
          m.metricName === metricName &&
          m.dimensions.some(
            (d) =>
              d.name === 'QueueName' &&
              (this.referencedId(d.value, QUEUE) === queueId ||
                (queueName !== undefined && d.value === queueName)),
          ),
      ),
    );
  }

  /** Environment variable names under which functions receive a table (its "use"). */
  public tableVariables(tableId: string): string[] {
    return this.ofType(FUNCTION).flatMap(([, fn]) => {
      const environment = fn.Properties?.Environment;
      const variables = isRecord(environment) && isRecord(environment.Variables) ? environment.Variables : {};
      return Object.entries(variables)
        .filter(([, v]) => this.referencedId(v, TABLE) === tableId)
        .map(([k]) => k);
    });
  }
}

/** A queue's redrive policy, parsed when a raw template holds it as a JSON string. */
export function redrivePolicy(
  value: unknown,
): { deadLetterTargetArn?: unknown; maxReceiveCount?: unknown } | undefined {
  if (typeof value === 'string') {
    try {
      const parsed: unknown = JSON.parse(value);
      return isRecord(parsed) ? parsed : undefined;
    } catch {
      return undefined;
    }
  }
  return isRecord(value) ? value : undefined;
}

function onFailureDestination(properties: Readonly<Record<string, unknown>>): unknown {
  const config = properties.DestinationConfig;
  if (!isRecord(config) || !isRecord(config.OnFailure)) return undefined;
  return config.OnFailure.Destination;
}

function dimensionsOf(value: unknown): WatchedMetric['dimensions'] {
  return Array.isArray(value)
    ? value.filter(isRecord).map((d) => ({ name: String(d.Name), value: d.Value }))
    : [];
}

function watchedMetrics(properties: Readonly<Record<string, unknown>>): WatchedMetric[] {
  const metrics: WatchedMetric[] = [];
  if (typeof properties.MetricName === 'string') {
    metrics.push({
      namespace: String(properties.Namespace),
      metricName: properties.MetricName,
      dimensions: dimensionsOf(properties.Dimensions),
    });
  }
  for (const query of Array.isArray(properties.Metrics) ? properties.Metrics : []) {
    const metric = isRecord(query) && isRecord(query.MetricStat) ? query.MetricStat.Metric : undefined;
    if (isRecord(metric) && typeof metric.MetricName === 'string') {
      metrics.push({
        namespace: String(metric.Namespace),
        metricName: metric.MetricName,
        dimensions: dimensionsOf(metric.Dimensions),
      });
    }
  }
  return metrics;
}

function finding(logicalId: string, compliant: boolean, why: string): ResourceFinding {
  return { logicalId, compliant, why };
}

/** D2: visibility timeout ≥ 6 × the timeout of the function the queue's mapping feeds. */
const visibilityTimeout: TemplateRule = {
  suffix: 'D2',
  featureId: 'D2',
  title: `The SQS queue's visibility timeout is at least ${MIN_VISIBILITY_FACTOR} × the timeout of the function its event source mapping feeds.`,
  explanation:
    'A shorter visibility timeout lets a second worker receive a job while the first still runs it (and retries inside Lambda make it worse): duplicates and double side effects.',
  check: (index) =>
    index.mappings.flatMap((m) => {
      if (m.sourceKind !== 'sqs' || m.sourceId === undefined || m.functionId === undefined) return [];
      const visibilityRaw = index.props(m.sourceId).VisibilityTimeout;
      const timeoutRaw = index.props(m.functionId).Timeout;
      const visibility =
        visibilityRaw === undefined ? SQS_DEFAULT_VISIBILITY_SECONDS : literalNumber(visibilityRaw);
      const timeout = timeoutRaw === undefined ? LAMBDA_DEFAULT_TIMEOUT_SECONDS : literalNumber(timeoutRaw);
      if (visibility === undefined || timeout === undefined) {
        return [
          finding(
            m.sourceId,
            false,
            `${m.sourceId}: the visibility timeout or ${m.functionId}'s timeout is not a literal number, so it cannot be verified`,
          ),
        ];
      }
      const needed = MIN_VISIBILITY_FACTOR * timeout;
      return [
        finding(
          m.sourceId,
          visibility >= needed,
          `${m.sourceId}: visibility timeout ${visibility} s ${visibility >= needed ? '≥' : '<'} ${MIN_VISIBILITY_FACTOR} × ${m.functionId} timeout ${timeout} s = ${needed} s`,
        ),
      ];
    }),
};

/** D3: SQS mappings report partial batch failures. */
const partialBatch: TemplateRule = {
  suffix: 'D3',
  featureId: 'D3',
  title: 'The SQS event source mapping has FunctionResponseTypes ReportBatchItemFailures.',
  explanation:
    'Without partial batch responses one bad record fails its whole batch: the good records are processed again (duplicates) and count towards the DLQ.',
  check: (index) =>
    index.mappings
      .filter((m) => m.sourceKind === 'sqs')
      .map((m) => {
        const types = m.properties.FunctionResponseTypes;
        const ok = Array.isArray(types) && types.includes('ReportBatchItemFailures');
        return finding(
          m.logicalId,
          ok,
          `${m.logicalId}: ${ok ? 'reports' : 'does not report'} batch item failures`,
        );
      }),
};

/** R3: each source queue redrives to a DLQ after a bounded number of receives. */
const deadLetterQueue: TemplateRule = {
  suffix: 'R3',
  featureId: 'R3',
  title: `The source queue has a dead-letter queue with maxReceiveCount in [${MAX_RECEIVE_COUNT_RANGE.min}, ${MAX_RECEIVE_COUNT_RANGE.max}].`,
  explanation:
    'Without a DLQ a poison message is retried until it expires and is lost; a maxReceiveCount of 1 never retries a transient failure, a large one turns a poison message into a retry storm.',
  check: (index) =>
    index.sourceQueueIds().map((id) => {
      const policy = redrivePolicy(index.props(id).RedrivePolicy);
      if (policy?.deadLetterTargetArn === undefined)
        return finding(id, false, `${id}: no redrive policy (no DLQ)`);
      const count = literalNumber(policy.maxReceiveCount);
      const { min, max } = MAX_RECEIVE_COUNT_RANGE;
      const ok = count !== undefined && count >= min && count <= max;
      return finding(
        id,
        ok,
        `${id}: maxReceiveCount ${count ?? flattenText(policy.maxReceiveCount)} ${ok ? 'is' : 'is not'} in [${min}, ${max}]`,
      );
    }),
};

/** O3: each source queue has an oldest-message-age alarm. */
const queueAgeAlarm: TemplateRule = {
  suffix: 'O3-QueueAge',
  featureId: 'O3',
  title: 'The source queue has an ApproximateAgeOfOldestMessage alarm.',
  explanation:
    'A backlog is silent until users notice: the oldest message age is the first sign of a stuck or slow consumer.',
  check: (index) =>
    index.sourceQueueIds().map((id) => {
      const ok = index.hasQueueAlarm(id, 'ApproximateAgeOfOldestMessage');
      return finding(id, ok, `${id}: ${ok ? 'has' : 'has no'} ApproximateAgeOfOldestMessage alarm`);
    }),
};

/** O3: each DLQ has a depth alarm. */
const dlqDepthAlarm: TemplateRule = {
  suffix: 'O3-DlqDepth',
  featureId: 'O3',
  title: 'The dead-letter queue (or on-failure destination) has an ApproximateNumberOfMessagesVisible alarm.',
  explanation: 'A message in a DLQ is a job that did not happen; nobody looks at a DLQ nobody is paged for.',
  check: (index) =>
    index.deadLetterQueueIds().map((id) => {
      const ok = index.hasQueueAlarm(id, 'ApproximateNumberOfMessagesVisible');
      return finding(id, ok, `${id}: ${ok ? 'has' : 'has no'} ApproximateNumberOfMessagesVisible alarm`);
    }),
};

/** R6: stream mappings isolate poison records and bound their retries. */
const streamFailureHandling: TemplateRule = {
  suffix: 'R6',
  featureId: 'R6',
  title:
    'The stream event source mapping bisects on error, bounds MaximumRetryAttempts and MaximumRecordAgeInSeconds, and has an on-failure destination.',
  explanation:
    'A stream shard blocks behind a failing record: without bisect and bounds it retries until the record expires (24 h), everything behind it waits, and the record is lost without a trace.',
  check: (index) =>
    index.mappings
      .filter((m) => m.sourceKind === 'stream')
      .map((m) => {
        const p = m.properties;
        const missing: string[] = [];
        if (literalBoolean(p.BisectBatchOnFunctionError) !== true) missing.push('BisectBatchOnFunctionError');
        const retries = literalNumber(p.MaximumRetryAttempts);
        if (retries === undefined || retries < 0) missing.push('bounded MaximumRetryAttempts');
        const age = literalNumber(p.MaximumRecordAgeInSeconds);
        if (age === undefined || age < 0) missing.push('bounded MaximumRecordAgeInSeconds');
        if (onFailureDestination(p) === undefined) missing.push('an on-failure destination');
        return finding(
          m.logicalId,
          missing.length === 0,
          missing.length === 0
            ? `${m.logicalId}: bisects, bounded, has an on-failure destination`
            : `${m.logicalId}: lacks ${missing.join(', ')}`,
        );
      }),
};

function ttlRule(suffix: string, featureId: string, kind: string, pattern: RegExp): TemplateRule {
  return {
    suffix,
    featureId,
    title: `A ${kind} table (by its name or the variable functions receive it in) has TTL enabled.`,
    explanation:
      featureId === 'L1'
        ? 'A lock without TTL stays forever when its holder crashes: the resource is stuck until someone deletes the item by hand.'
        : 'Idempotency and dedup records without TTL grow forever and keep stale keys that block legitimate new work.',
    check: (index) =>
      index.ofType(TABLE).flatMap(([id, table]) => {
        const p = table.Properties ?? {};
        const marks = [id, flattenText(p.TableName ?? ''), ...index.tableVariables(id)].filter((n) =>
          pattern.test(n),
        );
        if (marks.length === 0) return [];
        const ttl = p.TimeToLiveSpecification;
        const ok =
          isRecord(ttl) &&
          literalBoolean(ttl.Enabled) === true &&
          typeof ttl.AttributeName === 'string' &&
          ttl.AttributeName !== '';
        return [
          finding(
            id,
            ok,
            `${id} (a ${kind} table: ${marks.join(', ')}): TTL ${ok ? 'enabled' : 'not enabled'}`,
          ),
        ];
      }),
  };
}

/** D4: every function states its timeout and memory. */
const explicitFunctionLimits: TemplateRule = {
  suffix: 'D4',
  featureId: 'D4',
  title: 'The function has an explicit Timeout (not the 3 s default) and MemorySize.',
  explanation:
    'Outbound-call timeouts are only meaningful below a known function timeout, and the visibility timeout is derived from it; the 3 s default cuts off real work mid-side-effect.',
  check: (index) =>
    index.ofType(FUNCTION).map(([id, fn]) => {
      const missing = ['Timeout', 'MemorySize'].filter((k) => fn.Properties?.[k] === undefined);
      return finding(
        id,
        missing.length === 0,
        `${id}: ${missing.length === 0 ? 'explicit timeout and memory' : `no ${missing.join(' or ')}`}`,
      );
    }),
};

/** A description names a runbook: the word and a file or link. */
const RUNBOOK_REFERENCE = /runbook[^:]*:\s*\S+|runbooks?\/\S+|https?:\/\/\S*runbook\S*/i;

/** P1: alarms tell the on-call engineer what to do. */
const alarmRunbook: TemplateRule = {
  suffix: 'P1',
  featureId: 'P1',
  title: 'The alarm names a runbook in its description.',
  explanation: 'An alarm without a runbook pages someone who then has to improvise during an incident.',
  check: (index) =>
    [...index.ofType(ALARM), ...index.ofType(COMPOSITE_ALARM)].map(([id, alarm]) => {
      const description = flattenText(alarm.Properties?.AlarmDescription ?? '');
      const ok = RUNBOOK_REFERENCE.test(description);
      return finding(id, ok, `${id}: ${ok ? 'names a runbook' : 'names no runbook in its description'}`);
    }),
};

/** Every template rule, in checklist order. */
export const TEMPLATE_RULES: readonly TemplateRule[] = [
  visibilityTimeout,
  partialBatch,
  deadLetterQueue,
  streamFailureHandling,
  queueAgeAlarm,
  dlqDepthAlarm,
  ttlRule('I1', 'I1', 'idempotency or dedup', IDEMPOTENCY_PATTERN),
  ttlRule('L1', 'L1', 'lock', LOCK_PATTERN),
  explicitFunctionLimits,
  alarmRunbook,
  ...DEPLOY_READINESS_RULES,
];

/** `Tenang-D2` for a rule. */
export function ruleId(rule: Pick<TemplateRule, 'suffix'>): string {
  return `${RULE_PREFIX}-${rule.suffix}`;
}

/** Runs every rule over a model; findings keyed by rule id. */
export function runTemplateRules(model: TemplateModel): Map<string, readonly ResourceFinding[]> {
  const index = new TemplateIndex(model);
  return new Map(TEMPLATE_RULES.map((rule) => [ruleId(rule), rule.check(index)]));
}
