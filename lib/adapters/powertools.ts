/**
 * Powertools Logger and Metrics for one function, built once at module scope.
 *
 * Why no Powertools Tracer: every function has Lambda active tracing (its invocation segment in
 * X-Ray), but Tracer brings the X-Ray SDK (aws-xray-sdk-core, cls-hooked, semver: ~120 KB) into
 * every bundle and about 10 ms to every cold start even when loaded lazily (measured with
 * bench/bundles.ts), which alone exceeds the 15 % budget our code may add to the unavoidable
 * SDK load. SDK-call subsegments are the price; correlation ids in the logs carry the trail.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { METRICS_NAMESPACE } from '../config/metrics';

/** A function's observability tools. */
export interface Observability {
  readonly logger: Logger;
  readonly metrics: Metrics;
}

/** Builds the tools for `serviceName` (its POWERTOOLS_SERVICE_NAME and the `service` dimension). */
export function observability(serviceName: string): Observability {
  return {
    logger: new Logger({ serviceName }),
    metrics: new Metrics({ namespace: METRICS_NAMESPACE, serviceName }),
  };
}
