/**
 * Global flags of `meshctl` (spec part 1, "Global flags"): accepted by every command, before or
 * after the command name. MESHCTL_MESHNAMESPACE sets the default of `--meshNamespace`.
 */
import { Command, Option } from 'commander';
import { parseInteger } from '../../util/parse.js';
import { CliError } from '../runner.js';

export interface GlobalOptions {
  readonly context: string;
  readonly meshNamespace: string;
  readonly clusterconfig: string;
  readonly namespace: string;
  readonly vklog: number;
}

export function registerGlobalFlags(program: Command, env: Readonly<Record<string, string | undefined>>): Command {
  return program
    .addOption(new Option('--context <name>', 'Name of the orchestrator config context to use.'))
    .addOption(new Option('-i, --meshNamespace <namespace>', 'Mesh system namespace.').default(env.MESHCTL_MESHNAMESPACE || 'mesh-system'))
    .addOption(new Option('-c, --clusterconfig <file>', 'Orchestrator configuration file.'))
    .addOption(new Option('-n, --namespace <namespace>', 'Config namespace.'))
    .addOption(new Option('--vklog <level>', 'Log verbosity number, like a -v flag.').default('0'));
}

/** The global options as `cmd` (any command of the program) sees them. Throws `CliError` for a bad value. */
export function globalOptions(cmd: Command): GlobalOptions {
  const raw = cmd.optsWithGlobals<Partial<Record<keyof GlobalOptions, string>>>();
  let vklog: number;
  try {
    vklog = parseInteger(raw.vklog ?? '0');
  } catch (err) {
    throw new CliError(`--vklog: ${(err as Error).message}`);
  }
  if (vklog < 0) throw new CliError(`--vklog: ${vklog} is out of range: must be at least 0`);
  return {
    context: raw.context ?? '',
    meshNamespace: raw.meshNamespace ?? 'mesh-system',
    clusterconfig: raw.clusterconfig ?? '',
    namespace: raw.namespace ?? '',
    vklog,
  };
}
