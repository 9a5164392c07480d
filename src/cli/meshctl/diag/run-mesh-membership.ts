/**
 * `meshctl x add-to-mesh` and `x remove-from-mesh` (spec part 1), the work (docs/adr/0124):
 *
 * - deployment / service: the pods of a Deployment (of every Deployment a Service selects) are
 *   restarted with or without the sidecar. The cluster's injection webhook does the injecting: the
 *   pod template is labelled the way the webhook of the revision selects pods
 *   (`sidecar.mesh.io/inject=true`, plus `mesh.io/rev=<revision>` for a revision other than the
 *   default; `sidecar.mesh.io/inject=false` and no revision label to leave the mesh) and stamped
 *   with a restart time, so the Deployment rolls its pods. A namespace whose own labels decide
 *   otherwise, or a revision without a webhook, is refused before anything is changed.
 * - external-service: a ServiceEntry (`mesh-external-<name>`, MESH_INTERNAL, STATIC, one endpoint
 *   per address) and a Service of that name without a selector, both labelled
 *   `mesh.io/external-service=<name>`; removal deletes only objects carrying that label.
 */
import net from 'node:net';
import type { KubeClient } from '../../../kube/client.js';
import type { KubeObject } from '../../../kube/types.js';
import { CliError } from '../../runner.js';

export const INJECT_LABEL = 'sidecar.mesh.io/inject';
export const REVISION_LABEL = 'mesh.io/rev';
export const NAMESPACE_INJECTION_LABEL = 'mesh-injection';
export const RESTARTED_AT = 'kubectl.kubernetes.io/restartedAt';
export const EXTERNAL_SERVICE_LABEL = 'mesh.io/external-service';
const TAG_LABEL = 'mesh.io/tag';
const NETWORKING = 'networking.mesh.io/v1';
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

interface Deployment extends KubeObject {
  readonly spec?: { readonly template?: { readonly metadata?: { readonly labels?: Readonly<Record<string, string>>; readonly annotations?: Readonly<Record<string, string>> } } };
}

interface Service extends KubeObject {
  readonly spec?: { readonly selector?: Readonly<Record<string, string>> };
}

/** What one command changed, for the command to print. */
export interface MembershipChange {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly what: string;
}

function checkName(what: string, name: string): void {
  if (!DNS_LABEL.test(name)) throw new CliError(`${what} ${JSON.stringify(name)} is not a valid name`);
}

/** The injection webhook of `revision` (or of a tag of that name, `default` included); a CliError when there is none. */
async function checkWebhook(kube: KubeClient, revision: string | undefined): Promise<void> {
  const name = revision ? `mesh-sidecar-injector-${revision}` : 'mesh-sidecar-injector';
  const list = await kube.list<KubeObject>('admissionregistration.k8s.io/v1', 'MutatingWebhookConfiguration');
  const found = list.items.some((w) => w.metadata?.name === name || w.metadata?.labels?.[TAG_LABEL] === (revision ?? 'default'));
  if (!found) {
    throw new CliError(
      revision
        ? `revision ${revision}: no injection webhook (MutatingWebhookConfiguration ${name}, or a tag ${revision}): is the revision installed?`
        : `no injection webhook (MutatingWebhookConfiguration ${name}): is the mesh installed? (give -r/--revision for a revisioned control plane)`,
    );
  }
}

/** Refuses when the namespace's own labels would decide against what is asked. */
async function checkNamespace(kube: KubeClient, namespace: string, revision: string | undefined, adding: boolean): Promise<void> {
  const ns = await kube.find<KubeObject>({ apiVersion: 'v1', kind: 'Namespace', name: namespace });
  if (!ns) throw new CliError(`namespace ${namespace} not found`);
  const labels = ns.metadata?.labels ?? {};
  const injection = labels[NAMESPACE_INJECTION_LABEL];
  const rev = labels[REVISION_LABEL];
  if (adding && injection === 'disabled') throw new CliError(`namespace ${namespace} is labelled ${NAMESPACE_INJECTION_LABEL}=disabled: its pods are never injected; remove that label first`);
  if (adding && injection === 'enabled' && revision) {
    throw new CliError(`namespace ${namespace} is labelled ${NAMESPACE_INJECTION_LABEL}=enabled, so the default revision injects its pods, not ${revision}; change the namespace's label instead`);
  }
  if (adding && rev !== undefined && injection === undefined && rev !== (revision ?? 'default')) {
    throw new CliError(`namespace ${namespace} is labelled ${REVISION_LABEL}=${rev}, so revision ${rev} injects its pods, not ${revision ?? 'the default'}; give -r ${rev} or change the namespace's label`);
  }
}

/** Relabels a Deployment's pod template and stamps a restart time (the Deployment rolls its pods). */
async function restartDeployment(kube: KubeClient, d: Deployment, labels: Record<string, string | null>, now: Date): Promise<void> {
  await kube.mergePatch(
    { apiVersion: 'apps/v1', kind: 'Deployment', namespace: d.metadata?.namespace, name: d.metadata?.name ?? '' },
    { spec: { template: { metadata: { labels, annotations: { [RESTARTED_AT]: now.toISOString() } } } } },
  );
}

function templateLabels(adding: boolean, revision: string | undefined): Record<string, string | null> {
  if (!adding) return { [INJECT_LABEL]: 'false', [REVISION_LABEL]: null };
  return { [INJECT_LABEL]: 'true', [REVISION_LABEL]: revision && revision !== 'default' ? revision : null };
}

/** The Deployments a Service selects (every selector label on their pod template). */
async function deploymentsOf(kube: KubeClient, namespace: string, name: string): Promise<Deployment[]> {
  const svc = await kube.find<Service>({ apiVersion: 'v1', kind: 'Service', namespace, name });
  if (!svc) throw new CliError(`service ${namespace}/${name} not found`);
  const selector = svc.spec?.selector ?? {};
  if (Object.keys(selector).length === 0) throw new CliError(`service ${namespace}/${name} has no selector: it selects no pods to restart`);
  const all = await kube.list<Deployment>('apps/v1', 'Deployment', { namespace });
  const chosen = all.items.filter((d) => Object.entries(selector).every(([k, v]) => d.spec?.template?.metadata?.labels?.[k] === v));
  if (chosen.length === 0) throw new CliError(`service ${namespace}/${name} selects the pods of no Deployment`);
  return chosen;
}

export interface WorkloadMembershipInput {
  readonly kind: 'deployment' | 'service';
  readonly name: string;
  readonly namespace: string;
  readonly revision?: string;
  readonly adding: boolean;
  readonly now?: Date;
}

/** Restarts the pods of a Deployment, or of a Service's Deployments, with or without the sidecar. */
export async function changeWorkloadMembership(kube: KubeClient, input: WorkloadMembershipInput): Promise<MembershipChange[]> {
  checkName(input.kind, input.name);
  if (input.revision !== undefined) checkName('--revision', input.revision);
  let deployments: Deployment[];
  if (input.kind === 'deployment') {
    const d = await kube.find<Deployment>({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: input.namespace, name: input.name });
    if (!d) throw new CliError(`deployment ${input.namespace}/${input.name} not found`);
    deployments = [d];
  } else {
    deployments = await deploymentsOf(kube, input.namespace, input.name);
  }
  await checkNamespace(kube, input.namespace, input.revision, input.adding);
  if (input.adding) await checkWebhook(kube, input.revision && input.revision !== 'default' ? input.revision : undefined);
  const labels = templateLabels(input.adding, input.revision);
  const now = input.now ?? new Date();
  const shown = Object.entries(labels)
    .map(([k, v]) => (v === null ? `-${k}` : `${k}=${v}`))
    .join(', ');
  for (const d of deployments) await restartDeployment(kube, d, labels, now);
  return deployments.map((d) => ({
    kind: 'deployment',
    namespace: input.namespace,
    name: d.metadata?.name ?? '',
    what: `${input.adding ? `pods restart with the sidecar of revision ${input.revision ?? 'default'}` : 'pods restart without the sidecar'} (pod labels ${shown})`,
  }));
}

/** Protocols a port name may start with (`http`, `http-web`, `tcp-db` …). */
const PROTOCOLS: Readonly<Record<string, string>> = {
  http: 'HTTP',
  http2: 'HTTP2',
  https: 'HTTPS',
  grpc: 'GRPC',
  tcp: 'TCP',
  tls: 'TLS',
  mongo: 'MONGO',
  mysql: 'MYSQL',
  redis: 'REDIS',
};

export interface ExternalPort {
  readonly name: string;
  readonly number: number;
  readonly protocol: string;
}

/** `[name:]port`: the name starts with a protocol (`http`, `tcp-db` …); tcp when it is left out. */
export function parseExternalPort(text: string): ExternalPort {
  const colon = text.lastIndexOf(':');
  const name = colon < 0 ? undefined : text.slice(0, colon);
  const portText = colon < 0 ? text : text.slice(colon + 1);
  const number = Number(portText);
  if (!/^\d+$/.test(portText) || number < 1 || number > 65535) throw new CliError(`port ${JSON.stringify(text)}: ${JSON.stringify(portText)} is not a port number (1-65535)`);
  if (name === undefined) return { name: `tcp-${number}`, number, protocol: 'TCP' };
  if (!DNS_LABEL.test(name) || name.length > 15) throw new CliError(`port ${JSON.stringify(text)}: ${JSON.stringify(name)} is not a valid port name`);
  const protocol = PROTOCOLS[name.split('-')[0]];
  if (!protocol) throw new CliError(`port ${JSON.stringify(text)}: the name must start with a protocol (${Object.keys(PROTOCOLS).join(', ')})`);
  return { name, number, protocol };
}

export interface ExternalServiceInput {
  readonly name: string;
  readonly namespace: string;
  /** Comma-separated addresses. */
  readonly ips: string;
  readonly ports: readonly string[];
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly serviceAccount: string;
  readonly domain?: string;
}

/** The ServiceEntry and Service of an external service, checked; nothing is written. */
export function externalServiceObjects(input: ExternalServiceInput): [KubeObject, KubeObject] {
  checkName('service', input.name);
  const ips = input.ips.split(',').map((s) => s.trim());
  for (const ip of ips) if (net.isIP(ip) === 0) throw new CliError(`address ${JSON.stringify(ip)} is not an IP address`);
  if (input.ports.length === 0) throw new CliError('give at least one port, as [<name>:]<port> (http:8080, tcp:5432 …)');
  const ports = input.ports.map(parseExternalPort);
  const names = new Set<string>();
  for (const p of ports) {
    if (names.has(p.name)) throw new CliError(`port name ${p.name} is given twice`);
    names.add(p.name);
  }
  if (!DNS_LABEL.test(input.serviceAccount)) throw new CliError(`--serviceaccount: ${JSON.stringify(input.serviceAccount)} is not a valid service account name`);
  const labels = { ...input.labels, [EXTERNAL_SERVICE_LABEL]: input.name };
  const metadata = (name: string) => ({ name, namespace: input.namespace, labels, ...(Object.keys(input.annotations).length ? { annotations: { ...input.annotations } } : {}) });
  const entry = {
    apiVersion: NETWORKING,
    kind: 'ServiceEntry',
    metadata: metadata(`mesh-external-${input.name}`),
    spec: {
      hosts: [`${input.name}.${input.namespace}.svc.${input.domain ?? 'cluster.local'}`],
      location: 'MESH_INTERNAL',
      resolution: 'STATIC',
      ports: ports.map((p) => ({ number: p.number, protocol: p.protocol, name: p.name })),
      endpoints: ips.map((address) => ({ address, ports: Object.fromEntries(ports.map((p) => [p.name, p.number])), labels: { ...input.labels }, serviceAccount: input.serviceAccount })),
    },
  } as KubeObject;
  const service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: metadata(input.name),
    spec: { ports: ports.map((p) => ({ name: p.name, port: p.number, protocol: 'TCP' })) },
  } as KubeObject;
  return [entry, service];
}

/** Creates the ServiceEntry and Service of an external service; refuses when either exists. */
export async function addExternalService(kube: KubeClient, input: ExternalServiceInput): Promise<MembershipChange[]> {
  const [entry, service] = externalServiceObjects(input);
  for (const o of [entry, service]) {
    if (await kube.find({ apiVersion: o.apiVersion ?? '', kind: o.kind ?? '', namespace: input.namespace, name: o.metadata?.name ?? '' })) {
      throw new CliError(`${o.kind} ${input.namespace}/${o.metadata?.name} already exists (remove-from-mesh external-service ${input.name} removes the one this command made)`);
    }
  }
  await kube.create(entry);
  try {
    await kube.create(service);
  } catch (err) {
    await kube.delete({ apiVersion: NETWORKING, kind: 'ServiceEntry', namespace: input.namespace, name: entry.metadata?.name ?? '' }).catch(() => undefined);
    throw err;
  }
  return [
    { kind: 'ServiceEntry', namespace: input.namespace, name: entry.metadata?.name ?? '', what: 'created' },
    { kind: 'Service', namespace: input.namespace, name: input.name, what: 'created' },
  ];
}

/** Deletes the ServiceEntry and Service `add-to-mesh external-service` made (by their label). */
export async function removeExternalService(kube: KubeClient, name: string, namespace: string): Promise<MembershipChange[]> {
  checkName('service', name);
  const changes: MembershipChange[] = [];
  const targets: Array<{ apiVersion: string; kind: string; name: string }> = [
    { apiVersion: NETWORKING, kind: 'ServiceEntry', name: `mesh-external-${name}` },
    { apiVersion: 'v1', kind: 'Service', name },
  ];
  const found: Array<{ apiVersion: string; kind: string; name: string }> = [];
  for (const t of targets) {
    const o = await kube.find<KubeObject>({ ...t, namespace });
    if (!o) continue;
    if (o.metadata?.labels?.[EXTERNAL_SERVICE_LABEL] !== name) {
      throw new CliError(`${t.kind} ${namespace}/${t.name} was not made by add-to-mesh external-service (no label ${EXTERNAL_SERVICE_LABEL}=${name}); left as it is`);
    }
    found.push(t);
  }
  if (found.length === 0) throw new CliError(`external service ${namespace}/${name} not found (no ServiceEntry mesh-external-${name}, no Service ${name})`);
  for (const t of found) {
    await kube.delete({ ...t, namespace });
    changes.push({ kind: t.kind, namespace, name: t.name, what: 'deleted' });
  }
  return changes;
}
