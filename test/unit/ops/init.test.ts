/**
 * `tenang init`: the files of the minimal app (its own job type, not the payments domain), the
 * package.json's dependencies from tenang's own manifest, the declaration's text and data agreeing,
 * the refusal of a directory that is not empty (listing what would be overwritten, writing nothing),
 * --force, --example reference, and the command's output. test/package/init-app.test.ts installs,
 * type-checks, tests, synthesizes and audits an initialized app.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCaptured } from '../../../bin/tenang';
import { loadPipelineConfig, type PipelineInput } from '../../../lib/config';
import { RUNBOOK } from '../../../lib/infra/observability';
import { CommandFailedError } from '../../../lib/ops/cli-context';
import {
  defaultTenangSpec,
  nextSteps,
  packageNameOf,
  planInit,
  tenangPackage,
  writeInit,
  type InitPlan,
} from '../../../lib/ops/init/init-app';
import { initDeclaration, PIPELINE_TS, PLACEHOLDER_ALARM_EMAIL } from '../../../lib/ops/init/templates';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const pkg = tenangPackage(ROOT);

/** The minimal app's files, in the order init writes them. */
const APP_FILES = [
  'package.json',
  'cdk.json',
  'tsconfig.json',
  '.gitignore',
  'README.md',
  'app.ts',
  'pipeline.ts',
  'jobs/report-generate.ts',
  'test/report-generate.test.ts',
];

describe('tenang init', () => {
  let work: string;

  beforeEach(() => {
    work = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-init-unit-')));
  });

  afterEach(() => {
    fs.rmSync(work, { recursive: true, force: true });
  });

  const text = (plan: InitPlan, file: string): string =>
    String(plan.files.find((f) => f.path === file)?.content ?? '');

  describe('Function: planInit (the minimal app)', () => {
    it('when the directory does not exist, it plans the app of its own and the runbooks its alarms and its job type link to', () => {
      // Act
      const plan = planInit({ dir: path.join(work, 'My App') }, pkg);

      // Assess
      expect(plan.name).toBe('my-app');
      const files = plan.files.map((f) => f.path);
      expect(files.slice(0, APP_FILES.length)).toEqual(APP_FILES);
      expect(files.filter((f) => f.startsWith('runbooks/')).sort()).toEqual(
        [...Object.values(RUNBOOK), 'stuck-jobs', 'report-generate', 'README']
          .map((r) => `runbooks/${r}.md`)
          .sort(),
      );
      expect(plan.files.every((f) => f.action === 'create')).toBe(true);
      // Not the payments domain (the runbooks' drills still play their incidents in its words).
      const all = plan.files
        .filter((f) => !f.path.startsWith('runbooks/'))
        .map((f) => String(f.content))
        .join('\n');
      expect(all).not.toMatch(/payment|tenang\/reference|inventory/i);
    });

    it("when planned, its package.json installs tenang with the peers' ranges of tenang's own manifest and the tools its scripts run", () => {
      // Act
      const plan = planInit({ dir: path.join(work, 'app'), tenangSpec: '/tmp/tenang-0.1.0.tgz' }, pkg);
      const manifest = JSON.parse(text(plan, 'package.json')) as {
        scripts: Record<string, string>;
        dependencies: Record<string, string>;
        devDependencies: Record<string, string>;
      };

      // Assess
      expect(manifest.scripts).toEqual({
        start: 'tenang local start',
        test: 'tsx --test test/*.test.ts',
        typecheck: 'tsc --noEmit',
        synth: 'cdk synth --quiet',
        deploy: 'cdk deploy',
      });
      expect(manifest.dependencies).toEqual({
        'aws-cdk-lib': pkg.peerDependencies['aws-cdk-lib'],
        constructs: pkg.peerDependencies.constructs,
        tenang: '/tmp/tenang-0.1.0.tgz',
      });
      expect(manifest.devDependencies).toEqual({
        '@types/node': pkg.devDependencies['@types/node'],
        'aws-cdk': pkg.devDependencies['aws-cdk'],
        tsx: pkg.devDependencies.tsx,
        typescript: pkg.devDependencies.typescript,
      });
      expect(manifest.devDependencies.typescript).toMatch(/^~5\.9\./);
    });

    it('when run from an installed package, the app depends on ^<its version>; from a checkout, on the checkout', () => {
      // Prepare
      const installed = path.join(work, 'node_modules', 'tenang');
      fs.mkdirSync(installed, { recursive: true });
      fs.writeFileSync(
        path.join(installed, 'package.json'),
        JSON.stringify({ name: 'tenang', version: '1.2.3' }),
      );

      // Act & Assess
      expect(defaultTenangSpec(tenangPackage(installed))).toBe('^1.2.3');
      expect(defaultTenangSpec(pkg)).toBe(`file:${ROOT}`);
    });

    it('when planned, cdk.json tells the alarm e-mail of alarms (the placeholder, or --alarm-email) so the synth passes Tenang-F5', () => {
      // Act
      const placeholder = planInit({ dir: path.join(work, 'a') }, pkg);
      const given = planInit({ dir: path.join(work, 'b'), alarmEmail: 'pager@acme.example' }, pkg);

      // Assess
      const context = (plan: InitPlan): unknown =>
        (JSON.parse(text(plan, 'cdk.json')) as { context: unknown }).context;
      expect(context(placeholder)).toEqual({
        'tenang:stage': 'dev',
        'tenang:target': 'aws',
        'tenang:alarmEmail': PLACEHOLDER_ALARM_EMAIL,
      });
      expect(context(given)).toMatchObject({ 'tenang:alarmEmail': 'pager@acme.example' });
      expect(nextSteps(placeholder).join('\n')).toContain(
        `"tenang:alarmEmail" in cdk.json (now ${PLACEHOLDER_ALARM_EMAIL})`,
      );
      expect(nextSteps(given).join('\n')).not.toContain('tenang:alarmEmail');
    });

    it('when the declaration is read from its pipeline.ts, it is the one init generated the runbooks from', () => {
      // Prepare: the template as the app's file, loaded as the app loads it.
      fs.mkdirSync(path.join(ROOT, '.tenang'), { recursive: true });
      const dir = fs.mkdtempSync(path.join(ROOT, '.tenang', 'init-pipeline-'));
      fs.writeFileSync(path.join(dir, 'pipeline.ts'), PIPELINE_TS);

      try {
        // Act
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { pipeline } = require(path.join(dir, 'pipeline.ts')) as {
          pipeline: (stage: string, region: string) => PipelineInput;
        };

        // Assess
        expect(pipeline('qa', 'eu-west-1')).toEqual(initDeclaration('qa', 'eu-west-1'));
        expect(() => loadPipelineConfig(pipeline('dev', 'us-east-1'))).not.toThrow();
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('when the app is elsewhere, the next steps cd into it first; in the working directory, they do not', () => {
      // Act
      const plan = planInit({ dir: path.join(work, 'app') }, pkg);

      // Assess
      expect(nextSteps(plan, work)).toEqual([
        'cd app && npm install && npm test && npm start',
        'npx cdk synth',
        'npx tenang audit',
        expect.stringContaining('before deploying'),
        'npm run deploy',
      ]);
      expect(nextSteps(plan, path.join(work, 'app'))[0]).toBe('npm install && npm test && npm start');
      expect(nextSteps(plan, path.join(work, 'elsewhere'))[0]).toBe(
        `cd ${path.join(work, 'app')} && npm install && npm test && npm start`,
      );
    });

    it.each([
      ['My Pipeline', 'my-pipeline'],
      ['.hidden', 'hidden'],
      ['ümlaut_app', 'mlaut_app'],
    ])('when the directory is named %j, the package is named %j', (dir, name) => {
      expect(packageNameOf(path.join(work, dir))).toBe(name);
    });
  });

  describe('Function: planInit (a directory that is not empty)', () => {
    it('when the directory holds other files, it refuses, saying --force would overwrite none, and writes nothing', () => {
      // Prepare
      const dir = path.join(work, 'app');
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, 'notes.txt'), 'mine');

      // Act & Assess
      expect(() => planInit({ dir }, pkg)).toThrow(CommandFailedError);
      expect(() => planInit({ dir }, pkg)).toThrow(/is not empty .*overwrite none/);
      expect(fs.readdirSync(dir)).toEqual(['notes.txt']);
    });

    it('when the directory holds files init writes, the refusal lists those it would overwrite', () => {
      // Prepare
      const dir = path.join(work, 'app');
      fs.mkdirSync(path.join(dir, 'jobs'), { recursive: true });
      fs.writeFileSync(path.join(dir, 'package.json'), '{"name":"mine"}');
      fs.writeFileSync(path.join(dir, 'jobs', 'report-generate.ts'), 'export {};\n');

      // Act & Assess
      expect(() => planInit({ dir }, pkg)).toThrow(
        'With --force it would overwrite 2 file(s): package.json, jobs/report-generate.ts (other files are left alone).',
      );
      expect(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).toBe('{"name":"mine"}');
    });

    it('when --force is given, it overwrites the files it writes, leaves the others, and a second run changes nothing', () => {
      // Prepare
      const dir = path.join(work, 'app');
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, 'package.json'), '{"name":"mine"}');
      fs.writeFileSync(path.join(dir, 'notes.txt'), 'mine');

      // Act
      const plan = planInit({ dir, force: true }, pkg);
      const written = writeInit(plan);
      const again = planInit({ dir, force: true }, pkg);

      // Assess
      expect(plan.files.find((f) => f.path === 'package.json')?.action).toBe('overwrite');
      expect(plan.files.filter((f) => f.action === 'overwrite').map((f) => f.path)).toEqual(['package.json']);
      expect(written).toHaveLength(plan.files.length);
      expect(fs.readFileSync(path.join(dir, 'notes.txt'), 'utf8')).toBe('mine');
      expect(JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'))).toMatchObject({
        name: 'app',
      });
      expect(again.files.every((f) => f.action === 'unchanged')).toBe(true);
      expect(writeInit(again)).toEqual([]);
    });

    it('when the directory holds only .git, it counts as empty', () => {
      // Prepare
      const dir = path.join(work, 'app');
      fs.mkdirSync(path.join(dir, '.git'), { recursive: true });

      // Act & Assess
      expect(planInit({ dir }, pkg).files.every((f) => f.action === 'create')).toBe(true);
    });
  });

  describe('Function: planInit (--example reference)', () => {
    it("when the reference example is asked for, it copies it as an app of its own, with tenang's runbooks", () => {
      // Act
      const plan = planInit(
        { dir: path.join(work, 'payments'), example: 'reference', tenangSpec: '^0.1.0' },
        pkg,
      );

      // Assess
      const files = plan.files.map((f) => f.path);
      expect(files).toEqual(
        expect.arrayContaining([
          'app.ts',
          'pipeline.ts',
          'reference-app.ts',
          'jobs/payment-capture.ts',
          'functions/ingress.ts',
          '.gitignore',
        ]),
      );
      const runbooks = fs.readdirSync(path.join(ROOT, 'runbooks')).filter((f) => f.endsWith('.md'));
      expect(files.filter((f) => f.startsWith('runbooks/')).sort()).toEqual(
        runbooks.map((f) => `runbooks/${f}`).sort(),
      );
      const manifest = JSON.parse(text(plan, 'package.json')) as {
        name: string;
        scripts: Record<string, string>;
        dependencies: Record<string, string>;
      };
      expect(manifest.name).toBe('payments');
      expect(manifest.scripts.start).toBe('tenang local start');
      expect(manifest.dependencies.tenang).toBe('^0.1.0');
      const tsconfig = JSON.parse(text(plan, 'tsconfig.json')) as {
        compilerOptions: Record<string, unknown>;
      };
      expect(tsconfig.compilerOptions).not.toHaveProperty('paths');
      expect(tsconfig.compilerOptions.strict).toBe(true);
      expect(JSON.parse(text(plan, 'cdk.json'))).toMatchObject({
        app: 'npx tsx app.ts',
        context: { 'tenang:alarmEmail': PLACEHOLDER_ALARM_EMAIL },
      });
      expect(nextSteps(plan, work)[0]).toBe('cd payments && npm install && npm start');
    });

    it('when the package does not ship the example, it says so and plans nothing', () => {
      // Prepare: a tenang package without examples/.
      const root = path.join(work, 'node_modules', 'tenang');
      fs.mkdirSync(path.join(root, 'runbooks'), { recursive: true });
      fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({ name: 'tenang', version: '9.0.0' }));

      // Act & Assess
      expect(() =>
        planInit({ dir: path.join(work, 'app'), example: 'reference' }, tenangPackage(root)),
      ).toThrow(/does not ship examples\/reference/);
      expect(fs.existsSync(path.join(work, 'app'))).toBe(false);
    });
  });

  describe('Command: tenang init', () => {
    it('when run with --json, it writes the app and prints its files and next steps', async () => {
      // Act
      const { code, out } = await runCaptured(['init', path.join(work, 'app'), '--yes', '--json']);

      // Assess
      expect(code).toBe(0);
      const answer = JSON.parse(out) as {
        dir: string;
        files: { path: string; action: string }[];
        nextSteps: string[];
      };
      expect(answer.dir).toBe(path.join(work, 'app'));
      expect(answer.files.map((f) => f.path).slice(0, APP_FILES.length)).toEqual(APP_FILES);
      for (const f of answer.files) expect(fs.existsSync(path.join(work, 'app', f.path))).toBe(true);
      expect(answer.nextSteps).toContain('npm run deploy');
    });

    it('when run as text, it lists each file written and the next steps', async () => {
      // Act
      const { code, out } = await runCaptured(['init', path.join(work, 'app')]);

      // Assess
      expect(code).toBe(0);
      expect(out).toContain('one job type, report.generate');
      expect(out).toMatch(/wrote\s+jobs\/report-generate\.ts/);
      expect(out).toContain('Next steps:');
      expect(out).toContain('npx cdk synth');
    });

    it('when the directory is not empty, it fails with exit 1 and, with --json, one JSON error', async () => {
      // Prepare
      const dir = path.join(work, 'app');
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, 'package.json'), '{}');

      // Act
      const text = await runCaptured(['init', dir]);
      const json = await runCaptured(['init', dir, '--json']);

      // Assess
      expect(text.code).toBe(1);
      expect(text.err).toContain('would overwrite 1 file(s): package.json');
      expect(json.code).toBe(1);
      expect(JSON.parse(json.out)).toMatchObject({ error: { kind: 'failure', exitCode: 1 } });
      expect(fs.readdirSync(dir)).toEqual(['package.json']);
    });

    it('when an option is wrong, it is a usage error (exit 2) and nothing is written', async () => {
      // Act
      const example = await runCaptured(['init', path.join(work, 'a'), '--example', 'shop']);
      const email = await runCaptured(['init', path.join(work, 'b'), '--alarm-email', 'nobody']);

      // Assess
      expect(example.code).toBe(2);
      expect(example.err).toContain('--example is one of reference');
      expect(email.code).toBe(2);
      expect(email.err).toContain('--alarm-email: must be an e-mail address');
      expect(fs.readdirSync(work)).toEqual([]);
    });

    it('when asked for help, it names its options', async () => {
      // Act
      const { code, out } = await runCaptured(['init', '--help']);

      // Assess
      expect(code).toBe(0);
      for (const option of ['--example', '--force', '--yes', '--tenang-spec', '--alarm-email', '--json'])
        expect(out).toContain(option);
    });
  });
});
