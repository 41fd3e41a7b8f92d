import { PipelineConfigError } from '../../../lib/config';

describe('Class: PipelineConfigError', () => {
  it('when given one problem, it names itself and says "1 problem" in the singular', () => {
    // Prepare
    const problems = ['stage.name: must be lowercase'];

    // Act
    const error = new PipelineConfigError(problems);

    // Assess
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('PipelineConfigError');
    expect(error.problems).toEqual(problems);
    expect(error.message).toBe('Invalid pipeline config (1 problem):\n  - stage.name: must be lowercase');
  });

  it('when given several problems, it lists each on its own line', () => {
    // Prepare
    const problems = ['stage.name: must be lowercase', 'jobTypes: declare at least one job type'];

    // Act
    const error = new PipelineConfigError(problems);

    // Assess
    expect(error.message).toBe(
      'Invalid pipeline config (2 problems):\n' +
        '  - stage.name: must be lowercase\n' +
        '  - jobTypes: declare at least one job type',
    );
  });
});
