/**
 * `meshctl x describe pod <pod>` and `x describe service <svc>` (alias `des`, spec part 1): the
 * Services, DestinationRules, VirtualServices, Gateways, PeerAuthentications and
 * AuthorizationPolicies that apply to a workload and what its traffic does, as text. The data comes
 * from ../diag/describe.ts; meshd is reached over the xDS debug channel with the connection
 * settings of the top-level diagnosis commands (MESHCTL_XDS_ADDRESS …). When no meshd answers the
 * description is still printed, the reason goes to standard error and the exit code is 1.
 */
import type { Command } from 'commander';
import { boolOption, boolValue, type Cli, type CommandOutcome } from '../../runner.js';
import type { RouteSummary, WorkloadDescription } from '../diag/describe.js';
import { parsePodRef } from '../diag/flags.js';
import { globalOptions } from '../global-flags.js';
import { kubeClientFor } from '../kube.js';

const destinationText = (d: RouteSummary['destinations'][number], hostname: string): string => {
  const host = d.host === hostname ? d.host.split('.')[0] : d.host;
  return `${d.weight !== undefined ? `${d.weight}% ` : ''}${host}${d.port !== undefined ? `:${d.port}` : ''}${d.subset ? ` subset ${d.subset}` : ''}`;
};

/** The description as the lines an operator reads. */
export function describeText(d: WorkloadDescription): string {
  const out: string[] = [];
  const line = (indent: number, text: string): void => {
    out.push(`${'   '.repeat(indent)}${text}`);
  };
  if (d.pod) {
    line(0, `Pod: ${d.pod.name}.${d.pod.namespace} (${d.pod.phase})`);
    line(1, `Labels: ${Object.entries(d.pod.labels).map(([k, v]) => `${k}=${v}`).join(', ') || 'none'}`);
    line(1, `Service account: ${d.pod.serviceAccount}`);
    if (d.pod.ports.length > 0) line(1, `Ports: ${d.pod.ports.join(', ')}`);
    line(1, `Sidecar: ${d.pod.inMesh ? 'yes' : 'none'}`);
  }
  if (d.pods) line(0, `Pods selected: ${d.pods.length > 0 ? d.pods.join(', ') : 'none'}`);
  for (const w of d.warnings) line(0, `Warning: ${w}`);
  for (const s of d.services) {
    out.push('--------------------');
    line(0, `Service: ${s.name}.${s.namespace} (${s.hostname})`);
    for (const p of s.ports) line(1, `Port: ${p.name || '-'} ${p.port}/${p.protocol} targets pod port ${p.targetPort}`);
    if (s.destinationRule) {
      const dr = s.destinationRule;
      line(0, `DestinationRule: ${dr.name}.${dr.namespace} for "${dr.host}"`);
      if (dr.subsets.length > 0) {
        const mine = dr.subsets.filter((x) => x.hasPod).map((x) => x.name);
        const others = dr.subsets.filter((x) => !x.hasPod).map((x) => x.name);
        if (d.pod) line(1, `Matching subsets: ${mine.join(', ') || 'none'}${others.length > 0 ? ` (non-matching: ${others.join(', ')})` : ''}`);
        else line(1, `Subsets: ${dr.subsets.map((x) => `${x.name} (${Object.entries(x.labels).map(([k, v]) => `${k}=${v}`).join(',')})`).join(', ')}`);
      }
      if (dr.policy.length > 0) line(1, `Traffic policy: ${dr.policy.join(', ')}`);
    } else line(0, 'DestinationRule: none');
    line(1, `Client TLS: ${s.clientTls}`);
    if (s.virtualServices.length === 0) line(0, 'VirtualService: none (requests go to every endpoint of the service)');
    for (const vs of s.virtualServices) {
      line(0, `VirtualService: ${vs.name}.${vs.namespace}`);
      for (const r of vs.routes) {
        const when = r.matches.length > 0 ? `when ${r.matches.join(' or ')}` : 'otherwise';
        const dests = r.destinations.map((x) => destinationText(x, s.hostname)).join(', ') || '(no destination)';
        line(1, `${r.kind.toUpperCase()}${r.name ? ` ${r.name}` : ''}: ${when} → ${dests}${r.extras.length > 0 ? ` [${r.extras.join('; ')}]` : ''}`);
      }
    }
    for (const i of s.ingress) line(0, `Exposed on gateway(s) ${i.gateways.join(', ')} by VirtualService ${i.virtualService} for hosts ${i.hosts.join(', ')}`);
  }
  out.push('--------------------');
  if (d.servesGateways.length > 0) line(0, `Serves Gateway(s): ${d.servesGateways.join(', ')}`);
  if (d.peerAuthentication) {
    const pa = d.peerAuthentication;
    line(0, `Inbound mutual TLS: ${pa.mode}${pa.ports.length > 0 ? `, ${pa.ports.map(([p, m]) => `port ${p} ${m}`).join(', ')}` : ''}`);
    line(1, `PeerAuthentications: ${pa.policies.join(', ') || 'none (the default, PERMISSIVE)'}`);
  }
  if (d.pod) {
    if (d.authorization.length === 0) line(0, 'AuthorizationPolicies: none (every request is allowed)');
    else {
      line(0, 'AuthorizationPolicies:');
      for (const a of d.authorization) line(1, `${a.action}${a.dryRun ? ' (dry-run)' : ''} ${a.namespace}/${a.name}: ${a.rules} rule(s)`);
    }
  }
  if (d.live) {
    if (d.live.meshd) {
      line(0, `meshd ${d.live.meshd}: connected, ${Object.entries(d.live.sync ?? {}).map(([t, s]) => `${t.toUpperCase()} ${s}`).join(', ')}`);
      if (d.live.enforced) line(1, `Its configuration enforces: ${d.live.enforced.join(', ') || 'no authorization filter'}`);
    }
    if (d.live.error && !d.live.unreachable) line(0, `meshd: ${d.live.error}`);
  }
  return `${out.join('\n')}\n`;
}

function action(cli: Cli, type: 'pod' | 'service') {
  return cli.action(async (name: string, opts: { ignoreUnmeshed?: unknown }, self: Command): Promise<CommandOutcome> => {
    const globals = globalOptions(self);
    const ignoreUnmeshed = boolValue(opts.ignoreUnmeshed, '--ignoreUnmeshed');
    const ref = parsePodRef(type === 'service' && !name.includes('/') ? `service/${name}` : name, globals.namespace || 'default');
    const { describeWorkload } = await import('../diag/describe.js');
    const { xdsFlags } = await import('../diag/xds-client.js');
    const { withLazyClient } = await import('../diag/lazy-client.js');
    const { parseMeshConfig, meshSettingsFrom } = await import('../../../bootstrap/mesh-config.js');
    const { CliError } = await import('../../runner.js');
    const d = await withLazyClient(
      () => kubeClientFor(globals, cli.io.env),
      (client) =>
        describeWorkload({
          client,
          ref,
          meshNamespace: globals.meshNamespace,
          xds: xdsFlags(globals, {}, 15_000),
          ignoreUnmeshed,
          mesh: async (text) => {
            const base = { domain: 'cluster.local', clusterId: 'Kubernetes' };
            try {
              const mc = text === undefined ? {} : parseMeshConfig(text, `ConfigMap ${globals.meshNamespace}/mesh`);
              return meshSettingsFrom({ rootNamespace: globals.meshNamespace, ...mc }, base);
            } catch (err) {
              throw new CliError(`invalid mesh config: ${(err as Error).message}`);
            }
          },
        }),
    );
    const stdout = describeText(d);
    if (d.live?.unreachable) return { stdout, stderr: `error: meshd could not be asked about this proxy: ${d.live.error}\n`, exitCode: 1 };
    return { stdout };
  });
}

export function register(parent: Command, cli: Cli): Command {
  const describe = parent.command('describe').alias('des').description('Describes the mesh configuration that applies to a pod or a service and what its traffic does. Under development.');
  describe
    .command('pod')
    .description('Describes the Services, DestinationRules, VirtualServices, Gateways and policies that apply to a pod, and its proxy\'s state in meshd.')
    .argument('<pod>', 'The pod, as [<type>/]<name>[.<namespace>].')
    .addOption(boolOption('--ignoreUnmeshed', 'Suppress warnings about pods outside the mesh.'))
    .action(action(cli, 'pod'));
  describe
    .command('service')
    .alias('svc')
    .description('Describes the DestinationRule, VirtualServices, Gateways and policies that apply to a service and its pods.')
    .argument('<svc>', 'The service, as <name>[.<namespace>].')
    .addOption(boolOption('--ignoreUnmeshed', 'Suppress warnings about pods outside the mesh.'))
    .action(action(cli, 'service'));
  return describe;
}
