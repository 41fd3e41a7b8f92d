/**
 * Which app the local platform deploys and with which `cdk`: the app of the working directory
 * (the nearest cdk.json at or above it: a team's app that installed tenang, or tenang's own
 * checkout), never the directory tenang's code sits in. In an app that is node_modules/tenang,
 * and everything the platform writes (the assembly and synth cache in .tenang/, reports/, a
 * .venv for moto) must land in the app instead.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { LocalEnvError } from './errors';

/** The CDK CLI's project file: its `app` is the command that synthesizes the app. */
const CDK_PROJECT_FILE = 'cdk.json';

/** What a team runs to get the CDK CLI into its app. */
export const CDK_INSTALL_COMMAND = 'npm install -D aws-cdk';

/** The nearest directory at or above `cwd` holding a cdk.json, or undefined. */
export function findAppDirectory(cwd: string = process.cwd()): string | undefined {
  for (let current = path.resolve(cwd); ; current = path.dirname(current)) {
    if (fs.existsSync(path.join(current, CDK_PROJECT_FILE))) return current;
    if (path.dirname(current) === current) return undefined;
  }
}

/** The app the local platform deploys from `cwd` (findAppDirectory); none is a clear error. */
export function localAppDirectory(cwd: string = process.cwd()): string {
  const found = findAppDirectory(cwd);
  if (found === undefined)
    throw new LocalEnvError(
      `no ${CDK_PROJECT_FILE} in ${path.resolve(cwd)} or above: run the local platform from your CDK app's directory (the one whose ${CDK_PROJECT_FILE} synthesizes the app that uses tenang).`,
    );
  return found;
}

/** tenang's own root: the first directory at or above `codeDir` whose package.json is tenang's. */
export function tenangRoot(codeDir: string = __dirname): string {
  for (let current = codeDir; path.dirname(current) !== current; current = path.dirname(current)) {
    try {
      const { name } = JSON.parse(fs.readFileSync(path.join(current, 'package.json'), 'utf8')) as {
        name?: unknown;
      };
      if (name === 'tenang') return current;
    } catch {
      // No (readable) package.json here: keep looking above.
    }
  }
  return path.resolve(codeDir, '..', '..');
}

/**
 * The `cdk` that deploys `appDir`: the app's own (`<app>/node_modules/.bin/cdk`, the version the
 * team pinned), else the one installed with tenang; neither is an error naming the install command.
 */
export function cdkCommand(appDir: string, packageRoot: string = tenangRoot()): string {
  const candidates = [...new Set([appDir, packageRoot])].map((dir) =>
    path.join(dir, 'node_modules', '.bin', 'cdk'),
  );
  const found = candidates.find((file) => fs.existsSync(file));
  if (found === undefined)
    throw new LocalEnvError(
      `the AWS CDK CLI (cdk) was not found (looked for ${candidates.join(' and ')}); the local platform deploys the app with it. Install it in the app: ${CDK_INSTALL_COMMAND}`,
    );
  return found;
}
