/**
 * `meshctl manifest generate|diff` (spec part 2, "manifest"). The work is in src/install/, loaded
 * when a subcommand runs.
 *
 * `generate` prints the install manifest (or writes `<dir>/<Component>/<Component>.yaml` with
 * `-o <dir>`). `diff <a> <b>` compares two manifests (files, or folders with `-r`); its exit code
 * is 0 when they are the same, 1 when they differ and 2 when they cannot be compared.
 *
 * `install` (alias `apply`) is `meshctl install` (commands/install.ts) under `manifest`.
 *
 * The boolean flags of `diff` take no value (`--verbose`, not `--verbose=true`), because a flag
 * with an optional value would swallow the file name after it.
 */
import type { Command } from 'commander';
import { boolOption, boolValue, type Cli } from '../../runner.js';
import { register as registerInstall } from './install.js';

/** stringSlice: repeatable, comma-separated. */
const collectSlice = (value: string, previous: string[]): string[] => [...previous, ...value.split(',').filter((v) => v !== '')];
/** stringArray: repeatable, taken whole. */
const collectArray = (value: string, previous: string[]): string[] => [...previous, value];

interface GenerateFlags {
  readonly charts?: string;
  readonly component: string[];
  readonly dryRun?: unknown;
  readonly filename: string[];
  readonly force?: unknown;
  readonly manifests?: string;
  readonly output?: string;
  readonly revision?: string;
  readonly set: string[];
}

interface DiffFlags {
  readonly directory?: boolean;
  readonly ignore?: string;
  readonly rename?: string;
  readonly select: string;
  readonly verbose?: boolean;
}

export function register(program: Command, cli: Cli): Command {
  const manifest = program.command('manifest').description('Generates and compares install manifests.');

  manifest
    .command('generate')
    .description('Generates an install manifest and writes it to the console, or to a directory with -o.')
    .option('--charts <dir>', 'Deprecated; use --manifests.')
    .option('--component <names>', 'Components to generate (Base, Meshd, IngressGateways, EgressGateways); repeatable, comma-separated. Default all.', collectSlice, [])
    .addOption(boolOption('--dry-run', 'Console output only: with -o, list the files instead of writing them.'))
    .option('-f, --filename <files>', 'MeshOperator files, overlaid left to right; repeatable, comma-separated.', collectSlice, [])
    .addOption(boolOption('--force', 'Proceed despite validation errors (unknown fields are dropped; type errors still stop).'))
    .option('-d, --manifests <dir>', 'Directory with profiles/ (and optionally crds/) to use instead of the built-in ones.')
    .option('-o, --output <dir>', 'Directory to write the manifest to, one file per component: <dir>/<Component>/<Component>.yaml.')
    .option('-r, --revision <revision>', 'Target control-plane revision.')
    .option('-s, --set <path=value>', 'Value override on the MeshOperator spec, e.g. components.meshd.enabled=false; repeatable.', collectArray, [])
    .action(
      cli.action(async (opts: GenerateFlags) => {
        const dryRun = boolValue(opts.dryRun, '--dry-run');
        const force = boolValue(opts.force, '--force');
        const { runManifestGenerate } = await import('../manifest/run-manifest.js');
        return runManifestGenerate({
          components: opts.component,
          files: opts.filename,
          sets: opts.set,
          manifests: opts.manifests,
          charts: opts.charts,
          revision: opts.revision,
          output: opts.output,
          dryRun,
          force,
        });
      }),
    );

  manifest
    .command('diff')
    .description('Compares the manifests of two files or directories; exit code 0 when the same, 1 when different, 2 on error.')
    .argument('<a>', 'First manifest file (or directory with -r).')
    .argument('<b>', 'Second manifest file (or directory with -r).')
    .option('-r, --directory', 'Compare directories of YAML files.')
    .option('--dry-run', 'Console output only (diff never changes anything).')
    .option('--ignore <items>', 'Objects to skip: comma-separated <Kind>:<namespace>:<name>, * wildcard.')
    .option('--rename <pairs>', 'Comma-separated A->B pairs of <Kind>:<namespace>:<name>: compare object A of the first with B of the second.')
    .option('--select <items>', 'Objects to compare: comma-separated <Kind>:<namespace>:<name>, * wildcard; empty parts match all.', '::')
    .option('-v, --verbose', 'Print objects found on one side only, and a summary.')
    .action(
      cli.action(async (a: string, b: string, opts: DiffFlags) => {
        const { runManifestDiff } = await import('../manifest/run-manifest.js');
        return runManifestDiff({ a, b, directory: opts.directory ?? false, select: opts.select, ignore: opts.ignore, rename: opts.rename, verbose: opts.verbose ?? false });
      }),
    );

  // `manifest install` (alias `apply`): the same command as `meshctl install`.
  registerInstall(manifest, cli);

  return manifest;
}
