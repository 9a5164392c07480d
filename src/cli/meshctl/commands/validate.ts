/**
 * `meshctl validate -f <file|dir|->... [-x]` (alias `v`; spec part 2): validates mesh config
 * files with the daemon's own parser and checks (see ../validate/). `-f` is repeatable and takes
 * comma-separated lists; `-` reads standard input. Documents without a namespace get
 * `--namespace`, else `default`. `-x/--referential` also checks references between the files.
 */
import type { Command } from 'commander';
import { CliError, boolOption, boolValue, type Cli } from '../../runner.js';
import { globalOptions } from '../global-flags.js';

interface ValidateFlags {
  readonly filename: string[];
  readonly referential?: unknown;
}

const collect = (value: string, previous: string[]): string[] => [...previous, ...value.split(',').filter((v) => v !== '')];

export function register(program: Command, cli: Cli): Command {
  return program
    .command('validate')
    .alias('v')
    .description('Validates mesh policy and rule files.')
    .option('-f, --filename <file>', 'Files or directories to validate (repeatable, comma-separated); - reads standard input.', collect, [])
    .addOption(boolOption('-x, --referential', 'Also check references between the given files: subsets, gateways and delegates.'))
    .action(
      cli.action(async (opts: ValidateFlags, cmd: Command) => {
        if (opts.filename.length === 0) throw new CliError('--filename: give at least one file, directory or - (standard input)');
        const referential = boolValue(opts.referential, '--referential');
        const globals = globalOptions(cmd);
        const { runValidate } = await import('../validate/run.js');
        return runValidate({
          files: opts.filename,
          referential,
          defaultNamespace: globals.namespace || 'default',
          rootNamespace: globals.meshNamespace,
          readStdin: cli.io.readStdin,
        });
      }),
    );
}
