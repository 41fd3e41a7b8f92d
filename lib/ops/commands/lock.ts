/**
 * `tenang lock list|release` (L4): the stage's lease locks. Listing shows every held lease, live
 * or orphaned (expired without a release); releasing clears one lease after checking who holds
 * it. The fence counter is never touched: the next holder always gets a higher fence, so the
 * protected resource still refuses the old owner's writes once the new one has written.
 */
import type { Command } from 'commander';
import type { PipelineConfig, ResolvedTable } from '../../config';
import { TABLE_KEYS } from '../../config/tables';
import * as z from '../../config/zod';
import { isOrphan, type LockHolder, type LockRecord, type LockStore } from '../../core/lease-lock';
import {
  CommandFailedError,
  NO_PROMPT,
  UsageError,
  type CliContext,
  type Prompt,
  type RegisterCommand,
} from '../cli-context';
import { DurationSchema, formatAge } from '../duration';
import { nonEmpty, parseOptions } from '../options';
import { renderTable } from '../table';

/** Options of `lock list`. */
export const LockListOptionsSchema = z.object({
  olderThan: z.optional(DurationSchema),
  orphans: z.optional(z.boolean()),
  table: z.optional(nonEmpty('--table')),
  json: z.optional(z.boolean()),
});

/** Options of `lock release`, with the resource argument as `resource`. */
export const LockReleaseOptionsSchema = z.object({
  resource: nonEmpty('<resource>'),
  table: z.optional(nonEmpty('--table')),
  owner: nonEmpty('--owner (the owner token `tenang lock list` shows)'),
  force: z.optional(z.boolean()),
  dryRun: z.optional(z.boolean()),
  yes: z.optional(z.boolean()),
  json: z.optional(z.boolean()),
});

/** Options of `lock release` once parsed. */
export type LockReleaseOptions = z.infer<typeof LockReleaseOptionsSchema>;

/** A held lease as the CLI shows it. */
export interface HeldLock {
  readonly resource: string;
  readonly ownerToken: string;
  readonly fence: number;
  readonly acquiredAt: Date;
  readonly expiresAt: Date;
  /** orphan: the lease expired without a release (its owner crashed or hung). */
  readonly state: 'live' | 'orphan';
}

/** Which held locks `lock list` shows. */
export interface LockFilter {
  /** Only locks acquired more than this many ms ago. @default - any age */
  readonly olderThanMs?: number;
  /** Only orphans. @default false */
  readonly orphansOnly?: boolean;
}

/** The held locks among `records` that pass `filter`, oldest first. */
export function heldLocks(records: readonly LockRecord[], now: Date, filter: LockFilter = {}): HeldLock[] {
  const locks: HeldLock[] = [];
  for (const record of records) {
    const holder = record.holder;
    if (holder === undefined) continue;
    locks.push({
      resource: record.resource,
      ownerToken: holder.ownerToken,
      fence: holder.fence,
      acquiredAt: new Date(holder.acquiredAtMs),
      expiresAt: new Date(holder.expiresAtMs),
      state: isOrphan(record, now) ? 'orphan' : 'live',
    });
  }
  return locks
    .filter(
      (l) =>
        (filter.olderThanMs === undefined || now.getTime() - l.acquiredAt.getTime() > filter.olderThanMs) &&
        (filter.orphansOnly !== true || l.state === 'orphan'),
    )
    .sort((a, b) => a.acquiredAt.getTime() - b.acquiredAt.getTime() || a.resource.localeCompare(b.resource));
}

/** `in 3m12s` for a live lease, `expired 42s ago` for an orphan. */
export function describeExpiry(expiresAtMs: number, now: Date): string {
  const left = expiresAtMs - now.getTime();
  return left >= 0 ? `in ${formatAge(left)}` : `expired ${formatAge(-left)} ago`;
}

/** The human table of held locks. */
export function renderLocks(locks: readonly HeldLock[], now: Date): string {
  return renderTable(
    ['resource', 'owner token', 'fence', 'acquired', 'expires', 'state'],
    locks.map((l) => ({
      resource: l.resource,
      'owner token': l.ownerToken,
      fence: String(l.fence),
      acquired: `${formatAge(now.getTime() - l.acquiredAt.getTime())} ago`,
      expires: describeExpiry(l.expiresAt.getTime(), now),
      state: l.state,
    })),
  );
}

function describeHolder(holder: LockHolder, now: Date): string {
  return `fence ${holder.fence}, acquired ${formatAge(now.getTime() - holder.acquiredAtMs)} ago, expires ${describeExpiry(holder.expiresAtMs, now)}`;
}

/**
 * Why releasing `resource` as `ownerToken` must not go ahead, given the record as read (or the
 * holder a refused write returned); undefined when it may. With `force`, only an expired lease
 * of that owner may be released: a live one has an owner that may still be working.
 */
export function releaseRefusal(
  resource: string,
  ownerToken: string,
  record: Pick<LockRecord, 'fence' | 'holder'> | undefined,
  force: boolean,
  now: Date,
): string | undefined {
  if (record === undefined)
    return `no lock record for ${resource} in the lease-lock table: nothing to release`;
  const holder = record.holder;
  if (holder === undefined)
    return `${resource} is not held (already released; fence ${record.fence} is kept): nothing to release`;
  if (holder.ownerToken !== ownerToken) {
    return (
      `${resource} is held by ${holder.ownerToken} (${describeHolder(holder, now)}), not by ${ownerToken}: ` +
      `refusing to release another owner's lease (see tenang lock list)`
    );
  }
  if (force && holder.expiresAtMs >= now.getTime()) {
    return (
      `the lease of ${ownerToken} on ${resource} (fence ${holder.fence}) is live: it expires at ` +
      `${new Date(holder.expiresAtMs).toISOString()} (in ${formatAge(holder.expiresAtMs - now.getTime())}) ` +
      `and will expire by itself. --force releases only expired leases; if you have stopped its owner, ` +
      `release it without --force`
    );
  }
  return undefined;
}

/** A destructive run needs someone to confirm it, or --yes (a dry run writes nothing). */
export function assertConfirmable(opts: Pick<LockReleaseOptions, 'dryRun' | 'yes'>, prompt: Prompt): void {
  if (opts.dryRun !== true && opts.yes !== true && !prompt.interactive) {
    throw new UsageError(
      'lock release changes the lease-lock table: add --yes to run it without a terminal to confirm on (or --dry-run to see what it would do)',
    );
  }
}

/** What `lock release` did. */
export interface LockReleaseOutcome {
  readonly resource: string;
  readonly ownerToken: string;
  readonly outcome: 'released' | 'would-release' | 'declined';
  /** The newest fence of the resource: kept by the release. */
  readonly fence: number;
  /** The fence the next holder gets once the lease is released. */
  readonly nextFence: number;
  /** The lease's state when it was read. */
  readonly state: 'live' | 'orphan';
  readonly expiresAt: string;
  readonly force: boolean;
}

/**
 * Releases `resource`'s lease of `ownerToken`: reads the record, refuses what releaseRefusal
 * refuses, asks (unless --yes or --dry-run), then makes the conditional write — release by owner,
 * or with --force release only if expired — whose own verdict is final (the record may change
 * between the read and the write).
 * @throws CommandFailedError when the release is refused.
 */
export async function releaseLock(
  store: LockStore,
  opts: LockReleaseOptions,
  deps: { readonly now: () => Date; readonly prompt: Prompt },
): Promise<LockReleaseOutcome> {
  const force = opts.force === true;
  const readAt = deps.now();
  const record = await store.get(opts.resource);
  const refused = releaseRefusal(opts.resource, opts.owner, record, force, readAt);
  if (refused !== undefined || record?.holder === undefined)
    throw new CommandFailedError(refused ?? `${opts.resource} is not held`);
  const holder = record.holder;
  const state = isOrphan(record, readAt) ? 'orphan' : 'live';
  const base = {
    resource: opts.resource,
    ownerToken: opts.owner,
    fence: record.fence,
    nextFence: record.fence + 1,
    state,
    expiresAt: new Date(holder.expiresAtMs).toISOString(),
    force,
  } as const;
  if (opts.dryRun === true) return { ...base, outcome: 'would-release' };
  if (opts.yes !== true) {
    const warning = state === 'live' ? ' Its lease is live: release it only if its owner has stopped.' : '';
    const ok = await deps.prompt.confirm(
      `Release the lock on ${opts.resource} held by ${opts.owner} (${describeHolder(holder, readAt)})?${warning} [y/N] `,
    );
    if (!ok) return { ...base, outcome: 'declined' };
  }
  const writeAt = deps.now();
  const result = force
    ? await store.releaseExpired({
        resource: opts.resource,
        ownerToken: opts.owner,
        nowMs: writeAt.getTime(),
      })
    : await store.release({ resource: opts.resource, ownerToken: opts.owner });
  if (!result.released) {
    const now = deps.now();
    throw new CommandFailedError(
      `${opts.resource} changed while releasing; nothing was released: ${
        releaseRefusal(
          opts.resource,
          opts.owner,
          { fence: record.fence, holder: result.holder },
          force,
          now,
        ) ?? 'run tenang lock list to see it now'
      }`,
    );
  }
  return { ...base, outcome: 'released' };
}

/** The human line of a release. */
export function describeRelease(o: LockReleaseOutcome): string {
  const lease = `${o.resource} (owner ${o.ownerToken}, ${o.state})`;
  switch (o.outcome) {
    case 'declined':
      return 'nothing changed';
    case 'would-release':
      return `[dry run: nothing was written] would release ${lease}; fence ${o.fence} would be kept, so the next holder would get fence ${o.nextFence}`;
    case 'released':
      return `released ${lease}; fence ${o.fence} is kept, so the next holder gets fence ${o.nextFence}`;
  }
}

/**
 * The declared lease-lock tables: those with the layout DynamoDbLockStore reads (TABLE_KEYS.locks:
 * partition key `resource`, TTL `expiresAtEpoch`), whatever the app named them.
 */
export function lockTables(config: PipelineConfig): ResolvedTable[] {
  const { partitionKey, ttl } = TABLE_KEYS.locks;
  return config.tables.filter(
    (t) => t.partitionKey === partitionKey && t.ttl === ttl && t.sortKey === undefined,
  );
}

/**
 * The declared lease-lock table `--table` names, else the only one.
 * @throws CommandFailedError when there is none, or several and no --table, or --table names another
 */
export function lockTable(config: PipelineConfig, name: string | undefined): ResolvedTable {
  const tables = lockTables(config);
  const names = tables.map((t) => t.name).join(', ');
  const layout = `partition key ${TABLE_KEYS.locks.partitionKey}, TTL ${TABLE_KEYS.locks.ttl} (TABLE_KEYS.locks)`;
  if (name !== undefined) {
    const named = tables.find((t) => t.name === name);
    if (named === undefined) {
      throw new CommandFailedError(
        `--table ${name} is not a lease-lock table of the pipeline (${layout}); those it declares: ${names || 'none'}`,
      );
    }
    return named;
  }
  const [only, ...more] = tables;
  if (only === undefined) {
    throw new CommandFailedError(`the pipeline declares no lease-lock table (one with ${layout})`);
  }
  if (more.length > 0) {
    throw new CommandFailedError(
      `the pipeline declares several lease-lock tables (${names}): name one with --table`,
    );
  }
  return only;
}

/** The stage's lease-lock table; its DynamoDB store is loaded when a command runs. */
async function lockStore(
  ctx: CliContext,
  name: string | undefined,
): Promise<{ store: LockStore; table: string }> {
  const declared = lockTable(ctx.config, name);
  const [{ DynamoDbLockStore }, { discoverResources, tableName }] = await Promise.all([
    import('../../adapters/aws/dynamodb-lock-store'),
    import('../pipeline-resources'),
  ]);
  const resources = await discoverResources(ctx);
  const table = tableName(ctx, resources, declared.name);
  return { store: new DynamoDbLockStore(ctx.clients.dynamodb, table), table };
}

/** Registers `lock list` and `lock release`. */
export const register: RegisterCommand = (program: Command, context: () => CliContext): void => {
  const lock = program
    .command('lock')
    .description('List lease locks (live and orphaned) and release an orphan after checking its owner');

  lock
    .command('list')
    .description('List every held lease lock: owner, fence, age, expiry, live or orphan')
    .option('--older-than <duration>', 'only locks acquired more than this long ago: 90s, 5m, 2h, 1d')
    .option('--orphans', 'only orphans: leases that expired without a release')
    .option(
      '--table <name>',
      'the lease-lock table, when the pipeline declares several (default: the only one)',
    )
    .option('--json', 'print the locks as JSON')
    .addHelpText(
      'after',
      `
An orphan's owner stopped (crashed, timed out) without releasing. It blocks nobody — an expired
lease is taken over by the next acquirer — but it shows a worker that died while holding it.

Examples:
  $ tenang lock list
  $ tenang lock list --orphans --older-than 5m
  $ tenang --stage prod lock list --json`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const opts = parseOptions(LockListOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
      const { store, table } = await lockStore(ctx, opts.table);
      const records = await store.listHeld();
      const now = ctx.now();
      const all = heldLocks(records, now);
      const shown = heldLocks(records, now, { olderThanMs: opts.olderThan, orphansOnly: opts.orphans });
      if (opts.json === true) {
        ctx.out(
          JSON.stringify(
            {
              stage: ctx.stage,
              table,
              at: now.toISOString(),
              held: all.length,
              locks: shown.map((l) => ({
                ...l,
                acquiredAt: l.acquiredAt.toISOString(),
                expiresAt: l.expiresAt.toISOString(),
              })),
            },
            null,
            2,
          ),
        );
        return;
      }
      const orphans = all.filter((l) => l.state === 'orphan').length;
      ctx.out(
        `${table}: ${all.length} held lock(s), ${orphans} orphan(s)${shown.length === all.length ? '' : `; ${shown.length} match`}`,
      );
      if (shown.length > 0) ctx.out(renderLocks(shown, now));
      if (shown.some((l) => l.state === 'orphan'))
        ctx.out('\nrelease an orphan with: tenang lock release <resource> --owner <owner token> --force');
    });

  lock
    .command('release')
    .description("Release a lease lock: by its owner's token, or with --force only once it expired")
    .argument('<resource>', 'the locked resource, e.g. invoice:inv-42')
    .option('--owner <token>', 'the owner token the lease must have (from tenang lock list)')
    .option('--force', 'release only if the lease expired (an orphan); a live lease is refused')
    .option(
      '--table <name>',
      'the lease-lock table, when the pipeline declares several (default: the only one)',
    )
    .option('--dry-run', 'check and show what would be released without writing')
    .option('--yes', 'do not ask for confirmation (required when stdin is not a terminal)')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
Without --force the lease is released if --owner still holds it, live or not: use it for an owner
you have stopped. With --force it is released only if it also expired, so a worker that still
holds a live lease is never cut off; a live lease expires by itself. Either way the fence is kept:
the next holder gets a higher one, and the protected resource refuses the old owner's writes.
Exit code 1 when the release is refused.

Examples:
  $ tenang lock release invoice:inv-42 --owner 3f6c2a1e-9b7d-4c1a-8e2f-5d4b3a2c1e0f --force --dry-run
  $ tenang lock release invoice:inv-42 --owner 3f6c2a1e-9b7d-4c1a-8e2f-5d4b3a2c1e0f --force
  $ tenang lock release invoice:inv-42 --owner 3f6c2a1e-9b7d-4c1a-8e2f-5d4b3a2c1e0f --yes`,
    )
    .action(async (resource: string, _opts: unknown, cmd: Command) => {
      const opts = parseOptions(LockReleaseOptionsSchema, { ...cmd.optsWithGlobals(), resource });
      const ctx = context();
      const prompt = ctx.prompt ?? NO_PROMPT;
      assertConfirmable(opts, prompt);
      const { store } = await lockStore(ctx, opts.table);
      const outcome = await releaseLock(store, opts, { now: ctx.now, prompt });
      ctx.out(opts.json === true ? JSON.stringify(outcome, null, 2) : describeRelease(outcome));
    });
};
