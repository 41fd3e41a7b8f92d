/**
 * The cache commands' audit trail (C6): one JSON line per `cache invalidate` / `cache flush` run
 * (dry runs too), whichever path ran it, with who ran it (TENANG_ACTOR or the OS user, and the
 * access key id of the AWS credentials: CloudTrail and `aws sts get-access-key-info` tie it to
 * the identity), why (--reason), what was asked, where it ran and how it ended.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CacheAdminAnswer, CacheAdminOperation } from '../../core/cache-admin';
import type { CliContext } from '../cli-context';

/** One line of the trail. */
export interface CacheAuditRecord {
  readonly at: string;
  readonly stage: string;
  readonly actor: string;
  /** The AWS credentials' access key id; undefined when none could be loaded. */
  readonly accessKeyId: string | undefined;
  readonly reason: string | undefined;
  /** The request as sent (its `requestedBy` is the fields above). */
  readonly request: CacheAdminOperation;
  /** invoke: the cache-admin function ran it; direct: the CLI did, connected to `target`. */
  readonly path: 'invoke' | 'direct';
  /** The function name (invoke) or the Redis host (direct). */
  readonly target: string;
  readonly outcome: 'ok' | 'refused' | 'failed';
  /** The refusal's or failure's message. */
  readonly message?: string;
  /** Keys fenced, values evicted, hot keys warmed: what the operation reported. */
  readonly summary?: Readonly<Record<string, number>>;
}

/** Default audit file: ./tenang-audit/cache-<timestamp>.jsonl. */
export function defaultCacheAuditLog(now: Date): string {
  return path.join('tenang-audit', `cache-${now.toISOString().replace(/[:.]/g, '-')}.jsonl`);
}

/** The counts an answer reports, for the trail. */
export function answerSummary(answer: CacheAdminAnswer): Readonly<Record<string, number>> | undefined {
  if (answer.status !== 'ok') return undefined;
  switch (answer.operation) {
    case 'invalidate-entity':
      return {
        keys: answer.result.keys.length,
        fenced: answer.result.keys.filter((k) => k.result === 'fenced').length,
      };
    case 'invalidate-prefix':
      return { scanned: answer.result.scanned, evicted: answer.result.evicted };
    case 'flush':
      return {
        hotKeys: answer.result.hotKeys.length,
        warmed: answer.result.hotKeys.filter((h) => h.result === 'warmed').length,
        scanned: answer.result.scanned,
        evicted: answer.result.evicted,
      };
  }
}

/** The access key id of the CLI's credentials, or undefined when there are none (the call then fails on its own). */
export async function accessKeyIdOf(ctx: CliContext): Promise<string | undefined> {
  try {
    return (await ctx.clients.lambda.config.credentials()).accessKeyId;
  } catch {
    return undefined;
  }
}

/** Appends `record` to `file` (created with its directory). */
export function appendCacheAudit(file: string, record: CacheAuditRecord): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.appendFileSync(file, `${JSON.stringify(record)}\n`);
}
