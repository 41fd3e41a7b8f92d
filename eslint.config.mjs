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

// Layering: bin/ sits on top; under it lib/drills (exercises on the emulator), then lib/ops and
// lib/local; then lib/infra and lib/audit; then lib/adapters and lib/config; lib/core at the bottom.
// examples/reference is the reference app, its domain included (examples/reference/domain), built
// on the kit's entry points: nothing of the kit (lib/, lambdas/, bin/) imports it.
// What ships is lib/, lambdas/ and bin/tenang.ts; harness/ (chaos, fakes, call counting and
// capacity, SDK fault injection, the Powertools baseline, the stampede measurement) is what only
// this repository's tests and benchmarks use: nothing that ships imports it, and it never ships.
// Import strings are relative, so each rule matches the directory after any number of `../`. A
// rule blocks static imports (no-restricted-imports) and dynamic ones (no-restricted-syntax on
// ImportExpression) alike. test/unit/layering.test.ts keeps these rules from vanishing.
const layerRule = (dirs, message) => ({ regex: `^(\\.\\./)+(${dirs.join('|')})(/|$)`, message });
const LAYER = {
  bin: layerRule(['bin'], 'lib/ never imports bin/: the entry points sit on top (an import cycle).'),
  test: layerRule(['test'], 'No test helpers outside test/: move what is shared into lib/.'),
  harness: layerRule(
    ['harness'],
    'harness/ is test and benchmark code: what ships (lib/, lambdas/, bin/) never imports it.',
  ),
  local: layerRule(['local'], 'lib/local is the emulator: operator code does not depend on it.'),
  ops: layerRule(['ops'], 'lib/ops (operator code) sits above the CDK constructs and the audit.'),
  upper: layerRule(
    ['infra', 'ops', 'local'],
    'lib/adapters sits below the CDK constructs, the operator code and the emulator.',
  ),
  core: layerRule(['adapters', 'infra', 'ops', 'local'], 'lib/core is pure: it imports no layer above it.'),
};
/** The reference app (examples/reference and its domain), from inside lib/ or from lambdas/. */
const REFERENCE_MESSAGE =
  'examples/reference is the reference app, its domain included: the kit holds none (move what is generic into lib/, or pass it in).';
const REFERENCE = [layerRule(['examples'], REFERENCE_MESSAGE)];
const REFERENCE_FROM_LAMBDAS = layerRule(['examples'], REFERENCE_MESSAGE);
/** No SDK, no environment, no Redis in lib/core. */
const CORE_PACKAGES = {
  group: ['@aws-sdk/*', 'aws-cdk-lib*', 'ioredis', '@aws-lambda-powertools/*'],
  message: 'lib/core is pure: no SDK, no CDK, no Redis.',
};
// esquery regexes cannot hold a `/`: spell it \x2F.
const dynamicImport = ({ regex, message }) => ({
  selector: `ImportExpression[source.value=/${regex.replaceAll('/', '\\x2F')}/]`,
  message,
});
/** An example (its domain included) is an app: tenang's entry points only, never its sources. */
const EXAMPLE_SOURCES = layerRule(
  ['lib', 'lambdas', 'bin', 'test'],
  "An example imports tenang's entry points (tenang/…), not its sources.",
);
/** The import rules of a layer: the bundle-size paths everywhere, plus the layer's patterns. */
const restrictImports = (...patterns) => ({
  'no-restricted-imports': ['error', { paths: RUNTIME_RESTRICTED_PATHS, patterns }],
  'no-restricted-syntax': ['error', ...patterns.filter((p) => p.regex !== undefined).map(dynamicImport)],
});

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'cdk.out/',
      '.tenang/',
      '.venv/',
      'reports/',
      'bench/out/',
      'coverage/',
      'dist/',
    ],
  },
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
  // Flat config blocks replace each other's rule for the same file: every block composes its
  // whole list (restrictImports), the more specific blocks come later.
  {
    files: ['lib/**/*.ts', 'lambdas/**/*.ts', 'bin/**/*.ts'],
    rules: restrictImports(LAYER.bin, LAYER.harness, LAYER.test),
  },
  {
    // What ships (lib/, the CLI) holds no app's domain; bin/'s other scripts are this checkout's.
    files: ['lib/**/*.ts', 'bin/tenang.ts'],
    rules: restrictImports(LAYER.bin, LAYER.harness, LAYER.test, ...REFERENCE),
  },
  {
    files: ['lambdas/**/*.ts'],
    rules: restrictImports(LAYER.bin, LAYER.harness, LAYER.test, REFERENCE_FROM_LAMBDAS),
  },
  {
    files: ['lib/config/**/*.ts'],
    rules: restrictImports(LAYER.bin, LAYER.harness, LAYER.test, ...REFERENCE),
  },
  {
    // tenang's drills hold for any job type; an app's own domain drills come with its extensions.
    files: ['lib/drills/**/*.ts'],
    rules: restrictImports(LAYER.bin, LAYER.harness, LAYER.test, ...REFERENCE),
  },
  {
    files: ['lib/ops/**/*.ts'],
    rules: restrictImports(LAYER.bin, LAYER.harness, LAYER.test, LAYER.local, ...REFERENCE),
  },
  {
    files: ['lib/infra/**/*.ts', 'lib/audit/**/*.ts'],
    rules: restrictImports(LAYER.bin, LAYER.harness, LAYER.test, LAYER.ops, LAYER.local, ...REFERENCE),
  },
  {
    files: ['lib/adapters/**/*.ts'],
    rules: restrictImports(LAYER.bin, LAYER.harness, LAYER.test, LAYER.upper, ...REFERENCE),
  },
  { files: ['harness/**/*.ts'], rules: restrictImports(LAYER.bin, LAYER.test) },
  { files: ['bench/**/*.ts'], rules: restrictImports(LAYER.test) },
  {
    // The examples are apps built on the published package: its entry points only, as a user's
    // app would import them (test/package synthesizes them outside the repo).
    files: ['examples/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...RUNTIME_RESTRICTED_PATHS,
            {
              name: 'tenang/runtime',
              importNames: ['z'],
              message:
                "Import * as z from 'tenang/zod': a re-exported namespace keeps all of zod/mini in the bundle.",
            },
          ],
          patterns: [EXAMPLE_SOURCES],
        },
      ],
      'no-restricted-syntax': ['error', dynamicImport(EXAMPLE_SOURCES)],
    },
  },
  {
    // lib/core is pure: no SDK, no environment, no Redis.
    files: ['lib/core/**/*.ts'],
    rules: {
      ...restrictImports(CORE_PACKAGES, LAYER.bin, LAYER.core, ...REFERENCE),
      'no-restricted-globals': ['error', { name: 'process', message: 'lib/core reads no environment.' }],
    },
  },
  {
    // The one place that imports zod itself.
    files: ['lib/config/zod.ts'],
    rules: { 'no-restricted-imports': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: {
      globals: { require: 'readonly', module: 'writable', process: 'readonly', console: 'readonly' },
    },
  },
  prettier,
);
