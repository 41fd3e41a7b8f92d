/**
 * Reads a CloudFormation template's text, JSON or YAML, into the JSON form the rules read, and
 * finds where a resource is in that text (the line a SARIF result points at).
 *
 * YAML is parsed by the `yaml` package (ISC, no dependencies) with CloudFormation's short-form
 * intrinsics as custom tags: `!Ref X` → `{ Ref: X }`, `!GetAtt A.B` → `{ 'Fn::GetAtt': [A, B] }`,
 * `!Sub …` → `{ 'Fn::Sub': … }`, and so on; it also keeps every node's offset, so a finding's
 * line costs one walk down the document.
 *
 * What the audit loads is what CloudFormation's own tools load: cfn-lint and the SAM CLI read
 * YAML with PyYAML, a YAML 1.1 reader. So scalars resolve as cfn-lint resolves them: YAML 1.1's
 * booleans as PyYAML knows them (`yes`/`no`/`on`/`off`, not `y`/`n`) and its octal `0755`, but
 * `2012-10-17` stays a string (cfn-lint drops YAML 1.1's timestamps, as CloudFormation reads a
 * policy version). A key given twice keeps its last value, as PyYAML (and so `sam deploy`) does.
 * PyYAML also accepts a multi-line flow collection whose closing `}]` sits at (or left of) its
 * key's indentation, which YAML 1.2 and the `yaml` package refuse; no option of the package
 * lifts that, so such a text is re-indented first (flowIndentFixed), each line kept where it is.
 */
import {
  LineCounter,
  Scalar,
  isMap,
  isSeq,
  parseDocument,
  type Document,
  type Node,
  type ScalarTag,
  type Tags,
} from 'yaml';

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

/** YAML 1.1 booleans as PyYAML resolves them (its resolver has no `y`/`n`, which the `yaml` package's 1.1 schema has). */
const PYYAML_BOOLEANS: ScalarTag[] = [
  {
    tag: 'tag:yaml.org,2002:bool',
    default: true,
    identify: (value) => value === true,
    test: /^(?:yes|Yes|YES|true|True|TRUE|on|On|ON)$/,
    resolve: () => new Scalar(true),
  },
  {
    tag: 'tag:yaml.org,2002:bool',
    default: true,
    identify: (value) => value === false,
    test: /^(?:no|No|NO|false|False|FALSE|off|Off|OFF)$/,
    resolve: () => new Scalar(false),
  },
];

/** The YAML 1.1 schema as cfn-lint reads it: PyYAML's booleans, no timestamps, CloudFormation's tags. */
function cfnTags(tags: Tags): Tags {
  const kept = tags.filter((t) => {
    const name = typeof t === 'string' ? t : t.tag;
    return name !== 'tag:yaml.org,2002:bool' && name !== 'tag:yaml.org,2002:timestamp';
  });
  return [...PYYAML_BOOLEANS, ...kept, ...CFN_TAGS];
}

/** The options every YAML parse of a template takes. */
function yamlOptions(counter: LineCounter): Parameters<typeof parseDocument>[1] {
  return {
    version: '1.1',
    customTags: cfnTags,
    merge: true,
    uniqueKeys: false,
    lineCounter: counter,
    prettyErrors: false,
  };
}

/** Where a flow collection begins at block level: after indentation, `- `, `key: `, `? `, tags and anchors. */
const BLOCK_VALUE_START =
  /^\s*(?:-\s+)*(?:\?\s+)?(?:(?:"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#'"[\]{},][^#]*?)\s*:\s+)?(?:[!&][^\s[\]{},]*\s+)*$/;

/**
 * The text with every line inside a multi-line flow collection (`[`, `{`) indented past the line
 * that opens it, as PyYAML reads it; lines are only moved right, never joined or split, so every
 * line keeps its number. Quoted scalars and comments are skipped; a bracket inside a plain block
 * scalar (`arn:aws:x[1]`) opens nothing.
 */
export function flowIndentFixed(text: string): string {
  const lines = text.split('\n');
  let depth = 0;
  let required = 0;
  let quote: '"' | "'" | undefined;
  // A block scalar (`|`, `>`) is text to its last line indented past its key: never re-indented.
  let blockScalar: number | undefined;
  for (let n = 0; n < lines.length; n++) {
    let line = lines[n] ?? '';
    const indent = line.length - line.trimStart().length;
    if (blockScalar !== undefined) {
      if (line.trim() === '' || indent > blockScalar) continue;
      blockScalar = undefined;
    }
    if (depth > 0 && line.trim() !== '' && indent < required) {
      line = ' '.repeat(required - indent) + line;
      lines[n] = line;
    }
    for (let i = 0; i < line.length; i++) {
      const c = line[i];
      if (quote !== undefined) {
        if (quote === '"' && c === '\\') i++;
        else if (c === quote) {
          if (quote === "'" && line[i + 1] === "'") i++;
          else quote = undefined;
        }
        continue;
      }
      if (c === '#' && (i === 0 || /\s/.test(line[i - 1] ?? ''))) break;
      if (c === '"' || c === "'") {
        // A quote opens a scalar only where one starts (`don't` is plain text).
        if (i === 0 || /[\s[{,:]/.test(line[i - 1] ?? '')) quote = c;
        continue;
      }
      if (c === '[' || c === '{') {
        if (depth === 0) {
          if (!BLOCK_VALUE_START.test(line.slice(0, i))) continue;
          const content = /^\s*(?:-\s+)*/.exec(line)?.[0].length ?? 0;
          required = content + 1;
        }
        depth++;
      } else if ((c === ']' || c === '}') && depth > 0) depth--;
    }
    if (depth === 0 && quote === undefined && /(?:^|[\s:])[|>][-+0-9]*\s*(?:#.*)?$/.test(line))
      blockScalar = indent;
  }
  return lines.join('\n');
}

/** Whether a parse failed only where PyYAML is lenient: a flow collection indented too little. */
function flowIndentError(document: Document): boolean {
  return document.errors.some((e) => e.code === 'BAD_INDENT' && /^Flow (map|sequence)/.test(e.message));
}

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
  const document = parseDocument(text, yamlOptions(counter));
  if (!looksJson && flowIndentError(document)) {
    // Re-indented, the text keeps its lines: findings still point at the user's.
    const again = new LineCounter();
    const fixed = parseDocument(flowIndentFixed(text), yamlOptions(again));
    if (fixed.errors.length === 0)
      return { template: fixed.toJS({ maxAliasCount: 1000 }) as unknown, lineOf: lineFinder(fixed, again) };
  }
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
