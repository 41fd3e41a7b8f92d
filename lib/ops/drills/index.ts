/** Every drill, by name (`tenang drill --list`). */
import { backlog } from './backlog';
import type { Drill } from './drill';
import { retryStorm } from './retry-storm';

/** The drills, in the order `tenang drill --list` shows them. */
export const DRILLS: readonly Drill[] = [retryStorm, backlog];

/** The drill named `name`, or undefined. */
export function drillNamed(name: string): Drill | undefined {
  return DRILLS.find((d) => d.name === name);
}
