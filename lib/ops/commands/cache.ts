/**
 * `tenang cache invalidate|flush` (C6): selective invalidation of a stage's cache by key, by
 * entity, by prefix, and by version bump; a full flush that is guarded (it warns about the origin
 * load, needs --yes-i-know and warms the hot keys first).
 *
 * No invalidation here is a plain DEL (C3): how each selector keeps a racing reader from writing
 * a stale value back is told in lib/ops/cache/invalidate.ts (--key, --entity, --prefix),
 * flush.ts and version-bump.ts. This module is the command: its options, help and output. The
 * key tools (cache/keys.ts), the version-bump plan and the operator messages are pure; the work
 * on Redis and DynamoDB (cache/connection.ts, source.ts, invalidate.ts, flush.ts) is loaded when
 * a command runs.
 */
import type { Command } from 'commander';
import * as z from '../../config/zod';
import { cacheKeyspace } from '../../core/cache-keys';
import { UsageError, type CliContext, type RegisterCommand } from '../cli-context';
import { CEILING_VERSION, EntityRefSchema, entityOfStageKey, type EntityRef } from '../cache/keys';
import { CONNECTION_HELP, flushWarning } from '../cache/messages';
import { bumpVersionPlan, SCHEMA_VERSION_FILE } from '../cache/version-bump';
import type { EntityInvalidation, PrefixInvalidation } from '../cache/invalidate';
import type { FlushResult } from '../cache/flush';
import { CountSchema, nonEmpty, parseOptions } from '../options';

// ---------------------------------------------------------------------------------------------
// Options

/** What `cache invalidate` acts on. */
export type InvalidateSelector =
  | { readonly kind: 'key'; readonly key: string }
  | { readonly kind: 'entity'; readonly ref: EntityRef }
  | { readonly kind: 'prefix'; readonly prefix: string }
  | { readonly kind: 'bump-version' };

const SELECTOR_FLAGS = ['--key', '--entity', '--prefix', '--bump-version'] as const;

/** Options of `cache invalidate`: exactly one selector. */
export const CacheInvalidateOptionsSchema = z.pipe(
  z
    .object({
      key: z.optional(nonEmpty('--key')),
      entity: z.optional(EntityRefSchema),
      prefix: z.optional(nonEmpty('--prefix')),
      bumpVersion: z.optional(z.boolean()),
      batch: z._default(CountSchema, 500),
      dryRun: z.optional(z.boolean()),
      json: z.optional(z.boolean()),
    })
    .check(
      z.superRefine((opts, ctx) => {
        const given = [opts.key, opts.entity, opts.prefix, opts.bumpVersion === true ? true : undefined]
          .map((value, i) => (value === undefined ? undefined : SELECTOR_FLAGS[i]))
          .filter((flag) => flag !== undefined);
        if (given.length !== 1) {
          ctx.addIssue({
            code: 'custom',
            input: opts,
            message: `choose exactly one of ${SELECTOR_FLAGS.join(', ')} (${
              given.length === 0 ? 'none given' : `got ${given.join(' and ')}`
            })`,
          });
        }
      }),
    ),
  z.transform((opts) => {
    const selector: InvalidateSelector =
      opts.key !== undefined
        ? { kind: 'key', key: opts.key }
        : opts.entity !== undefined
          ? { kind: 'entity', ref: opts.entity }
          : opts.prefix !== undefined
            ? { kind: 'prefix', prefix: opts.prefix }
            : { kind: 'bump-version' };
    return { selector, batch: opts.batch, dryRun: opts.dryRun === true, json: opts.json === true };
  }),
);
export type CacheInvalidateOptions = z.infer<typeof CacheInvalidateOptionsSchema>;

/** Options of `cache flush`. */
export const CacheFlushOptionsSchema = z.object({
  yesIKnow: z.optional(z.boolean()),
  batch: z._default(CountSchema, 500),
  dryRun: z.optional(z.boolean()),
  json: z.optional(z.boolean()),
});

// ---------------------------------------------------------------------------------------------
// Output

function printEntityInvalidation(ctx: CliContext, r: EntityInvalidation, json: boolean): void {
  if (json) {
    ctx.out(JSON.stringify({ action: 'invalidate', ...r }, null, 2));
    return;
  }
  const seen =
    typeof r.sourceVersion === 'number'
      ? `is at version ${r.sourceVersion}`
      : r.sourceVersion === 'absent'
        ? 'does not exist'
        : 'cannot be read';
  ctx.out(`${r.entity} ${seen} in ${r.table}`);
  for (const k of r.keys) {
    const fence = k.fenceVersion === CEILING_VERSION ? 'above every version' : `at version ${k.fenceVersion}`;
    const verb = {
      fenced: 'fenced',
      superseded: 'left (it already holds something newer)',
      'would-fence': '[dry run] would fence',
    }[k.result];
    ctx.out(`${verb} ${k.key} ${fence} (was: ${k.before})`);
  }
}

function printPrefixInvalidation(ctx: CliContext, r: PrefixInvalidation, json: boolean): void {
  if (json) {
    ctx.out(JSON.stringify({ action: 'invalidate', ...r }, null, 2));
    return;
  }
  ctx.out(
    `${r.dryRun ? '[dry run] would evict' : 'evicted'} ${r.evicted} cached value(s) under ${r.prefix} ` +
      `(${r.scanned} key(s) scanned; tombstones and locks kept)`,
  );
}

function printBumpVersion(ctx: CliContext, opts: CacheInvalidateOptions): void {
  const plan = bumpVersionPlan(ctx.stage, ctx.config.stage.cache);
  if (opts.json) {
    ctx.out(JSON.stringify({ action: 'bump-version', written: false, ...plan }, null, 2));
    return;
  }
  ctx.out(
    [
      `${plan.constant} is a code constant ('${plan.currentVersion}' in ${plan.file}): the reader and the`,
      'invalidator build every key from it, so a version bump is a deploy, not a Redis write. Nothing was changed.',
      `To move stage ${ctx.stage} from ${plan.currentPrefix}… to ${plan.nextPrefix}…, step by step:`,
      ...plan.steps.map((step, i) => `  ${i + 1}. ${step}`),
    ].join('\n'),
  );
}

function printFlush(ctx: CliContext, r: FlushResult, json: boolean): void {
  if (json) {
    ctx.out(JSON.stringify({ action: 'flush', ...r }, null, 2));
    return;
  }
  const kept = r.hotKeys.filter((h) => h.version !== undefined).length;
  ctx.out(
    `${r.dryRun ? '[dry run] would warm' : 'warmed'} ${kept} of ${r.hotKeys.length} hot key(s)` +
      (r.table === undefined ? '' : ` from ${r.table}`),
  );
  for (const h of r.hotKeys) {
    ctx.out(`  ${h.entity} ${h.key}: ${h.result}${h.version === undefined ? '' : ` v${h.version}`}`);
  }
  ctx.out(
    `${r.dryRun ? '[dry run] would evict' : 'evicted'} ${r.evicted} cached value(s) under ${r.prefix} ` +
      `(${r.scanned} key(s) scanned; tombstones, locks and warmed hot keys kept)`,
  );
}

/**
 * `cache flush`'s guard: without --yes-i-know (or --dry-run) it is refused, saying what to do
 * instead; with it, the origin-load warning goes to stderr first.
 */
function guardFlush(ctx: CliContext, opts: z.infer<typeof CacheFlushOptionsSchema>): void {
  if (opts.yesIKnow !== true && opts.dryRun !== true) {
    throw new UsageError(
      `${flushWarning(ctx.stage)}.\nPrefer invalidating what is stale: tenang cache invalidate --entity order:<id>, ` +
        `or --prefix ${cacheKeyspace(ctx.stage).prefix}<…>. To flush anyway, pass --yes-i-know ` +
        '(the hot keys of the config are warmed first; try --dry-run to see the counts).',
    );
  }
  ctx.err(`warning: ${flushWarning(ctx.stage)}`);
}

// ---------------------------------------------------------------------------------------------
// Registration

/** Registers `cache invalidate` and `cache flush`. */
export const register: RegisterCommand = (program: Command, context: () => CliContext): void => {
  const cache = program
    .command('cache')
    .description("Invalidate the stage's order cache selectively, or flush it (guarded)")
    .addHelpText('after', `\n${CONNECTION_HELP}`);

  cache
    .command('invalidate')
    .description('Invalidate one key, one entity, a prefix, or explain a schema version bump')
    .option('--key <key>', 'one cache key, e.g. tenang:prod:v1:order:{123}')
    .option('--entity <entity:id>', 'every key of one entity, e.g. order:123')
    .option('--prefix <prefix>', "every cached value under a prefix inside the stage's keyspace")
    .option('--bump-version', 'print how to move the stage to a new key namespace (writes nothing)')
    .option('--batch <n>', 'keys per SCAN batch (--prefix)', '500')
    .option('--dry-run', 'show what would be invalidated without writing')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
Choose exactly one of --key, --entity, --prefix, --bump-version.

--key and --entity read the entity's current version from the orders table (strongly consistent)
and leave a tombstone at that version, as the stream invalidator does: a reader that loaded an
older version cannot write it back, and the next read loads the current one. An entity that no
longer exists is fenced above every version until the tombstone expires (ttlSeconds).
--prefix evicts cached values with SCAN in batches (never KEYS), keeping tombstones and locks;
the prefix must lie inside the stage's keyspace (tenang:<stage>:), and one covering the whole
keyspace is refused (that is \`cache flush\`). Progress goes to stderr.
--bump-version writes nothing: the schema version is a code constant (CACHE_SCHEMA_VERSION in
${SCHEMA_VERSION_FILE}); it prints what to change and deploy, and what happens to the old keys.

${CONNECTION_HELP}

Examples:
  $ tenang --stage prod cache invalidate --entity order:123
  $ tenang --stage prod cache invalidate --key 'tenang:prod:v1:order:{123}' --dry-run
  $ tenang --stage prod cache invalidate --prefix 'tenang:prod:v1:order:{2026-01' --json
  $ tenang --stage prod cache invalidate --prefix tenang:prod:v0:
  $ tenang --stage prod cache invalidate --bump-version`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const opts = parseOptions(CacheInvalidateOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
      const { selector } = opts;
      if (selector.kind === 'bump-version') return printBumpVersion(ctx, opts);
      // Redis and DynamoDB: loaded when an invalidation runs.
      const { invalidateEntity, invalidatePrefix } = await import('../cache/invalidate');
      switch (selector.kind) {
        case 'key': {
          const ref = entityOfStageKey(ctx.stage, selector.key);
          return printEntityInvalidation(ctx, await invalidateEntity(ctx, ref, opts), opts.json);
        }
        case 'entity':
          return printEntityInvalidation(ctx, await invalidateEntity(ctx, selector.ref, opts), opts.json);
        case 'prefix':
          return printPrefixInvalidation(ctx, await invalidatePrefix(ctx, selector.prefix, opts), opts.json);
      }
    });

  cache
    .command('flush')
    .description("Evict every cached value of the stage, after warming the config's hot keys")
    .option('--yes-i-know', 'confirm the origin load of a full flush')
    .option('--batch <n>', 'keys per SCAN batch', '500')
    .option('--dry-run', 'count what would be warmed and evicted without writing')
    .option('--json', 'print the result as JSON')
    .addHelpText(
      'after',
      `
A full flush sends every read to DynamoDB at once. Prefer \`cache invalidate --entity\` or
\`--prefix\`. With --yes-i-know the hot keys of the config (stage.cache.hotKeys: order:<id> or
full keys) are first loaded from the orders table and written with the version-checked write,
then every cached value under tenang:<stage>: (all schema versions) is evicted with SCAN, except
the warmed hot keys. Tombstones and locks stay; FLUSHALL/FLUSHDB are never used, since one Redis
may serve several stages. --dry-run needs no --yes-i-know and writes nothing.

${CONNECTION_HELP}

Examples:
  $ tenang --stage prod cache flush --dry-run
  $ tenang --stage prod cache flush --yes-i-know
  $ tenang --stage prod cache flush --yes-i-know --json`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const opts = parseOptions(CacheFlushOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
      guardFlush(ctx, opts);
      const { flush } = await import('../cache/flush');
      const result = await flush(ctx, { batch: opts.batch, dryRun: opts.dryRun === true });
      printFlush(ctx, result, opts.json === true);
    });
};
