/** Plain-text tables for human output; `--json` prints the same rows as JSON. */

/** Renders rows as an aligned table with the given column order. */
export function renderTable(
  columns: readonly string[],
  rows: readonly Readonly<Record<string, string>>[],
): string {
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [
    line(columns),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map((r) => line(columns.map((c) => r[c] ?? ''))),
  ].join('\n');
}
