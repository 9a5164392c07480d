/**
 * `meshctl analyze [<file>...]` (spec part 1): runs the daemon's analyzers over the live cluster's
 * mesh config, optionally with the given files laid over it (`--use-cluster=false`: the files
 * alone). Exit code 79 when a finding reaches `--failure-threshold`, 1 when the analysis could not
 * run. The work is in ../analyze/.
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import { colorEnabled } from '../../output.js';
import { CliError, boolOption, boolValue, type Cli } from '../../runner.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor } from '../kube.js';

interface AnalyzeFlags {
  readonly allNamespaces?: unknown;
  readonly color?: unknown;
  readonly failureThreshold: string;
  readonly listAnalyzers?: unknown;
  readonly meshConfigFile?: string;
  readonly output: string;
  readonly outputThreshold: string;
  readonly recursive?: unknown;
  readonly suppress: string[];
  readonly timeout: string;
  readonly useCluster?: unknown;
  readonly verbose?: unknown;
}

const LEVELS = ['Info', 'Warning', 'Error'] as const;
const OUTPUTS = ['log', 'json', 'yaml'] as const;

function oneOf<T extends string>(value: string, allowed: readonly T[], flag: string): T {
  const found = allowed.find((a) => a.toLowerCase() === value.toLowerCase());
  if (!found) throw new CliError(`${flag}: ${JSON.stringify(value)} is not one of ${allowed.join(', ')}`);
  return found;
}

const repeat = (value: string, previous: string[]): string[] => [...previous, value];

/** The values shown in help and offered by completion; `oneOf` checks them (case-insensitively). */
function withChoices(option: Option, choices: readonly string[]): Option {
  option.argChoices = [...choices];
  return option;
}

/**
 * A boolean flag's value. The flags take an optional value (`--use-cluster=false`), so commander
 * hands a file that follows a bare flag (`-A routes.yaml`) to the flag: such a value that is no
 * boolean word is a file, and the flag is on.
 */
function flagValue(value: unknown, flag: string, fallback: boolean, files: string[]): boolean {
  if (typeof value === 'string' && !/^=?(1|t|T|TRUE|true|True|0|f|F|FALSE|false|False)$/.test(value)) {
    files.push(value);
    return true;
  }
  return boolValue(value, flag, fallback);
}

export function register(program: Command, cli: Cli): Command {
  return program
    .command('analyze')
    .argument('[files...]', 'Files or directories of mesh config to lay over the cluster (- reads standard input).')
    .description('Analyzes mesh configuration and prints validation messages.')
    .addOption(boolOption('-A, --all-namespaces', 'Analyze all namespaces.'))
    .addOption(boolOption('--color', 'Colour the levels on a terminal; disable with --color=false, NO_COLOR or TERM=dumb.', true))
    .addOption(withChoices(new Option('--failure-threshold <level>', 'Severity at which the exit code becomes non-zero: Info, Warning or Error.').default('Error'), LEVELS))
    .addOption(boolOption('-L, --list-analyzers', 'List the available analyzers and stop.'))
    .option('--meshConfigFile <file>', 'Mesh config to analyze with, instead of the cluster\'s.')
    .addOption(withChoices(new Option('-o, --output <format>', 'Output format: log, json or yaml.').default('log'), OUTPUTS))
    .addOption(withChoices(new Option('--output-threshold <level>', 'Lowest severity displayed: Info, Warning or Error.').default('Info'), LEVELS))
    .addOption(boolOption('-R, --recursive', 'Read directory arguments recursively.'))
    .option('-S, --suppress <code=resource>', 'Suppress a message code on a resource, e.g. MESH0102=VirtualService reviews.default (* is a wildcard); repeatable.', repeat, [])
    .addOption(new Option('--timeout <duration>', 'How long to wait for the cluster before failing.').default('30s'))
    .addOption(boolOption('-k, --use-cluster', 'Use the live cluster; --use-cluster=false analyzes the files alone.', true))
    .addOption(boolOption('-v, --verbose', 'Verbose output.'))
    .action(
      cli.action(async (args: string[], opts: AnalyzeFlags, self: Command) => {
        const files: string[] = [];
        const flag = (value: unknown, name: string, fallback = false): boolean => flagValue(value, name, fallback, files);
        const listOnly = flag(opts.listAnalyzers, '--list-analyzers');
        const useCluster = flag(opts.useCluster, '--use-cluster', true);
        const allNamespaces = flag(opts.allNamespaces, '--all-namespaces');
        const recursive = flag(opts.recursive, '--recursive');
        const verbose = flag(opts.verbose, '--verbose');
        const color = flag(opts.color, '--color', true);
        files.push(...args);
        const { listAnalyzers, runAnalyze } = await import('../analyze/run.js');
        if (listOnly) return listAnalyzers();
        const { durationMs, isDuration } = await import('../../../util/config-duration.js');
        if (!isDuration(opts.timeout)) throw new CliError(`--timeout: ${JSON.stringify(opts.timeout)} is not a duration (e.g. 30s, 1m)`);
        if (!useCluster && files.length === 0) throw new CliError('--use-cluster=false: give at least one file or directory to analyze');
        const globals = globalOptions(self);
        return runAnalyze({
          files,
          recursive,
          useCluster,
          allNamespaces,
          namespace: globals.namespace || 'default',
          meshNamespace: globals.meshNamespace,
          meshConfigFile: opts.meshConfigFile || undefined,
          output: oneOf(opts.output, OUTPUTS, '--output'),
          outputThreshold: oneOf(opts.outputThreshold, LEVELS, '--output-threshold'),
          failureThreshold: oneOf(opts.failureThreshold, LEVELS, '--failure-threshold'),
          suppress: opts.suppress,
          timeoutMs: durationMs(opts.timeout),
          timeoutText: opts.timeout,
          verbose,
          color: color && colorEnabled(cli.io),
          readStdin: cli.io.readStdin,
          client: () => kubeClientFor(globals, cli.io.env),
        });
      }),
    );
}
