/**
 * `injectPod`: the pod with the proxy, as the webhook (`/inject`) and `meshctl cluster-inject` both
 * compute it; a pure function of the pod and the injector's inputs. The pod-level changes besides
 * the template's containers and volumes:
 *  - the status annotation `sidecar.mesh.io/status` (JSON: revision, templates, and what was added,
 *    so that `meshctl x cluster-uninject` can take it out again);
 *  - `kubectl.kubernetes.io/default-container` and `default-logs-container` (the first application
 *    container), the config's injectedAnnotations, and the Prometheus annotations pointed at the
 *    agent's merged metrics (the originals go to the agent);
 *  - labels `security.mesh.io/tlsMode: mesh` and the canonical service name and revision;
 *  - with ENABLE_LEGACY_FSGROUP_INJECTION, fsGroup 1337 (readable tokens on old clusters);
 *  - the values' imagePullSecrets.
 * Where the proxy goes: a native sidecar (an init container with restartPolicy Always) when the
 * cluster has them; else the last container, or the first with a postStart hook that waits for the
 * proxy when the application must wait for it.
 */
import { PROXY_GID, PROXY_PORTS } from '../agent/names.js';
import type { InjectionInputs } from './config.js';
import { InjectionError } from './errors.js';
import { ANNOTATIONS, GRPC_BOOTSTRAP_INIT_CONTAINER, INIT_CONTAINER, LABELS, PROXY_CONTAINER } from './names.js';
import type { Container, Pod, Volume } from './pod.js';
import { rewriteProbes } from './probes.js';
import { proxySettings, type ProxySettings } from './settings.js';
import { renderTemplate, type PodFacts } from './templates.js';

/** The status annotation's value. */
export interface InjectionStatus {
  readonly revision: string;
  readonly templates: ReadonlyArray<string>;
  readonly initContainers: ReadonlyArray<string>;
  readonly containers: ReadonlyArray<string>;
  readonly volumes: ReadonlyArray<string>;
  readonly imagePullSecrets: ReadonlyArray<string>;
  /** Labels and annotations the injector added (absent before). */
  readonly labels: ReadonlyArray<string>;
  readonly annotations: ReadonlyArray<string>;
  /** The injector set the pod's fsGroup (`created`: and the pod's securityContext, which it had not). */
  readonly fsGroup?: 'set' | 'created';
  /** Original values of annotations the injector replaced. */
  readonly replacedAnnotations?: Readonly<Record<string, string>>;
}

export interface InjectionResult {
  readonly pod: Pod;
  readonly status: InjectionStatus;
}

const PLURALS: Readonly<Record<string, string>> = {
  Deployment: 'deployments',
  StatefulSet: 'statefulsets',
  DaemonSet: 'daemonsets',
  Job: 'jobs',
  CronJob: 'cronjobs',
  ReplicaSet: 'replicasets',
  ReplicationController: 'replicationcontrollers',
  Pod: 'pods',
};

/** `kubernetes://apis/<group>/<version>/namespaces/<ns>/<plural>/<name>`, as the node metadata OWNER. */
export function ownerPath(groupVersion: string, kind: string, namespace: string, name: string): string {
  return `kubernetes://apis/${groupVersion}/namespaces/${namespace}/${PLURALS[kind] ?? `${kind.toLowerCase()}s`}/${name}`;
}

/**
 * The workload of a pod from its controller reference: a ReplicaSet's pod belongs to the
 * Deployment named by the ReplicaSet less its pod-template hash; a Job's pod of a CronJob to that
 * CronJob when the Job name ends in a schedule number. Without an owner, the pod itself (its name,
 * or its generateName less the trailing dash).
 */
export function workloadOf(pod: Pod, namespace: string): { name: string; owner: string } {
  const owner = (pod.metadata?.ownerReferences ?? []).find((o) => o.controller) ?? pod.metadata?.ownerReferences?.[0];
  const labels = pod.metadata?.labels ?? {};
  const path = (group: string, kind: string, name: string): string => ownerPath(group, kind, namespace, name);
  if (owner) {
    const group = owner.apiVersion.includes('/') ? owner.apiVersion : `core/${owner.apiVersion}`;
    if (owner.kind === 'ReplicaSet' && labels['pod-template-hash'] && owner.name.endsWith(`-${labels['pod-template-hash']}`)) {
      const name = owner.name.slice(0, -(labels['pod-template-hash'].length + 1));
      return { name, owner: path('apps/v1', 'Deployment', name) };
    }
    if (owner.kind === 'Job' && /-\d+$/.test(owner.name)) {
      const name = owner.name.replace(/-\d+$/, '');
      return { name, owner: path('batch/v1', 'CronJob', name) };
    }
    return { name: owner.name, owner: path(group, owner.kind, owner.name) };
  }
  const name = pod.metadata?.name || (pod.metadata?.generateName ?? '').replace(/-$/, '') || 'unknown';
  return { name, owner: path('core/v1', 'Pod', name) };
}

/** The workload a pod template belongs to, when the injector sees a template rather than a pod (meshctl cluster-inject). */
export interface WorkloadRef {
  readonly name: string;
  readonly owner: string;
}

function podFacts(pod: Pod, namespace: string, inputs: InjectionInputs, extra: { appProbers?: string; prometheus?: string; workload?: WorkloadRef }): PodFacts {
  const apps = (pod.spec?.containers ?? []).filter((c) => c.name !== PROXY_CONTAINER);
  const ports = apps.flatMap((c) => (c.ports ?? []).map((p) => ({ ...(p.name ? { name: p.name } : {}), containerPort: p.containerPort, protocol: p.protocol ?? 'TCP' })));
  const w = extra.workload ?? workloadOf(pod, namespace);
  return {
    namespace,
    domain: inputs.domain,
    workloadName: w.name,
    owner: w.owner,
    appContainers: apps.map((c) => c.name),
    podPorts: ports.length > 0 ? JSON.stringify(ports) : undefined,
    appProbers: extra.appProbers,
    prometheus: extra.prometheus,
    probeLocalhost: inputs.probeLocalhost,
  };
}

function checkPod(pod: Pod): void {
  if (!pod.spec) throw new InjectionError('spec', 'the pod has no spec');
  if (!Array.isArray(pod.spec.containers) || pod.spec.containers.length === 0) throw new InjectionError('spec.containers', 'the pod has no containers');
  pod.spec.containers.forEach((c, i) => {
    if (!c || typeof c.name !== 'string' || c.name === '') throw new InjectionError(`spec.containers[${i}].name`, 'a container needs a name');
  });
}

function mergeByName<T extends { name: string }>(existing: ReadonlyArray<T>, added: ReadonlyArray<T>, what: string, base: string): T[] {
  for (const a of added) {
    if (existing.some((e) => e.name === a.name)) throw new InjectionError(base, `the pod already has a ${what} named ${a.name}, which the injector adds; rename it`);
  }
  return [...existing, ...added];
}

/** Container that waits for the proxy before the application starts (non-native sidecars). */
function withWaitHook(proxy: Container): Container {
  return { ...proxy, lifecycle: { postStart: { exec: { command: ['mesh-agent', 'wait', `--url=http://localhost:${PROXY_PORTS.health}/healthz/ready`, '--timeout=120s'] } } } };
}

/** A native sidecar proxy: an init container that keeps running and reports started once ready. */
function asNativeSidecar(proxy: Container): Container {
  return {
    ...proxy,
    restartPolicy: 'Always',
    startupProbe: { httpGet: { path: '/healthz/ready', port: PROXY_PORTS.health as unknown as never }, periodSeconds: 1, timeoutSeconds: 3, failureThreshold: 600 } as Container['startupProbe'],
  };
}

function canonicalName(labels: Readonly<Record<string, string>>, workload: string): string {
  return labels['app.kubernetes.io/name'] ?? labels.app ?? workload;
}

function canonicalRevision(labels: Readonly<Record<string, string>>): string {
  return labels['app.kubernetes.io/version'] ?? labels.version ?? 'latest';
}

/** Injects `pod` (of `namespace`) with the proxy; throws InjectionError when the pod cannot be rendered. */
export function injectPod(pod: Pod, namespace: string, inputs: InjectionInputs, workload?: WorkloadRef): InjectionResult {
  checkPod(pod);
  const s: ProxySettings = proxySettings(pod, inputs);
  const template = s.templates[0] ?? 'sidecar';
  const spec = pod.spec!;
  const annotations: Record<string, string> = { ...(pod.metadata?.annotations ?? {}) };
  const labels: Record<string, string> = { ...(pod.metadata?.labels ?? {}) };
  const addedAnnotations: string[] = [];
  const addedLabels: string[] = [];
  const replaced: Record<string, string> = {};
  const setAnnotation = (k: string, v: string): void => {
    if (annotations[k] === undefined) addedAnnotations.push(k);
    else if (annotations[k] !== v) replaced[k] = annotations[k] as string;
    annotations[k] = v;
  };

  // Application containers: the gateway template completes the pod's own mesh-proxy instead.
  const existingProxy = template === 'gateway' ? spec.containers.find((c) => c.name === PROXY_CONTAINER) : undefined;
  let apps: Container[] = spec.containers.filter((c) => c !== existingProxy);
  const sidecarLike = template === 'sidecar';
  let appProbers: string | undefined;
  if (sidecarLike && s.rewriteProbes && s.interceptionMode !== 'NONE') {
    const r = rewriteProbes(apps, s.statusPort, 'spec.containers');
    apps = r.containers;
    if (Object.keys(r.probers).length > 0) appProbers = JSON.stringify(r.probers);
  }
  let prometheus: string | undefined;
  const mergeMetrics = sidecarLike && s.mergeMetrics && annotations[ANNOTATIONS.prometheusScrape] !== 'false';
  if (mergeMetrics) {
    const original: Record<string, string> = {};
    for (const k of [ANNOTATIONS.prometheusScrape, ANNOTATIONS.prometheusPort, ANNOTATIONS.prometheusPath]) if (annotations[k] !== undefined) original[k] = annotations[k] as string;
    if (original[ANNOTATIONS.prometheusScrape] !== undefined || original[ANNOTATIONS.prometheusPort] !== undefined) prometheus = JSON.stringify(original);
  }
  const facts = podFacts(pod, namespace, inputs, { appProbers, prometheus, workload });
  const out = renderTemplate(template, s, facts, existingProxy);

  if (out.appMounts.length > 0 || out.appEnv.length > 0) {
    apps = apps.map((c) => ({
      ...c,
      env: [...(c.env ?? []).filter((e) => !out.appEnv.some((a) => a.name === e.name)), ...out.appEnv],
      volumeMounts: [...(c.volumeMounts ?? []).filter((m) => !out.appMounts.some((a) => a.mountPath === m.mountPath)), ...out.appMounts],
    }));
  }

  const native = s.nativeSidecar && out.proxy !== undefined && template !== 'gateway';
  let initContainers = mergeByName(spec.initContainers ?? [], out.initContainers, 'init container', 'spec.initContainers');
  let containers: Container[];
  if (!out.proxy) containers = apps;
  else if (native) {
    initContainers = mergeByName(initContainers, [asNativeSidecar(out.proxy)], 'init container', 'spec.initContainers');
    containers = apps;
  } else if (template === 'gateway') {
    containers = existingProxy ? spec.containers.map((c) => (c === existingProxy ? out.proxy! : (apps.find((a) => a.name === c.name) ?? c))) : [...apps, out.proxy];
  } else if (s.holdApplication || out.holdApplication) {
    containers = mergeByName([withWaitHook(out.proxy)], apps, 'container', 'spec.containers');
  } else {
    containers = mergeByName(apps, [out.proxy], 'container', 'spec.containers');
  }
  const volumes: Volume[] = mergeByName(spec.volumes ?? [], out.volumes, 'volume', 'spec.volumes');

  const pullSecrets = [...(spec.imagePullSecrets ?? [])];
  const addedSecrets: string[] = [];
  for (const name of s.imagePullSecrets) {
    if (!pullSecrets.some((p) => p.name === name)) {
      pullSecrets.push({ name });
      addedSecrets.push(name);
    }
  }

  const newSpec = { ...spec, containers, initContainers, volumes } as NonNullable<Pod['spec']>;
  if (initContainers.length === 0) delete newSpec.initContainers;
  if (pullSecrets.length > 0) newSpec.imagePullSecrets = pullSecrets;
  let fsGroup: 'set' | 'created' | undefined;
  if (inputs.legacyFsGroup && s.jwtPolicy === 'third-party-jwt' && out.proxy && spec.securityContext?.fsGroup === undefined) {
    newSpec.securityContext = { ...(spec.securityContext ?? {}), fsGroup: PROXY_GID };
    fsGroup = spec.securityContext ? 'set' : 'created';
  }

  const firstApp = apps[0]?.name;
  if (firstApp && out.proxy && annotations[ANNOTATIONS.defaultContainer] === undefined) setAnnotation(ANNOTATIONS.defaultContainer, firstApp);
  if (firstApp && out.proxy && annotations[ANNOTATIONS.defaultLogsContainer] === undefined) setAnnotation(ANNOTATIONS.defaultLogsContainer, firstApp);
  for (const [k, v] of Object.entries(inputs.config.injectedAnnotations)) setAnnotation(k, v);
  if (mergeMetrics && out.proxy) {
    setAnnotation(ANNOTATIONS.prometheusScrape, 'true');
    setAnnotation(ANNOTATIONS.prometheusPort, String(s.statusPort));
    setAnnotation(ANNOTATIONS.prometheusPath, '/stats/prometheus');
  }
  if (out.proxy && template !== 'grpc-agent') {
    for (const [k, v] of [
      [LABELS.tlsMode, 'mesh'],
      [LABELS.canonicalName, canonicalName(labels, facts.workloadName)],
      [LABELS.canonicalRevision, canonicalRevision(labels)],
    ] as const) {
      if (labels[k] === undefined) {
        labels[k] = v;
        addedLabels.push(k);
      }
    }
  }

  const status: InjectionStatus = {
    revision: s.revision,
    templates: [...s.templates],
    initContainers: [...out.initContainers.map((c) => c.name), ...(native && out.proxy ? [out.proxy.name] : [])],
    containers: out.proxy && !native && template !== 'gateway' ? [out.proxy.name] : [],
    volumes: out.volumes.map((v) => v.name),
    imagePullSecrets: addedSecrets,
    labels: addedLabels,
    annotations: addedAnnotations,
    ...(fsGroup ? { fsGroup } : {}),
    ...(Object.keys(replaced).length > 0 ? { replacedAnnotations: replaced } : {}),
  };
  annotations[ANNOTATIONS.status] = JSON.stringify(status);

  const metadata = { ...(pod.metadata ?? {}), annotations, labels };
  return { pod: { ...pod, metadata, spec: newSpec }, status };
}

/** The containers the injector owns, whatever the template (for checks and cluster-uninject). */
export const INJECTED_CONTAINERS: ReadonlyArray<string> = Object.freeze([PROXY_CONTAINER, INIT_CONTAINER, GRPC_BOOTSTRAP_INIT_CONTAINER]);
