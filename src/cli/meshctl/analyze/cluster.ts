/**
 * What `meshctl analyze` reads from the live cluster: every mesh config object (each kind whose CRD
 * the API server serves), the Services (converted as the daemon's Cluster registry converts them),
 * the workloads' labels (pods and WorkloadEntries) and the `mesh` ConfigMap of the mesh namespace.
 * Lists are paged, so a large cluster is read in bounded pieces.
 */
import type { V1ConfigMap, V1Pod, V1Service } from '@kubernetes/client-node';
import type { WorkloadInfo } from '../../../analysis/types.js';
import { kubeWorldFrom, type KubeWorld } from '../../../analysis/world.js';
import type { KubeClient } from '../../../kube/client.js';
import { isNotFound, KubeApiError } from '../../../kube/errors.js';
import type { KubeObject } from '../../../kube/types.js';
import { CONFIG_KINDS } from '../../../config/kinds.js';
import { parseConfigObject } from '../../../config/parse.js';
import type { ConfigObject, ConfigRejection } from '../../../config/types.js';
import type { Service } from '../../../model/service.js';
import { convertService } from '../../../registry/kube/convert.js';

export interface ClusterView {
  /** Valid mesh config objects. */
  readonly objects: ConfigObject[];
  /** Objects the daemon would refuse, with the reasons. */
  readonly rejected: ConfigRejection[];
  readonly services: Service[];
  readonly workloads: WorkloadInfo[];
  /** Text of the `mesh` key of the mesh ConfigMap, when it exists. */
  readonly meshConfig?: { readonly text: string; readonly origin: string };
  /** Kinds the API server does not serve (their CRDs are not installed). */
  readonly missingKinds: string[];
  /** The Kubernetes objects around the config (analysis/world.ts): namespaces, pods, deployments, Services, Secrets, the mesh namespace's ConfigMaps, gateway-api Gateways. */
  readonly world: KubeWorld;
}

export interface ClusterReadOptions {
  readonly meshNamespace: string;
  readonly meshConfigMapName: string;
  readonly domain: string;
  readonly signal?: AbortSignal;
}

const PAGE = 500;

async function listAll<T extends KubeObject>(client: KubeClient, apiVersion: string, kind: string, signal?: AbortSignal): Promise<T[]> {
  const out: T[] = [];
  let cont: string | undefined;
  do {
    const page = await client.list<T>(apiVersion, kind, { limit: PAGE, continue: cont, signal });
    out.push(...(page.items ?? []));
    cont = page.metadata?.continue || undefined;
  } while (cont);
  return out;
}

export async function readCluster(client: KubeClient, opts: ClusterReadOptions): Promise<ClusterView> {
  const objects: ConfigObject[] = [];
  const rejected: ConfigRejection[] = [];
  const missingKinds: string[] = [];

  const readKind = async (def: (typeof CONFIG_KINDS)[number]): Promise<void> => {
    let items: KubeObject[];
    try {
      items = await listAll<KubeObject>(client, def.apiVersion, def.kind, opts.signal);
    } catch (err) {
      // A 404 from discovery: the API server does not serve the kind (its CRD is not installed).
      if (isNotFound(err)) {
        missingKinds.push(def.kind);
        return;
      }
      throw err;
    }
    for (const item of items) {
      const parsed = parseConfigObject(item, 'cluster', item.metadata?.namespace ?? '');
      if ('issues' in parsed) rejected.push(parsed);
      else objects.push(parsed);
    }
  };

  // A kind the API server does not serve (gateway-api without its CRDs), or that the user may not
  // list (Secrets), is left out: the analyzers that need it see none.
  const optional = async <T extends KubeObject>(apiVersion: string, kind: string): Promise<T[]> => {
    try {
      return await listAll<T>(client, apiVersion, kind, opts.signal);
    } catch (err) {
      if (isNotFound(err) || (err instanceof KubeApiError && err.statusCode === 403)) return [];
      throw err;
    }
  };
  const [, services, pods, configMap, namespaces, deployments, secrets, gateways, meshConfigMaps] = await Promise.all([
    Promise.all(CONFIG_KINDS.map(readKind)),
    listAll<V1Service & KubeObject>(client, 'v1', 'Service', opts.signal),
    listAll<V1Pod & KubeObject>(client, 'v1', 'Pod', opts.signal),
    client.find<V1ConfigMap & KubeObject>({ apiVersion: 'v1', kind: 'ConfigMap', namespace: opts.meshNamespace, name: opts.meshConfigMapName }, opts.signal),
    optional<KubeObject>('v1', 'Namespace'),
    optional<KubeObject>('apps/v1', 'Deployment'),
    optional<KubeObject>('v1', 'Secret'),
    optional<KubeObject>('gateway.networking.k8s.io/v1', 'Gateway'),
    client.list<KubeObject>('v1', 'ConfigMap', { namespace: opts.meshNamespace, signal: opts.signal }).then((l) => l.items ?? []),
  ]);
  const typed = (apiVersion: string, kind: string, items: ReadonlyArray<KubeObject>): unknown[] => items.map((o) => ({ ...o, apiVersion, kind }));
  const world = kubeWorldFrom(
    [
      ...typed('v1', 'Namespace', namespaces),
      ...typed('v1', 'Pod', pods),
      ...typed('apps/v1', 'Deployment', deployments),
      ...typed('v1', 'Service', services),
      ...typed('v1', 'Secret', secrets),
      ...typed('v1', 'ConfigMap', meshConfigMaps),
      ...typed('gateway.networking.k8s.io/v1', 'Gateway', gateways),
    ],
    '',
  );

  const settings = { registry: 'Kubernetes', clusterId: 'Kubernetes', domain: opts.domain, trustDomain: 'cluster.local', edsForHeadless: false };
  const converted = services.map((s) => convertService(s, settings)).filter((s): s is Service => s !== undefined);

  const workloads: WorkloadInfo[] = [];
  for (const pod of pods) {
    if (!pod.metadata?.namespace || pod.metadata.deletionTimestamp) continue;
    workloads.push({ namespace: pod.metadata.namespace, labels: { ...(pod.metadata.labels ?? {}) }, ...(pod.metadata.name ? { name: pod.metadata.name } : {}) });
  }

  const text = configMap?.data?.mesh;
  const meshConfig = text === undefined ? undefined : { text, origin: `ConfigMap ${opts.meshNamespace}/${opts.meshConfigMapName} key mesh` };
  objects.sort((a, b) => (a.meta.gvk.kind + a.meta.namespace + a.meta.name).localeCompare(b.meta.gvk.kind + b.meta.namespace + b.meta.name));
  return { objects, rejected, services: converted, workloads, meshConfig, missingKinds: missingKinds.sort(), world };
}
