/**
 * The reference pages in docs/reference/, generated from the programs themselves: every command
 * with its usage, aliases, arguments, flags (type and default) and examples, read from the
 * commander tree each program builds; the environment variables from their schemas (env.ts,
 * daemon-env.ts); the metrics from the registries the daemon and the operator export. The pages
 * are written by scripts/gen-reference.mjs (`npm run gen:reference`) and checked to be up to date by
 * test/cli/reference.test.ts, so they cannot drift from what the programs accept.
 *
 * The output depends on nothing but the code: no build information, no environment.
 */
import type { Argument, Command, Option } from 'commander';
import type { EnvVarSpec } from '../config/daemon-env.js';
import { examplesOf } from './help.js';
import { createCli, type CliIO } from './runner.js';

/** A page of docs/reference/: its file name and text. */
export interface ReferencePage {
  readonly file: string;
  readonly text: string;
}

interface FlagFacts {
  readonly type: string;
  readonly default: string;
}

/** The type and default a program knows for a flag better than commander does, by long name. */
type KnownFlags = (long: string) => FlagFacts | undefined;

const TYPE_NAMES: Readonly<Record<string, string>> = { S: 'string', B: 'bool', D: 'duration', I: 'int', F: 'float' };
const typeName = (letter: string): string => TYPE_NAMES[letter] ?? letter;

const SILENT_IO: CliIO = { out: () => undefined, err: () => undefined, env: {} };

/** A table cell: one line, pipes escaped. */
const cell = (text: string): string => text.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');
const code = (text: string): string => (text === '' ? '' : `\`${text}\``);

function table(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  return [`| ${headers.join(' | ')} |`, `|${headers.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`)].join('\n');
}

/** A flag's value type as a user sees it: bool, duration, a repeatable list, or string. */
function inferredType(option: Option): string {
  if ((!option.required && !option.optional) || option.flags.endsWith('[bool]')) return 'bool';
  if (/<duration>/.test(option.flags)) return 'duration';
  // A single number: a port, an id or a count of seconds (a list such as <name=port> stays a string).
  if (/ <(port|uid|gid|seconds)>$/.test(option.flags)) return 'int';
  if (Array.isArray(option.defaultValue) && option.parseArg) {
    // Repeatable: a comma-separated list per flag (stringSlice) or one value per flag (stringArray).
    const parsed = (option.parseArg as (value: string, previous: unknown) => unknown)('a,b', []);
    return Array.isArray(parsed) && parsed.length === 2 ? 'stringSlice' : 'stringArray';
  }
  return 'string';
}

function inferredDefault(option: Option): string {
  const value: unknown = option.defaultValue;
  if (value === undefined || value === false || (Array.isArray(value) && value.length === 0)) return '';
  return Array.isArray(value) ? value.join(',') : String(value);
}

function flagRows(options: readonly Option[], known: KnownFlags): string[][] {
  return options
    .filter((o) => !o.hidden && o.long !== '--help' && o.long !== '--version')
    .map((o) => {
      const facts = known(o.long ?? '') ?? { type: inferredType(o), default: inferredDefault(o) };
      const choices = o.argChoices && o.argChoices.length <= 10 ? ` One of ${o.argChoices.map(code).join(', ')}.` : '';
      return [code(o.long ?? ''), code(o.short ?? ''), facts.type, code(facts.default), `${o.description}${choices}`];
    });
}

function argumentRows(args: readonly Argument[]): string[][] {
  return args.map((a) => [code(a.required ? `<${a.name()}>` : `[${a.name()}]`), `${a.description}${a.variadic ? ' Repeatable.' : ''}`]);
}

function fullName(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

function commandSection(cmd: Command, known: KnownFlags): string {
  const parts = [`### ${fullName(cmd)}`, '', cmd.description(), '', `Usage: \`${fullName(cmd)} ${cmd.usage()}\``];
  if (cmd.aliases().length > 0) parts.push('', `Aliases: ${cmd.aliases().map(code).join(', ')}`);
  const subs = cmd.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden);
  if (subs.length > 0) parts.push('', `Subcommands: ${subs.map((c) => code(c.name())).join(', ')}`);
  if (cmd.registeredArguments.length > 0) parts.push('', table(['Argument', 'Meaning'], argumentRows(cmd.registeredArguments)));
  const flags = flagRows(cmd.options, known);
  if (flags.length > 0) parts.push('', table(['Flag', 'Short', 'Type', 'Default', 'Meaning'], flags));
  const examples = examplesOf(cmd);
  if (examples.length > 0) parts.push('', 'Examples:', '', '```sh', examples.map((e) => `# ${e.note}\n${e.command}`).join('\n\n'), '```');
  return parts.join('\n');
}

function commandSections(program: Command, known: KnownFlags): string {
  const all: Command[] = [];
  const walk = (cmd: Command): void => {
    for (const sub of cmd.commands) {
      if ((sub as unknown as { _hidden?: boolean })._hidden) continue;
      all.push(sub);
      walk(sub);
    }
  };
  walk(program);
  return all.map((c) => commandSection(c, known)).join('\n\n');
}

function header(title: string, intro: string): string {
  return [
    `# ${title}`,
    '',
    '<!-- Generated by `npm run gen:reference` (scripts/gen-reference.mjs) from the code; do not edit. -->',
    '',
    intro,
    '',
    'Types: string, bool (`--flag` or `--flag=false`), int, duration (`300ms`, `30s`, `1h0m0s`), float, stringSlice (repeatable, comma-separated), stringArray (repeatable, one value each). The contract these programs follow is in [docs/spec](../spec/).',
  ].join('\n');
}

interface MetricLike {
  readonly name: string;
  readonly help: string;
  readonly type: string;
  readonly labelNames?: readonly string[];
}

async function metricsTable(registry: { getMetricsAsArray(): unknown[] }): Promise<string> {
  const metrics = (registry.getMetricsAsArray() as MetricLike[]).slice().sort((a, b) => a.name.localeCompare(b.name));
  return table(
    ['Metric', 'Type', 'Labels', 'Meaning'],
    metrics.map((m) => [code(m.name), m.type, (m.labelNames ?? []).map(code).join(', '), m.help]),
  );
}

function envTable(vars: ReadonlyArray<{ readonly name: string; readonly type: string; readonly default: string | null; readonly description: string }>): string {
  return table(
    ['Name', 'Type', 'Default', 'Meaning'],
    vars.map((v) => [code(v.name), typeName(v.type), v.default === null ? '' : code(v.default), v.description]),
  );
}

/** docs/reference/meshctl.md */
export async function meshctlReference(): Promise<ReferencePage> {
  const { buildMeshctl } = await import('./meshctl.js');
  const { MESHCTL_ENV_VARS, settingByName } = await import('./meshctl/env.js');
  const program = buildMeshctl(createCli(SILENT_IO));
  const known: KnownFlags = (long) => {
    const spec = settingByName(long.replace(/^--/, ''));
    return spec && program.options.some((o) => o.long === long) ? { type: typeName(spec.type), default: spec.default === false ? '' : String(spec.default) } : undefined;
  };
  const text = [
    header('meshctl reference', `${program.description()} Run \`meshctl <command> --help\` for the same facts on a terminal; \`meshctl options\` shows the settings in effect.`),
    '',
    '## Global flags',
    '',
    'Accepted by every command, before or after the command name. A value comes from the flag, else its environment variable, else the MESHCONFIG file, else the default.',
    '',
    table(['Flag', 'Short', 'Type', 'Default', 'Meaning'], flagRows(program.options, known)),
    '',
    '## Commands',
    '',
    commandSections(program, known),
    '',
    '## Environment variables',
    '',
    envTable(MESHCTL_ENV_VARS),
    '',
  ].join('\n');
  return { file: 'meshctl.md', text };
}

/** docs/reference/mesh-discovery.md */
export async function meshDiscoveryReference(): Promise<ReferencePage> {
  const { buildProgram } = await import('./mesh-discovery.js');
  const { DISCOVERY_FLAGS, registerDiscoveryFlags } = await import('../config/discovery-flags.js');
  const { DAEMON_ENV_VARS } = await import('../config/daemon-env.js');
  const { createDaemonMetrics } = await import('../bootstrap/daemon-metrics.js');
  const program = buildProgram(createCli(SILENT_IO));
  const discovery = program.commands.find((c) => c.name() === 'discovery');
  if (discovery) registerDiscoveryFlags(discovery);
  const known: KnownFlags = (long) => {
    const spec = DISCOVERY_FLAGS.find((f) => f.flag === long);
    if (!spec) return undefined;
    const value = spec.default;
    return { type: typeName(spec.type), default: Array.isArray(value) ? value.join(',') : value === false ? '' : String(value) };
  };
  const text = [
    header('mesh-discovery reference', `${program.description()} \`mesh-discovery discovery\` runs the daemon (meshd).`),
    '',
    '## Commands',
    '',
    commandSections(program, known),
    '',
    '## Environment variables',
    '',
    'Read by `mesh-discovery discovery` at start-up; a bad value stops it with a message naming the variable.',
    '',
    envTable(DAEMON_ENV_VARS as readonly EnvVarSpec[]),
    '',
    '## Metrics',
    '',
    'Served on `--monitoringAddr` at `/metrics` (Prometheus text format), beside the Node.js process metrics.',
    '',
    await metricsTable(createDaemonMetrics({ defaultMetrics: false }).metrics.registry),
    '',
  ].join('\n');
  return { file: 'mesh-discovery.md', text };
}

/** docs/reference/mesh-operator.md */
export async function meshOperatorReference(): Promise<ReferencePage> {
  const { buildOperatorProgram } = await import('./mesh-operator.js');
  const { createOperatorMetrics } = await import('../controllers/installation/metrics.js');
  const program = buildOperatorProgram(createCli(SILENT_IO));
  const text = [
    header('mesh-operator reference', `${program.description()} \`meshctl operator init\` installs it in a cluster.`),
    '',
    '## Commands',
    '',
    commandSections(program, () => undefined),
    '',
    '## Metrics',
    '',
    'Served on `--monitoringAddr` at `/metrics` (Prometheus text format).',
    '',
    await metricsTable(createOperatorMetrics({ defaultMetrics: false, version: 'unknown' }).registry),
    '',
  ].join('\n');
  return { file: 'mesh-operator.md', text };
}

/** docs/reference/mesh-agent.md */
export async function meshAgentReference(): Promise<ReferencePage> {
  const { buildAgentProgram } = await import('./mesh-agent.js');
  const { agentMetrics } = await import('../agent/metrics.js');
  const program = buildAgentProgram(createCli(SILENT_IO));
  const text = [
    header('mesh-agent reference', `${program.description()} The injector's templates run \`mesh-agent proxy sidecar\` (or \`router\` for a gateway) in the \`mesh-proxy\` container.`),
    '',
    '## Commands',
    '',
    commandSections(program, () => undefined),
    '',
    '## Metrics',
    '',
    "Served on the status port (15020) at `/stats/prometheus`, followed by Envoy's metrics and the application's (when its `prometheus.io/port` annotation names one).",
    '',
    await metricsTable(agentMetrics(() => 0).registry),
    '',
  ].join('\n');
  return { file: 'mesh-agent.md', text };
}

/** Every page of docs/reference/. */
export async function referencePages(): Promise<ReferencePage[]> {
  return [await meshctlReference(), await meshDiscoveryReference(), await meshOperatorReference(), await meshAgentReference()];
}
