/**
 * The declared (typed-by-a-human) part of the pipeline config, validated with zod.
 * Nothing here is derived: derived values live in derive.ts and are computed, never typed.
 *
 * Every schema is built on its first use (`onFirstUse`), never at module scope: a function reads
 * the config the synth already loaded (compiled into its bundle, lib/config/source.ts) and never
 * validates a declaration, and building all of them on import cost every cold start about 4 ms
 * (bench/REPORT.md). The `@__PURE__` marks let esbuild drop a builder no code of a bundle calls.
 */
import { onFirstUse } from './on-first-use';
import * as z from './zod';

/** AWS limits that the schema and the cross-field checks share. */
export const AWS_LIMITS = {
  lambdaTimeoutSeconds: { min: 1, max: 900 },
  lambdaMemoryMb: { min: 128, max: 10_240 },
  sqsVisibilityTimeoutSeconds: { max: 43_200 },
  sqsRetentionSeconds: { min: 60, max: 1_209_600 },
  sqsQueueNameLength: { max: 80 },
  sqsFifoBatchSize: { max: 10 },
  sqsStandardBatchSize: { max: 10_000 },
  sqsBatchSizeWithoutWindow: { max: 10 },
  sqsBatchingWindowSeconds: { max: 300 },
  esmMaximumConcurrency: { min: 2, max: 1_000 },
  maxReceiveCount: { min: 1, max: 1_000 },
  streamRetryAttempts: { min: 0, max: 10_000 },
  streamMaxRecordAgeSeconds: { min: 60, max: 604_800 },
  streamBatchSize: { min: 1, max: 10_000 },
} as const;

const kebab = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/** An integer within [min, max]. */
function intIn(min: number, max?: number): z.ZodMiniNumber<number> {
  return max === undefined ? z.int().check(z.gte(min)) : z.int().check(z.gte(min), z.lte(max));
}

const nonEmpty = (): z.ZodMiniString<string> => z.string().check(z.minLength(1));
const kebabName = (message: string): z.ZodMiniString<string> => z.string().check(z.regex(kebab, message));

/** What pausing or shedding a job type means for the business; drives flag semantics (B3). */
export const criticalitySchema = /* @__PURE__ */ onFirstUse(() =>
  z.enum(['critical', 'deferrable', 'sheddable']),
);
export type Criticality = z.infer<ReturnType<typeof criticalitySchema>>;

/** A job type's queue: FIFO (ordered per message group) or standard. */
export const queueKindSchema = /* @__PURE__ */ onFirstUse(() => z.enum(['fifo', 'standard']));
export type QueueKind = z.infer<ReturnType<typeof queueKindSchema>>;

/** Exponential backoff with full jitter (R2); the attempt bound is the queue's maxReceiveCount (R6). */
export const retryPolicySchema = /* @__PURE__ */ onFirstUse(() =>
  z.object({
    /** First retry delay before jitter, seconds. */
    baseDelaySeconds: intIn(1),
    /** Cap on any single delay, seconds (SQS allows at most 12 hours of visibility). */
    maxDelaySeconds: intIn(1, AWS_LIMITS.sqsVisibilityTimeoutSeconds.max),
  }),
);
export type RetryPolicy = z.infer<ReturnType<typeof retryPolicySchema>>;

const functionSchema = /* @__PURE__ */ onFirstUse(() =>
  z.object({
    timeoutSeconds: intIn(AWS_LIMITS.lambdaTimeoutSeconds.min, AWS_LIMITS.lambdaTimeoutSeconds.max),
    memoryMb: intIn(AWS_LIMITS.lambdaMemoryMb.min, AWS_LIMITS.lambdaMemoryMb.max),
  }),
);

/**
 * A table's name as the declaration writes it: kebab-case, part of its physical name
 * `tenang-<stage>-<name>` and of its variable `<NAME>_TABLE` (`-` becomes `_`).
 */
export const tableNameSchema = /* @__PURE__ */ onFirstUse(() =>
  kebabName('must be kebab-case, e.g. invoices'),
);
export type TableName = z.infer<ReturnType<typeof tableNameSchema>>;

/** What a table's stream carries (DynamoDB's StreamViewType). */
export const streamViewTypeSchema = /* @__PURE__ */ onFirstUse(() =>
  z.enum(['KEYS_ONLY', 'NEW_IMAGE', 'OLD_IMAGE', 'NEW_AND_OLD_IMAGES']),
);
export type StreamViewType = z.infer<ReturnType<typeof streamViewTypeSchema>>;

/** A DynamoDB attribute name (1 to 255 characters). */
const attributeName = (): z.ZodMiniString<string> => z.string().check(z.minLength(1), z.maxLength(255));

/**
 * A table the app declares. The stack gives every table tenang's defaults (on-demand,
 * encrypted, point-in-time recovery, kept on delete except when its own create fails) and the
 * physical name `tenang-<stage>-<name>`; keys are strings.
 */
export const tableSchema = /* @__PURE__ */ onFirstUse(() =>
  z.object({
    name: tableNameSchema(),
    /** The partition key attribute (a string). */
    partitionKey: attributeName(),
    /** The sort key attribute (a string). @default - none */
    sortKey: z.optional(attributeName()),
    /** The TTL attribute (epoch seconds). @default - no TTL */
    ttl: z.optional(attributeName()),
    /** The stream's view type; a stream consumer's source table needs one. @default - no stream */
    stream: z.optional(streamViewTypeSchema()),
  }),
);
export type TableInput = z.input<ReturnType<typeof tableSchema>>;
export type Table = z.output<ReturnType<typeof tableSchema>>;

/**
 * DynamoDB item actions a consumer may be granted on a table (never the whole dynamodb:*).
 * BatchWriteItem is its own IAM action, and allows the batch's deletes as well as its puts.
 */
export const tableActionSchema = /* @__PURE__ */ onFirstUse(() =>
  z.enum(['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'ConditionCheckItem', 'BatchWriteItem']),
);
export type TableAction = z.infer<ReturnType<typeof tableActionSchema>>;

/** Tables (declared, or tenang's idempotency table) and the item actions a consumer calls on each. */
const tableGrantsSchema = /* @__PURE__ */ onFirstUse(() =>
  z.record(tableNameSchema(), z.array(tableActionSchema()).check(z.minLength(1))),
);

const providerName = (): z.ZodMiniString<string> =>
  z.string().check(z.regex(/^[a-z][a-z0-9]*$/, 'must be lower-case letters and digits, e.g. invoicing'));

/** A consumer's logical name (kebab-case): its function, pause flag and event source mapping are keyed on it. */
export const consumerNameSchema = /* @__PURE__ */ onFirstUse(() => kebabName('must be kebab-case'));

/** A job type's name as it appears in the envelope, e.g. `invoice.issue`. */
const jobTypeName = (): z.ZodMiniString<string> =>
  z.string().check(z.regex(/^[a-z]+(\.[a-z]+)+$/, 'must look like "domain.action", e.g. invoice.issue'));

/** A handler module, relative to the app's directory, exporting `handler`. */
const entryPath = (): z.ZodMiniString<string> =>
  z
    .string({
      error: (issue) =>
        issue.input === undefined
          ? 'is required: the handler module, relative to the app (e.g. jobs/invoice-issue.ts)'
          : undefined,
    })
    .check(z.regex(/^[^/].*\.[cm]?[jt]s$/, 'must be a relative path to a .ts or .js file'));

/**
 * What a job type's consumer uses. The stack derives everything from it: each table's
 * `<NAME>_TABLE` variable and a grant of exactly the listed actions, each provider's
 * `<NAME>_PROVIDER_URL` from the stage's providers, and on the local platform a fake provider.
 */
export const jobResourcesSchema = /* @__PURE__ */ onFirstUse(() =>
  z.object({
    /** Tables and the item actions the consumer calls on each. @default {} */
    tables: z._default(tableGrantsSchema(), {}),
    /** HTTP providers it calls, by the name the stage's `providers` gives their URL. @default [] */
    providers: z._default(z.array(providerName()), []),
  }),
);
export type JobResources = z.output<ReturnType<typeof jobResourcesSchema>>;

/** A job type: its queue, consumer function, batch, retries, criticality and resources. */
export const jobTypeSchema = /* @__PURE__ */ onFirstUse(() =>
  z.object({
    /** Job type name as it appears in the envelope, e.g. `invoice.issue`. */
    name: jobTypeName(),
    /** The consumer function's logical name; the pause flag and the ESM are keyed on it. */
    consumer: consumerNameSchema(),
    queue: z.object({
      kind: queueKindSchema(),
      /** FIFO only: the envelope payload field whose value is the MessageGroupId. */
      groupBy: z.optional(nonEmpty()),
      /** @default 345600 (4 days, the SQS default) */
      retentionSeconds: z._default(
        intIn(AWS_LIMITS.sqsRetentionSeconds.min, AWS_LIMITS.sqsRetentionSeconds.max),
        345_600,
      ),
    }),
    function: functionSchema(),
    batch: z.object({
      size: intIn(1, AWS_LIMITS.sqsStandardBatchSize.max),
      /** @default 0 */
      windowSeconds: z._default(intIn(0, AWS_LIMITS.sqsBatchingWindowSeconds.max), 0),
      /** ESM maximum concurrency (B2). */
      maxConcurrency: intIn(AWS_LIMITS.esmMaximumConcurrency.min, AWS_LIMITS.esmMaximumConcurrency.max),
    }),
    /** Receives before SQS redrives to the DLQ; this is also the total attempt bound (R6). */
    maxReceiveCount: z.int().check(z.gte(2, 'must allow at least one retry'), z.lte(50)),
    retry: retryPolicySchema(),
    criticality: criticalitySchema(),
    /** How old the oldest waiting job may get before the business notices, seconds. */
    latencyObjectiveSeconds: intIn(1),
    /**
     * Sheddable work only (B5): age after which a job is no longer worth doing, seconds from its
     * enqueue. An older job is not run: the consumer moves it to the job type's side queue
     * (`<queue>-expired`) and counts it (JobExpired), so a backlog drains without sending stale
     * work and nothing is dropped silently. @default - never expires
     */
    usefulAgeSeconds: z.optional(intIn(60, AWS_LIMITS.sqsRetentionSeconds.max)),
    owner: nonEmpty(),
    /**
     * What the consumer depends on beyond its `resources` (whose tables and providers the fact
     * sheets list by themselves), e.g. `ses`. @default []
     */
    dependencies: z._default(z.array(nonEmpty()), []),
    idempotent: z.boolean(),
    /** What pausing this consumer costs the business, in words an on-call engineer can act on. */
    pauseCost: nonEmpty(),
    /** Needed to recover from incidents: `tenang pause` refuses it without --force. @default false */
    neededForRecovery: z._default(z.boolean(), false),
    /** Runbook file name under runbooks/, without `.md`. */
    runbook: kebabName('must be a kebab-case file name under runbooks/ without .md'),
    /** Tables and providers the consumer uses (grants, variables, local fakes). @default none */
    resources: z._default(jobResourcesSchema(), { tables: {}, providers: [] }),
    /**
     * The consumer's handler module, relative to the app's directory (e.g. `jobs/invoice-issue.ts`,
     * exporting `handler`).
     */
    entry: entryPath(),
    /**
     * A valid payload, for the local platform's traffic and the chaos workload of a job type they
     * know nothing else about. @default none: such a job type gets no generated traffic
     */
    samplePayload: z.optional(z.record(z.string(), z.unknown())),
  }),
);
export type JobTypeInput = z.input<ReturnType<typeof jobTypeSchema>>;
export type JobType = z.output<ReturnType<typeof jobTypeSchema>>;

/**
 * What a stream consumer uses: the stack sets `<NAME>_TABLE` and grants exactly the listed
 * actions per table, sets `<JOB_TYPE>_QUEUE_URL` and grants SendMessage per job type it sends
 * to, and for the cache the connection variables, the cache's VPC and its connect grant.
 */
export const streamResourcesSchema = /* @__PURE__ */ onFirstUse(() =>
  z.object({
    /** Tables and the item actions the consumer calls on each. @default {} */
    tables: z._default(tableGrantsSchema(), {}),
    /** Job types whose queue it sends to. @default [] */
    queues: z._default(z.array(jobTypeName()), []),
    /** Whether it uses the cache (it then runs in the cache's VPC). @default false */
    cache: z._default(z.boolean(), false),
    /** Whether it reads the stage's degrade flag (`DEGRADE_FLAG`). @default false */
    degradeFlag: z._default(z.boolean(), false),
  }),
);
export type StreamResources = z.output<ReturnType<typeof streamResourcesSchema>>;

/** A DynamoDB stream consumer (e.g. the reference app's cache invalidator and outbox relay). */
export const streamConsumerSchema = /* @__PURE__ */ onFirstUse(() =>
  z.object({
    consumer: consumerNameSchema(),
    /** The declared table whose stream it consumes (the table must declare a stream). */
    table: tableNameSchema(),
    /** The handler module, relative to the app's directory (e.g. `functions/invoice-relay.ts`). */
    entry: entryPath(),
    /** What it uses (grants, variables, VPC placement). @default none */
    resources: z._default(streamResourcesSchema(), {
      tables: {},
      queues: [],
      cache: false,
      degradeFlag: false,
    }),
    function: functionSchema(),
    batchSize: intIn(AWS_LIMITS.streamBatchSize.min, AWS_LIMITS.streamBatchSize.max),
    retryAttempts: intIn(AWS_LIMITS.streamRetryAttempts.min, AWS_LIMITS.streamRetryAttempts.max),
    maxRecordAgeSeconds: intIn(
      AWS_LIMITS.streamMaxRecordAgeSeconds.min,
      AWS_LIMITS.streamMaxRecordAgeSeconds.max,
    ),
    /** How far behind the stream this consumer may fall, seconds (iterator age alarm). */
    latencyObjectiveSeconds: intIn(1),
    owner: nonEmpty(),
    pauseCost: nonEmpty(),
    /** @default false */
    neededForRecovery: z._default(z.boolean(), false),
    runbook: kebabName('must be a kebab-case file name under runbooks/ without .md'),
  }),
);
export type StreamConsumerInput = z.input<ReturnType<typeof streamConsumerSchema>>;
export type StreamConsumer = z.output<ReturnType<typeof streamConsumerSchema>>;

/** A stage name: part of every resource name and SSM path. */
export const stageNameSchema = /* @__PURE__ */ onFirstUse(() =>
  z
    .string()
    .check(
      z.regex(
        /^[a-z](?:[a-z0-9-]{0,14}[a-z0-9])?$/,
        'must be lowercase letters, digits or "-", at most 16, not ending in "-"',
      ),
    ),
);

/** An AWS region name, e.g. eu-west-1. */
export const regionSchema = /* @__PURE__ */ onFirstUse(() =>
  z.string().check(z.regex(/^[a-z]{2}(-gov)?-[a-z]+-\d$/, 'must be an AWS region such as eu-west-1')),
);

/** An SNS topic ARN: arn:<partition>:sns:<region>:<account>:<name>. */
const SNS_TOPIC_ARN = /^arn:aws[a-z-]*:sns:[a-z]{2}(-gov)?-[a-z]+-\d:\d{12}:[A-Za-z0-9_-]{1,256}$/;

/**
 * One subscriber of the stage's alarms; exactly one key.
 * - `email`: an e-mail subscription of the stage's alarm topic. AWS sends a confirmation mail and
 *   delivers nothing until its link is followed (the subscription is PendingConfirmation).
 * - `https`: an HTTPS subscription of the stage's alarm topic: a PagerDuty or Opsgenie
 *   integration URL, a webhook. The endpoint must confirm it (SubscriptionConfirmation message).
 * - `topicArn`: an existing SNS topic outside the stack (e.g. the one an AWS Chatbot / Amazon Q
 *   Developer channel is configured on). Every alarm publishes to it IN ADDITION to the stage's
 *   own topic. The operator owns it: its topic policy must allow Service
 *   cloudwatch.amazonaws.com sns:Publish (conditioned on aws:SourceAccount = the stage's account,
 *   aws:SourceArn arn:aws:cloudwatch:<region>:<account>:alarm:*), and if it is encrypted its key
 *   must be customer managed with a key policy allowing cloudwatch.amazonaws.com kms:Decrypt and
 *   kms:GenerateDataKey* (alias/aws/sns cannot be used); it must be a standard topic, and its
 *   subscriptions are not checked at synth (the live audit reads them when it may).
 */
export const alarmSubscriberSchema = /* @__PURE__ */ onFirstUse(() =>
  z
    .strictObject({
      email: z.optional(z.email('must be an e-mail address, e.g. on-call@example.com')),
      https: z.optional(
        z.url({ protocol: /^https$/, error: 'must be an https:// URL, e.g. https://events.pagerduty.com/…' }),
      ),
      topicArn: z.optional(
        z
          .string()
          .check(
            z.regex(
              SNS_TOPIC_ARN,
              'must be an SNS topic ARN, e.g. arn:aws:sns:eu-west-1:123456789012:on-call',
            ),
          ),
      ),
    })
    .check(
      z.refine(
        (s) => [s.email, s.https, s.topicArn].filter((v) => v !== undefined).length === 1,
        'name exactly one of email, https or topicArn',
      ),
    ),
);
export type AlarmSubscriber = z.output<ReturnType<typeof alarmSubscriberSchema>>;

/** No one is told, on purpose: the reason is written into the template and shown by the audit. */
export const noAlarmDeliverySchema = /* @__PURE__ */ onFirstUse(() =>
  z.strictObject({
    none: z.string().check(z.trim(), z.minLength(1, "give the reason no one is told of this stage's alarms")),
  }),
);

/** The stage's alarm topic and who it tells. */
export const alarmTopicSchema = /* @__PURE__ */ onFirstUse(() =>
  z.object({
    /** SNS topic name for every alarm action. */
    name: z.string().check(z.regex(/^[A-Za-z0-9_-]{1,256}$/)),
    /**
     * Who is told of every alarm: subscribers (`[{ email }, { https }, { topicArn }]`), or
     * `{ none: '<reason>' }`. An empty list declares no one, and the synth refuses it
     * (Tenang-F5-AlarmSubscriber); `cdk synth -c tenang:alarmEmail=you@example.com` adds one e-mail.
     * @default []
     */
    deliverTo: z._default(
      z.union([z.array(alarmSubscriberSchema()), noAlarmDeliverySchema()], {
        error:
          "must be a list of subscribers ([{ email }, { https }, { topicArn }]) or { none: '<why no one is told>' }",
      }),
      [],
    ),
    /** Replaced by deliverTo; refused so that an old declaration does not lose its subscribers silently. */
    emails: z.optional(
      z.never({ error: "was replaced by deliverTo: write deliverTo: [{ email: 'on-call@example.com' }, …]" }),
    ),
  }),
);
export type AlarmTopic = z.output<ReturnType<typeof alarmTopicSchema>>;

/**
 * An entity the app caches (C6): its name in cache keys and in `<entity>:<id>` (`order:123`),
 * the declared table that is its source of truth, the attribute holding its id (the table's
 * partition key; the table has no sort key, so the id alone reads the item) and the attribute
 * holding its version (an integer ≥ 0 that every write raises; invalidations fence on it).
 */
export const cachedEntitySchema = /* @__PURE__ */ onFirstUse(() =>
  z.object({
    name: kebabName('must be kebab-case, e.g. invoice'),
    table: tableNameSchema(),
    key: attributeName(),
    version: attributeName(),
  }),
);
export type CachedEntityInput = z.input<ReturnType<typeof cachedEntitySchema>>;

/** A stage's settings: its name, region, alarm topic, providers and cache. */
export const stageSchema = /* @__PURE__ */ onFirstUse(() =>
  z.object({
    /** Stage name, part of every resource name and SSM path. */
    name: stageNameSchema(),
    region: regionSchema(),
    alarmTopic: alarmTopicSchema(),
    /** External providers the consumers call; each call carries the idempotency key (I3). */
    providers: z.record(providerName(), z.url()),
    cache: z.object({
      /** Base TTL of a cache entry, seconds. */
      ttlSeconds: intIn(1),
      /** Jitter as a fraction of the TTL, added at random (C1). */
      ttlJitterRatio: z.number().check(z.gte(0), z.lte(1)),
      /** Short Redis lock against a cross-process stampede, and the longest its waiters wait, milliseconds (C4). */
      loadLockMs: intIn(10, 30_000),
      /** Per-command Redis timeout, milliseconds (D4). */
      commandTimeoutMs: intIn(10, 10_000),
      /** Keys warmed before a guarded full flush (C6): `<entity>:<id>` or full cache keys. @default [] */
      hotKeys: z._default(z.array(nonEmpty()), []),
      /**
       * The entities the app caches: what `tenang cache invalidate --entity`, `--key` and the
       * flush's hot keys may name, and the tables the cache-admin function may read (GetItem, on
       * those tables only). @default [] (no entity: entity invalidations are refused)
       */
      entities: z._default(z.array(cachedEntitySchema()), []),
    }),
  }),
);
export type StageInput = z.input<ReturnType<typeof stageSchema>>;
export type Stage = z.output<ReturnType<typeof stageSchema>>;

/** The whole declaration as written by a human. */
export interface PipelineInput {
  readonly stage: StageInput;
  /** The app's tables; tenang adds its own idempotency table. @default [] */
  readonly tables?: readonly TableInput[];
  readonly jobTypes: readonly JobTypeInput[];
  readonly streamConsumers: readonly StreamConsumerInput[];
}
