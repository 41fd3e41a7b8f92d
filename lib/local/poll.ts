import { setTimeout as delay } from 'node:timers/promises';
import { DeadlineExceededError } from './errors';

/** Options of {@link pollUntil}. */
export interface PollOptions {
  /** What is awaited, for the timeout message ("moto on port 5055"). */
  readonly description: string;
  /** Give up once this much time has passed since the first attempt. */
  readonly deadlineMs: number;
  /** Pause between two attempts. @default 100 */
  readonly intervalMs?: number;
}

/**
 * Calls `attempt` until it returns a value other than `undefined`, or throws
 * `DeadlineExceededError` once the deadline passes. An attempt that throws ends the poll at once.
 */
export async function pollUntil<T>(attempt: () => Promise<T | undefined>, options: PollOptions): Promise<T> {
  const intervalMs = options.intervalMs ?? 100;
  const deadline = Date.now() + options.deadlineMs;
  for (;;) {
    const value = await attempt();
    if (value !== undefined) return value;
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      throw new DeadlineExceededError(
        `Timed out after ${options.deadlineMs} ms waiting for ${options.description}.`,
      );
    }
    await delay(Math.min(intervalMs, remaining));
  }
}
