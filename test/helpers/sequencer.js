/**
 * The order jest hands test files to its workers: the known long ones first, so that in the
 * platform lane (two workers, scripts/test-lanes.ts) the longest suite never starts last and
 * leaves one worker idle while it runs. Without this, a checkout with no timing cache (CI's) gets
 * jest's fallback order, largest file first, which put the chaos suite (a short file, the longest
 * run) at the end. Files not listed keep jest's own order after the listed ones.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- jest loads its sequencer untransformed, as CommonJS
const Sequencer = require('@jest/test-sequencer').default;

/** Path endings, longest run first (seconds measured on the 2-core CI machine, alone). */
const LONGEST_FIRST = [
  '/test/chaos/chaos.test.ts', // ~340 s: every fault configuration on three platforms
  '/test/drills/drills.test.ts', // ~270 s: every runbook against its incident
  '/test/integration/shared-platform.test.ts', // the four suites that share one platform
  '/test/integration/add-job-type.test.ts',
  '/test/integration/backlog.test.ts',
  '/test/scenario/unplanned-kill-scenario.test.ts',
  '/test/scenario/smoke-scenario.test.ts',
  '/test/scenario/own-app-scenario.test.ts',
  '/test/integration/iam-mutation.test.ts',
  '/test/integration/local-up.test.ts',
  '/test/package/init-app.test.ts',
  '/test/package/package.test.ts',
  '/test/package/runbooks-app.test.ts',
];

function rank(test) {
  const at = LONGEST_FIRST.findIndex((ending) => test.path.replace(/\\/g, '/').endsWith(ending));
  return at === -1 ? LONGEST_FIRST.length : at;
}

class LongestFirstSequencer extends Sequencer {
  sort(tests) {
    const order = super.sort(tests);
    return order
      .map((test, i) => ({ test, i }))
      .sort((a, b) => rank(a.test) - rank(b.test) || a.i - b.i)
      .map(({ test }) => test);
  }
}

module.exports = LongestFirstSequencer;
