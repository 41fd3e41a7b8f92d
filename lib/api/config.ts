/**
 * `tenang/config`: the pipeline declaration an app writes (job types, stream consumers, stage
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
  VISIBILITY_TIMEOUT_FACTOR,
  DLQ_RETENTION_SECONDS,
  type ResolvedJobType,
  type ResolvedStreamConsumer,
  type DerivedAlarmSettings,
} from '../config/derive';
export { loadPipelineConfig, jobTypeByName, type PipelineConfig } from '../config/load';
export { PipelineConfigError } from '../config/errors';
export {
  encodePipeline,
  decodePipeline,
  pipelineFromTemplate,
  PIPELINE_VARIABLE,
  PIPELINE_METADATA_KEY,
  type PipelineDeclaration,
} from '../config/source';
