/**
 * The annotations of the mesh domain (`mesh.io` and its subdomains) the mesh reads, with the
 * kinds of resource each one applies to, the values it takes, and whether it is deprecated.
 * The annotations analyzer reports any other annotation of the domain as unknown.
 */

export type AnnotationValue = 'bool' | 'int' | 'duration' | 'string' | 'ip-ranges' | 'ports' | { readonly oneOf: ReadonlyArray<string> };

export interface AnnotationInfo {
  readonly name: string;
  /** Kinds it has an effect on; `Pod` covers pod templates of workloads. `*` means any resource. */
  readonly kinds: ReadonlyArray<string>;
  readonly value: AnnotationValue;
  /** Why it is deprecated and what to use instead. */
  readonly deprecated?: string;
}

const POD = ['Pod'];
const CONFIG_KINDS = [
  'AuthorizationPolicy',
  'DestinationRule',
  'EnvoyFilter',
  'Gateway',
  'PeerAuthentication',
  'ProxyConfig',
  'RequestAuthentication',
  'ServiceEntry',
  'Sidecar',
  'Telemetry',
  'VirtualService',
  'WorkloadEntry',
  'WorkloadGroup',
];

const a = (name: string, kinds: ReadonlyArray<string>, value: AnnotationValue, deprecated?: string): AnnotationInfo =>
  Object.freeze({ name, kinds, value, ...(deprecated ? { deprecated } : {}) });

export const ANNOTATIONS: ReadonlyArray<AnnotationInfo> = Object.freeze([
  a('sidecar.mesh.io/inject', POD, 'bool', 'use the sidecar.mesh.io/inject label'),
  a('sidecar.mesh.io/status', POD, 'string'),
  a('sidecar.mesh.io/proxyImage', POD, 'string'),
  a('sidecar.mesh.io/proxyCPU', POD, 'string'),
  a('sidecar.mesh.io/proxyCPULimit', POD, 'string'),
  a('sidecar.mesh.io/proxyMemory', POD, 'string'),
  a('sidecar.mesh.io/proxyMemoryLimit', POD, 'string'),
  a('sidecar.mesh.io/logLevel', POD, { oneOf: ['trace', 'debug', 'info', 'warning', 'error', 'critical', 'off'] }),
  a('sidecar.mesh.io/componentLogLevel', POD, 'string'),
  a('sidecar.mesh.io/agentLogLevel', POD, 'string'),
  a('sidecar.mesh.io/interceptionMode', POD, { oneOf: ['REDIRECT', 'TPROXY', 'NONE'] }),
  a('sidecar.mesh.io/rewriteAppHTTPProbers', POD, 'bool'),
  a('sidecar.mesh.io/enableCoreDump', POD, 'bool'),
  a('sidecar.mesh.io/bootstrapOverride', POD, 'string'),
  a('sidecar.mesh.io/discoveryAddress', POD, 'string'),
  a('sidecar.mesh.io/statsInclusionPrefixes', POD, 'string', 'use proxy.mesh.io/config proxyStatsMatcher'),
  a('sidecar.mesh.io/statsInclusionRegexps', POD, 'string', 'use proxy.mesh.io/config proxyStatsMatcher'),
  a('sidecar.mesh.io/statsInclusionSuffixes', POD, 'string', 'use proxy.mesh.io/config proxyStatsMatcher'),
  a('sidecar.mesh.io/extraStatTags', POD, 'string'),
  a('sidecar.mesh.io/userVolume', POD, 'string'),
  a('sidecar.mesh.io/userVolumeMount', POD, 'string'),
  a('sidecar.mesh.io/templates', POD, 'string', 'use inject.mesh.io/templates'),
  a('inject.mesh.io/templates', POD, 'string'),
  a('proxy.mesh.io/config', POD, 'string'),
  a('proxy.mesh.io/overrides', POD, 'string'),
  a('status.sidecar.mesh.io/port', POD, 'int'),
  a('readiness.status.sidecar.mesh.io/applicationPorts', POD, 'ports'),
  a('readiness.status.sidecar.mesh.io/initialDelaySeconds', POD, 'int'),
  a('readiness.status.sidecar.mesh.io/periodSeconds', POD, 'int'),
  a('readiness.status.sidecar.mesh.io/failureThreshold', POD, 'int'),
  a('traffic.sidecar.mesh.io/includeOutboundIPRanges', POD, 'ip-ranges'),
  a('traffic.sidecar.mesh.io/excludeOutboundIPRanges', POD, 'ip-ranges'),
  a('traffic.sidecar.mesh.io/includeInboundPorts', POD, 'ports'),
  a('traffic.sidecar.mesh.io/excludeInboundPorts', POD, 'ports'),
  a('traffic.sidecar.mesh.io/includeOutboundPorts', POD, 'ports'),
  a('traffic.sidecar.mesh.io/excludeOutboundPorts', POD, 'ports'),
  a('traffic.sidecar.mesh.io/kubevirtInterfaces', POD, 'string'),
  a('prometheus.mesh.io/merge-metrics', POD, 'bool'),
  a('networking.mesh.io/exportTo', ['Service'], 'string'),
  a('mesh.io/dry-run', ['AuthorizationPolicy'], 'bool'),
  a('mesh.io/rev', ['Namespace', 'Pod'], 'string', 'use the mesh.io/rev label'),
  a('mesh.io/autoRegistrationGroup', ['WorkloadEntry'], 'string'),
  a('mesh.io/connectedAt', ['WorkloadEntry'], 'string'),
  a('mesh.io/disconnectedAt', ['WorkloadEntry'], 'string'),
  a('mesh.io/workloadController', ['WorkloadEntry'], 'string'),
  a('policy.mesh.io/check', POD, 'string', 'the policy check it configured no longer exists'),
  a('kubectl.kubernetes.io/default-container', POD, 'string'),
  a('operator.mesh.io/managed', ['*'], 'string'),
  a('operator.mesh.io/component', ['*'], 'string'),
  a('install.mesh.io/owning-resource', ['*'], 'string'),
  a('install.mesh.io/owning-resource-namespace', ['*'], 'string'),
  a('install.mesh.io/meshctl-version', ['*'], 'string'),
  a('mesh.io/gateway-api-source', CONFIG_KINDS, 'string'),
]);

const BY_NAME = new Map(ANNOTATIONS.map((x) => [x.name, x]));

export function annotationInfo(name: string): AnnotationInfo | undefined {
  return BY_NAME.get(name);
}

/** True for names in the mesh domain: `mesh.io/x` or `<sub>.mesh.io/x`. */
export function inMeshDomain(name: string): boolean {
  const slash = name.indexOf('/');
  if (slash < 0) return false;
  const prefix = name.slice(0, slash);
  return prefix === 'mesh.io' || prefix.endsWith('.mesh.io');
}

const BOOL = new Set(['true', 'false', '1', '0', 't', 'f', 'TRUE', 'FALSE', 'True', 'False', 'T', 'F']);

/** Why `value` is not a value of `info`, or undefined. */
export function annotationValueProblem(info: AnnotationInfo, value: string): string | undefined {
  const v = info.value;
  if (v === 'bool') return BOOL.has(value) ? undefined : `"${value}" is not a boolean (true or false)`;
  if (v === 'int') return /^\d+$/.test(value) ? undefined : `"${value}" is not a whole number`;
  if (v === 'ports') {
    return value === '*' || value.split(',').every((p) => p.trim() === '' || (/^\d+$/.test(p.trim()) && Number(p) >= 1 && Number(p) <= 65535))
      ? undefined
      : `"${value}" is not a comma-separated list of ports`;
  }
  if (v === 'ip-ranges') {
    const ok = value === '*' || value.split(',').every((r) => r.trim() === '' || /^[0-9a-fA-F:.]+(\/\d{1,3})?$/.test(r.trim()));
    return ok ? undefined : `"${value}" is not a comma-separated list of CIDR blocks`;
  }
  if (typeof v === 'object') return v.oneOf.includes(value) ? undefined : `"${value}" is not one of ${v.oneOf.join(', ')}`;
  return undefined;
}
