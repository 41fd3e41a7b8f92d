/**
 * Reads a CloudFormation template's text, JSON or YAML, into the JSON form the rules read, and
 * finds where a resource is in that text (the line a SARIF result points at).
 *
 * YAML is parsed by the `yaml` package (ISC, no dependencies) with CloudFormation's short-form
 * intrinsics as custom tags: `!Ref X` → `{ Ref: X }`, `!GetAtt A.B` → `{ 'Fn::GetAtt': [A, B] }`,
 * `!Sub …` → `{ 'Fn::Sub': … }`, and so on; it also keeps every node's offset, so a finding's
 * line costs one walk down the document. YAML 1.2's core schema is used: `2012-10-17` stays a
 * string (YAML 1.1 would make it a date), as CloudFormation reads it.
 */
import { LineCounter, isMap, isSeq, parseDocument, type Document, type Node, type Tags } from 'yaml';

/** Raised when the input is not a CloudFormation template with a Resources section. */
export class TemplateFormatError extends Error {
  public constructor(message: string) {
    super(message);
    this.name = 'TemplateFormatError';
  }
}

/**
 * The short-form intrinsics CloudFormation's YAML accepts (`Fn::` + name, except `Ref` and
 * `Condition`), with AWS::LanguageExtensions' `Length`, `ToJsonString` and `ForEach`.
 */
const SHORT_FORMS = [
  'Ref',
  'Condition',
  'GetAtt',
  'Sub',
  'If',
  'Join',
  'Select',
  'Split',
  'FindInMap',
  'ImportValue',
  'Equals',
  'Not',
  'And',
  'Or',
  'Base64',
  'Cidr',
  'GetAZs',
  'Transform',
  'Length',
  'ToJsonString',
  'ForEach',
] as const;

/** The long form of one short-form intrinsic; `!GetAtt A.B.C` splits at the first dot (`A`, `B.C`). */
function longForm(name: (typeof SHORT_FORMS)[number], value: unknown): Record<string, unknown> {
  if (name === 'Ref' || name === 'Condition') return { [name]: value };
  if (name === 'GetAtt' && typeof value === 'string') {
    const dot = value.indexOf('.');
    return { 'Fn::GetAtt': dot < 0 ? [value] : [value.slice(0, dot), value.slice(dot + 1)] };
  }
  return { [`Fn::${name}`]: value };
}

/** One custom tag per short form and node kind (`!Sub x`, `!Sub [x, {…}]`, `!Base64 {…}`). */
const CFN_TAGS: Tags = SHORT_FORMS.flatMap((name) => [
  { tag: `!${name}`, resolve: (text: string) => longForm(name, text) },
  {
    tag: `!${name}`,
    collection: 'seq' as const,
    resolve: (node: { toJSON(): unknown }) => longForm(name, node.toJSON()),
  },
  {
    tag: `!${name}`,
    collection: 'map' as const,
    resolve: (node: { toJSON(): unknown }) => longForm(name, node.toJSON()),
  },
]) as Tags;

/** A template read from text, with the way back from a path in it to its line. */
export interface TemplateText {
  /** The template as JSON (intrinsics in their long form). */
  readonly template: unknown;
  /** The 1-based line of the key at `path` (e.g. `['Resources', 'Queue']`), when it can be found. */
  readonly lineOf: (path: readonly string[]) => number | undefined;
}

function lineFinder(document: Document | undefined, counter: LineCounter): TemplateText['lineOf'] {
  return (path) => {
    let node: unknown = document?.contents;
    let offset: number | undefined;
    for (const key of path) {
      // A list's item by its index (a serverless.yml's `events`): the line of the item itself.
      if (isSeq(node) && /^\d+$/.test(key)) {
        const item = node.items[Number(key)] as Node | undefined;
        offset = item?.range?.[0] ?? offset;
        node = item;
        continue;
      }
      if (!isMap(node)) return undefined;
      const pair = node.items.find((p) => (p.key as { value?: unknown } | null)?.value === key);
      if (pair === undefined) return undefined;
      offset = (pair.key as Node).range?.[0];
      node = pair.value;
    }
    return offset === undefined ? undefined : counter.linePos(offset).line;
  };
}

/**
 * Parses a template's text, JSON or YAML. `name` (a file name, or `stdin`) goes into the error.
 * Throws TemplateFormatError when the text is neither.
 */
export function parseTemplateText(text: string, name: string): TemplateText {
  const counter = new LineCounter();
  const looksJson = text.trimStart().startsWith('{');
  const document = parseDocument(text, { customTags: CFN_TAGS, lineCounter: counter, prettyErrors: false });
  if (looksJson) {
    // JSON.parse's own message is the one a JSON author recognizes; YAML only gives the lines.
    try {
      const template: unknown = JSON.parse(text);
      return { template, lineOf: lineFinder(document.errors.length === 0 ? document : undefined, counter) };
    } catch (error) {
      throw new TemplateFormatError(
        `${name} is not a JSON template: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
  const [first] = document.errors;
  if (first !== undefined) {
    throw new TemplateFormatError(
      `${name} is not a JSON or YAML template: ${first.message.split('\n')[0]} (line ${counter.linePos(first.pos[0]).line})`,
    );
  }
  return {
    template: document.toJS({ maxAliasCount: 1000 }) as unknown,
    lineOf: lineFinder(document, counter),
  };
}
