/**
 * The cache-admin function (C6): how an operator reaches the cache with AWS credentials alone.
 * The cache lives in isolated subnets (no NAT, no route in) behind a security group that admits
 * only the cache clients' group, so no operator machine can connect to it. This function runs in
 * those subnets with that group, and the `tenang cache` commands invoke it (lambda:InvokeFunction)
 * to run their operations there (lambdas/cache-admin, lib/core/cache-admin.ts).
 *
 * Its grants are what the operations use: elasticache:Connect as the app user (IAM auth), and
 * GetItem on the tables of the declared cached entities (stage.cache.entities) and no other: an
 * entity invalidation fences at the entity's current version; a flush warms the hot keys from
 * them. A version bump writes nothing (it is a code change), so it needs none.
 *
 * No reserved concurrency: reserving any fails the deploy in an account whose concurrency quota
 * leaves fewer than 100 unreserved executions (PutFunctionConcurrency: "as long as you leave at
 * least 100 simultaneous executions unreserved"; new accounts may start with 10), and two
 * operations at once are safe (every write is version-checked, an eviction of what is gone does
 * nothing), so serialising them would only make a second operator wait.
 */
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import { Construct } from 'constructs';
import { tableVariable } from '../config/derive';
import { CACHE_ADMIN_SERVICE } from '../config/metrics';
import type { Cache } from './cache';
import { grantItems } from './grants';
import { TenangFunction } from './tenang-function';

/**
 * The function's timeout, seconds: a prefix eviction or a flush SCANs the stage's keyspace in
 * batches (500 keys a round trip by default, each a millisecond or two inside the VPC), so a
 * million keys take well under a minute; five minutes leaves room for a larger cache.
 */
export const CACHE_ADMIN_TIMEOUT_SECONDS = 300;

/** Props of CacheAdmin. */
export interface CacheAdminProps {
  readonly stageName: string;
  /** The cache: its variables, VPC placement and connect grant. */
  readonly cache: Cache;
  /** The handler's entry file (lambdas/cache-admin/index.ts). */
  readonly entry: string;
  /**
   * The cached entities' tables (lib/config/load.ts cachedEntityTables), by declared name: each
   * is given to the function as `<NAME>_TABLE` and granted GetItem.
   * @default - none: entity invalidations are refused, a flush warms no hot key
   */
  readonly entityTables?: ReadonlyMap<string, dynamodb.ITable>;
}

/** The cache-admin function, in the cache's VPC. */
export class CacheAdmin extends Construct {
  /** The function (`<stack>-cache-admin`). */
  public readonly function: TenangFunction;

  public constructor(scope: Construct, id: string, props: CacheAdminProps) {
    super(scope, id);
    this.function = new TenangFunction(this, 'Function', {
      serviceName: CACHE_ADMIN_SERVICE,
      entry: props.entry,
      timeoutSeconds: CACHE_ADMIN_TIMEOUT_SECONDS,
      memoryMb: 256,
      environment: {
        TENANG_STAGE: props.stageName,
        ...props.cache.connectionEnvironment,
        ...Object.fromEntries(
          [...(props.entityTables ?? [])].map(([name, table]) => [tableVariable(name), table.tableName]),
        ),
      },
      vpc: props.cache.functionPlacement,
      noAsyncDlqReason:
        'Invoked synchronously (RequestResponse) by the tenang CLI, which shows the operator every failure; nothing invokes it asynchronously.',
    });
    const fn = this.function.function;
    props.cache.grantConnect(fn);
    for (const table of props.entityTables?.values() ?? []) grantItems(table, fn, ['GetItem']);
  }
}
