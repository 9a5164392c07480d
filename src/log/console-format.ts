/**
 * The console log format: tab-separated columns, then the entry's fields as `key=value`:
 *
 *   2026-11-23T06:00:00.000000Z	info	ads	[caller	]message	key=value other="two words"
 *
 * followed by the captured stack trace, if any, on the next lines.
 */

/** Current time as `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC, millisecond resolution, six digits). */
export function logTimestamp(now: Date = new Date()): string {
  return `${now.toISOString().slice(0, -1)}000Z`;
}

export interface ConsoleEntry {
  readonly time: string;
  readonly level: string;
  readonly scope: string;
  readonly msg: string;
  /** The entry's fields; `caller` and `stack` get their own places in the line. */
  readonly fields?: Readonly<Record<string, unknown>>;
}

const BARE = /^[^\s"=\\]+$/;

function quoteIfNeeded(text: string): string {
  return BARE.test(text) ? text : JSON.stringify(text);
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return quoteIfNeeded(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value === null) return 'null';
  if (value instanceof Error) return quoteIfNeeded(value.message);
  if (value instanceof Date) return value.toISOString();
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return '"[unserializable]"';
  }
}

export function formatConsoleLine(entry: ConsoleEntry): string {
  let caller = '';
  let stack = '';
  const pairs: string[] = [];
  for (const [key, value] of Object.entries(entry.fields ?? {})) {
    if (value === undefined) continue;
    if (key === 'caller' && typeof value === 'string') caller = `${value}\t`;
    else if (key === 'stack' && typeof value === 'string') stack = `${value}\n`;
    else pairs.push(`${key}=${formatValue(value)}`);
  }
  const fields = pairs.length > 0 ? `\t${pairs.join(' ')}` : '';
  return `${entry.time}\t${entry.level}\t${entry.scope}\t${caller}${entry.msg}${fields}\n${stack}`;
}
