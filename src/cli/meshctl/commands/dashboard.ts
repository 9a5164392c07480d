/**
 * `meshctl dashboard` (aliases `dash`, `d`, spec part 1): web UIs of mesh components through a local
 * port forward, with the DG flags `--address` (localhost: both 127.0.0.1 and ::1), `--browser`,
 * `-p/--port`. Subcommands:
 *
 *   controlz [<type>/]<name>[.<namespace>] | -l <selector>   ControlZ of a meshd pod (--ctrlz_port 9876);
 *                                                            namespace: -n, else the mesh namespace
 *   proxy    [<type>/]<name>[.<namespace>] | -l <selector>   the admin UI of a proxy (port 15000);
 *                                                            namespace: -n, else the mesh namespace
 *                                                            (spec part 1: under dashboard, -n
 *                                                            defaults to mesh-system)
 *
 *   viz | topology | metrics | trace-a | trace-b | trace-c          an addon's web UI: its pod found by the
 *                                                            addon's labels (../diag/addons.ts) in -n,
 *                                                            else the mesh namespace
 *
 * The work is in ../diag/run-dashboard.ts.
 */
import { Option, type Command } from 'commander';
import { boolOption, boolValue, CliError, type Cli } from '../../runner.js';
import { parsePodRef, type PodRef } from '../diag/flags.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor, withKubeClient } from '../kube.js';
import type { KubeClient } from '../../../kube/client.js';
import { ADDONS, findAddonPod } from '../diag/addons.js';
import { DEFAULT_CTRLZ_PORT } from './admin.js';

const PROXY_ADMIN_PORT = 15000;

interface GroupFlags {
  readonly address: string;
  readonly browser?: unknown;
  readonly port: string;
  readonly selector?: string;
  readonly ctrlz_port?: string;
}

/** Resolves on the first SIGINT or SIGTERM (the way a dashboard session ends). */
function interrupted(): { promise: Promise<void>; dispose(): void } {
  let done!: () => void;
  const promise = new Promise<void>((resolve) => (done = resolve));
  process.once('SIGINT', done);
  process.once('SIGTERM', done);
  return {
    promise,
    dispose: () => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
    },
  };
}

async function podOf(kube: KubeClient, ref: PodRef | undefined, selector: string | undefined, namespace: string): Promise<{ namespace: string; name: string }> {
  const { resolvePod } = await import('../diag/pods.js');
  if (ref) {
    const pod = await resolvePod(kube, ref);
    return { namespace: pod.metadata?.namespace ?? ref.namespace, name: pod.metadata?.name ?? ref.name };
  }
  const list = await kube.list<{ metadata?: { name?: string }; status?: { phase?: string } }>('v1', 'Pod', { namespace, labelSelector: selector });
  const pod = list.items.find((p) => p.status?.phase === 'Running') ?? list.items[0];
  if (!pod?.metadata?.name) throw new CliError(`no pod matches ${selector} in namespace ${namespace}`);
  return { namespace, name: pod.metadata.name };
}

function portFlag(flag: string, text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > 65535) throw new CliError(`${flag}: ${JSON.stringify(text)} is not a port number (1-65535)`);
  return n;
}

export function register(program: Command, cli: Cli): Command {
  const group = program
    .command('dashboard')
    .aliases(['dash', 'd'])
    .description('Opens the web UI of a mesh component through a local port forward.')
    .addOption(new Option('--address <address>', 'Address to listen on: an IP address, or localhost (127.0.0.1 and ::1).').default('localhost'))
    .addOption(boolOption('--browser', 'Open a browser on the forwarded port; --browser=false only prints its URL.', true))
    .addOption(new Option('-p, --port <port>', 'Local port to listen on (0 picks a free one).').default('0'));

  const subcommands: ReadonlyArray<{ name: string; description: string; what: string; ctrlz: boolean }> = [
    { name: 'controlz', description: 'Opens the ControlZ page of a meshd pod.', what: 'ControlZ', ctrlz: true },
    { name: 'proxy', description: 'Opens the admin UI of a proxy.', what: 'proxy admin', ctrlz: false },
  ];
  for (const s of subcommands) {
    const cmd = group
      .command(s.name)
      .description(s.description)
      .argument('[pod]', 'The pod, as [<type>/]<name>[.<namespace>] (or -l/--selector); the namespace defaults to -n, else the mesh namespace.')
      .option('-l, --selector <selector>', 'Label selector: the first running pod it matches.');
    if (s.ctrlz) cmd.option('--ctrlz_port <port>', 'ControlZ port of the meshd pod.', String(DEFAULT_CTRLZ_PORT));
    cmd.action(
      cli.action(async (pod: string | undefined, _o: unknown, self: Command) => {
        const opts = self.optsWithGlobals<GroupFlags>();
        const globals = globalOptions(self);
        const { dashboardFlags, runDashboard } = await import('../diag/run-dashboard.js');
        const flags = dashboardFlags(opts.address, opts.port, boolValue(opts.browser, '--browser', true));
        const podPort = s.ctrlz ? portFlag('--ctrlz_port', opts.ctrlz_port ?? String(DEFAULT_CTRLZ_PORT)) : PROXY_ADMIN_PORT;
        if (pod !== undefined && opts.selector !== undefined) throw new CliError('give a pod or -l/--selector, not both');
        if (pod === undefined && !opts.selector) throw new CliError(`name a pod ([<type>/]<name>[.<namespace>]) or give -l/--selector`);
        // under dashboard, -n defaults to the mesh namespace (mesh-system) for every subcommand
        const namespace = globals.namespace || globals.meshNamespace;
        const ref = pod !== undefined ? parsePodRef(pod, namespace) : undefined;
        const stop = interrupted();
        try {
          return await withKubeClient(
            () => kubeClientFor(globals, cli.io.env),
            async (kube) => {
              const target = await podOf(kube, ref, opts.selector, namespace);
              return runDashboard(kube, { pod: target, podPort, what: `${s.what} of ${target.name}.${target.namespace}`, path: '/' }, flags, cli.io, stop.promise);
            },
          );
        } finally {
          stop.dispose();
        }
      }),
    );
  }
  for (const a of ADDONS) {
    group
      .command(a.role)
      .description(`Opens the ${a.description.toLowerCase()} (the first pod matching ${a.selector}, port ${a.port}).`)
      .action(
        cli.action(async (_o: unknown, self: Command) => {
          const opts = self.optsWithGlobals<GroupFlags>();
          const globals = globalOptions(self);
          const { dashboardFlags, runDashboard } = await import('../diag/run-dashboard.js');
          const flags = dashboardFlags(opts.address, opts.port, boolValue(opts.browser, '--browser', true));
          const namespace = globals.namespace || globals.meshNamespace;
          const stop = interrupted();
          try {
            return await withKubeClient(
              () => kubeClientFor(globals, cli.io.env),
              async (kube) => {
                const target = await findAddonPod(kube, a, namespace);
                return runDashboard(kube, { pod: target, podPort: a.port, what: `${a.role} dashboard (${target.name}.${target.namespace})`, path: a.path }, flags, cli.io, stop.promise);
              },
            );
          } finally {
            stop.dispose();
          }
        }),
      );
  }
  return group;
}
