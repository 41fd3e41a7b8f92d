/**
 * What the cache commands tell the operator, shared by the command (its help) and the work (its
 * errors, warnings and progress): how to reach the cache, what a flush costs, how far a scan is.
 * No Redis, no AWS: the help loads this without the connection code.
 */
import type { PrefixEviction } from '../../core/ports';
import { cliPlace, type CliPlace } from '../cli-place';

/** Progress of a long scan is printed at most this often, milliseconds. */
const PROGRESS_INTERVAL_MS = 1_000;

/**
 * How the cache commands reach the cache (help text and errors). The default path is the one
 * that works on AWS with nothing but AWS credentials; --direct is for where the cache is
 * reachable (the local platform's Redis, or a host of your own inside the cache's VPC).
 */
export function connectionHelp(place: CliPlace = cliPlace()): string {
  return `How the command reaches the cache:
  - by default it invokes the stage's cache-admin function (tenang-<stage>-cache-admin, Lambda
    Invoke, RequestResponse), which runs in the cache's VPC with the cache client security group
    and does the work there; the CLI needs only AWS credentials allowed lambda:InvokeFunction on
    that function (on the local platform: AWS_ENDPOINT_URL_LAMBDA, as \`${place.localUp}\` prints).
    The function's log group (/aws/lambda/tenang-<stage>-cache-admin) has its progress.
  - --direct connects from where the CLI runs, with the functions' variables: REDIS_URL (e.g.
    the local platform's Redis), or CACHE_HOST, CACHE_PORT, CACHE_TLS=true, CACHE_AUTH=iam,
    CACHE_NAME, CACHE_USER and AWS_REGION (IAM token signed with the CLI's credentials, which
    then need elasticache:Connect on the cache and its user). On AWS the cache is in isolated
    subnets, reachable only from its VPC through the cache client security group: the stack
    puts nothing there for operators but the cache-admin function.`;
}

/** What --direct needs (its missing-variables and connection errors). */
export const DIRECT_HELP = `--direct needs REDIS_URL, or CACHE_HOST, CACHE_PORT, CACHE_TLS, CACHE_AUTH=iam, CACHE_NAME,
CACHE_USER and AWS_REGION as the functions have them, and a network path to the cache (on AWS:
inside its VPC, in the cache client security group). Without --direct the command invokes the
stage's cache-admin function, which has that path.`;

/** The flush warning (printed before a flush, and as the refusal without --yes-i-know). */
export function flushWarning(stage: string): string {
  return (
    `a full flush of stage ${stage} sends every read to DynamoDB at once: each key misses until ` +
    "it is loaded again (origin load, throttling risk on the cached entities' table)"
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
