/**
 * Whether the CLI runs in a team's CDK app directory (an app that installed tenang): `tenang audit`
 * there synthesizes the app offline instead of reading the deployed stack. tenang's own checkout
 * has a cdk.json too, but keeps its own audit (the declaration's stack from TENANG_PIPELINE or the
 * deployed template, which the drills' runbook steps audit). Kept apart from lib/ops/audit.ts,
 * which loads aws-cdk-lib: the command asks before it runs.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The CDK CLI's project file: its `app` is the command that synthesizes the app, its `context` the app's context. */
export const CDK_PROJECT_FILE = 'cdk.json';

/** The name in the nearest package.json at or above `dir`, or undefined. */
function nearestPackageName(dir: string): string | undefined {
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    const file = path.join(current, 'package.json');
    if (fs.existsSync(file)) {
      try {
        const name = (JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: unknown }).name;
        return typeof name === 'string' ? name : undefined;
      } catch {
        return undefined; // an unreadable package.json names no project, so not tenang's
      }
    }
    if (path.dirname(current) === current) return undefined;
  }
}

/** `dir` when it holds a cdk.json and is not inside tenang's own checkout, else undefined. */
export function appDirectory(dir: string = process.cwd()): string | undefined {
  if (!fs.existsSync(path.join(dir, CDK_PROJECT_FILE))) return undefined;
  return nearestPackageName(dir) === 'tenang' ? undefined : path.resolve(dir);
}

/**
 * The app of the working directory: the nearest directory at or above `cwd` holding a cdk.json,
 * unless that is tenang's own checkout; undefined when there is none.
 */
export function nearestAppDirectory(cwd: string = process.cwd()): string | undefined {
  for (let current = path.resolve(cwd); ; current = path.dirname(current)) {
    if (fs.existsSync(path.join(current, CDK_PROJECT_FILE))) return appDirectory(current);
    if (path.dirname(current) === current) return undefined;
  }
}
