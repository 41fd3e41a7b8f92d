// After `tsc -p tsconfig.build.json`: copies what the compiled package needs besides JavaScript
// (the emulator's moto launcher and its SNS patch) and makes the CLI executable.
import * as fs from 'node:fs';
import * as path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
const assets = ['lib/local/moto_server.py', 'lib/local/moto_sns.py'];
for (const file of assets) {
  fs.mkdirSync(path.dirname(path.join(root, 'dist', file)), { recursive: true });
  fs.copyFileSync(path.join(root, file), path.join(root, 'dist', file));
}
fs.chmodSync(path.join(root, 'dist', 'bin', 'tenang.js'), 0o755);
process.stdout.write(`copied ${assets.length} asset(s) into dist/\n`);
