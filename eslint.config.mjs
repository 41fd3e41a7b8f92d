// ESLint flat config: typescript-eslint's recommended type-aware rules, Prettier owns formatting.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

// Bundled code stays small: zod/mini through lib/config/zod.ts, no X-Ray SDK (see lib/adapters/powertools.ts).
const RUNTIME_RESTRICTED_PATHS = [
  {
    name: 'zod',
    message: 'Import * as z from lib/config/zod (zod/mini): classic zod adds ~450 KB to every function.',
  },
  { name: 'zod/mini', message: 'Import * as z from lib/config/zod, which sets the English messages.' },
  {
    name: '@aws-lambda-powertools/tracer',
    message: 'Tracer costs ~10 ms per cold start; see lib/adapters/powertools.ts.',
  },
];

export default tseslint.config(
  { ignores: ['node_modules/', 'cdk.out/', '.tenang/', '.venv/', 'reports/', 'bench/out/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', ignoreRestSiblings: true }],
      'no-restricted-imports': ['error', { paths: RUNTIME_RESTRICTED_PATHS }],
    },
  },
  {
    // The one place that imports zod itself.
    files: ['lib/config/zod.ts'],
    rules: { 'no-restricted-imports': 'off' },
  },
  {
    // lib/core is pure: no SDK, no environment, no Redis.
    files: ['lib/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: RUNTIME_RESTRICTED_PATHS,
          patterns: ['@aws-sdk/*', 'aws-cdk-lib*', 'ioredis', '@aws-lambda-powertools/*', '../adapters/*'],
        },
      ],
      'no-restricted-globals': ['error', { name: 'process', message: 'lib/core reads no environment.' }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: {
      globals: { require: 'readonly', module: 'writable', process: 'readonly', console: 'readonly' },
    },
  },
  prettier,
);
