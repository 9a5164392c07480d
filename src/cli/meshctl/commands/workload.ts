/**
 * `meshctl x workload` (spec part 1): configuring workloads on VMs.
 *
 *   group create --name N [-n ns] [-l k=v,…] [-a k=v,…] [-p name=port,…] [-s account]
 *       prints a WorkloadGroup (YAML), a template for the entries of its VMs
 *   entry configure (-f group.yaml | --name N [-n ns]) -o DIR [--clusterID Cluster] [--autoregister]
 *       [--capture-dns] [--ingressIP IP | --ingressService svc.ns] [-r rev] [--tokenDuration 3600]
 *       [--workloadIP IP]
 *       writes the files a VM needs to join (token, root certificate, cluster.env, mesh.yaml, hosts)
 *
 * The work is in ../diag/run-workload.ts.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import { renderYaml } from '../../output.js';
import { boolOption, boolValue, CliError, type Cli } from '../../runner.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor, withKubeClient } from '../kube.js';
import { collectSlice } from './install.js';

interface GroupFlags {
  readonly name?: string;
  readonly labels: string[];
  readonly annotations: string[];
  readonly ports: string[];
  readonly serviceAccount: string;
}

interface EntryFlags {
  readonly autoregister?: unknown;
  readonly captureDns?: unknown;
  readonly clusterID: string;
  readonly file?: string;
  readonly ingressIP?: string;
  readonly ingressService: string;
  readonly name?: string;
  readonly output?: string;
  readonly revision?: string;
  readonly tokenDuration: string;
  readonly workloadIP?: string;
}

function registerGroup(workload: Command, cli: Cli): void {
  workload
    .command('group')
    .description('Commands of WorkloadGroups, the templates of VM workloads.')
    .command('create')
    .description('Prints a WorkloadGroup (YAML, ready to apply): the template of the WorkloadEntries of its VMs.')
    .option('--name <name>', 'Name of the WorkloadGroup.')
    .option('-l, --labels <key=value>', 'Labels of the workloads; repeatable, comma-separated.', collectSlice, [])
    .option('-a, --annotations <key=value>', 'Annotations of the workloads; repeatable, comma-separated.', collectSlice, [])
    .option('-p, --ports <name=port>', 'Incoming ports of the workloads, as <name>=<port>; repeatable, comma-separated.', collectSlice, [])
    .option('-s, --serviceAccount <name>', 'Service account of the workloads.', 'default')
    .action(
      cli.action(async (opts: GroupFlags, self: Command) => {
        const { workloadGroup } = await import('../diag/run-workload.js');
        const globals = globalOptions(self);
        const group = workloadGroup({ ...opts, namespace: globals.namespace || 'default' });
        return { stdout: await renderYaml(group) };
      }),
    );
}

function registerEntry(workload: Command, cli: Cli): void {
  workload
    .command('entry')
    .description('Commands of WorkloadEntries, the VM workloads.')
    .command('configure')
    .description('Writes the files a VM needs to join the mesh as a member of a WorkloadGroup: mesh-token, root-cert.pem, cluster.env, mesh.yaml and hosts.')
    .addOption(boolOption('--autoregister', 'Let the VM register itself: meshd creates its WorkloadEntry when its proxy connects.'))
    .addOption(boolOption('--capture-dns', 'Capture outgoing DNS (port 53) and redirect it to the agent.'))
    .option('--clusterID <id>', 'ID of the cluster the VM joins.', 'Cluster')
    .option('-f, --file <file>', 'The WorkloadGroup file (leave empty to read the group --name from the API server).')
    .option('--ingressIP <ip>', 'Address of the east-west gateway the VM reaches meshd through (written to hosts).')
    .option('--ingressService <service.namespace>', 'The east-west gateway service whose load-balancer address goes to hosts (namespace: the mesh namespace).', 'mesh-eastwestgateway')
    .option('--name <name>', 'Name of the WorkloadGroup on the API server (namespace: -n).')
    .option('-o, --output <dir>', 'Directory to write the files to.')
    .option('-r, --revision <revision>', 'Control plane revision whose meshd the VM connects to.')
    .option('--tokenDuration <seconds>', 'Lifetime of the service-account token, in seconds.', '3600')
    .option('--workloadIP <ip>', 'The VM\'s address in the mesh (when it is not the address of its first network interface).')
    .action(
      cli.action(async (opts: EntryFlags, self: Command) => {
        const run = await import('../diag/run-workload.js');
        const globals = globalOptions(self);
        const namespace = globals.namespace || 'default';
        if (!opts.output) throw new CliError('-o/--output: give the directory to write the files to');
        if (opts.file === undefined && !opts.name) throw new CliError('name the WorkloadGroup: -f/--file <file>, or --name <name> to read it from the API server');
        if (opts.file !== undefined && opts.name) throw new CliError('give -f/--file or --name, not both');
        if (!/^\d+$/.test(opts.tokenDuration)) throw new CliError(`--tokenDuration: ${JSON.stringify(opts.tokenDuration)} is not a whole number of seconds`);
        const input = {
          meshNamespace: globals.meshNamespace,
          revision: opts.revision,
          clusterId: opts.clusterID,
          autoregister: boolValue(opts.autoregister, '--autoregister'),
          captureDns: boolValue(opts.captureDns, '--capture-dns'),
          ingressIP: opts.ingressIP,
          ingressService: opts.ingressService,
          tokenSeconds: Number(opts.tokenDuration),
          workloadIP: opts.workloadIP,
        };
        run.checkEntryInput(input);
        let fromFile: import('../diag/run-workload.js').WorkloadGroupObject | undefined;
        if (opts.file !== undefined) {
          const stdin = cli.io.readStdin;
          if (opts.file === '-' && !stdin) throw new CliError('-f -: no standard input to read');
          const text = opts.file === '-' && stdin ? await stdin() : await fs.readFile(opts.file, 'utf8').catch((err: NodeJS.ErrnoException) => {
            throw new CliError(`-f/--file: cannot read ${opts.file}: ${err.code ?? err.message}`);
          });
          fromFile = run.parseGroupFile(text, opts.file, namespace);
        }
        const out = opts.output;
        return withKubeClient(
          () => kubeClientFor(globals, cli.io.env),
          async (kube) => {
            const group = fromFile ?? (await run.fetchGroup(kube, opts.name ?? '', namespace));
            const { files, warnings } = await run.vmFiles(kube, group, input);
            await fs.mkdir(out, { recursive: true }).catch((err: NodeJS.ErrnoException) => {
              throw new CliError(`-o/--output: cannot make directory ${out}: ${err.code ?? err.message}`);
            });
            const written: string[] = [];
            for (const f of files) {
              const file = path.join(out, f.name);
              await fs.writeFile(file, f.content, { mode: f.mode });
              await fs.chmod(file, f.mode);
              written.push(file);
            }
            const group_ = `${group.metadata?.namespace}/${group.metadata?.name}`;
            return {
              stdout: `Files of a VM of WorkloadGroup ${group_}:\n${written.map((f) => `  ${f}\n`).join('')}`,
              stderr: warnings.map((w) => `warning: ${w}\n`).join(''),
            };
          },
        );
      }),
    );
}

export function register(parent: Command, cli: Cli): Command {
  const workload = parent.command('workload').description('Configures workloads on VMs and other hosts outside the cluster.');
  registerGroup(workload, cli);
  registerEntry(workload, cli);
  return workload;
}
