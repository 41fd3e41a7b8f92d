/** Powertools Logger, Metrics and Tracer for one function, built once at module scope. */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';
import { METRICS_NAMESPACE } from '../config/metrics';

/** A function's observability tools. */
export interface Observability {
  readonly logger: Logger;
  readonly metrics: Metrics;
  readonly tracer: Tracer;
}

/** Builds the tools for `serviceName` (its POWERTOOLS_SERVICE_NAME and the `service` dimension). */
export function observability(serviceName: string): Observability {
  return {
    logger: new Logger({ serviceName }),
    metrics: new Metrics({ namespace: METRICS_NAMESPACE, serviceName }),
    // Tracing is off outside Lambda (the local host and tests have no X-Ray daemon).
    tracer: new Tracer({ serviceName, enabled: process.env.AWS_EXECUTION_ENV !== undefined }),
  };
}
