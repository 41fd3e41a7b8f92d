/**
 * DynamoDB Streams' reader limit as a reader sees it. AWS: "No more than two processes at most
 * should be reading from the same streams shard at the same time. Having more than two readers
 * per shard can result in throttling." (DynamoDB developer guide, DynamoDB Streams); a throttled
 * GetRecords answers LimitExceededException ("More than 2 processes are reading from the same
 * streams shard at the same time", API reference). The SDK classes that error as throttling and
 * retries it by itself (up to its maxAttempts) before the caller sees it, so a count of the
 * errors that reach the caller misses most throttles: {@link ThrottledReads} counts every
 * throttled attempt, with a middleware inside the SDK's retry loop. The local platform's stream
 * mappings and the operator's stream replay (lib/ops/dlq/stream-replay.ts) both count with it.
 */
import type { GetRecordsCommand } from '@aws-sdk/client-dynamodb-streams';

/** The error name of a throttled GetRecords. */
export const STREAM_READ_THROTTLE_ERROR = 'LimitExceededException';

/** True for a throttled stream read (LimitExceededException). */
export function isStreamReadThrottle(error: unknown): boolean {
  return error instanceof Error && error.name === STREAM_READ_THROTTLE_ERROR;
}

/** Counts throttled GetRecords attempts: the SDK's own retries and the ones that reach the caller. */
export class ThrottledReads {
  private throttled = 0;
  // Each attempt's error is counted once, whether the middleware or the caller saw it first.
  private readonly seen = new WeakSet<object>();

  /** @param onThrottled called once per throttled attempt. @default nothing */
  public constructor(private readonly onThrottled: () => void = () => undefined) {}

  /** Throttled attempts so far. */
  public get count(): number {
    return this.throttled;
  }

  /** `command`, counting each of its attempts that is throttled. */
  public watch(command: GetRecordsCommand): GetRecordsCommand {
    command.middlewareStack.add(
      (next) => async (args) => {
        try {
          return await next(args);
        } catch (error) {
          this.note(error);
          throw error;
        }
      },
      // finalizeRequest at low priority runs after the retry middleware: once per attempt.
      { step: 'finalizeRequest', priority: 'low', name: 'tenangThrottledReads' },
    );
    return command;
  }

  /**
   * True when `error` is a throttled read; counts it unless an attempt already did (a client
   * whose middleware does not run, e.g. a mock, reports it here only).
   */
  public note(error: unknown): boolean {
    if (!isStreamReadThrottle(error)) return false;
    if (!this.seen.has(error as object)) {
      this.seen.add(error as object);
      this.throttled += 1;
      this.onThrottled();
    }
    return true;
  }
}
