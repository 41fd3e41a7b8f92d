/**
 * Feature ids (docs/features.md): every id a comment, a string, a runbook or the README cites is
 * defined on the page, the page quotes the audit's rule titles as the audit prints them, and no
 * file points at planning documents that live outside the repository.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { PipelineConfig } from '../../../lib/config';
import { auditPipelineConfig } from '../../../lib/audit/config-audit';
import { PREFLIGHT_FEATURE_ID, PREFLIGHT_RULES } from '../../../lib/audit/preflight';
import { TEMPLATE_RULES, ruleId } from '../../../lib/audit/rules';
import {
  FEATURES_PAGE,
  ROOT,
  citationsIn,
  citingFiles,
  definedFeatures,
  featureCitations,
  repositoryFiles,
  type FoundCitation,
} from './feature-citations';

const THIS_DIR = path.relative(ROOT, __dirname).split(path.sep).join('/');
const page = fs.readFileSync(FEATURES_PAGE, 'utf8');
const read = (relative: string): string => fs.readFileSync(path.join(ROOT, relative), 'utf8');

/** The cited ids of a text, in order, without their offsets. */
const ids = (text: string): string[] => featureCitations(text).map((c) => c.id);

/** Citations of ids the page does not define, as `file:line id`. */
function undefinedCitations(
  citations: readonly FoundCitation[],
  defined: ReadonlyMap<string, string>,
): string[] {
  return citations.filter((c) => !defined.has(c.id)).map((c) => `${c.file}:${c.line} ${c.id}`);
}

/** Names of documents outside the repository; spelled in parts so this file does not mention them. */
const OUTSIDE_DOCUMENTS = [
  ...['DESIGN', 'STYLE', 'FEATURES'].map((name) => `${name}.md`),
  ['..', 'shared', ''].join('/'),
];

describe('Feature ids', () => {
  describe('Function: featureCitations', () => {
    it('when ids are in parentheses, a list, a label, a range or after "feature", it finds each', () => {
      expect(ids('retries (D3, R1) and (one retry layer, R6)')).toEqual(['D3', 'R1', 'R6']);
      expect(ids('D2: visibility timeout')).toEqual(['D2']);
      expect(ids('covered by feature D3 and by D5, X1')).toEqual(['D3', 'D5', 'X1']);
      expect(ids('- **Features:** L1–L4, D5 (see the page)')).toEqual(['L1', 'L2', 'L3', 'L4', 'D5']);
      expect(ids('the deploy-readiness rules (`Tenang-F1…F4`)')).toEqual(['F1', 'F2', 'F3', 'F4']);
      expect(ids('`Tenang-D2` fails; F2-RetainOnCreate passes; the B5 rule warns')).toEqual([
        'D2',
        'F2',
        'B5',
      ]);
      expect(ids('Covers C1 (cache-aside), and (C6: by prefix)')).toEqual(['C1', 'C6']);
    });

    it('when a token only looks like an id (AWS and CDK names, other letters, prose), it finds none', () => {
      expect(ids('Amazon S3: bucket (S3 requests are not supported)')).toEqual([]);
      expect(ids("most C0 controls, and V8's JSON snippets (A1, A2)")).toEqual([]);
      expect(ids("acknowledge('AwsSolutions-L1', reason)")).toEqual([]);
      expect(ids("run over the stack's L1 resources (an L2's default child, or an L1 itself)")).toEqual([]);
      expect(ids('the value X12b, the tokens P0 and D100, the word D2 alone')).toEqual([]);
    });

    it('when a file cites an id the page does not define, the check names the file, the line and the id', () => {
      // Prepare
      const source = [
        'const bucket = "S3: my-bucket";',
        '/**',
        ' * Retries with backoff (R2, D99).',
        ' */',
        "export const rule = 'see Tenang-Q9';",
      ].join('\n');
      const defined = definedFeatures(page);

      // Act
      const found = citationsIn('lib/example.ts', source);

      // Assess
      expect(found.map((c) => c.id)).toEqual(['R2', 'D99', 'Q9']);
      expect(undefinedCitations(found, defined)).toEqual(['lib/example.ts:3 D99', 'lib/example.ts:5 Q9']);
    });

    it('when code (not a comment or a string) holds an id-like token, it is not a citation', () => {
      expect(citationsIn('lib/example.ts', "const table = { D2: 1, 'O3-QueueAge': 2 }; f(R3);")).toEqual([
        { file: 'lib/example.ts', line: 1, id: 'O3' },
      ]);
    });
  });

  describe('docs/features.md', () => {
    it('when read, each id has one anchor named after it and a definition', () => {
      // Act
      const defined = definedFeatures(page);

      // Assess
      expect(defined.size).toBeGreaterThanOrEqual(50);
      for (const [id, section] of defined) {
        expect(section).toContain(`<a id="${id.toLowerCase()}"></a>`);
        const definition = section.split('\n').slice(2).join(' ').trim();
        expect({ id, words: definition.split(/\s+/).length > 15 }).toEqual({ id, words: true });
      }
      const anchors = [...page.matchAll(/<a id="([^"]+)"><\/a>/g)].map((m) => m[1]?.toUpperCase());
      expect(anchors.filter((a) => a === undefined || !defined.has(a))).toEqual([]);
    });

    it('when the repository cites a feature id, the page defines it', () => {
      // Prepare
      const defined = definedFeatures(page);
      const files = citingFiles().filter((f) => !f.startsWith(`${THIS_DIR}/`));

      // Act
      const citations = files.flatMap((f) => citationsIn(f, read(f)));

      // Assess: the scan sees the repository's citations (a broken matcher would pass on none).
      expect(citations.length).toBeGreaterThan(300);
      expect(new Set(citations.map((c) => c.file)).size).toBeGreaterThan(80);
      expect(undefinedCitations(citations, defined)).toEqual([]);
    });

    it("when the audit names a feature, the page defines it and quotes each of its rules' id and title", () => {
      // Prepare
      const defined = definedFeatures(page);
      const noConfig = { jobTypes: [], streamConsumers: [] } as unknown as PipelineConfig;
      const rules = [
        ...TEMPLATE_RULES.map((r) => ({ ruleId: ruleId(r), featureId: r.featureId, title: r.title })),
        ...auditPipelineConfig(noConfig, { runbooksDir: ROOT, drills: [] }).map((i) => ({
          ruleId: i.ruleId,
          featureId: i.featureId,
          title: i.title,
        })),
        ...Object.values(PREFLIGHT_RULES).map((r) => ({ ...r, featureId: PREFLIGHT_FEATURE_ID })),
      ];

      // Act
      const missing = rules.filter((r) => {
        const section = defined.get(r.featureId) ?? '';
        return !section.includes(`\`${r.ruleId}\``) || !section.includes(r.title);
      });

      // Assess
      expect(rules.length).toBeGreaterThanOrEqual(19);
      expect(missing).toEqual([]);
    });
  });

  it('when any file of the repository is read, none points at the planning documents outside it', () => {
    // Act
    const mentions = repositoryFiles().flatMap((file) => {
      const text = read(file);
      if (text.includes('\u0000')) return [];
      return text
        .split('\n')
        .flatMap((line, i) =>
          OUTSIDE_DOCUMENTS.filter((name) => line.includes(name)).map((name) => `${file}:${i + 1} ${name}`),
        );
    });

    // Assess
    expect(mentions).toEqual([]);
  });
});
