/**
 * The formats `tenang audit` prints besides its table and JSON: SARIF 2.1.0 (code-scanning
 * tools: one result per failing or not-checkable finding, at the resource's line) and markdown
 * (a pull-request comment: a summary line, the failures first).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AuditFinding, ChecklistItem } from '../audit/checklist';
import type { AuditResult } from './audit';

/**
 * docs/features.md at tenang's package root, which ships it: each rule's help is its feature's
 * anchor there. The root is the nearest directory above this module whose package.json is
 * tenang's, because the module is two levels down in the sources (lib/ops) but three once
 * compiled (dist/lib/ops), where `../..` would name dist/docs, which does not exist.
 */
function featuresDoc(): string {
  for (let dir = __dirname; path.dirname(dir) !== dir; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (!fs.existsSync(manifest)) continue;
    const { name } = JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: unknown };
    if (name === 'tenang') return path.join(dir, 'docs', 'features.md');
  }
  return path.resolve(__dirname, '..', '..', 'docs', 'features.md');
}

const FEATURES_DOC = pathToFileURL(featuresDoc()).href;

/** The help link of a rule: docs/features.md#<feature id>. */
export function ruleHelpUri(featureId: string): string {
  return `${FEATURES_DOC}#${featureId.toLowerCase()}`;
}

/**
 * Every failing or not-checkable finding of a result: the template rules' own (located), and one
 * per other failing or not-checkable item (config and live rules name config paths or deployed
 * resources, not template lines).
 */
export function reportedFindings(result: AuditResult): AuditFinding[] {
  const located = result.findings ?? [];
  const covered = new Set(located.map((f) => f.ruleId));
  const others = result.items
    .filter((i) => (i.status === 'fail' || i.status === 'not-checkable') && !covered.has(i.ruleId))
    .map((i): AuditFinding => ({
      ruleId: i.ruleId,
      featureId: i.featureId,
      level: i.level,
      status: i.status === 'fail' ? 'fail' : 'not-checkable',
      resource: i.resources.join(', '),
      why: i.why,
    }));
  return [...located, ...others];
}

/** What to change, for one finding: what is wrong, then what the rule asks for. */
function advice(finding: AuditFinding, item: ChecklistItem | undefined): string {
  const expected = item === undefined ? '' : ` Expected: ${item.title}`;
  return finding.status === 'fail'
    ? `${finding.why}.${expected}`
    : `${finding.why}. Not a pass: audit the stacks it refers to together (e.g. the whole cdk.out).${expected}`;
}

/** The SARIF 2.1.0 log of a result (one run). */
export function renderSarif(result: AuditResult): string {
  const rules = result.items.map((i) => ({
    id: i.ruleId,
    shortDescription: { text: i.title },
    helpUri: ruleHelpUri(i.featureId),
    defaultConfiguration: { level: i.ruleLevel ?? i.level },
    properties: { featureId: i.featureId },
  }));
  const ruleIndex = new Map(rules.map((r, n) => [r.id, n]));
  const items = new Map(result.items.map((i) => [i.ruleId, i]));
  const results = reportedFindings(result).map((f) => ({
    ruleId: f.ruleId,
    ruleIndex: ruleIndex.get(f.ruleId) ?? -1,
    // A failure at its rule's level; what the input cannot show is a note, never an error.
    level: f.status === 'fail' ? f.level : 'note',
    ...(f.status === 'not-checkable' ? { kind: 'review' } : {}),
    message: { text: advice(f, items.get(f.ruleId)) },
    locations: [
      {
        ...(f.file === undefined
          ? {}
          : {
              physicalLocation: {
                artifactLocation: { uri: sarifUri(f.file) },
                ...(f.line === undefined ? {} : { region: { startLine: f.line } }),
              },
            }),
        logicalLocations: [
          {
            name: f.resource,
            ...(f.stack === undefined ? {} : { fullyQualifiedName: `${f.stack}::${f.resource}` }),
            kind: 'resource',
          },
        ],
      },
    ],
  }));
  const log = {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [
      {
        tool: { driver: { name: 'tenang audit', informationUri: FEATURES_DOC, rules } },
        results,
      },
    ],
  };
  return JSON.stringify(log, null, 2);
}

/** A relative file as a URI reference (forward slashes, each segment escaped). */
function sarifUri(file: string): string {
  if (path.isAbsolute(file)) return pathToFileURL(file).href;
  return file.split(path.sep).map(encodeURIComponent).join('/');
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/** The markdown report of a result: a summary line, failures first, then what could not be checked, then the checklist. */
export function renderMarkdown(result: AuditResult): string {
  const count = (status: ChecklistItem['status'], level?: ChecklistItem['level']): number =>
    result.items.filter((i) => i.status === status && (level === undefined || i.level === level)).length;
  const findings = reportedFindings(result);
  const failures = findings
    .filter((f) => f.status === 'fail')
    .sort((a, b) => (a.level === b.level ? 0 : a.level === 'error' ? -1 : 1));
  const unknown = findings.filter((f) => f.status === 'not-checkable');
  const where = (f: AuditFinding): string =>
    f.file === undefined ? (f.stack ?? '') : `${f.file}${f.line === undefined ? '' : `:${f.line}`}`;
  const lines = [
    `### tenang audit of ${result.source}: ${result.failed ? '❌ failed' : '✅ passed'}`,
    '',
    `${count('fail', 'error')} error-level rules failed, ${count('fail', 'warning')} warnings, ${count('not-checkable')} not checkable, ${count('pass')} passed, ${count('not-applicable')} not applicable.`,
  ];
  const table = (rows: readonly AuditFinding[]): string[] => [
    '',
    '| rule | level | resource | where | what to change |',
    '| --- | --- | --- | --- | --- |',
    ...rows.map(
      (f) =>
        `| [${f.ruleId}](${ruleHelpUri(f.featureId)}) | ${f.status === 'fail' ? f.level : 'not checkable'} | ${cell(f.resource)} | ${cell(where(f))} | ${cell(f.why)} |`,
    ),
  ];
  if ((result.notAudited ?? []).length > 0)
    lines.push('', `Not audited: ${(result.notAudited ?? []).join('; ')}.`);
  if (failures.length > 0) lines.push('', '#### Failures', ...table(failures));
  if (unknown.length > 0) lines.push('', '#### Not checkable from this input', ...table(unknown));
  lines.push(
    '',
    '<details><summary>Checklist</summary>',
    '',
    '| rule | feature | status | why |',
    '| --- | --- | --- | --- |',
    ...result.items.map(
      (i) =>
        `| ${i.ruleId} | ${i.featureId} | ${i.status} | ${cell(i.status === 'pass' ? `${i.resources.length} checked` : i.why)} |`,
    ),
    '',
    '</details>',
  );
  return lines.join('\n');
}
