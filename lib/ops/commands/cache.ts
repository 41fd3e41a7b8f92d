/**
 * `tenang cache invalidate|flush` (C6): selective invalidation of a stage's cache by key, by
 * entity, by prefix, and by version bump; a full flush that is guarded (it warns about the origin
 * load, needs --yes-i-know and warms the hot keys first).
 *
 * No invalidation here is a plain DEL (C3): how each selector keeps a racing reader from writing
 * a stale value back is told in lib/core/cache-admin.ts (--key, --entity, --prefix, flush) and
 * lib/ops/cache/version-bump.ts. This module is the command: its options, help, the path it takes
 * and its output. By default the work runs in the stage's cache-admin function, invoked with the
 * operator's AWS credentials (cache/invoke.ts): on AWS the cache is reachable only from its VPC.
 * `--direct` runs the same operations here instead, on a connection of the CLI's own
 * (cache/connection.ts, loaded only then). Either way one JSON line goes to the audit trail
 * (cache/audit.ts). --dry-run, the flush's --yes-i-know and its warning stay here.
 */
import type { Command } from 'commander';
import * as z from '../../config/zod';
import { cacheKeyspace } from '../../core/cache-keys';
import { CommandFailedError, UsageError, type CliContext, type RegisterCommand } from '../cli-context';
import path from 'node:path';
import {
  CEILING_VERSION,
  EntityRefSchema,
  formatEntityRef,
  parseEntityRef,
  prefixProblem,
  type EntityRef,
} from '../../core/cache-admin-keys';
import type {
  CacheAdminAnswer,
  CacheAdminOperation,
  CacheAdminRequestInput,
  EntityInvalidation,
  FlushResult,
  PrefixInvalidation,
} from '../../core/cache-admin';
import {
  accessKeyIdOf,
  answerSummary,
  appendCacheAudit,
  defaultCacheAuditLog,
  type CacheAuditRecord,
} from '../cache/audit';
import { cacheAdminFunctionName, runInvoked } from '../cache/invoke';
import { entityOfStageKey } from '../cache/keys';
import { connectionHelp, flushWarning } from '../cache/messages';
import { bumpVersionPlan, SCHEMA_VERSION_FILE } from '../cache/version-bump';
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

/** How a cache command runs and is recorded: shared by invalidate and flush. */
const PATH_OPTIONS = {
  /** Connect from here instead of invoking the cache-admin function. */
  direct: z.optional(z.boolean()),
  /** Why, for the audit trail and the function's log. */
  reason: z.optional(nonEmpty('--reason')),
  auditLog: z.optional(nonEmpty('--audit-log')),
};

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
      ...PATH_OPTIONS,
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
    return {
      selector,
      batch: opts.batch,
      dryRun: opts.dryRun === true,
      json: opts.json === true,
      direct: opts.direct === true,
      reason: opts.reason,
      auditLog: opts.auditLog,
    };
  }),
);
export type CacheInvalidateOptions = z.infer<typeof CacheInvalidateOptionsSchema>;

/** Options of `cache flush`. */
export const CacheFlushOptionsSchema = z.object({
  yesIKnow: z.optional(z.boolean()),
  batch: z._default(CountSchema, 500),
  dryRun: z.optional(z.boolean()),
  json: z.optional(z.boolean()),
  ...PATH_OPTIONS,
});

/** What every cache command run takes of its options. */
interface RunOptions {
  readonly direct?: boolean | undefined;
  readonly reason?: string | undefined;
  readonly auditLog?: string | undefined;
}

// ---------------------------------------------------------------------------------------------
// Running: by default through the cache-admin function, with --direct from here

/**
 * Runs `request` on the path the options choose, writes its audit line (also when it fails),
 * prints its warnings on stderr, and returns its answer; a refusal is a failure saying why.
 */
async function execute(
  ctx: CliContext,
  opts: RunOptions,
  request: CacheAdminOperation,
): Promise<CacheAdminAnswer & { readonly status: 'ok' }> {
  const accessKeyId = await accessKeyIdOf(ctx);
  const full = {
    ...request,
    requestedBy: {
      actor: ctx.actor,
      ...(accessKeyId === undefined ? {} : { accessKeyId }),
      ...(opts.reason === undefined ? {} : { reason: opts.reason }),
    },
  } as CacheAdminRequestInput;
  const file = path.resolve(opts.auditLog ?? defaultCacheAuditLog(ctx.now()));
  let target = cacheAdminFunctionName(ctx);
  const record = (
    outcome: CacheAuditRecord['outcome'],
    extra: Pick<CacheAuditRecord, 'message' | 'summary'>,
  ): void =>
    appendCacheAudit(file, {
      at: ctx.now().toISOString(),
      stage: ctx.stage,
      actor: ctx.actor,
      accessKeyId,
      reason: opts.reason,
      request,
      path: opts.direct === true ? 'direct' : 'invoke',
      target,
      outcome,
      ...extra,
    });
  let answer: CacheAdminAnswer;
  try {
    if (opts.direct === true) {
      // Redis and the stack lookup: loaded only for the direct path.
      const { cacheTarget, describeTarget, runDirect } = await import('../cache/connection');
      const settings = cacheTarget(ctx);
      target = describeTarget(settings);
      answer = await runDirect(ctx, settings, full);
    } else {
      if (request.operation !== 'invalidate-entity')
        ctx.err(`running in ${target} (its progress: log group /aws/lambda/${target})`);
      answer = await runInvoked(ctx, full);
    }
  } catch (error) {
    record('failed', { message: error instanceof Error ? error.message : String(error) });
    throw error;
  } finally {
    ctx.err(`audit log: ${file}`);
  }
  if (answer.status === 'refused') {
    record('refused', { message: answer.message });
    throw new CommandFailedError(answer.message);
  }
  record('ok', { summary: answerSummary(answer) });
  for (const warning of answer.warnings) ctx.err(warning);
  return answer;
}

/** `ref` when the declaration caches its entity; a usage error naming the declared ones otherwise. */
function declaredEntity(entities: Parameters<typeof parseEntityRef>[0], ref: EntityRef): EntityRef {
  const checked = parseEntityRef(entities, formatEntityRef(ref));
  if (typeof checked === 'string') throw new UsageError(`--entity: ${checked}`);
  return checked;
}

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
      (r.tables.length === 0 ? '' : ` from ${r.tables.join(', ')}`),
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
      `${flushWarning(ctx.stage)}.\nPrefer invalidating what is stale: tenang cache invalidate --entity ${
        ctx.config.stage.cache.entities.map((e) => e.name).join('|') || '<entity>'
      }:<id>, ` +
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
    .description("Invalidate the stage's cache selectively, or flush it (guarded)")
    .addHelpText('after', () => `\n${connectionHelp()}`);

  cache
    .command('invalidate')
    .description('Invalidate one key, one entity, a prefix, or explain a schema version bump')
    .option('--key <key>', 'one cache key, e.g. tenang:prod:v1:order:{123}')
    .option('--entity <entity:id>', 'every key of one entity of stage.cache.entities, e.g. order:123')
    .option('--prefix <prefix>', "every cached value under a prefix inside the stage's keyspace")
    .option('--bump-version', 'print how to move the stage to a new key namespace (writes nothing)')
    .option('--batch <n>', 'keys per SCAN batch (--prefix)', '500')
    .option('--dry-run', 'show what would be invalidated without writing')
    .option('--json', 'print the result as JSON')
    .option('--reason <text>', 'why (the audit trail and the cache-admin log)')
    .option('--direct', "connect to the cache from here instead of invoking the stage's cache-admin function")
    .option('--audit-log <file>', 'JSON-lines audit trail (default ./tenang-audit/cache-<timestamp>.jsonl)')
    .addHelpText(
      'after',
      () => `
Choose exactly one of --key, --entity, --prefix, --bump-version.

--key and --entity read the entity's current version from its table (strongly consistent)
and leave a tombstone at that version, as the stream invalidator does: a reader that loaded an
older version cannot write it back, and the next read loads the current one. An entity that no
longer exists is fenced above every version until the tombstone expires (ttlSeconds).
--prefix evicts cached values with SCAN in batches (never KEYS), keeping tombstones and locks;
the prefix must lie inside the stage's keyspace (tenang:<stage>:), and one covering the whole
keyspace is refused (that is \`cache flush\`). Progress: the function's log (stderr with --direct).
--bump-version writes nothing: the schema version is a code constant (CACHE_SCHEMA_VERSION in
${SCHEMA_VERSION_FILE}); it prints what to change and deploy, and what happens to the old keys.

${connectionHelp()}

Examples:
  $ tenang --stage prod cache invalidate --entity order:123
  $ tenang --stage prod cache invalidate --key 'tenang:prod:v1:order:{123}' --dry-run
  $ tenang --stage prod cache invalidate --prefix 'tenang:prod:v1:order:{2026-01' --json
  $ tenang --stage prod cache invalidate --prefix tenang:prod:v0:
  $ tenang --stage prod cache invalidate --bump-version
  $ tenang --stage dev cache invalidate --entity order:123 --direct   # REDIS_URL set`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const opts = parseOptions(CacheInvalidateOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
      const { selector } = opts;
      if (selector.kind === 'bump-version') return printBumpVersion(ctx, opts);
      if (selector.kind === 'prefix') {
        // Refused here, before any call: a usage error, on either path.
        const problem = prefixProblem(ctx.stage, selector.prefix);
        if (problem !== undefined) throw new UsageError(problem);
        const answer = await execute(ctx, opts, {
          operation: 'invalidate-prefix',
          prefix: selector.prefix,
          batch: opts.batch,
          dryRun: opts.dryRun,
        });
        if (answer.operation === 'invalidate-prefix') printPrefixInvalidation(ctx, answer.result, opts.json);
        return;
      }
      const { entities } = ctx.config.stage.cache;
      const ref: EntityRef =
        selector.kind === 'key'
          ? entityOfStageKey(ctx.stage, selector.key, entities)
          : declaredEntity(entities, selector.ref);
      const answer = await execute(ctx, opts, {
        operation: 'invalidate-entity',
        entity: formatEntityRef(ref),
        dryRun: opts.dryRun,
      });
      if (answer.operation === 'invalidate-entity') printEntityInvalidation(ctx, answer.result, opts.json);
    });

  cache
    .command('flush')
    .description("Evict every cached value of the stage, after warming the config's hot keys")
    .option('--yes-i-know', 'confirm the origin load of a full flush')
    .option('--batch <n>', 'keys per SCAN batch', '500')
    .option('--dry-run', 'count what would be warmed and evicted without writing')
    .option('--json', 'print the result as JSON')
    .option('--reason <text>', 'why (the audit trail and the cache-admin log)')
    .option('--direct', "connect to the cache from here instead of invoking the stage's cache-admin function")
    .option('--audit-log <file>', 'JSON-lines audit trail (default ./tenang-audit/cache-<timestamp>.jsonl)')
    .addHelpText(
      'after',
      () => `
A full flush sends every read to DynamoDB at once. Prefer \`cache invalidate --entity\` or
\`--prefix\`. With --yes-i-know the hot keys of the config (stage.cache.hotKeys: <entity>:<id>
of an entity of stage.cache.entities, or full keys) are first loaded from their table and written with the version-checked write,
then every cached value under tenang:<stage>: (all schema versions) is evicted with SCAN, except
the warmed hot keys. Tombstones and locks stay; FLUSHALL/FLUSHDB are never used, since one Redis
may serve several stages. --dry-run needs no --yes-i-know and writes nothing.

${connectionHelp()}

Examples:
  $ tenang --stage prod cache flush --dry-run
  $ tenang --stage prod cache flush --yes-i-know
  $ tenang --stage prod cache flush --yes-i-know --json`,
    )
    .action(async (_opts: unknown, cmd: Command) => {
      const opts = parseOptions(CacheFlushOptionsSchema, cmd.optsWithGlobals());
      const ctx = context();
      guardFlush(ctx, opts);
      const answer = await execute(ctx, opts, {
        operation: 'flush',
        batch: opts.batch,
        dryRun: opts.dryRun === true,
        confirmed: opts.yesIKnow === true,
      });
      if (answer.operation === 'flush') printFlush(ctx, answer.result, opts.json === true);
    });
};
