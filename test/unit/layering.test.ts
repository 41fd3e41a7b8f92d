/**
 * The layering of eslint.config.mjs stays enforced: for each layer, an import of a layer it must
 * not depend on, written in a file of that layer (static `import` and `import()` alike), is
 * reported, and a legal import is not. Each snippet is linted in memory (ESLint's Node API,
 * `new ESLint().lintText` with the file's path, the project's config, the layering rules only),
 * so the rules cannot silently vanish from the config: a block that overrides another's rule, a
 * typo in a pattern. The API runs in a child Node.js process: ESLint loads its ESM config with
 * import(), which Jest's module sandbox refuses.
 */
import { spawn } from 'node:child_process';
import * as path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
/** What the reference rule reports. */
const REFERENCE = 'examples/reference is the reference app, its domain included';
/** The rules that carry the layering. */
const LAYER_RULES = new Set(['no-restricted-imports', 'no-restricted-syntax']);

/** Lints each `{ filePath, code }` with the project's config; prints each one's messages as JSON. */
const LINT_RUNNER = `
import { ESLint } from 'eslint';
let input = '';
for await (const chunk of process.stdin) input += chunk;
const eslint = new ESLint({
  cwd: process.cwd(),
  // Only the layering rules, which need no type information: no TypeScript project service.
  overrideConfig: { languageOptions: { parserOptions: { projectService: false } } },
  ruleFilter: ({ ruleId }) => ${JSON.stringify([...LAYER_RULES])}.includes(ruleId),
});
const answers = [];
for (const { filePath, code } of JSON.parse(input)) {
  const [result] = await eslint.lintText(code, { filePath });
  answers.push(result.messages.map((m) => ({ ruleId: m.ruleId, message: m.message, fatal: m.fatal === true })));
}
process.stdout.write(JSON.stringify(answers));
`;

interface LintMessage {
  readonly ruleId: string | null;
  readonly message: string;
  readonly fatal: boolean;
}

/** How long the one ESLint process may take, ms. */
const LINT_TIMEOUT_MS = 240_000;

/** Lints every snippet in one ESLint process (its TypeScript project service starts once). */
function lint(snippets: readonly { file: string; code: string }[]): Promise<LintMessage[][]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', LINT_RUNNER], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
      // The TypeScript project service's start is CPU-bound: in npm test's light lane (nice 10,
      // the machine 95% busy) it once ran past 60 s and was killed.
      timeout: LINT_TIMEOUT_MS,
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0) resolve(JSON.parse(out) as LintMessage[][]);
      else reject(new Error(`ESLint exited with ${String(code)}: ${err}`));
    });
    child.stdin.end(
      JSON.stringify(snippets.map((s) => ({ filePath: path.join(ROOT, s.file), code: s.code }))),
    );
  });
}

const staticImport = (from: string): string => `import * as m from '${from}';\nexport const used = m;\n`;
const dynamicImport = (from: string): string =>
  `export async function load(): Promise<unknown> {\n  return import('${from}');\n}\n`;

/** [file, import, what the report says]: each must be reported, statically and dynamically. */
const FORBIDDEN: readonly (readonly [string, string, string])[] = [
  ['lib/ops/x.ts', '../local/platform', 'lib/local is the emulator'],
  ['lib/ops/commands/x.ts', '../../local/ports', 'lib/local is the emulator'],
  ['lib/infra/x.ts', '../ops/cli-context', 'lib/ops (operator code)'],
  ['lib/audit/x.ts', '../ops/drills/catalog', 'lib/ops (operator code)'],
  ['lib/audit/x.ts', '../local/platform', 'lib/local is the emulator'],
  ['lib/adapters/aws/x.ts', '../../../harness/faults/fault-injection', 'harness/ is test and benchmark code'],
  ['lib/local/x.ts', '../../harness/chaos/runner', 'harness/ is test and benchmark code'],
  ['lib/drills/x.ts', '../../harness/fakes/memory-order-store', 'harness/ is test and benchmark code'],
  ['lambdas/flag-reconciler/x.ts', '../../harness/aws/call-counter', 'harness/ is test and benchmark code'],
  ['bin/x.ts', '../harness/chaos/runner', 'harness/ is test and benchmark code'],
  ['lib/infra/x.ts', '../local/platform', 'lib/local is the emulator'],
  ['lib/ops/commands/x.ts', '../../../bin/tenang', 'lib/ never imports bin/'],
  ['lib/config/x.ts', '../../bin/app', 'lib/ never imports bin/'],
  ['lib/core/x.ts', '../../bin/tenang', 'lib/ never imports bin/'],
  ['harness/chaos/x.ts', '../../test/helpers/aws', 'No test helpers'],
  ['lib/drills/x.ts', '../../test/helpers/aws', 'No test helpers'],
  ['bench/x.ts', '../test/helpers/sqs-events', 'No test helpers'],
  ['lib/adapters/aws/x.ts', '../../infra/app', 'lib/adapters sits below'],
  ['lib/adapters/aws/x.ts', '../../ops/cli-context', 'lib/adapters sits below'],
  ['lib/adapters/x.ts', '../local/platform', 'lib/adapters sits below'],
  ['lib/core/x.ts', '../adapters/aws/clients', 'lib/core is pure'],
  // The kit holds no reference domain: it is the reference app's (examples/reference/domain).
  ['lib/core/x.ts', '../../examples/reference/domain/payloads', REFERENCE],
  ['lib/config/x.ts', '../../examples/reference/domain/tables', REFERENCE],
  ['lib/adapters/aws/x.ts', '../../../examples/reference/domain/dynamodb-order-store', REFERENCE],
  ['lib/infra/x.ts', '../../examples/reference/domain/ingress', REFERENCE],
  ['lib/audit/x.ts', '../../examples/reference/domain', REFERENCE],
  ['lib/ops/commands/x.ts', '../../../examples/reference/domain/payment', REFERENCE],
  ['lib/ops/x.ts', '../../examples/reference/pipeline', REFERENCE],
  ['lambdas/cache-admin/x.ts', '../../examples/reference/domain/order-stream', REFERENCE],
  ['lib/local/x.ts', '../../examples/reference/domain/payloads', REFERENCE],
  ['lib/drills/x.ts', '../../examples/reference/domain/inventory', REFERENCE],
  ['lib/local/x.ts', '../../examples/reference/local/order-facts', REFERENCE],
  // The domain is an app's code: tenang's entry points only, never its sources.
  ['examples/reference/domain/x.ts', '../../../lib/core/envelope', 'not its sources'],
];

/** [file, import]: legal, nothing may be reported. */
const ALLOWED: readonly (readonly [string, string])[] = [
  ['lib/ops/x.ts', '../adapters/aws/clients'],
  ['lib/ops/x.ts', '../infra/stack-name'],
  ['lib/ops/commands/x.ts', '../../config/zod'],
  ['lib/local/x.ts', '../ops/table'],
  ['lib/drills/x.ts', '../local/platform'],
  ['harness/chaos/x.ts', '../../lib/drills/drill'],
  ['bench/x.ts', '../harness/aws/call-counter'],
  ['test/unit/x.test.ts', '../../harness/fakes/memory-order-store'],
  ['lib/infra/x.ts', '../audit/tenang-checks'],
  ['lib/infra/x.ts', '../adapters/aws/deployment'],
  ['lib/adapters/aws/x.ts', '../../core/errors'],
  ['bench/x.ts', '../lib/local/names'],
  ['test/unit/x.test.ts', '../helpers/aws'],
  ['examples/reference/domain/x.ts', 'tenang/zod'],
  ['examples/reference/functions/x.ts', '../domain'],
];

/** Package imports restricted by the bundle-size rule and lib/core's: [file, package, report]. */
const PACKAGES: readonly (readonly [string, string, string])[] = [
  // Every layer block composes the bundle-size paths with its own patterns.
  ['lib/ops/x.ts', 'zod', 'lib/config/zod'],
  ['lib/infra/x.ts', '@aws-lambda-powertools/tracer', 'Tracer costs'],
  ['lib/core/x.ts', '@aws-sdk/client-sqs', 'lib/core is pure'],
];

const snippets = [
  ...FORBIDDEN.flatMap(([file, from]) => [
    { file, code: staticImport(from) },
    { file, code: dynamicImport(from) },
  ]),
  ...ALLOWED.flatMap(([file, from]) => [
    { file, code: staticImport(from) },
    { file, code: dynamicImport(from) },
  ]),
  ...PACKAGES.map(([file, from]) => ({ file, code: staticImport(from) })),
];

describe('ESLint config: layering', () => {
  let answers: LintMessage[][] = [];
  /** The layering reports of snippet `i`; a parse failure fails the test instead of passing it. */
  const reports = (i: number): string[] => {
    const messages = answers[i];
    if (messages === undefined) throw new Error(`no answer for snippet ${i}`);
    const fatal = messages.filter((m) => m.fatal);
    if (fatal.length > 0) throw new Error(fatal.map((m) => m.message).join('; '));
    return messages.filter((m) => m.ruleId !== null && LAYER_RULES.has(m.ruleId)).map((m) => m.message);
  };

  beforeAll(async () => {
    answers = await lint(snippets);
  }, LINT_TIMEOUT_MS + 10_000);

  it.each(FORBIDDEN.map((c, i) => [...c, i] as const))(
    'when %s imports %s, it is reported (%s), as a static import and as import()',
    (_file, _from, message, i) => {
      // Assess
      expect(reports(2 * i)).toEqual([expect.stringContaining(message)]);
      expect(reports(2 * i + 1)).toEqual([expect.stringContaining(message)]);
    },
  );

  it.each(ALLOWED.map((c, i) => [...c, i] as const))(
    'when %s imports %s, nothing is reported',
    (_file, _from, i) => {
      // Assess
      expect(reports(2 * FORBIDDEN.length + 2 * i)).toEqual([]);
      expect(reports(2 * FORBIDDEN.length + 2 * i + 1)).toEqual([]);
    },
  );

  it.each(PACKAGES.map((c, i) => [...c, i] as const))(
    'when %s imports the package %s, it is still reported (%s)',
    (_file, _from, message, i) => {
      // Assess
      expect(reports(2 * FORBIDDEN.length + 2 * ALLOWED.length + i)).toEqual([
        expect.stringContaining(message),
      ]);
    },
  );
});
