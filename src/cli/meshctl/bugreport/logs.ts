/**
 * bug-report's log handling: the time window (`--start-time`, `--end-time`, `--duration`) applied
 * to timestamped log lines, and the importance of a log (`--critical-errs`, `--ignore-errs`):
 * lines matching a critical glob, and error lines not matching an ignored one.
 */
import { CliError } from '../../runner.js';
import { glob } from './select.js';

export interface TimeWindow {
  /** Epoch ms, or undefined for the infinite past. */
  readonly start?: number;
  /** Epoch ms. */
  readonly end: number;
}

function instant(text: string, flag: string): number {
  const t = Date.parse(text);
  if (!Number.isFinite(t)) throw new CliError(`${flag}: ${JSON.stringify(text)} is not a time (RFC 3339, e.g. 2026-11-25T04:00:00Z)`);
  return t;
}

/** The window of the flags; a CliError naming a bad or conflicting one. */
export function timeWindow(f: { startTime?: string; endTime?: string; durationMs?: number }, now = Date.now()): TimeWindow {
  if (f.startTime && f.durationMs) throw new CliError('--start-time and --duration cannot both be set');
  const end = f.endTime ? instant(f.endTime, '--end-time') : now;
  const start = f.startTime ? instant(f.startTime, '--start-time') : f.durationMs ? end - f.durationMs : undefined;
  if (start !== undefined && start > end) throw new CliError(`the log window is empty: start ${new Date(start).toISOString()} is after end ${new Date(end).toISOString()}`);
  return { start, end };
}

/**
 * Keeps the lines of `text` (written with timestamps=true: `<RFC 3339> <line>`) inside `w`; a line
 * without a timestamp belongs to the one before it.
 */
export function withinWindow(text: string, w: TimeWindow): string {
  const out: string[] = [];
  let keep = true;
  for (const line of text.split('\n')) {
    const sp = line.indexOf(' ');
    const t = sp > 0 ? Date.parse(line.slice(0, sp)) : NaN;
    if (Number.isFinite(t)) keep = (w.start === undefined || t >= w.start) && t <= w.end;
    if (keep && line !== '') out.push(line);
  }
  return out.length > 0 ? `${out.join('\n')}\n` : '';
}

export interface Importance {
  /** Lines matching a `--critical-errs` glob (the first few). */
  readonly critical: string[];
  readonly criticalCount: number;
  /** Error lines not matching an `--ignore-errs` glob. */
  readonly errors: number;
}

const ERROR_LINE = /\b(error|fatal|panic|critical)\b/i;

export function importance(text: string, criticalGlobs: readonly string[], ignoreGlobs: readonly string[]): Importance {
  const critical: string[] = [];
  let criticalCount = 0;
  let errors = 0;
  const wrap = (g: string): string => (g.startsWith('*') || g.endsWith('*') ? g : `*${g}*`);
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (criticalGlobs.some((g) => glob(wrap(g), line))) {
      criticalCount++;
      if (critical.length < 5) critical.push(line);
    }
    if (ERROR_LINE.test(line) && !ignoreGlobs.some((g) => glob(wrap(g), line))) errors++;
  }
  return { critical, criticalCount, errors };
}
