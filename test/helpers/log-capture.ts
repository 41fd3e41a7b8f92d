/**
 * What Powertools Loggers print, captured for assertions. A Logger writes one JSON document per
 * line through a Console on process.stdout (debug, info) and process.stderr (warn, error), so
 * the capture replaces both streams' write while an action runs, and keeps it out of the test
 * output.
 */

/** One structured log line. */
export interface LogLine {
  readonly level: string;
  readonly message: string;
  readonly [field: string]: unknown;
}

function isLogLine(value: unknown): value is LogLine {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { level?: unknown }).level === 'string' &&
    typeof (value as { message?: unknown }).message === 'string'
  );
}

/** Runs `action` and returns its result with every log line printed meanwhile (other output is dropped). */
export async function captureLogs<T>(action: () => Promise<T>): Promise<{ result: T; logs: LogLine[] }> {
  const logs: LogLine[] = [];
  const collect = (chunk: string | Uint8Array): boolean => {
    for (const line of chunk.toString().split('\n')) {
      if (line.trim() === '') continue;
      try {
        const parsed: unknown = JSON.parse(line);
        if (isLogLine(parsed)) logs.push(parsed);
      } catch {
        // Not a log line (an EMF document is JSON; a warning from a library may not be).
      }
    }
    return true;
  };
  const stdout = jest.spyOn(process.stdout, 'write').mockImplementation(collect);
  const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(collect);
  try {
    return { result: await action(), logs };
  } finally {
    stdout.mockRestore();
    stderr.mockRestore();
  }
}
