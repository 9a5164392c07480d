/**
 * Components IngressGateways and EgressGateways: for each enabled gateway a Deployment and Service
 * named after it (defaults `mesh-ingressgateway`, `mesh-egressgateway`) running the `proxy` image
 * as a router, a ServiceAccount `<name>-service-account`, a Role and RoleBinding `<name>-sds` to read
 * the TLS secrets of its namespace (bound to the gateway and, in a namespace other than the control
 * plane's, to meshd, which serves the `credentialName` Secrets over SDS and otherwise reads Secrets
 * only in its own namespace; docs/adr/0105), and the HorizontalPodAutoscaler and PodDisruptionBudget when
 * asked for. A gateway in another namespace than the control plane also gets its Namespace.
 *
 * Pods carry `app: <name>` and the selector label `mesh: ingressgateway|egressgateway` (what
 * Gateway resources select), which the gateway's `label` map can change or extend. Without
 * `k8s.service`, ingress gateways get a LoadBalancer Service with ports 15021 (status), 80 and 443,
 * egress gateways a ClusterIP Service with ports 80 and 443.
 */
import type { EnvVar, GatewaySpec, ServicePort } from '../api.js';
import { GATEWAY_SELECTOR_LABEL, INJECT_POD_LABEL, REVISION_LABEL } from '../labels.js';
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
import { CERT_OUTPUT_DIR, POD_INFO_DIR, PROXY_CONFIG_DIR, ROOT_CERT_CONFIGMAP, ROOT_CERT_DIR, SDS_SOCKET_DIR, TOKEN_AUDIENCE, TOKEN_DIR } from '../../agent/names.js';
import { agentLogLevelOfMesh } from '../../agent/settings.js';
import { sortKeys } from '../tree.js';
import { meshdAddress, renderedMeshConfig } from './meshd.js';
import { MESHD_SERVICE_ACCOUNT } from './base.js';
import { gatewayRules } from './rbac.js';
import type { ComponentName, K8sObject } from './types.js';

export type GatewayKind = 'ingress' | 'egress';

export const GATEWAY_CONTAINER = 'mesh-proxy';
export const STATUS_PORT = 15021;
export const PROXY_METRICS_PORT = 15090;

const DEFAULT_PORTS: Record<GatewayKind, ServicePort[]> = {
  ingress: [
    { name: 'status-port', port: STATUS_PORT, targetPort: STATUS_PORT, protocol: 'TCP' },
    { name: 'http2', port: 80, targetPort: 8080, protocol: 'TCP' },
    { name: 'https', port: 443, targetPort: 8443, protocol: 'TCP' },
  ],
  egress: [
    { name: 'http2', port: 80, targetPort: 8080, protocol: 'TCP' },
    { name: 'https', port: 443, targetPort: 8443, protocol: 'TCP' },
  ],
};

export function gatewayComponent(kind: GatewayKind): ComponentName {
  return kind === 'ingress' ? 'IngressGateways' : 'EgressGateways';
}

function servicePorts(kind: GatewayKind, gw: GatewaySpec): ServicePort[] {
  return (gw.k8s?.service?.ports ?? DEFAULT_PORTS[kind]).map((p) => {
    const out: ServicePort = { name: p.name, port: p.port, targetPort: p.targetPort ?? p.port, protocol: p.protocol ?? 'TCP' };
    if (p.nodePort !== undefined) out.nodePort = p.nodePort;
    return out;
  });
}

/** Container ports: status and metrics, then each numeric target port of the Service once. */
function containerPorts(ports: readonly ServicePort[]): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [
    { name: 'status-port', containerPort: STATUS_PORT, protocol: 'TCP' },
    { name: 'http-envoy-prom', containerPort: PROXY_METRICS_PORT, protocol: 'TCP' },
  ];
  const seen = new Set<number>([STATUS_PORT, PROXY_METRICS_PORT]);
  for (const p of ports) {
    if (typeof p.targetPort !== 'number' || seen.has(p.targetPort)) continue;
    seen.add(p.targetPort);
    out.push({ containerPort: p.targetPort, protocol: p.protocol ?? 'TCP' });
  }
  return out;
}

/**
 * What the agent reads (src/agent/settings.ts), as the injector's `gateway` template gives it:
 * the pod from the downward API, PROXY_CONFIG (the mesh config's proxy defaults with meshd's
 * address, so the agent dials this revision's meshd), CA_ADDR, the trust domain, the node metadata,
 * and the proxy defaults' proxyMetadata as variables.
 */
function gatewayEnv(ctx: RenderContext, gw: GatewaySpec): EnvVar[] {
  const proxyConfig: Record<string, unknown> = { discoveryAddress: meshdAddress(ctx), ...((renderedMeshConfig(ctx).defaultConfig as Record<string, unknown> | undefined) ?? {}) };
  const proxyMetadata = (proxyConfig.proxyMetadata ?? {}) as Record<string, string>;
  const base: EnvVar[] = [
    fieldEnv('POD_NAME', 'metadata.name'),
    fieldEnv('POD_NAMESPACE', 'metadata.namespace'),
    fieldEnv('INSTANCE_IP', 'status.podIP'),
    fieldEnv('SERVICE_ACCOUNT', 'spec.serviceAccountName'),
    fieldEnv('HOST_IP', 'status.hostIP'),
    { name: 'PROXY_CONFIG', value: JSON.stringify(sortKeys(proxyConfig)) },
    { name: 'CA_ADDR', value: ctx.values.global?.caAddress || String(proxyConfig.discoveryAddress) },
    { name: 'TRUST_DOMAIN', value: ctx.spec.meshConfig?.trustDomain || DNS_DOMAIN },
    { name: 'MESH_META_CLUSTER_ID', value: ctx.clusterId },
    { name: 'MESH_META_WORKLOAD_NAME', value: gw.name },
    { name: 'MESH_META_MESH_ID', value: ctx.spec.meshConfig?.trustDomain || DNS_DOMAIN },
    ...Object.keys(proxyMetadata).sort().map((k) => ({ name: k, value: String(proxyMetadata[k]) })),
  ];
  return mergeEnv(base, gw.k8s?.env);
}

function renderDeployment(ctx: RenderContext, component: ComponentName, gw: GatewaySpec, ns: string, labels: Record<string, string>, selector: Record<string, string>, ports: readonly ServicePort[]): K8sObject {
  const k8s = gw.k8s;
  const container: Record<string, unknown> = { name: GATEWAY_CONTAINER, image: imageOf(ctx, gw, 'proxy') };
  if (ctx.values.global?.imagePullPolicy) container.imagePullPolicy = ctx.values.global.imagePullPolicy;
  Object.assign(container, {
    args: [
      'proxy',
      'router',
      '--domain',
      `$(POD_NAMESPACE).svc.${DNS_DOMAIN}`,
      `--proxyLogLevel=${ctx.values.global?.proxy?.logLevel || 'warning'}`,
      // the values' level is meshd's too; the agent takes its default scope (as the injector does)
      `--log_output_level=${agentLogLevelOfMesh(ctx.values.global?.logging?.level)}`,
    ],
    ports: containerPorts(ports),
    readinessProbe: { httpGet: { path: '/healthz/ready', port: STATUS_PORT, scheme: 'HTTP' }, initialDelaySeconds: 1, periodSeconds: 2, timeoutSeconds: 1, failureThreshold: 30 },
    env: gatewayEnv(ctx, gw),
  });
  const resources = resourcesOf(k8s);
  if (resources) container.resources = resources;
  container.securityContext = {
    allowPrivilegeEscalation: false,
    privileged: false,
    readOnlyRootFilesystem: true,
    runAsUser: 1337,
    runAsGroup: 1337,
    runAsNonRoot: true,
    capabilities: { drop: ['ALL'] },
  };
  // read-only root: every path the agent writes is a volume (the SDS socket, the bootstrap, the certificate files)
  container.volumeMounts = [
    { name: 'workload-socket', mountPath: SDS_SOCKET_DIR },
    { name: 'mesh-envoy', mountPath: PROXY_CONFIG_DIR },
    { name: 'mesh-data', mountPath: CERT_OUTPUT_DIR },
    { name: 'mesh-podinfo', mountPath: POD_INFO_DIR },
    { name: 'mesh-token', mountPath: TOKEN_DIR, readOnly: true },
    { name: 'mesh-ca-root-cert', mountPath: ROOT_CERT_DIR, readOnly: true },
  ];
  const podSpec: Record<string, unknown> = {
    serviceAccountName: `${gw.name}-service-account`,
    ...podSettings(ctx, k8s),
    containers: [container],
    volumes: [
      { name: 'workload-socket', emptyDir: {} },
      { name: 'mesh-envoy', emptyDir: {} },
      { name: 'mesh-data', emptyDir: {} },
      // the node metadata's LABELS: what Gateway resources select the gateway by
      { name: 'mesh-podinfo', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }, { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } }] } },
      { name: 'mesh-token', projected: { sources: [{ serviceAccountToken: { audience: TOKEN_AUDIENCE, expirationSeconds: 43200, path: 'mesh-token' } }] } },
      { name: 'mesh-ca-root-cert', configMap: { name: ROOT_CERT_CONFIGMAP, optional: true } },
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
        labels: {
          ...selector,
          [REVISION_LABEL]: ctx.revisionLabel,
          [INJECT_POD_LABEL]: 'false',
          'service.mesh.io/canonical-name': gw.name,
          'service.mesh.io/canonical-revision': 'latest',
        },
        annotations: annotationsOf({ 'prometheus.io/path': '/stats/prometheus', 'prometheus.io/port': String(PROXY_METRICS_PORT), 'prometheus.io/scrape': 'true' }, k8s?.podAnnotations),
      },
      spec: podSpec,
    },
  });
  return { ...objectHead(ctx, component, 'apps/v1', 'Deployment', gw.name, { namespace: ns, labels }), spec };
}

function renderService(ctx: RenderContext, component: ComponentName, kind: GatewayKind, gw: GatewaySpec, ns: string, labels: Record<string, string>, selector: Record<string, string>, ports: readonly ServicePort[]): K8sObject {
  const svc = gw.k8s?.service;
  const spec: Record<string, unknown> = {
    type: svc?.type ?? (kind === 'ingress' ? 'LoadBalancer' : 'ClusterIP'),
    selector: { ...selector },
    ports: ports.map((p) => ({ ...p })),
  };
  if (svc?.loadBalancerIP) spec.loadBalancerIP = svc.loadBalancerIP;
  if (svc?.loadBalancerSourceRanges) spec.loadBalancerSourceRanges = [...svc.loadBalancerSourceRanges];
  if (svc?.externalTrafficPolicy) spec.externalTrafficPolicy = svc.externalTrafficPolicy;
  return { ...objectHead(ctx, component, 'v1', 'Service', gw.name, { namespace: ns, labels, annotations: gw.k8s?.serviceAnnotations }), spec };
}

/** Objects of one gateway (its overlays not yet applied). */
export function renderGateway(ctx: RenderContext, kind: GatewayKind, gw: GatewaySpec): K8sObject[] {
  const component = gatewayComponent(kind);
  const ns = gw.namespace || ctx.namespace;
  const selector = { app: gw.name, [GATEWAY_SELECTOR_LABEL]: `${kind}gateway`, ...(gw.label ?? {}) };
  const labels = { ...selector };
  const ports = servicePorts(kind, gw);
  const account = `${gw.name}-service-account`;
  const role = `${gw.name}-sds`;
  const rbac = 'rbac.authorization.k8s.io/v1';
  const objects: K8sObject[] = [];
  if (ns !== ctx.namespace) objects.push(objectHead(ctx, component, 'v1', 'Namespace', ns));
  objects.push(
    objectHead(ctx, component, 'v1', 'ServiceAccount', account, { namespace: ns, labels }),
    { ...objectHead(ctx, component, rbac, 'Role', role, { namespace: ns, labels }), rules: gatewayRules() },
    {
      ...objectHead(ctx, component, rbac, 'RoleBinding', role, { namespace: ns, labels }),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role },
      // meshd reads the Secrets its gateways name only where a gateway runs (docs/adr/0105)
      subjects: [subject(account, ns), ...(ns !== ctx.namespace ? [subject(MESHD_SERVICE_ACCOUNT, ctx.namespace)] : [])],
    },
    renderService(ctx, component, kind, gw, ns, labels, selector, ports),
    renderDeployment(ctx, component, gw, ns, labels, selector, ports),
  );
  if (gw.k8s?.hpaSpec) objects.push(renderHpa(ctx, component, gw.name, ns, labels, gw.k8s.hpaSpec));
  if (gw.k8s?.podDisruptionBudget) objects.push(renderPdb(ctx, component, gw.name, ns, labels, selector, gw.k8s.podDisruptionBudget));
  return objects;
}
