import { AlarmDefinitionError } from '../../../../lib/local/alarms/errors';
import { comparison, decideAlarmState } from '../../../../lib/local/alarms/thresholds';

describe('Function: decideAlarmState', () => {
  const rule = {
    threshold: 10,
    comparisonOperator: 'GreaterThanOrEqualToThreshold',
    evaluationPeriods: 3,
    datapointsToAlarm: 2,
  };

  it.each([
    // points, treatMissingData, current, expected
    [[12, 1, 15], 'notBreaching', 'OK', 'ALARM'],
    [[12, 1, 2], 'notBreaching', 'ALARM', 'OK'],
    [[12, undefined, undefined], 'notBreaching', 'OK', 'OK'],
    [[12, undefined, undefined], 'breaching', 'OK', 'ALARM'],
    [[undefined, undefined, undefined], 'notBreaching', 'ALARM', 'OK'],
    [[undefined, undefined, undefined], 'breaching', 'OK', 'ALARM'],
    [[undefined, undefined, undefined], 'missing', 'OK', 'INSUFFICIENT_DATA'],
    [[undefined, undefined, undefined], 'ignore', 'ALARM', 'ALARM'],
    [[10, 10, undefined], 'missing', 'OK', 'ALARM'],
  ] as const)(
    'when the datapoints are %j with %s missing data (was %s), it decides %s',
    (points, treat, current, expected) => {
      expect(decideAlarmState(points, { ...rule, treatMissingData: treat }, current).state).toBe(expected);
    },
  );

  it('when the operator is not a static comparison, it fails loudly', () => {
    expect(() =>
      decideAlarmState(
        [1],
        { ...rule, comparisonOperator: 'LessThanLowerOrGreaterThanUpperThreshold' },
        'OK',
      ),
    ).toThrow(AlarmDefinitionError);
  });
});

describe('Function: comparison', () => {
  it.each([
    ['GreaterThanOrEqualToThreshold', [true, true, false], 'greater than or equal to'],
    ['GreaterThanThreshold', [true, false, false], 'greater than'],
    ['LessThanThreshold', [false, false, true], 'less than'],
    ['LessThanOrEqualToThreshold', [false, true, true], 'less than or equal to'],
  ] as const)('when the operator is %s, it tests 2, 1 and 0 against 1 as %j', (operator, expected, text) => {
    const c = comparison(operator);
    expect([2, 1, 0].map((v) => c.test(v, 1))).toEqual(expected);
    expect(c.text).toBe(text);
  });

  it('when the operator is an anomaly detection band, it fails loudly', () => {
    expect(() => comparison('LessThanLowerOrGreaterThanUpperThreshold')).toThrow(
      'comparison operator LessThanLowerOrGreaterThanUpperThreshold is not supported locally',
    );
  });
});
