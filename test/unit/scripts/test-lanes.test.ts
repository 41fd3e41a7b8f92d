import { mergeReports } from '../../../scripts/test-lanes';

describe('Function: mergeReports (npm test lanes)', () => {
  it('when both lanes report, counts are summed, results concatenated, and success needs both', () => {
    // Act
    const merged = mergeReports([
      {
        success: true,
        numPassedTests: 3,
        numFailedTests: 0,
        numRuntimeErrorTestSuites: 0,
        startTime: 20,
        testResults: ['a'],
      },
      {
        success: false,
        numPassedTests: 2,
        numFailedTests: 1,
        numRuntimeErrorTestSuites: 1,
        startTime: 10,
        testResults: ['b'],
      },
    ]);

    // Assess
    expect(merged).toMatchObject({
      success: false,
      numPassedTests: 5,
      numFailedTests: 1,
      numRuntimeErrorTestSuites: 1,
      startTime: 10,
      testResults: ['a', 'b'],
    });
  });

  it('when a lane wrote no report (it crashed), the merge fails and counts it as a suite that could not run', () => {
    // Act
    const merged = mergeReports([{ success: true, numPassedTests: 4, numFailedTests: 0 }, undefined]);

    // Assess
    expect(merged.success).toBe(false);
    expect(merged.numPassedTests).toBe(4);
    expect(merged.numRuntimeErrorTestSuites).toBe(1);
  });
});
