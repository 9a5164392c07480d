/**
 * What `meshctl x revision list|describe` print: the installed revisions as a table (REVISION,
 * TAGS, CONTROL PLANE with ready/wanted replicas, GATEWAYS, OWNER) or JSON; one revision as
 * sections (version, owners and their customizations, webhook, tags, control plane, gateways,
 * namespaces, and with `-v` the pods of those namespaces) or JSON.
 */
import type { KubeClient } from '../../../kube/client.js';
import { describeRevision, listRevisions, type PodInfo, type WorkloadInfo } from '../../../install/revisions.js';
import { toYaml } from '../../../install/yaml-io.js';
import { renderJson, renderTable } from '../../output.js';
import type { CommandOutcome } from '../../runner.js';

export interface RevisionOutputOptions {
  readonly output: 'table' | 'json';
  readonly verbose?: boolean;
  readonly color?: boolean;
}

const workload = (w: WorkloadInfo): string => `${w.namespace}/${w.name} (${w.ready}/${w.replicas})`;

export async function runRevisionList(client: KubeClient, opts: RevisionOutputOptions): Promise<CommandOutcome> {
  const revisions = await listRevisions(client);
  if (opts.output === 'json') return { stdout: renderJson(revisions) };
  if (revisions.length === 0) return { stdout: 'No control-plane revisions found.\n' };
  const headers = ['REVISION', 'TAGS', 'CONTROL PLANE', 'GATEWAYS', 'OWNER'];
  if (opts.verbose) headers.push('VERSION');
  const rows = revisions.map((r) => {
    const row = [r.revision, r.tags.join(','), r.meshd.map(workload).join(','), r.gateways.map(workload).join(','), r.owners.join(',')];
    if (opts.verbose) row.push(r.version ?? '');
    return row;
  });
  return { stdout: renderTable(headers, rows, { color: opts.color }) };
}

/** Pods as an indented table, or `<none>`. */
function podLines(pods: readonly PodInfo[]): string[] {
  if (pods.length === 0) return ['  <none>'];
  const rows = pods.map((p) => [p.namespace, p.name, p.phase, p.ready ? 'true' : 'false']);
  return renderTable(['NAMESPACE', 'NAME', 'PHASE', 'READY'], rows).trimEnd().split('\n').map((l) => `  ${l}`);
}

export async function runRevisionDescribe(client: KubeClient, revision: string, opts: RevisionOutputOptions): Promise<CommandOutcome> {
  const d = await describeRevision(client, revision, { verbose: opts.verbose });
  if (opts.output === 'json') return { stdout: renderJson(d) };
  const out: string[] = [];
  out.push(`REVISION: ${d.revision}`);
  out.push(`VERSION: ${d.version ?? '<unknown>'}`);
  out.push(`TAGS: ${d.tags.join(', ') || '<none>'}`);
  out.push(`WEBHOOK: ${d.webhook ?? '<none>'}`);
  out.push(`OWNERS: ${d.owners.join(', ') || '<none>'}`);
  out.push('');
  out.push('CUSTOMIZATIONS:');
  const custom = Object.entries(d.customizations);
  if (custom.length === 0) out.push('  <none>');
  for (const [owner, spec] of custom) {
    out.push(`  ${owner}:`);
    out.push(...toYaml(spec).trimEnd().split('\n').map((l) => `    ${l}`));
  }
  out.push('');
  out.push('CONTROL PLANE:');
  out.push(...podLines(d.controlPlanePods));
  out.push('');
  out.push('GATEWAYS:');
  out.push(...podLines(d.gatewayPods));
  out.push('');
  out.push(`NAMESPACES: ${d.namespaces.join(', ') || '<none>'}`);
  if (d.workloadPods) {
    out.push('');
    out.push('PODS:');
    out.push(...podLines(d.workloadPods));
  }
  return { stdout: `${out.join('\n')}\n` };
}
