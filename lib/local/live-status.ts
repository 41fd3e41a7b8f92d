/**
 * The live status of a running scenario: one row per job type (depth, in flight, oldest age,
 * DLQ, paused or degraded, alarms) and per stream consumer. On a terminal the frame is redrawn
 * in place and progress messages scroll in a short "recent" list under it; otherwise (a pipe, CI,
 * a test) it prints one line per period and the messages as they come.
 */
import { renderTable } from '../ops/table';
import type { PipelineSample, ReportedJobType } from './report-model';

/** What the header line says besides the sample. */
export interface StatusContext {
  readonly scenario: string;
  readonly phase: string;
  readonly elapsedSeconds: number;
  readonly durationSeconds: number;
  /** Incidents in progress. */
  readonly activeIncidents: readonly string[];
  /** e.g. "orders 84 · payments accepted 84 · reads 160". */
  readonly traffic: string;
}

/** One row of the table. */
export interface StatusRow {
  readonly name: string;
  readonly depth: string;
  readonly inFlight: string;
  readonly oldestAge: string;
  readonly dlq: string;
  readonly state: string;
  readonly alarms: string;
}

const COLUMNS = ['job type', 'depth', 'in flight', 'oldest age', 'DLQ', 'state', 'alarms'] as const;

/** Alarm names without the stack prefix, for a narrow column. */
function shortAlarm(name: string, prefix: string): string {
  return name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

/** The alarms of a consumer among those in ALARM (its name is part of theirs). */
function alarmsOf(consumer: string, inAlarm: readonly string[], prefix: string): string {
  const mine = inAlarm.filter((a) => a.includes(consumer)).map((a) => shortAlarm(a, prefix));
  return mine.length === 0 ? '-' : mine.join(', ');
}

/** Rows of a sample. */
export function statusRows(
  sample: PipelineSample,
  jobTypes: readonly ReportedJobType[],
  streamConsumers: readonly string[],
  alarmPrefix: string,
): StatusRow[] {
  const rows: StatusRow[] = jobTypes.map((j) => {
    const q = sample.queues[j.name];
    const state = q?.paused ? 'PAUSED' : sample.degraded ? 'degraded' : 'running';
    return {
      name: j.name,
      depth: q === undefined ? '?' : String(q.depth),
      inFlight: q === undefined ? '?' : String(q.inFlight),
      oldestAge: q === undefined ? '?' : `${Math.round(q.oldestAgeSeconds)} s`,
      dlq: q === undefined ? '?' : String(q.dlq),
      state,
      alarms: alarmsOf(j.consumer, sample.alarmsInAlarm, alarmPrefix),
    };
  });
  for (const c of streamConsumers) {
    const s = sample.streams[c];
    rows.push({
      name: `${c} (stream)`,
      depth: '-',
      inFlight: '-',
      oldestAge: s === undefined ? '?' : `${Math.round(s.iteratorAgeMs / 1000)} s`,
      dlq: s === undefined ? '?' : String(s.onFailure),
      state: s?.paused ? 'PAUSED' : 'running',
      alarms: alarmsOf(c, sample.alarmsInAlarm, alarmPrefix),
    });
  }
  return rows;
}

/** The table of a set of rows. */
export function renderStatusTable(rows: readonly StatusRow[]): string {
  return renderTable(
    COLUMNS,
    rows.map((r) => ({
      'job type': r.name,
      depth: r.depth,
      'in flight': r.inFlight,
      'oldest age': r.oldestAge,
      DLQ: r.dlq,
      state: r.state,
      alarms: r.alarms,
    })),
  );
}

function headerLine(ctx: StatusContext): string {
  const incidents = ctx.activeIncidents.length === 0 ? '' : ` · incident: ${ctx.activeIncidents.join(', ')}`;
  return `tenang local · scenario ${ctx.scenario} · ${ctx.phase} · ${Math.round(ctx.elapsedSeconds)} s / ${ctx.durationSeconds} s${incidents}`;
}

/** A full frame: header, table, traffic, recent messages. */
export function renderStatusFrame(
  ctx: StatusContext,
  rows: readonly StatusRow[],
  recent: readonly string[],
): string {
  const lines = [headerLine(ctx), '', renderStatusTable(rows), '', ctx.traffic];
  if (recent.length > 0) lines.push('', 'recent:', ...recent.map((r) => `  ${r}`));
  return `${lines.join('\n')}\n`;
}

/** One line summarising a frame, for non-terminals. */
export function renderStatusLine(ctx: StatusContext, rows: readonly StatusRow[]): string {
  const cells = rows.map(
    (r) =>
      `${r.name} ${r.depth === '-' ? '' : `d=${r.depth} f=${r.inFlight} `}age=${r.oldestAge.replace(' ', '')} dlq=${r.dlq}${r.state === 'running' ? '' : ` ${r.state}`}${r.alarms === '-' ? '' : ` ALARM[${r.alarms}]`}`,
  );
  const incidents = ctx.activeIncidents.length === 0 ? '' : ` | incident: ${ctx.activeIncidents.join(', ')}`;
  return `[${String(Math.round(ctx.elapsedSeconds)).padStart(4)} s ${ctx.phase}] ${cells.join(' | ')} | ${ctx.traffic}${incidents}\n`;
}

/** Options of LiveStatus. */
export interface LiveStatusOptions {
  readonly write: (text: string) => void;
  /** Redraw in place (a terminal). */
  readonly tty: boolean;
  /** Terminal width: longer lines are cut so the redraw can count lines. @default 120 */
  readonly columns?: number;
  /** Non-terminals: at most one status line per this many ms. @default 10000 */
  readonly lineEveryMs?: number;
  /** Messages kept under the frame on a terminal. @default 6 */
  readonly recentLines?: number;
  /** @default Date.now */
  readonly now?: () => number;
}

/** The status display. */
export class LiveStatus {
  private drawnLines = 0;
  private lastLineAt = Number.NEGATIVE_INFINITY;
  private readonly recent: string[] = [];
  private last: { ctx: StatusContext; rows: readonly StatusRow[] } | undefined;
  private stopped = false;

  public constructor(private readonly opts: LiveStatusOptions) {}

  /** Shows a new frame (terminal) or, when a period has passed, a line. */
  public update(ctx: StatusContext, rows: readonly StatusRow[]): void {
    if (this.stopped) return;
    this.last = { ctx, rows };
    if (this.opts.tty) {
      this.redraw();
      return;
    }
    const now = (this.opts.now ?? Date.now)();
    if (now - this.lastLineAt >= (this.opts.lineEveryMs ?? 10_000)) {
      this.lastLineAt = now;
      this.opts.write(renderStatusLine(ctx, rows));
    }
  }

  /** A progress message: under the frame on a terminal, else printed at once. */
  public message(line: string): void {
    if (this.stopped || !this.opts.tty) {
      this.opts.write(`${line}\n`);
      return;
    }
    this.recent.push(line);
    this.recent.splice(0, Math.max(0, this.recent.length - (this.opts.recentLines ?? 6)));
    if (this.last !== undefined) this.redraw();
    else this.opts.write(`${line}\n`);
  }

  /** Leaves the last frame (terminal) or prints a last line, and stops redrawing. */
  public stop(): void {
    if (this.stopped) return;
    if (this.last !== undefined) {
      if (this.opts.tty) this.redraw();
      else this.opts.write(renderStatusLine(this.last.ctx, this.last.rows));
    }
    this.stopped = true;
  }

  private redraw(): void {
    if (this.last === undefined) return;
    // A pseudo-terminal may report no width (0): assume a common one rather than cutting everything.
    const given = this.opts.columns ?? 0;
    const columns = given > 0 ? Math.max(40, given) : 120;
    const frame = renderStatusFrame(this.last.ctx, this.last.rows, this.recent)
      .split('\n')
      .map((l) => (l.length > columns ? `${l.slice(0, columns - 1)}…` : l))
      .join('\n');
    // Cursor to the start of the previous frame, clear to the end of the screen, draw.
    const up = this.drawnLines > 0 ? `\u001b[${this.drawnLines}F\u001b[J` : '';
    this.opts.write(`${up}${frame}`);
    this.drawnLines = frame.split('\n').length - 1;
  }
}
