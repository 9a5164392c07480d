/**
 * The reverse of injection (`meshctl x cluster-uninject`), read from the pod's status annotation:
 * the containers, init containers, volumes and pull secrets the injector added go, the labels and
 * annotations it added go and those it replaced come back, the application's probes are restored
 * from the proxy's MESH_KUBE_APP_PROBERS, and the variables and mounts the gRPC templates gave the
 * application containers are removed. A pod without the status annotation is not injected and is
 * returned as undefined. (A gateway keeps its `mesh-proxy` container: the pod brought it.)
 */
import { APP_PROBERS_ENV, GRPC_XDS_BOOTSTRAP_ENV } from '../agent/names.js';
import { InjectionError } from './errors.js';
import type { InjectionStatus } from './inject.js';
import { ANNOTATIONS, PROXY_CONTAINER } from './names.js';
import type { Container, Pod } from './pod.js';
import { restoreProbes, type AppProbers } from './probes.js';

function statusOf(pod: Pod): InjectionStatus | undefined {
  const raw = pod.metadata?.annotations?.[ANNOTATIONS.status];
  if (raw === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new InjectionError(`metadata.annotations["${ANNOTATIONS.status}"]`, 'is not JSON; the pod was not injected by this injector');
  }
  const s = parsed as Partial<InjectionStatus>;
  if (!s || typeof s !== 'object' || !Array.isArray(s.containers) || !Array.isArray(s.initContainers) || !Array.isArray(s.volumes)) {
    throw new InjectionError(`metadata.annotations["${ANNOTATIONS.status}"]`, 'does not list the injected containers and volumes');
  }
  return { imagePullSecrets: [], labels: [], annotations: [], templates: [], revision: '', ...s } as InjectionStatus;
}

function probersOf(proxy: Container | undefined): AppProbers {
  const raw = proxy?.env?.find((e) => e.name === APP_PROBERS_ENV)?.value;
  if (!raw) return {};
  try {
    return JSON.parse(raw) as AppProbers;
  } catch {
    return {};
  }
}

export function uninjectPod(pod: Pod): Pod | undefined {
  const status = statusOf(pod);
  if (!status || !pod.spec) return undefined;
  const spec = { ...pod.spec };
  const proxy = [...(spec.containers ?? []), ...(spec.initContainers ?? [])].find((c) => c.name === PROXY_CONTAINER);
  const probers = probersOf(proxy);
  const volumes = new Set(status.volumes);
  const grpc = status.templates.some((t) => t === 'grpc-agent' || t === 'grpc-simple');

  const app = (c: Container): Container => {
    let out = restoreProbes(c, probers);
    if (grpc) {
      const env = (out.env ?? []).filter((e) => e.name !== GRPC_XDS_BOOTSTRAP_ENV);
      const mounts = (out.volumeMounts ?? []).filter((m) => !volumes.has(m.name));
      out = { ...out, env, volumeMounts: mounts };
      if (env.length === 0) delete out.env;
      if (mounts.length === 0) delete out.volumeMounts;
    }
    return out;
  };
  spec.containers = (spec.containers ?? []).filter((c) => !status.containers.includes(c.name)).map(app);
  const init = (spec.initContainers ?? []).filter((c) => !status.initContainers.includes(c.name));
  if (init.length > 0) spec.initContainers = init;
  else delete spec.initContainers;
  const vols = (spec.volumes ?? []).filter((v) => !volumes.has(v.name));
  if (vols.length > 0) spec.volumes = vols;
  else delete spec.volumes;
  const secrets = (spec.imagePullSecrets ?? []).filter((s) => !status.imagePullSecrets.includes(s.name ?? ''));
  if (secrets.length > 0) spec.imagePullSecrets = secrets;
  else delete spec.imagePullSecrets;
  if (status.fsGroup && spec.securityContext) {
    const sc = { ...spec.securityContext };
    delete sc.fsGroup;
    if (status.fsGroup === 'created' && Object.keys(sc).length === 0) delete spec.securityContext;
    else spec.securityContext = sc;
  }

  const annotations = { ...(pod.metadata?.annotations ?? {}) };
  delete annotations[ANNOTATIONS.status];
  for (const k of status.annotations) delete annotations[k];
  for (const [k, v] of Object.entries(status.replacedAnnotations ?? {})) annotations[k] = v;
  const labels = { ...(pod.metadata?.labels ?? {}) };
  for (const k of status.labels) delete labels[k];
  const metadata: NonNullable<Pod['metadata']> = { ...(pod.metadata ?? {}), annotations, labels };
  if (Object.keys(annotations).length === 0) delete metadata.annotations;
  if (Object.keys(labels).length === 0) delete metadata.labels;
  return { ...pod, metadata, spec };
}
