/**
 * Flag reconciler (B4, X4): on every "Parameter Store Change" of a pause flag and every minute,
 * makes each consumer's event source mapping Enabled = !paused and publishes Paused,
 * PauseOverdue and FlagInvalid per consumer. The event only triggers a run: every run
 * reconciles every consumer.
 */
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SSMClient } from '@aws-sdk/client-ssm';
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context, EventBridgeEvent, ScheduledEvent } from 'aws-lambda';
import * as z from '../../lib/config/zod';
import { LambdaMappingControl } from '../../lib/adapters/aws/lambda-mappings';
import { SsmFlagReader } from '../../lib/adapters/aws/ssm-flags';
import { pauseFlagName } from '../../lib/config/derive';
import { CONSUMER_DIMENSION, METRIC, METRICS_NAMESPACE, RECONCILER_SERVICE } from '../../lib/config/metrics';
import { consumerNameSchema, stageNameSchema } from '../../lib/config/schema';
import {
  ReconciliationError,
  reconcileMappings,
  type ConsumerReconciliation,
  type ControlledMapping,
  type FlagReader,
  type MappingControl,
  type MetricsSink,
} from '../../lib/core/reconcile';

/** Powertools service name of this function. */
export const SERVICE_NAME = RECONCILER_SERVICE;

/** The detail of an SSM "Parameter Store Change" event (only `name` is used, for the log). */
export interface ParameterStoreChangeDetail {
  readonly name?: string;
  readonly operation?: string;
  readonly type?: string;
}

/** What triggers a run: a flag change or the schedule. Its content never changes what a run does. */
export type FlagReconcilerEvent =
  EventBridgeEvent<'Parameter Store Change', ParameterStoreChangeDetail> | ScheduledEvent;

const ReconcilerEnvSchema = z.object({
  /** Stage name; the pause flags live under /tenang/<stage>/flags/pause/. */
  TENANG_STAGE: stageNameSchema(),
  /** JSON object: consumer name → its event source mapping's UUID. */
  TENANG_MAPPINGS: z.pipe(
    z.pipe(
      z.string(),
      z.transform((text: string, ctx): unknown => {
        try {
          return JSON.parse(text);
        } catch {
          ctx.issues.push({
            code: 'custom',
            message: 'must be a JSON object {"<consumer>": "<mapping UUID>"}',
            input: text,
          });
          return z.NEVER;
        }
      }),
    ),
    z
      .record(consumerNameSchema(), z.guid('must be an event source mapping UUID'))
      .check(z.refine((mappings) => Object.keys(mappings).length > 0, 'must name at least one consumer')),
  ),
});

/** The reconciler's environment, parsed. */
export interface ReconcilerConfig {
  readonly stage: string;
  /** Consumer name → event source mapping UUID. */
  readonly mappings: Readonly<Record<string, string>>;
}

/** The environment is missing or malformed; lists every problem at once. */
export class ReconcilerEnvError extends Error {
  override readonly name: string = 'ReconcilerEnvError';

  /** Creates the error; each problem starts with the variable it is about. */
  constructor(public readonly problems: readonly string[]) {
    super(`Invalid flag-reconciler environment:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** Parses the environment in one step; throws ReconcilerEnvError naming every missing or invalid variable. */
export function parseReconcilerEnv(env: Readonly<Record<string, string | undefined>>): ReconcilerConfig {
  const parsed = ReconcilerEnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new ReconcilerEnvError(
      parsed.error.issues.map((issue) => {
        const variable = String(issue.path[0]);
        if (issue.path.length === 1 && env[variable] === undefined) return `${variable}: is not set`;
        // A bad record key is reported as "Invalid key in record"; its own message says why.
        const message =
          issue.code === 'invalid_key'
            ? `consumer name ${issue.issues.map((inner) => inner.message).join('; ')}`
            : issue.message;
        return `${issue.path.map(String).join('.')}: ${message}`;
      }),
    );
  }
  return { stage: parsed.data.TENANG_STAGE, mappings: parsed.data.TENANG_MAPPINGS };
}

/** The consumers a configuration controls, with their flag names. */
export function controlledMappings(config: ReconcilerConfig): ControlledMapping[] {
  return Object.entries(config.mappings).map(([consumer, mappingId]) => ({
    consumer,
    mappingId,
    flagName: pauseFlagName(config.stage, consumer),
  }));
}

/** Publishes each consumer's flag state as 0/1 metrics under its own `consumer` dimension. */
export function powertoolsMetricsSink(metrics: Metrics): MetricsSink {
  return {
    publish(outcome) {
      // One EMF document per consumer: a document's dimension values apply to all its metrics.
      metrics.addDimension(CONSUMER_DIMENSION, outcome.consumer);
      metrics.addMetric(METRIC.paused, MetricUnit.Count, outcome.paused ? 1 : 0);
      metrics.addMetric(METRIC.pauseOverdue, MetricUnit.Count, outcome.overdue ? 1 : 0);
      metrics.addMetric(METRIC.flagInvalid, MetricUnit.Count, outcome.invalid === undefined ? 0 : 1);
      metrics.publishStoredMetrics();
    },
  };
}

/** What the handler needs; tests pass fakes or clients bound to the emulator. */
export interface FlagReconcilerDeps {
  readonly config: ReconcilerConfig;
  readonly flags: FlagReader;
  readonly mappings: MappingControl;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** @default () => new Date() */
  readonly now?: () => Date;
}

/** A flag reconciler handler; it returns (and logs) every consumer's outcome, or throws after publishing them. */
export function createHandler(
  deps: FlagReconcilerDeps,
): (event: FlagReconcilerEvent, context?: Context) => Promise<ConsumerReconciliation[]> {
  const consumers = controlledMappings(deps.config);
  const metrics = powertoolsMetricsSink(deps.metrics);
  const now = deps.now ?? (() => new Date());
  const { logger } = deps;

  return async (event, context) => {
    if (context !== undefined) logger.addContext(context);
    logger.info('Reconciling pause flags', {
      trigger: detailTypeOf(event),
      changedFlag: changedFlagName(event),
      consumers: consumers.length,
    });
    try {
      const outcomes = await reconcileMappings({
        consumers,
        now: now(),
        ports: { flags: deps.flags, mappings: deps.mappings, metrics },
      });
      logOutcomes(logger, outcomes);
      return outcomes;
    } catch (error) {
      if (error instanceof ReconciliationError) logOutcomes(logger, error.outcomes);
      logger.error('Reconciliation failed; the invocation fails so it is retried', { error });
      throw error;
    }
  };
}

function logOutcomes(logger: Logger, outcomes: readonly ConsumerReconciliation[]): void {
  for (const outcome of outcomes) {
    if (outcome.error !== undefined) logger.error('Consumer not reconciled', { outcome });
    else if (outcome.invalid !== undefined)
      logger.warn('Pause flag is invalid; treated as not paused', { outcome });
    else if (outcome.overdue)
      logger.warn('Pause is past its expiry; still paused until someone resumes', { outcome });
    else if (outcome.changed)
      logger.info(outcome.paused ? 'Consumer paused' : 'Consumer resumed', { outcome });
    else logger.debug('Consumer already converged', { outcome });
  }
}

/** The event's detail-type when it has one ("Scheduled Event", "Parameter Store Change"). */
function detailTypeOf(event: unknown): string | undefined {
  const value = isRecord(event) ? event['detail-type'] : undefined;
  return typeof value === 'string' ? value : undefined;
}

/** The changed parameter's name when the event is a Parameter Store change. */
function changedFlagName(event: unknown): string | undefined {
  const detail = isRecord(event) ? event.detail : undefined;
  const name = isRecord(detail) ? detail.name : undefined;
  return typeof name === 'string' ? name : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

// Module scope: configuration fails at init, and clients live across invocations.
const config = parseReconcilerEnv(process.env);
const ssm = new SSMClient({});
const lambda = new LambdaClient({});

/** The deployed handler. */
export const handler = createHandler({
  config,
  flags: new SsmFlagReader(ssm),
  mappings: new LambdaMappingControl(lambda),
  logger: new Logger({ serviceName: SERVICE_NAME }),
  metrics: new Metrics({ namespace: METRICS_NAMESPACE, serviceName: SERVICE_NAME }),
});
