/**
 * Names the injector reads and writes on pods (docs/spec/CONVENTIONS.md; the annotations are those
 * of src/analysis/annotation-table.ts, which the analyzers check).
 */
export const PROXY_CONTAINER = 'mesh-proxy';
export const INIT_CONTAINER = 'mesh-init';
/** grpc-simple: the init step that writes the gRPC bootstrap. */
export const GRPC_BOOTSTRAP_INIT_CONTAINER = 'grpc-bootstrap-init';

export const LABELS = Object.freeze({
  inject: 'sidecar.mesh.io/inject',
  revision: 'mesh.io/rev',
  namespaceInjection: 'mesh-injection',
  tlsMode: 'security.mesh.io/tlsMode',
  canonicalName: 'service.mesh.io/canonical-name',
  canonicalRevision: 'service.mesh.io/canonical-revision',
});

export const ANNOTATIONS = Object.freeze({
  inject: 'sidecar.mesh.io/inject',
  status: 'sidecar.mesh.io/status',
  templates: 'inject.mesh.io/templates',
  legacyTemplates: 'sidecar.mesh.io/templates',
  proxyImage: 'sidecar.mesh.io/proxyImage',
  proxyCPU: 'sidecar.mesh.io/proxyCPU',
  proxyCPULimit: 'sidecar.mesh.io/proxyCPULimit',
  proxyMemory: 'sidecar.mesh.io/proxyMemory',
  proxyMemoryLimit: 'sidecar.mesh.io/proxyMemoryLimit',
  logLevel: 'sidecar.mesh.io/logLevel',
  componentLogLevel: 'sidecar.mesh.io/componentLogLevel',
  agentLogLevel: 'sidecar.mesh.io/agentLogLevel',
  interceptionMode: 'sidecar.mesh.io/interceptionMode',
  rewriteAppHTTPProbers: 'sidecar.mesh.io/rewriteAppHTTPProbers',
  discoveryAddress: 'sidecar.mesh.io/discoveryAddress',
  userVolume: 'sidecar.mesh.io/userVolume',
  userVolumeMount: 'sidecar.mesh.io/userVolumeMount',
  proxyConfig: 'proxy.mesh.io/config',
  statusPort: 'status.sidecar.mesh.io/port',
  readinessInitialDelay: 'readiness.status.sidecar.mesh.io/initialDelaySeconds',
  readinessPeriod: 'readiness.status.sidecar.mesh.io/periodSeconds',
  readinessFailureThreshold: 'readiness.status.sidecar.mesh.io/failureThreshold',
  includeOutboundIPRanges: 'traffic.sidecar.mesh.io/includeOutboundIPRanges',
  excludeOutboundIPRanges: 'traffic.sidecar.mesh.io/excludeOutboundIPRanges',
  includeInboundPorts: 'traffic.sidecar.mesh.io/includeInboundPorts',
  excludeInboundPorts: 'traffic.sidecar.mesh.io/excludeInboundPorts',
  includeOutboundPorts: 'traffic.sidecar.mesh.io/includeOutboundPorts',
  excludeOutboundPorts: 'traffic.sidecar.mesh.io/excludeOutboundPorts',
  mergeMetrics: 'prometheus.mesh.io/merge-metrics',
  defaultContainer: 'kubectl.kubernetes.io/default-container',
  defaultLogsContainer: 'kubectl.kubernetes.io/default-logs-container',
  prometheusScrape: 'prometheus.io/scrape',
  prometheusPort: 'prometheus.io/port',
  prometheusPath: 'prometheus.io/path',
});

/** The injection templates (CONVENTIONS.md). */
export const TEMPLATE_NAMES = ['sidecar', 'gateway', 'grpc-agent', 'grpc-simple'] as const;
export type TemplateName = (typeof TEMPLATE_NAMES)[number];

export function isTemplateName(name: string): name is TemplateName {
  return (TEMPLATE_NAMES as readonly string[]).includes(name);
}

/** Namespaces the injector never touches, whatever their labels. */
export const IGNORED_NAMESPACES: ReadonlyArray<string> = Object.freeze(['kube-system', 'kube-public', 'kube-node-lease', 'local-path-storage']);
