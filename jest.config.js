/** Jest projects: unit (fakes only), infra (CDK assertions + cfn-lint), integration (moto + Redis), platform (integration suites on a local platform), drills (runbooks on a local platform), scenario, chaos. */
/** test/integration suites that start a local platform of their own. */
const PLATFORM_SUITES = [
  'add-job-type',
  'backlog',
  'iam-mutation',
  'local-up',
  // audit-live, cli, cli-stream-replay and local-platform (*.suite.ts) on one platform.
  'shared-platform',
].map((name) => `test/integration/${name}.test.ts`);
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: { warnOnly: false } }];
const base = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': tsJest },
  moduleFileExtensions: ['ts', 'js', 'json'],
  // The examples import the public API as a user does (`tenang/<entry>`): here, its sources.
  moduleNameMapper: { '^tenang/(config|infra|runtime|audit|local|zod)$': '<rootDir>/lib/api/$1' },
  // Unbundled code reads the app's declaration from TENANG_PIPELINE (lib/config/source.ts).
  setupFiles: ['<rootDir>/test/helpers/reference-pipeline.ts'],
};

module.exports = {
  // 30 s, not jest's 5: npm test runs unit and integration suites at a low priority beside the
  // platform lanes (scripts/test-lanes.ts), where a test that starts a process can wait seconds
  // for the CPU; what a test checks never depends on its speed (the bench measures that). A
  // global option: jest ignores it in a project's config (`--showConfig` showed it there while
  // the global one stayed unset, and a unit test was cut at 5 s).
  testTimeout: 30_000,
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...base, displayName: 'infra', testMatch: ['<rootDir>/test/infra/**/*.test.ts'] },
    // npm pack, the tarball in an empty project and the examples synthesized outside the repo (~1 min).
    { ...base, displayName: 'package', testMatch: ['<rootDir>/test/package/**/*.test.ts'] },
    {
      ...base,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      testPathIgnorePatterns: PLATFORM_SUITES,
      globalSetup: '<rootDir>/test/helpers/global-setup.ts',
      globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
    },
    {
      // Integration suites that bring up a whole local platform each (~1–2 min): npm test runs
      // them in its platform lane, one at a time (scripts/test-lanes.ts).
      ...base,
      displayName: 'platform',
      testMatch: PLATFORM_SUITES.map((f) => `<rootDir>/${f}`),
      globalSetup: '<rootDir>/test/helpers/global-setup.ts',
      globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
    },
    {
      // Drills (P2): each runbook executed against its incident on a local platform of its own
      // (~4–5 min). In `npm test`; alone with `npm run test:drills`.
      ...base,
      displayName: 'drills',
      testMatch: ['<rootDir>/test/drills/**/*.test.ts'],
      globalSetup: '<rootDir>/test/helpers/global-setup.ts',
      globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
    },
    {
      // The smoke scenario on a whole local platform (~80 s). In `npm test` (it was flaky on stock
      // moto, writes lost around a cancelled transaction, which lib/local/moto_server.py closes);
      // alone with `npm run test:scenario`.
      ...base,
      displayName: 'scenario',
      testMatch: ['<rootDir>/test/scenario/**/*.test.ts'],
      globalSetup: '<rootDir>/test/helpers/global-setup.ts',
      globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
    },
    {
      // The chaos suite (harness/chaos): every fault configuration on three local platforms side by side
      // (~6–7 min). In `npm test`; alone with `npm run test:chaos`; CHAOS_SEED replays a failure.
      ...base,
      displayName: 'chaos',
      testMatch: ['<rootDir>/test/chaos/**/*.test.ts'],
      globalSetup: '<rootDir>/test/helpers/global-setup.ts',
      globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
    },
  ],
};
