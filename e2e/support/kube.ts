/**
 * What the cluster e2e tests do to the API server themselves, independent of the product's own
 * Kubernetes client: server-side apply of manifests, namespaces, the project's CRDs, scaling.
 * Everything goes through test/support/cluster.ts `kubeRequest` with the admin kubeconfig.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { kubeRequest, type KubeconfigCredentials, type KubeResponse } from '../../test/support/cluster.js';
import { REPO_ROOT } from '../../test/support/daemon.js';
import { pollUntil } from './wait.js';

export interface KubeManifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly labels?: Record<string, string> };
  readonly [field: string]: unknown;
}

const FIELD_MANAGER = 'mesh-e2e';

/** Resource plural of the kinds the tests use (core, apps, discovery and the mesh CRDs). */
function plural(kind: string): string {
  const lower = kind.toLowerCase();
  if (lower.endsWith('y')) return `${lower.slice(0, -1)}ies`;
  if (lower.endsWith('s')) return `${lower}es`;
  return `${lower}s`;
}

/** API path of an object: `/api/v1/namespaces/ns/services/name`, `/apis/g/v/...` for groups. */
export function objectPath(apiVersion: string, kind: string, namespace: string | undefined, name?: string): string {
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const ns = namespace ? `/namespaces/${namespace}` : '';
  return `${base}${ns}/${plural(kind)}${name ? `/${name}` : ''}`;
}

function check(res: KubeResponse, what: string, ok: (status: number) => boolean = (s) => s >= 200 && s < 300): KubeResponse {
  if (!ok(res.status)) throw new Error(`${what}: HTTP ${res.status}: ${JSON.stringify(res.body).slice(0, 600)}`);
  return res;
}

/** Server-side apply (force) of one object; returns the stored object. */
export async function apply(creds: KubeconfigCredentials, obj: KubeManifest): Promise<Record<string, unknown>> {
  const path = `${objectPath(obj.apiVersion, obj.kind, obj.metadata.namespace, obj.metadata.name)}?fieldManager=${FIELD_MANAGER}&force=true`;
  const res = await kubeRequest(creds, 'PATCH', path, obj, { contentType: 'application/apply-patch+yaml' });
  return check(res, `apply ${obj.kind} ${obj.metadata.namespace ?? ''}/${obj.metadata.name}`).body as Record<string, unknown>;
}

export async function remove(creds: KubeconfigCredentials, apiVersion: string, kind: string, namespace: string | undefined, name: string): Promise<void> {
  const res = await kubeRequest(creds, 'DELETE', objectPath(apiVersion, kind, namespace, name));
  check(res, `delete ${kind} ${namespace ?? ''}/${name}`, (s) => (s >= 200 && s < 300) || s === 404);
}

export async function createNamespace(creds: KubeconfigCredentials, name: string, labels: Record<string, string> = {}): Promise<void> {
  await apply(creds, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } });
}

/** Deletes a namespace without waiting for its finalization. */
export async function deleteNamespace(creds: KubeconfigCredentials, name: string): Promise<void> {
  await remove(creds, 'v1', 'Namespace', undefined, name);
}

/** Applies every CRD of crds/ and waits until each is Established. */
export async function applyCrds(creds: KubeconfigCredentials): Promise<void> {
  const text = await readFile(join(REPO_ROOT, 'crds', 'all.yaml'), 'utf8');
  const crds = parseAllDocuments(text)
    .map((d) => d.toJS() as KubeManifest | null)
    .filter((d): d is KubeManifest => d !== null && d.kind === 'CustomResourceDefinition');
  for (const crd of crds) await apply(creds, crd);
  for (const crd of crds) {
    await pollUntil(
      async () => {
        const res = await kubeRequest(creds, 'GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`);
        const conditions = ((res.body as { status?: { conditions?: Array<{ type: string; status: string }> } }).status?.conditions ?? []);
        return conditions.some((c) => c.type === 'Established' && c.status === 'True');
      },
      { timeoutMs: 30_000, what: `CRD ${crd.metadata.name} established` },
    );
  }
}

export async function scale(creds: KubeconfigCredentials, namespace: string, deployment: string, replicas: number): Promise<void> {
  const res = await kubeRequest(creds, 'PATCH', `/apis/apps/v1/namespaces/${namespace}/deployments/${deployment}/scale`, { spec: { replicas } }, {
    contentType: 'application/merge-patch+json',
  });
  check(res, `scale ${namespace}/${deployment} to ${replicas}`);
}

/** Ready endpoint addresses of a Service, from its EndpointSlices. */
export async function readyAddresses(creds: KubeconfigCredentials, namespace: string, service: string): Promise<string[]> {
  const res = await kubeRequest(creds, 'GET', `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices?labelSelector=${encodeURIComponent(`kubernetes.io/service-name=${service}`)}`);
  const slices = (res.body as { items?: Array<{ endpoints?: Array<{ addresses: string[]; conditions?: { ready?: boolean } }> }> }).items ?? [];
  return slices
    .flatMap((s) => s.endpoints ?? [])
    .filter((e) => e.conditions?.ready !== false)
    .flatMap((e) => e.addresses)
    .sort();
}

export interface DeploymentOptions {
  readonly serviceAccount?: string;
  /**
   * A readiness gate of the pods: they become Ready only once it is set, e.g. `PLAYED_CONDITION`
   * (e2e/support/pod-player.ts), which the pod player sets once the pod's backend listens.
   */
  readonly readinessGate?: string;
}

/** A Deployment whose pods carry `labels`; the node simulator runs them on the simulated nodes. */
export function deployment(namespace: string, name: string, replicas: number, labels: Record<string, string>, options: DeploymentOptions = {}): KubeManifest {
  const { serviceAccount, readinessGate } = options;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          ...(serviceAccount ? { serviceAccountName: serviceAccount } : {}),
          ...(readinessGate ? { readinessGates: [{ conditionType: readinessGate }] } : {}),
          containers: [{ name: 'app', image: 'mesh-e2e/echo:latest', ports: [{ containerPort: 7070, name: 'grpc' }] }],
        },
      },
    },
  };
}
