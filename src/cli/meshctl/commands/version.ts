/**
 * `meshctl version` (spec part 2): `-o/--output`, `-s/--short`, `--remote` (on by default;
 * `--remote=false` skips the control-plane check) and `-r/--revision`. With `--remote` the
 * control plane's version comes from the meshd Deployments in the mesh namespace of the cluster
 * the global flags name (src/cli/meshctl/remote-version.ts). A cluster that cannot be reached is
 * reported on standard error and the client version is printed as usual (exit 0), so the command
 * stays useful without a cluster.
 */
import type { Command } from 'commander';
import { getBuildInfo } from '../../../version/build-info.js';
import { boolOption, boolValue, type Cli } from '../../runner.js';
import { addVersionFlags, parseVersionOutput, renderVersionDocument, versionLine } from '../../version.js';
import { globalOptions } from '../global-flags.js';

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
    cli.action(async (opts: VersionFlags, command: Command) => {
      const output = parseVersionOutput(opts.output);
      const short = boolValue(opts.short, '--short');
      const remote = boolValue(opts.remote, '--remote', true);
      const info = getBuildInfo(cli.io.env);
      if (!remote) {
        if (output !== '') return { stdout: await renderVersionDocument({ clientVersion: info }, output) };
        return { stdout: `${versionLine(info, short)}\n` };
      }
      const globals = globalOptions(command);
      const { controlPlaneVersions } = await import('../remote-version.js');
      let stderr: string | undefined;
      let meshd: Awaited<ReturnType<typeof controlPlaneVersions>> = [];
      try {
        meshd = await controlPlaneVersions(globals, opts.revision ?? '', cli.io.env);
        if (meshd.length === 0) stderr = `control plane version: no meshd found in namespace ${globals.meshNamespace}${opts.revision ? ` for revision ${opts.revision}` : ''}\n`;
      } catch (err) {
        stderr = `control plane version: not available (${(err as Error).message})\n`;
      }
      if (output !== '') return { stdout: await renderVersionDocument({ clientVersion: info, meshVersion: meshd }, output), stderr };
      const lines = [`client version: ${versionLine(info, short)}`];
      const versions = [...new Set(meshd.map((m) => m.version))];
      if (versions.length > 0) lines.push(`control plane version: ${versions.join(', ')}`);
      if (!short) for (const m of meshd) lines.push(`  ${m.deployment} (revision ${m.revision}): ${m.version}, ${m.readyReplicas} ready`);
      return { stdout: `${lines.join('\n')}\n`, stderr };
    }),
  );
}
