/**
 * `meshctl options` (spec part 2): the global options with their descriptions and defaults, laid
 * out like the flags of a command's help; then the utility's environment variables; then every
 * setting's value in effect and where it came from (flag, variable, MESHCONFIG file or built-in).
 * The flag list is read from the program itself, so it cannot drift from what is accepted.
 * The last table's header is bold on a terminal unless TERM is `dumb` (output.ts).
 */
import type { Command, Option } from 'commander';
import { colorEnabled, renderTable } from '../../output.js';
import type { Cli } from '../../runner.js';
import { MESHCTL_ENV_VARS, settingByName, type SettingValue } from '../env.js';
import { defaultsFileStatus, resolveSettings } from '../global-flags.js';

const show = (value: SettingValue): string => (typeof value === 'string' ? JSON.stringify(value) : String(value));

/** Two columns: the left padded to its widest entry, as in commander's and cobra's help. */
function columns(rows: ReadonlyArray<readonly [string, string]>): string {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `${left.padEnd(width)}   ${right}`.trimEnd()).join('\n');
}

function flagTerm(o: Option): string {
  return `${o.short ? `${o.short}, ` : '    '}${o.long ?? ''}${o.required ? ` <${o.flags.match(/<([^>]+)>/)?.[1] ?? 'value'}>` : ''}`;
}

function flagDefault(o: Option): string {
  const spec = settingByName((o.long ?? '').replace(/^--/, ''));
  const value = spec ? spec.default : (o.defaultValue as SettingValue | undefined);
  if (value === undefined || value === '' || value === false) return '';
  return ` (default ${show(value)})`;
}

export function optionsText(program: Command, cmd: Command, color = false): string {
  const flags = program.options.filter((o) => o.long !== '--help' && o.long !== '--version' && !o.hidden);
  const flagRows = flags.map((o) => [`  ${flagTerm(o)}`, `${o.description}${flagDefault(o)}`] as const);
  const envRows = MESHCTL_ENV_VARS.map((v) => [`  ${v.name}`, `${v.description}${v.default ? ` (default ${JSON.stringify(v.default)})` : ''}`] as const);
  const resolved = Object.values(resolveSettings(cmd));
  const file = defaultsFileStatus(cmd);
  const inEffect = renderTable(
    ['setting', 'value', 'from'],
    resolved.map((r) => [r.spec.name, show(r.value), r.source === 'default' ? 'built-in' : r.from]),
    { empty: '""', color },
  );
  const fileLine = file.path === undefined ? 'none (MESHCONFIG and HOME are unset)' : `${file.path}${file.read ? '' : ' (not found)'}`;
  return [
    'The following options can be passed to any command:',
    '',
    columns(flagRows),
    '',
    'Environment variables:',
    '',
    columns(envRows),
    '',
    `Settings in effect (flag > environment variable > MESHCONFIG file > built-in); MESHCONFIG file: ${fileLine}`,
    '',
    inEffect.replace(/^/gm, '  ').trimEnd(),
    '',
  ].join('\n');
}

export function register(program: Command, cli: Cli): Command {
  return program
    .command('options')
    .description('Displays the global options.')
    .action(cli.action((_opts: unknown, cmd: Command) => ({ stdout: optionsText(program, cmd, colorEnabled(cli.io)) })));
}
