/**
 * An app directory outside the repository with this checkout's tenang installed the cheap way:
 * laid out as `npm install` would, without the registry or a build. node_modules/tenang is a copy
 * of the sources the package ships (bin, lib, lambdas, runbooks, examples/reference, the feature
 * list, package.json); every other package is a link into this checkout's node_modules, so the
 * app, tenang and cdk-nag share one aws-cdk-lib and one constructs. A copy, not a link, for tenang:
 * the CDK bundles each function from inside the app's project (the lock file's directory), and
 * tenang finds its own functions (lambdas/) from where its code really is.
 *
 * With no dist/, `tenang/*` resolves to the sources through the package's `tenang-source` export
 * condition: LINKED_APP_ENV turns it on for node (tsx runs the app, its tests and the CLI), and
 * the functions' esbuild bundling uses it already (lib/infra/defaults.ts).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

export const REPO = path.resolve(__dirname, '..', '..');

/** What the package ships of tenang's sources, as an installed copy needs them. */
const SHIPPED = [
  'bin',
  'lib',
  'lambdas',
  'runbooks',
  'examples/reference',
  'docs/features.md',
  'package.json',
];

/** The environment the app's commands run in: tenang's sources, no jest declaration, no telemetry. */
export function linkedAppEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_OPTIONS: '--conditions=tenang-source',
    CDK_DISABLE_CLI_TELEMETRY: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
  };
  // The jest setup's declaration is the reference's: the app's commands must read the app's own.
  delete env.TENANG_PIPELINE;
  return env;
}

/** Installs this checkout's tenang into `appDir` (see the module's comment). */
export function linkTenang(appDir: string): void {
  const modules = path.join(appDir, 'node_modules');
  fs.mkdirSync(modules, { recursive: true });
  for (const entry of fs.readdirSync(path.join(REPO, 'node_modules')))
    fs.symlinkSync(path.join(REPO, 'node_modules', entry), path.join(modules, entry));
  const tenang = path.join(modules, 'tenang');
  for (const entry of SHIPPED) {
    fs.mkdirSync(path.dirname(path.join(tenang, entry)), { recursive: true });
    fs.cpSync(path.join(REPO, entry), path.join(tenang, entry), { recursive: true });
  }
  // What `npm install` writes: the CDK's bundling finds the app's project root by it.
  fs.writeFileSync(
    path.join(appDir, 'package-lock.json'),
    `${JSON.stringify({ name: path.basename(appDir), lockfileVersion: 3, requires: true, packages: {} }, null, 2)}\n`,
  );
}

/** What a command printed and how it ended. */
export interface AppRun {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/** Runs `command` in the app's directory with LINKED_APP_ENV. */
export function runInApp(appDir: string, command: string, args: readonly string[]): AppRun {
  const result = spawnSync(command, [...args], {
    cwd: appDir,
    env: linkedAppEnv(),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    timeout: 180_000,
  });
  if (result.error !== undefined) throw result.error;
  return { code: result.status ?? 1, out: result.stdout, err: result.stderr };
}

/** Runs the app's installed `tenang` CLI (its sources, through tsx) in the app's directory. */
export function tenangInApp(appDir: string, args: readonly string[]): AppRun {
  return runInApp(appDir, path.join(appDir, 'node_modules', '.bin', 'tsx'), [
    path.join(appDir, 'node_modules', 'tenang', 'bin', 'tenang.ts'),
    ...args,
  ]);
}
