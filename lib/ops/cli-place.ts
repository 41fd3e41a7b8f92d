/**
 * Where the `tenang` CLI runs, for every hint it prints: inside tenang's own checkout the repo's
 * commands (`npm run local -- up`), in an app that installed the package the package's
 * (`npx tenang local up`); the runbooks as a path that exists from here.
 *
 * The checkout is told by the working directory (its nearest package.json is tenang's), not by
 * where the CLI's code sits: a hint is a command the operator types in this shell, and whether it
 * works depends on the project the shell is in. The checkout may run its compiled CLI
 * (`node dist/bin/tenang.js`, the package tests), and an app may run a linked checkout's code
 * (npm link, a file: dependency) or tenang's sources (the `tenang-source` export condition): the
 * code's location would name the wrong commands in each. What ships in the package (the
 * runbooks) is found from where the CLI's code is, which is where the package is.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The package's name in its package.json (and the checkout's). */
const PACKAGE_NAME = 'tenang';

/** tenang's own checkout, or an app (any other project, or none) that runs the installed package. */
export type CliPlaceKind = 'checkout' | 'app';

/** The commands and paths the CLI's hints name, as they work where it runs. */
export interface CliPlace {
  readonly kind: CliPlaceKind;
  /** Runs the CLI itself from this shell (`<tenang> status`). */
  readonly tenang: string;
  /** Starts the local platform and prints the `export` lines for this shell. */
  readonly localUp: string;
  /** The runbooks' index, as a path from the working directory (absolute when outside it). */
  readonly runbooksIndex: string;
  /** A runbook's page (`stuck-jobs` → …/runbooks/stuck-jobs.md), as runbooksIndex. */
  runbook(name: string): string;
}

/** The `name` of a package.json, or undefined when unreadable or unnamed. */
function packageName(file: string): string | undefined {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: unknown };
    return typeof parsed.name === 'string' ? parsed.name : undefined;
  } catch {
    return undefined;
  }
}

/** The name in the nearest package.json at or above `dir` (undefined when there is none). */
function nearestPackageName(dir: string): string | undefined {
  for (let current = path.resolve(dir); ; current = path.dirname(current)) {
    const file = path.join(current, 'package.json');
    if (fs.existsSync(file)) return packageName(file);
    if (path.dirname(current) === current) return undefined;
  }
}

/** The package's root: the first directory at or above `codeDir` with tenang's package.json. */
export function packageRoot(codeDir: string = __dirname): string {
  for (let current = codeDir; path.dirname(current) !== current; current = path.dirname(current)) {
    if (packageName(path.join(current, 'package.json')) === PACKAGE_NAME) return current;
  }
  return path.resolve(codeDir, '..', '..');
}

/** `file` relative to `cwd` when it lies inside it, else absolute: a path the operator can open from here. */
function fromCwd(cwd: string, file: string): string {
  const relative = path.relative(cwd, file);
  return relative === '' || relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
}

/**
 * Where the CLI runs, seen from `cwd` (see the module's comment for why the working directory
 * decides); `codeDir` is where the CLI's code is (this module's directory: lib/ops in the
 * sources, dist/lib/ops in the package).
 */
export function cliPlace(cwd: string = process.cwd(), codeDir: string = __dirname): CliPlace {
  const kind: CliPlaceKind = nearestPackageName(cwd) === PACKAGE_NAME ? 'checkout' : 'app';
  const runbooks = path.join(packageRoot(codeDir), 'runbooks');
  return {
    kind,
    // `tenang local up` is the package's own way to start the platform; the checkout has the npm script.
    tenang: kind === 'checkout' ? 'npx tsx bin/tenang.ts' : 'npx tenang',
    localUp: kind === 'checkout' ? 'npm run local -- up' : 'npx tenang local up',
    runbooksIndex: fromCwd(path.resolve(cwd), path.join(runbooks, 'README.md')),
    runbook: (name) => fromCwd(path.resolve(cwd), path.join(runbooks, `${name}.md`)),
  };
}
