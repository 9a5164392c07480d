/**
 * `meshctl x workload group create` and `x workload entry configure` (spec part 1): the WorkloadGroup
 * template of VM workloads, and the files one VM needs to join the mesh (docs/adr/0124):
 *
 *   mesh-token     a TokenRequest token of the group's service account, audience mesh-ca,
 *                  lasting --tokenDuration seconds (the VM's agent presents it to the CA)
 *   root-cert.pem  the mesh's root certificate (ConfigMap mesh-ca-root-cert)
 *   cluster.env    the agent's variables: who the workload is, its ports, what to capture
 *   mesh.yaml      the proxy's mesh config: the mesh ConfigMap's defaultConfig, the discovery
 *                  address of the revision's meshd and the group's proxy metadata
 *   hosts          `<ingress address> meshd[-<rev>].<mesh namespace>.svc`, for a VM that reaches
 *                  meshd through the east-west gateway (absent when no address is known)
 *
 * These functions return data; the command writes the files.
 */
import net from 'node:net';
import type { KubeClient } from '../../../kube/client.js';
import type { KubeObject } from '../../../kube/types.js';
import { WorkloadGroupSchema, type WorkloadGroup } from '../../../gen/config/schemas.js';
import { formatSchemaIssue } from '../../../config/validation/schema-issues.js';
import { readYaml } from '../../../util/yaml.js';
import { ROOT_CERT_CONFIGMAP, TOKEN_AUDIENCE, PROXY_PORTS } from '../../../agent/names.js';
import { renderYaml } from '../../output.js';
import { CliError } from '../../runner.js';

const NETWORKING = 'networking.mesh.io/v1';
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
/** The shortest token the API server issues (TokenRequest's lower bound). */
export const MIN_TOKEN_SECONDS = 600;
/** The xDS and CA port of meshd a VM reaches. */
const MESHD_SECURED_PORT = 15012;
const PROXY_CONFIG_ANNOTATION = 'proxy.mesh.io/config';

export interface WorkloadGroupObject extends KubeObject {
  readonly spec: WorkloadGroup;
}

/** Issues of `spec` against the WorkloadGroup schema, each naming its field; none: valid. */
function groupIssues(spec: unknown, origin: string): string[] {
  const r = WorkloadGroupSchema.safeParse(spec, { reportInput: true });
  return r.success ? [] : r.error.issues.flatMap((i) => formatSchemaIssue(i)).map((i) => `${origin}: spec.${i.path}: ${i.message}`);
}

/** `k=v` items of a stringSlice flag (each item may hold several, comma-separated). */
export function parseKeyValues(flag: string, items: readonly string[], sep = '='): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of items.flatMap((i) => i.split(',')).filter((i) => i !== '')) {
    const at = item.indexOf(sep);
    if (at <= 0) throw new CliError(`${flag}: ${JSON.stringify(item)} is not <key>${sep}<value>`);
    out[item.slice(0, at).trim()] = item.slice(at + 1).trim();
  }
  return out;
}

export interface GroupInput {
  readonly name?: string;
  readonly namespace: string;
  readonly labels: readonly string[];
  readonly annotations: readonly string[];
  readonly ports: readonly string[];
  readonly serviceAccount: string;
}

/** The WorkloadGroup of `x workload group create`; a CliError naming the flag for bad input. */
export function workloadGroup(input: GroupInput): WorkloadGroupObject {
  if (!input.name) throw new CliError('--name: the WorkloadGroup needs a name');
  if (!DNS_SUBDOMAIN.test(input.name) || input.name.length > 253) throw new CliError(`--name: ${JSON.stringify(input.name)} is not a valid resource name`);
  if (!DNS_LABEL.test(input.namespace)) throw new CliError(`-n/--namespace: ${JSON.stringify(input.namespace)} is not a valid namespace`);
  if (!DNS_SUBDOMAIN.test(input.serviceAccount)) throw new CliError(`--serviceAccount: ${JSON.stringify(input.serviceAccount)} is not a valid service account name`);
  const ports: Record<string, number> = {};
  for (const [name, text] of Object.entries(parseKeyValues('--ports', input.ports))) {
    const n = Number(text);
    if (!/^\d+$/.test(text) || n < 1 || n > 65535) throw new CliError(`--ports: ${name}=${text}: ${JSON.stringify(text)} is not a port number (1-65535)`);
    ports[name] = n;
  }
  const labels = parseKeyValues('--labels', input.labels);
  const annotations = parseKeyValues('--annotations', input.annotations);
  const spec: WorkloadGroup = {
    ...(Object.keys(labels).length || Object.keys(annotations).length
      ? { metadata: { ...(Object.keys(labels).length ? { labels } : {}), ...(Object.keys(annotations).length ? { annotations } : {}) } }
      : {}),
    template: { ...(Object.keys(ports).length ? { ports } : {}), serviceAccount: input.serviceAccount },
  };
  const issues = groupIssues(spec, 'WorkloadGroup');
  if (issues.length) throw new CliError(issues.join('\n'));
  return { apiVersion: NETWORKING, kind: 'WorkloadGroup', metadata: { name: input.name, namespace: input.namespace }, spec };
}

/** A WorkloadGroup from the text of a file (`-f`); the namespace defaults to `namespace`. */
export function parseGroupFile(text: string, file: string, namespace: string): WorkloadGroupObject {
  let doc: unknown;
  try {
    doc = readYaml(text);
  } catch (err) {
    throw new CliError(`${file}: invalid YAML: ${(err as Error).message}`);
  }
  const o = doc as Partial<WorkloadGroupObject> | null;
  if (!o || typeof o !== 'object' || o.kind !== 'WorkloadGroup' || o.apiVersion !== NETWORKING) {
    throw new CliError(`${file}: not a WorkloadGroup (apiVersion ${NETWORKING}, kind WorkloadGroup)`);
  }
  if (!o.metadata?.name) throw new CliError(`${file}: metadata.name: the WorkloadGroup has no name`);
  const issues = groupIssues(o.spec, file);
  if (issues.length) throw new CliError(issues.join('\n'));
  return { ...o, metadata: { ...o.metadata, namespace: o.metadata.namespace || namespace } } as WorkloadGroupObject;
}

export interface EntryInput {
  readonly meshNamespace: string;
  readonly revision?: string;
  readonly clusterId: string;
  readonly autoregister: boolean;
  readonly captureDns: boolean;
  readonly ingressIP?: string;
  /** `<service>[.<namespace>]`, namespace defaulting to the mesh namespace. */
  readonly ingressService: string;
  readonly tokenSeconds: number;
  readonly workloadIP?: string;
}

/** Checks the flags of `entry configure` before any cluster request. */
export function checkEntryInput(input: EntryInput): void {
  if (!Number.isInteger(input.tokenSeconds) || input.tokenSeconds < MIN_TOKEN_SECONDS || input.tokenSeconds > 2 ** 31 - 1) {
    throw new CliError(`--tokenDuration: ${input.tokenSeconds} is not a whole number of seconds from ${MIN_TOKEN_SECONDS} (the shortest token the API server issues)`);
  }
  if (input.ingressIP !== undefined && net.isIP(input.ingressIP) === 0) throw new CliError(`--ingressIP: ${JSON.stringify(input.ingressIP)} is not an IP address`);
  if (input.workloadIP !== undefined && net.isIP(input.workloadIP) === 0) throw new CliError(`--workloadIP: ${JSON.stringify(input.workloadIP)} is not an IP address`);
  if (input.revision !== undefined && !DNS_LABEL.test(input.revision)) throw new CliError(`--revision: ${JSON.stringify(input.revision)} is not a valid revision name`);
  const [svc, ns] = splitService(input.ingressService, input.meshNamespace);
  if (!DNS_LABEL.test(svc) || !DNS_LABEL.test(ns)) throw new CliError(`--ingressService: ${JSON.stringify(input.ingressService)} is not <service>.<namespace>`);
  if (!/^[-._a-zA-Z0-9]{1,253}$/.test(input.clusterId)) throw new CliError(`--clusterID: ${JSON.stringify(input.clusterId)} is not a cluster ID (letters, digits, '-', '_', '.')`);
}

function splitService(text: string, defaultNamespace: string): [string, string] {
  const dot = text.indexOf('.');
  return dot < 0 ? [text, defaultNamespace] : [text.slice(0, dot), text.slice(dot + 1)];
}

/** The group named `name` in `namespace` on the API server. */
export async function fetchGroup(kube: KubeClient, name: string, namespace: string): Promise<WorkloadGroupObject> {
  const found = await kube.find<WorkloadGroupObject>({ apiVersion: NETWORKING, kind: 'WorkloadGroup', namespace, name });
  if (!found) throw new CliError(`WorkloadGroup ${namespace}/${name} not found`);
  const issues = groupIssues(found.spec, `WorkloadGroup ${namespace}/${name}`);
  if (issues.length) throw new CliError(issues.join('\n'));
  return found;
}

interface ConfigMap extends KubeObject {
  readonly data?: Readonly<Record<string, string>>;
}

interface MeshConfigDoc {
  trustDomain?: string;
  defaultConfig?: Record<string, unknown> & { proxyMetadata?: Record<string, string>; meshId?: string };
}

/** A file of the VM: its name in the output directory, contents, and mode. */
export interface VmFile {
  readonly name: string;
  readonly content: string;
  readonly mode: number;
}

export interface VmFiles {
  readonly files: readonly VmFile[];
  /** What the operator should know (e.g. no hosts file: no ingress address). */
  readonly warnings: readonly string[];
}

const envFile = (vars: Readonly<Record<string, string>>): string =>
  Object.entries(vars)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}='${v.replace(/'/g, `'\\''`)}'`)
    .join('\n') + '\n';

async function ingressAddress(kube: KubeClient, input: EntryInput): Promise<{ ip?: string; warning?: string }> {
  if (input.ingressIP) return { ip: input.ingressIP };
  const [name, namespace] = splitService(input.ingressService, input.meshNamespace);
  const svc = await kube.find<KubeObject & { status?: { loadBalancer?: { ingress?: ReadonlyArray<{ ip?: string; hostname?: string }> } } }>({ apiVersion: 'v1', kind: 'Service', namespace, name });
  if (!svc) return { warning: `service ${namespace}/${name} (--ingressService) not found: no hosts file written; give --ingressIP for a VM that reaches meshd through a gateway` };
  const ip = svc.status?.loadBalancer?.ingress?.find((i) => i.ip)?.ip;
  if (!ip) return { warning: `service ${namespace}/${name} (--ingressService) has no load-balancer IP yet: no hosts file written; give --ingressIP` };
  return { ip };
}

/** Every file of the VM joining as a member of `group`. */
export async function vmFiles(kube: KubeClient, group: WorkloadGroupObject, input: EntryInput): Promise<VmFiles> {
  checkEntryInput(input);
  const namespace = group.metadata?.namespace ?? 'default';
  const groupName = group.metadata?.name ?? '';
  const template = group.spec.template;
  const account = template.serviceAccount || 'default';
  const suffix = input.revision && input.revision !== 'default' ? `-${input.revision}` : '';
  const meshdHost = `meshd${suffix}.${input.meshNamespace}.svc`;
  const warnings: string[] = [];

  const meshMap = await kube.find<ConfigMap>({ apiVersion: 'v1', kind: 'ConfigMap', namespace: input.meshNamespace, name: `mesh${suffix}` });
  if (!meshMap) {
    throw new CliError(`mesh config: ConfigMap ${input.meshNamespace}/mesh${suffix} not found (is the mesh${input.revision ? ` revision ${input.revision}` : ''} installed? see -i/--meshNamespace and -r/--revision)`);
  }
  let mesh: MeshConfigDoc;
  try {
    mesh = (readYaml(meshMap.data?.mesh ?? '') ?? {}) as MeshConfigDoc;
  } catch (err) {
    throw new CliError(`mesh config: ConfigMap ${input.meshNamespace}/mesh${suffix}, key mesh: invalid YAML: ${(err as Error).message}`);
  }
  const trustDomain = mesh.trustDomain || 'cluster.local';

  if (!(await kube.find({ apiVersion: 'v1', kind: 'ServiceAccount', namespace, name: account }))) {
    throw new CliError(`service account ${namespace}/${account} of WorkloadGroup ${namespace}/${groupName} not found`);
  }
  const tokenReply = await kube.request<{ status?: { token?: string } }>({
    method: 'POST',
    path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(account)}/token`,
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: [TOKEN_AUDIENCE], expirationSeconds: input.tokenSeconds } },
  });
  const token = tokenReply.status?.token;
  if (!token) throw new CliError(`the API server issued no token for service account ${namespace}/${account}`);

  const rootMap =
    (await kube.find<ConfigMap>({ apiVersion: 'v1', kind: 'ConfigMap', namespace, name: ROOT_CERT_CONFIGMAP })) ??
    (await kube.find<ConfigMap>({ apiVersion: 'v1', kind: 'ConfigMap', namespace: input.meshNamespace, name: ROOT_CERT_CONFIGMAP }));
  const root = rootMap?.data?.['root-cert.pem'];
  if (!root) throw new CliError(`no root certificate: ConfigMap ${ROOT_CERT_CONFIGMAP} (key root-cert.pem) is in neither ${namespace} nor ${input.meshNamespace}; is meshd running?`);

  const labels = { ...(group.spec.metadata?.labels ?? {}), ...(template.labels ?? {}) };
  const ports = [...new Set(Object.values(template.ports ?? {}))].sort((a, b) => a - b);
  const env: Record<string, string> = {
    CANONICAL_REVISION: labels['service.mesh.io/canonical-revision'] ?? labels.version ?? 'latest',
    CANONICAL_SERVICE: labels['service.mesh.io/canonical-name'] ?? labels.app ?? groupName,
    MESH_INBOUND_PORTS: ports.length ? ports.join(',') : '*',
    MESH_LOCAL_EXCLUDE_PORTS: [PROXY_PORTS.envoyPrometheus, PROXY_PORTS.health, PROXY_PORTS.status].join(','),
    MESH_METAJSON_LABELS: JSON.stringify(labels),
    MESH_META_CLUSTER_ID: input.clusterId,
    MESH_META_MESH_ID: mesh.defaultConfig?.meshId || trustDomain,
    MESH_META_WORKLOAD_NAME: groupName,
    MESH_NAMESPACE: namespace,
    MESH_SERVICE_CIDR: '*',
    POD_NAMESPACE: namespace,
    SERVICE_ACCOUNT: account,
    TRUST_DOMAIN: trustDomain,
    ...(template.network ? { MESH_META_NETWORK: template.network } : {}),
    ...(input.captureDns ? { MESH_META_DNS_CAPTURE: 'true' } : {}),
    ...(input.autoregister ? { MESH_META_AUTO_REGISTER_GROUP: groupName } : {}),
    ...(input.workloadIP ? { INSTANCE_IP: input.workloadIP } : {}),
  };

  let groupProxyConfig: Record<string, unknown> = {};
  const annotated = group.spec.metadata?.annotations?.[PROXY_CONFIG_ANNOTATION];
  if (annotated) {
    try {
      groupProxyConfig = (readYaml(annotated) ?? {}) as Record<string, unknown>;
    } catch (err) {
      throw new CliError(`WorkloadGroup ${namespace}/${groupName}: annotation ${PROXY_CONFIG_ANNOTATION}: invalid YAML: ${(err as Error).message}`);
    }
  }
  const base = mesh.defaultConfig ?? {};
  const proxyMetadata = {
    ...(base.proxyMetadata ?? {}),
    ...((groupProxyConfig.proxyMetadata as Record<string, string> | undefined) ?? {}),
    ...(input.captureDns ? { MESH_META_DNS_CAPTURE: 'true' } : {}),
    ...(input.autoregister ? { MESH_META_AUTO_REGISTER_GROUP: groupName } : {}),
  };
  const defaultConfig = { ...base, ...groupProxyConfig, discoveryAddress: `${meshdHost}:${MESHD_SECURED_PORT}`, ...(Object.keys(proxyMetadata).length ? { proxyMetadata } : {}) };

  const files: VmFile[] = [
    { name: 'mesh-token', content: token, mode: 0o600 },
    { name: 'root-cert.pem', content: root, mode: 0o644 },
    { name: 'cluster.env', content: envFile(env), mode: 0o644 },
    { name: 'mesh.yaml', content: await renderYaml({ defaultConfig }), mode: 0o644 },
  ];
  const ingress = await ingressAddress(kube, input);
  if (ingress.ip) files.push({ name: 'hosts', content: `${ingress.ip} ${meshdHost}\n`, mode: 0o644 });
  if (ingress.warning) warnings.push(ingress.warning);
  return { files, warnings };
}
