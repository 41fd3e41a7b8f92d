/**
 * Crash injection at named points (I4, the chaos suite). A crash kills the process the way a
 * real crash would: no finally block, no Powertools cleanup, no ack. A point written
 * `hang:<point>` blocks the process there instead, so the function runs into its timeout.
 * Inactive unless the TENANG_CRASH_POINTS variable names the point, which only the local
 * platform and tests set.
 */

/** Named points where a job can be made to crash. */
export type CrashPoint =
  /** The runner, for every job type: the job's own code is about to run (nothing of it done yet). */
  | 'before-run'
  | 'before-side-effect'
  | 'after-side-effect'
  | 'after-commit'
  | 'before-invalidation'
  | 'during-invalidation'
  | 'holding-lock'
  | 'before-enqueue';

/**
 * The line the hook prints when an armed point is reached, before it kills or hangs the process
 * (group 1: crash or hang, group 2: the point); the local platform and the chaos suite read it.
 */
export const INJECTED_POINT_LINE = /\[tenang\] injected (crash|hang) at ([a-z-]+)/;

/** A crash hook; the core calls it at each point. */
export type CrashHook = (point: CrashPoint) => void;

/** Never crashes (production). */
export const noCrash: CrashHook = () => undefined;

/** Crashes (or hangs, for `hang:<point>`) at the points listed comma-separated in `spec`. */
export function crashHookFrom(
  spec: string | undefined,
  kill: () => void = killNow,
  hang: () => void = hangNow,
): CrashHook {
  const points = new Set(
    (spec ?? '')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean),
  );
  if (points.size === 0) return noCrash;
  return (point) => {
    if (points.has(`hang:${point}`)) {
      process.stderr.write(`[tenang] injected hang at ${point}\n`);
      hang();
    }
    if (points.has(point)) {
      process.stderr.write(`[tenang] injected crash at ${point}\n`);
      kill();
    }
  };
}

/** Blocks the thread for good: nothing runs until the host kills the process at its timeout. */
function hangNow(): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
}

function killNow(): void {
  process.kill(process.pid, 'SIGKILL');
}
