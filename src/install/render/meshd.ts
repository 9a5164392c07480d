/**
 * Component Meshd: the control-plane daemon. Deployment and Service `meshd[-R]` (container
 * `discovery` running `mesh-discovery discovery`), the mesh config map `mesh[-R]` (key `mesh`: the
 * spec's meshConfig as YAML), the injector config map `mesh-sidecar-injector[-R]` (keys `config`
 * and `values`), the MutatingWebhookConfiguration `mesh-sidecar-injector[-R]`, the daemon's RBAC,
 * and the HorizontalPodAutoscaler and PodDisruptionBudget when the spec asks for them.
 */
import type { EnvVar, ServicePort } from '../api.js';
import { INJECT_POD_LABEL, REVISION_LABEL } from '../labels.js';
import { deepMerge, sortKeys } from '../tree.js';
import { toYaml } from '../yaml-io.js';
import { DAEMON_RUNTIME_ENV } from './runtime-env.js';
import { MESHD_SERVICE_ACCOUNT } from './base.js';
import {
  DNS_DOMAIN,
  annotationsOf,
  fieldEnv,
  imageOf,
  mergeEnv,
  objectHead,
  podSettings,
  renderHpa,
  renderPdb,
  replicasOf,
  resourcesOf,
  subject,
  type RenderContext,
} from './context.js';
import { meshdClusterRules, meshdNamespaceRules } from './rbac.js';
import type { K8sObject } from './types.js';
import { WEBHOOK_PORT, WEBHOOK_SERVICE_PORT, injectorWebhookName, renderInjectorWebhook, validatingWebhookName } from './webhooks.js';

const COMPONENT = 'Meshd';
export const MESHD_CONTAINER = 'discovery';
export const MESH_CONFIG_DIR = '/etc/mesh/config';
export const INJECT_CONFIG_DIR = '/var/lib/mesh/inject';
export const CACERTS_DIR = '/etc/cacerts';

/** Ports of the daemon (CONVENTIONS.md "Ports"). */
export const MESHD_PORTS = {
  debug: 8080,
  xds: 15010,
  secureXds: 15012,
  monitoring: 15014,
  webhooks: WEBHOOK_PORT,
} as const;

export function meshdNames(ctx: RenderContext) {
  const ns = ctx.spec.components?.meshd?.namespace || ctx.namespace;
  return {
    namespace: ns,
    deployment: ctx.suffixed('meshd'),
    service: ctx.suffixed('meshd'),
    meshConfigMap: ctx.suffixed('mesh'),
    injectorConfigMap: ctx.suffixed('mesh-sidecar-injector'),
    clusterRole: `meshd-clusterrole-${ctx.revision ? `${ctx.revision}-` : ''}${ns}`,
    role: ctx.suffixed('meshd'),
  };
}

/** `host:port` of the secured xDS and CA port of this revision's meshd. */
export function meshdAddress(ctx: RenderContext): string {
  const n = meshdNames(ctx);
  return `${n.service}.${n.namespace}.svc:${MESHD_PORTS.secureXds}`;
}

/** The mesh config written to the `mesh` config map: the spec's, with the namespace-dependent defaults filled in. */
export function renderedMeshConfig(ctx: RenderContext): Record<string, unknown> {
  const defaults = { rootNamespace: ctx.namespace, defaultConfig: { discoveryAddress: meshdAddress(ctx) } };
  return deepMerge(defaults, ctx.spec.meshConfig ?? {}) as Record<string, unknown>;
}

/** Arguments after `mesh-discovery`. */
export function meshdArgs(ctx: RenderContext): string[] {
  const args = [
    'discovery',
    `--monitoringAddr=:${MESHD_PORTS.monitoring}`,
    `--grpcAddr=:${MESHD_PORTS.xds}`,
    `--secureGRPCAddr=:${MESHD_PORTS.secureXds}`,
    `--httpsAddr=:${MESHD_PORTS.webhooks}`,
    `--httpAddr=:${MESHD_PORTS.debug}`,
    `--domain=${DNS_DOMAIN}`,
    `--meshConfig=${MESH_CONFIG_DIR}/mesh`,
    `--networksConfig=${MESH_CONFIG_DIR}/meshNetworks`,
    '--keepaliveMaxServerConnectionAge=30m',
    `--log_output_level=${ctx.values.global?.logging?.level || 'default:info'}`,
  ];
  if (ctx.values.global?.logAsJson) args.push('--log_as_json');
  return args;
}

/** CLUSTER_SIGNER when the daemon signs through the Kubernetes CSR API (EXTERNAL_CA=MESHD_RA_CLUSTER_API). */
function clusterSignerOf(env: readonly EnvVar[]): string | undefined {
  const value = (name: string): string | undefined => env.find((e) => e.name === name)?.value;
  return value('EXTERNAL_CA') === 'MESHD_RA_CLUSTER_API' ? value('CLUSTER_SIGNER') || undefined : undefined;
}

function meshdEnv(ctx: RenderContext): EnvVar[] {
  const base: EnvVar[] = [
    { name: 'REVISION', value: ctx.revisionLabel },
    fieldEnv('POD_NAME', 'metadata.name'),
    fieldEnv('POD_NAMESPACE', 'metadata.namespace'),
    { name: 'CLUSTER_ID', value: ctx.clusterId },
    { name: 'INJECTION_WEBHOOK_CONFIG_NAME', value: injectorWebhookName(ctx) },
    // Only the default revision patches the shared validating webhook configuration.
    { name: 'VALIDATION_WEBHOOK_CONFIG_NAME', value: ctx.revision ? '' : validatingWebhookName(ctx) },
    { name: 'ROOT_CA_DIR', value: CACERTS_DIR },
    ...Object.entries(DAEMON_RUNTIME_ENV).map(([name, value]) => ({ name, value })),
  ];
  return mergeEnv(base, ctx.spec.components?.meshd?.k8s?.env);
}

const DEFAULT_SERVICE_PORTS: ServicePort[] = [
  { name: 'grpc-xds', port: MESHD_PORTS.xds, targetPort: MESHD_PORTS.xds, protocol: 'TCP' },
  { name: 'tls-xds', port: MESHD_PORTS.secureXds, targetPort: MESHD_PORTS.secureXds, protocol: 'TCP' },
  { name: 'https-webhook', port: WEBHOOK_SERVICE_PORT, targetPort: MESHD_PORTS.webhooks, protocol: 'TCP' },
  { name: 'http-monitoring', port: MESHD_PORTS.monitoring, targetPort: MESHD_PORTS.monitoring, protocol: 'TCP' },
];

function renderService(ctx: RenderContext, labels: Record<string, string>, selector: Record<string, string>): K8sObject {
  const n = meshdNames(ctx);
  const svc = ctx.spec.components?.meshd?.k8s?.service;
  const spec: Record<string, unknown> = {};
  if (svc?.type) spec.type = svc.type;
  spec.selector = { ...selector };
  spec.ports = (svc?.ports ?? DEFAULT_SERVICE_PORTS).map((p) => ({ ...p, protocol: p.protocol ?? 'TCP' }));
  if (svc?.loadBalancerIP) spec.loadBalancerIP = svc.loadBalancerIP;
  if (svc?.loadBalancerSourceRanges) spec.loadBalancerSourceRanges = [...svc.loadBalancerSourceRanges];
  if (svc?.externalTrafficPolicy) spec.externalTrafficPolicy = svc.externalTrafficPolicy;
  const annotations = ctx.spec.components?.meshd?.k8s?.serviceAnnotations;
  return { ...objectHead(ctx, COMPONENT, 'v1', 'Service', n.service, { namespace: n.namespace, labels, annotations }), spec };
}

function renderDeployment(ctx: RenderContext, labels: Record<string, string>, selector: Record<string, string>): K8sObject {
  const n = meshdNames(ctx);
  const comp = ctx.spec.components?.meshd;
  const k8s = comp?.k8s;
  const container: Record<string, unknown> = {
    name: MESHD_CONTAINER,
    image: imageOf(ctx, comp, 'meshd'),
  };
  if (ctx.values.global?.imagePullPolicy) container.imagePullPolicy = ctx.values.global.imagePullPolicy;
  Object.assign(container, {
    command: ['mesh-discovery'],
    args: meshdArgs(ctx),
    ports: [
      { name: 'http-debug', containerPort: MESHD_PORTS.debug, protocol: 'TCP' },
      { name: 'grpc-xds', containerPort: MESHD_PORTS.xds, protocol: 'TCP' },
      { name: 'tls-xds', containerPort: MESHD_PORTS.secureXds, protocol: 'TCP' },
      { name: 'http-monitoring', containerPort: MESHD_PORTS.monitoring, protocol: 'TCP' },
      { name: 'https-webhooks', containerPort: MESHD_PORTS.webhooks, protocol: 'TCP' },
    ],
    readinessProbe: { httpGet: { path: '/ready', port: MESHD_PORTS.debug }, initialDelaySeconds: 1, periodSeconds: 3, timeoutSeconds: 5 },
    // Liveness: `/healthz` answers while the daemon's event loop turns, whatever ENABLE_DEBUG_ON_HTTP
    // says; a loop blocked for a minute (6 × 10 s) restarts the container (ADR 0112).
    livenessProbe: { httpGet: { path: '/healthz', port: MESHD_PORTS.debug }, initialDelaySeconds: 10, periodSeconds: 10, timeoutSeconds: 5, failureThreshold: 6 },
    env: meshdEnv(ctx),
  });
  const resources = resourcesOf(k8s);
  if (resources) container.resources = resources;
  container.securityContext = {
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    runAsUser: 1337,
    runAsGroup: 1337,
    runAsNonRoot: true,
    capabilities: { drop: ['ALL'] },
  };
  container.volumeMounts = [
    { name: 'local-certs', mountPath: '/var/run/secrets/mesh-dns' },
    { name: 'mesh-token', mountPath: '/var/run/secrets/tokens', readOnly: true },
    { name: 'cacerts', mountPath: CACERTS_DIR, readOnly: true },
    { name: 'config-volume', mountPath: MESH_CONFIG_DIR },
    { name: 'inject', mountPath: INJECT_CONFIG_DIR, readOnly: true },
  ];
  const podSpec: Record<string, unknown> = {
    serviceAccountName: MESHD_SERVICE_ACCOUNT,
    ...podSettings(ctx, k8s),
    containers: [container],
    volumes: [
      { name: 'local-certs', emptyDir: { medium: 'Memory' } },
      { name: 'mesh-token', projected: { sources: [{ serviceAccountToken: { audience: 'mesh-ca', expirationSeconds: 43200, path: 'mesh-token' } }] } },
      { name: 'cacerts', secret: { secretName: 'cacerts', optional: true } },
      { name: 'config-volume', configMap: { name: n.meshConfigMap } },
      { name: 'inject', configMap: { name: n.injectorConfigMap } },
    ],
  };
  const spec: Record<string, unknown> = {};
  const replicas = replicasOf(k8s);
  if (replicas !== undefined) spec.replicas = replicas;
  Object.assign(spec, {
    selector: { matchLabels: { ...selector } },
    strategy: { rollingUpdate: { maxSurge: '100%', maxUnavailable: '25%' } },
    template: {
      metadata: {
        labels: { ...selector, [INJECT_POD_LABEL]: 'false' },
        annotations: annotationsOf({ 'prometheus.io/port': String(MESHD_PORTS.monitoring), 'prometheus.io/scrape': 'true' }, k8s?.podAnnotations),
      },
      spec: podSpec,
    },
  });
  return { ...objectHead(ctx, COMPONENT, 'apps/v1', 'Deployment', n.deployment, { namespace: n.namespace, labels }), spec };
}

function injectorValues(ctx: RenderContext): Record<string, unknown> {
  const comp = ctx.spec.components?.meshd;
  const defaults = {
    global: {
      hub: comp?.hub || ctx.spec.hub,
      tag: comp?.tag || ctx.spec.tag,
      proxyImage: imageOf(ctx, comp, 'proxy'),
      meshNamespace: ctx.namespace,
      revision: ctx.revision,
      discoveryAddress: meshdAddress(ctx),
    },
  };
  return deepMerge(defaults, ctx.spec.values ?? {}) as Record<string, unknown>;
}

function renderConfigMaps(ctx: RenderContext, labels: Record<string, string>): K8sObject[] {
  const n = meshdNames(ctx);
  const injectorConfig = {
    policy: ctx.values.sidecarInjectorWebhook?.policy ?? 'enabled',
    defaultTemplates: ['sidecar'],
    alwaysInjectSelector: [],
    neverInjectSelector: [],
    injectedAnnotations: {},
  };
  return [
    {
      ...objectHead(ctx, COMPONENT, 'v1', 'ConfigMap', n.meshConfigMap, { namespace: n.namespace, labels }),
      data: { mesh: toYaml(sortKeys(renderedMeshConfig(ctx))), meshNetworks: 'networks: {}\n' },
    },
    {
      ...objectHead(ctx, COMPONENT, 'v1', 'ConfigMap', n.injectorConfigMap, { namespace: n.namespace, labels: { ...labels, app: 'sidecar-injector' } }),
      data: { config: toYaml(sortKeys(injectorConfig)), values: `${JSON.stringify(sortKeys(injectorValues(ctx)), null, 2)}\n` },
    },
  ];
}

function renderRbac(ctx: RenderContext, labels: Record<string, string>): K8sObject[] {
  const n = meshdNames(ctx);
  const rbac = 'rbac.authorization.k8s.io/v1';
  const sa = subject(MESHD_SERVICE_ACCOUNT, n.namespace);
  return [
    { ...objectHead(ctx, COMPONENT, rbac, 'ClusterRole', n.clusterRole, { labels }), rules: meshdClusterRules({ validating: validatingWebhookName(ctx) }, { clusterSigner: clusterSignerOf(meshdEnv(ctx)) }) },
    {
      ...objectHead(ctx, COMPONENT, rbac, 'ClusterRoleBinding', n.clusterRole, { labels }),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: n.clusterRole },
      subjects: [sa],
    },
    { ...objectHead(ctx, COMPONENT, rbac, 'Role', n.role, { namespace: n.namespace, labels }), rules: meshdNamespaceRules() },
    {
      ...objectHead(ctx, COMPONENT, rbac, 'RoleBinding', n.role, { namespace: n.namespace, labels }),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: n.role },
      subjects: [sa],
    },
  ];
}

export function renderMeshd(ctx: RenderContext): K8sObject[] {
  const n = meshdNames(ctx);
  const k8s = ctx.spec.components?.meshd?.k8s;
  const selector = { app: 'meshd', [REVISION_LABEL]: ctx.revisionLabel };
  const labels = { app: 'meshd' };
  const objects: K8sObject[] = [
    ...renderRbac(ctx, labels),
    ...renderConfigMaps(ctx, labels),
    renderService(ctx, labels, selector),
    renderDeployment(ctx, labels, selector),
    renderInjectorWebhook(ctx, COMPONENT, { service: n.service, namespace: n.namespace }),
  ];
  if (k8s?.hpaSpec) objects.push(renderHpa(ctx, COMPONENT, n.deployment, n.namespace, labels, k8s.hpaSpec));
  if (k8s?.podDisruptionBudget) objects.push(renderPdb(ctx, COMPONENT, n.deployment, n.namespace, labels, selector, k8s.podDisruptionBudget));
  return objects;
}
