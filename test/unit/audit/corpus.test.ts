/**
 * The audit measured against a hand-judged corpus of public worker-queue templates
 * (test/fixtures/audit-corpus, the audit's first hand-judged corpus): every template read as the CLI reads it, audited,
 * and its failing findings compared with the judged flaws: recall over `flaws` (a not-checkable
 * flaw counts as found when the audit says not-checkable for that pair) and false positives (a
 * failing finding on a pair not judged a flaw). The judgments are never adjusted to the audit.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { AuditFinding } from '../../../lib/audit/checklist';
import { auditTemplates } from '../../../lib/audit/template-audit';
import { readTemplateSource } from '../../../lib/audit/template-input';

const CORPUS_DIR = path.join(__dirname, '..', '..', 'fixtures', 'audit-corpus');
/**
 * How long auditing the whole corpus may take: each Terraform entry runs the HCL parser in a child
 * process (about a second and a half each, lib/audit/terraform.ts).
 */
const PARSE_TIMEOUT_MS = 180_000;
/** The least recall the audit must reach over the corpus's flaws. */
const MIN_RECALL = 0.95;

interface Judged {
  readonly rule: string;
  readonly resource: string;
  readonly status?: 'not-checkable';
  readonly tightened?: boolean;
}

interface CorpusTemplate {
  /** A template file, or a directory: a cloud assembly (`format: cdk-out`), a Terraform configuration (`terraform-hcl`). */
  readonly file: string;
  readonly format: string;
  /**
   * The file's sha256; for a directory, that of its primary file (PRIMARY_FILES: a cloud
   * assembly's manifest.json, a Terraform configuration's main.tf).
   */
  readonly sha256: string;
  /** For a directory: the sha256 of each other file copied into it, by its path in the directory. */
  readonly files?: Readonly<Record<string, string>>;
  readonly flaws: readonly Judged[];
  readonly clean: readonly Judged[];
}

interface Corpus {
  readonly rulePrefix: string;
  readonly rules: readonly string[];
  readonly templates: readonly CorpusTemplate[];
}

const corpus = JSON.parse(fs.readFileSync(path.join(CORPUS_DIR, 'corpus.json'), 'utf8')) as Corpus;

/**
 * A finding's resource as the corpus's author names it: the audit names a SAM event
 * `Function (event Event)`, the corpus `Function/Event`.
 */
function corpusName(resource: string): string {
  return resource.replace(/^(\S+) \(event (\S+)\)$/, '$1/$2');
}

const pair = (rule: string, resource: string): string => `${rule} ${resource}`;

const sha256 = (file: string): string => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

/** The file of a directory entry whose sha256 is the entry's `sha256`, by format. */
const PRIMARY_FILES: Readonly<Record<string, string>> = {
  'cdk-out': 'manifest.json',
  'terraform-hcl': 'main.tf',
};

/** Every file under a directory, by its path relative to it (`/`-separated). */
function filesUnder(directory: string, prefix = ''): string[] {
  return fs.readdirSync(path.join(directory, prefix), { withFileTypes: true }).flatMap((d) => {
    const relative = prefix === '' ? d.name : `${prefix}/${d.name}`;
    return d.isDirectory() ? filesUnder(directory, relative) : [relative];
  });
}

/**
 * The files of a corpus entry that differ from what was judged: a template file by its sha256; a
 * directory by its primary file's sha256 and that of every other file it lists under `files`,
 * and by holding no file it does not list.
 */
function changedFiles(template: CorpusTemplate): string[] {
  const entry = path.join(CORPUS_DIR, template.file);
  if (!fs.statSync(entry).isDirectory()) return sha256(entry) === template.sha256 ? [] : [template.file];
  const primary = PRIMARY_FILES[template.format] ?? 'manifest.json';
  const listed = new Map(Object.entries({ ...template.files, [primary]: template.sha256 }));
  const present = filesUnder(entry);
  return [
    ...[...listed]
      .filter(([f, digest]) => !present.includes(f) || sha256(path.join(entry, f)) !== digest)
      .map(([f]) => f),
    ...present.filter((f) => !listed.has(f)),
  ].map((f) => `${template.file}/${f}`);
}

/** One template's findings, by `rule resource` pairs, rule ids without the prefix. */
function auditCorpusTemplate(file: string): { failing: Set<string>; unknown: Set<string> } {
  // readTemplateSource is what `tenang audit <file>` reads a file with (lib/ops/audit.ts readAuditInput),
  // a cloud assembly directory (its manifest.json's stacks) and a Terraform configuration included.
  const { findings } = auditTemplates(readTemplateSource(path.join(CORPUS_DIR, file)));
  const key = (f: AuditFinding): string =>
    pair(f.ruleId.slice(corpus.rulePrefix.length), corpusName(f.resource));
  return {
    failing: new Set(findings.filter((f) => f.status === 'fail').map(key)),
    unknown: new Set(findings.filter((f) => f.status === 'not-checkable').map(key)),
  };
}

interface RuleScore {
  expected: number;
  found: number;
  falsePositives: number;
}

describe('Audit corpus (test/fixtures/audit-corpus)', () => {
  it('when a corpus template is read, it is the file judged, byte for byte (sha256)', () => {
    // Act
    const mismatched = corpus.templates.flatMap(changedFiles);

    // Assess
    expect(mismatched).toEqual([]);
  });

  it(
    `when every template is audited, it finds at least ${MIN_RECALL * 100} % of the judged flaws and raises no false positive`,
    () => {
      // Prepare
      const scores = new Map<string, RuleScore>(
        corpus.rules.map((r) => [r, { expected: 0, found: 0, falsePositives: 0 }]),
      );
      const score = (rule: string): RuleScore => {
        const s = scores.get(rule) ?? { expected: 0, found: 0, falsePositives: 0 };
        scores.set(rule, s);
        return s;
      };
      const missed: string[] = [];
      const falsePositives: string[] = [];

      // Act
      for (const template of corpus.templates) {
        const { failing, unknown } = auditCorpusTemplate(template.file);
        const flaws = new Set(template.flaws.map((f) => pair(f.rule, f.resource)));
        for (const flaw of template.flaws) {
          const key = pair(flaw.rule, flaw.resource);
          const found = flaw.status === 'not-checkable' ? unknown.has(key) : failing.has(key);
          score(flaw.rule).expected += 1;
          if (found) score(flaw.rule).found += 1;
          else missed.push(`${template.file}: ${key}${flaw.status === undefined ? '' : ` (${flaw.status})`}`);
        }
        for (const key of failing) {
          if (flaws.has(key)) continue;
          score(key.split(' ')[0] ?? key).falsePositives += 1;
          falsePositives.push(`${template.file}: ${key}`);
        }
      }
      const expected = [...scores.values()].reduce((n, s) => n + s.expected, 0);
      const found = [...scores.values()].reduce((n, s) => n + s.found, 0);
      const recall = expected === 0 ? 1 : found / expected;
      const rows = [...scores].map(
        ([rule, s]) =>
          `${rule.padEnd(22)} ${`${s.found}/${s.expected}`.padStart(7)}  ${String(s.falsePositives).padStart(3)}`,
      );
      console.log(
        [
          `audit corpus: recall ${found}/${expected} = ${(recall * 100).toFixed(1)} %, ${falsePositives.length} false positives`,
          `${'rule'.padEnd(22)} ${'found'.padStart(7)}  ${'fp'.padStart(3)}`,
          ...rows,
          ...(missed.length === 0 ? [] : ['missed:', ...missed.map((m) => `  ${m}`)]),
          ...(falsePositives.length === 0
            ? []
            : ['false positives:', ...falsePositives.map((f) => `  ${f}`)]),
        ].join('\n'),
      );

      // Assess
      expect(falsePositives).toEqual([]);
      expect(recall).toBeGreaterThanOrEqual(MIN_RECALL);
    },
    PARSE_TIMEOUT_MS,
  );
});
