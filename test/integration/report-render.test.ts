/**
 * Renders a scenario report (built from synthetic samples, no platform needed) in headless
 * Chromium and fails on console errors, page errors, requests for anything but the page itself,
 * and empty charts. Chromium is the Debian package `chromium`, driven by playwright-core.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createReportDir, writeReport, type WrittenReport } from '../../lib/local/report-files';
import { renderReportHtml } from '../../lib/local/report-html';
import type { ScenarioReport } from '../../lib/local/report-model';
import { syntheticReport } from '../fixtures/synthetic-report';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];

/** What a render saw. */
interface Render {
  readonly consoleErrors: string[];
  readonly pageErrors: string[];
  /** Requests other than the page itself. */
  readonly foreignRequests: string[];
  /** Per chart: its id and how many drawn series elements have a visible size. */
  readonly charts: { id: string; drawn: number; width: number; height: number }[];
  verdict: string;
}

async function render(browser: Browser, file: string): Promise<Render> {
  const page: Page = await browser.newPage();
  const seen: Render = { consoleErrors: [], pageErrors: [], foreignRequests: [], charts: [], verdict: '' };
  page.on('console', (m) => {
    if (m.type() === 'error') seen.consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => seen.pageErrors.push(e.message));
  const url = `file://${file}`;
  page.on('request', (r) => {
    if (r.url() !== url) seen.foreignRequests.push(r.url());
  });
  try {
    await page.goto(url, { waitUntil: 'load' });
    const charts = await page.$$eval('svg[data-chart]', (svgs) =>
      svgs.map((svg) => {
        const box = svg.getBoundingClientRect();
        const drawn = [...svg.querySelectorAll('polyline.series, circle.series')].filter((el) => {
          const b = (el as unknown as { getBBox(): { width: number } }).getBBox();
          const points =
            el.tagName === 'polyline' ? (el.getAttribute('points') ?? '').trim().split(/\s+/).length : 1;
          // A line needs two points and some extent; a lone point is a circle.
          return el.tagName === 'circle' || (points >= 2 && b.width > 0);
        }).length;
        return { id: svg.getAttribute('data-chart') ?? '', drawn, width: box.width, height: box.height };
      }),
    );
    seen.charts.push(...charts);
    seen.verdict = (await page.textContent('#verdict')) ?? '';
  } finally {
    await page.close();
  }
  return seen;
}

function emptyCharts(r: Render): string[] {
  return r.charts.filter((c) => c.drawn === 0 || c.width === 0 || c.height === 0).map((c) => c.id);
}

// Chromium starts and renders in a second or two alone; npm test runs this suite beside a whole
// local platform (scripts/test-lanes.ts), where the 5 s default was exceeded (CI, 2026-12-02).
jest.setTimeout(60_000);
describe('Report rendering in headless Chromium', () => {
  let browser: Browser | undefined;
  let dir: string;

  beforeAll(async () => {
    if (!fs.existsSync(CHROMIUM)) {
      throw new Error(
        `${CHROMIUM} is missing. Install Chromium (Debian/Ubuntu, as root): apt-get update && apt-get install -y chromium`,
      );
    }
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-report-'));
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });

  afterAll(async () => {
    await browser?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  function requireBrowser(): Browser {
    if (browser === undefined) throw new Error('Chromium did not start (see beforeAll)');
    return browser;
  }

  describe('when a report of a run is written and opened', () => {
    let report: ScenarioReport;
    let written: WrittenReport;
    let seen: Render;

    beforeAll(async () => {
      report = syntheticReport();
      written = await writeReport(
        await createReportDir(dir, new Date(report.scenario.startedAt), 'synthetic'),
        report,
      );
      seen = await render(requireBrowser(), written.html);
    });

    it('it writes report.html and report.json with the same data', () => {
      // Assess
      expect(path.basename(written.dir)).toBe('2026-11-29T10-00-00Z-synthetic');
      expect(JSON.parse(fs.readFileSync(written.json, 'utf8'))).toEqual(JSON.parse(JSON.stringify(report)));
      expect(fs.statSync(written.html).size).toBeGreaterThan(0);
    });

    it('it shows no console or page error and requests nothing but itself', () => {
      // Assess
      expect(seen.consoleErrors).toEqual([]);
      expect(seen.pageErrors).toEqual([]);
      expect(seen.foreignRequests).toEqual([]);
    });

    it('it draws every chart with at least one visible series', () => {
      // Assess
      expect(seen.charts.map((c) => c.id)).toEqual([
        'queue-depth',
        'in-flight',
        'oldest-age',
        'retries',
        'dlq',
        'cache-hit-ratio',
      ]);
      expect(emptyCharts(seen)).toEqual([]);
    });

    it('it shows the verdict', () => {
      // Assess
      expect(seen.verdict).toBe('ALL INVARIANTS HOLD');
    });
  });

  describe('when the checks meet a broken report', () => {
    it('a report without samples is seen as having empty charts', async () => {
      // Prepare
      const empty = syntheticReport({ samples: [] });
      const written = await writeReport(await createReportDir(dir, new Date(), 'empty'), empty);

      // Act
      const seen = await render(requireBrowser(), written.html);

      // Assess
      expect(emptyCharts(seen)).toHaveLength(6);
    });

    it('an external asset is refused by the page policy and shows as a console error', async () => {
      // Prepare
      const html = renderReportHtml(syntheticReport()).replace(
        '</body>',
        '<img src="https://assets.example.invalid/logo.png" alt=""></body>',
      );
      const file = path.join(dir, 'external.html');
      fs.writeFileSync(file, html);

      // Act
      const seen = await render(requireBrowser(), file);

      // Assess
      expect(seen.consoleErrors.join('\n')).toMatch(/Content Security Policy|Refused to load/);
    });
  });
});
