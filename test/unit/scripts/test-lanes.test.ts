import { FIRST_PLATFORM_LANE_FILES, LANES, laneArgs, mergeReports } from '../../../scripts/test-lanes';

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

describe('Lanes of npm test', () => {
  const platformLanes = LANES.filter((l) => l.projects.includes('chaos'));
  const ignores = (lane: (typeof LANES)[number], file: string): boolean =>
    (lane.ignore ?? []).some((p) => new RegExp(p).test(file));
  const PLATFORM_FILES = [
    ...FIRST_PLATFORM_LANE_FILES,
    'test/integration/add-job-type',
    'test/integration/iam-mutation',
    'test/integration/backlog',
    'test/integration/shared-platform',
    'test/scenario/unplanned-kill-scenario',
    'test/scenario/own-app-scenario',
    'test/scenario/a-new-scenario',
  ].map((f) => `/work/tenang/${f}.test.ts`);

  it('when split in two platform lanes, every platform suite (a new one too) runs in exactly one of them', () => {
    // Assess
    expect(platformLanes).toHaveLength(2);
    for (const file of PLATFORM_FILES)
      expect({ file, lanes: platformLanes.filter((l) => !ignores(l, file)).map((l) => l.name) }).toEqual({
        file,
        lanes: [expect.any(String)],
      });
  });

  it('when a lane ignores paths, its jest arguments carry each pattern as one option, so a path filter after them stays a filter', () => {
    // Act
    const args = laneArgs(platformLanes[0]!, ['test/drills', '--ci'], '/tmp/out.json');

    // Assess
    const ignoreArgs = args.filter((a) => a.startsWith('--testPathIgnorePatterns'));
    expect(ignoreArgs).toHaveLength(1);
    expect(ignoreArgs[0]).toMatch(/^--testPathIgnorePatterns=\^/);
    expect(args.slice(-3)).toEqual(['test/drills', '--ci', '--outputFile=/tmp/out.json']);
    expect(args).toContain('--maxWorkers=1');
  });
});
