#!/usr/bin/env -S npx tsx
/**
 * `npm run runbooks`: writes the generated runbook files (runbooks/README.md and the consumer
 * fact pages) from the pipeline config; `--check` writes nothing and exits 1 when a committed
 * file differs from what the config says (CI runs the equivalent test).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Command } from 'commander';
import { loadPipelineConfig } from '../lib/config';
import { referencePipeline } from '../examples/reference/pipeline';
import { appDrillInfos } from '../lib/drills/app-drills';
import { generateRunbookFiles } from '../lib/ops/runbook-index';

const program = new Command('runbooks')
  .description('Generate runbooks/README.md and the per-consumer fact pages from the pipeline config')
  .option('--check', 'write nothing; exit 1 when a generated file is out of date')
  .option('--dir <path>', 'runbooks directory', path.join(__dirname, '..', 'runbooks'))
  .parse();
const opts = program.opts<{ check?: boolean; dir: string }>();
// Generated pages name the stage `<stage>`: any stage's config has the same shape. The drills are
// tenang's and the reference app's own (its extensions, named by the checkout's cdk.json).
const files = generateRunbookFiles(loadPipelineConfig(referencePipeline('stage', 'us-east-1')), {
  drills: appDrillInfos(path.join(__dirname, '..')),
});
let stale = 0;
for (const f of files) {
  const target = path.join(opts.dir, f.file);
  const current = fs.existsSync(target) ? fs.readFileSync(target, 'utf8') : undefined;
  if (current === f.content) continue;
  stale += 1;
  if (opts.check === true) process.stderr.write(`out of date: ${path.relative(process.cwd(), target)}\n`);
  else {
    fs.writeFileSync(target, f.content);
    process.stdout.write(`wrote ${path.relative(process.cwd(), target)}\n`);
  }
}
if (opts.check === true && stale > 0) {
  process.stderr.write('run `npm run runbooks` and commit the result\n');
  process.exitCode = 1;
} else if (stale === 0) process.stdout.write(`${files.length} generated runbook file(s) up to date\n`);
