import {
  alarmNameOf,
  evaluateRule,
  parseAlarmRule,
  ruleReferences,
} from '../../../../lib/local/alarms/composite-rules';
import { AlarmDefinitionError } from '../../../../lib/local/alarms/errors';
import { ARN } from './fixtures';

describe('Function: parseAlarmRule', () => {
  it('when given the rule CDK synthesizes, it reads every ARN as an alarm name', () => {
    // Prepare
    const rule = `(ALARM("${ARN('a')}") OR ALARM("${ARN('b')}") OR ALARM("${ARN('c')}"))`;

    // Act
    const node = parseAlarmRule(rule);

    // Assess
    expect(node).toEqual({
      kind: 'or',
      operands: ['a', 'b', 'c'].map((alarm) => ({ kind: 'state', state: 'ALARM', alarm })),
    });
  });

  it('when AND, OR and NOT mix, NOT binds tightest, then AND, then OR, and parentheses group', () => {
    // Prepare
    const node = parseAlarmRule('ALARM(a) OR ALARM(b) AND NOT OK("c") OR (INSUFFICIENT_DATA(d) AND TRUE)');

    // Assess
    expect(node).toEqual({
      kind: 'or',
      operands: [
        { kind: 'state', state: 'ALARM', alarm: 'a' },
        {
          kind: 'and',
          operands: [
            { kind: 'state', state: 'ALARM', alarm: 'b' },
            { kind: 'not', operand: { kind: 'state', state: 'OK', alarm: 'c' } },
          ],
        },
        {
          kind: 'and',
          operands: [
            { kind: 'state', state: 'INSUFFICIENT_DATA', alarm: 'd' },
            { kind: 'constant', value: true },
          ],
        },
      ],
    });
  });

  it.each(['ALARM()', 'ALARM(a', 'alarm(a)', 'ALARM(a) AND', 'ALARM(a) ALARM(b)'])(
    'when the rule is %s, it fails loudly',
    (rule) => {
      expect(() => parseAlarmRule(rule)).toThrow(AlarmDefinitionError);
    },
  );
});

describe('Function: alarmNameOf', () => {
  it('when given an alarm ARN, it gives the name; when given a name, the name itself', () => {
    expect(alarmNameOf(ARN('tenang-dev-retried'))).toBe('tenang-dev-retried');
    expect(alarmNameOf('tenang-dev-retried')).toBe('tenang-dev-retried');
    expect(alarmNameOf('arn:aws:sns:us-east-1:123456789012:alarms')).toBe(
      'arn:aws:sns:us-east-1:123456789012:alarms',
    );
  });
});

describe('Function: ruleReferences', () => {
  it('when a rule nests NOT, AND and OR, it gives every alarm it reads, in order', () => {
    const node = parseAlarmRule('ALARM(a) OR (NOT OK(b) AND INSUFFICIENT_DATA(a)) OR TRUE');
    expect(ruleReferences(node)).toEqual(['a', 'b', 'a']);
  });

  it('when a rule is a constant, it gives none', () => {
    expect(ruleReferences(parseAlarmRule('FALSE'))).toEqual([]);
  });
});

describe('Function: evaluateRule', () => {
  const states = { a: 'ALARM', b: 'OK', c: 'INSUFFICIENT_DATA' } as const;
  const holds = (rule: string): boolean =>
    evaluateRule(parseAlarmRule(rule), (alarm) => states[alarm as keyof typeof states]);

  it.each([
    ['ALARM(a)', true],
    ['ALARM(b)', false],
    ['OK(b)', true],
    ['INSUFFICIENT_DATA(c)', true],
    ['NOT ALARM(a)', false],
    ['ALARM(a) AND OK(b)', true],
    ['ALARM(a) AND ALARM(b)', false],
    ['ALARM(b) OR ALARM(c)', false],
    ['ALARM(b) OR INSUFFICIENT_DATA(c)', true],
    ['ALARM(b) OR ALARM(a) AND OK(b)', true],
    ['(ALARM(b) OR ALARM(a)) AND FALSE', false],
    ['TRUE', true],
  ])('when the rule is %s, it gives %s', (rule, expected) => {
    expect(holds(rule)).toBe(expected);
  });
});
