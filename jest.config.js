/** Jest projects: unit (fakes only), infra (CDK assertions + cfn-lint), integration (moto + Redis). */
const tsJest = ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: { warnOnly: false } }];
const base = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': tsJest },
  moduleFileExtensions: ['ts', 'js', 'json'],
};

module.exports = {
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...base, displayName: 'infra', testMatch: ['<rootDir>/test/infra/**/*.test.ts'] },
    {
      ...base,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/helpers/global-setup.ts',
      globalTeardown: '<rootDir>/test/helpers/global-teardown.ts',
    },
  ],
};
