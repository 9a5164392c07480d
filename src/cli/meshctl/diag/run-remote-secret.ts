/**
 * `meshctl x create-remote-secret`: a Secret holding a kubeconfig of a service account of this
 * cluster, for another cluster's meshd to read this one (the layout of docs/adr/0018: label
 * `mesh.io/multiCluster=true`, one data key per cluster ID, its kubeconfig as the value).
 *
 * The cluster ID is `--name`, else the UID of the `kube-system` namespace. The service account is
 * `--service-account`, else `mesh-reader-service-account` (`--type remote`) or
 * `meshd-service-account` (`--type config`), of the mesh namespace; `--create-service-account`
 * makes the reader account with its read-only ClusterRole and binding when it is missing. Its
 * credential is a long-lived token Secret: `--secret-name`, else the one token Secret of the
 * account, else one made for it and filled by the cluster's token controller.
 */
import type { KubeClient } from '../../../kube/client.js';
import type { KubeObject } from '../../../kube/types.js';
import { readerClusterRules } from '../../../install/render/rbac.js';
import { READER_SERVICE_ACCOUNT } from '../../../install/render/base.js';
import { LABEL_MULTI_CLUSTER } from '../../../controllers/remote-clusters/secrets.js';
import { CliError } from '../../runner.js';

export const REMOTE_SECRET_TYPES = ['remote', 'config'] as const;
export const REMOTE_AUTH_TYPES = ['bearer-token', 'plugin'] as const;

export interface RemoteSecretInput {
  readonly name?: string;
  readonly type: (typeof REMOTE_SECRET_TYPES)[number];
  readonly serviceAccount?: string;
  readonly createServiceAccount: boolean;
  readonly secretName?: string;
  readonly server?: string;
  readonly authType: (typeof REMOTE_AUTH_TYPES)[number];
  readonly pluginName?: string;
  readonly pluginConfig: Readonly<Record<string, string>>;
  readonly meshNamespace: string;
  /** Bound of the wait for the token controller (default 30 s). */
  readonly timeoutMs?: number;
}

interface TokenSecret extends KubeObject {
  readonly type?: string;
  readonly data?: Readonly<Record<string, string>>;
}

const SA_ANNOTATION = 'kubernetes.io/service-account.name';
const TOKEN_TYPE = 'kubernetes.io/service-account-token';
/** A Secret data key: the cluster ID must be one. */
const CLUSTER_ID = /^[-._a-zA-Z0-9]{1,253}$/;

/** `k=v,k2=v2` of a stringToString flag; a CliError naming the flag otherwise. */
export function parseStringMap(flag: string, text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!text || text === '[]') return out;
  for (const item of text.replace(/^\[|\]$/g, '').split(',')) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new CliError(`${flag}: ${JSON.stringify(item)} is not <key>=<value>`);
    out[item.slice(0, eq).trim()] = item.slice(eq + 1).trim();
  }
  return out;
}

/** Checks the flag combinations before any cluster request. */
export function checkRemoteSecretInput(input: RemoteSecretInput): void {
  if (input.name !== undefined && !CLUSTER_ID.test(input.name)) throw new CliError(`--name: ${JSON.stringify(input.name)} is not a cluster ID (letters, digits, '-', '_', '.')`);
  if (input.authType === 'plugin' && !input.pluginName) throw new CliError('--auth-type=plugin needs --auth-plugin-name');
  if (input.authType !== 'plugin' && (input.pluginName || Object.keys(input.pluginConfig).length > 0)) throw new CliError('--auth-plugin-name and --auth-plugin-config need --auth-type=plugin');
  if (input.createServiceAccount && input.type === 'config') {
    throw new CliError('--create-service-account with --type=config: not supported yet (meshd-service-account comes with `meshctl install`)');
  }
}

async function clusterId(kube: KubeClient, name: string | undefined): Promise<string> {
  if (name) return name;
  const ns = await kube.find({ apiVersion: 'v1', kind: 'Namespace', name: 'kube-system' });
  const uid = ns?.metadata?.uid;
  if (!uid) throw new CliError('cannot name this cluster: the kube-system namespace has no UID; give --name');
  return uid;
}

async function ensureServiceAccount(kube: KubeClient, input: RemoteSecretInput, name: string): Promise<void> {
  const ns = input.meshNamespace;
  if (await kube.find({ apiVersion: 'v1', kind: 'ServiceAccount', namespace: ns, name })) return;
  if (!input.createServiceAccount) throw new CliError(`service account ${ns}/${name} not found (install the mesh, or give --create-service-account)`);
  const labels = { app: 'mesh-reader' };
  const role = `mesh-reader-clusterrole-${ns}`;
  const fieldManager = 'meshctl';
  await kube.applyObject({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns, labels } }, { fieldManager });
  await kube.applyObject({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: role, labels }, rules: readerClusterRules() } as KubeObject, { fieldManager });
  await kube.applyObject(
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: role, labels }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role }, subjects: [{ kind: 'ServiceAccount', name, namespace: ns }] } as KubeObject,
    { fieldManager },
  );
}

async function tokenSecret(kube: KubeClient, input: RemoteSecretInput, account: string): Promise<{ token: string; ca: string }> {
  const ns = input.meshNamespace;
  let secret: TokenSecret | undefined;
  if (input.secretName) {
    secret = await kube.find<TokenSecret>({ apiVersion: 'v1', kind: 'Secret', namespace: ns, name: input.secretName });
    if (!secret) throw new CliError(`--secret-name: secret ${ns}/${input.secretName} not found`);
    if (secret.type !== TOKEN_TYPE || secret.metadata?.annotations?.[SA_ANNOTATION] !== account) throw new CliError(`--secret-name: secret ${ns}/${input.secretName} is not a token of service account ${account}`);
  } else {
    const all = await kube.list<TokenSecret>('v1', 'Secret', { namespace: ns });
    const tokens = all.items.filter((s) => s.type === TOKEN_TYPE && s.metadata?.annotations?.[SA_ANNOTATION] === account);
    if (tokens.length > 1) throw new CliError(`service account ${ns}/${account} has ${tokens.length} token secrets (${tokens.map((s) => s.metadata?.name).join(', ')}); choose one with --secret-name`);
    secret = tokens[0] ?? (await kube.create<TokenSecret>({ apiVersion: 'v1', kind: 'Secret', type: TOKEN_TYPE, metadata: { name: `${account}-mesh-remote-secret-token`, namespace: ns, annotations: { [SA_ANNOTATION]: account } } } as TokenSecret));
  }
  const name = secret.metadata?.name ?? '';
  const deadline = Date.now() + (input.timeoutMs ?? 30_000);
  for (;;) {
    if (secret?.data?.token && secret.data['ca.crt']) return { token: Buffer.from(secret.data.token, 'base64').toString('utf8'), ca: secret.data['ca.crt'] };
    if (Date.now() > deadline) throw new CliError(`secret ${ns}/${name} holds no token yet: is the cluster's token controller running?`);
    await new Promise((resolve) => setTimeout(resolve, 250));
    secret = await kube.find<TokenSecret>({ apiVersion: 'v1', kind: 'Secret', namespace: ns, name });
  }
}

/** The Secret another cluster's meshd reads (stringData: cluster ID → kubeconfig). */
export async function remoteSecret(kube: KubeClient, input: RemoteSecretInput): Promise<KubeObject & { stringData: Record<string, string> }> {
  checkRemoteSecretInput(input);
  const id = await clusterId(kube, input.name);
  const account = input.serviceAccount ?? (input.type === 'remote' ? READER_SERVICE_ACCOUNT : 'meshd-service-account');
  await ensureServiceAccount(kube, input, account);
  const { token, ca } = await tokenSecret(kube, input, account);
  const user = input.authType === 'plugin' ? { 'auth-provider': { name: input.pluginName, config: { ...input.pluginConfig } } } : { token };
  // Through our module: a lazy import('yaml') has no named exports in meshctl's bundle.
  const { writeYaml } = await import('../../../util/yaml.js');
  const kubeconfig = writeYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: id, cluster: { server: input.server ?? kube.server, 'certificate-authority-data': ca } }],
    contexts: [{ name: id, context: { cluster: id, user: id } }],
    'current-context': id,
    preferences: {},
    users: [{ name: id, user }],
  });
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: `mesh-remote-secret-${id}`, namespace: input.meshNamespace, labels: { [LABEL_MULTI_CLUSTER]: 'true' }, annotations: { 'networking.mesh.io/cluster': id } },
    stringData: { [id]: kubeconfig },
  };
}
