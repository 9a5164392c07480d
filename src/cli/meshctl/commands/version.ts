/**
 * `meshctl version` (spec part 2): `-o/--output`, `-s/--short`, `--remote` (on by default;
 * `--remote=false` skips the control-plane check) and `-r/--revision`. This build has no
 * control-plane client yet, so with `--remote` the control-plane version is reported as not
 * available, on standard error, and the client version is printed as usual.
 */
import type { Command } from 'commander';
import { getBuildInfo } from '../../../version/build-info.js';
import { boolOption, boolValue, type Cli } from '../../runner.js';
import { addVersionFlags, parseVersionOutput, renderVersionDocument, versionLine } from '../../version.js';

export const REMOTE_UNAVAILABLE = 'control plane version: not available (no control-plane client in this build; use --remote=false)';

interface VersionFlags {
  readonly output?: string;
  readonly short?: unknown;
  readonly remote?: unknown;
  readonly revision?: string;
}

export function register(program: Command, cli: Cli): Command {
  const cmd = addVersionFlags(program.command('version').description('Prints build version information.'))
    .addOption(boolOption('--remote', 'Use --remote=false to suppress the control plane check.', true))
    .option('-r, --revision <revision>', 'Control plane revision.');
  return cmd.action(
    cli.action(async (opts: VersionFlags) => {
      const output = parseVersionOutput(opts.output);
      const short = boolValue(opts.short, '--short');
      const remote = boolValue(opts.remote, '--remote', true);
      const info = getBuildInfo(cli.io.env);
      const stderr = remote ? `${REMOTE_UNAVAILABLE}\n` : undefined;
      if (output !== '') return { stdout: await renderVersionDocument({ clientVersion: info }, output), stderr };
      if (!remote) return { stdout: `${versionLine(info, short)}\n` };
      return { stdout: `client version: ${versionLine(info, short)}\n`, stderr };
    }),
  );
}
