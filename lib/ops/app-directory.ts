/**
 * Whether the CLI runs in a CDK app's directory (a team's app that installed tenang, or tenang's
 * own checkout): `tenang audit` there synthesizes the app offline instead of reading the deployed
 * stack. Kept apart from lib/ops/audit.ts, which loads aws-cdk-lib: the command asks before it runs.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The CDK CLI's project file: its `app` is the command that synthesizes the app, its `context` the app's context. */
export const CDK_PROJECT_FILE = 'cdk.json';

/** `dir` when it holds a cdk.json, else undefined. */
export function appDirectory(dir: string = process.cwd()): string | undefined {
  return fs.existsSync(path.join(dir, CDK_PROJECT_FILE)) ? path.resolve(dir) : undefined;
}
