/**
 * Names of the custom metrics the functions emit (EMF through Powertools Metrics) and the
 * alarms read. One list, so a renamed metric cannot silently leave an alarm on no data.
 */

/** CloudWatch namespace of every custom metric. */
export const METRICS_NAMESPACE = 'tenang';

/** Dimension that identifies the consumer (equals POWERTOOLS_SERVICE_NAME of its function). */
export const SERVICE_DIMENSION = 'service';

/** Dimension the flag reconciler uses for per-consumer flag metrics. */
export const CONSUMER_DIMENSION = 'consumer';

/** Service name of the flag reconciler; Powertools adds it as the `service` dimension. */
export const RECONCILER_SERVICE = 'flag-reconciler';

/**
 * Service name of the cache-admin function (the `tenang cache` commands' way into the cache's
 * VPC); its deployed name is `<stack>-cache-admin`, as every TenangFunction's.
 */
export const CACHE_ADMIN_SERVICE = 'cache-admin';

/** Dimensions of the reconciler's per-consumer metrics (Paused, PauseOverdue, FlagInvalid). */
export function flagMetricDimensions(consumer: string): Record<string, string> {
  return { [SERVICE_DIMENSION]: RECONCILER_SERVICE, [CONSUMER_DIMENSION]: consumer };
}

/** Metric names. */
export const METRIC = {
  /** A job finished its effect. */
  jobSucceeded: 'JobSucceeded',
  /** A transient failure: the message will be retried after a backoff. */
  jobRetried: 'JobRetried',
  /** A permanent failure: the message went to the DLQ at once. */
  jobFailedPermanently: 'JobFailedPermanently',
  /** An unexpected error (a bug): fails loudly. */
  jobBug: 'JobFailedBug',
  /**
   * The deployment denied an action (a missing IAM grant, a key policy): the job is held, never
   * dead-lettered for it; the ingress answers 503. Pages at once (`<consumer>-permission-denied`).
   */
  permissionDenied: 'PermissionDenied',
  /** A job deferred (busy lock, degrade mode) without counting as an attempt. */
  jobDeferred: 'JobDeferred',
  /** A duplicate that found its transition done and made no side effect. */
  duplicateIgnored: 'DuplicateIgnored',
  /** Enqueue → start of processing, milliseconds. */
  queueLatency: 'QueueLatencyMs',
  /** A lease lock was busy. */
  lockContention: 'LockContention',
  /** How long the holder of a busy lease lock had held it, ms (L4: a stuck lock shows as a rising age). */
  lockAge: 'LockAgeMs',
  cacheHit: 'CacheHit',
  cacheMiss: 'CacheMiss',
  /** A read served from DynamoDB because the cache did not answer (C5). */
  cacheBypass: 'CacheBypass',
  /** Sheddable work refused in degrade mode (B3); never dropped silently. */
  jobShed: 'JobShed',
  /** Sheddable work past its useful age moved to the side queue instead of run (B5). */
  jobExpired: 'JobExpired',
  /** 1 while a consumer's pause flag says paused (flag reconciler). */
  paused: 'Paused',
  /** 1 while a pause is past its expiry. */
  pauseOverdue: 'PauseOverdue',
  /** 1 while a flag's stored value cannot be read. */
  flagInvalid: 'FlagInvalid',
} as const;
