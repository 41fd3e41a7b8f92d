/**
 * The checklist over a DEPLOYED stack (`tenang audit --live`), with the template rules themselves.
 *
 * Design: the live answers (ListStackResources, GetQueueAttributes, GetFunctionConfiguration,
 * ListEventSourceMappings, DescribeAlarms, DescribeTimeToLive, ListSubscriptionsByTopic; read by
 * live-reader.ts) are
 * translated here into the CloudFormation-like model the rules already read (rules.ts
 * TemplateModel): a queue's attributes become an `AWS::SQS::Queue`'s properties, a mapping's
 * configuration an `AWS::Lambda::EventSourceMapping`'s, a TTL description a
 * `TimeToLiveSpecification`, and so on. TEMPLATE_RULES then run unchanged, so the template
 * audit, the cdk-nag pack and the live audit can never disagree about what a rule means; the
 * only live-specific code is this translation. Resources are keyed by what an operator types
 * (`queue <name>`, `function <name>`, `mapping <function>/<uuid>`, `table <name>`,
 * `alarm <name>`) and refer to each other by literal names and ARNs, which the rules resolve
 * as they do in a hand-written template.
 *
 * Not everything a template says is visible in an account: LIVE_COVERAGE states per rule
 * whether it is checkable live, and a rule that is not is reported `not-checkable` with the
 * reason instead of passing. A rule added to rules.ts without a live decision fails loudly.
 *
 * Scope: the stack's queues, functions, tables and mappings; every event source mapping of the
 * stack's functions (one added by hand counts too); alarms in the stack, plus any alarm in the
 * account that watches one of the stack's queues, functions or tables (an alarm kept outside
 * the stack still pages for it). Composite alarms count only when they are in the stack.
 * The SNS topics the stack's alarms notify (its own, and others the account lets it read), with
 * their subscriptions: one SNS lists as PendingConfirmation delivers nothing, and the model marks it.
 *
 * One documented switch is honoured, as the template audit does: a mapping whose deployed
 * template metadata carries `tenang:stream-arn` (TargetTraits.decoupleStreamMappings, the
 * emulator target) reads that stream, not the queue it is attached to.
 */
import type { CompositeAlarm, MetricAlarm } from '@aws-sdk/client-cloudwatch';
import type { TimeToLiveDescription } from '@aws-sdk/client-dynamodb';
import type { EventSourceMappingConfiguration, FunctionConfiguration } from '@aws-sdk/client-lambda';
import type { Subscription } from '@aws-sdk/client-sns';
import { checklistItem, levels, type ChecklistItem } from './checklist';
import { evaluatePreflight, preflightChecklist, type PreflightFacts } from './preflight';
import {
  NO_SUBSCRIBER_METADATA_KEY,
  PENDING_CONFIRMATION_METADATA_KEY,
  SUBSCRIPTION,
  TOPIC,
} from './deploy-readiness';
import {
  ALARM,
  COMPOSITE_ALARM,
  FUNCTION,
  MAPPING,
  QUEUE,
  STREAM_ARN_METADATA_KEY,
  TABLE,
  TEMPLATE_RULES,
  TemplateIndex,
  ruleId,
  type TemplateModel,
  type TemplateResource,
  type TemplateRule,
} from './rules';

/** One resource of the deployed stack (ListStackResources). */
export interface LiveStackResource {
  readonly logicalId: string;
  readonly type: string;
  readonly physicalId: string;
}

/** A queue of the stack and its GetQueueAttributes(All) answer. */
export interface LiveQueue {
  readonly name: string;
  readonly attributes: Readonly<Record<string, string>>;
}

/** A table of the stack and its DescribeTimeToLive answer. */
export interface LiveTable {
  readonly name: string;
  readonly timeToLive: TimeToLiveDescription | undefined;
}

/**
 * An SNS topic the stack's alarms notify (the stack's own, or one outside it that could be read)
 * and its ListSubscriptionsByTopic answer.
 */
export interface LiveTopic {
  readonly arn: string;
  /** Its logical id when the stack created it (its deployed metadata may acknowledge no subscriber). */
  readonly logicalId?: string;
  readonly subscriptions: readonly Subscription[];
}

/** SNS's SubscriptionArn for a subscription its endpoint has not confirmed yet. */
export const PENDING_CONFIRMATION = 'PendingConfirmation';

/** What the AWS APIs answered about one stack: the live audit's whole input. */
export interface LiveStackAnswers {
  readonly stackName: string;
  readonly resources: readonly LiveStackResource[];
  /**
   * Resource metadata from the deployed template, by logical id. Only `tenang:stream-arn` is
   * read from it: everything else comes from the services themselves.
   */
  readonly metadata: ReadonlyMap<string, Readonly<Record<string, unknown>>>;
  readonly queues: readonly LiveQueue[];
  readonly functions: readonly FunctionConfiguration[];
  /** Every event source mapping of the stack's functions. */
  readonly mappings: readonly EventSourceMappingConfiguration[];
  readonly tables: readonly LiveTable[];
  /** Every metric alarm of the account and region; the model keeps those in scope. */
  readonly metricAlarms: readonly MetricAlarm[];
  /** Every composite alarm of the account and region; the model keeps the stack's. */
  readonly compositeAlarms: readonly CompositeAlarm[];
  /** The topics the alarms notify, with their subscriptions. @default - none read */
  readonly topics?: readonly LiveTopic[];
  /** What the preflight checks judge (P5, preflight.ts). @default - not read: no preflight items */
  readonly preflight?: PreflightFacts;
}

/** Whether a rule can be evaluated over a live account, and if not, why. */
export type LiveCoverage =
  | { readonly checkable: true }
  | {
      readonly checkable: false;
      /** Shown as the item's why. */
      readonly reason: string;
    };

/** Per rule suffix: what a live account can show. Every rule of TEMPLATE_RULES has an entry. */
export const LIVE_COVERAGE: Readonly<Record<string, LiveCoverage>> = {
  D2: { checkable: true },
  D3: { checkable: true },
  R3: { checkable: true },
  R6: { checkable: true },
  'O3-QueueAge': { checkable: true },
  'O3-DlqDepth': { checkable: true },
  I1: { checkable: true },
  L1: { checkable: true },
  'F1-ValkeyAuth': {
    checkable: false,
    reason:
      'not checkable live: the live model reads no ElastiCache users or user groups; audit the template (tenang audit without --live)',
  },
  'F2-RetainOnCreate': {
    checkable: false,
    reason:
      'not checkable live: a deletion policy lives in the template, not on the deployed resource; audit the template (tenang audit without --live)',
  },
  'F3-AlarmTopicPublish': {
    checkable: false,
    reason:
      'not checkable live: the live model reads no topic or key policies; audit the template (tenang audit without --live)',
  },
  // Subscriptions are read live (ListSubscriptionsByTopic), and live only shows which are confirmed.
  'F5-AlarmSubscriber': { checkable: true },
  'F4-QueueSendGrant': {
    checkable: false,
    reason:
      'not checkable live: the live model reads no roles or policies; audit the template (tenang audit without --live), and the local platform enforces IAM',
  },
  'F6-OperatorReach': {
    checkable: false,
    reason:
      'not checkable live: the live model reads no security groups, VPC configuration or roles; audit the template (tenang audit without --live)',
  },
  D4: {
    checkable: false,
    reason:
      'not checkable live: a deployed function always has a timeout and a memory size, so an explicit setting cannot be told from a default; audit the template (tenang audit without --live)',
  },
  P1: { checkable: true },
};

/** Raised when a rule has no live decision in LIVE_COVERAGE (a bug: decide before shipping it). */
export class LiveCoverageMissingError extends Error {
  public constructor(suffix: string) {
    super(`rule ${suffix} has no entry in LIVE_COVERAGE: decide whether it is checkable live`);
    this.name = 'LiveCoverageMissingError';
  }
}

/** The coverage of a rule; throws LiveCoverageMissingError when undecided. */
export function liveCoverage(rule: Pick<TemplateRule, 'suffix'>): LiveCoverage {
  const coverage = LIVE_COVERAGE[rule.suffix];
  if (coverage === undefined) throw new LiveCoverageMissingError(rule.suffix);
  return coverage;
}

/** Model keys: the kind and the name an operator would look up. */
const key = {
  queue: (name: string): string => `queue ${name}`,
  function: (name: string): string => `function ${name}`,
  table: (name: string): string => `table ${name}`,
  alarm: (name: string): string => `alarm ${name}`,
  topic: (name: string): string => `topic ${name}`,
  subscription: (topic: string, protocol: string, endpoint: string): string =>
    `subscription ${topic} ${protocol} ${endpoint}`,
  mapping: (functionName: string, uuid: string): string => `mapping ${functionName}/${uuid}`,
};

/** The function name in a function ARN (`…:function:name[:qualifier]`), or the value itself. */
export function functionNameOf(arnOrName: string): string {
  return /:function:([^:]+)/.exec(arnOrName)?.[1] ?? arnOrName;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Drops undefined fields, as a template leaves a property out. */
function defined(properties: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(properties).filter(([, v]) => v !== undefined));
}

/**
 * The stream a decoupled mapping really reads, from its deployed metadata, rewritten to point
 * into the live model: a `Fn::GetAtt` on a stack table becomes one on that table's model key.
 */
function decoupledStream(
  metadata: Readonly<Record<string, unknown>> | undefined,
  tableNameByLogicalId: ReadonlyMap<string, string>,
): unknown {
  const value = metadata?.[STREAM_ARN_METADATA_KEY];
  if (!isRecord(value)) return value;
  const getAtt = value['Fn::GetAtt'];
  const target = Array.isArray(getAtt)
    ? String(getAtt[0])
    : typeof value.Ref === 'string'
      ? value.Ref
      : undefined;
  const tableName = target === undefined ? undefined : tableNameByLogicalId.get(target);
  return tableName === undefined ? value : { 'Fn::GetAtt': [key.table(tableName), 'StreamArn'] };
}

/** Every dimension value an alarm watches (plain metric or metric math). */
function watchedDimensionValues(alarm: MetricAlarm): string[] {
  const dimensions = [
    ...(alarm.Dimensions ?? []),
    ...(alarm.Metrics ?? []).flatMap((q) => q.MetricStat?.Metric?.Dimensions ?? []),
  ];
  return dimensions.map((d) => d.Value).filter((v): v is string => v !== undefined);
}

/** Translates the live answers into the model the template rules read (see the module comment). */
export function liveTemplateModel(answers: LiveStackAnswers): TemplateModel {
  const resources: Record<string, TemplateResource> = {};
  const ofType = (type: string): LiveStackResource[] => answers.resources.filter((r) => r.type === type);

  for (const q of answers.queues) {
    const a = q.attributes;
    resources[key.queue(q.name)] = {
      Type: QUEUE,
      Properties: defined({
        QueueName: q.name,
        VisibilityTimeout: a.VisibilityTimeout,
        // A JSON string, as a raw template may hold it: the rules parse either form.
        RedrivePolicy: a.RedrivePolicy,
        FifoQueue: a.FifoQueue,
        KmsMasterKeyId: a.KmsMasterKeyId,
        SqsManagedSseEnabled: a.SqsManagedSseEnabled,
      }),
    };
  }

  for (const fn of answers.functions) {
    if (fn.FunctionName === undefined) continue;
    resources[key.function(fn.FunctionName)] = {
      Type: FUNCTION,
      Properties: defined({
        FunctionName: fn.FunctionName,
        Timeout: fn.Timeout,
        MemorySize: fn.MemorySize,
        Environment:
          fn.Environment?.Variables === undefined ? undefined : { Variables: fn.Environment.Variables },
      }),
    };
  }

  const tableNameByLogicalId = new Map(ofType(TABLE).map((r) => [r.logicalId, r.physicalId]));
  for (const t of answers.tables) {
    const status = t.timeToLive?.TimeToLiveStatus;
    resources[key.table(t.name)] = {
      Type: TABLE,
      Properties: defined({
        TableName: t.name,
        // ENABLING is the requested state on its way: the setting is there.
        TimeToLiveSpecification:
          status === undefined
            ? undefined
            : {
                Enabled: status === 'ENABLED' || status === 'ENABLING',
                AttributeName: t.timeToLive?.AttributeName,
              },
      }),
    };
  }

  const logicalIdByMapping = new Map(ofType(MAPPING).map((r) => [r.physicalId, r.logicalId]));
  for (const m of answers.mappings) {
    if (m.UUID === undefined) continue;
    const functionName = functionNameOf(m.FunctionArn ?? '');
    const logicalId = logicalIdByMapping.get(m.UUID);
    const stream = decoupledStream(
      logicalId === undefined ? undefined : answers.metadata.get(logicalId),
      tableNameByLogicalId,
    );
    resources[key.mapping(functionName, m.UUID)] = {
      Type: MAPPING,
      Properties: defined({
        EventSourceArn: m.EventSourceArn,
        FunctionName: m.FunctionArn,
        FunctionResponseTypes: m.FunctionResponseTypes,
        BisectBatchOnFunctionError: m.BisectBatchOnFunctionError,
        MaximumRetryAttempts: m.MaximumRetryAttempts,
        MaximumRecordAgeInSeconds: m.MaximumRecordAgeInSeconds,
        MaximumBatchingWindowInSeconds: m.MaximumBatchingWindowInSeconds,
        DestinationConfig:
          m.DestinationConfig?.OnFailure?.Destination === undefined
            ? undefined
            : { OnFailure: { Destination: m.DestinationConfig.OnFailure.Destination } },
      }),
      ...(stream === undefined ? {} : { Metadata: { [STREAM_ARN_METADATA_KEY]: stream } }),
    };
  }

  const stackAlarms = new Set(
    [...ofType(ALARM), ...ofType(COMPOSITE_ALARM)].map((r) => r.physicalId).filter((id) => id !== ''),
  );
  const stackNames = new Set([
    ...answers.queues.map((q) => q.name),
    ...answers.functions.map((f) => f.FunctionName).filter((n): n is string => n !== undefined),
    ...answers.tables.map((t) => t.name),
  ]);
  for (const alarm of answers.metricAlarms) {
    const name = alarm.AlarmName;
    if (name === undefined) continue;
    if (!stackAlarms.has(name) && !watchedDimensionValues(alarm).some((v) => stackNames.has(v))) continue;
    resources[key.alarm(name)] = {
      Type: ALARM,
      Properties: defined({
        AlarmName: name,
        AlarmDescription: alarm.AlarmDescription,
        Namespace: alarm.Namespace,
        MetricName: alarm.MetricName,
        // O3 asks that the alarm notifies someone.
        AlarmActions: alarm.AlarmActions,
        ActionsEnabled: alarm.ActionsEnabled,
        Dimensions: alarm.Dimensions,
        Metrics: alarm.Metrics,
      }),
    };
  }
  for (const alarm of answers.compositeAlarms) {
    const name = alarm.AlarmName;
    if (name === undefined || !stackAlarms.has(name)) continue;
    resources[key.alarm(name)] = {
      Type: COMPOSITE_ALARM,
      Properties: defined({
        AlarmName: name,
        AlarmDescription: alarm.AlarmDescription,
        AlarmRule: alarm.AlarmRule,
        // A metric alarm without actions of its own pages through the composite that names it.
        AlarmActions: alarm.AlarmActions,
        ActionsEnabled: alarm.ActionsEnabled,
      }),
    };
  }

  for (const topic of answers.topics ?? []) {
    const name = topic.arn.split(':').pop() ?? topic.arn;
    const reason =
      topic.logicalId === undefined
        ? undefined
        : answers.metadata.get(topic.logicalId)?.[NO_SUBSCRIBER_METADATA_KEY];
    resources[key.topic(name)] = {
      Type: TOPIC,
      Properties: { TopicName: name },
      ...(typeof reason === 'string' ? { Metadata: { [NO_SUBSCRIBER_METADATA_KEY]: reason } } : {}),
    };
    for (const sub of topic.subscriptions) {
      const protocol = sub.Protocol ?? '?';
      const endpoint = sub.Endpoint ?? '?';
      resources[key.subscription(name, protocol, endpoint)] = {
        Type: SUBSCRIPTION,
        Properties: { TopicArn: topic.arn, Protocol: protocol, Endpoint: endpoint },
        ...(sub.SubscriptionArn === PENDING_CONFIRMATION
          ? { Metadata: { [PENDING_CONFIRMATION_METADATA_KEY]: true } }
          : {}),
      };
    }
  }

  return { Resources: resources };
}

/**
 * The checklist over the deployed stack: one item per template rule, in checklist order, then
 * the preflight's checks (P5) when the answers carry them.
 */
export function auditLive(answers: LiveStackAnswers): ChecklistItem[] {
  const index = new TemplateIndex(liveTemplateModel(answers));
  const preflight =
    answers.preflight === undefined ? [] : preflightChecklist(evaluatePreflight(answers.preflight));
  const items = TEMPLATE_RULES.map((rule): ChecklistItem => {
    const item = { ruleId: ruleId(rule), featureId: rule.featureId, title: rule.title };
    const coverage = liveCoverage(rule);
    if (!coverage.checkable) {
      return {
        ...item,
        status: 'not-checkable',
        ...levels('not-checkable', 'error'),
        why: coverage.reason,
        resources: [],
      };
    }
    return checklistItem(
      item,
      rule.check(index).map((f) => ({ resource: f.logicalId, compliant: f.compliant, why: f.why })),
    );
  });
  return [...items, ...preflight];
}
