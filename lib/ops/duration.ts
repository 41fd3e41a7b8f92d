/** Durations and instants on the command line (`30m`, `2h`, `1d`, ISO-8601), parsed by schema. */
import * as z from '../config/zod';

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** `30m` → 1_800_000 ms; units s, m, h, d; a positive whole number of them. */
export const DurationSchema = z.pipe(
  z.string().check(z.regex(/^[1-9][0-9]*[smhd]$/, 'must be a duration like 90s, 30m, 2h or 1d')),
  z.transform(
    (text: string): number => Number(text.slice(0, -1)) * UNIT_MS[text.slice(-1) as keyof typeof UNIT_MS],
  ),
);

/** Parses a duration option, or throws the schema's message. */
export function parseDurationMs(text: string): number {
  const parsed = DurationSchema.safeParse(text.trim());
  if (!parsed.success) throw new Error(parsed.error.issues.map((i) => i.message).join('; '));
  return parsed.data;
}

/** `--since`: a duration back from now (`2h`) or an ISO-8601 instant. */
export function parseSince(text: string, now: Date): Date {
  const duration = DurationSchema.safeParse(text.trim());
  if (duration.success) return new Date(now.getTime() - duration.data);
  const iso = z.iso.datetime({ offset: true }).safeParse(text.trim());
  if (iso.success) return new Date(iso.data);
  throw new Error(`must be a duration like 30m or 2h, or an ISO-8601 instant such as 2026-01-31T12:00:00Z`);
}

/** Milliseconds as a short human age: `42s`, `3m12s`, `2h05m`. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
