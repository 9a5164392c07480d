/**
 * The injection templates as code (docs/adr/0070): what each adds to a pod, from the pod's
 * resolved settings (./settings.ts). No text templating: every container, volume and variable is
 * built here, and the agent (src/agent/) reads exactly these names.
 *
 *   sidecar      mesh-init (the capture rules, `mesh-agent capture`) and mesh-proxy (Envoy run by
 *                `mesh-agent proxy sidecar`: bootstrap, certificates over SDS, readiness, metrics)
 *   gateway      completes a pod's own mesh-proxy container as a gateway (`mesh-agent proxy router`)
 *   grpc-agent   mesh-proxy as `mesh-agent proxy sidecar --mode grpc`: no Envoy, no capture; it
 *                writes the gRPC xDS bootstrap and certificate files the application reads
 *   grpc-simple  an init step that writes a gRPC xDS bootstrap for meshd's plaintext port; no agent
 */
import {
  APP_PROBERS_ENV,
  CERT_OUTPUT_DIR,
  GRPC_BOOTSTRAP_PATH,
  GRPC_XDS_BOOTSTRAP_ENV,
  META_ENV_PREFIX,
  POD_INFO_DIR,
  PROMETHEUS_ANNOTATIONS_ENV,
  PROXY_CONFIG_DIR,
  PROXY_GID,
  PROXY_PORTS,
  PROXY_UID,
  ROOT_CERT_CONFIGMAP,
  ROOT_CERT_DIR,
  SDS_SOCKET_DIR,
  TOKEN_AUDIENCE,
  TOKEN_DIR,
} from '../agent/names.js';
import { GRPC_BOOTSTRAP_INIT_CONTAINER, INIT_CONTAINER, PROXY_CONTAINER } from './names.js';
import type { Container, EnvVar, Volume, VolumeMount } from './pod.js';
import type { ProxySettings } from './settings.js';

/** Facts of the pod the templates need besides the settings. */
export interface PodFacts {
  readonly namespace: string;
  readonly domain: string;
  /** The workload the pod belongs to (Deployment, StatefulSet, ... or the pod). */
  readonly workloadName: string;
  /** `kubernetes://apis/<group>/<version>/namespaces/<ns>/<plural>/<name>` of that workload. */
  readonly owner: string;
  /** Names of the application containers. */
  readonly appContainers: ReadonlyArray<string>;
  /** JSON of the application containers' ports, for the node metadata. */
  readonly podPorts?: string;
  /** The rewritten probes' originals (sidecar only). */
  readonly appProbers?: string;
  /** The pod's original Prometheus scrape annotations (merged metrics). */
  readonly prometheus?: string;
  /** REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION. */
  readonly probeLocalhost: boolean;
}

/** What a template adds; the injector (./inject.ts) puts it into the pod. */
export interface TemplateOutput {
  readonly initContainers: Container[];
  /** The proxy container (placed by the injector: a native sidecar, first, or last). */
  readonly proxy?: Container;
  readonly volumes: Volume[];
  /** Mounts and variables added to every application container (proxyless gRPC). */
  readonly appMounts: VolumeMount[];
  readonly appEnv: EnvVar[];
  /** Whether the application's probes go through the agent. */
  readonly rewritesProbes: boolean;
  /** Whether the proxy must be ready before the application starts. */
  readonly holdApplication: boolean;
}

export const VOLUMES = Object.freeze({
  workloadSocket: 'workload-socket',
  envoy: 'mesh-envoy',
  data: 'mesh-data',
  podInfo: 'mesh-podinfo',
  token: 'mesh-token',
  rootCert: 'mesh-ca-root-cert',
  grpcBootstrap: 'grpc-io-proxyless-bootstrap',
});

const GRPC_SIMPLE_DIR = '/var/lib/grpc/data';
const GRPC_SIMPLE_BOOTSTRAP = `${GRPC_SIMPLE_DIR}/bootstrap.json`;

const field = (name: string, fieldPath: string): EnvVar => ({ name, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath } } });
const value = (name: string, v: string): EnvVar => ({ name, value: v });

function sortedJson(v: unknown): string {
  const sort = (x: unknown): unknown => {
    if (Array.isArray(x)) return x.map(sort);
    if (x && typeof x === 'object') return Object.fromEntries(Object.keys(x).sort().map((k) => [k, sort((x as Record<string, unknown>)[k])]));
    return x;
  };
  return JSON.stringify(sort(v));
}

function resourcesOf(s: ProxySettings): Container['resources'] {
  const out: Record<string, Record<string, string>> = {};
  if (s.resources.requests && Object.keys(s.resources.requests).length > 0) out.requests = { ...s.resources.requests };
  if (s.resources.limits && Object.keys(s.resources.limits).length > 0) out.limits = { ...s.resources.limits };
  return out as Container['resources'];
}

/** Variables of the agent: who the pod is and how to reach meshd; node metadata as MESH_META_*. */
function agentEnv(s: ProxySettings, f: PodFacts, extra: ReadonlyArray<EnvVar>): EnvVar[] {
  const env: EnvVar[] = [
    value('JWT_POLICY', s.jwtPolicy),
    value('CA_ADDR', s.caAddress),
    field('POD_NAME', 'metadata.name'),
    field('POD_NAMESPACE', 'metadata.namespace'),
    field('INSTANCE_IP', 'status.podIP'),
    field('SERVICE_ACCOUNT', 'spec.serviceAccountName'),
    field('HOST_IP', 'status.hostIP'),
    value('PROXY_CONFIG', sortedJson(s.proxyConfig)),
    ...(f.podPorts ? [value(`${META_ENV_PREFIX}POD_PORTS`, f.podPorts)] : []),
    value(`${META_ENV_PREFIX}APP_CONTAINERS`, f.appContainers.join(',')),
    value(`${META_ENV_PREFIX}CLUSTER_ID`, s.clusterId),
    field(`${META_ENV_PREFIX}NODE_NAME`, 'spec.nodeName'),
    value(`${META_ENV_PREFIX}INTERCEPTION_MODE`, s.interceptionMode),
    value(`${META_ENV_PREFIX}WORKLOAD_NAME`, f.workloadName),
    value(`${META_ENV_PREFIX}OWNER`, f.owner),
    value(`${META_ENV_PREFIX}MESH_ID`, s.meshId),
    ...(s.network ? [value(`${META_ENV_PREFIX}NETWORK`, s.network)] : []),
    value('TRUST_DOMAIN', s.trustDomain),
    ...extra,
  ];
  for (const [k, v] of Object.entries(s.proxyConfig.proxyMetadata ?? {}).sort(([a], [b]) => a.localeCompare(b))) {
    const i = env.findIndex((e) => e.name === k);
    if (i >= 0) env[i] = value(k, v);
    else env.push(value(k, v));
  }
  return env;
}

function agentArgs(s: ProxySettings, f: PodFacts, kind: 'sidecar' | 'router', mode?: 'grpc'): string[] {
  const args = ['proxy', kind];
  if (mode) args.push(`--mode=${mode}`);
  args.push('--domain', `$(POD_NAMESPACE).svc.${f.domain}`, `--proxyLogLevel=${s.logLevel}`, `--proxyComponentLogLevel=${s.componentLogLevel}`, `--log_output_level=${s.agentLogLevel}`);
  if (s.statusPort !== PROXY_PORTS.status) args.push(`--statusPort=${s.statusPort}`);
  return args;
}

function proxySecurityContext(): Container['securityContext'] {
  return {
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    privileged: false,
    readOnlyRootFilesystem: true,
    runAsGroup: PROXY_GID,
    runAsNonRoot: true,
    runAsUser: PROXY_UID,
  };
}

function readinessProbe(s: ProxySettings): Container['readinessProbe'] {
  return {
    httpGet: { path: '/healthz/ready', port: PROXY_PORTS.health as unknown as never },
    initialDelaySeconds: s.readiness.initialDelaySeconds,
    periodSeconds: s.readiness.periodSeconds,
    timeoutSeconds: 3,
    failureThreshold: s.readiness.failureThreshold,
  } as Container['readinessProbe'];
}

/** The agent's identity volumes: the projected token (third-party-jwt) and the mesh root. */
function identityVolumes(s: ProxySettings): { volumes: Volume[]; mounts: VolumeMount[] } {
  const volumes: Volume[] = [];
  const mounts: VolumeMount[] = [];
  if (s.jwtPolicy === 'third-party-jwt') {
    volumes.push({ name: VOLUMES.token, projected: { sources: [{ serviceAccountToken: { audience: TOKEN_AUDIENCE, expirationSeconds: 43200, path: 'mesh-token' } }] } });
    mounts.push({ name: VOLUMES.token, mountPath: TOKEN_DIR });
  }
  volumes.push({ name: VOLUMES.rootCert, configMap: { name: ROOT_CERT_CONFIGMAP } });
  mounts.push({ name: VOLUMES.rootCert, mountPath: ROOT_CERT_DIR });
  return { volumes, mounts };
}

const podInfoVolume = (): Volume => ({
  name: VOLUMES.podInfo,
  downwardAPI: {
    items: [
      { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
      { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
    ],
  },
});

function withImage(c: Container, s: ProxySettings): Container {
  return s.imagePullPolicy ? { ...c, imagePullPolicy: s.imagePullPolicy } : c;
}

/** `mesh-agent capture` with the pod's ranges and ports. */
/** Whether the proxy's metadata (`proxyMetadata` of its ProxyConfig) turns DNS capture on. */
function dnsCaptured(s: ProxySettings): boolean {
  const v = s.proxyConfig.proxyMetadata?.[`${META_ENV_PREFIX}DNS_CAPTURE`];
  return typeof v === 'string' && v.toLowerCase() === 'true';
}

export function captureArgs(s: ProxySettings): string[] {
  const c = s.capture;
  const args = [
    'capture',
    '-p', String(PROXY_PORTS.outbound),
    '-z', String(PROXY_PORTS.inbound),
    '-u', String(PROXY_UID),
    '-g', String(PROXY_GID),
    '-m', s.interceptionMode,
    '-i', c.includeOutboundIPRanges,
    '-x', c.excludeOutboundIPRanges,
    '-b', c.includeInboundPorts,
    '-d', c.excludeInboundPorts,
  ];
  if (c.includeOutboundPorts) args.push('-q', c.includeOutboundPorts);
  if (c.excludeOutboundPorts) args.push('-o', c.excludeOutboundPorts);
  // the agent answers DNS when its proxy metadata says so (docs/adr/0187); the init step sends it there
  if (dnsCaptured(s)) args.push('--redirect-dns');
  args.push(`--log_output_level=${s.agentLogLevel}`);
  return args;
}

function sidecar(s: ProxySettings, f: PodFacts): TemplateOutput {
  const id = identityVolumes(s);
  const extra: EnvVar[] = [];
  if (f.appProbers) extra.push(value(APP_PROBERS_ENV, f.appProbers));
  if (f.prometheus) extra.push(value(PROMETHEUS_ANNOTATIONS_ENV, f.prometheus));
  if (f.probeLocalhost) extra.push(value('REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION', 'true'));
  const proxy: Container = withImage(
    {
      name: PROXY_CONTAINER,
      image: s.image,
      args: agentArgs(s, f, 'sidecar'),
      ports: [{ containerPort: PROXY_PORTS.envoyPrometheus, name: 'http-envoy-prom', protocol: 'TCP' }],
      env: agentEnv(s, f, extra),
      readinessProbe: readinessProbe(s),
      resources: resourcesOf(s),
      securityContext: proxySecurityContext(),
      volumeMounts: [
        { name: VOLUMES.workloadSocket, mountPath: SDS_SOCKET_DIR },
        { name: VOLUMES.envoy, mountPath: PROXY_CONFIG_DIR },
        { name: VOLUMES.data, mountPath: CERT_OUTPUT_DIR },
        { name: VOLUMES.podInfo, mountPath: POD_INFO_DIR },
        ...id.mounts,
        ...s.userVolumeMounts,
      ],
    },
    s,
  );
  const initContainers: Container[] = [];
  if (s.interceptionMode !== 'NONE') {
    initContainers.push(
      withImage(
        {
          name: INIT_CONTAINER,
          image: s.image,
          args: captureArgs(s),
          resources: resourcesOf(s),
          securityContext: {
            allowPrivilegeEscalation: false,
            capabilities: { add: ['NET_ADMIN', 'NET_RAW'], drop: ['ALL'] },
            privileged: false,
            readOnlyRootFilesystem: false,
            runAsGroup: 0,
            runAsNonRoot: false,
            runAsUser: 0,
          },
        },
        s,
      ),
    );
  }
  return {
    initContainers,
    proxy,
    volumes: [
      { name: VOLUMES.workloadSocket, emptyDir: {} },
      { name: VOLUMES.envoy, emptyDir: { medium: 'Memory' } },
      { name: VOLUMES.data, emptyDir: {} },
      podInfoVolume(),
      ...id.volumes,
      ...s.userVolumes,
    ],
    appMounts: [],
    appEnv: [],
    rewritesProbes: s.rewriteProbes && s.interceptionMode !== 'NONE',
    holdApplication: s.holdApplication,
  };
}

/** Completes the pod's own `mesh-proxy` container (`existing`) as a gateway. */
function gateway(s: ProxySettings, f: PodFacts, existing: Container | undefined): TemplateOutput {
  const id = identityVolumes(s);
  const base = existing ?? { name: PROXY_CONTAINER };
  const image = !base.image || base.image === 'auto' ? s.image : base.image;
  const userEnv = base.env ?? [];
  const env = agentEnv(s, f, []).filter((e) => !userEnv.some((u) => u.name === e.name));
  const proxy: Container = withImage(
    {
      ...base,
      name: PROXY_CONTAINER,
      image,
      args: agentArgs(s, f, 'router'),
      ports: [...(base.ports ?? []).filter((p) => p.containerPort !== PROXY_PORTS.envoyPrometheus), { containerPort: PROXY_PORTS.envoyPrometheus, name: 'http-envoy-prom', protocol: 'TCP' }],
      env: [...env, ...userEnv],
      readinessProbe: base.readinessProbe ?? readinessProbe(s),
      resources: base.resources ?? resourcesOf(s),
      securityContext: base.securityContext ?? proxySecurityContext(),
      volumeMounts: [
        ...(base.volumeMounts ?? []),
        { name: VOLUMES.workloadSocket, mountPath: SDS_SOCKET_DIR },
        { name: VOLUMES.envoy, mountPath: PROXY_CONFIG_DIR },
        { name: VOLUMES.data, mountPath: CERT_OUTPUT_DIR },
        { name: VOLUMES.podInfo, mountPath: POD_INFO_DIR },
        ...id.mounts,
        ...s.userVolumeMounts,
      ],
    },
    s,
  );
  return {
    initContainers: [],
    proxy,
    volumes: [{ name: VOLUMES.workloadSocket, emptyDir: {} }, { name: VOLUMES.envoy, emptyDir: {} }, { name: VOLUMES.data, emptyDir: {} }, podInfoVolume(), ...id.volumes, ...s.userVolumes],
    appMounts: [],
    appEnv: [],
    rewritesProbes: false,
    holdApplication: false,
  };
}

function grpcAgent(s: ProxySettings, f: PodFacts): TemplateOutput {
  const id = identityVolumes(s);
  const proxy: Container = withImage(
    {
      name: PROXY_CONTAINER,
      image: s.image,
      args: agentArgs(s, f, 'sidecar', 'grpc'),
      env: agentEnv(s, f, [value(`${META_ENV_PREFIX}GENERATOR`, 'grpc'), value(GRPC_XDS_BOOTSTRAP_ENV, GRPC_BOOTSTRAP_PATH)]),
      readinessProbe: readinessProbe(s),
      resources: resourcesOf(s),
      securityContext: proxySecurityContext(),
      volumeMounts: [
        { name: VOLUMES.envoy, mountPath: PROXY_CONFIG_DIR },
        { name: VOLUMES.data, mountPath: CERT_OUTPUT_DIR },
        { name: VOLUMES.podInfo, mountPath: POD_INFO_DIR },
        ...id.mounts,
        ...s.userVolumeMounts,
      ],
    },
    s,
  );
  return {
    initContainers: [],
    proxy,
    volumes: [{ name: VOLUMES.envoy, emptyDir: { medium: 'Memory' } }, { name: VOLUMES.data, emptyDir: {} }, podInfoVolume(), ...id.volumes, ...s.userVolumes],
    appMounts: [
      { name: VOLUMES.envoy, mountPath: PROXY_CONFIG_DIR, readOnly: true },
      { name: VOLUMES.data, mountPath: CERT_OUTPUT_DIR, readOnly: true },
    ],
    appEnv: [value(GRPC_XDS_BOOTSTRAP_ENV, GRPC_BOOTSTRAP_PATH)],
    rewritesProbes: false,
    // gRPC reads its bootstrap once, at start: the agent must have written it.
    holdApplication: true,
  };
}

/** The plaintext xDS address (port 15010) of the host of `discoveryAddress`. */
function plaintextAddress(discoveryAddress: string): string {
  const i = discoveryAddress.lastIndexOf(':');
  return `${i < 0 ? discoveryAddress : discoveryAddress.slice(0, i)}:15010`;
}

function grpcSimple(s: ProxySettings, f: PodFacts): TemplateOutput {
  const init: Container = withImage(
    {
      name: GRPC_BOOTSTRAP_INIT_CONTAINER,
      image: s.image,
      args: ['grpc-bootstrap', '--xds-address', plaintextAddress(s.discoveryAddress), '--out', GRPC_SIMPLE_BOOTSTRAP, '--domain', `$(POD_NAMESPACE).svc.${f.domain}`],
      env: [
        field('POD_NAME', 'metadata.name'),
        field('POD_NAMESPACE', 'metadata.namespace'),
        field('INSTANCE_IP', 'status.podIP'),
        field('SERVICE_ACCOUNT', 'spec.serviceAccountName'),
        value(`${META_ENV_PREFIX}CLUSTER_ID`, s.clusterId),
        value(`${META_ENV_PREFIX}GENERATOR`, 'grpc'),
        value(`${META_ENV_PREFIX}WORKLOAD_NAME`, f.workloadName),
      ],
      resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { cpu: '100m', memory: '64Mi' } } as Container['resources'],
      securityContext: proxySecurityContext(),
      volumeMounts: [{ name: VOLUMES.grpcBootstrap, mountPath: GRPC_SIMPLE_DIR }],
    },
    s,
  );
  return {
    initContainers: [init],
    volumes: [{ name: VOLUMES.grpcBootstrap, emptyDir: {} }],
    appMounts: [{ name: VOLUMES.grpcBootstrap, mountPath: GRPC_SIMPLE_DIR, readOnly: true }],
    appEnv: [value(GRPC_XDS_BOOTSTRAP_ENV, GRPC_SIMPLE_BOOTSTRAP)],
    rewritesProbes: false,
    holdApplication: false,
  };
}

/** The output of template `name` for a pod with settings `s`. */
export function renderTemplate(name: ProxySettings['templates'][number], s: ProxySettings, f: PodFacts, existingProxy: Container | undefined): TemplateOutput {
  switch (name) {
    case 'sidecar':
      return sidecar(s, f);
    case 'gateway':
      return gateway(s, f, existingProxy);
    case 'grpc-agent':
      return grpcAgent(s, f);
    case 'grpc-simple':
      return grpcSimple(s, f);
  }
}
