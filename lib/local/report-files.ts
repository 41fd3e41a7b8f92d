/** Writes a scenario report to reports/<timestamp>-<scenario>/ as report.html and report.json. */
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { renderReportHtml } from './report-html';
import type { ScenarioReport } from './report-model';

/** Where a report was written. */
export interface WrittenReport {
  readonly dir: string;
  readonly html: string;
  readonly json: string;
}

/** A directory name for a run started at `at`, e.g. 2026-11-29T10-55-24Z-smoke (sortable, no colons). */
export function reportDirName(at: Date, scenario: string): string {
  const stamp = at
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replaceAll(':', '-');
  return `${stamp}-${scenario.replace(/[^A-Za-z0-9_-]/g, '_')}`;
}

/** Creates a run's report directory under `reportsRoot`; a second run in the same second gets a suffix. */
export async function createReportDir(
  reportsRoot: string,
  startedAt: Date,
  scenario: string,
): Promise<string> {
  const base = path.join(reportsRoot, reportDirName(startedAt, scenario));
  let dir = base;
  for (let n = 2; ; n += 1) {
    try {
      await fs.mkdir(dir, { recursive: false });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        await fs.mkdir(path.dirname(dir), { recursive: true });
        continue;
      }
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      dir = `${base}-${n}`;
    }
  }
  return dir;
}

/** Writes report.json and report.html into `dir` (from createReportDir). */
export async function writeReport(dir: string, report: ScenarioReport): Promise<WrittenReport> {
  const html = path.join(dir, 'report.html');
  const json = path.join(dir, 'report.json');
  await fs.writeFile(json, `${JSON.stringify(report, null, 2)}\n`);
  await fs.writeFile(html, renderReportHtml(report));
  return { dir, html, json };
}
