/**
 * What each drill is, as data (no platform code): the CLI's `drill --list`, the config audit's
 * P2 rule and the runbook index read it without loading the drills themselves.
 */

/** A drill's description. */
export interface DrillInfo {
  /** `tenang drill <name>`. */
  readonly name: string;
  /** The runbook it executes: runbooks/<runbook>.md. */
  readonly runbook: string;
  /** The incident, in one line. */
  readonly incident: string;
  /** Consumers (function logical names) the drill exercises: their fact sheets count as drilled. */
  readonly consumers: readonly string[];
  /** Longest the drill may take, seconds, when it waits out something real (a hold). @default 300 */
  readonly timeoutSeconds?: number;
  /**
   * The job type the drill plays its incident on unless `--job-type` names another: a drill whose
   * incident and recovery hold for any job type takes any declared one with a `samplePayload`.
   * @default - none: the drill is about a reference domain fact and takes no `--job-type`
   */
  readonly jobType?: string;
}

/** Every drill, in the order `tenang drill --list` shows them. */
export const DRILL_CATALOG = [
  {
    name: 'retry-storm',
    runbook: 'retry-storm',
    incident: 'the provider a consumer calls answers 503 to every request while jobs keep arriving',
    consumers: ['notification-consumer', 'payment-consumer', 'outbox-relay'],
    jobType: 'notification.send',
  },
  {
    name: 'backlog',
    runbook: 'backlog',
    incident: 'a consumer is paused for maintenance while its jobs keep arriving',
    consumers: ['notification-consumer', 'payment-consumer', 'outbox-relay'],
    jobType: 'notification.send',
  },
  {
    name: 'dlq-not-empty',
    runbook: 'dlq-not-empty',
    incident: 'a DLQ holds a poison message, an exhausted job and a job already done',
    consumers: ['payment-consumer'],
    jobType: 'payment.capture',
  },
  {
    name: 'stuck-lock',
    runbook: 'stuck-lock',
    incident: 'an inventory worker crashed holding the lease on a SKU that a paid order needs',
    consumers: ['inventory-consumer'],
  },
  {
    name: 'stuck-jobs',
    runbook: 'stuck-jobs',
    incident: 'a job hangs until its function times out',
    consumers: ['payment-consumer'],
    jobType: 'payment.capture',
  },
  {
    name: 'duplicates',
    runbook: 'duplicates',
    incident:
      'each payment is sent many times with its key, again with fresh keys, and delivered twice by SQS',
    consumers: ['payment-consumer', 'ingress'],
  },
  {
    name: 'pause-overdue',
    runbook: 'pause-overdue',
    incident: 'a short pause of a consumer was forgotten and has expired',
    consumers: ['notification-consumer'],
    jobType: 'notification.send',
  },
  {
    name: 'flag-reconciler',
    runbook: 'flag-reconciler',
    incident: 'the flag reconciler stops running while a pause flag is set directly in SSM',
    consumers: ['flag-reconciler', 'notification-consumer'],
    jobType: 'notification.send',
  },
  {
    name: 'stale-cache',
    runbook: 'stale-cache',
    incident: "an order's invalidation is lost, so the cache keeps serving its old version",
    consumers: ['cache-invalidator', 'order-reader'],
  },
  {
    name: 'stream-failures',
    runbook: 'stream-failures',
    incident:
      'the cache invalidator keeps failing until a batch of order changes reaches its on-failure queue',
    consumers: ['cache-invalidator'],
  },
  {
    name: 'permission-denied',
    runbook: 'permission-denied',
    incident: "a deploy drops a consumer's grant on one of its tables, so every job it receives is denied",
    consumers: ['notification-consumer'],
    // The held jobs return when their first hold ends: the drill compresses it to 20 s.
    jobType: 'notification.send',
  },
] as const satisfies readonly DrillInfo[];

/** A drill's name. */
export type DrillName = (typeof DRILL_CATALOG)[number]['name'];

/** The description of drill `name`. */
export function drillInfo(name: DrillName): DrillInfo {
  const info = DRILL_CATALOG.find((d) => d.name === name);
  if (info === undefined) throw new Error(`no drill ${name} in the catalog`);
  return info;
}
