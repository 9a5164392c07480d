/** Percentiles and plain-text tables. */

/** Nearest-rank percentile of an ascending array (NaN when empty). */
export function percentile(sorted: ReadonlyArray<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

export function fmtSeconds(ms: number, digits = 2): string {
  return Number.isFinite(ms) ? (ms / 1000).toFixed(digits) : '–';
}

export function fmtMB(bytes: number): string {
  return Number.isFinite(bytes) ? (bytes / (1024 * 1024)).toFixed(0) : '–';
}

export function fmtKB(bytes: number): string {
  return Number.isFinite(bytes) ? (bytes / 1024).toFixed(0) : '–';
}

/** Left-aligned first column; the others right-aligned, or left-aligned with `leftAll`. */
export function table(header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>, leftAll = false): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: ReadonlyArray<string>): string =>
    cells.map((c, i) => (i === 0 || leftAll ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}
