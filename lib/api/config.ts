/**
 * `tenang/config`: the pipeline declaration an app writes (tables, job types, stream consumers, stage
 * settings), its validation with every problem reported at once, and the values derived from it
 * (queue names, visibility timeouts, alarm thresholds, flag names).
 */
export {
  AWS_LIMITS,
  Criticality,
  QueueKind,
  JobTypeSchema,
  StreamConsumerSchema,
  StageSchema,
  TableSchema,
  StreamResourcesSchema,
  CachedEntitySchema,
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
