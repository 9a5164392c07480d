/**
 * `meshctl cluster-inject` (spec part 2) and, under `x`, `cluster-uninject` and `injector list`
 * (spec part 1): manual injection with the webhook's own code (src/inject/manual.ts). The work is
 * loaded when a command runs (../inject/run-inject.ts).
 */
import { Option, type Command } from 'commander';
import { colorEnabled, parseOutputFormat } from '../../output.js';
import type { Cli } from '../../runner.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor } from '../kube.js';

interface InjectFlags {
  readonly filename?: string;
  readonly output?: string;
  readonly injectConfigFile?: string;
  readonly meshConfigFile?: string;
  readonly meshConfigMapName: string;
  readonly valuesFile?: string;
  readonly revision?: string;
  readonly webhookConfig: string;
}

export function register(program: Command, cli: Cli): Command {
  return program
    .command('cluster-inject')
    .description('Injects the sidecar into workload resources as the injection webhook would (Pods, Deployments, StatefulSets, DaemonSets, ReplicaSets, ReplicationControllers, Jobs, CronJobs; other kinds pass through unchanged).')
    .option('-f, --filename <file>', 'Input file with Kubernetes resources; - reads standard input.')
    .option('-o, --output <file>', 'Output file (default: standard output).')
    .option('--injectConfigFile <file>', 'Injector config (the ConfigMap mesh-sidecar-injector\'s key config) instead of the cluster\'s.')
    .option('--valuesFile <file>', 'Injection values (the ConfigMap mesh-sidecar-injector\'s key values) instead of the cluster\'s.')
    .option('--meshConfigFile <file>', 'Mesh config file instead of the cluster\'s ConfigMap (wins over --meshConfigMapName).')
    .option('--meshConfigMapName <name>', 'ConfigMap of the mesh config in the mesh namespace (key mesh).', 'mesh')
    .option('-r, --revision <revision>', 'Control-plane revision whose injector settings are used.')
    .option('--webhookConfig <name>', 'Mutating webhook configuration whose revision\'s injector settings are read from the cluster.', 'mesh-sidecar-injector')
    .action(
      cli.action(async (opts: InjectFlags, cmd: Command) => {
        const globals = globalOptions(cmd);
        const { runClusterInject } = await import('../inject/run-inject.js');
        return runClusterInject(
          {
            filename: opts.filename ?? '',
            output: opts.output,
            injectConfigFile: opts.injectConfigFile,
            valuesFile: opts.valuesFile,
            meshConfigFile: opts.meshConfigFile,
            meshConfigMapName: opts.meshConfigMapName,
            meshNamespace: globals.meshNamespace,
            revision: opts.revision,
            webhookConfig: opts.webhookConfig,
            defaultNamespace: globals.namespace || 'default',
            readStdin: cli.io.readStdin,
          },
          () => kubeClientFor(globals, cli.io.env),
        );
      }),
    );
}

/** `x cluster-uninject` and `x injector list`. */
export function registerExperimental(x: Command, cli: Cli): Command {
  x.command('cluster-uninject')
    .description('Removes the sidecar from resources: the inverse of cluster-inject.')
    .option('-f, --filename <file>', 'Input file; - reads standard input.')
    .option('-o, --output <file>', 'Output file (default: standard output).')
    .action(
      cli.action(async (opts: { filename?: string; output?: string }, cmd: Command) => {
        const globals = globalOptions(cmd);
        const { runClusterUninject } = await import('../inject/run-inject.js');
        return runClusterUninject({ filename: opts.filename ?? '', output: opts.output, defaultNamespace: globals.namespace || 'default', readStdin: cli.io.readStdin });
      }),
    );
  const injector = x.command('injector').description('Lists sidecar injectors and the pods they injected.');
  injector
    .command('list')
    .description('Lists the namespaces injectors select, their injector revision and webhook, and their pods (all, injected, by revision).')
    .addOption(new Option('-o, --output <format>', 'One of table or json.').default('table'))
    .action(
      cli.action(async (opts: { output: string }, cmd: Command) => {
        const output = parseOutputFormat(opts.output, ['table', 'json'] as const);
        const globals = globalOptions(cmd);
        const [{ withKubeClient }, { runInjectorList }] = [await import('../kube.js'), await import('../inject/run-inject.js')];
        return withKubeClient(() => kubeClientFor(globals, cli.io.env), (c) => runInjectorList(c, { output, color: colorEnabled(cli.io) }));
      }),
    );
  return x;
}
