/**
 * The worker-queue audit checklist (the pre-automation checklist, docs/features.md#p4) as pure rules over a
 * CloudFormation-template-like model. The same rules back the cdk-nag pack (TenangChecks, built
 * from a stack's L1 resources) and `auditTemplate` (a raw template file), so both always agree.
 * No CDK import here: a rule sees only
 * `{ Resources: { id: { Type, Properties, Metadata, DeletionPolicy, UpdateReplacePolicy } } }`.
 * The deploy-readiness rules live in deploy-readiness.ts and are listed here too.
 */
import {
  DEPLOY_READINESS_RULES,
  intrinsicTarget,
  maySendTo,
  queueVariables,
  render,
} from './deploy-readiness';
import { EVENT_TYPE_METADATA_KEY } from './sam';

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
  /**
   * The template's parameters: a rule reads a `Ref` to one as its `Default`, and says so.
   * @default - none
   */
  readonly Parameters?: Readonly<Record<string, unknown>>;
}

/** What a rule says about one resource. */
export interface ResourceFinding {
  readonly logicalId: string;
  readonly compliant: boolean;
  /** Why, in words an on-call engineer can act on: what is wrong and what to change. */
  readonly why: string;
  /**
   * `false`: the template cannot show the fact (a queue outside it, a parameter without a
   * default); `compliant` is then true for the cdk-nag pack, and the audit reports not-checkable.
   * @default true
   */
  readonly checkable?: boolean;
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
  /**
   * The properties it reads, by resource type: a reference there that the input cannot resolve
   * (an import from a stack not given) makes the rule not-checkable for that resource.
   * @default - none
   */
  readonly reads?: Readonly<Record<string, readonly string[]>>;
  /**
   * The kinds of event source mapping the rule judges: an unresolved reference on a mapping of
   * another kind (known from its source or its SAM event) is nothing to the rule (a stream rule
   * says nothing of an SQS event).
   * @default - every kind
   */
  readonly mappingKinds?: readonly MappingSourceKind[];
  /**
   * Why the rule applies to nothing, when that says more than "nothing in scope" (e.g. the
   * audit was given no latency objectives).
   * @default - "nothing in scope"
   */
  readonly notApplicable?: (index: TemplateIndex) => string;
}

/** A job type's queue and the latency objective its oldest-message alarm must not exceed (lib/config). */
export interface QueueObjective {
  /** The queue's physical name, as the config derives it (`tenang-<stage>-<job>`). */
  readonly queueName: string;
  /** The job type, for the finding. */
  readonly jobType: string;
  readonly latencyObjectiveSeconds: number;
}

/**
 * The words and defaults of the input's format, so a finding names what the user wrote: a
 * CloudFormation / SAM / CDK template says `Timeout`, a serverless.yml `timeout` (serverless.ts).
 * Rules read it from `TemplateIndex.vocabulary`; it changes no verdict, only the service defaults
 * the format applies (the Serverless Framework writes 6 s / 1024 MB where Lambda's are 3 s / 128 MB).
 */
export interface TemplateVocabulary {
  /** The format's name, for reports. */
  readonly format: string;
  /** A function's timeout when none is stated (what the format's tooling deploys). */
  readonly defaultTimeoutSeconds: number;
  /** A function's memory when none is stated. */
  readonly defaultMemoryMb: number;
  /** Whose the defaults are, e.g. `Lambda's`. */
  readonly defaultsOwner: string;
  /** The function's timeout and memory properties. */
  readonly timeout: string;
  readonly memorySize: string;
  /** How to state both, when the format has more than one place for them (default: `set <missing>`). */
  readonly setLimits?: string;
  /** The alternative fix of D2. */
  readonly lowerTimeout: string;
  /** The queue's visibility timeout property. */
  readonly visibilityTimeout: string;
  /** The mapping's batching window property. */
  readonly batchingWindow: string;
  /** D3's fix. */
  readonly partialBatchFix: string;
  /** The mapping's response types property. */
  readonly functionResponseTypes: string;
  /** R6's properties and fixes. */
  readonly bisect: string;
  readonly maximumRetryAttempts: string;
  readonly maximumRecordAge: string;
  readonly onFailureFix: string;
  /**
   * CloudFormation's words the rules still write in other findings, in the format's words
   * (`RedrivePolicy` → `redrive_policy`): replaced in each finding's text, longest first, as
   * whole words. @default - none
   */
  readonly words?: Readonly<Record<string, string>>;
}

/** What an audit knows beyond the template. */
export interface TemplateAuditOptions {
  /**
   * The input format's words and defaults.
   * @default CLOUDFORMATION_VOCABULARY
   */
  readonly vocabulary?: TemplateVocabulary;
  /**
   * The latency objectives of the pipeline config's job types: with them, an oldest-message-age
   * alarm above its queue's objective is a finding (O3-QueueAgeThreshold).
   * @default - none: that rule is not applicable
   */
  readonly objectives?: readonly QueueObjective[];
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

/** CloudFormation's words (SAM and the CDK named alongside where they differ). */
export const CLOUDFORMATION_VOCABULARY: TemplateVocabulary = {
  format: 'CloudFormation',
  defaultTimeoutSeconds: LAMBDA_DEFAULT_TIMEOUT_SECONDS,
  defaultMemoryMb: 128,
  defaultsOwner: "Lambda's",
  timeout: 'Timeout',
  memorySize: 'MemorySize',
  lowerTimeout: "lower the function's Timeout",
  visibilityTimeout: 'VisibilityTimeout',
  batchingWindow: 'MaximumBatchingWindowInSeconds',
  partialBatchFix:
    'add FunctionResponseTypes [ReportBatchItemFailures] (SAM: on the event; CDK: reportBatchItemFailures: true)',
  functionResponseTypes: 'FunctionResponseTypes',
  bisect: 'BisectBatchOnFunctionError: true',
  maximumRetryAttempts: 'MaximumRetryAttempts',
  maximumRecordAge: 'MaximumRecordAgeInSeconds',
  onFailureFix: 'add DestinationConfig.OnFailure (an SQS queue or SNS topic)',
};
/**
 * Metadata key under which an emulator deployment keeps a stream mapping's real stream ARN
 * (lib/infra/stream-consumer.ts STREAM_ARN_METADATA); kept literal so this module stays CDK-free.
 */
export const STREAM_ARN_METADATA_KEY = 'tenang:stream-arn';
/**
 * A value an input reader could not evaluate (a Terraform variable without a default, a remote
 * module's output): `{ [UNKNOWN_VALUE_KEY]: '<why, in the input's words>' }`. A rule reading it is
 * not-checkable, as with a CloudFormation parameter without a Default.
 */
export const UNKNOWN_VALUE_KEY = 'tenang:unknown';

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

/** What an event source mapping reads from: `unknown` when the template cannot tell (see `unknownSource`). */
export type MappingSourceKind = 'sqs' | 'stream' | 'other' | 'unknown';

/** The stream services a stream mapping may read, with what bounds a record's age there. */
export type StreamService = 'dynamodb' | 'kinesis';

/** An event source mapping with its source and function resolved inside the template. */
export interface ResolvedMapping {
  readonly logicalId: string;
  readonly properties: Readonly<Record<string, unknown>>;
  readonly sourceKind: MappingSourceKind;
  /** Logical id of the source queue or table, when it is in the template. */
  readonly sourceId: string | undefined;
  /** A source queue outside the template, by its literal ARN (e.g. SAM's `Queue: arn:aws:sqs:…`). */
  readonly externalQueue?: string;
  /** For a stream mapping: its service, and the stream resource in the template (table or Kinesis stream). */
  readonly stream?: { readonly service: StreamService; readonly resourceId: string | undefined };
  /**
   * What the template does not say about the source: for an `unknown` kind, what it reads; for an
   * SQS or stream mapping (a SAM event's type tells the kind), which queue or stream.
   */
  readonly unknownSource?: string;
  /** Logical id of the function, when it is in the template. */
  readonly functionId: string | undefined;
}

/** A metric an alarm watches (plain or inside a metric-math expression). */
interface WatchedMetric {
  readonly namespace: string;
  readonly metricName: string;
  readonly dimensions: readonly { readonly name: string; readonly value: unknown }[];
}

/** One value a property may take once deployed, and how the audit got to it (a default, a branch). */
export interface Candidate<T = unknown> {
  readonly value: T;
  /** e.g. `the default 29 of parameter LambdaTimeout`, `if condition IsProd`. */
  readonly via: readonly string[];
}

/** What the template cannot tell about a value, in words (the `why` of a not-checkable finding). */
export interface Unknown {
  readonly unknown: string;
}

/** Either every value a property may take, or what is unknown about it. */
export type Resolved<T> = readonly Candidate<T>[] | Unknown;

/** Whether a resolution found what is unknown rather than values. */
export function isUnknown<T>(resolved: Resolved<T>): resolved is Unknown {
  return !Array.isArray(resolved);
}

/** Every combination of one candidate from each list (Fn::If makes a property take two). */
export function combinations<T>(lists: readonly (readonly Candidate<T>[])[]): Candidate<T[]>[] {
  return lists.reduce<Candidate<T[]>[]>(
    (acc, list) =>
      acc.flatMap((a) => list.map((c) => ({ value: [...a.value, c.value], via: [...a.via, ...c.via] }))),
    [{ value: [], via: [] }],
  );
}

/** ` (with …)` after a value that came from a default or a branch; empty otherwise. */
export function viaText(via: readonly string[]): string {
  return via.length === 0 ? '' : ` (with ${[...new Set(via)].join(', ')})`;
}

/** The resource type of a Kinesis stream and of its enhanced fan-out consumer. */
export const KINESIS_STREAM = 'AWS::Kinesis::Stream';
/** An enhanced fan-out consumer: a mapping on its ConsumerARN reads its stream. */
export const KINESIS_CONSUMER = 'AWS::Kinesis::StreamConsumer';
/** A DynamoDB global table (its StreamArn is a DynamoDB stream too). */
export const GLOBAL_TABLE = 'AWS::DynamoDB::GlobalTable';

/** Lookups the rules share, built once per template. */
export class TemplateIndex {
  /** Every resource, by logical id. */
  public readonly resources: ReadonlyMap<string, TemplateResource>;
  /** The template's parameters, by name (their Default is used where a rule needs a value). */
  public readonly parameters: ReadonlyMap<string, Readonly<Record<string, unknown>>>;
  /** Every event source mapping, resolved. */
  public readonly mappings: readonly ResolvedMapping[];
  /** The config's latency objectives per queue; undefined when the audit has no config. */
  public readonly objectives: readonly QueueObjective[] | undefined;
  /** The input format's words and defaults. */
  public readonly vocabulary: TemplateVocabulary;

  public constructor(model: TemplateModel, options: TemplateAuditOptions = {}) {
    this.objectives = options.objectives;
    this.vocabulary = options.vocabulary ?? CLOUDFORMATION_VOCABULARY;
    this.resources = new Map(Object.entries(model.Resources).filter(([, r]) => isRecord(r)));
    this.parameters = new Map(
      Object.entries(model.Parameters ?? {}).flatMap(([k, v]) => (isRecord(v) ? [[k, v] as const] : [])),
    );
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
   * The values a property may take once deployed: a parameter's `Default` (a parameter without
   * one is unknown), both branches of `Fn::If`, `AWS::NoValue` as unset; anything else as it is.
   */
  public candidates(value: unknown, via: readonly string[] = [], depth = 0): Resolved<unknown> {
    if (Array.isArray(value) && depth <= 16) {
      const elements = value.map((v: unknown) => this.candidates(v, [], depth + 1));
      const unknown = elements.find(isUnknown);
      if (unknown !== undefined) return unknown;
      return combinations(elements as Candidate[][]).map((c) => ({
        value: c.value,
        via: [...via, ...c.via],
      }));
    }
    if (depth > 16 || !isRecord(value)) return [{ value, via }];
    if (typeof value[UNKNOWN_VALUE_KEY] === 'string') return { unknown: value[UNKNOWN_VALUE_KEY] };
    if (typeof value.Ref === 'string') {
      if (value.Ref === 'AWS::NoValue') return [{ value: undefined, via }];
      const parameter = this.resources.has(value.Ref) ? undefined : this.parameters.get(value.Ref);
      if (parameter !== undefined) {
        if (parameter.Default === undefined)
          return {
            unknown: `parameter ${value.Ref} has no Default, so its value is only known at deploy time`,
          };
        return this.candidates(
          parameter.Default,
          [...via, `the default ${flattenText(parameter.Default)} of parameter ${value.Ref}`],
          depth + 1,
        );
      }
    }
    const branches = value['Fn::If'];
    if (Array.isArray(branches) && branches.length === 3) {
      const [condition, whenTrue, whenFalse] = branches as [unknown, unknown, unknown];
      const name = flattenText(condition);
      const left = this.candidates(whenTrue, [...via, `if ${name}`], depth + 1);
      const right = this.candidates(whenFalse, [...via, `unless ${name}`], depth + 1);
      if (isUnknown(left)) return left;
      if (isUnknown(right)) return right;
      return [...left, ...right];
    }
    if ('Fn::ImportValue' in value)
      return {
        unknown: `Fn::ImportValue ${flattenText(value['Fn::ImportValue'])}: no stack given exports it`,
      };
    return [{ value, via }];
  }

  /**
   * The numbers a property may take: `fallback` (the service's default) when it is unset; a value
   * that is no number the template fixes is unknown, said with `what`.
   */
  public numbers(value: unknown, fallback: number, what: string): Resolved<number> {
    const candidates = this.candidates(value);
    if (isUnknown(candidates)) return { unknown: `${what}: ${candidates.unknown}` };
    const numbers: Candidate<number>[] = [];
    for (const c of candidates) {
      if (c.value === undefined) {
        numbers.push({ value: fallback, via: c.via });
        continue;
      }
      const n = literalNumber(c.value);
      if (n === undefined)
        return { unknown: `${what} is ${flattenText(c.value)}, which the template does not fix to a number` };
      numbers.push({ value: n, via: c.via });
    }
    return numbers;
  }

  /** The booleans a property may take (`fallback` when unset); unknown when one is no boolean. */
  public booleans(value: unknown, fallback: boolean, what: string): Resolved<boolean> {
    const candidates = this.candidates(value);
    if (isUnknown(candidates)) return { unknown: `${what}: ${candidates.unknown}` };
    const booleans: Candidate<boolean>[] = [];
    for (const c of candidates) {
      const b = c.value === undefined ? fallback : literalBoolean(c.value);
      if (b === undefined)
        return {
          unknown: `${what} is ${flattenText(c.value)}, which the template does not fix to true or false`,
        };
      booleans.push({ value: b, via: c.via });
    }
    return booleans;
  }

  /**
   * The logical id a value points to: `Ref`, `Fn::GetAtt`, or a literal name or ARN matching a
   * resource of `type` in the template (by its name property).
   */
  public referencedId(value: unknown, type: string): string | undefined {
    if (isRecord(value)) {
      const target = targetId(value);
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
    const functionId = this.referencedId(properties.FunctionName, FUNCTION);
    // An emulator deployment points a stream mapping at a queue and keeps the stream here.
    const decoupled = resource.Metadata?.[STREAM_ARN_METADATA_KEY];
    const candidates = this.candidates(decoupled ?? properties.EventSourceArn);
    const base = { logicalId, properties, functionId, sourceId: undefined };
    // A SAM event says what it reads even when its Queue or Stream is unknown: what follows from
    // the kind alone (the event's FunctionResponseTypes, a stream's retries) is still decided.
    const eventType = resource.Metadata?.[EVENT_TYPE_METADATA_KEY];
    const byEvent = (unknownSource: string): ResolvedMapping =>
      eventType === 'SQS'
        ? { ...base, sourceKind: 'sqs', unknownSource }
        : eventType === 'DynamoDB' || eventType === 'Kinesis'
          ? {
              ...base,
              sourceKind: 'stream',
              stream: { service: eventType === 'Kinesis' ? 'kinesis' : 'dynamodb', resourceId: undefined },
              unknownSource,
            }
          : { ...base, sourceKind: 'unknown', unknownSource };
    if (isUnknown(candidates))
      return byEvent(
        `its ${eventType === 'SQS' ? 'Queue' : eventType === undefined ? 'EventSourceArn' : 'Stream'}: ${candidates.unknown}`,
      );
    // Fn::If between sources: the first branch decides the kind (both are checked where it matters).
    const source = candidates[0]?.value;
    const queueId = this.referencedId(source, QUEUE);
    if (queueId !== undefined) return { ...base, sourceKind: 'sqs', sourceId: queueId };
    const stream = this.streamOf(source);
    if (stream !== undefined)
      return {
        ...base,
        sourceKind: 'stream',
        sourceId: stream.service === 'dynamodb' ? stream.resourceId : undefined,
        stream,
      };
    const text = flattenText(source);
    if (/^arn:[^:]+:sqs:/.test(text)) return { ...base, sourceKind: 'sqs', externalQueue: text };
    if (/:sqs:/.test(text)) return { ...base, sourceKind: 'sqs' };
    if (/:(kafka|mq|rds|docdb)[:-]/.test(text) || text.startsWith('arn:'))
      return { ...base, sourceKind: 'other' };
    const target = targetId(source);
    const type = target === undefined ? undefined : this.resources.get(target)?.Type;
    if (eventType !== undefined)
      return byEvent(
        `its ${eventType === 'SQS' ? 'queue' : 'stream'} ${text} ${type !== undefined ? `is an attribute of a ${type}` : 'names nothing in the template'}, so which one it reads is unknown`,
      );
    return {
      ...base,
      sourceKind: 'unknown',
      unknownSource:
        type !== undefined
          ? `its EventSourceArn ${text} is an attribute of a ${type}, not a queue or stream the audit knows`
          : `its EventSourceArn ${text} names nothing in the template, so whether it reads a queue or a stream is unknown`,
    };
  }

  /**
   * The stream a source value names: `Fn::GetAtt Table.StreamArn` (DynamoDB), a Kinesis stream's
   * ARN, an enhanced fan-out consumer's ARN (it reads its stream), or a literal stream ARN.
   */
  private streamOf(source: unknown): ResolvedMapping['stream'] {
    const target = targetId(source);
    const type = target === undefined ? undefined : this.resources.get(target)?.Type;
    if (target !== undefined && (type === TABLE || type === GLOBAL_TABLE))
      return { service: 'dynamodb', resourceId: target };
    if (target !== undefined && type === KINESIS_STREAM) return { service: 'kinesis', resourceId: target };
    if (target !== undefined && type === KINESIS_CONSUMER) {
      const stream = targetId(this.props(target).StreamARN);
      return {
        service: 'kinesis',
        resourceId:
          stream !== undefined && this.resources.get(stream)?.Type === KINESIS_STREAM ? stream : undefined,
      };
    }
    const text = flattenText(source);
    if (/:kinesis:/.test(text)) {
      // An ARN joined from its parts (`…:stream/${MyStream}`) names a stream of the template.
      const named = [...text.matchAll(/<([A-Za-z0-9]+)>/g)].map(([, id]) => id ?? '');
      return {
        service: 'kinesis',
        resourceId: named.find((id) => this.resources.get(id)?.Type === KINESIS_STREAM),
      };
    }
    if (/:dynamodb:.*\/stream\//.test(text) || /\.StreamArn>$/.test(text))
      return { service: 'dynamodb', resourceId: this.referencedId(text, TABLE) };
    return undefined;
  }

  /** The functions that consume something: targets of an event source mapping in the template. */
  public consumerIds(): string[] {
    return [...new Set(this.mappings.flatMap((m) => (m.functionId === undefined ? [] : [m.functionId])))];
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

  /** Source queues outside the template, by their literal ARN. */
  public externalQueues(): string[] {
    return [
      ...new Set(this.mappings.flatMap((m) => (m.externalQueue === undefined ? [] : [m.externalQueue]))),
    ];
  }

  /**
   * The queues a consumer dead-letters to itself: named in its environment (by a variable or a
   * queue whose name marks a dead-letter queue), not one it consumes, and one it may send to.
   */
  public usedDeadLetterQueues(fnId: string): { queueId: string; variables: string[] }[] {
    const fn = this.resources.get(fnId);
    if (fn === undefined) return [];
    const consumed = new Set(this.mappings.filter((m) => m.functionId === fnId).map((m) => m.sourceId));
    return [...queueVariables(this, fn)].flatMap(([queueId, variables]) => {
      const names = [queueId, flattenText(this.props(queueId).QueueName ?? ''), ...variables];
      if (consumed.has(queueId) || !names.some((n) => DEAD_LETTER_PATTERN.test(n))) return [];
      return maySendTo(this, fnId, queueId) ? [{ queueId, variables }] : [];
    });
  }

  /** Dead-letter queues: redrive targets, on-failure destinations, and queues consumers dead-letter to. */
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
    for (const fnId of this.consumerIds())
      for (const { queueId } of this.usedDeadLetterQueues(fnId)) ids.add(queueId);
    return [...ids];
  }

  /**
   * What the template's alarms say about a metric of a queue (a logical id, or an external
   * queue's ARN): dimensions compared by what they resolve to, not by how they are written.
   */
  public queueAlarm(queue: string, metricName: string): QueueAlarmVerdict {
    const { byName, byUrl } = this.queueAlarmIds(queue, metricName);
    const notifying = byName.find((alarmId) => this.notifies(alarmId));
    if (notifying !== undefined) return { status: 'ok', alarmId: notifying };
    if (byName[0] !== undefined) return { status: 'silent', alarmId: byName[0] };
    if (byUrl[0] !== undefined) return { status: 'by-url', alarmId: byUrl[0] };
    return { status: 'none' };
  }

  /**
   * The alarms on a metric of a queue: those whose QueueName dimension resolves to its name, and
   * those whose dimension is its URL (a mistake: the alarm watches no queue).
   */
  public queueAlarmIds(queue: string, metricName: string): { byName: string[]; byUrl: string[] } {
    const inTemplate = this.resources.get(queue)?.Type === QUEUE;
    const queueName = inTemplate ? this.props(queue).QueueName : queue.split(':').pop();
    const names = new Set([
      `\${${queue}.QueueName}`,
      ...(queueName === undefined ? [] : [render(queueName)]),
    ]);
    const urls = new Set([`\${${queue}}`, `\${${queue}.QueueUrl}`]);
    const byName: string[] = [];
    const byUrl: string[] = [];
    for (const [alarmId, alarm] of this.ofType(ALARM)) {
      const p = alarm.Properties ?? {};
      const dimensions = watchedMetrics(p)
        .filter((m) => m.namespace === 'AWS/SQS' && m.metricName === metricName)
        .flatMap((m) => m.dimensions.filter((d) => d.name === 'QueueName').map((d) => d.value));
      const rendered = dimensions.flatMap((d) => {
        const c = this.candidates(d);
        return isUnknown(c) ? [] : c.map((x) => render(x.value));
      });
      if (rendered.some((d) => names.has(d))) byName.push(alarmId);
      else if (rendered.some((d) => urls.has(d))) byUrl.push(alarmId);
    }
    return { byName, byUrl };
  }

  /**
   * Whether an alarm notifies someone: its own AlarmActions, or those of a composite alarm whose
   * rule names it (CDK's severity-keyed pattern: children without actions, one composite that pages).
   */
  public notifies(alarmId: string, depth = 0): boolean {
    const alarm = this.resources.get(alarmId);
    if (alarm === undefined || depth > 8) return false;
    if (this.hasActions(alarm.Properties ?? {})) return true;
    const name = alarm.Properties?.AlarmName;
    const names = [`\${${alarmId}.Arn}`, `\${${alarmId}}`, ...(typeof name === 'string' ? [name] : [])];
    return this.ofType(COMPOSITE_ALARM).some(([compositeId, composite]) => {
      const rule = render(composite.Properties?.AlarmRule ?? '');
      return names.some((n) => rule.includes(n)) && this.notifies(compositeId, depth + 1);
    });
  }

  /** Whether an alarm's own actions notify: AlarmActions not empty and actions not disabled. */
  private hasActions(properties: Readonly<Record<string, unknown>>): boolean {
    const enabled = this.booleans(properties.ActionsEnabled, true, 'ActionsEnabled');
    if (!isUnknown(enabled) && enabled.some((c) => !c.value)) return false;
    const actions = this.candidates(properties.AlarmActions);
    // An action from a parameter without a default is still an action.
    if (isUnknown(actions))
      return Array.isArray(properties.AlarmActions) && properties.AlarmActions.length > 0;
    return actions.every((c) => Array.isArray(c.value) && c.value.some((a) => a !== undefined));
  }

  /**
   * The names under which functions use a table: environment variables whose value names it
   * (anywhere inside: `!Ref T`, `!Sub '${T}'`, `!GetAtt T.Arn`), and the Sids and policy names of
   * the grants of consumers' roles that name it.
   */
  public tableUses(tableId: string): string[] {
    const mentions = (value: unknown): boolean =>
      new RegExp(`\\$\\{${tableId}(\\.[A-Za-z.]+)?\\}`).test(render(value)) ||
      this.referencedId(value, TABLE) === tableId;
    return this.ofType(FUNCTION).flatMap(([, fn]) => {
      const environment = fn.Properties?.Environment;
      const variables = isRecord(environment) && isRecord(environment.Variables) ? environment.Variables : {};
      const byVariable = Object.entries(variables)
        .filter(([, v]) => mentions(v))
        .map(([k]) => k);
      const roleId = targetId(fn.Properties?.Role);
      const policies = roleId === undefined ? [] : this.props(roleId).Policies;
      const byGrant = (Array.isArray(policies) ? policies : []).filter(isRecord).flatMap((policy) => {
        const document = policy.PolicyDocument;
        const statements = isRecord(document) && Array.isArray(document.Statement) ? document.Statement : [];
        return statements
          .filter(isRecord)
          .filter((st) => mentions(st.Resource))
          .flatMap((st) => [st.Sid, policy.PolicyName].filter((n): n is string => typeof n === 'string'));
      });
      return [...byVariable, ...byGrant];
    });
  }
}

/** What the alarms of a template say about one queue metric. */
export type QueueAlarmVerdict =
  { readonly status: 'ok' | 'silent' | 'by-url'; readonly alarmId: string } | { readonly status: 'none' };

/** Names that mark a queue as a dead-letter queue, in a variable, a logical id or a queue name. */
const DEAD_LETTER_PATTERN = /dlq|dead.?letter|fail|poison|quarantine/i;

/** The logical id a `Ref` or `Fn::GetAtt` (list or dotted string) names. */
function targetId(value: unknown): string | undefined {
  return intrinsicTarget(value)?.id;
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

/** A finding that the template cannot decide: compliant for the pack, `not-checkable` in the audit. */
function notCheckable(logicalId: string, why: string): ResourceFinding {
  return { logicalId, compliant: true, checkable: false, why };
}

/** The not-checkable finding of a mapping whose source (its kind, or which queue or stream) the template does not tell. */
function unknownSourceFinding(m: ResolvedMapping): ResourceFinding[] {
  return m.sourceKind === 'unknown' || m.unknownSource !== undefined
    ? [notCheckable(m.logicalId, `${m.logicalId}: ${m.unknownSource ?? 'its source is unknown'}`)]
    : [];
}

/** Mappings that may read a queue: SQS ones and those whose kind is unknown (the queue rules' scope). */
function mayReadQueue(m: ResolvedMapping): boolean {
  return m.sourceKind === 'sqs' || m.sourceKind === 'unknown';
}

/**
 * D2: visibility timeout ≥ 6 × the function's timeout + the mapping's batching window.
 *
 * Lambda developer guide, "Creating and configuring an Amazon SQS event source mapping"
 * (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-configure.html): "set the source
 * queue's visibility timeout to at least six times the configuration timeout on your function";
 * while Lambda gathers a batch for up to MaximumBatchingWindowInSeconds its messages are already
 * in flight, so the window adds to it (AWS's recommendation as commonly quoted: 6 × timeout +
 * MaximumBatchingWindowInSeconds). Defaults: visibility 30 s (AWS::SQS::Queue VisibilityTimeout),
 * function Timeout 3 s, and "for streams and Amazon SQS event sources, the default batching window
 * is 0 seconds" (Lambda API, MaximumBatchingWindowInSeconds).
 */
const visibilityTimeout: TemplateRule = {
  suffix: 'D2',
  featureId: 'D2',
  mappingKinds: ['sqs'],
  title: `The SQS queue's visibility timeout is at least ${MIN_VISIBILITY_FACTOR} × the timeout of the function its event source mapping feeds, plus the mapping's batching window.`,
  explanation:
    'A shorter visibility timeout lets a second worker receive a job while the first still runs it (and retries inside Lambda make it worse): duplicates and double side effects.',
  reads: {
    [MAPPING]: ['EventSourceArn', 'FunctionName', 'MaximumBatchingWindowInSeconds'],
    [QUEUE]: ['VisibilityTimeout'],
    [FUNCTION]: ['Timeout'],
  },
  check: (index) =>
    index.mappings.flatMap((m) => {
      if (m.sourceKind === 'unknown') return unknownSourceFinding(m);
      const queue = m.sourceId ?? m.externalQueue;
      if (m.sourceKind !== 'sqs') return [];
      if (queue === undefined) return unknownSourceFinding(m);
      if (m.functionId === undefined)
        return [
          notCheckable(
            queue,
            `${queue}: the function of ${m.logicalId} (${flattenText(m.properties.FunctionName)}) is not in the template, so its timeout is unknown`,
          ),
        ];
      const timeout = index.numbers(
        index.props(m.functionId).Timeout,
        index.vocabulary.defaultTimeoutSeconds,
        `${m.functionId}'s ${index.vocabulary.timeout}`,
      );
      const window = index.numbers(
        m.properties.MaximumBatchingWindowInSeconds,
        0,
        `${m.logicalId}'s ${index.vocabulary.batchingWindow}`,
      );
      const visibility =
        m.sourceId === undefined
          ? { unknown: `the queue is not defined in this template, so its visibility timeout is unknown` }
          : index.numbers(
              index.props(m.sourceId).VisibilityTimeout,
              SQS_DEFAULT_VISIBILITY_SECONDS,
              `${queue}'s ${index.vocabulary.visibilityTimeout}`,
            );
      const unknown = [timeout, window, visibility].find(isUnknown);
      if (unknown !== undefined) {
        const needed =
          isUnknown(timeout) || isUnknown(window)
            ? ''
            : ` (it must be at least ${Math.max(...combinations([timeout, window]).map((c) => MIN_VISIBILITY_FACTOR * (c.value[0] ?? 0) + (c.value[1] ?? 0)))} s)`;
        return [notCheckable(queue, `${queue}: ${unknown.unknown}${needed}`)];
      }
      const all = combinations<number>([
        visibility as Candidate<number>[],
        timeout as Candidate<number>[],
        window as Candidate<number>[],
      ]);
      const judged = all.map((c) => {
        const [v = 0, t = 0, w = 0] = c.value;
        const needed = MIN_VISIBILITY_FACTOR * t + w;
        return { ok: v >= needed, v, t, w, needed, via: c.via };
      });
      const worst = judged.find((j) => !j.ok) ?? judged[0];
      if (worst === undefined) return [];
      const text = `${queue}: visibility timeout ${worst.v} s ${worst.ok ? '≥' : '<'} ${MIN_VISIBILITY_FACTOR} × ${m.functionId} timeout ${worst.t} s + batching window ${worst.w} s = ${worst.needed} s${viaText(worst.via)}`;
      return [
        finding(
          queue,
          worst.ok,
          worst.ok
            ? text
            : `${text}: set the queue's ${index.vocabulary.visibilityTimeout} to at least ${worst.needed} s (or ${index.vocabulary.lowerTimeout})`,
        ),
      ];
    }),
};

/**
 * D3: SQS and stream mappings report partial batch failures.
 *
 * Lambda developer guide, "Configuring partial batch response with Kinesis Data Streams and Lambda"
 * (https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html), and
 * its DynamoDB twin (services-ddb-batchfailurereporting.html): without ReportBatchItemFailures
 * "Lambda treats all other results as a complete failure and retries processing the batch"; the
 * function's batchItemFailures are ignored "unless the ReportBatchItemFailures feature is
 * explicitly turned on for your event source mapping".
 */
const partialBatch: TemplateRule = {
  suffix: 'D3',
  featureId: 'D3',
  mappingKinds: ['sqs', 'stream'],
  title:
    'The SQS or stream (DynamoDB, Kinesis) event source mapping has FunctionResponseTypes ReportBatchItemFailures.',
  explanation:
    'Without partial batch responses one bad record fails its whole batch: the good records are processed again (duplicates) and count towards the DLQ, or on a stream hold the shard behind them.',
  reads: { [MAPPING]: ['EventSourceArn', 'FunctionResponseTypes'] },
  check: (index) =>
    index.mappings.flatMap((m) => {
      if (m.sourceKind === 'unknown') return unknownSourceFinding(m);
      if (m.sourceKind !== 'sqs' && m.sourceKind !== 'stream') return [];
      const types = index.candidates(m.properties.FunctionResponseTypes);
      if (isUnknown(types))
        return [
          notCheckable(
            m.logicalId,
            `${m.logicalId}: ${index.vocabulary.functionResponseTypes}: ${types.unknown}`,
          ),
        ];
      const missing = types.find(
        (c) => !(Array.isArray(c.value) && c.value.includes('ReportBatchItemFailures')),
      );
      const kind =
        m.sourceKind === 'sqs' ? 'SQS' : `${m.stream?.service === 'kinesis' ? 'Kinesis' : 'DynamoDB'} stream`;
      return [
        missing === undefined
          ? finding(m.logicalId, true, `${m.logicalId} (${kind}): reports batch item failures`)
          : finding(
              m.logicalId,
              false,
              `${m.logicalId} (${kind}): does not report batch item failures${viaText(missing.via)}: ${index.vocabulary.partialBatchFix} and return batchItemFailures from the handler (Powertools BatchProcessor)`,
            ),
      ];
    }),
};

/**
 * R3: each source queue dead-letters after a bounded number of receives: by its redrive policy, or
 * by its consumer, which names a dead-letter queue in its environment and may send to it.
 */
const deadLetterQueue: TemplateRule = {
  suffix: 'R3',
  featureId: 'R3',
  mappingKinds: ['sqs'],
  title: `The source queue has a dead-letter queue: a redrive policy with maxReceiveCount in [${MAX_RECEIVE_COUNT_RANGE.min}, ${MAX_RECEIVE_COUNT_RANGE.max}], or a consumer that sends failures to a queue of its environment it may send to.`,
  explanation:
    'Without a DLQ a poison message is retried until it expires and is lost; a maxReceiveCount of 1 never retries a transient failure, a large one turns a poison message into a retry storm.',
  reads: { [MAPPING]: ['EventSourceArn'], [QUEUE]: ['RedrivePolicy'] },
  check: (index) => [
    ...index.mappings.filter(mayReadQueue).flatMap(unknownSourceFinding),
    ...index
      .externalQueues()
      .map((arn) =>
        notCheckable(
          arn,
          `${arn}: the queue is not defined in this template, so its redrive policy is unknown`,
        ),
      ),
    ...index.sourceQueueIds().map((id) => {
      const { min, max } = MAX_RECEIVE_COUNT_RANGE;
      const policy = redrivePolicy(index.props(id).RedrivePolicy);
      if (policy?.deadLetterTargetArn === undefined) {
        const consumers = index.mappings.filter((m) => m.sourceId === id && m.functionId !== undefined);
        const used = consumers.flatMap((m) =>
          index
            .usedDeadLetterQueues(m.functionId ?? '')
            .map((q) => `${m.functionId} dead-letters to ${q.queueId} (${q.variables.join(', ')})`),
        );
        return used.length > 0 && used.length >= consumers.length
          ? finding(id, true, `${id}: no redrive policy, but ${used.join('; ')} and may send to it`)
          : finding(
              id,
              false,
              `${id}: no redrive policy (no DLQ): add RedrivePolicy { deadLetterTargetArn: <a DLQ's Arn>, maxReceiveCount: ${min}–${max} }`,
            );
      }
      const counts = index.numbers(policy.maxReceiveCount, Number.NaN, `${id}'s maxReceiveCount`);
      if (isUnknown(counts)) return notCheckable(id, `${id}: ${counts.unknown}`);
      const bad = counts.find((c) => !(c.value >= min && c.value <= max));
      const shown = bad ?? counts[0];
      return finding(
        id,
        bad === undefined,
        `${id}: maxReceiveCount ${Number.isNaN(shown?.value) ? 'unset' : shown?.value} ${bad === undefined ? 'is' : 'is not'} in [${min}, ${max}]${viaText(shown?.via ?? [])}${bad === undefined ? '' : `: set maxReceiveCount between ${min} (one retry) and ${max}`}`,
      );
    }),
  ],
};

/** The finding of an alarm rule for one queue (a logical id, or an external queue's ARN). */
function queueAlarmFinding(index: TemplateIndex, queue: string, metricName: string): ResourceFinding {
  const verdict = index.queueAlarm(queue, metricName);
  const external = index.resources.get(queue) === undefined;
  switch (verdict.status) {
    case 'ok':
      return finding(queue, true, `${queue}: ${verdict.alarmId} alarms on its ${metricName} and notifies`);
    case 'silent':
      return finding(
        queue,
        false,
        `${queue}: ${verdict.alarmId} watches its ${metricName} but has no AlarmActions (or ActionsEnabled false): nobody is paged; add the on-call topic to AlarmActions`,
      );
    case 'by-url':
      return finding(
        queue,
        false,
        `${queue}: ${verdict.alarmId}'s QueueName dimension is the queue's URL (!Ref ${queue}), so the alarm watches a queue that does not exist and stays INSUFFICIENT_DATA: use !GetAtt ${queue}.QueueName`,
      );
    default:
      return external
        ? notCheckable(
            queue,
            `${queue}: the queue is not defined in this template and no alarm here watches its ${metricName}; an alarm elsewhere is not visible`,
          )
        : finding(
            queue,
            false,
            `${queue}: has no ${metricName} alarm: add an AWS::CloudWatch::Alarm on AWS/SQS ${metricName} with Dimensions QueueName = !GetAtt ${queue}.QueueName and AlarmActions`,
          );
  }
}

/** O3: each source queue has an oldest-message-age alarm that notifies. */
const queueAgeAlarm: TemplateRule = {
  suffix: 'O3-QueueAge',
  featureId: 'O3',
  mappingKinds: ['sqs'],
  title:
    'The source queue has an ApproximateAgeOfOldestMessage alarm on its QueueName (not its URL) with AlarmActions.',
  explanation:
    'A backlog is silent until users notice: the oldest message age is the first sign of a stuck or slow consumer.',
  reads: {
    [MAPPING]: ['EventSourceArn'],
    [QUEUE]: ['QueueName'],
    [ALARM]: ['Dimensions', 'Metrics', 'AlarmActions'],
  },
  check: (index) => [
    ...index.mappings.filter(mayReadQueue).flatMap(unknownSourceFinding),
    ...[...index.sourceQueueIds(), ...index.externalQueues()].map((q) =>
      queueAlarmFinding(index, q, 'ApproximateAgeOfOldestMessage'),
    ),
  ],
};

/** O3: each DLQ has a depth alarm that notifies. */
const dlqDepthAlarm: TemplateRule = {
  suffix: 'O3-DlqDepth',
  featureId: 'O3',
  title:
    'The dead-letter queue (redrive target, on-failure destination, or the queue a consumer dead-letters to) has an ApproximateNumberOfMessagesVisible alarm on its QueueName with AlarmActions.',
  explanation: 'A message in a DLQ is a job that did not happen; nobody looks at a DLQ nobody is paged for.',
  reads: {
    [QUEUE]: ['RedrivePolicy'],
    [MAPPING]: ['DestinationConfig'],
    [ALARM]: ['Dimensions', 'Metrics', 'AlarmActions'],
  },
  check: (index) =>
    index
      .deadLetterQueueIds()
      .map((id) => queueAlarmFinding(index, id, 'ApproximateNumberOfMessagesVisible')),
};

/** The SQS metric of a queue's oldest message, seconds. */
const OLDEST_AGE_METRIC = 'ApproximateAgeOfOldestMessage';
/** Comparison operators under which a Threshold is the age that pages. */
const UPPER_BOUND_OPERATORS = new Set(['GreaterThanThreshold', 'GreaterThanOrEqualToThreshold']);

/** The finding of O3-QueueAgeThreshold for one alarm on a job type's queue. */
function thresholdFinding(
  index: TemplateIndex,
  alarmId: string,
  queueId: string,
  objective: QueueObjective,
): ResourceFinding {
  const p = index.props(alarmId);
  const limit = objective.latencyObjectiveSeconds;
  const subject = `${alarmId} (${OLDEST_AGE_METRIC} of ${queueId}, job type ${objective.jobType}, latency objective ${limit} s)`;
  const queries = Array.isArray(p.Metrics) ? p.Metrics.filter(isRecord) : [];
  const returned =
    queries.length === 1 ? queries[0] : queries.find((q) => literalBoolean(q.ReturnData) === true);
  if (returned !== undefined && !isRecord(returned.MetricStat))
    return notCheckable(
      alarmId,
      `${subject}: its Threshold applies to the expression ${flattenText(returned.Expression)}, not to the age itself`,
    );
  const operator = flattenText(p.ComparisonOperator ?? '');
  if (!UPPER_BOUND_OPERATORS.has(operator))
    return notCheckable(
      alarmId,
      `${subject}: it compares with ${operator || 'no operator'}, so its Threshold is no age limit`,
    );
  const thresholds = index.numbers(p.Threshold, Number.NaN, `${alarmId}'s Threshold`);
  if (isUnknown(thresholds)) return notCheckable(alarmId, `${subject}: ${thresholds.unknown}`);
  if (thresholds.some((c) => Number.isNaN(c.value)))
    return notCheckable(
      alarmId,
      `${subject}: it has no Threshold (a band alarm), so its age limit is unknown`,
    );
  const above = thresholds.find((c) => c.value > limit);
  if (above !== undefined)
    return finding(
      alarmId,
      false,
      `${subject}: Threshold ${above.value} s${viaText(above.via)} is above the objective, so it pages only once the objective is already broken: set Threshold to at most ${limit} s`,
    );
  return finding(
    alarmId,
    true,
    `${subject}: Threshold ${Math.max(...thresholds.map((c) => c.value))} s is within the objective`,
  );
}

/**
 * O3: a job type's oldest-message alarm fires within its latency objective.
 * Needs the pipeline config (TemplateAuditOptions.objectives): `tenang audit` on the project gives
 * it; a template audited alone, the cdk-nag pack and the live model have none, so it is not in
 * TEMPLATE_RULES and applies to nothing there.
 */
const queueAgeThreshold: TemplateRule = {
  suffix: 'O3-QueueAgeThreshold',
  featureId: 'O3',
  title: `The ${OLDEST_AGE_METRIC} alarm of a job type's queue has a Threshold no higher than the job type's latencyObjectiveSeconds (where the pipeline config gives one).`,
  explanation:
    'An age alarm above the objective pages only after the objective is broken: the work is already late when anyone hears of it.',
  reads: { [QUEUE]: ['QueueName'], [ALARM]: ['Dimensions', 'Metrics', 'Threshold', 'ComparisonOperator'] },
  notApplicable: (index) =>
    index.objectives === undefined
      ? 'no latency objective is known: the template carries no tenang:pipeline declaration (metadata) and was audited without a pipeline config'
      : `no ${OLDEST_AGE_METRIC} alarm watches the queue of a job type the config declares`,
  check: (index) =>
    (index.objectives ?? []).flatMap((objective) =>
      index
        .ofType(QUEUE)
        .filter(([, q]) => {
          const names = index.candidates(q.Properties?.QueueName);
          return !isUnknown(names) && names.some((c) => c.value === objective.queueName);
        })
        .flatMap(([queueId]) =>
          index
            .queueAlarmIds(queueId, OLDEST_AGE_METRIC)
            .byName.map((alarmId) => thresholdFinding(index, alarmId, queueId, objective)),
        ),
    ),
};

/** Rules that need the pipeline config: run by the template audit only (see queueAgeThreshold). */
export const CONFIG_TEMPLATE_RULES: readonly TemplateRule[] = [queueAgeThreshold];

/**
 * Bounds on a stream mapping's MaximumRetryAttempts: R3's receive counts as retries (a receive
 * count n is n − 1 retries), so a stream record gets as many attempts as a queue message.
 */
export const STREAM_RETRY_RANGE = {
  min: MAX_RECEIVE_COUNT_RANGE.min - 1,
  max: MAX_RECEIVE_COUNT_RANGE.max - 1,
} as const;
/** Lambda's least MaximumRecordAgeInSeconds other than -1 (infinite), seconds (Lambda API reference). */
export const MIN_RECORD_AGE_SECONDS = 60;
/** DynamoDB Streams keep a record 24 hours ("stores this information in a log for up to 24 hours"). */
export const DYNAMODB_STREAM_RETENTION_SECONDS = 24 * 3600;
/** A Kinesis stream's default (and least) retention, hours (RetentionPeriodHours; 24–8760). */
export const KINESIS_DEFAULT_RETENTION_HOURS = 24;

/**
 * R6: stream mappings isolate poison records and bound their retries.
 *
 * Lambda API CreateEventSourceMapping: MaximumRetryAttempts and MaximumRecordAgeInSeconds default
 * to -1, infinite: "failed records are retried until the record expires"; a record age is -1 or
 * 60–604 800 s. A record expires with the stream's retention: DynamoDB Streams keep records "for
 * up to 24 hours" (DynamoDB developer guide, "Change data capture for DynamoDB Streams"); a Kinesis
 * stream keeps them RetentionPeriodHours (24 by default, 24–8760: Kinesis API
 * DecreaseStreamRetentionPeriod "The minimum value of a stream's retention period is 24 hours",
 * IncreaseStreamRetentionPeriod "8760 hours"). An age above the retention bounds nothing.
 */
const streamFailureHandling: TemplateRule = {
  suffix: 'R6',
  featureId: 'R6',
  mappingKinds: ['stream'],
  title: `The stream event source mapping bisects on error, bounds MaximumRetryAttempts to [${STREAM_RETRY_RANGE.min}, ${STREAM_RETRY_RANGE.max}] and MaximumRecordAgeInSeconds to at least ${MIN_RECORD_AGE_SECONDS} s and at most the stream's retention, and has an on-failure destination.`,
  explanation:
    'A stream shard blocks behind a failing record: without bisect and bounds it retries until the record expires (24 h), everything behind it waits, and the record is lost without a trace.',
  reads: {
    [MAPPING]: [
      'EventSourceArn',
      'BisectBatchOnFunctionError',
      'MaximumRetryAttempts',
      'MaximumRecordAgeInSeconds',
      'DestinationConfig',
    ],
    [KINESIS_STREAM]: ['RetentionPeriodHours'],
  },
  check: (index) =>
    index.mappings.flatMap((m) => {
      if (m.sourceKind === 'unknown') return unknownSourceFinding(m);
      if (m.sourceKind !== 'stream') return [];
      const p = m.properties;
      const fixes: string[] = [];
      const unknown: string[] = [];
      const bisect = index.booleans(p.BisectBatchOnFunctionError, false, 'BisectBatchOnFunctionError');
      if (isUnknown(bisect)) unknown.push(bisect.unknown);
      else {
        const off = bisect.find((c) => !c.value);
        if (off !== undefined) fixes.push(`set ${index.vocabulary.bisect}${viaText(off.via)}`);
      }
      const { min, max } = STREAM_RETRY_RANGE;
      const retries = index.numbers(p.MaximumRetryAttempts, -1, 'MaximumRetryAttempts');
      if (isUnknown(retries)) unknown.push(retries.unknown);
      else {
        const bad = retries.find((c) => !(c.value >= min && c.value <= max));
        if (bad !== undefined)
          fixes.push(
            `${index.vocabulary.maximumRetryAttempts} is ${bad.value === -1 ? '-1 (infinite, the default)' : bad.value}${viaText(bad.via)}: set it between ${min} and ${max}`,
          );
      }
      const retention = streamRetention(index, m);
      const age = index.numbers(p.MaximumRecordAgeInSeconds, -1, 'MaximumRecordAgeInSeconds');
      if (isUnknown(age)) unknown.push(age.unknown);
      else if (isUnknown(retention)) {
        // Every stream keeps a record at least 24 h: an age within it is bounded whatever the retention.
        const above = age.find((c) => c.value > DYNAMODB_STREAM_RETENTION_SECONDS);
        if (age.some((c) => c.value < MIN_RECORD_AGE_SECONDS))
          fixes.push(
            `${index.vocabulary.maximumRecordAge} is -1 (infinite, the default): set it to at least ${MIN_RECORD_AGE_SECONDS} s, below the stream's retention`,
          );
        else if (above !== undefined)
          unknown.push(`MaximumRecordAgeInSeconds ${above.value} s exceeds 24 h and ${retention.unknown}`);
      } else {
        const limit = Math.min(...retention.map((c) => c.value));
        const bad = age.find((c) => c.value < MIN_RECORD_AGE_SECONDS || c.value > limit);
        if (bad !== undefined)
          fixes.push(
            `${index.vocabulary.maximumRecordAge} is ${bad.value === -1 ? '-1 (infinite, the default)' : `${bad.value} s`}${viaText(bad.via)}: set it between ${MIN_RECORD_AGE_SECONDS} s and the stream's retention ${limit} s${viaText(retention.flatMap((c) => c.via))}`,
          );
      }
      const destination = onFailureDestination(p);
      if (destination === undefined || destination === null || destination === '')
        fixes.push(`${index.vocabulary.onFailureFix} so a discarded record leaves a trace`);
      if (fixes.length > 0) return [finding(m.logicalId, false, `${m.logicalId}: ${fixes.join('; ')}`)];
      if (unknown.length > 0) return [notCheckable(m.logicalId, `${m.logicalId}: ${unknown.join('; ')}`)];
      return [
        finding(
          m.logicalId,
          true,
          `${m.logicalId}: bisects, retries and record age bounded, has an on-failure destination`,
        ),
      ];
    }),
};

/** How long the stream of a stream mapping keeps a record, seconds. */
function streamRetention(index: TemplateIndex, m: ResolvedMapping): Resolved<number> {
  if (m.stream?.service === 'dynamodb') return [{ value: DYNAMODB_STREAM_RETENTION_SECONDS, via: [] }];
  const streamId = m.stream?.resourceId;
  if (streamId === undefined)
    return { unknown: 'the Kinesis stream is not in the template, so its retention is unknown' };
  const hours = index.numbers(
    index.props(streamId).RetentionPeriodHours,
    KINESIS_DEFAULT_RETENTION_HOURS,
    `${streamId}'s RetentionPeriodHours`,
  );
  return isUnknown(hours) ? hours : hours.map((c) => ({ value: c.value * 3600, via: c.via }));
}

function ttlRule(suffix: string, featureId: string, kind: string, pattern: RegExp): TemplateRule {
  return {
    suffix,
    featureId,
    title: `A ${kind} table (by its name, the variable functions receive it in, or the grant that names it) has TTL enabled.`,
    explanation:
      featureId === 'L1'
        ? 'A lock without TTL stays forever when its holder crashes: the resource is stuck until someone deletes the item by hand.'
        : 'Idempotency and dedup records without TTL grow forever and keep stale keys that block legitimate new work.',
    reads: { [FUNCTION]: ['Environment'], [TABLE]: ['TimeToLiveSpecification'] },
    check: (index) =>
      index.ofType(TABLE).flatMap(([id, table]) => {
        const p = table.Properties ?? {};
        const marks = [
          ...new Set(
            [id, flattenText(p.TableName ?? ''), ...index.tableUses(id)].filter((n) => pattern.test(n)),
          ),
        ];
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
            `${id} (a ${kind} table: ${marks.join(', ')}): TTL ${ok ? 'enabled' : 'not enabled: set TimeToLiveSpecification { Enabled: true, AttributeName: <the expiry attribute the code writes> }'}`,
          ),
        ];
      }),
  };
}

/** What to set for one missing D4 limit, in the input's words: only what its own property needs. */
function limitAdvice(limit: string, v: TemplateVocabulary): string {
  return limit === 'Timeout'
    ? `set ${v.timeout} (seconds, above the slowest job's outbound timeouts) instead of ${v.defaultsOwner} ${v.defaultTimeoutSeconds} s default`
    : `set ${v.memorySize} (MB) instead of ${v.defaultsOwner} ${v.defaultMemoryMb} MB default`;
}

/** D4: every consumer states its timeout and memory. */
const explicitFunctionLimits: TemplateRule = {
  suffix: 'D4',
  featureId: 'D4',
  title:
    'The consumer function (the target of an event source mapping) has an explicit Timeout (not the 3 s default) and MemorySize.',
  explanation:
    'Outbound-call timeouts are only meaningful below a known function timeout, and the visibility timeout is derived from it; the 3 s default cuts off real work mid-side-effect.',
  reads: { [FUNCTION]: ['Timeout', 'MemorySize'], [MAPPING]: ['FunctionName'] },
  check: (index) =>
    index.consumerIds().map((id) => {
      const v = index.vocabulary;
      const words: Record<string, string> = { Timeout: v.timeout, MemorySize: v.memorySize };
      const missing = ['Timeout', 'MemorySize'].filter((k) => index.props(id)[k] === undefined);
      const named = missing.map((k) => words[k] ?? k);
      return finding(
        id,
        missing.length === 0,
        `${id}: ${missing.length === 0 ? 'explicit timeout and memory' : `no ${named.join(' or ')}: ${missing.length === 2 && v.setLimits !== undefined ? `${v.setLimits} (${v.timeout} in seconds above the slowest job's outbound timeouts, ${v.memorySize} in MB) instead of ${v.defaultsOwner} ${v.defaultTimeoutSeconds} s / ${v.defaultMemoryMb} MB defaults` : missing.map((k) => limitAdvice(k, v)).join('; ')}`}`,
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
  reads: { [ALARM]: ['AlarmDescription'], [COMPOSITE_ALARM]: ['AlarmDescription'] },
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
