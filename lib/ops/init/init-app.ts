/**
 * What `tenang init [dir]` writes (lib/ops/commands/init.ts is its command): a minimal app of its
 * own (lib/ops/init/templates.ts: one job type, its module and unit test, the declaration, the CDK
 * entry point, the project files, and the runbooks its alarms link to), or with `--example
 * reference` a copy of the reference example tenang's package ships. Planned first, written after:
 * a directory that is not empty is refused unless `--force`, and the refusal lists the files that
 * would be overwritten. Nothing is installed: the printed next steps say what to run.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadPipelineConfig } from '../../config';
import { runbookPages } from '../app-runbooks';
import { CommandFailedError, UsageError } from '../cli-context';
import { packageRoot } from '../cli-place';
import {
  APP_TS,
  cdkJson,
  GITIGNORE,
  INIT_JOB_TYPE,
  initDeclaration,
  type InitExample,
  JOB_TEST_TS,
  JOB_TS,
  PIPELINE_TS,
  PLACEHOLDER_ALARM_EMAIL,
  readmeMd,
  TSCONFIG_JSON,
} from './templates';

export { INIT_EXAMPLES, type InitExample } from './templates';

/** What `tenang init` is asked for. */
export interface InitOptions {
  /** The app's directory (created when missing). */
  readonly dir: string;
  /** Write into a directory that is not empty, overwriting the files it writes. @default false */
  readonly force?: boolean;
  /** Copy this example instead of the minimal app. @default the minimal app */
  readonly example?: InitExample;
  /** The app's `tenang` dependency. @default `^<version>` of the package running, or `file:<checkout>` from a checkout */
  readonly tenangSpec?: string;
  /** Who is told of the stage's alarms (cdk.json's `tenang:alarmEmail`). @default PLACEHOLDER_ALARM_EMAIL */
  readonly alarmEmail?: string;
}

/** The tenang the CLI runs from: where it is and what its package.json says. */
export interface TenangPackage {
  readonly root: string;
  readonly version: string;
  /** Installed in an app (under node_modules), not a checkout. */
  readonly installed: boolean;
  readonly peerDependencies: Readonly<Record<string, string>>;
  readonly devDependencies: Readonly<Record<string, string>>;
}

/** The package the CLI's code belongs to (`root`: its directory). */
export function tenangPackage(root: string = packageRoot()): TenangPackage {
  const manifest = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
    version?: string;
    peerDependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  return {
    root,
    version: manifest.version ?? '0.0.0',
    installed: path.resolve(root).split(path.sep).includes('node_modules'),
    peerDependencies: manifest.peerDependencies ?? {},
    devDependencies: manifest.devDependencies ?? {},
  };
}

/** The `tenang` dependency an app gets: the version running, or the checkout it runs from. */
export function defaultTenangSpec(pkg: TenangPackage): string {
  return pkg.installed ? `^${pkg.version}` : `file:${pkg.root}`;
}

/** What happens to a file. */
export type InitAction = 'create' | 'overwrite' | 'unchanged';

/** A file of the app and what init does with it. */
export interface InitFile {
  /** Relative to the app's directory, `/`-separated. */
  readonly path: string;
  readonly content: string | Buffer;
  readonly action: InitAction;
}

/** What `tenang init` would write. */
export interface InitPlan {
  /** The app's directory (absolute). */
  readonly dir: string;
  /** The app's package name. */
  readonly name: string;
  /** The example copied. @default the minimal app */
  readonly example?: InitExample;
  /** The app's `tenang` dependency. */
  readonly tenangSpec: string;
  readonly alarmEmail: string;
  readonly files: readonly InitFile[];
}

/** Entries of a directory that do not make it "not empty" for init. */
const IGNORED_ENTRIES: ReadonlySet<string> = new Set(['.git']);

/** A package name from a directory name: lower case, letters, digits, `-`, `.` and `_`. */
export function packageNameOf(dir: string): string {
  const name = path
    .basename(path.resolve(dir))
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[._-]+|-+$/g, '');
  return name === '' ? 'tenang-app' : name.slice(0, 214);
}

/** A version range for `name` from tenang's own manifest, else `fallback`. */
function range(deps: Readonly<Record<string, string>>, name: string, fallback: string): string {
  return deps[name] ?? fallback;
}

/** The minimal app's package.json. */
export function appManifest(name: string, tenangSpec: string, pkg: TenangPackage): string {
  const manifest = {
    name,
    version: '0.1.0',
    private: true,
    description: 'A worker-queue pipeline on AWS built with tenang',
    engines: { node: '>=20' },
    scripts: {
      start: 'tenang local start',
      test: 'tsx --test test/*.test.ts',
      typecheck: 'tsc --noEmit',
      synth: 'cdk synth --quiet',
      deploy: 'cdk deploy',
    },
    dependencies: {
      // tenang's peers: the app holds the one copy tenang and cdk-nag use.
      'aws-cdk-lib': range(pkg.peerDependencies, 'aws-cdk-lib', '^2.276.0'),
      constructs: range(pkg.peerDependencies, 'constructs', '^10.5.1'),
      tenang: tenangSpec,
    },
    devDependencies: {
      '@types/node': range(pkg.devDependencies, '@types/node', '^20.19.43'),
      'aws-cdk': range(pkg.devDependencies, 'aws-cdk', '^2.1148.1'),
      tsx: range(pkg.devDependencies, 'tsx', '^4.23.15'),
      typescript: range(pkg.devDependencies, 'typescript', '~5.9.3'),
    },
  };
  return `${JSON.stringify(manifest, null, 2)}\n`;
}

/** The minimal app's files (before they are compared with what the directory holds). */
export function minimalAppFiles(
  name: string,
  tenangSpec: string,
  alarmEmail: string,
  pkg: TenangPackage,
): Map<string, string> {
  const files = new Map<string, string>([
    ['package.json', appManifest(name, tenangSpec, pkg)],
    ['cdk.json', cdkJson(alarmEmail)],
    ['tsconfig.json', TSCONFIG_JSON],
    ['.gitignore', GITIGNORE],
    ['README.md', readmeMd(name, alarmEmail)],
    ['app.ts', APP_TS],
    ['pipeline.ts', PIPELINE_TS],
    ['jobs/report-generate.ts', JOB_TS],
    ['test/report-generate.test.ts', JOB_TEST_TS],
  ]);
  // The runbooks its alarms and its job type link to (P1), as `tenang runbooks` writes them.
  const config = loadPipelineConfig(initDeclaration('stage', 'us-east-1'));
  for (const page of runbookPages(config, { shippedDir: path.join(pkg.root, 'runbooks') }))
    files.set(`runbooks/${page.file}`, page.content);
  return files;
}

/** Directories of an example that are not the app's own (installed, synthesized, run). */
const EXAMPLE_SKIPPED: ReadonlySet<string> = new Set([
  'node_modules',
  'cdk.out',
  '.tenang',
  'reports',
  '.venv',
]);

/** Every file under `dir`, relative and `/`-separated, skipping EXAMPLE_SKIPPED. */
function filesUnder(dir: string, rel = ''): string[] {
  return fs
    .readdirSync(path.join(dir, rel), { withFileTypes: true })
    .flatMap((e) => {
      const child = rel === '' ? e.name : `${rel}/${e.name}`;
      if (EXAMPLE_SKIPPED.has(e.name)) return [];
      if (e.isDirectory()) return filesUnder(dir, child);
      return e.isFile() ? [child] : [];
    })
    .sort();
}

/**
 * The reference example's files, as an app of its own: its package.json names the app and the
 * `tenang` it installs, its tsconfig.json drops the paths into tenang's checkout, its cdk.json
 * tells `alarmEmail` of alarms; tenang's runbooks (the reference's pages) go to runbooks/.
 * @throws CommandFailedError when the package does not ship the example
 */
export function referenceExampleFiles(
  name: string,
  tenangSpec: string,
  alarmEmail: string,
  pkg: TenangPackage,
): Map<string, string | Buffer> {
  const source = path.join(pkg.root, 'examples', 'reference');
  if (!fs.existsSync(path.join(source, 'pipeline.ts')))
    throw new CommandFailedError(
      `this tenang (${pkg.root}) does not ship examples/reference: install a tenang whose package has it, or run \`tenang init\` without --example for the minimal app`,
    );
  const files = new Map<string, string | Buffer>(
    filesUnder(source).map((f) => [f, fs.readFileSync(path.join(source, f))]),
  );
  const json = (file: string): Record<string, unknown> =>
    JSON.parse(String(files.get(file) ?? '{}')) as Record<string, unknown>;
  const manifest = json('package.json') as {
    scripts?: Record<string, string>;
    dependencies?: Record<string, string>;
  };
  files.set(
    'package.json',
    `${JSON.stringify(
      {
        ...manifest,
        name,
        scripts: { start: 'tenang local start', ...manifest.scripts },
        dependencies: { ...manifest.dependencies, tenang: tenangSpec },
      },
      null,
      2,
    )}\n`,
  );
  const tsconfig = json('tsconfig.json') as { compilerOptions?: Record<string, unknown> };
  if (tsconfig.compilerOptions !== undefined) {
    // `paths` points into tenang's checkout; the app resolves `tenang/*` from its node_modules.
    const { paths: _paths, ...compilerOptions } = tsconfig.compilerOptions;
    files.set('tsconfig.json', `${JSON.stringify({ ...tsconfig, compilerOptions }, null, 2)}\n`);
  }
  const cdk = json('cdk.json') as { context?: Record<string, unknown> };
  files.set(
    'cdk.json',
    `${JSON.stringify({ ...cdk, context: { ...cdk.context, 'tenang:alarmEmail': alarmEmail } }, null, 2)}\n`,
  );
  if (!files.has('.gitignore')) files.set('.gitignore', GITIGNORE);
  const runbooks = path.join(pkg.root, 'runbooks');
  for (const f of fs.readdirSync(runbooks).filter((r) => r.endsWith('.md')))
    files.set(`runbooks/${f}`, fs.readFileSync(path.join(runbooks, f)));
  return files;
}

/** The entries of `dir` that make it not empty (none when it does not exist). */
function entriesOf(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  if (!fs.statSync(dir).isDirectory()) throw new UsageError(`${dir} is a file, not a directory`);
  return fs.readdirSync(dir).filter((e) => !IGNORED_ENTRIES.has(e));
}

/**
 * Plans the app in `options.dir`.
 * @throws CommandFailedError when the directory is not empty and `force` is not set (listing what
 * would be overwritten), or the package does not ship the example
 */
export function planInit(options: InitOptions, pkg: TenangPackage = tenangPackage()): InitPlan {
  const dir = path.resolve(options.dir);
  const name = packageNameOf(dir);
  const tenangSpec = options.tenangSpec ?? defaultTenangSpec(pkg);
  const alarmEmail = options.alarmEmail ?? PLACEHOLDER_ALARM_EMAIL;
  const wanted =
    options.example === 'reference'
      ? referenceExampleFiles(name, tenangSpec, alarmEmail, pkg)
      : minimalAppFiles(name, tenangSpec, alarmEmail, pkg);
  const existing = entriesOf(dir);
  const files = [...wanted].map(([file, content]): InitFile => {
    const at = path.join(dir, file);
    if (!fs.existsSync(at)) return { path: file, content, action: 'create' };
    if (fs.statSync(at).isDirectory())
      throw new CommandFailedError(`${at} is a directory where tenang init writes a file`);
    const same = fs.readFileSync(at).equals(Buffer.from(content));
    return { path: file, content, action: same ? 'unchanged' : 'overwrite' };
  });
  if (existing.length > 0 && options.force !== true) {
    const overwritten = files.filter((f) => f.action === 'overwrite').map((f) => f.path);
    throw new CommandFailedError(
      [
        `${dir} is not empty (${existing.length} entr${existing.length === 1 ? 'y' : 'ies'}): tenang init writes a new app into an empty directory.`,
        overwritten.length === 0
          ? 'With --force it would write its files next to them and overwrite none.'
          : `With --force it would overwrite ${overwritten.length} file(s): ${overwritten.join(', ')} (other files are left alone).`,
      ].join(' '),
    );
  }
  return {
    dir,
    name,
    ...(options.example === undefined ? {} : { example: options.example }),
    tenangSpec,
    alarmEmail,
    files,
  };
}

/** Writes the plan's files that change; returns them. */
export function writeInit(plan: InitPlan): InitFile[] {
  const written = plan.files.filter((f) => f.action !== 'unchanged');
  for (const f of written) {
    const at = path.join(plan.dir, f.path);
    fs.mkdirSync(path.dirname(at), { recursive: true });
    fs.writeFileSync(at, f.content);
  }
  return written;
}

/** The commands to run next, from `cwd` (`cd` first when the app is elsewhere). */
export function nextSteps(plan: InitPlan, cwd: string = process.cwd()): string[] {
  const relative = path.relative(path.resolve(cwd), plan.dir);
  const cd = relative === '' ? '' : `cd ${relative.startsWith('..') ? plan.dir : relative} && `;
  const reference = plan.example === 'reference';
  const placeholder = plan.alarmEmail === PLACEHOLDER_ALARM_EMAIL;
  return [
    `${cd}npm install && ${reference ? '' : 'npm test && '}npm start`,
    'npx cdk synth',
    'npx tenang audit',
    ...(placeholder
      ? [
          `before deploying: set "tenang:alarmEmail" in cdk.json (now ${PLACEHOLDER_ALARM_EMAIL}) to your on-call's address${reference ? ", and the providers' URLs in pipeline.ts" : ', and stage.providers.reports in pipeline.ts to your reports service'}`,
        ]
      : reference
        ? []
        : ['before deploying: set stage.providers.reports in pipeline.ts to your reports service']),
    'npm run deploy',
  ];
}

/** What the app starts with, in one line. */
export function describeApp(plan: InitPlan): string {
  return plan.example === 'reference'
    ? `the reference example (payments, notifications, stock reservations), tenang ${plan.tenangSpec}`
    : `one job type, ${INIT_JOB_TYPE}, tenang ${plan.tenangSpec}`;
}
