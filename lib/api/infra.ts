/**
 * `tenang/infra`: the CDK side. `buildApp` makes the whole pipeline stack of a declaration with
 * the AwsSolutions, Serverless and Tenang nag packs attached; the constructs it is made of can be
 * used one by one in a stack of your own.
 */
export { buildApp, stackName, DEFAULT_REGION, type BuiltApp } from '../infra/app';
export { PipelineStack, lambdaEntry, type PipelineStackProps } from '../infra/pipeline-stack';
export { WorkerQueue, type WorkerQueueProps } from '../infra/worker-queue';
export { StreamConsumer, type StreamConsumerProps } from '../infra/stream-consumer';
export { Observability, type ObservabilityProps } from '../infra/observability';
export { ControlFlags, type ControlFlagsProps, type ControlledConsumer } from '../infra/control-flags';
export { Tables, type TablesProps } from '../infra/tables';
export { Cache, type CacheProps } from '../infra/cache';
export {
  TenangFunction,
  type TenangFunctionProps,
  type FunctionVpcPlacement,
} from '../infra/tenang-function';
/** What a construct of an app's own is built with: tenang's log retention and props checks. */
export { LOG_RETENTION } from '../infra/defaults';
export { validateProps, environmentProblems, type PropsRule } from '../infra/validation';
export { grantItems, grantSend, grantParameterRead } from '../infra/grants';
export { targetTraits, STAGE_CONTEXT_KEY, TARGET_CONTEXT_KEY, type TargetTraits } from '../infra/target';
