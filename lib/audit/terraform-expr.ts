/**
 * A small evaluator for the Terraform expressions worker-queue configurations use, over the
 * JSON `@cdktf/hcl2json` makes of HCL (an expression is a `"${…}"` string there): literals,
 * string templates, `var.x`, `local.x`, arithmetic, comparisons, conditionals, lists, objects,
 * `jsonencode`/`jsondecode` and a few other functions, and references to resources
 * (`aws_sqs_queue.q.arn`), which stay references (a rule follows them as it follows `Fn::GetAtt`).
 * What it cannot evaluate becomes an `Unresolved` value that says why, in Terraform's words.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** A value the configuration does not fix: a variable with no default, a data source, a remote module's output. */
export class Unresolved {
  public constructor(public readonly why: string) {}
}

/** An attribute of a resource of the configuration (`aws_sqs_queue.q.arn`): the address, without attribute. */
export class ResourceRef {
  public constructor(
    public readonly address: string,
    public readonly attribute: string,
  ) {}
}

/** A string template mixing text with references (becomes a `Fn::Sub`). */
export class Joined {
  public constructor(public readonly parts: readonly (string | ResourceRef)[]) {}
}

/** What an expression evaluates to. */
export type TfValue =
  | string
  | number
  | boolean
  | null
  | undefined
  | Unresolved
  | ResourceRef
  | Joined
  | readonly TfValue[]
  | { readonly [key: string]: TfValue };

/** What a name in an expression resolves to: given by the reader (terraform.ts) per module. */
export interface Scope {
  /** `var.<name>`: the value, or undefined when the variable is unknown (no default, not passed). */
  variable(name: string): TfValue;
  /** `local.<name>`. */
  local(name: string): TfValue;
  /** `<type>.<name>` of a managed resource of this module, or undefined when there is none. */
  resource(type: string, name: string, key: TfValue): string | undefined;
  /** `module.<name>.<output>`. */
  moduleOutput(name: string, output: string): TfValue;
  /** The module's directory (`path.module`), for `file()`. */
  readonly directory: string;
  /** `count.index`, `each.key`, `each.value` where the resource has them. */
  readonly iteration?: { readonly key?: TfValue; readonly value?: TfValue; readonly index?: number };
}

function isPlainObject(value: unknown): value is Record<string, TfValue> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof Unresolved) &&
    !(value instanceof ResourceRef) &&
    !(value instanceof Joined)
  );
}

/** The first unresolved value among some, when there is one. */
function firstUnresolved(values: readonly TfValue[]): Unresolved | undefined {
  return values.find((v): v is Unresolved => v instanceof Unresolved);
}

// ---------------------------------------------------------------------------------------------
// Tokens
// ---------------------------------------------------------------------------------------------

type Token =
  | { kind: 'number'; value: number }
  | { kind: 'string'; parts: TemplatePart[] }
  | { kind: 'ident'; value: string }
  | { kind: 'punct'; value: string };

type TemplatePart = { text: string } | { expr: string };

const PUNCTUATION = ['==', '!=', '<=', '>=', '&&', '||', '=>', '...', ...'+-*/%<>!?:.,()[]{}='];

/** Splits a template's text into literal text and `${…}` interpolations (`$${` is a literal `${`). */
export function templateParts(text: string): TemplatePart[] {
  const parts: TemplatePart[] = [];
  let literal = '';
  let i = 0;
  while (i < text.length) {
    if (text.startsWith('$${', i) || text.startsWith('%%{', i)) {
      literal += text.slice(i + 1, i + 3);
      i += 3;
      continue;
    }
    if (text.startsWith('${', i) || text.startsWith('%{', i)) {
      const end = matchingBrace(text, i + 1);
      if (literal !== '') parts.push({ text: literal });
      literal = '';
      // A directive (%{if}, %{for}) is kept as an expression that fails to parse: unresolved.
      parts.push({ expr: text[i] === '%' ? '%' : text.slice(i + 2, end) });
      i = end + 1;
      continue;
    }
    literal += text[i];
    i += 1;
  }
  if (literal !== '' || parts.length === 0) parts.push({ text: literal });
  return parts;
}

/** The index of the `}` closing the `{` at `open`, skipping nested braces and quoted strings. */
function matchingBrace(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i += 1) {
    const c = text[i];
    if (c === '"') {
      i = closingQuote(text, i);
      continue;
    }
    if (c === '{') depth += 1;
    if (c === '}') {
      depth -= 1;
      if (depth === 0) return i;
    }
  }
  throw new SyntaxError(`unclosed "\${" in ${text}`);
}

/** The index of the `"` closing the string opened at `open` (templates inside it skipped). */
function closingQuote(text: string, open: number): number {
  for (let i = open + 1; i < text.length; i += 1) {
    if (text[i] === '\\') i += 1;
    else if (text[i] === '$' && text[i + 1] === '{') i = matchingBrace(text, i + 1);
    else if (text[i] === '"') return i;
  }
  throw new SyntaxError(`unclosed string in ${text}`);
}

function unescape(text: string): string {
  return text.replace(/\\(.)/g, (_, c: string) => ({ n: '\n', t: '\t', r: '\r' })[c] ?? c);
}

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < source.length) {
    const c = source[i] ?? '';
    if (/\s/.test(c)) {
      i += 1;
      continue;
    }
    if (c === '#' || source.startsWith('//', i)) {
      while (i < source.length && source[i] !== '\n') i += 1;
      continue;
    }
    const number = /^\d+(\.\d+)?([eE][+-]?\d+)?/.exec(source.slice(i));
    if (number !== null) {
      tokens.push({ kind: 'number', value: Number(number[0]) });
      i += number[0].length;
      continue;
    }
    const ident = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(source.slice(i));
    if (ident !== null) {
      tokens.push({ kind: 'ident', value: ident[0] });
      i += ident[0].length;
      continue;
    }
    if (c === '"') {
      const end = closingQuote(source, i);
      const parts = templateParts(source.slice(i + 1, end)).map((p) =>
        'text' in p ? { text: unescape(p.text) } : p,
      );
      tokens.push({ kind: 'string', parts });
      i = end + 1;
      continue;
    }
    const punct = PUNCTUATION.find((p) => source.startsWith(p, i));
    if (punct === undefined) throw new SyntaxError(`unexpected "${c}" in ${source}`);
    tokens.push({ kind: 'punct', value: punct });
    i += punct.length;
  }
  return tokens;
}

// ---------------------------------------------------------------------------------------------
// Parser and evaluator (one pass: the expressions are small)
// ---------------------------------------------------------------------------------------------

/** A traversal not yet resolved: `var.x`, `aws_sqs_queue.q`, `module.m.out`, with its steps. */
interface Traversal {
  readonly root: string;
  readonly steps: (string | TfValue)[];
  readonly text: string;
}

class Evaluator {
  private position = 0;

  public constructor(
    private readonly tokens: Token[],
    private readonly scope: Scope,
    private readonly source: string,
  ) {}

  public run(): TfValue {
    const value = this.expression();
    if (this.position < this.tokens.length) throw new SyntaxError(`unexpected input in ${this.source}`);
    return value;
  }

  private peek(value?: string): boolean {
    const t = this.tokens[this.position];
    return (
      t !== undefined &&
      (value === undefined || ((t.kind === 'punct' || t.kind === 'ident') && t.value === value))
    );
  }

  private take(value: string): void {
    if (!this.peek(value)) throw new SyntaxError(`expected "${value}" in ${this.source}`);
    this.position += 1;
  }

  private accept(value: string): boolean {
    if (!this.peek(value)) return false;
    this.position += 1;
    return true;
  }

  private expression(): TfValue {
    const condition = this.binary(0);
    if (!this.accept('?')) return condition;
    const whenTrue = this.expression();
    this.take(':');
    const whenFalse = this.expression();
    if (typeof condition === 'boolean') return condition ? whenTrue : whenFalse;
    return new Unresolved(`the condition of "${this.source}" is not known before apply`);
  }

  private static readonly LEVELS: readonly (readonly string[])[] = [
    ['||'],
    ['&&'],
    ['==', '!='],
    ['<', '>', '<=', '>='],
    ['+', '-'],
    ['*', '/', '%'],
  ];

  private binary(level: number): TfValue {
    const operators = Evaluator.LEVELS[level];
    if (operators === undefined) return this.unary();
    let left = this.binary(level + 1);
    for (;;) {
      const operator = operators.find((o) => this.peek(o));
      if (operator === undefined) return left;
      this.position += 1;
      const right = this.binary(level + 1);
      left = this.apply(operator, left, right);
    }
  }

  private apply(operator: string, left: TfValue, right: TfValue): TfValue {
    const unknown = firstUnresolved([left, right]);
    if (operator === '==' || operator === '!=') {
      if (unknown !== undefined || left instanceof ResourceRef || right instanceof ResourceRef)
        return unknown ?? new Unresolved(`"${this.source}" compares values known only after apply`);
      const equal = JSON.stringify(left) === JSON.stringify(right);
      return operator === '==' ? equal : !equal;
    }
    if (unknown !== undefined) return unknown;
    if (operator === '&&' || operator === '||') {
      if (typeof left !== 'boolean' || typeof right !== 'boolean')
        return new Unresolved(`"${this.source}" is not a boolean the configuration fixes`);
      return operator === '&&' ? left && right : left || right;
    }
    const a = typeof left === 'string' ? Number(left) : left;
    const b = typeof right === 'string' ? Number(right) : right;
    if (typeof a !== 'number' || typeof b !== 'number' || Number.isNaN(a) || Number.isNaN(b))
      return new Unresolved(`"${this.source}" is not a number the configuration fixes`);
    switch (operator) {
      case '+':
        return a + b;
      case '-':
        return a - b;
      case '*':
        return a * b;
      case '/':
        return a / b;
      case '%':
        return a % b;
      case '<':
        return a < b;
      case '>':
        return a > b;
      case '<=':
        return a <= b;
      default:
        return a >= b;
    }
  }

  private unary(): TfValue {
    if (this.accept('!')) {
      const value = this.unary();
      return typeof value === 'boolean'
        ? !value
        : (firstUnresolved([value]) ?? new Unresolved(`"${this.source}" is not a boolean`));
    }
    if (this.accept('-')) {
      const value = this.unary();
      return typeof value === 'number'
        ? -value
        : (firstUnresolved([value]) ?? new Unresolved(`"${this.source}" is not a number`));
    }
    return this.postfix();
  }

  private postfix(): TfValue {
    const start = this.position;
    const primary = this.primary();
    if (!('traversal' in primary)) return this.index(primary.value);
    const steps: (string | TfValue)[] = [];
    for (;;) {
      if (this.peek('.') && this.tokens[this.position + 1]?.kind === 'ident') {
        this.position += 1;
        steps.push((this.tokens[this.position] as { value: string }).value);
        this.position += 1;
      } else if (this.peek('.') && this.tokens[this.position + 1]?.kind === 'number') {
        this.position += 1;
        steps.push([(this.tokens[this.position] as { value: number }).value]);
        this.position += 1;
      } else if (this.peek('[')) {
        this.position += 1;
        if (this.accept('*')) steps.push([new Unresolved('splat')]);
        else steps.push([this.expression()]);
        this.take(']');
      } else if (this.peek('.') && this.tokens[this.position + 1]?.kind === 'punct') {
        this.position += 2; // .*
        steps.push([new Unresolved('splat')]);
      } else break;
    }
    const text = this.tokens
      .slice(start, this.position)
      .map((t) => (t.kind === 'number' ? String(t.value) : t.kind === 'string' ? '"…"' : t.value))
      .join('')
      .replace(/\.(?=\[)/g, '');
    return this.resolve({ root: primary.traversal, steps, text });
  }

  /** Indexing and attribute access on a value already evaluated (`local.m["k"]` after resolution). */
  private index(value: TfValue): TfValue {
    let current = value;
    for (;;) {
      if (this.peek('[')) {
        this.position += 1;
        const key = this.expression();
        this.take(']');
        current = step(current, key);
      } else if (this.peek('.') && this.tokens[this.position + 1]?.kind === 'ident') {
        this.position += 1;
        current = step(current, (this.tokens[this.position] as { value: string }).value);
        this.position += 1;
      } else return current;
    }
  }

  private resolve(t: Traversal): TfValue {
    const { root, steps, text } = t;
    const names = steps.map((s) => (typeof s === 'string' ? s : undefined));
    const walk = (value: TfValue, from: number): TfValue =>
      steps
        .slice(from)
        .reduce<TfValue>((v, s) => step(v, typeof s === 'string' ? s : (s as TfValue[])[0]), value);
    switch (root) {
      case 'var': {
        const name = names[0];
        if (name === undefined) break;
        return walk(this.scope.variable(name), 1);
      }
      case 'local': {
        const name = names[0];
        if (name === undefined) break;
        return walk(this.scope.local(name), 1);
      }
      case 'module': {
        const [name, output] = names;
        if (name === undefined || output === undefined) break;
        return walk(this.scope.moduleOutput(name, output), 2);
      }
      case 'data':
        return new Unresolved(`${text} is read from the data source at plan time`);
      case 'path':
        return names[0] === 'module' || names[0] === 'root' || names[0] === 'cwd'
          ? this.scope.directory
          : new Unresolved(text);
      case 'terraform':
        return names[0] === 'workspace' ? 'default' : new Unresolved(text);
      case 'count':
        return this.scope.iteration?.index ?? new Unresolved(`${text} outside a counted resource`);
      case 'each': {
        const iteration = this.scope.iteration;
        const value =
          names[0] === 'key' ? iteration?.key : names[0] === 'value' ? iteration?.value : undefined;
        return value === undefined
          ? new Unresolved(`${text} of a for_each the configuration does not fix`)
          : walk(value, 1);
      }
      case 'true':
      case 'false':
        if (steps.length === 0) return root === 'true';
        break;
      case 'null':
        if (steps.length === 0) return null;
        break;
      default: {
        const name = names[0];
        if (name === undefined) break;
        // <type>.<name>[key].<attribute>: the key is the step after the name, when it is an index.
        const keyed = steps.length > 1 && typeof steps[1] !== 'string';
        const key = keyed ? (steps[1] as TfValue[])[0] : undefined;
        const address = this.scope.resource(root, name, key);
        if (address === undefined) return new Unresolved(`${text} is not a resource of the configuration`);
        const attribute = names[keyed ? 2 : 1];
        return new ResourceRef(address, attribute ?? 'id');
      }
    }
    return new Unresolved(`${text} cannot be evaluated`);
  }

  private primary(): { value: TfValue } | { traversal: string } {
    const token = this.tokens[this.position];
    if (token === undefined) throw new SyntaxError(`unexpected end of ${this.source}`);
    this.position += 1;
    if (token.kind === 'number') return { value: token.value };
    if (token.kind === 'string') return { value: evaluateTemplate(token.parts, this.scope) };
    if (token.kind === 'ident') {
      if (this.peek('(')) return { value: this.call(token.value) };
      if (token.value === 'true' || token.value === 'false') return { value: token.value === 'true' };
      if (token.value === 'null') return { value: null };
      return { traversal: token.value };
    }
    switch (token.value) {
      case '(': {
        const value = this.expression();
        this.take(')');
        return { value };
      }
      case '[':
        return { value: this.list() };
      case '{':
        return { value: this.object() };
      default:
        throw new SyntaxError(`unexpected "${token.value}" in ${this.source}`);
    }
  }

  private list(): TfValue {
    if (this.peek('for')) return this.skipFor(']');
    const items: TfValue[] = [];
    while (!this.accept(']')) {
      items.push(this.expression());
      if (!this.accept(',')) {
        this.take(']');
        break;
      }
    }
    return items;
  }

  private object(): TfValue {
    if (this.peek('for')) return this.skipFor('}');
    const object: Record<string, TfValue> = {};
    let unknownKey: Unresolved | undefined;
    while (!this.accept('}')) {
      const keyToken = this.tokens[this.position];
      let key: TfValue;
      if (
        keyToken?.kind === 'ident' &&
        (this.tokens[this.position + 1] as { value?: string } | undefined)?.value?.match(/^[=:]$/)
      ) {
        key = keyToken.value;
        this.position += 1;
      } else key = this.expression();
      if (!this.accept('=')) this.take(':');
      const value = this.expression();
      if (typeof key === 'string' || typeof key === 'number') object[String(key)] = value;
      else unknownKey = new Unresolved(`a key of an object in "${this.source}" is known only after apply`);
      this.accept(',');
    }
    return unknownKey ?? object;
  }

  /** A `for` expression: not evaluated (skipped to its closing bracket); unresolved. */
  private skipFor(close: string): TfValue {
    let depth = 1;
    while (depth > 0 && this.position < this.tokens.length) {
      const t = this.tokens[this.position];
      this.position += 1;
      if (t?.kind !== 'punct') continue;
      if ('[{('.includes(t.value)) depth += 1;
      if (']})'.includes(t.value)) depth -= 1;
    }
    void close;
    return new Unresolved(`a for expression in "${this.source}" is not evaluated`);
  }

  private call(name: string): TfValue {
    this.take('(');
    const args: TfValue[] = [];
    while (!this.accept(')')) {
      args.push(this.expression());
      this.accept('...');
      if (!this.accept(',')) {
        this.take(')');
        break;
      }
    }
    return callFunction(name, args, this.scope);
  }
}

/** One step of a traversal on a value (attribute or index). */
function step(value: TfValue, key: TfValue): TfValue {
  if (value instanceof Unresolved) return value;
  if (key instanceof Unresolved) return key;
  if (value instanceof ResourceRef)
    return typeof key === 'string' ? new ResourceRef(value.address, `${value.attribute}.${key}`) : value;
  if (Array.isArray(value) && typeof key === 'number') return value[key];
  if (isPlainObject(value) && (typeof key === 'string' || typeof key === 'number')) return value[String(key)];
  return new Unresolved(`${JSON.stringify(key)} of a value the configuration does not fix`);
}

/** The functions worker-queue configurations use; any other is unresolved, by its name. */
function callFunction(name: string, args: readonly TfValue[], scope: Scope): TfValue {
  const [first, second, third] = args;
  switch (name) {
    case 'jsonencode':
      // The JSON stays a value: a rule reads a policy document or a redrive policy as an object.
      return first;
    case 'jsondecode':
      if (typeof first === 'string') {
        try {
          return JSON.parse(first) as TfValue;
        } catch {
          return new Unresolved('jsondecode of text that is not JSON');
        }
      }
      return first;
    case 'tonumber':
      return typeof first === 'string' && first.trim() !== '' && !Number.isNaN(Number(first))
        ? Number(first)
        : first;
    case 'tostring':
      return typeof first === 'number' || typeof first === 'boolean' ? String(first) : first;
    case 'tobool':
      return first === 'true' ? true : first === 'false' ? false : first;
    case 'tolist':
    case 'toset':
    case 'tomap':
    case 'sensitive':
    case 'nonsensitive':
      return first;
    case 'lower':
      return typeof first === 'string' ? first.toLowerCase() : (firstUnresolved(args) ?? first);
    case 'upper':
      return typeof first === 'string' ? first.toUpperCase() : (firstUnresolved(args) ?? first);
    case 'try':
    case 'coalesce':
      return args.find((a) => !(a instanceof Unresolved) && a !== null && a !== '') ?? first;
    case 'lookup': {
      if (isPlainObject(first) && typeof second === 'string') return second in first ? first[second] : third;
      return firstUnresolved(args) ?? new Unresolved('lookup in a map the configuration does not fix');
    }
    case 'merge': {
      const unknown = firstUnresolved(args);
      if (unknown !== undefined) return unknown;
      return Object.assign({}, ...args.filter(isPlainObject)) as Record<string, TfValue>;
    }
    case 'concat': {
      const unknown = firstUnresolved(args);
      return unknown ?? args.flatMap((a) => (Array.isArray(a) ? (a as TfValue[]) : []));
    }
    case 'min':
    case 'max': {
      const numbers = args.filter((a): a is number => typeof a === 'number');
      if (numbers.length !== args.length)
        return firstUnresolved(args) ?? new Unresolved(`${name}() of values the configuration does not fix`);
      return name === 'min' ? Math.min(...numbers) : Math.max(...numbers);
    }
    case 'length':
      return Array.isArray(first)
        ? first.length
        : typeof first === 'string'
          ? first.length
          : isPlainObject(first)
            ? Object.keys(first).length
            : (firstUnresolved(args) ?? new Unresolved('length() of a value known after apply'));
    case 'format': {
      if (typeof first !== 'string' || firstUnresolved(args) !== undefined)
        return firstUnresolved(args) ?? new Unresolved('format() of a value known after apply');
      let n = 1;
      return first.replace(/%[sd]/g, () => String(args[n++] ?? ''));
    }
    case 'file': {
      if (typeof first !== 'string')
        return firstUnresolved(args) ?? new Unresolved('file() of a path known after apply');
      const file = path.isAbsolute(first) ? first : path.resolve(scope.directory, first);
      return fs.existsSync(file)
        ? fs.readFileSync(file, 'utf8')
        : new Unresolved(`file("${first}") is not in the input`);
    }
    default:
      return new Unresolved(`${name}() is not evaluated by the audit`);
  }
}

/** A template's parts evaluated: one interpolation alone is its value; text with references is `Joined`. */
function evaluateTemplate(parts: readonly TemplatePart[], scope: Scope): TfValue {
  const [only] = parts;
  if (parts.length === 1 && only !== undefined && 'expr' in only) return evaluateExpression(only.expr, scope);
  const out: (string | ResourceRef)[] = [];
  for (const part of parts) {
    if ('text' in part) {
      out.push(part.text);
      continue;
    }
    const value = evaluateExpression(part.expr, scope);
    if (value instanceof Unresolved) out.push(`\${${part.expr.trim()}}`);
    else if (value instanceof ResourceRef) out.push(value);
    else if (value instanceof Joined) out.push(...value.parts);
    else if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      out.push(String(value));
    else out.push(`\${${part.expr.trim()}}`);
  }
  const merged: (string | ResourceRef)[] = [];
  for (const p of out) {
    const last = merged[merged.length - 1];
    if (typeof p === 'string' && typeof last === 'string') merged[merged.length - 1] = last + p;
    else merged.push(p);
  }
  return merged.every((p) => typeof p === 'string') ? merged.join('') : new Joined(merged);
}

/** Evaluates one expression's source (what is inside `${…}`). */
export function evaluateExpression(source: string, scope: Scope): TfValue {
  try {
    return new Evaluator(tokenize(source), scope, source.trim()).run();
  } catch (error) {
    if (error instanceof SyntaxError)
      return new Unresolved(`"${source.trim()}" is not evaluated by the audit`);
    throw error;
  }
}

/**
 * Evaluates a value as hcl2json gives it: a string is a template (`"${var.x}"`, `"a-${local.y}"`),
 * arrays and objects are evaluated inside; other values are literals.
 */
export function evaluateValue(value: unknown, scope: Scope): TfValue {
  if (typeof value === 'string')
    return value.includes('${') || value.includes('%{') ? evaluateTemplateText(value, scope) : value;
  if (Array.isArray(value)) return value.map((v) => evaluateValue(v, scope));
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, evaluateValue(v, scope)]));
  return value as TfValue;
}

/** A string that may hold interpolations; a JSON text (a heredoc policy) becomes its document. */
function evaluateTemplateText(text: string, scope: Scope): TfValue {
  let parts: TemplatePart[];
  try {
    parts = templateParts(text);
  } catch {
    return new Unresolved(`"${text}" is not evaluated by the audit`);
  }
  const trimmed = text.trim();
  if (parts.length > 1 && (trimmed.startsWith('{') || trimmed.startsWith('['))) {
    // A JSON document with interpolations: each becomes a placeholder, the JSON is parsed, and the
    // placeholders are put back as values (a policy's Resource is then a reference to its queue).
    const values: TfValue[] = [];
    const json = parts
      .map((p) => {
        if ('text' in p) return p.text;
        values.push(evaluateExpression(p.expr, scope));
        return `@@tenang${values.length - 1}@@`;
      })
      .join('');
    try {
      return putBack(JSON.parse(json) as unknown, values);
    } catch {
      // not JSON: a plain template
    }
  }
  return evaluateTemplate(parts, scope);
}

function putBack(value: unknown, values: readonly TfValue[]): TfValue {
  if (typeof value === 'string') {
    const pieces = value.split(/(@@tenang\d+@@)/).filter((p) => p !== '');
    const resolved = pieces.map((p) => {
      const n = /^@@tenang(\d+)@@$/.exec(p)?.[1];
      return n === undefined ? p : values[Number(n)];
    });
    if (resolved.length === 1) return resolved[0];
    const parts: (string | ResourceRef)[] = resolved.flatMap((r) =>
      r instanceof ResourceRef
        ? [r]
        : r instanceof Joined
          ? [...r.parts]
          : [typeof r === 'string' || typeof r === 'number' ? String(r) : '${…}'],
    );
    return parts.every((p) => typeof p === 'string') ? parts.join('') : new Joined(parts);
  }
  if (Array.isArray(value)) return value.map((v) => putBack(v, values));
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, putBack(v, values)]));
  return value as TfValue;
}
