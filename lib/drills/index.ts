/** tenang's drills, by name (`tenang drill --list`); an app's own join them (app-drills.ts). */
import { backlog } from './backlog';
import { dlqNotEmpty } from './dlq-not-empty';
import { loadAppExtensions } from '../local/extensions';
import { appDrillInfos } from './app-drills';
import type { Drill } from './drill';
import { flagReconciler } from './flag-reconciler';
import { pauseOverdue } from './pause-overdue';
import { permissionDenied } from './permission-denied';
import { retryStorm } from './retry-storm';
import { stuckJobs } from './stuck-jobs';

/** tenang's drills, in the order `tenang drill --list` shows them (the catalog's). */
export const DRILLS: readonly Drill[] = [
  retryStorm,
  backlog,
  dlqNotEmpty,
  stuckJobs,
  pauseOverdue,
  flagReconciler,
  permissionDenied,
];

/** tenang's drill named `name`, or undefined. */
export function drillNamed(name: string): Drill | undefined {
  return DRILLS.find((d) => d.name === name);
}

/** Every drill the app in `appDir` runs: tenang's, then its own (names checked as appDrillInfos does). */
export function appDrills(appDir: string | undefined): readonly Drill[] {
  appDrillInfos(appDir);
  return [...DRILLS, ...(loadAppExtensions(appDir).drills ?? [])];
}
