/**
 * Metric math: tokenizes, parses, checks and evaluates the expressions of metric alarms, one
 * period at a time. + - * / FILL MAX IF and comparisons, the subset tenang's alarms use. Only forms
 * CloudWatch's metric math documentation states are accepted: MAX takes an array of time
 * series (a bare number inside it is not documented, so it is refused here rather than
 * forgiven), IF(condition, trueValue, falseValue) takes a comparison of series and scalars.
 */
import { AlarmDefinitionError } from './errors';

/** A parsed metric math expression. */
export type MathNode =
  | { readonly kind: 'number'; readonly value: number }
  | { readonly kind: 'id'; readonly name: string }
  | { readonly kind: 'negate'; readonly operand: MathNode }
  | {
      readonly kind: 'binary';
      readonly op: '+' | '-' | '*' | '/';
      readonly left: MathNode;
      readonly right: MathNode;
    }
  | {
      readonly kind: 'compare';
      readonly op: ComparisonOperator;
      readonly left: MathNode;
      readonly right: MathNode;
    }
  | { readonly kind: 'call'; readonly fn: 'FILL' | 'MAX' | 'IF'; readonly args: readonly MathNode[] }
  | { readonly kind: 'list'; readonly items: readonly MathNode[] };

/** Metric math's comparison operators (1 where true, 0 where false). */
type ComparisonOperator = '>' | '<' | '>=' | '<=' | '==' | '!=';
const MATH_COMPARISONS: ReadonlySet<string> = new Set(['>', '<', '>=', '<=', '==', '!=']);

const MATH_FUNCTIONS = new Set(['FILL', 'MAX', 'IF']);

function tokenizeMath(expression: string): string[] {
  const tokens: string[] = [];
  const pattern = /\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|[A-Za-z_][A-Za-z0-9_]*|[<>=!]=|[<>]|[-+*/()[\],])/y;
  let index = 0;
  while (index < expression.length) {
    if (/^\s*$/.test(expression.slice(index))) break;
    pattern.lastIndex = index;
    const m = pattern.exec(expression);
    if (m === null)
      throw new AlarmDefinitionError(
        `expression "${expression}": unexpected text at "${expression.slice(index).trimStart()}"`,
      );
    tokens.push(m[1] as string);
    index = pattern.lastIndex;
  }
  return tokens;
}

/** Parses a metric math expression; anything beyond + - * / FILL(x, n) MAX([...]) IF(c, a, b) fails loudly. */
export function parseMathExpression(expression: string): MathNode {
  const tokens = tokenizeMath(expression);
  let pos = 0;
  const fail = (what: string): never => {
    throw new AlarmDefinitionError(`expression "${expression}": ${what}`);
  };
  const peek = (): string | undefined => tokens[pos];
  const expect = (token: string): void => {
    if (tokens[pos] !== token)
      fail(`expected "${token}" at token ${pos + 1}, found "${tokens[pos] ?? 'end'}"`);
    pos += 1;
  };
  /** A comparison (only as IF's condition) or a sum. */
  const comparison = (): MathNode => {
    const left = sum();
    const op = peek();
    if (op === undefined || !MATH_COMPARISONS.has(op)) return left;
    pos += 1;
    return { kind: 'compare', op: op as ComparisonOperator, left, right: sum() };
  };
  const sum = (): MathNode => {
    let node = product();
    while (peek() === '+' || peek() === '-') {
      const op = tokens[pos++] as '+' | '-';
      node = { kind: 'binary', op, left: node, right: product() };
    }
    return node;
  };
  const product = (): MathNode => {
    let node = unary();
    while (peek() === '*' || peek() === '/') {
      const op = tokens[pos++] as '*' | '/';
      node = { kind: 'binary', op, left: node, right: unary() };
    }
    return node;
  };
  const unary = (): MathNode => {
    if (peek() === '-') {
      pos += 1;
      return { kind: 'negate', operand: unary() };
    }
    return primary();
  };
  const list = (close: string): MathNode[] => {
    const items: MathNode[] = [];
    if (peek() !== close) {
      items.push(comparison());
      while (peek() === ',') {
        pos += 1;
        items.push(comparison());
      }
    }
    expect(close);
    return items;
  };
  const primary = (): MathNode => {
    const token = tokens[pos++];
    if (token === undefined) return fail('unexpected end');
    if (token === '(') {
      const inner = sum();
      expect(')');
      return inner;
    }
    if (token === '[') return { kind: 'list', items: list(']') };
    if (/^\d/.test(token)) return { kind: 'number', value: Number(token) };
    if (/^[A-Za-z_]/.test(token)) {
      if (peek() !== '(') return { kind: 'id', name: token };
      if (!MATH_FUNCTIONS.has(token))
        return fail(`function ${token} is not supported locally (only FILL, MAX, IF)`);
      pos += 1;
      return { kind: 'call', fn: token as 'FILL' | 'MAX' | 'IF', args: list(')') };
    }
    return fail(`unexpected "${token}"`);
  };
  const root = sum();
  if (pos !== tokens.length) fail(`unexpected "${tokens[pos] ?? ''}" after the expression`);
  validateMath(root, expression);
  return root;
}

function validateMath(node: MathNode, expression: string): void {
  const fail = (what: string): never => {
    throw new AlarmDefinitionError(`expression "${expression}": ${what}`);
  };
  switch (node.kind) {
    case 'negate':
      return validateMath(node.operand, expression);
    case 'binary':
      if (node.left.kind === 'list' || node.right.kind === 'list')
        fail('a [list] can only be the argument of MAX');
      validateMath(node.left, expression);
      return validateMath(node.right, expression);
    case 'list':
      return fail('a [list] can only be the argument of MAX');
    case 'compare':
      return fail('a comparison can only be the condition of IF');
    case 'call': {
      if (node.fn === 'IF') {
        const [condition, whenTrue, whenFalse] = node.args;
        if (node.args.length !== 3 || condition?.kind !== 'compare')
          return fail('IF takes a comparison, a value if true and a value if false here');
        for (const side of [condition.left, condition.right, whenTrue, whenFalse])
          validateMath(side as MathNode, expression);
        return;
      }
      if (node.fn === 'FILL') {
        const [series, fill] = node.args;
        const isConstant =
          fill?.kind === 'number' || (fill?.kind === 'negate' && fill.operand.kind === 'number');
        if (node.args.length !== 2 || series === undefined || !isConstant)
          fail('FILL takes a series and a number here (REPEAT and LINEAR are not supported locally)');
        return validateMath(series as MathNode, expression);
      }
      const [items] = node.args;
      if (node.args.length !== 1 || items?.kind !== 'list')
        return fail(
          'MAX takes one [list] here (MAX of a single series is a scalar over the range: not supported locally)',
        );
      for (const item of items.items) {
        const isScalar = item.kind === 'number' || (item.kind === 'negate' && item.operand.kind === 'number');
        if (isScalar)
          fail(
            'a number inside MAX([...]) is not documented by CloudWatch (MAX takes an array of time series); write IF(condition, trueValue, falseValue) instead',
          );
        validateMath(item, expression);
      }
      return;
    }
    default:
      return;
  }
}

/** Identifiers (metric ids) an expression reads. */
export function mathReferences(node: MathNode): string[] {
  switch (node.kind) {
    case 'id':
      return [node.name];
    case 'negate':
      return mathReferences(node.operand);
    case 'binary':
    case 'compare':
      return [...mathReferences(node.left), ...mathReferences(node.right)];
    case 'call':
      return node.args.flatMap(mathReferences);
    case 'list':
      return node.items.flatMap(mathReferences);
    default:
      return [];
  }
}

/** One period's value of an expression; `lookup` gives each id's value (undefined = missing). */
export function evaluateMath(node: MathNode, lookup: (id: string) => number | undefined): number | undefined {
  switch (node.kind) {
    case 'number':
      return node.value;
    case 'id':
      return lookup(node.name);
    case 'negate': {
      const v = evaluateMath(node.operand, lookup);
      return v === undefined ? undefined : -v;
    }
    case 'binary': {
      const l = evaluateMath(node.left, lookup);
      const r = evaluateMath(node.right, lookup);
      if (l === undefined || r === undefined) return undefined;
      if (node.op === '+') return l + r;
      if (node.op === '-') return l - r;
      if (node.op === '*') return l * r;
      // Division by zero gives no datapoint.
      return r === 0 ? undefined : l / r;
    }
    case 'compare': {
      const l = evaluateMath(node.left, lookup);
      const r = evaluateMath(node.right, lookup);
      if (l === undefined || r === undefined) return undefined;
      const holds = {
        '>': l > r,
        '<': l < r,
        '>=': l >= r,
        '<=': l <= r,
        '==': l === r,
        '!=': l !== r,
      }[node.op];
      return holds ? 1 : 0;
    }
    case 'call': {
      if (node.fn === 'IF') {
        const [condition, whenTrue, whenFalse] = node.args as [MathNode, MathNode, MathNode];
        const c = evaluateMath(condition, lookup);
        if (c === undefined) return undefined;
        return evaluateMath(c !== 0 ? whenTrue : whenFalse, lookup);
      }
      if (node.fn === 'FILL') {
        const [series, fill] = node.args as [MathNode, MathNode];
        return evaluateMath(series, lookup) ?? evaluateMath(fill, lookup);
      }
      const items = (node.args[0] as Extract<MathNode, { kind: 'list' }>).items;
      const present = items.map((i) => evaluateMath(i, lookup)).filter((v): v is number => v !== undefined);
      return present.length === 0 ? undefined : Math.max(...present);
    }
    case 'list':
      throw new AlarmDefinitionError('a [list] can only be the argument of MAX');
  }
}
