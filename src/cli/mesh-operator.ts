#!/usr/bin/env node
/**
 * `mesh-operator`: the operator controller's executable. `server` runs the controller (see
 * src/bootstrap/operator.ts) until SIGTERM or SIGINT; `version` prints build information. It runs in
 * the Deployment of `meshctl operator dump`, or as a local process against any cluster:
 *
 *   mesh-operator server --watchedNamespaces mesh-system --clusterconfig ~/.kube/config --operatorNamespace mesh-operator
 *
 * Heavy modules (the Kubernetes client, the controller) load only when `server` runs.
 */
import { Command, Option } from 'commander';
import { OPERATOR_EXAMPLES } from './examples.js';
import { finishHelp } from './help.js';
import { CliError, boolOption, boolValue, createCli, isMain, processIO, runCli, type Cli, type CliIO } from './runner.js';
import { registerVersionCommand } from './version.js';

interface ServerFlags {
  readonly watchedNamespaces: string;
  readonly operatorNamespace?: string;
  readonly clusterconfig?: string;
  readonly context?: string;
  readonly revision?: string;
  readonly monitoringAddr: string;
  readonly manifests?: string;
  readonly leaderElect?: unknown;
  readonly requeueDelay: string;
  readonly identity?: string;
}

function parseSeconds(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!m) throw new CliError(`${flag}: invalid duration ${JSON.stringify(text)} (use e.g. 500ms, 5s or 1m)`);
  const n = Number(m[1]);
  return m[2] === 'ms' ? n : m[2] === 'm' ? n * 60_000 : n * 1000;
}

export function buildOperatorProgram(cli: Cli): Command {
  const program = new Command('mesh-operator').description('The mesh operator controller: installs and keeps the meshes that MeshOperator resources describe.');
  program
    .command('server')
    .description('Runs the controller: watches MeshOperator resources and reconciles their installations.')
    .option('--watchedNamespaces <namespaces>', 'Namespaces whose MeshOperator resources are reconciled, comma-separated.', 'mesh-system')
    .option('--operatorNamespace <namespace>', 'Namespace of the leader-election lease (default: $POD_NAMESPACE, else mesh-operator).')
    .option('-c, --clusterconfig <file>', 'Kubeconfig file (default: KUBECONFIG, the in-cluster account, or ~/.kube/config).')
    .option('--context <name>', 'Kubeconfig context to use.')
    .option('-r, --revision <revision>', 'Reconcile only MeshOperators of this control-plane revision (default: the default revision).')
    .option('--monitoringAddr <address>', 'Address of /metrics and /ready ([host]:port; empty turns it off).', ':15014')
    .option('-d, --manifests <dir>', 'Directory with profiles/ (and crds/) to use instead of the built-in ones.')
    .addOption(boolOption('--leaderElect', 'Compete for the lease mesh-operator-lock so that one replica reconciles (--leaderElect=false: always reconcile).', true))
    .addOption(new Option('--requeueDelay <duration>', 'Delay between checks while components are not ready.').default('5s'))
    .option('--identity <name>', 'Leader-election identity (default: $POD_NAME, else host-pid-random).')
    .action(
      cli.action(async (opts: ServerFlags) => {
        const { parseNamespaceList, DEFAULT_OPERATOR_NAMESPACE } = await import('../install/operator-names.js');
        const { parseListenAddr } = await import('../config/discovery-flags.js');
        let watched: string[];
        let monitoring: { host: string; port: number } | null;
        try {
          watched = parseNamespaceList(opts.watchedNamespaces);
          monitoring = parseListenAddr(opts.monitoringAddr);
        } catch (err) {
          throw new CliError((err as Error).message.startsWith('--') ? (err as Error).message : `--monitoringAddr: ${(err as Error).message}`);
        }
        const operatorNamespace = opts.operatorNamespace || cli.io.env.POD_NAMESPACE || DEFAULT_OPERATOR_NAMESPACE;
        const { runOperatorServer } = await import('../bootstrap/operator.js');
        const { KubeConfigError } = await import('../kube/kubeconfig.js');
        await runOperatorServer({
          watchedNamespaces: watched,
          operatorNamespace,
          revision: opts.revision,
          clusterconfig: opts.clusterconfig,
          context: opts.context,
          monitoring,
          manifests: opts.manifests,
          leaderElection: boolValue(opts.leaderElect, '--leaderElect', true),
          requeueDelayMs: parseSeconds(opts.requeueDelay, '--requeueDelay'),
          identity: opts.identity,
        }).catch((err: unknown) => {
          // Bad credentials or a busy port are the user's to fix: no stack.
          if (err instanceof KubeConfigError || (err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new CliError((err as Error).message);
          throw err;
        });
      }),
    );
  registerVersionCommand(program, cli);
  return finishHelp(program, OPERATOR_EXAMPLES);
}

export async function main(argv: readonly string[] = process.argv.slice(2), io: CliIO = processIO()): Promise<number> {
  const cli = createCli(io);
  return runCli(buildOperatorProgram(cli), cli, argv);
}

if (isMain(import.meta.url)) process.exitCode = await main();
