/**
 * The Node.js options that make a local platform's function instances take their faults from
 * TENANG_FAULTS (LocalPlatform.start's functionExecArgv): preload.ts, bundled once per process by
 * esbuild into one small ES module (about 6 KB: the hook registration and the fault middleware,
 * no SDK client). Loading preload.ts through tsx's loader instead cost every instance about
 * 0.4 CPU-s at its start (the loader, a TypeScript transform, three SDK clients of the preload's
 * own) and kept tsx hooked into the load of the function's bundle; the chaos suite starts a few
 * hundred instances, many at once after a crash, which starved the platform's own requests.
 */
import { buildSync } from 'esbuild';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

let built: string | undefined;

/** `--import <bundled preload>`: builds the bundle on the first call of this process. */
export function faultPreloadArgv(): readonly string[] {
  if (built === undefined || !fs.existsSync(built)) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-fault-preload-'));
    const outfile = path.join(dir, 'preload.mjs');
    buildSync({
      entryPoints: [path.join(__dirname, 'preload.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outfile,
      logLevel: 'warning',
    });
    built = outfile;
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  }
  return ['--import', built];
}
