/**
 * Renders a ScenarioReport as one self-contained HTML page: inline CSS, inline SVG charts, no
 * script and no external asset. Its Content-Security-Policy forbids loading anything, so a
 * stray external reference shows up as a console error in the render test instead of a silent
 * request.
 */
import type { AlarmTransition, IncidentRecord, ScenarioReport } from './report-model';

/** Colours of successive series; readable on white and in print. */
const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#17becf'];

const WIDTH = 760;
const HEIGHT = 230;
const MARGIN = { top: 16, right: 16, bottom: 34, left: 54 };

/** Escapes text for HTML content and attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** One line of a chart. */
export interface ChartSeries {
  readonly name: string;
  /** Aligned with the chart's x values; null is a gap. */
  readonly values: readonly (number | null)[];
}

/** A line chart. */
export interface LineChart {
  /** Stable id, also the data-chart attribute the render test looks for. */
  readonly id: string;
  readonly title: string;
  readonly unit: string;
  readonly xs: readonly number[];
  readonly series: readonly ChartSeries[];
  /** Shaded time ranges (incidents), seconds. */
  readonly bands: readonly { readonly from: number; readonly to: number; readonly label: string }[];
  /** Fixed y range top (e.g. 1 for a ratio). @default - the data's maximum */
  readonly yMax?: number;
  /** Format of y tick labels. @default integers or one decimal */
  readonly formatY?: (v: number) => string;
}

/** A "nice" tick step at or above `raw`: 1, 2, 2.5 or 5 × 10^n. */
export function niceStep(raw: number): number {
  if (!(raw > 0)) return 1;
  const exponent = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * exponent >= raw - 1e-9) return m * exponent;
  return 10 * exponent;
}

/** The y axis of a chart whose largest value is `max`: a nice step and 1 to 5 ticks above 0. */
export function yAxis(max: number, fixedMax?: number): { top: number; step: number } {
  if (fixedMax !== undefined) return { top: fixedMax, step: fixedMax / 4 };
  if (!(max > 0)) return { top: 1, step: 1 };
  const step = niceStep(max / 4);
  return { top: step * Math.max(1, Math.ceil(max / step - 1e-9)), step };
}

function defaultFormat(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

/** Points of a series as polyline segments (split at nulls). */
export function seriesSegments(
  xs: readonly number[],
  values: readonly (number | null)[],
  scaleX: (x: number) => number,
  scaleY: (y: number) => number,
): string[][] {
  const segments: string[][] = [];
  let current: string[] = [];
  values.forEach((v, i) => {
    const x = xs[i];
    if (v === null || x === undefined || !Number.isFinite(v)) {
      if (current.length > 0) segments.push(current);
      current = [];
      return;
    }
    current.push(`${scaleX(x).toFixed(1)},${scaleY(v).toFixed(1)}`);
  });
  if (current.length > 0) segments.push(current);
  return segments;
}

/** Renders a line chart as an SVG element. */
export function renderLineChart(chart: LineChart): string {
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const xMin = chart.xs[0] ?? 0;
  const xMax = Math.max(xMin + 1, chart.xs[chart.xs.length - 1] ?? 1);
  const dataMax = Math.max(
    0,
    ...chart.series.flatMap((s) => s.values.filter((v): v is number => v !== null && Number.isFinite(v))),
  );
  const { top: yMax, step: yStep } = yAxis(dataMax, chart.yMax);
  const scaleX = (x: number): number => MARGIN.left + ((x - xMin) / (xMax - xMin)) * plotW;
  const scaleY = (y: number): number => MARGIN.top + plotH - (Math.min(y, yMax) / yMax) * plotH;
  const format = chart.formatY ?? defaultFormat;

  const parts: string[] = [];
  for (const band of chart.bands) {
    const from = Math.max(xMin, band.from);
    const to = Math.min(xMax, Math.max(band.to, band.from + (xMax - xMin) / 200));
    if (to <= xMin || from >= xMax) continue;
    parts.push(
      `<rect class="band" x="${scaleX(from).toFixed(1)}" y="${MARGIN.top}" width="${(scaleX(to) - scaleX(from)).toFixed(1)}" height="${plotH}"><title>${escapeHtml(band.label)}</title></rect>`,
    );
  }
  for (let v = 0; v <= yMax + 1e-9; v += yStep) {
    const y = scaleY(v).toFixed(1);
    parts.push(
      `<line class="grid" x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${y}" y2="${y}"/>`,
      `<text class="tick" x="${MARGIN.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${escapeHtml(format(v))}</text>`,
    );
  }
  const xStep = niceStep((xMax - xMin) / 6);
  for (let v = Math.ceil(xMin / xStep) * xStep; v <= xMax + 1e-9; v += xStep) {
    parts.push(
      `<text class="tick" x="${scaleX(v).toFixed(1)}" y="${HEIGHT - MARGIN.bottom + 16}" text-anchor="middle">${Math.round(v)} s</text>`,
    );
  }
  parts.push(
    `<line class="axis" x1="${MARGIN.left}" x2="${MARGIN.left}" y1="${MARGIN.top}" y2="${MARGIN.top + plotH}"/>`,
    `<line class="axis" x1="${MARGIN.left}" x2="${WIDTH - MARGIN.right}" y1="${MARGIN.top + plotH}" y2="${MARGIN.top + plotH}"/>`,
    `<text class="unit" x="${MARGIN.left}" y="${MARGIN.top - 4}">${escapeHtml(chart.unit)}</text>`,
  );
  chart.series.forEach((series, index) => {
    const color = PALETTE[index % PALETTE.length] ?? '#333';
    for (const segment of seriesSegments(chart.xs, series.values, scaleX, scaleY)) {
      if (segment.length === 1) {
        const [cx, cy] = (segment[0] ?? '0,0').split(',');
        parts.push(
          `<circle class="series" data-series="${escapeHtml(series.name)}" cx="${cx}" cy="${cy}" r="2.5" fill="${color}"/>`,
        );
      } else {
        parts.push(
          `<polyline class="series" data-series="${escapeHtml(series.name)}" fill="none" stroke="${color}" stroke-width="1.8" points="${segment.join(' ')}"><title>${escapeHtml(series.name)}</title></polyline>`,
        );
      }
    }
  });
  const legend = chart.series
    .map(
      (s, i) =>
        `<span class="key"><span class="swatch" style="background:${PALETTE[i % PALETTE.length] ?? '#333'}"></span>${escapeHtml(s.name)}</span>`,
    )
    .join(' ');
  return [
    `<figure class="chart-box">`,
    `<figcaption>${escapeHtml(chart.title)}</figcaption>`,
    `<svg data-chart="${escapeHtml(chart.id)}" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="${escapeHtml(chart.title)}" xmlns="http://www.w3.org/2000/svg">`,
    ...parts,
    `</svg>`,
    `<div class="legend">${legend}${chart.bands.length > 0 ? ' <span class="key"><span class="swatch band-swatch"></span>incident</span>' : ''}</div>`,
    `</figure>`,
  ].join('\n');
}

/** The charts of a report. */
export function reportCharts(report: ScenarioReport): LineChart[] {
  const xs = report.series.tSeconds;
  const bands = report.incidents.map((i) => ({
    from: i.startMs / 1000,
    to: i.endMs / 1000,
    label: i.title,
  }));
  const byName = (record: Readonly<Record<string, readonly number[]>>): ChartSeries[] =>
    Object.entries(record).map(([name, values]) => ({ name, values }));
  const charts: LineChart[] = [
    {
      id: 'queue-depth',
      title: 'Queue depth (visible + delayed)',
      unit: 'messages',
      xs,
      bands,
      series: byName(report.series.depth),
    },
    {
      id: 'in-flight',
      title: 'In flight',
      unit: 'messages',
      xs,
      bands,
      series: byName(report.series.inFlight),
    },
    {
      id: 'oldest-age',
      title: 'Age of the oldest message (≈, estimated from depth and deletes, nothing received)',
      unit: 'seconds',
      xs,
      bands,
      series: byName(report.series.oldestAgeSeconds),
    },
    {
      id: 'retries',
      title: 'Retries per interval',
      unit: 'retries',
      xs,
      bands,
      series: byName(report.series.retries),
    },
    {
      id: 'dlq',
      title: 'DLQ and on-failure queue depth',
      unit: 'messages',
      xs,
      bands,
      series: byName(report.series.dlq),
    },
    // The app's scenario flow's own charts, when the run had one.
    ...(report.flow?.charts ?? []).map((c): LineChart => ({
      id: c.id,
      title: c.title,
      unit: c.unit,
      xs,
      bands,
      ...(c.yMax === undefined ? {} : { yMax: c.yMax }),
      ...(c.percent === true ? { formatY: (v: number) => `${Math.round(v * 100)}%` } : {}),
      series: [{ name: c.unit, values: c.values }],
    })),
  ];
  return charts;
}

function table(headers: readonly string[], rows: readonly (readonly string[])[], className = ''): string {
  const head = headers.every((h) => h === '') ? '' : headers.map((h) => `<th>${escapeHtml(h)}</th>`).join('');
  const body = rows.map((r) => `<tr>${r.map((c) => `<td>${escapeHtml(c)}</td>`).join('')}</tr>`).join('\n');
  const thead = head === '' ? '' : `<thead><tr>${head}</tr></thead>`;
  return `<table class="${className}">${thead}<tbody>${body}</tbody></table>`;
}

/** When each alarm was in ALARM, from its transitions; an interval still open ends at `endSeconds`. */
export function alarmIntervals(
  timeline: readonly AlarmTransition[],
  endSeconds: number,
): Map<string, { from: number; to: number }[]> {
  const intervals = new Map<string, { from: number; to: number }[]>();
  const openSince = new Map<string, number>();
  for (const t of [...timeline].sort((a, b) => a.atMs - b.atMs)) {
    const at = Math.max(0, t.atMs / 1000);
    const since = openSince.get(t.alarm);
    if (since !== undefined && t.to !== 'ALARM') {
      intervals.set(t.alarm, [...(intervals.get(t.alarm) ?? []), { from: since, to: at }]);
      openSince.delete(t.alarm);
    } else if (since === undefined && t.to === 'ALARM') {
      openSince.set(t.alarm, at);
    }
  }
  for (const [alarm, since] of openSince)
    intervals.set(alarm, [...(intervals.get(alarm) ?? []), { from: since, to: Math.max(since, endSeconds) }]);
  return intervals;
}

const STRIP_ROW = 18;
const STRIP_LABEL = 230;

/** The alarm timeline as bars: one row per alarm that went into ALARM. */
export function renderAlarmStrip(report: ScenarioReport): string {
  const end = report.series.tSeconds[report.series.tSeconds.length - 1] ?? 0;
  const intervals = [...alarmIntervals(report.alarms.timeline, end)].sort(([a], [b]) => a.localeCompare(b));
  if (intervals.length === 0) return '<p>No alarm went into ALARM.</p>';
  const plotW = WIDTH - STRIP_LABEL - MARGIN.right;
  const height = intervals.length * STRIP_ROW + 24;
  const scaleX = (x: number): number =>
    STRIP_LABEL + (Math.min(x, Math.max(end, 1)) / Math.max(end, 1)) * plotW;
  const rows = intervals.map(([alarm, spans], i) => {
    const y = i * STRIP_ROW;
    const label = alarm.replace(/^tenang-[^-]+-/, '');
    const bars = spans
      .map(
        (sp) =>
          `<rect class="alarm-bar" x="${scaleX(sp.from).toFixed(1)}" y="${y + 3}" width="${Math.max(2, scaleX(sp.to) - scaleX(sp.from)).toFixed(1)}" height="${STRIP_ROW - 6}"><title>${escapeHtml(`${alarm}: ALARM ${sp.from.toFixed(1)}–${sp.to.toFixed(1)} s`)}</title></rect>`,
      )
      .join('');
    return `<text class="tick" x="${STRIP_LABEL - 6}" y="${y + STRIP_ROW / 2}" text-anchor="end" dominant-baseline="middle">${escapeHtml(label)}</text><line class="grid" x1="${STRIP_LABEL}" x2="${WIDTH - MARGIN.right}" y1="${y + STRIP_ROW - 1}" y2="${y + STRIP_ROW - 1}"/>${bars}`;
  });
  const axisY = intervals.length * STRIP_ROW;
  const xStep = niceStep(Math.max(end, 1) / 6);
  const ticks: string[] = [];
  for (let v = 0; v <= end + 1e-9; v += xStep)
    ticks.push(
      `<text class="tick" x="${scaleX(v).toFixed(1)}" y="${axisY + 16}" text-anchor="middle">${Math.round(v)} s</text>`,
    );
  return `<svg data-alarm-strip="true" viewBox="0 0 ${WIDTH} ${height}" width="${WIDTH}" height="${height}" role="img" aria-label="Alarms in ALARM over time" xmlns="http://www.w3.org/2000/svg">${rows.join('')}${ticks.join('')}</svg>`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function incidentRows(incidents: readonly IncidentRecord[]): string[][] {
  return incidents.map((i) => [
    `${seconds(i.startMs)} – ${seconds(i.endMs)}`,
    i.title,
    i.how,
    i.injected ? i.observed.join(' · ') : `NOT INJECTED: ${i.error ?? 'unknown error'}`,
  ]);
}

function alarmRows(timeline: readonly AlarmTransition[]): string[][] {
  return timeline.map((t) => [seconds(t.atMs), t.alarm, `${t.from} → ${t.to}`, t.reason ?? '']);
}

const STYLE = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto; max-width: 1100px; color: #222; padding: 0 16px; }
h1 { margin-bottom: 4px; } h2 { margin-top: 32px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
.badge { display: inline-block; padding: 2px 10px; border-radius: 10px; color: #fff; font-weight: 600; }
.ok { background: #2ca02c; } .fail { background: #d62728; }
table { border-collapse: collapse; margin: 8px 0; width: 100%; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
td:first-child { white-space: nowrap; }
th { background: #f5f5f5; white-space: nowrap; overflow-wrap: normal; } td.num { text-align: right; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
.chart-box { margin: 0; border: 1px solid #eee; padding: 8px; }
figcaption { font-weight: 600; margin-bottom: 4px; }
svg .grid { stroke: #eee; } svg .axis { stroke: #999; }
svg .tick, svg .unit { font-size: 11px; fill: #666; }
svg .band { fill: #ffbf00; opacity: 0.18; }
svg .alarm-bar { fill: #d62728; opacity: 0.8; }
.legend { font-size: 12px; color: #444; }
.key { margin-right: 12px; white-space: nowrap; }
.swatch { display: inline-block; width: 12px; height: 3px; vertical-align: middle; margin-right: 4px; }
.band-swatch { background: #ffbf00; opacity: 0.5; height: 10px; }
.holds { color: #2ca02c; font-weight: 600; } .violated { color: #d62728; font-weight: 600; }
code, pre { font: 12px ui-monospace, Menlo, Consolas, monospace; }
pre { white-space: pre-wrap; word-break: break-all; margin: 0; }
.meta td:first-child { width: 200px; color: #555; }
`;

/** Renders the whole report page. */
export function renderReportHtml(report: ScenarioReport): string {
  const s = report.scenario;
  const status = s.interrupted ? 'INTERRUPTED' : report.ok ? 'ALL INVARIANTS HOLD' : 'FAILED';
  const charts = reportCharts(report).map(renderLineChart).join('\n');
  const invariants = report.invariants
    .map(
      (i) =>
        `<tr><td class="${i.holds ? 'holds' : 'violated'}">${i.holds ? 'holds' : 'VIOLATED'}</td><td>${escapeHtml(i.name)}</td><td>${escapeHtml(i.detail)}</td><td><pre>${escapeHtml(i.violations.join('\n'))}</pre></td></tr>`,
    )
    .join('\n');
  const dlqSections = report.dlq
    .map((d) => {
      const classes = Object.entries(d.byErrorClass)
        .map(([c, n]) => `${c}: ${n}`)
        .join(', ');
      const entries =
        d.entries.length === 0
          ? ''
          : table(
              ['error class', 'kind', 'attempts', 'payload fields', 'message', 'body'],
              d.entries.map((e) => [
                e.errorClass,
                e.errorKind ?? '',
                e.attempts === undefined ? '' : String(e.attempts),
                Object.entries(e.payloadFields ?? {})
                  .map(([k, v]) => `${k}=${v}`)
                  .join(' '),
                e.errorMessage ?? '',
                e.body,
              ]),
            );
      return `<h3>${escapeHtml(d.queue)} <small>(${escapeHtml(d.source)})</small>: ${d.total}${classes === '' ? '' : ` — ${escapeHtml(classes)}`}</h3>${entries}`;
    })
    .join('\n');
  const dup = report.duplicatesPrevented;
  const flow = report.flow;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tenang scenario ${escapeHtml(s.name)} — ${escapeHtml(s.startedAt)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>tenang local scenario: ${escapeHtml(s.name)}</h1>
<p><span class="badge ${report.ok ? 'ok' : 'fail'}" id="verdict">${status}</span> ${escapeHtml(s.description)}</p>
${table(
  ['', ''],
  [
    ['started', s.startedAt],
    ['ended', s.endedAt],
    [
      'duration, rate',
      flow === undefined
        ? `${s.durationSeconds} s of traffic: jobs of every job type made from its samplePayload`
        : `${s.durationSeconds} s of traffic at ${s.ratePerSecond} ${flow.rateUnit} (${flow.name})`,
    ],
    ['stage', s.stage],
    ['Redis', s.redis],
    [
      'timings',
      `provision ${seconds(report.timings.provisionMs)}, traffic ${seconds(report.timings.runMs)}, drain ${seconds(report.timings.drainMs)}, collect ${seconds(report.timings.collectMs)}, total ${seconds(report.timings.totalMs)}`,
    ],
    [
      'scenario flow',
      flow === undefined
        ? 'none: no scenario flow of the app runs on this pipeline (declared job types only)'
        : flow.name,
    ],
    ...(flow?.facts ?? []).map((f) => [f.label, f.value]),
    ['job types', report.jobTypes.map((j) => `${j.name} (${j.consumer})`).join(', ')],
  ],
  'meta',
)}
<h2>Invariants</h2>
<table><thead><tr><th>verdict</th><th>invariant</th><th>checked</th><th>violations</th></tr></thead><tbody>
${invariants}
</tbody></table>
<h2>Charts</h2>
<div class="charts">
${charts}
</div>
<h2>Jobs in and out</h2>
${table(
  [
    'job type',
    'in',
    'succeeded',
    'duplicates ignored',
    'dead-lettered',
    'retried',
    'deferred',
    'left in queue',
  ],
  report.jobs.map((j) => [
    j.jobType,
    String(j.in),
    String(j.succeeded),
    String(j.duplicatesIgnored),
    String(j.deadLettered),
    String(j.retried),
    String(j.deferred),
    String(j.leftInQueue),
  ]),
)}
<h2>Duplicates prevented: ${dup.total}</h2>
${table(
  ['where', 'count'],
  [
    ['consumers: job found already done (DuplicateIgnored)', String(dup.consumerDuplicatesIgnored)],
    ...dup.flow.map((d) => [d.where, String(d.count)]),
  ],
)}
${table(
  ['provider', 'requests', 'side effects'],
  Object.entries(report.providers).map(([name, p]) => [name, String(p.requests), String(p.effects)]),
)}
<h2>Dead letters by error class</h2>
${dlqSections}
<h2>Alarm timeline</h2>
<p>${escapeHtml(report.alarms.source)}. ${escapeHtml(report.alarms.note)}</p>
${renderAlarmStrip(report)}
${report.alarms.timeline.length === 0 ? '<p>No alarm changed state.</p>' : table(['at', 'alarm', 'change', 'reason'], alarmRows(report.alarms.timeline))}
<details><summary>Final alarm states (${report.alarms.final.length})</summary>
${table(
  ['alarm', 'state'],
  report.alarms.final.map((a) => [a.alarm, a.state]),
)}
</details>
<h2>Incidents</h2>
${table(['when', 'incident', 'how it was injected', 'what the pipeline did'], incidentRows(report.incidents))}
</body>
</html>
`;
}
