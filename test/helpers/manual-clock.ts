/** A clock that moves only when a test moves it. */

/** A manual clock: call it for the time, `advance` it by milliseconds. */
export interface ManualClock {
  (): Date;
  /** Moves the time forward by `ms`. */
  advance(ms: number): void;
  /** Epoch milliseconds now. */
  ms(): number;
}

/** A manual clock starting at `start`. */
export function manualClock(start: Date | string = '2030-06-01T12:00:00.000Z'): ManualClock {
  let now = new Date(start).getTime();
  const clock = (): Date => new Date(now);
  clock.advance = (ms: number): void => {
    now += ms;
  };
  clock.ms = (): number => now;
  return clock;
}

/** Owner tokens "owner-1", "owner-2", … in order. */
export function sequentialTokens(prefix = 'owner'): () => string {
  let n = 0;
  return () => {
    n += 1;
    return `${prefix}-${n}`;
  };
}
