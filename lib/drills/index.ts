/** Every drill, by name (`tenang drill --list`). */
import { backlog } from './backlog';
import { dlqNotEmpty } from './dlq-not-empty';
import type { Drill } from './drill';
import { duplicates } from './duplicates';
import { flagReconciler } from './flag-reconciler';
import { pauseOverdue } from './pause-overdue';
import { permissionDenied } from './permission-denied';
import { retryStorm } from './retry-storm';
import { staleCache } from './stale-cache';
import { streamFailures } from './stream-failures';
import { stuckJobs } from './stuck-jobs';
import { stuckLock } from './stuck-lock';

/** The drills, in the order `tenang drill --list` shows them. */
export const DRILLS: readonly Drill[] = [
  retryStorm,
  backlog,
  dlqNotEmpty,
  stuckLock,
  stuckJobs,
  duplicates,
  pauseOverdue,
  flagReconciler,
  staleCache,
  streamFailures,
  permissionDenied,
];

/** The drill named `name`, or undefined. */
export function drillNamed(name: string): Drill | undefined {
  return DRILLS.find((d) => d.name === name);
}
