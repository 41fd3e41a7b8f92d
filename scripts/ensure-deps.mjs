// Installs node_modules when absent or older than the lockfile, so `npm start` and `npm test`
// work as single commands on a fresh clone. Plain JS: it must run before tsx is installed.
import { execSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';

const marker = 'node_modules/.package-lock.json';
const stale =
  !existsSync(marker) ||
  (existsSync('package-lock.json') && statSync('package-lock.json').mtimeMs > statSync(marker).mtimeMs);
if (stale) {
  const cmd = existsSync('package-lock.json')
    ? 'npm ci --no-audit --no-fund'
    : 'npm install --no-audit --no-fund';
  console.log(`[tenang] installing dependencies: ${cmd}`);
  execSync(cmd, { stdio: 'inherit' });
}
