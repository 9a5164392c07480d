/**
 * `meshctl x add-to-mesh` (alias `add`) and `x remove-from-mesh` (alias `rm`), spec part 1:
 *
 *   add-to-mesh deployment|deploy|dep <deployment> [-r rev]   restart its pods with the sidecar
 *   add-to-mesh service|svc <service> [-r rev]                 the same for the Deployments it selects
 *   add-to-mesh external-service|es <svcname> <ip>[,<ip>…] [name:]port… [-a k=v] [-l k=v] [-s account]
 *                                                             a ServiceEntry and a selector-less Service
 *   remove-from-mesh deployment|service|external-service <name>   the inverse
 *
 * Namespace: -n, else default. The pods are injected by the cluster's injection webhook of the
 * revision (docs/adr/0124), so of the IG flags only the defaults the webhook itself uses are
 * accepted; a local injector config (--injectConfigFile, --meshConfigFile, --valuesFile, another map
 * name) is refused by name. The work is in ../diag/run-mesh-membership.ts.
 */
import { Option, type Command } from 'commander';
import { CliError, type Cli } from '../../runner.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor, withKubeClient } from '../kube.js';
import { collectSlice } from './install.js';
import type { MembershipChange } from '../diag/run-mesh-membership.js';

const INJECT_CONFIG_MAP = 'mesh-sidecar-injector';
const MESH_CONFIG_MAP = 'mesh';

interface InjectFlags {
  readonly injectConfigFile?: string;
  readonly injectConfigMapName: string;
  readonly meshConfigFile?: string;
  readonly meshConfigMapName: string;
  readonly valuesFile?: string;
}

/** IG (spec part 1). */
function addInjectFlags(cmd: Command): Command {
  return cmd
    .addOption(new Option('--injectConfigFile <file>', 'Injection config file (not supported: the cluster\'s injection webhook injects).').conflicts('injectConfigMapName'))
    .option('--injectConfigMapName <name>', 'ConfigMap of the injection config (key config).', INJECT_CONFIG_MAP)
    .option('--meshConfigFile <file>', 'Mesh config file (not supported: the cluster\'s injection webhook injects).')
    .option('--meshConfigMapName <name>', 'ConfigMap of the mesh config (key mesh).', MESH_CONFIG_MAP)
    .option('--valuesFile <file>', 'Injection values file (not supported: the cluster\'s injection webhook injects).');
}

/** Refuses the IG settings that would need a local injector. */
function checkInjectFlags(f: InjectFlags): void {
  const why = 'add-to-mesh does not inject by itself: the injection webhook of the revision injects the restarted pods with the cluster\'s own injector and mesh config';
  if (f.injectConfigFile !== undefined) throw new CliError(`--injectConfigFile: not supported; ${why}`);
  if (f.meshConfigFile !== undefined) throw new CliError(`--meshConfigFile: not supported; ${why}`);
  if (f.valuesFile !== undefined) throw new CliError(`--valuesFile: not supported; ${why}`);
  if (f.injectConfigMapName !== INJECT_CONFIG_MAP) throw new CliError(`--injectConfigMapName: only ${INJECT_CONFIG_MAP} is supported; ${why}`);
  if (f.meshConfigMapName !== MESH_CONFIG_MAP) throw new CliError(`--meshConfigMapName: only ${MESH_CONFIG_MAP} is supported; ${why}`);
}

const report = (changes: readonly MembershipChange[]): string => changes.map((c) => `${c.kind} ${c.namespace}/${c.name}: ${c.what}\n`).join('');

function workloadCommand(parent: Command, cli: Cli, kind: 'deployment' | 'service', adding: boolean): void {
  const cmd = parent
    .command(kind)
    .aliases(kind === 'deployment' ? ['deploy', 'dep'] : ['svc'])
    .description(
      kind === 'deployment'
        ? `Restarts the pods of a Deployment ${adding ? 'with' : 'without'} the sidecar.`
        : `Restarts the pods of the Deployments a Service selects ${adding ? 'with' : 'without'} the sidecar.`,
    )
    .argument(`<${kind}>`, `The ${kind === 'deployment' ? 'Deployment' : 'Service'} (namespace: -n, else default).`);
  if (adding) cmd.option('-r, --revision <revision>', 'Control plane revision whose webhook injects the pods.');
  cmd.action(
    cli.action(async (name: string, opts: { revision?: string }, self: Command) => {
      if (adding) checkInjectFlags(self.optsWithGlobals<InjectFlags>());
      const globals = globalOptions(self);
      const { changeWorkloadMembership } = await import('../diag/run-mesh-membership.js');
      return withKubeClient(
        () => kubeClientFor(globals, cli.io.env),
        async (kube) => ({ stdout: report(await changeWorkloadMembership(kube, { kind, name, namespace: globals.namespace || 'default', revision: opts.revision, adding })) }),
      );
    }),
  );
}

export function registerAdd(parent: Command, cli: Cli): Command {
  const add = addInjectFlags(parent.command('add-to-mesh').alias('add').description('Restarts pods with the sidecar, or configures access to an external service (under development).'));
  workloadCommand(add, cli, 'deployment', true);
  workloadCommand(add, cli, 'service', true);
  add
    .command('external-service')
    .alias('es')
    .description('Creates a ServiceEntry and a Service without selector for a service outside the cluster, typically on VMs.')
    .argument('<svcname>', 'Name of the Service (namespace: -n, else default).')
    .argument('<ip>', 'Addresses of the service, comma-separated.')
    .argument('<port...>', 'Ports, as [<name>:]<port>, the name starting with a protocol (http:8080, tcp-db:5432); tcp when left out.')
    .option('-a, --annotations <key=value>', 'Annotations of the ServiceEntry and Service; repeatable, comma-separated.', collectSlice, [])
    .option('-l, --labels <key=value>', 'Labels of the ServiceEntry, Service and endpoints; repeatable, comma-separated.', collectSlice, [])
    .option('-s, --serviceaccount <name>', 'Service account of the endpoints.', 'default')
    .action(
      cli.action(async (name: string, ips: string, ports: string[], opts: { annotations: string[]; labels: string[]; serviceaccount: string }, self: Command) => {
        checkInjectFlags(self.optsWithGlobals<InjectFlags>());
        const globals = globalOptions(self);
        const { addExternalService, externalServiceObjects } = await import('../diag/run-mesh-membership.js');
        const { parseKeyValues } = await import('../diag/run-workload.js');
        const input = {
          name,
          namespace: globals.namespace || 'default',
          ips,
          ports,
          labels: parseKeyValues('--labels', opts.labels),
          annotations: parseKeyValues('--annotations', opts.annotations),
          serviceAccount: opts.serviceaccount,
        };
        externalServiceObjects(input); // checks the input before any cluster request
        return withKubeClient(
          () => kubeClientFor(globals, cli.io.env),
          async (kube) => ({ stdout: report(await addExternalService(kube, input)) }),
        );
      }),
    );
  return add;
}

export function registerRemove(parent: Command, cli: Cli): Command {
  const rm = parent.command('remove-from-mesh').alias('rm').description('Restarts pods without the sidecar, or removes the configuration of an external service (under development).');
  workloadCommand(rm, cli, 'deployment', false);
  workloadCommand(rm, cli, 'service', false);
  rm.command('external-service')
    .alias('es')
    .description('Deletes the ServiceEntry and the Service that add-to-mesh external-service made.')
    .argument('<svcname>', 'Name of the Service (namespace: -n, else default).')
    .action(
      cli.action(async (name: string, _o: unknown, self: Command) => {
        const globals = globalOptions(self);
        const { removeExternalService } = await import('../diag/run-mesh-membership.js');
        return withKubeClient(
          () => kubeClientFor(globals, cli.io.env),
          async (kube) => ({ stdout: report(await removeExternalService(kube, name, globals.namespace || 'default')) }),
        );
      }),
    );
  return rm;
}
