/**
 * tenang as a user gets it: `npm pack` (which builds dist/), the tarball installed into an empty
 * project, the compiled `tenang` CLI on plain node, the public entry points, and every app under
 * examples/ copied outside the repo with the tarball installed, synthesized clean under the
 * AwsSolutions, Serverless and Tenang packs, and the reference example's `tenang local start` run from
 * its own directory (the runtime files shipped, the app's cdk, everything written into the app).
 * Installs use the npm cache that `npm ci` filled.
 * aws-cdk-lib and constructs are peer dependencies: each project installs them itself, as the
 * README says, and the package must then use that one copy.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../lib/local/ports';

const ROOT = path.resolve(__dirname, '..', '..');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

jest.setTimeout(10 * 60_000);

/** Runs a command in `cwd` and returns its stdout; a failure shows its output. */
function sh(cmd: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = {}): string {
  try {
    return execFileSync(cmd, [...args], {
      cwd,
      encoding: 'utf8',
      env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${cmd} ${args.join(' ')} failed in ${cwd}:\n${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`,
    );
  }
}

const install = (cwd: string, args: readonly string[] = []): string =>
  sh(NPM, ['install', '--prefer-offline', '--no-audit', '--no-fund', ...args], cwd);

describe('the tenang package', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-package-'));
  let tarball = '';
  let files: string[] = [];

  beforeAll(() => {
    // The build prepack would run, run first: its output would precede pack's JSON.
    sh(NPM, ['run', 'build'], ROOT);
    const packed = JSON.parse(
      sh(NPM, ['pack', '--json', '--ignore-scripts', '--pack-destination', work], ROOT),
    ) as {
      filename: string;
      files: { path: string }[];
    }[];
    const first = packed[0];
    if (first === undefined) throw new Error('npm pack printed no package');
    tarball = path.join(work, first.filename);
    files = first.files.map((f) => f.path);
  });

  afterAll(() => {
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('when packed, it ships the compiled CLI, the typed entry points and the handler sources, and no test', () => {
    expect(files).toContain('dist/bin/tenang.js');
    for (const entry of ['config', 'infra', 'runtime', 'audit']) {
      expect(files).toContain(`dist/lib/api/${entry}.js`);
      expect(files).toContain(`dist/lib/api/${entry}.d.ts`);
    }
    expect(files).toContain('lambdas/flag-reconciler/index.ts');
    expect(files).toContain('lambdas/cache-admin/index.ts');
    // The reference's own functions are the example's, not the package's: tenang's own two only.
    expect(
      files.filter(
        (f) =>
          f.startsWith('lambdas/') &&
          !f.startsWith('lambdas/flag-reconciler/') &&
          !f.startsWith('lambdas/cache-admin/'),
      ),
    ).toEqual([]);
    // The reference's domain is the example's too (examples/reference/domain): no entry point ships it.
    expect(files).not.toContain('lib/api/reference.ts');
    expect(files.filter((f) => f.startsWith('lib/reference/'))).toEqual([]);
    expect(files.filter((f) => f.startsWith('test/') || /\.test\.[jt]s$/.test(f))).toEqual([]);
    expect(files.filter((f) => f.startsWith('bench/'))).toEqual([]);
    // The reference example ships as `tenang init --example reference` copies it, and no other.
    expect(files).toEqual(
      expect.arrayContaining([
        'examples/reference/pipeline.ts',
        'examples/reference/app.ts',
        'examples/reference/domain/index.ts',
        'examples/reference/domain/ingress.ts',
      ]),
    );
    expect(files.filter((f) => f.startsWith('examples/') && !f.startsWith('examples/reference/'))).toEqual(
      [],
    );
    // No test harness: chaos, fakes, call counting and capacity, SDK fault injection, the
    // Powertools baseline and the stampede measurement live in harness/, which never ships.
    expect(
      files.filter((f) =>
        /(^|\/)(harness|chaos|fakes)\/|fault-injection|call-counter|capacity\.|powertools-baseline|stampede\./.test(
          f,
        ),
      ),
    ).toEqual([]);
  });

  it('when packed, it ships every file the local platform loads at run time besides its JavaScript', () => {
    // Loaded by path from dist/lib/local (function-host.js, env.js): tsc emits none of them.
    const runtime = fs
      .readdirSync(path.join(ROOT, 'lib', 'local'), { withFileTypes: true, recursive: true })
      .filter((e) => e.isFile() && /\.(mjs|py)$/.test(e.name))
      .map((e) => `dist/${path.relative(ROOT, path.join(e.parentPath, e.name))}`);
    expect(runtime).toEqual(
      expect.arrayContaining([
        'dist/lib/local/runtime/lambda-runtime.mjs',
        'dist/lib/local/moto_server.py',
        'dist/lib/local/moto_sns.py',
      ]),
    );
    expect(files).toEqual(expect.arrayContaining(runtime));
    expect(files).toContain('dist/lib/ops/commands/local.js');
  });

  it('when packed, it ships its license, its changelog and the feature list the README and the audit link to', () => {
    expect(files).toEqual(expect.arrayContaining(['LICENSE', 'CHANGELOG.md', 'docs/features.md']));
    expect(files.filter((f) => f.startsWith('docs/'))).toEqual(['docs/features.md']);
  });

  it('when packed, aws-cdk-lib and constructs are peer dependencies, not its own', () => {
    // Act
    const manifest = JSON.parse(sh('tar', ['-xOzf', tarball, 'package/package.json'], work)) as {
      dependencies: Record<string, string>;
      peerDependencies?: Record<string, string>;
    };

    // Assess
    expect(manifest.peerDependencies).toEqual({
      'aws-cdk-lib': expect.stringMatching(/^\^2\./),
      constructs: expect.stringMatching(/^\^10\./),
    });
    expect(manifest.dependencies).not.toHaveProperty(['aws-cdk-lib']);
    expect(manifest.dependencies).not.toHaveProperty(['constructs']);
  });

  it('when installed into an empty project with its peers, its CLI runs on plain node and its entry points load', () => {
    // Prepare
    const app = path.join(work, 'empty');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'empty', private: true }));
    install(app, [tarball, 'aws-cdk-lib', 'constructs']);

    // Act
    const help = sh(
      process.execPath,
      [path.join(app, 'node_modules', 'tenang', 'dist', 'bin', 'tenang.js'), '--help'],
      app,
    );
    const api = sh(
      process.execPath,
      [
        '-e',
        "const c = require('tenang/config'), i = require('tenang/infra'), r = require('tenang/runtime'), a = require('tenang/audit');" +
          "let reference; try { require.resolve('tenang/reference'); reference = 'exported'; } catch (e) { reference = e.code; }" +
          'console.log(JSON.stringify({ load: typeof c.loadPipelineConfig, app: typeof i.buildApp, runner: typeof r.createSqsJobRunner, job: typeof r.defineJob, checks: typeof a.TenangChecks, reference }))',
      ],
      app,
    );

    // Assess
    expect(help).toContain('Usage: tenang');
    expect(help).toContain('status');
    expect(JSON.parse(api)).toEqual({
      load: 'function',
      app: 'function',
      runner: 'function',
      job: 'function',
      checks: 'function',
      // The reference's domain is its example's (examples/reference/domain), not an entry point.
      reference: 'ERR_PACKAGE_PATH_NOT_EXPORTED',
    });
    expect(fs.existsSync(path.join(app, 'node_modules', '.bin', 'tenang'))).toBe(true);
    // One copy of each peer: the app's, also where tenang and cdk-nag look for it.
    const appModules = fs.realpathSync(path.join(app, 'node_modules'));
    const resolvedFrom = (dir: string, name: string): string =>
      fs.realpathSync(require.resolve(`${name}/package.json`, { paths: [dir] }));
    for (const peer of ['aws-cdk-lib', 'constructs']) {
      const own = path.join(appModules, peer, 'package.json');
      expect(resolvedFrom(path.join(appModules, 'tenang'), peer)).toBe(own);
      expect(resolvedFrom(path.dirname(resolvedFrom(path.join(appModules, 'tenang'), 'cdk-nag')), peer)).toBe(
        own,
      );
    }
  });

  const examples = fs
    .readdirSync(path.join(ROOT, 'examples'), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name);

  it.each(examples)(
    'when the example %s is copied outside the repo with the tarball installed, cdk synth is clean under every pack',
    (name) => {
      // Prepare
      const app = path.join(work, `example-${name}`);
      fs.cpSync(path.join(ROOT, 'examples', name), app, { recursive: true });
      const manifest = JSON.parse(fs.readFileSync(path.join(app, 'package.json'), 'utf8')) as {
        dependencies: Record<string, string>;
      };
      manifest.dependencies.tenang = `file:${tarball}`;
      fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify(manifest, null, 2));
      install(app);

      // Act
      // As a deployer does: the example's alarms need a subscriber (Tenang-F5-AlarmSubscriber).
      const subscriber = ['-c', 'tenang:alarmEmail=on-call@example.com'];
      sh(path.join(app, 'node_modules', '.bin', 'cdk'), ['synth', '--quiet', ...subscriber], app, {
        CDK_DISABLE_CLI_TELEMETRY: 'true',
      });
      sh(path.join(app, 'node_modules', '.bin', 'tsc'), ['-p', '.'], app);

      // Assess
      const report = JSON.parse(
        fs.readFileSync(path.join(app, 'cdk.out', 'validation-report.json'), 'utf8'),
      ) as {
        pluginReports: { pluginName: string; violations: unknown[] }[];
      };
      expect(report.pluginReports.flatMap((r) => r.violations)).toEqual([]);
      const templates = fs.readdirSync(path.join(app, 'cdk.out')).filter((f) => f.endsWith('.template.json'));
      expect(templates.length).toBeGreaterThan(0);
      for (const t of templates) {
        const template = JSON.parse(fs.readFileSync(path.join(app, 'cdk.out', t), 'utf8')) as {
          Metadata?: Record<string, unknown>;
        };
        expect(typeof template.Metadata?.['tenang:pipeline']).toBe('string');
      }

      // The installed CLI audits what the app synthesized: the assembly, and `cdk synth`'s YAML on
      // stdin (`--app cdk.out` prints the synthesized stack again without a second bundling).
      const tenang = path.join(app, 'node_modules', 'tenang', 'dist', 'bin', 'tenang.js');
      const ofAssembly = JSON.parse(sh(process.execPath, [tenang, 'audit', 'cdk.out', '--json'], app)) as {
        items: { ruleId: string; status: string }[];
      };
      expect(ofAssembly.items.filter((i) => i.status === 'fail')).toEqual([]);
      expect(ofAssembly.items.filter((i) => i.status === 'pass').length).toBeGreaterThan(10);
      const cdk = path.join(app, 'node_modules', '.bin', 'cdk');
      const sarif = JSON.parse(
        sh(
          'bash',
          [
            '-o',
            'pipefail',
            '-c',
            `"${cdk}" synth --app cdk.out | "${process.execPath}" "${tenang}" audit - --format sarif`,
          ],
          app,
          {
            CDK_DISABLE_CLI_TELEMETRY: 'true',
          },
        ),
      ) as {
        version: string;
        runs: { tool: { driver: { rules: { helpUri: string }[] } }; results: { level: string }[] }[];
      };
      expect(sarif.version).toBe('2.1.0');
      expect(sarif.runs[0]?.results.filter((r) => r.level === 'error')).toEqual([]);
      // A rule's help is the features page the installed package ships, not a path in tenang's checkout.
      const helpFiles = new Set(
        sarif.runs[0]?.tool.driver.rules.map((r) => fileURLToPath(r.helpUri.split('#')[0] ?? '')),
      );
      expect([...helpFiles]).toEqual([
        path.join(fs.realpathSync(path.join(app, 'node_modules', 'tenang')), 'docs', 'features.md'),
      ]);
      for (const file of helpFiles) expect(fs.existsSync(file)).toBe(true);
    },
  );

  it('when the reference example runs `tenang local start` from its own directory, it deploys that app into moto, runs the smoke scenario and writes only into the app', async () => {
    // Prepare: the example the previous test installed (it.each above), the app a team would have.
    const app = path.join(work, 'example-reference');
    const installed = path.join(app, 'node_modules', 'tenang');
    if (!fs.existsSync(installed)) throw new Error(`the reference example is not installed in ${app}`);
    // A moto and a Redis of the run's own: never the shared ones the test lanes point at.
    // And no TENANG_PIPELINE from the jest setup: the declaration must come from the app itself.
    const env = {
      AWS_ENDPOINT_URL: '',
      REDIS_URL: '',
      TENANG_MOTO_PORT: String(await freePort()),
      TENANG_PIPELINE: undefined,
    };

    // Act
    const out = sh(
      path.join(app, 'node_modules', '.bin', 'tenang'),
      ['local', 'start', '--scenario', 'smoke'],
      app,
      env,
    );

    // Assess
    expect(out).toContain('Scenario smoke: ALL INVARIANTS HOLD');
    const reports = fs.readdirSync(path.join(app, 'reports')).filter((d) => d.endsWith('-smoke'));
    expect(reports).toHaveLength(1);
    expect(fs.existsSync(path.join(app, 'reports', reports[0] ?? '', 'report.json'))).toBe(true);
    expect(fs.readdirSync(path.join(app, '.tenang', 'synth-cache')).length).toBeGreaterThan(0);
    // Nothing of the run inside the package: no cache, assembly or report in node_modules/tenang.
    expect(
      fs.readdirSync(installed).filter((f) => ['.tenang', 'reports', '.venv', 'cdk.out'].includes(f)),
    ).toEqual([]);
  });
  it("the whole walk, as README tells a team: tenang init outside the repo, a second job type in its two files, synth, local start, the offline audit, a drill of the new job type and the app's own npm test", async () => {
    // Prepare: README's own-app steps, from the tarball, in a directory outside the repository.
    const app = path.join(work, 'my-app');
    const env = {
      AWS_ENDPOINT_URL: '',
      REDIS_URL: '',
      TENANG_PIPELINE: undefined,
      CDK_DISABLE_CLI_TELEMETRY: 'true',
    };
    sh(
      'npx',
      [
        '--yes',
        '--prefer-offline',
        '--package',
        tarball,
        'tenang',
        'init',
        'my-app',
        '--tenang-spec',
        tarball,
        '--yes',
      ],
      work,
      env,
    );
    install(app);
    const bin = (name: string): string => path.join(app, 'node_modules', '.bin', name);
    // The second job type: its module and its entry in the declaration (README's snippets).
    fs.writeFileSync(
      path.join(app, 'jobs', 'invoice-issue.ts'),
      [
        "import { defineJob, jobHandler } from 'tenang/runtime';",
        "import * as z from 'tenang/zod';",
        '',
        'export const invoiceIssue = defineJob({',
        "  name: 'invoice.issue',",
        '  payload: z.object({ invoiceId: z.string().check(z.minLength(1)), amountMinor: z.int().check(z.positive()) }),',
        '  async run(payload, ctx) {',
        "    await ctx.providers.invoicing.post('/invoices', payload);",
        '  },',
        '});',
        'export const handler = jobHandler(invoiceIssue);',
        '',
      ].join('\n'),
    );
    const declaration = path.join(app, 'pipeline.ts');
    const before = fs.readFileSync(declaration, 'utf8');
    const withProvider = before.replace(
      /(providers: \{\n(\s*)reports: [^\n]*\n)/,
      "$1$2invoicing: 'https://invoicing.example.com',\n",
    );
    const withJob = withProvider.replace(
      /(\n\s*\],\n\s*streamConsumers: \[\],)/,
      `
      {
        name: 'invoice.issue', consumer: 'invoice-consumer', entry: 'jobs/invoice-issue.ts',
        queue: { kind: 'standard' }, function: { timeoutSeconds: 20, memoryMb: 256 },
        batch: { size: 5, maxConcurrency: 2 }, maxReceiveCount: 4, retry: { baseDelaySeconds: 2, maxDelaySeconds: 60 },
        criticality: 'critical', latencyObjectiveSeconds: 300, owner: 'billing-team', idempotent: true,
        resources: { tables: { idempotency: ['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem'] }, providers: ['invoicing'] },
        pauseCost: 'Invoices go out late; nothing is lost.', runbook: 'invoice-issue',
        samplePayload: { invoiceId: 'inv-sample', amountMinor: 1200 },
      },$1`,
    );
    expect(withJob).not.toBe(withProvider);
    expect(withProvider).not.toBe(before);
    fs.writeFileSync(declaration, withJob);

    // Act: each step as the team runs it, from the app's directory.
    const runbooks = sh(bin('tenang'), ['runbooks'], app, env);
    sh(bin('cdk'), ['synth', '--quiet'], app, env);
    const audit = JSON.parse(sh(bin('tenang'), ['audit', '--json'], app, env)) as {
      items: { ruleId: string; status: string; message?: string }[];
    };
    // npm start is `tenang local start`; its shortest scenario, the smoke, on the app's own job types.
    const local = sh(NPM, ['start', '--', '--scenario', 'smoke'], app, {
      ...env,
      TENANG_MOTO_PORT: String(await freePort()),
    });
    const drill = sh(bin('tenang'), ['drill', 'dlq-not-empty', '--job-type', 'invoice.issue'], app, {
      ...env,
      TENANG_MOTO_PORT: String(await freePort()),
    });
    const tests = sh(NPM, ['test'], app, env);

    // Assess
    expect(runbooks).toContain('runbooks/invoice-issue.md');
    expect(fs.existsSync(path.join(app, 'runbooks', 'invoice-issue.md'))).toBe(true);
    const report = JSON.parse(
      fs.readFileSync(path.join(app, 'cdk.out', 'validation-report.json'), 'utf8'),
    ) as {
      pluginReports: { violations: unknown[] }[];
    };
    expect(report.pluginReports.flatMap((r) => r.violations)).toEqual([]);
    expect(audit.items.filter((i) => i.status === 'fail')).toEqual([]);
    expect(
      audit.items.filter((i) => ['P1', 'P2'].some((p) => i.ruleId.includes(p))).map((i) => i.status),
    ).toEqual(expect.arrayContaining(['pass']));
    expect(local).toContain('Scenario smoke: ALL INVARIANTS HOLD');
    for (const jobType of ['report.generate', 'invoice.issue']) expect(local).toContain(jobType);
    expect(drill).toMatch(/dlq-not-empty[\s\S]*passed/i);
    expect(tests).toMatch(/# fail 0/);
    // Nothing of the walk inside the installed package.
    expect(
      fs
        .readdirSync(path.join(app, 'node_modules', 'tenang'))
        .filter((f) => ['.tenang', 'reports', '.venv', 'cdk.out'].includes(f)),
    ).toEqual([]);
  });
});
