/**
 * Composite alarm rules (AlarmRule): parses ALARM/OK/INSUFFICIENT_DATA, TRUE, FALSE, NOT, AND, OR,
 * lists the alarms a rule reads, and tells whether it holds given their states.
 */
import { AlarmDefinitionError } from './errors';
import type { AlarmState } from './state';

/** A parsed composite alarm rule. */
export type RuleNode =
  | { readonly kind: 'state'; readonly state: AlarmState; readonly alarm: string }
  | { readonly kind: 'not'; readonly operand: RuleNode }
  | { readonly kind: 'and' | 'or'; readonly operands: readonly RuleNode[] }
  | { readonly kind: 'constant'; readonly value: boolean };

/** An alarm's name from its ARN (`arn:aws:cloudwatch:region:account:alarm:NAME`), or the name itself. */
export function alarmNameOf(reference: string): string {
  const m = /^arn:[^:]+:cloudwatch:[^:]*:[^:]*:alarm:(.+)$/.exec(reference);
  return m === null ? reference : (m[1] as string);
}

/**
 * Parses an AlarmRule: ALARM(x), OK(x), INSUFFICIENT_DATA(x) with x an alarm name or ARN (quoted
 * or not), TRUE, FALSE, NOT, AND, OR (AND binds tighter) and parentheses.
 */
export function parseAlarmRule(rule: string): RuleNode {
  const tokens: string[] = [];
  const pattern = /\s*("(?:[^"\\]|\\.)*"|[()]|[^\s()"]+)/y;
  let index = 0;
  while (index < rule.length) {
    if (/^\s*$/.test(rule.slice(index))) break;
    pattern.lastIndex = index;
    const m = pattern.exec(rule);
    if (m === null)
      throw new AlarmDefinitionError(
        `alarm rule "${rule}": unexpected text at "${rule.slice(index).trimStart()}"`,
      );
    tokens.push(m[1] as string);
    index = pattern.lastIndex;
  }
  let pos = 0;
  const fail = (what: string): never => {
    throw new AlarmDefinitionError(`alarm rule "${rule}": ${what}`);
  };
  const expect = (token: string): void => {
    if (tokens[pos] !== token) fail(`expected "${token}", found "${tokens[pos] ?? 'end'}"`);
    pos += 1;
  };
  const or = (): RuleNode => {
    const operands = [and()];
    while (tokens[pos] === 'OR') {
      pos += 1;
      operands.push(and());
    }
    return operands.length === 1 ? (operands[0] as RuleNode) : { kind: 'or', operands };
  };
  const and = (): RuleNode => {
    const operands = [not()];
    while (tokens[pos] === 'AND') {
      pos += 1;
      operands.push(not());
    }
    return operands.length === 1 ? (operands[0] as RuleNode) : { kind: 'and', operands };
  };
  const not = (): RuleNode => {
    if (tokens[pos] === 'NOT') {
      pos += 1;
      return { kind: 'not', operand: not() };
    }
    return primary();
  };
  const primary = (): RuleNode => {
    const token = tokens[pos++];
    if (token === '(') {
      const inner = or();
      expect(')');
      return inner;
    }
    if (token === 'TRUE' || token === 'FALSE') return { kind: 'constant', value: token === 'TRUE' };
    if (token === 'ALARM' || token === 'OK' || token === 'INSUFFICIENT_DATA') {
      expect('(');
      const arg = tokens[pos++];
      if (arg === undefined || arg === ')') return fail(`${token}() needs an alarm name or ARN`);
      expect(')');
      const name = arg.startsWith('"') ? (JSON.parse(arg) as string) : arg;
      return { kind: 'state', state: token, alarm: alarmNameOf(name) };
    }
    return fail(`unexpected "${token ?? 'end'}"`);
  };
  const root = or();
  if (pos !== tokens.length) fail(`unexpected "${tokens[pos] ?? ''}"`);
  return root;
}

/** Names of the alarms a rule reads. */
export function ruleReferences(node: RuleNode): string[] {
  switch (node.kind) {
    case 'state':
      return [node.alarm];
    case 'not':
      return ruleReferences(node.operand);
    case 'and':
    case 'or':
      return node.operands.flatMap(ruleReferences);
    default:
      return [];
  }
}

/** Whether a rule holds, given every referenced alarm's state. */
export function evaluateRule(node: RuleNode, stateOf: (alarm: string) => AlarmState): boolean {
  switch (node.kind) {
    case 'state':
      return stateOf(node.alarm) === node.state;
    case 'not':
      return !evaluateRule(node.operand, stateOf);
    case 'and':
      return node.operands.every((o) => evaluateRule(o, stateOf));
    case 'or':
      return node.operands.some((o) => evaluateRule(o, stateOf));
    case 'constant':
      return node.value;
  }
}
