/**
 * The `version` command: build information as one short line, one full line, YAML or JSON.
 * `--short` is off by default (the spec's table gives it no default and says `--short` prints
 * the short form); `--short=false` is accepted too. YAML and JSON always carry every field.
 */
import { Command, Option } from 'commander';
import { getBuildInfo, type BuildInfo } from '../version/build-info.js';
import { renderDocument } from './output.js';
import { CliError, boolOption, boolValue, type Cli } from './runner.js';

export const VERSION_OUTPUTS = ['yaml', 'json'] as const;
export type VersionOutput = '' | (typeof VERSION_OUTPUTS)[number];

/** What `-o yaml|json` prints; later components (a control plane's version) join as more keys. */
export interface VersionDocument {
  readonly clientVersion: BuildInfo;
  /** meshctl with --remote: the control plane's meshd deployments and their versions. */
  readonly meshVersion?: ReadonlyArray<{ readonly deployment: string; readonly revision: string; readonly version: string; readonly readyReplicas: number }>;
}

export function parseVersionOutput(value: unknown): VersionOutput {
  const text = value === undefined ? '' : String(value);
  if (text === '' || (VERSION_OUTPUTS as readonly string[]).includes(text)) return text as VersionOutput;
  throw new CliError(`--output: invalid value ${JSON.stringify(text)} (choose from ${VERSION_OUTPUTS.join(', ')})`);
}

/** One line: the version, or with `short` off every field. */
export function versionLine(info: BuildInfo, short: boolean): string {
  if (short) return info.version;
  return `${info.version} (revision ${info.revision}, status ${info.status}, tag ${info.tag}, built ${info.buildTime}, node ${info.nodeVersion})`;
}

/** Renders the document as YAML or JSON (with a final newline), with the shared writers of output.ts. */
export function renderVersionDocument(doc: VersionDocument, output: 'yaml' | 'json'): Promise<string> {
  return renderDocument(doc, output);
}

/** Adds `-o/--output` and `-s/--short` to a version command. */
export function addVersionFlags(cmd: Command): Command {
  const output = new Option('-o, --output <format>', 'One of yaml or json.');
  output.argChoices = [...VERSION_OUTPUTS]; // for help and completion; checked by parseVersionOutput
  return cmd.addOption(output).addOption(boolOption('-s, --short', 'Use --short=false for full version information.'));
}

export function registerVersionCommand(program: Command, cli: Cli): Command {
  const cmd = addVersionFlags(program.command('version').description('Prints build version information.'));
  return cmd.action(
    cli.action(async (opts: { output?: string; short?: unknown }) => {
      const output = parseVersionOutput(opts.output);
      const short = boolValue(opts.short, '--short');
      const info = getBuildInfo(cli.io.env);
      if (output !== '') return { stdout: await renderVersionDocument({ clientVersion: info }, output) };
      return { stdout: `${versionLine(info, short)}\n` };
    }),
  );
}
