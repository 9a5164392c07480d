/**
 * `meshctl profile list|dump|diff` (spec part 2, "profile"). The work is in
 * src/cli/meshctl/profile/run-profile.ts, loaded when a subcommand runs. Boolean flags here take no value
 * (`--dry-run`), so that they cannot swallow the profile argument after them.
 */
import { Option, type Command } from 'commander';
import { CHARTS_DEPRECATED } from '../../../install/charts-warning.js';
import type { Cli, CommandOutcome } from '../../runner.js';

const collectSlice = (value: string, previous: string[]): string[] => [...previous, ...value.split(',').filter((v) => v !== '')];

/** `-o/--output`; the choices are for help and completion, run-profile.ts checks the value. */
function outputOption(): Option {
  const option = new Option('-o, --output <format>', 'Output format: yaml, json or flags (the --set flags that rebuild the spec).').default('yaml');
  option.argChoices = ['yaml', 'json', 'flags'];
  return option;
}

interface SourceFlags {
  readonly charts?: string;
  readonly manifests?: string;
}

interface DumpFlags extends SourceFlags {
  readonly configPath?: string;
  readonly filename: string[];
  readonly output: string;
}

function withSource(cmd: Command): Command {
  return cmd
    .option('--charts <dir>', 'Deprecated; use --manifests.')
    .option('--dry-run', 'Console output only (profile commands never change anything).')
    .option('-d, --manifests <dir>', 'Directory with profiles/ to use instead of the built-in ones.');
}

/** The manifests directory of the flags, and the deprecation warning for `--charts`. */
function sourceOf(opts: SourceFlags): { manifests?: string; warning?: string } {
  return { manifests: opts.manifests || opts.charts, warning: opts.charts ? `${CHARTS_DEPRECATED}\n` : undefined };
}

function withWarning(outcome: CommandOutcome, warning: string | undefined): CommandOutcome {
  return warning ? { ...outcome, stderr: `${warning}${outcome.stderr ?? ''}` } : outcome;
}

export function register(program: Command, cli: Cli): Command {
  const profile = program.command('profile').description('Lists, dumps and compares configuration profiles.');

  withSource(profile.command('list').description('Lists the available profiles.')).action(
    cli.action(async (opts: SourceFlags) => {
      const { manifests, warning } = sourceOf(opts);
      const { runProfileList } = await import('../profile/run-profile.js');
      return withWarning(await runProfileList(manifests), warning);
    }),
  );

  withSource(profile.command('dump').description('Prints the values of a profile (default: "default"), resolved over the default profile and any -f files.'))
    .argument('[profile]', 'Profile name.')
    .option('-p, --config-path <path>', 'Print only this subtree of the spec, e.g. components.meshd.')
    .option('-f, --filename <files>', 'MeshOperator files overlaid on the profile; repeatable, comma-separated.', collectSlice, [])
    .addOption(outputOption())
    .action(
      cli.action(async (name: string | undefined, opts: DumpFlags) => {
        const { manifests, warning } = sourceOf(opts);
        const { runProfileDump } = await import('../profile/run-profile.js');
        return withWarning(await runProfileDump({ profile: name, files: opts.filename, manifests, configPath: opts.configPath, output: opts.output }), warning);
      }),
    );

  withSource(profile.command('diff').description('Shows the differences between two profiles (names or MeshOperator files); exit code 1 when they differ.'))
    .argument('<a>', 'First profile name or file.')
    .argument('<b>', 'Second profile name or file.')
    .action(
      cli.action(async (a: string, b: string, opts: SourceFlags) => {
        const { manifests, warning } = sourceOf(opts);
        const { runProfileDiff } = await import('../profile/run-profile.js');
        return withWarning(await runProfileDiff(a, b, manifests), warning);
      }),
    );

  return profile;
}
