// Preloaded by scripts/cli-load.ts (node --import): at exit, writes which modules the process
// loaded to the file named by TENANG_CLI_LOAD_REPORT: require.cache, which holds every CommonJS
// module, the CLI's TypeScript included (tsx compiles it to CommonJS).
import * as fs from 'node:fs';
import { createRequire } from 'node:module';

const report = process.env.TENANG_CLI_LOAD_REPORT;
if (report !== undefined && report !== '') {
  // One module cache per process: this require's cache is the CLI's.
  const { cache } = createRequire(import.meta.url);
  process.on('exit', () => {
    fs.writeFileSync(report, JSON.stringify({ modules: Object.keys(cache) }));
  });
}
