/**
 * The hints the CLI prints fit where it runs: tenang's checkout gets the repo's commands, an app
 * that installed the package gets the package's (lib/ops/cli-place.ts), through every hint: the
 * credentials remedies, `--help`'s runbooks, the cache commands' help, `drill --list`.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCaptured } from '../../../bin/tenang';
import { renderOperatorEnvironment } from '../../../lib/local/start';
import { connectionHelp } from '../../../lib/ops/cache/messages';
import { describeCredentialsFailure } from '../../../lib/ops/cli-errors';
import { cliPlace } from '../../../lib/ops/cli-place';

const CHECKOUT = path.resolve(__dirname, '..', '..', '..');
const MISSING = {
  problem: 'missing',
  name: 'CredentialsProviderError',
  message: 'Could not load credentials from any providers',
} as const;

let app: string;
beforeEach(() => {
  // An app as `npm init` and `npm install tenang` leave it: its own package.json, a subdirectory.
  app = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-app-'));
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'my-pipeline', version: '1.0.0' }));
  fs.mkdirSync(path.join(app, 'jobs'));
});
afterEach(() => fs.rmSync(app, { recursive: true, force: true }));

describe('Function: cliPlace', () => {
  it("when run in tenang's checkout, it names the repo's npm script and runbooks/README.md", () => {
    // Act
    const place = cliPlace(CHECKOUT);

    // Assess
    expect(place).toMatchObject({
      kind: 'checkout',
      localUp: 'npm run local -- up',
      runbooksIndex: 'runbooks/README.md',
    });
    expect(place.runbook('stuck-jobs')).toBe(path.join('runbooks', 'stuck-jobs.md'));
  });

  it("when run in an app (or a directory of it), it names the package's command and runbooks that exist", () => {
    // Act
    const places = [cliPlace(app), cliPlace(path.join(app, 'jobs'))];

    // Assess
    for (const place of places) {
      expect(place.kind).toBe('app');
      expect(place.localUp).toBe('npx tenang local up');
      expect(place.runbooksIndex).not.toBe('runbooks/README.md');
      expect(fs.existsSync(path.resolve(app, place.runbooksIndex))).toBe(true);
      expect(fs.existsSync(path.resolve(app, place.runbook('stuck-jobs')))).toBe(true);
    }
  });

  it('when the package is installed under node_modules, the runbooks are named from the app', () => {
    // Prepare: the CLI's code in <app>/node_modules/tenang/dist/lib/ops, as npm installs it.
    const installed = path.join(app, 'node_modules', 'tenang');
    fs.mkdirSync(path.join(installed, 'dist', 'lib', 'ops'), { recursive: true });
    fs.writeFileSync(path.join(installed, 'package.json'), JSON.stringify({ name: 'tenang' }));

    // Act
    const place = cliPlace(app, path.join(installed, 'dist', 'lib', 'ops'));

    // Assess
    expect(place.runbooksIndex).toBe(path.join('node_modules', 'tenang', 'runbooks', 'README.md'));
    expect(place.localUp).toBe('npx tenang local up');
  });
});

describe('The hints, in an app', () => {
  it('when no credentials are found, the local platform hint is the package command, not an npm script', () => {
    // Act
    const text = describeCredentialsFailure(MISSING, {}, cliPlace(app));

    // Assess
    expect(text).toContain('start `npx tenang local up` and run the `export` lines');
    expect(text).not.toMatch(/npm run|npx tsx|bin\//);
  });

  it("when in the checkout, the same hint is the repo's npm script", () => {
    expect(describeCredentialsFailure(MISSING, {}, cliPlace(CHECKOUT))).toContain(
      'start `npm run local -- up`',
    );
  });

  it('when --help is shown in an app, its runbooks line names a file that exists there', async () => {
    // Act
    const inApp = await runCaptured(['--help'], { cwd: app });
    const inCheckout = await runCaptured(['--help'], { cwd: CHECKOUT });

    // Assess
    const runbooks = /Runbooks: (\S+) /.exec(inApp.out)?.[1];
    expect(runbooks).toBeDefined();
    expect(runbooks).not.toBe('runbooks/README.md');
    expect(fs.existsSync(path.resolve(app, runbooks ?? ''))).toBe(true);
    expect(inCheckout.out).toContain('Runbooks: runbooks/README.md (every step');
  });

  it("when the cache commands' help is shown in an app, it names the package's local command", () => {
    expect(connectionHelp(cliPlace(app))).toContain('as `npx tenang local up` prints');
    expect(connectionHelp(cliPlace(app))).not.toContain('npm run');
  });

  it("when the local platform prints how to use it in an app, its examples run the package's CLI", () => {
    // Act
    const inApp = renderOperatorEnvironment({}, { routes: [], notes: [] }, cliPlace(app));
    const inCheckout = renderOperatorEnvironment({}, { routes: [], notes: [] }, cliPlace(CHECKOUT));

    // Assess
    expect(inApp).toContain('#   npx tenang status\n');
    expect(inApp).not.toContain('bin/tenang.ts');
    expect(inCheckout).toContain('#   npx tsx bin/tenang.ts status\n');
  });

  it("when the local platform prints how to use it, its examples name the app's own job type and routes, nothing of another app", () => {
    // Act
    const printed = renderOperatorEnvironment(
      {},
      {
        routes: [{ method: 'POST', path: '/reports' }],
        notes: [],
        jobTypes: [{ name: 'report.generate', consumer: 'report-consumer' }],
      },
      cliPlace(app),
    );
    const noApi = renderOperatorEnvironment(
      {},
      { routes: [], notes: [], jobTypes: [{ name: 'report.generate', consumer: 'report-consumer' }] },
      cliPlace(app),
    );

    // Assess
    expect(printed).toContain('#   npx tenang pause report-consumer --reason');
    expect(printed).toContain('#   npx tenang dlq list report.generate\n');
    expect(printed).toContain('curl -s -X POST "$TENANG_API_URL/reports"');
    expect(printed).not.toMatch(/payment|notification|orders/);
    expect(noApi).not.toContain('curl');
    expect(noApi).not.toContain('HTTP API routes');
  });
});
