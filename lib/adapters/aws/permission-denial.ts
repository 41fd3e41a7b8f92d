/**
 * How every function reports a permission denial (a deployment error, R1): one error line that
 * names the denied action and resource, as AWS's message gives them, and one PermissionDenied
 * count (EMF, with the function's `service` dimension like every other job metric), which pages
 * through `<consumer>-permission-denied`. What to do with the work is the caller's: the job runner
 * holds the message, a stream consumer fails the record, the ingress answers 503.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { MetricUnit, type Metrics } from '@aws-lambda-powertools/metrics';
import { METRIC } from '../../config/metrics';
import { errorClassName, permissionDenial, type PermissionDenial } from '../../core/errors';

/** The runbook a denial's log line names (runbooks/<name>.md; RUNBOOK.permissionDenied). */
export const PERMISSION_DENIED_RUNBOOK = 'permission-denied';

/** Where a denial is reported. */
export interface DenialReport {
  readonly logger: Pick<Logger, 'error'>;
  readonly metrics: Pick<Metrics, 'addMetric'>;
  /** What the function was doing, e.g. `processing the job`. */
  readonly during: string;
  /** More fields for the log line (the hold, the attempt). */
  readonly extra?: Record<string, unknown>;
}

/**
 * When `error` is an access denial (itself or anywhere in its cause chain): logs it and counts
 * it, and returns what is known of it; otherwise does nothing and returns undefined.
 */
export function reportPermissionDenial(error: unknown, report: DenialReport): PermissionDenial | undefined {
  const denial = permissionDenial(error);
  if (denial === undefined) return undefined;
  report.metrics.addMetric(METRIC.permissionDenied, MetricUnit.Count, 1);
  report.logger.error(
    `permission denied while ${report.during}: ${denial.action ?? 'an action'} on ${denial.resource ?? 'a resource'}; the deployment must grant it (runbooks/${PERMISSION_DENIED_RUNBOOK}.md)`,
    {
      deniedAction: denial.action ?? 'unknown',
      deniedResource: denial.resource ?? 'unknown',
      ...(denial.principal === undefined ? {} : { deniedPrincipal: denial.principal }),
      errorCode: denial.code,
      errorClass: errorClassName(error),
      error: error as Error,
      ...report.extra,
    },
  );
  return denial;
}
