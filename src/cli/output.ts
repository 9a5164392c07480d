/**
 * The `-o/--output` writers every command shares: `table` (aligned columns under an upper-case
 * header, like kubectl), `json` (2-space indent) and `yaml`; each result ends with a newline.
 *
 * YAML is written with the 1.1 rules, so strings that YAML 1.1 readers (the Kubernetes tooling)
 * would take for something else (`yes`, `on`, `y`, `0777`, `12:30`, `1_000`) come out quoted; the
 * output reads back the same with 1.1 and 1.2 readers. The `yaml` package is imported only when
 * YAML is written, so that importing this module costs nothing at start-up.
 *
 * Colour (a bold table header, analyze's levels) is used only when standard output is a terminal,
 * TERM is not `dumb` and NO_COLOR is not set; see `colorEnabled`.
 */
import { CliError, type CliIO } from './runner.js';

export const OUTPUT_FORMATS = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/**
 * `value` checked against `allowed`: the value itself, or a `CliError` naming `flag` and the
 * allowed values (`--output: invalid value "xml" (choose from yaml, json)`).
 */
export function parseOutputFormat<T extends string>(value: unknown, allowed: readonly T[], flag = '--output'): T {
  const choices = allowed.join(', ');
  if (value === undefined || value === null || value === '') throw new CliError(`${flag}: a value is required (choose from ${choices})`);
  const text = String(value);
  if ((allowed as readonly string[]).includes(text)) return text as T;
  throw new CliError(`${flag}: invalid value ${JSON.stringify(text)} (choose from ${choices})`);
}

/**
 * True when output to `io` may carry colour: standard output is a terminal, TERM is not `dumb`,
 * and NO_COLOR is not set (to any value, even empty: https://no-color.org asks for non-empty, but
 * a user who sets it at all means no colour). A command's own switch (`--color=false`) comes on top.
 */
export function colorEnabled(io: Pick<CliIO, 'env' | 'isTTY'>): boolean {
  return io.isTTY === true && io.env.TERM !== 'dumb' && io.env.NO_COLOR === undefined;
}

export interface TableOptions {
  /** Bold header (ANSI); see `colorEnabled`. Default false. */
  readonly color?: boolean;
  /** Shown for an empty cell, so every row has as many words as the header. Default `<none>`. */
  readonly empty?: string;
}

const GAP = '   ';
const BOLD = '\u001b[1m';
const RESET = '\u001b[0m';

/** Width of `text` on a terminal, counted in code points (no East Asian wide forms). */
const width = (text: string): number => [...text].length;

/** One line per cell value: tabs and line breaks would break the columns. */
const flat = (text: string): string => text.replace(/[\t\r\n]+/g, ' ');

/**
 * Columns aligned on the widest cell, separated by three spaces, header in upper case, no
 * trailing spaces. An empty row list gives the header alone.
 */
export function renderTable(headers: readonly string[], rows: ReadonlyArray<readonly string[]>, options: TableOptions = {}): string {
  const empty = options.empty ?? '<none>';
  const head = headers.map((h) => flat(h).toUpperCase());
  const body = rows.map((row, i) => {
    if (row.length !== headers.length) throw new Error(`table row ${i} has ${row.length} cells, the header ${headers.length}`);
    return row.map((cell) => (cell === '' ? empty : flat(cell)));
  });
  const widths = head.map((h, c) => Math.max(width(h), ...body.map((row) => width(row[c]))));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, c) => (c === cells.length - 1 ? cell : cell + ' '.repeat(widths[c] - width(cell))))
      .join(GAP)
      .trimEnd();
  const header = line(head);
  return [options.color ? `${BOLD}${header}${RESET}` : header, ...body.map(line)].join('\n') + '\n';
}

/** JSON with a 2-space indent and a final newline. */
export function renderJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** YAML (block style, no line folding) with YAML 1.1 look-alikes quoted; ends with a newline. */
export async function renderYaml(value: unknown): Promise<string> {
  const { writeYaml } = await import('../util/yaml.js');
  return writeYaml(value);
}

/** `value` as JSON or YAML; `table` needs columns and is rendered by the command with `renderTable`. */
export async function renderDocument(value: unknown, format: 'json' | 'yaml'): Promise<string> {
  return format === 'json' ? renderJson(value) : renderYaml(value);
}
