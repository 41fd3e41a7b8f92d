/**
 * The one loader of the pipeline config: structural checks (zod) and cross-field checks run
 * over every part, and all problems are reported together in one PipelineConfigError.
 */
import type * as z from './zod';
import {
  AWS_LIMITS,
  jobTypeSchema,
  regionSchema,
  stageNameSchema,
  stageSchema,
  streamConsumerSchema,
  tableSchema,
  type JobType,
  type PipelineInput,
  type Stage,
  type StreamConsumer,
  type Table,
} from './schema';
import {
  DLQ_RETENTION_SECONDS,
  degradeFlagName,
  deriveVisibilityTimeoutSeconds,
  deriveWorstCaseSecondsToDlq,
  resolveJobType,
  resolveStreamConsumer,
  resolveTable,
  type ResolvedJobType,
  type ResolvedStreamConsumer,
  type ResolvedTable,
} from './derive';
import { PipelineConfigError } from './errors';
import { IDEMPOTENCY_TABLE } from './tables';

/** The validated pipeline with every derived value computed. */
export interface PipelineConfig {
  /** The declaration as the app wrote it (what the stack carries to functions and the CLI). */
  readonly declaration: PipelineInput;
  readonly stage: Stage;
  readonly degradeFlagName: string;
  /** tenang's idempotency table first, then the app's declared tables. */
  readonly tables: readonly ResolvedTable[];
  readonly jobTypes: readonly ResolvedJobType[];
  readonly streamConsumers: readonly ResolvedStreamConsumer[];
}

function formatIssues(prefix: string, error: z.core.$ZodError): string[] {
  return error.issues.map((issue) => {
    const path = [prefix, ...issue.path.map(String)].filter((p) => p.length > 0).join('.');
    return `${path}: ${issue.message}`;
  });
}

/**
 * A list the declaration must hold; anything else is one problem (a declaration read from JSON,
 * e.g. TENANG_PIPELINE typed by hand, is not checked by the compiler).
 */
function listOf<T>(value: readonly T[] | undefined, name: string, problems: string[]): readonly T[] {
  if (Array.isArray(value)) return value;
  problems.push(`${name}: must be a list${value === undefined ? ', and is missing' : ''}`);
  return [];
}

/** What Powertools' DynamoDB persistence layer calls on the idempotency table. */
const IDEMPOTENCY_ACTIONS = ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'] as const;

/** Cross-field rules for one job type; each returns the problems it finds. */
function checkJobType(at: string, job: JobType): string[] {
  const problems: string[] = [];
  const { kind } = job.queue;
  if (kind === 'fifo') {
    if (job.queue.groupBy === undefined) {
      problems.push(`${at}.queue.groupBy: a FIFO queue needs the payload field that gives the message group`);
    }
    if (job.batch.windowSeconds !== 0) {
      problems.push(`${at}.batch.windowSeconds: Lambda does not support a batching window on FIFO queues`);
    }
    if (job.batch.size > AWS_LIMITS.sqsFifoBatchSize.max) {
      problems.push(`${at}.batch.size: at most ${AWS_LIMITS.sqsFifoBatchSize.max} on a FIFO queue`);
    }
  } else {
    if (job.queue.groupBy !== undefined) {
      problems.push(`${at}.queue.groupBy: only FIFO queues have message groups`);
    }
    if (job.batch.size > AWS_LIMITS.sqsBatchSizeWithoutWindow.max && job.batch.windowSeconds < 1) {
      problems.push(
        `${at}.batch.windowSeconds: a batch size above 10 needs a batching window of at least 1 s`,
      );
    }
  }
  const visibility = deriveVisibilityTimeoutSeconds(job.function.timeoutSeconds, job.batch.windowSeconds);
  if (visibility > AWS_LIMITS.sqsVisibilityTimeoutSeconds.max) {
    problems.push(
      `${at}.function.timeoutSeconds: the derived visibility timeout (${visibility} s) exceeds SQS's 43200 s`,
    );
  }
  if (job.queue.retentionSeconds >= DLQ_RETENTION_SECONDS) {
    problems.push(
      `${at}.queue.retentionSeconds: must be below ${DLQ_RETENTION_SECONDS} s so the DLQ can keep messages longer`,
    );
  }
  if (job.retry.baseDelaySeconds > job.retry.maxDelaySeconds) {
    problems.push(`${at}.retry.baseDelaySeconds: must not exceed retry.maxDelaySeconds`);
  }
  if (job.latencyObjectiveSeconds <= job.function.timeoutSeconds) {
    problems.push(
      `${at}.latencyObjectiveSeconds: must exceed the function timeout (${job.function.timeoutSeconds} s), or the age alarm fires on normal work`,
    );
  }
  const worstCase = deriveWorstCaseSecondsToDlq(job);
  if (worstCase >= job.queue.retentionSeconds) {
    problems.push(
      `${at}.queue.retentionSeconds: a poison message can take ${worstCase} s to reach the DLQ, longer than the retention; it would be deleted unseen`,
    );
  }
  if (job.usefulAgeSeconds !== undefined) {
    if (job.criticality !== 'sheddable') {
      problems.push(
        `${at}.usefulAgeSeconds: only sheddable work may expire; ${job.criticality} work is never skipped (B5)`,
      );
    }
    if (job.usefulAgeSeconds <= job.latencyObjectiveSeconds) {
      problems.push(
        `${at}.usefulAgeSeconds: must exceed latencyObjectiveSeconds (${job.latencyObjectiveSeconds} s), or jobs expire while still on time`,
      );
    }
    if (job.usefulAgeSeconds >= job.queue.retentionSeconds) {
      problems.push(
        `${at}.usefulAgeSeconds: must be below queue.retentionSeconds (${job.queue.retentionSeconds} s), or SQS deletes old jobs before they can be moved aside and counted`,
      );
    }
  }
  const granted = job.resources.tables[IDEMPOTENCY_TABLE.name];
  if (granted !== undefined) {
    // A job that keeps Powertools records (defineJob's 'record' or a custom persistence layer)
    // claims, completes and gives back; a job idempotent by its own means (a dedup claim, a lease
    // and fence) declares no idempotency table, and the runner refuses 'record' mode without one.
    const missing = IDEMPOTENCY_ACTIONS.filter((a) => !granted.includes(a));
    if (missing.length > 0) {
      problems.push(
        `${at}.resources.tables.idempotency: a job type that keeps idempotency records needs ${IDEMPOTENCY_ACTIONS.join(', ')} on the idempotency table (missing: ${missing.join(', ')})`,
      );
    }
  }
  if (job.criticality === 'critical' && !job.idempotent) {
    problems.push(`${at}.idempotent: critical work must be idempotent (D1)`);
  }
  return problems;
}

function checkStreamConsumer(at: string, sc: StreamConsumer): string[] {
  const problems: string[] = [];
  if (sc.latencyObjectiveSeconds >= sc.maxRecordAgeSeconds) {
    problems.push(
      `${at}.latencyObjectiveSeconds: must be below maxRecordAgeSeconds, or records expire before the iterator-age alarm fires`,
    );
  }
  return problems;
}

function duplicates(values: readonly string[]): string[] {
  return [...new Set(values.filter((v, i) => values.indexOf(v) !== i))];
}

/** Every table named in `granted` must be one that exists (declared, or tenang's idempotency table). */
function checkTableGrants(
  at: string,
  granted: Readonly<Record<string, unknown>>,
  known: readonly string[],
): string[] {
  return Object.keys(granted)
    .filter((t) => !known.includes(t))
    .map((t) => `${at}.resources.tables: "${t}" is not a declared table (known: ${known.join(', ')})`);
}

/** Cross-references of a stream consumer: its source table streams, its tables and job types exist. */
function checkStreamReferences(
  at: string,
  sc: StreamConsumer,
  tables: readonly Table[],
  jobTypeNames: readonly string[],
): string[] {
  const problems: string[] = [];
  const source = tables.find((t) => t.name === sc.table);
  if (source === undefined) {
    problems.push(
      `${at}.table: "${sc.table}" is not a declared table (declared: ${tables.map((t) => t.name).join(', ') || 'none'})`,
    );
  } else if (source.stream === undefined) {
    problems.push(`${at}.table: the table "${sc.table}" declares no stream`);
  }
  problems.push(
    ...checkTableGrants(
      at,
      sc.resources.tables,
      tables.map((t) => t.name),
    ),
  );
  for (const name of sc.resources.queues.filter((q) => !jobTypeNames.includes(q))) {
    problems.push(
      `${at}.resources.queues: "${name}" is not a declared job type (known: ${jobTypeNames.join(', ') || 'none'})`,
    );
  }
  return problems;
}

/**
 * Validates a pipeline declaration and computes its derived values.
 * @throws PipelineConfigError listing every problem found.
 */
export function loadPipelineConfig(input: PipelineInput): PipelineConfig {
  const problems: string[] = [];

  const stageResult = stageSchema().safeParse(input.stage);
  if (!stageResult.success) problems.push(...formatIssues('stage', stageResult.error));

  // tenang's idempotency table is always there; an app declares only its own.
  const tables: Table[] = [tableSchema().parse(IDEMPOTENCY_TABLE)];
  (input.tables ?? []).forEach((raw, index) => {
    const parsed = tableSchema().safeParse(raw);
    if (!parsed.success) {
      problems.push(...formatIssues(`tables[${index}]`, parsed.error));
      return;
    }
    if (parsed.data.name === IDEMPOTENCY_TABLE.name) {
      problems.push(
        `tables[${index}].name: "${IDEMPOTENCY_TABLE.name}" is tenang's own table (Powertools layout), created for every pipeline; do not declare it`,
      );
      return;
    }
    tables.push(parsed.data);
  });
  for (const name of duplicates(tables.map((t) => t.name))) {
    problems.push(`tables: table "${name}" is declared more than once`);
  }
  const tableNames = tables.map((t) => t.name);

  const jobTypes: JobType[] = [];
  const declaredJobs = listOf(input.jobTypes, 'jobTypes', problems);
  if (Array.isArray(input.jobTypes) && declaredJobs.length === 0)
    problems.push('jobTypes: declare at least one job type');
  declaredJobs.forEach((raw, index) => {
    const at = `jobTypes[${index}]`;
    const parsed = jobTypeSchema().safeParse(raw);
    if (!parsed.success) {
      problems.push(...formatIssues(at, parsed.error));
      return;
    }
    problems.push(...checkJobType(at, parsed.data));
    problems.push(...checkTableGrants(at, parsed.data.resources.tables, tableNames));
    jobTypes.push(parsed.data);
  });

  const streamConsumers: StreamConsumer[] = [];
  listOf(input.streamConsumers, 'streamConsumers', problems).forEach((raw, index) => {
    const at = `streamConsumers[${index}]`;
    const parsed = streamConsumerSchema().safeParse(raw);
    if (!parsed.success) {
      problems.push(...formatIssues(at, parsed.error));
      return;
    }
    problems.push(...checkStreamConsumer(at, parsed.data));
    // The job types are parsed by now: a stream consumer may send to any of them.
    problems.push(
      ...checkStreamReferences(
        at,
        parsed.data,
        tables,
        jobTypes.map((j) => j.name),
      ),
    );
    streamConsumers.push(parsed.data);
  });

  for (const name of duplicates(jobTypes.map((j) => j.name))) {
    problems.push(`jobTypes: job type "${name}" is declared more than once`);
  }
  const consumers = [...jobTypes.map((j) => j.consumer), ...streamConsumers.map((s) => s.consumer)];
  for (const consumer of duplicates(consumers)) {
    problems.push(`consumers: "${consumer}" is used by more than one job type or stream consumer`);
  }

  if (stageResult.success) {
    jobTypes.forEach((job, index) => {
      for (const provider of job.resources.providers) {
        if (stageResult.data.providers[provider] === undefined) {
          problems.push(
            `jobTypes[${index}].resources.providers: "${provider}" has no URL in stage.providers (known: ${Object.keys(stageResult.data.providers).join(', ') || 'none'})`,
          );
        }
      }
    });
    jobTypes.forEach((job) => {
      const { dlqName } = resolveJobType(stageResult.data, job);
      if (dlqName.length > AWS_LIMITS.sqsQueueNameLength.max) {
        problems.push(
          `jobTypes: the queue name "${dlqName}" of "${job.name}" is longer than SQS's ${AWS_LIMITS.sqsQueueNameLength.max} characters; shorten the job type or stage name`,
        );
      }
    });
  }

  if (stageResult.success) problems.push(...checkCachedEntities(stageResult.data, tables));

  if (problems.length > 0 || !stageResult.success) throw new PipelineConfigError(problems);
  const stage = stageResult.data;
  return {
    declaration: input,
    stage,
    degradeFlagName: degradeFlagName(stage.name),
    tables: tables.map((t) => resolveTable(stage, t)),
    jobTypes: jobTypes.map((j) => resolveJobType(stage, j)),
    streamConsumers: streamConsumers.map((s) => resolveStreamConsumer(stage, s)),
  };
}

/**
 * A loaded config for another stage name or region of the same declaration (what loading the
 * declaration with that name and region gives): the names derived from them are derived again,
 * and nothing else is validated again, as the declaration was when the config was loaded. What a
 * function does with the config its bundle carries, when it runs in another region than declared.
 * @throws PipelineConfigError when the stage name or the region is not valid
 */
export function restagePipeline(config: PipelineConfig, name: string, region: string): PipelineConfig {
  const nameResult = stageNameSchema().safeParse(name);
  const regionResult = regionSchema().safeParse(region);
  const problems = [
    ...(nameResult.success ? [] : formatIssues('stage.name', nameResult.error)),
    ...(regionResult.success ? [] : formatIssues('stage.region', regionResult.error)),
  ];
  if (problems.length > 0) throw new PipelineConfigError(problems);
  const stage: Stage = { ...config.stage, name, region };
  return {
    declaration: { ...config.declaration, stage: { ...config.declaration.stage, name, region } },
    stage,
    degradeFlagName: degradeFlagName(name),
    tables: config.tables.map((t) => resolveTable(stage, t)),
    jobTypes: config.jobTypes.map((j) => resolveJobType(stage, j)),
    streamConsumers: config.streamConsumers.map((s) => resolveStreamConsumer(stage, s)),
  };
}

/** A cached entity and its table, resolved. */
export interface CachedEntitySource {
  readonly entity: Stage['cache']['entities'][number];
  readonly table: ResolvedTable;
}

/**
 * The cached entities (`stage.cache.entities`) with the tables that are their source of truth
 * (the load checked each is declared). Empty when none is declared: entity invalidations then
 * have nothing to fence at, and a flush warms no hot key.
 */
export function cachedEntitySources(config: PipelineConfig): CachedEntitySource[] {
  return config.stage.cache.entities.flatMap((entity) => {
    const table = config.tables.find((t) => t.name === entity.table);
    return table === undefined ? [] : [{ entity, table }];
  });
}

/** The distinct tables of the cached entities (what the cache-admin function reads). */
export function cachedEntityTables(config: PipelineConfig): ResolvedTable[] {
  return [...new Set(cachedEntitySources(config).map((s) => s.table))];
}

/** Cross-references of the cached entities: each table declared and readable by the entity's key alone. */
function checkCachedEntities(stage: Stage, tables: readonly Table[]): string[] {
  const problems: string[] = [];
  stage.cache.entities.forEach((entity, index) => {
    const at = `stage.cache.entities[${index}]`;
    const table = tables.find((t) => t.name === entity.table);
    if (table === undefined || table.name === IDEMPOTENCY_TABLE.name) {
      const declared = tables.filter((t) => t.name !== IDEMPOTENCY_TABLE.name).map((t) => t.name);
      problems.push(
        `${at}.table: "${entity.table}" is not a declared table (declared: ${declared.join(', ') || 'none'})`,
      );
      return;
    }
    if (entity.key !== table.partitionKey) {
      problems.push(
        `${at}.key: "${entity.key}" is not the partition key of the table "${table.name}" ("${table.partitionKey}"): the entity is read by its key alone`,
      );
    }
    if (table.sortKey !== undefined) {
      problems.push(
        `${at}.table: the table "${table.name}" has a sort key ("${table.sortKey}"): a cached entity is read by its id alone, so its table has none`,
      );
    }
    if (entity.version === entity.key) {
      problems.push(`${at}.version: must not be the key attribute "${entity.key}"`);
    }
  });
  for (const name of duplicates(stage.cache.entities.map((e) => e.name))) {
    problems.push(`stage.cache.entities: entity "${name}" is declared more than once`);
  }
  return problems;
}

/** Finds a job type by name, or throws listing the known ones. */
export function jobTypeByName(config: PipelineConfig, name: string): ResolvedJobType {
  const found = config.jobTypes.find((j) => j.name === name);
  if (found === undefined) {
    throw new PipelineConfigError([
      `unknown job type "${name}"; known: ${config.jobTypes.map((j) => j.name).join(', ')}`,
    ]);
  }
  return found;
}
