import { RETRY_RATE_EXPRESSION } from '../../../../lib/infra/observability';
import { AlarmDefinitionError } from '../../../../lib/local/alarms/errors';
import { evaluateMath, mathReferences, parseMathExpression } from '../../../../lib/local/alarms/metric-math';

const RETRY_RATE = RETRY_RATE_EXPRESSION;

describe('Function: parseMathExpression', () => {
  const values = (r?: number, s?: number, p?: number) => (id: string) => ({ r, s, p })[id];

  it("when given tenang's retry rate, it computes retries as a percentage of attempts, 0 without attempts", () => {
    // Prepare
    const expr = parseMathExpression(RETRY_RATE);

    // Act + Assess
    expect(evaluateMath(expr, values(2, 8, 0))).toBe(20);
    expect(evaluateMath(expr, values(1, undefined, 1))).toBe(50);
    expect(evaluateMath(expr, values())).toBe(0);
  });

  it('when IF compares, it picks the value of the branch the comparison chooses per datapoint', () => {
    const pick = (op: string, a: number, b: number): number | undefined =>
      evaluateMath(parseMathExpression(`IF(a ${op} b, 1, 2)`), (id) => ({ a, b })[id]);
    expect([pick('>', 2, 1), pick('>', 1, 1), pick('>=', 1, 1), pick('<', 0, 1), pick('<=', 2, 1)]).toEqual([
      1, 2, 1, 1, 2,
    ]);
    expect([pick('==', 1, 1), pick('!=', 1, 1)]).toEqual([1, 2]);
    expect(evaluateMath(parseMathExpression('IF(a > 0, a, 0)'), () => undefined)).toBeUndefined();
  });

  it('when operators mix, * and / bind tighter than + and -, and unary minus applies', () => {
    const expr = parseMathExpression('-a + b * 2 - (c - 1) / 2');
    expect(evaluateMath(expr, (id) => ({ a: 1, b: 3, c: 5 })[id])).toBe(3);
  });

  it('when an operand is missing or a divisor is zero, there is no datapoint', () => {
    expect(evaluateMath(parseMathExpression('a + b'), (id) => ({ a: 1 })[id])).toBeUndefined();
    expect(evaluateMath(parseMathExpression('a / b'), (id) => ({ a: 1, b: 0 })[id])).toBeUndefined();
  });

  it.each([
    ['RATE(m1)', /function RATE is not supported locally/],
    ['FILL(m1, REPEAT)', /REPEAT and LINEAR are not supported locally/],
    ['MAX(m1)', /MAX takes one \[list\]/],
    // The retry rate as it was written before: CloudWatch documents MAX over an array of time series only.
    ['100 * FILL(r, 0) / MAX([FILL(r, 0) + FILL(s, 0) + FILL(p, 0), 1])', /a number inside MAX/],
    ['IF(m1, 1, 0)', /IF takes a comparison/],
    ['IF(m1 > 0, 1)', /IF takes a comparison/],
    ['m1 > 0', /unexpected ">" after the expression/],
    ['m1 + [m2]', /\[list\] can only be the argument of MAX/],
    ['m1 % 2', /unexpected text at "% 2"/],
    ['(m1 + 2', /expected "\)"/],
  ])('when the expression is %s, it fails loudly', (expression, message) => {
    expect(() => parseMathExpression(expression)).toThrow(AlarmDefinitionError);
    expect(() => parseMathExpression(expression)).toThrow(message);
  });
});

describe('Function: mathReferences', () => {
  it('when the expression reads ids in functions, lists and comparisons, it gives each in order of appearance', () => {
    // Prepare
    const expr = parseMathExpression('IF(a > 1, FILL(b, 0), MAX([c, -d * 2])) + e');

    // Act + Assess
    expect(mathReferences(expr)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it("when given tenang's retry rate, it gives only the ids of its three metrics", () => {
    expect(new Set(mathReferences(parseMathExpression(RETRY_RATE)))).toEqual(new Set(['r', 's', 'p']));
  });

  it('when the expression is a number, it gives none', () => {
    expect(mathReferences(parseMathExpression('42'))).toEqual([]);
  });
});
