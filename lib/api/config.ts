/**
 * `tenang/config`: the pipeline declaration an app writes (tables, job types, stream consumers, stage
 * settings), its validation with every problem reported at once, and the values derived from it
 * (queue names, visibility timeouts, alarm thresholds, flag names).
 */
import {
  type Criticality as CriticalityValue,
  type QueueKind as QueueKindValue,
  cachedEntitySchema,
  criticalitySchema,
  jobTypeSchema,
  queueKindSchema,
  stageSchema,
  streamConsumerSchema,
  streamResourcesSchema,
  tableSchema,
} from '../config/schema';

export {
  AWS_LIMITS,
  criticalitySchema,
  queueKindSchema,
  jobTypeSchema,
  streamConsumerSchema,
  stageSchema,
  stageNameSchema,
  consumerNameSchema,
  tableSchema,
  streamResourcesSchema,
  cachedEntitySchema,
  type CachedEntityInput,
  type Table,
  type TableInput,
  type StreamResources,
  type JobType,
  type JobTypeInput,
  type StreamConsumer,
  type StreamConsumerInput,
  type Stage,
  type StageInput,
  type PipelineInput,
} from '../config/schema';
export {
  deriveVisibilityTimeoutSeconds,
  deriveWorstCaseSecondsToDlq,
  deriveAlarmSettings,
  pauseFlagName,
  degradeFlagName,
  jobTypeSlug,
  tableVariable,
  queueUrlVariable,
  providerVariable,
  VISIBILITY_TIMEOUT_FACTOR,
  DLQ_RETENTION_SECONDS,
  type ResolvedJobType,
  type ResolvedStreamConsumer,
  type ResolvedTable,
  type DerivedAlarmSettings,
} from '../config/derive';
export { TABLE_KEYS, IDEMPOTENCY_TABLE } from '../config/tables';
export {
  loadPipelineConfig,
  restagePipeline,
  jobTypeByName,
  cachedEntitySources,
  cachedEntityTables,
  type CachedEntitySource,
  type PipelineConfig,
} from '../config/load';
export { PipelineConfigError } from '../config/errors';
export {
  encodePipeline,
  decodePipeline,
  pipelineFromTemplate,
  PIPELINE_VARIABLE,
  PIPELINE_METADATA_KEY,
  type PipelineDeclaration,
} from '../config/source';

// The schemas under their former names, each built when this entry point is imported. A bundle
// drops those it does not use (`@__PURE__`); one that uses them builds them at every cold start.
/** @deprecated Use `stageSchema()`, built on its first use. */
export const StageSchema = /* @__PURE__ */ stageSchema();
/** @deprecated Use `jobTypeSchema()`, built on its first use. */
export const JobTypeSchema = /* @__PURE__ */ jobTypeSchema();
/** @deprecated Use `streamConsumerSchema()`, built on its first use. */
export const StreamConsumerSchema = /* @__PURE__ */ streamConsumerSchema();
/** @deprecated Use `tableSchema()`, built on its first use. */
export const TableSchema = /* @__PURE__ */ tableSchema();
/** @deprecated Use `streamResourcesSchema()`, built on its first use. */
export const StreamResourcesSchema = /* @__PURE__ */ streamResourcesSchema();
/** @deprecated Use `cachedEntitySchema()`, built on its first use. */
export const CachedEntitySchema = /* @__PURE__ */ cachedEntitySchema();
/** What pausing or shedding a job type means for the business. */
export type Criticality = CriticalityValue;
/** @deprecated Use `criticalitySchema()`, built on its first use. */
export const Criticality = /* @__PURE__ */ criticalitySchema();
/** A job type's queue: FIFO or standard. */
export type QueueKind = QueueKindValue;
/** @deprecated Use `queueKindSchema()`, built on its first use. */
export const QueueKind = /* @__PURE__ */ queueKindSchema();
