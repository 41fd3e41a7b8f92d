// After `tsc -p tsconfig.build.json`: copies what the compiled package loads at run time besides
// the JavaScript tsc emits (the local platform's Lambda runtime, loaded by path from
// dist/lib/local/function-host.js, the emulator's moto launcher and its SNS patch) and makes the
// CLI executable. Every non-TypeScript file under lib/local is one of them: none is left behind.
import * as fs from 'node:fs';
import * as path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
/** Files under `dir` (relative to root) that tsc does not emit: .mjs and .py. */
const runtimeFiles = (dir) =>
  fs
    .readdirSync(path.join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(mjs|py)$/.test(e.name))
    .map((e) => path.relative(root, path.join(e.parentPath, e.name)))
    .sort();
const assets = runtimeFiles('lib/local');
for (const file of assets) {
  fs.mkdirSync(path.dirname(path.join(root, 'dist', file)), { recursive: true });
  fs.copyFileSync(path.join(root, file), path.join(root, 'dist', file));
}
fs.chmodSync(path.join(root, 'dist', 'bin', 'tenang.js'), 0o755);
process.stdout.write(`copied ${assets.length} asset(s) into dist/: ${assets.join(', ')}\n`);
