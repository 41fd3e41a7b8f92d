import { AlarmDefinitionError, AlarmEvaluationError } from '../../../../lib/local/alarms/errors';

describe('Class: AlarmEvaluationError', () => {
  it('when created from problems, it keeps them and lists each in its message', () => {
    // Act
    const error = new AlarmEvaluationError(['a: broken', 'b: gone']);

    // Assess
    expect(error.name).toBe('AlarmEvaluationError');
    expect(error.problems).toEqual(['a: broken', 'b: gone']);
    expect(error.message).toBe('alarm evaluation: 2 problem(s):\n- a: broken\n- b: gone');
  });
});

describe('Class: AlarmDefinitionError', () => {
  it('when created with a cause, it keeps it', () => {
    const cause = new Error('inner');
    const error = new AlarmDefinitionError('outer', { cause });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('AlarmDefinitionError');
    expect(error.cause).toBe(cause);
  });
});
