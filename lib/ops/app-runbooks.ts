/**
 * An app's own runbooks/ (P1): the pages its alarms (`Runbook: runbooks/<name>.md`,
 * lib/infra/observability.ts) and its consumers' `runbook` fields link to, written into the app by
 * `tenang init` and `tenang runbooks`. Two kinds of page:
 * - copied: tenang's generic pages as its package ships them (runbooks/<name>.md): the alarm
 *   runbooks and stuck-jobs, which hold for any job type, and any other of tenang's hand-written
 *   pages a consumer of the app names. The reference's own pages (duplicates, stale-cache,
 *   stuck-lock: payments, the orders cache, SKU leases) are not copied unless named.
 * - generated: the index and one fact page per consumer, from the app's declaration
 *   (lib/ops/runbook-index.ts), linking only to the pages the app's runbooks/ holds.
 * Each page written starts with a mark holding the hash of the text after it. A page whose text no
 * longer matches its mark, or that has none, was written or edited by the team: it is theirs, and
 * is never replaced without `--force`.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { PipelineConfig } from '../config';
import { RUNBOOK } from '../infra/observability';
import { packageRoot } from './cli-place';
import type { AppDrillInfo } from './drills/catalog';
import { GENERATED_MARK, generateRunbookFiles, handWrittenRunbooks } from './runbook-index';

/** tenang's pages every app gets: the alarms' runbooks and the symptom runbook of any job type. */
export const GENERIC_RUNBOOKS: readonly string[] = [...Object.values(RUNBOOK), 'stuck-jobs'];

/** The runbook pages tenang's package ships (runbooks/ at its root). */
export function shippedRunbooksDir(): string {
  return path.join(packageRoot(), 'runbooks');
}

/** A page's origin: copied from tenang's package, or generated from the declaration. */
export type RunbookPageKind = 'copied' | 'generated';

/** A page the app's runbooks/ should hold. */
export interface RunbookPage {
  /** Relative to the runbooks directory. */
  readonly file: string;
  readonly kind: RunbookPageKind;
  /** Its whole text, mark first. */
  readonly content: string;
}

const MARK = /^<!-- tenang runbooks \((copied|generated), sha256:([0-9a-f]{16})\)/;

function hashOf(body: string): string {
  return createHash('sha256').update(body).digest('hex').slice(0, 16);
}

/** `body` with the mark of its kind in front. */
function marked(kind: RunbookPageKind, body: string, source: string): string {
  const why =
    kind === 'generated'
      ? "written by `npx tenang runbooks` from the app's declaration and tenang's alarms and drills. Do not edit: change the declaration and run it again (an edited page is kept as the team's own)"
      : `tenang's ${source}, copied by \`npx tenang runbooks\`. Edit it to fit the app: an edited page is the team's own, and is no longer replaced`;
  return `<!-- tenang runbooks (${kind}, sha256:${hashOf(body)}): ${why}. -->\n${body}`;
}

/**
 * Whether `text` is a page tenang wrote and nobody edited since: its mark's hash is its body's.
 * Undefined when it carries no mark (a page of the team's own).
 */
export function unedited(text: string): boolean | undefined {
  const match = MARK.exec(text);
  if (match === null) return undefined;
  const newline = text.indexOf('\n');
  return newline !== -1 && hashOf(text.slice(newline + 1)) === match[2];
}

/** The kind in a page's mark, if it has one. */
function markedKind(text: string): RunbookPageKind | undefined {
  return MARK.exec(text)?.[1] as RunbookPageKind | undefined;
}

/** Where the pages come from and what the app's runbooks/ already holds. */
export interface RunbookSources {
  /** tenang's shipped pages. @default shippedRunbooksDir() */
  readonly shippedDir?: string;
  /** Whether the app's runbooks/ holds `<name>.md` already (a page of the team's own). @default none does */
  readonly exists?: (name: string) => boolean;
  /** The app's drills, tenang's and its own (lib/drills/app-drills.ts). @default tenang's */
  readonly drills?: readonly AppDrillInfo[];
}

/**
 * Every page the app's runbooks/ should hold for `config`: tenang's generic pages and those of
 * its pages a consumer names (copied), the index and the consumers' fact pages (generated).
 * @throws Error when a page to copy is missing from tenang's package
 */
export function runbookPages(config: PipelineConfig, sources: RunbookSources = {}): RunbookPage[] {
  const shipped = sources.shippedDir ?? shippedRunbooksDir();
  const exists = sources.exists ?? (() => false);
  const handWritten = handWrittenRunbooks();
  const named = [...config.jobTypes, ...config.streamConsumers].map((c) => c.runbook);
  const copied = [...new Set([...GENERIC_RUNBOOKS, ...named.filter((r) => handWritten.has(r))])];
  // The generated pages link to the symptom runbooks the app's runbooks/ holds: copied or its own.
  const symptomRunbooks = [...handWritten].filter((r) => copied.includes(r) || exists(r));
  const generated = generateRunbookFiles(config, {
    symptomRunbooks,
    ...(sources.drills === undefined ? {} : { drills: sources.drills }),
  });
  const held = new Set([...copied, ...generated.map((f) => f.file.replace(/\.md$/, ''))]);
  const pages: RunbookPage[] = copied.map((name) => {
    const file = path.join(shipped, `${name}.md`);
    if (!fs.existsSync(file)) throw new Error(`tenang's package has no runbooks/${name}.md (${file})`);
    const body = relinked(fs.readFileSync(file, 'utf8'), (page) => held.has(page) || exists(page));
    return { file: `${name}.md`, kind: 'copied', content: marked('copied', body, `runbooks/${name}.md`) };
  });
  for (const f of generated) {
    const body = f.content.startsWith(`${GENERATED_MARK}\n`)
      ? f.content.slice(GENERATED_MARK.length + 1)
      : f.content;
    pages.push({ file: f.file, kind: 'generated', content: marked('generated', body, f.file) });
  }
  return pages;
}

/** Where an app finds tenang's package: its node_modules, seen from its runbooks/. */
const PACKAGE_FROM_RUNBOOKS = '../node_modules/tenang';

/**
 * A page of tenang's, its links made to work from the app's runbooks/: tenang's docs and the
 * runbooks the app does not hold (`held` says which it does) lead into the installed package.
 */
export function relinked(markdown: string, held: (page: string) => boolean): string {
  return markdown
    .replace(/\]\(\.\.\/docs\//g, `](${PACKAGE_FROM_RUNBOOKS}/docs/`)
    .replace(/\]\(([a-z0-9-]+)\.md(#[^)]*)?\)/g, (link, page: string, anchor: string | undefined) =>
      held(page) ? link : `](${PACKAGE_FROM_RUNBOOKS}/runbooks/${page}.md${anchor ?? ''})`,
    );
}

/** What `tenang runbooks` does with a page. */
export type RunbookAction =
  /** Missing: written. */
  | 'create'
  /** Written by tenang, not edited since, out of date: replaced. */
  | 'update'
  /** Already what it should be. */
  | 'unchanged'
  /** Edited by hand, or a page of the team's own with that name: left alone. */
  | 'kept'
  /** Edited by hand, replaced because of --force. */
  | 'overwrite';

/** A page and what is done with it. */
export interface PlannedRunbookPage extends RunbookPage {
  readonly action: RunbookAction;
  /** Why a page is kept or overwritten. @default none */
  readonly reason?: string;
}

/** What `tenang runbooks` would do in a runbooks directory. */
export interface RunbookPlan {
  /** The runbooks directory (absolute). */
  readonly dir: string;
  readonly pages: readonly PlannedRunbookPage[];
  /** Generated pages the declaration no longer gives (a consumer removed or renamed): left for the team to delete. */
  readonly orphans: readonly string[];
}

/** Plans the app's runbooks in `dir` for `config`; with `force`, edited pages are replaced too. */
export function planRunbooks(
  config: PipelineConfig,
  dir: string,
  options: {
    readonly force?: boolean;
    readonly shippedDir?: string;
    readonly drills?: readonly AppDrillInfo[];
  } = {},
): RunbookPlan {
  const read = (file: string): string | undefined => {
    const at = path.join(dir, file);
    return fs.existsSync(at) ? fs.readFileSync(at, 'utf8') : undefined;
  };
  const pages = runbookPages(config, {
    ...(options.shippedDir === undefined ? {} : { shippedDir: options.shippedDir }),
    ...(options.drills === undefined ? {} : { drills: options.drills }),
    exists: (name) => read(`${name}.md`) !== undefined,
  }).map((page): PlannedRunbookPage => {
    const current = read(page.file);
    if (current === undefined) return { ...page, action: 'create' };
    if (current === page.content) return { ...page, action: 'unchanged' };
    const state = unedited(current);
    if (state === true) return { ...page, action: 'update' };
    const reason = state === false ? 'edited by hand' : 'not written by tenang runbooks';
    return { ...page, action: options.force === true ? 'overwrite' : 'kept', reason };
  });
  const planned = new Set(pages.map((p) => p.file));
  const orphans = fs.existsSync(dir)
    ? fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.md') && !planned.has(f))
        .filter((f) => markedKind(read(f) ?? '') === 'generated')
        .sort()
    : [];
  return { dir, pages, orphans };
}

/** The pages `--check` reports: missing or out of date (a kept page is the team's, not a problem). */
export function outOfDate(plan: RunbookPlan): PlannedRunbookPage[] {
  return plan.pages.filter((p) => p.action === 'create' || p.action === 'update');
}

/** Writes what the plan changes; returns the pages written. */
export function writeRunbookPlan(plan: RunbookPlan): PlannedRunbookPage[] {
  const written = plan.pages.filter(
    (p) => p.action === 'create' || p.action === 'update' || p.action === 'overwrite',
  );
  if (written.length > 0) fs.mkdirSync(plan.dir, { recursive: true });
  for (const page of written) fs.writeFileSync(path.join(plan.dir, page.file), page.content);
  return written;
}
