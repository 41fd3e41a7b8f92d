#!/usr/bin/env -S npx tsx
/**
 * `npm run iam-report`: least privilege shown, not claimed. Reads the usage files every local
 * platform writes when it stops (reports/iam/, or TENANG_IAM_USAGE_DIR) — so run it after a full
 * `npm test` — and writes bench/IAM.md: per role, every granted action and resource no request
 * used, and every `Resource: "*"`, each with its written reason or flagged as having none.
 * Exits 1 when a grant is unused without a reason (`--strict`), 2 when there is nothing to read.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Command } from 'commander';
import { REFERENCE_GRANT_REASONS } from '../examples/reference/iam-grant-reasons';
import { iamReport, iamReportMarkdown, type IamUsageFile } from '../lib/local/iam/usage';

const root = path.join(__dirname, '..');
const program = new Command('iam-report')
  .description('List the grants no local platform request used, and every Resource "*", with their reasons')
  .option(
    '--dir <path>',
    'where the platforms wrote their usage',
    process.env.TENANG_IAM_USAGE_DIR ?? path.join(root, 'reports', 'iam'),
  )
  .option('--out <file>', 'markdown report', path.join(root, 'bench', 'IAM.md'))
  .option('--strict', 'exit 1 when a grant is unused and has no written reason')
  .parse();
const opts = program.opts<{ dir: string; out: string; strict?: boolean }>();

const files = fs.existsSync(opts.dir)
  ? fs.readdirSync(opts.dir).filter((f) => /^usage-.*\.json$/.test(f))
  : [];
if (files.length === 0) {
  process.stderr.write(
    `iam-report: no usage files in ${opts.dir}: run \`npm test\` (or any local platform) first; IAM must be on (TENANG_IAM not "off")\n`,
  );
  process.exit(2);
}
const usage: IamUsageFile[] = [];
for (const f of files) {
  try {
    usage.push(JSON.parse(fs.readFileSync(path.join(opts.dir, f), 'utf8')) as IamUsageFile);
  } catch (error) {
    process.stderr.write(`iam-report: skipping ${f}: ${(error as Error).message}\n`);
  }
}
// This repository's runs deploy the reference app: its own reasons come first.
const report = iamReport(usage, REFERENCE_GRANT_REASONS);
fs.mkdirSync(path.dirname(opts.out), { recursive: true });
fs.writeFileSync(opts.out, iamReportMarkdown(report, new Date().toISOString().slice(0, 10)));
const unexplained = report.unused.filter((u) => u.reason === undefined);
process.stdout.write(
  `${report.runs} platform runs; ${report.unused.length} unused grants (${unexplained.length} without a reason); ${report.wildcards.length} Resource "*" statements; ${report.denied.length} distinct denials; wrote ${path.relative(process.cwd(), opts.out)}\n`,
);
process.exit(opts.strict === true && unexplained.length > 0 ? 1 : 0);
