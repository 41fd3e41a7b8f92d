/**
 * What the cache commands tell the operator, shared by the command (its help) and the work (its
 * errors, warnings and progress): how to reach the cache, what a flush costs, how far a scan is.
 * No Redis, no AWS: the help loads this without the connection code.
 */
import type { PrefixEviction } from '../../adapters/redis/redis-cache';

/** Progress of a long scan is printed at most this often, milliseconds. */
const PROGRESS_INTERVAL_MS = 1_000;

/** How to give the CLI a cache connection (help text and the missing-variables error). */
export const CONNECTION_HELP = `The command talks to the stage's Redis with the same variables as the functions, so it must run
where it can reach the cache:
  - locally: REDIS_URL (the local platform's Redis, e.g. redis://127.0.0.1:6379);
  - on AWS the cache is in a VPC: run it inside that VPC (e.g. an SSM session on an instance that
    the cache's security group admits) with CACHE_HOST, CACHE_PORT, CACHE_TLS=true, CACHE_AUTH=iam,
    CACHE_NAME, CACHE_USER and AWS_REGION set as on the functions. The IAM token is signed with
    the CLI's AWS credentials, which need elasticache:Connect on the cache and its user.`;

/** The flush warning (printed before a flush, and as the refusal without --yes-i-know). */
export function flushWarning(stage: string): string {
  return (
    `a full flush of stage ${stage} sends every read to DynamoDB at once: each key misses until ` +
    'it is loaded again (origin load, throttling risk on the orders table)'
  );
}

/** Prints a scan's running totals on `err`, at most once per `everyMs`. */
export function progressPrinter(
  err: (text: string) => void,
  now: () => Date,
  what: string,
  everyMs: number = PROGRESS_INTERVAL_MS,
): (progress: PrefixEviction) => void {
  let last = now().getTime();
  return (progress) => {
    const at = now().getTime();
    if (at - last < everyMs) return;
    last = at;
    err(`${what}: scanned ${progress.scanned} keys, evicted ${progress.evicted} values so far`);
  };
}
