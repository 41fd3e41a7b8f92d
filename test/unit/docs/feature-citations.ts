/**
 * Finds feature-id citations (docs/features.md) in the repository's comments, strings and
 * markdown, and the page's own definitions. Used by feature-ids.test.ts.
 *
 * A citation is an id of the page's families (D, I, Q, L, C, R, B, O, P, X, F followed by 1–99)
 * in a context that makes it one: inside parentheses (`(D3, R1)`, `(one retry layer, R6)`), in a
 * list of ids (`D3, R1–R3`), as a label (`D2:`) or before a gloss (`C1 (cache-aside)`), after the
 * word feature(s) (`**Features:** B4`), beside the word rule (`the D2 rule`), or as an audit rule
 * id (`Tenang-D2`, `F2-RetainOnCreate`). A range (`L1–L4`, `F1…F4`) cites every id in it.
 * Not citations: other letters (S3, V8, A1), ids inside a word or after a hyphen
 * (`AwsSolutions-L1`), and CDK's construct levels (`L1 resources`, `an L2's child`).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

/** The repository root. */
export const ROOT = path.join(__dirname, '..', '..', '..');

/** The page that defines every feature id. */
export const FEATURES_PAGE = path.join(ROOT, 'docs', 'features.md');

/** One id, as a regex source: the families' letters, then 1–99. */
const ID = '[BCDFILOPQRX][1-9]\\d?';
/** An id, an optional range end, and the optional audit prefix. */
const TOKEN = new RegExp(`(?<![\\w-])(?:Tenang-)?(${ID})(?:\\s*[–…-]\\s*(${ID}))?(?!\\w)`, 'g');
/** A list separator between two ids. */
const SEPARATOR = '\\s*(?:,|;|&|\\band\\b)\\s*';
const LIST_BEFORE = new RegExp(`(?<![\\w-])(?:Tenang-)?${ID}(?:\\s*[–…-]\\s*${ID})?${SEPARATOR}$`);
const LIST_AFTER = new RegExp(`^${SEPARATOR}(?:Tenang-)?${ID}(?!\\w)`);
const FEATURE_WORD = new RegExp(
  `\\bfeatures?(?:\\s+ids?)?\\b[\\s:*]*(?:(?:Tenang-)?${ID}(?:\\s*[–…-]\\s*${ID})?(?:${SEPARATOR}|\\s+))*$`,
  'i',
);
/** Nouns, not citations: CDK's construct levels (`L1 resources`, `an L1`, `an L2's child`). */
const NOUN_AFTER = /^(?:'s\b|\s+(?:resources?|constructs?)\b)/i;
const NOUN_BEFORE = /\ban?\s+$/i;
/** How far apart a citation's parentheses may be. */
const MAX_PARENTHESES_SPAN = 400;

/** One cited id, at an offset of the text it was found in. */
export interface Citation {
  readonly id: string;
  readonly index: number;
}

/** Every id of a range: `L1–L4` is L1, L2, L3, L4; ends of different letters are just both ends. */
function expand(first: string, last: string | undefined): string[] {
  if (last === undefined) return [first];
  const [a, b] = [Number(first.slice(1)), Number(last.slice(1))];
  if (first[0] !== last[0] || b < a) return [first, last];
  return Array.from({ length: b - a + 1 }, (_, i) => `${first[0]}${a + i}`);
}

function insideParentheses(text: string, start: number, end: number): boolean {
  const open = text.lastIndexOf('(', start);
  if (open === -1 || text.lastIndexOf(')', start) > open || start - open > MAX_PARENTHESES_SPAN) return false;
  const close = text.indexOf(')', end);
  const nextOpen = text.indexOf('(', end);
  return close !== -1 && (nextOpen === -1 || close < nextOpen) && close - end <= MAX_PARENTHESES_SPAN;
}

/** The feature ids `text` cites, each with the offset of its mention. */
export function featureCitations(text: string): Citation[] {
  const found: Citation[] = [];
  for (const match of text.matchAll(TOKEN)) {
    const [whole, first, last] = match;
    if (first === undefined) continue;
    const start = match.index;
    const end = start + whole.length;
    const before = text.slice(Math.max(0, start - 80), start);
    const after = text.slice(end, end + 40);
    if (NOUN_AFTER.test(after) || NOUN_BEFORE.test(before)) continue;
    const cited =
      whole.startsWith('Tenang-') ||
      /^-[A-Z][A-Za-z]+/.test(after) ||
      /^\*{0,2}:/.test(after) ||
      /^\s*\(/.test(after) ||
      /^\s+rules?\b/.test(after) ||
      /\brules?\s+$/.test(before) ||
      insideParentheses(text, start, end) ||
      FEATURE_WORD.test(before) ||
      LIST_BEFORE.test(before) ||
      LIST_AFTER.test(after);
    if (cited) for (const id of expand(first, last)) found.push({ id, index: start });
  }
  return found;
}

/** A piece of a file's text that may cite ids, and the line it starts on (1-based). */
export interface Segment {
  readonly text: string;
  readonly line: number;
}

/** A comment without its markers (`/**`, `*`, `//`), lines kept. */
function commentText(raw: string): string {
  return raw
    .replace(/^\/\*\*?/, '')
    .replace(/\*\/$/, '')
    .replace(/^[ \t]*(?:\*(?!\/)|\/\/+)[ \t]?/gm, '');
}

/** The comments and string literals of a TypeScript or JavaScript source. */
export function sourceSegments(fileName: string, source: string): Segment[] {
  const kind = /\.[cm]?js$/.test(fileName) ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, false, kind);
  const lineOf = (pos: number): number => file.getLineAndCharacterOfPosition(pos).line + 1;
  const segments: Segment[] = [];
  const seen = new Set<number>();
  const comments = (ranges: readonly ts.CommentRange[] | undefined): void => {
    for (const range of ranges ?? []) {
      if (seen.has(range.pos)) continue;
      seen.add(range.pos);
      segments.push({ text: commentText(source.slice(range.pos, range.end)), line: lineOf(range.pos) });
    }
  };
  const visit = (node: ts.Node): void => {
    // JSDoc nodes lie inside comments, which are read whole above.
    if (node.kind >= ts.SyntaxKind.FirstJSDocNode && node.kind <= ts.SyntaxKind.LastJSDocNode) return;
    comments(ts.getLeadingCommentRanges(source, node.getFullStart()));
    comments(ts.getTrailingCommentRanges(source, node.getEnd()));
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateLiteralToken(node)
    )
      segments.push({ text: node.text, line: lineOf(node.getStart(file)) });
    for (const child of node.getChildren(file)) visit(child);
  };
  visit(file);
  return segments;
}

/** What a file may cite ids in: its comments and strings (code), or all of it (markdown, Python). */
export function fileSegments(fileName: string, text: string): Segment[] {
  return /\.[cm]?[jt]s$/.test(fileName) ? sourceSegments(fileName, text) : [{ text, line: 1 }];
}

/** A citation found in the repository. */
export interface FoundCitation {
  readonly file: string;
  readonly line: number;
  readonly id: string;
}

/** The citations of one file's text. */
export function citationsIn(file: string, text: string): FoundCitation[] {
  return fileSegments(file, text).flatMap((segment) =>
    featureCitations(segment.text).map((c) => ({
      file,
      id: c.id,
      line: segment.line + (segment.text.slice(0, c.index).match(/\n/g)?.length ?? 0),
    })),
  );
}

/** Where citations are looked for: code (the examples' too) and docs directories, and the README. */
export const CITING_ROOTS = [
  'lib',
  'lambdas',
  'examples',
  'bin',
  'bench',
  'scripts',
  'test',
  'runbooks',
  'README.md',
];
const CITING_FILES = /\.(?:[cm]?[jt]s|md|py)$/;
const SKIPPED_DIRS = new Set(['node_modules', 'out', '__snapshots__']);

function walk(dir: string, skip: (relative: string, isDir: boolean) => boolean): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    const relative = path.relative(ROOT, full).split(path.sep).join('/');
    if (skip(relative, entry.isDirectory())) return [];
    if (entry.isDirectory()) return walk(full, skip);
    return entry.isFile() ? [relative] : [];
  });
}

/** Every file under CITING_ROOTS that may cite ids, relative to the root. */
export function citingFiles(): string[] {
  return CITING_ROOTS.flatMap((root) => {
    const full = path.join(ROOT, root);
    if (!fs.existsSync(full)) return [];
    if (fs.statSync(full).isFile()) return [root];
    return walk(full, (relative, isDir) =>
      isDir ? SKIPPED_DIRS.has(path.posix.basename(relative)) : !CITING_FILES.test(relative),
    );
  });
}

/** The ids docs/features.md defines: each as `<a id="d3"></a>` over `### D3 — …`, with its section. */
export function definedFeatures(page: string): Map<string, string> {
  const defined = new Map<string, string>();
  const anchors = [...page.matchAll(/^<a id="([a-z]\d+)"><\/a>\n### ([A-Z]\d+) — .+$/gm)];
  for (const [i, match] of anchors.entries()) {
    const [, anchor, id] = match;
    if (anchor === undefined || id === undefined) continue;
    if (anchor !== id.toLowerCase()) throw new Error(`docs/features.md: anchor "${anchor}" over ${id}`);
    if (defined.has(id)) throw new Error(`docs/features.md: ${id} is defined twice`);
    const next = anchors[i + 1]?.index ?? page.length;
    const section = page.slice(match.index, next);
    const chapter = section.indexOf('\n## ');
    defined.set(id, chapter === -1 ? section : section.slice(0, chapter));
  }
  return defined;
}

/** Files and directories that .gitignore lists (`dir/`, `name`, `*.ext`), as a predicate. */
export function gitIgnored(): (relative: string) => boolean {
  const file = path.join(ROOT, '.gitignore');
  const entries = fs.existsSync(file)
    ? fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== '' && !l.startsWith('#') && !l.startsWith('!'))
    : [];
  return (relative) =>
    entries.some((entry) => {
      if (entry.startsWith('*.')) return relative.endsWith(entry.slice(1));
      const name = entry.replace(/^\//, '').replace(/\/$/, '');
      return name.includes('/') ? relative === name : path.posix.basename(relative) === name;
    });
}

/** Every file of the repository, except .git, node_modules and what .gitignore lists. */
export function repositoryFiles(): string[] {
  const ignored = gitIgnored();
  return walk(ROOT, (relative) => relative === '.git' || relative === 'node_modules' || ignored(relative));
}
