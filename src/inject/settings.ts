/**
 * The proxy settings of one pod: the injector's values, the mesh config's proxy defaults and the
 * pod's public injection annotations, in that order of precedence (an annotation wins). Every
 * annotation value is checked here; a bad one is an InjectionError naming the annotation.
 */
import { isIP } from 'node:net';
import { PROXY_INBOUND_EXCLUDED_PORTS, PROXY_PORTS } from '../agent/names.js';
import { agentLogLevelOfMesh, parseAgentLevel, proxyComponentLevelProblem } from '../agent/settings.js';
import { readYaml } from '../util/yaml.js';
import { parseProxyDefaults, type InjectionInputs, type ProxyDefaults } from './config.js';
import { InjectionError } from './errors.js';
import { ANNOTATIONS, isTemplateName, TEMPLATE_NAMES, type TemplateName } from './names.js';
import type { Pod, Volume, VolumeMount } from './pod.js';

export type InterceptionMode = 'REDIRECT' | 'NONE';

export interface CaptureSettings {
  readonly includeOutboundIPRanges: string;
  readonly excludeOutboundIPRanges: string;
  readonly includeInboundPorts: string;
  readonly excludeInboundPorts: string;
  readonly includeOutboundPorts: string;
  readonly excludeOutboundPorts: string;
}

export interface ProxySettings {
  readonly templates: ReadonlyArray<TemplateName>;
  readonly image: string;
  readonly imagePullPolicy?: string;
  readonly imagePullSecrets: ReadonlyArray<string>;
  readonly resources: { readonly requests?: Record<string, string>; readonly limits?: Record<string, string> };
  readonly logLevel: string;
  readonly componentLogLevel: string;
  readonly agentLogLevel: string;
  readonly interceptionMode: InterceptionMode;
  readonly capture: CaptureSettings;
  readonly rewriteProbes: boolean;
  readonly statusPort: number;
  readonly readiness: { readonly initialDelaySeconds: number; readonly periodSeconds: number; readonly failureThreshold: number };
  /** The mesh's proxy defaults with the pod's `proxy.mesh.io/config` over them (the agent's PROXY_CONFIG). */
  readonly proxyConfig: ProxyDefaults;
  /** `host:port` of meshd's secured port. */
  readonly discoveryAddress: string;
  /** `host:port` of the certificate service. */
  readonly caAddress: string;
  readonly holdApplication: boolean;
  readonly nativeSidecar: boolean;
  readonly userVolumes: ReadonlyArray<Volume>;
  readonly userVolumeMounts: ReadonlyArray<VolumeMount>;
  readonly trustDomain: string;
  readonly clusterId: string;
  readonly meshId: string;
  readonly network: string;
  readonly jwtPolicy: string;
  readonly mergeMetrics: boolean;
  readonly revision: string;
  readonly meshNamespace: string;
}

const LOG_LEVELS = ['trace', 'debug', 'info', 'warning', 'error', 'critical', 'off'];
const QUANTITY = /^[+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/;
const TRUE = new Set(['true', 'True', 'TRUE', '1', 't', 'T']);
const FALSE = new Set(['false', 'False', 'FALSE', '0', 'f', 'F']);

const annotationPath = (name: string): string => `metadata.annotations["${name}"]`;

function bad(name: string, reason: string): never {
  throw new InjectionError(annotationPath(name), reason);
}

function boolAnnotation(a: Readonly<Record<string, string>>, name: string): boolean | undefined {
  const v = a[name];
  if (v === undefined) return undefined;
  if (TRUE.has(v)) return true;
  if (FALSE.has(v)) return false;
  return bad(name, `${JSON.stringify(v)} is not a boolean (true or false)`);
}

function intAnnotation(a: Readonly<Record<string, string>>, name: string, min: number, max: number): number | undefined {
  const v = a[name];
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) bad(name, `${JSON.stringify(v)} is not a whole number from ${min} to ${max}`);
  return Number(v);
}

/** A comma-separated list of CIDR blocks (or `*`), normalised; throws naming `name`. */
export function checkIpRanges(value: string, name: string): string {
  const v = value.trim();
  if (v === '*' || v === '') return v;
  const parts = v.split(',').map((p) => p.trim()).filter((p) => p !== '');
  for (const p of parts) {
    const [addr, prefix, ...rest] = p.split('/');
    const family = isIP(addr ?? '');
    const max = family === 6 ? 128 : 32;
    if (rest.length > 0 || family === 0 || (prefix !== undefined && (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max))) {
      bad(name, `${JSON.stringify(p)} is not a CIDR block (like 10.0.0.0/8)`);
    }
  }
  return parts.join(',');
}

/** A comma-separated list of ports (or `*`), normalised; throws naming `name`. */
export function checkPorts(value: string, name: string): string {
  const v = value.trim();
  if (v === '*' || v === '') return v;
  const parts = v.split(',').map((p) => p.trim()).filter((p) => p !== '');
  for (const p of parts) if (!/^\d{1,5}$/.test(p) || Number(p) < 1 || Number(p) > 65535) bad(name, `${JSON.stringify(p)} is not a port (1 to 65535)`);
  return parts.join(',');
}

function quantity(a: Readonly<Record<string, string>>, name: string): string | undefined {
  const v = a[name];
  if (v === undefined) return undefined;
  if (!QUANTITY.test(v)) bad(name, `${JSON.stringify(v)} is not a Kubernetes quantity (like 100m, 0.5, 128Mi)`);
  return v;
}

function jsonMap<T>(a: Readonly<Record<string, string>>, name: string): Record<string, T> {
  const v = a[name];
  if (v === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch {
    return bad(name, 'is not JSON (a map from names to objects)');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) bad(name, 'is not a JSON map from names to objects');
  for (const [k, x] of Object.entries(parsed as Record<string, unknown>)) {
    if (x === null || typeof x !== 'object' || Array.isArray(x)) bad(name, `entry ${JSON.stringify(k)} is not an object`);
  }
  return parsed as Record<string, T>;
}

function hostPort(value: string, name: string): string {
  const m = /^([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(value);
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) bad(name, `${JSON.stringify(value)} is not host:port`);
  return value;
}

/** Merges proxy defaults field by field, `over` winning; proxyMetadata maps merge. */
export function mergeProxyDefaults(base: ProxyDefaults | undefined, over: ProxyDefaults | undefined): ProxyDefaults {
  const out: ProxyDefaults = { ...(base ?? {}), ...(over ?? {}) };
  if (base?.proxyMetadata || over?.proxyMetadata) out.proxyMetadata = { ...(base?.proxyMetadata ?? {}), ...(over?.proxyMetadata ?? {}) };
  return out;
}

function stringValues(m: Readonly<Record<string, string | number>> | undefined): Record<string, string> | undefined {
  if (!m) return undefined;
  return Object.fromEntries(Object.entries(m).map(([k, v]) => [k, String(v)]));
}

/** The templates the pod asks for (`inject.mesh.io/templates`, comma-separated), else the config's defaults. */
export function templatesOf(pod: Pod, defaults: ReadonlyArray<TemplateName>): TemplateName[] {
  const a = pod.metadata?.annotations ?? {};
  const name = a[ANNOTATIONS.templates] !== undefined ? ANNOTATIONS.templates : ANNOTATIONS.legacyTemplates;
  const raw = a[name];
  if (raw === undefined) return [...defaults];
  const names = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (names.length === 0) bad(name, `empty; name one of ${TEMPLATE_NAMES.join(', ')}`);
  const unknown = names.filter((n) => !isTemplateName(n));
  if (unknown.length > 0) bad(name, `${unknown.map((u) => JSON.stringify(u)).join(', ')}: no such template (templates: ${TEMPLATE_NAMES.join(', ')})`);
  const distinct = [...new Set(names)];
  if (distinct.length > 1) bad(name, `${distinct.join(' and ')} each give the pod its proxy; name one of them`);
  return distinct as TemplateName[];
}

/** Resolves the settings of `pod`; throws InjectionError for a bad annotation. */
export function proxySettings(pod: Pod, inputs: InjectionInputs): ProxySettings {
  const a = pod.metadata?.annotations ?? {};
  const g = inputs.values.global ?? {};
  const p = g.proxy ?? {};
  const templates = templatesOf(pod, inputs.config.defaultTemplates);

  let annotated: ProxyDefaults | undefined;
  if (a[ANNOTATIONS.proxyConfig] !== undefined) {
    let doc: unknown;
    try {
      doc = readYaml(a[ANNOTATIONS.proxyConfig] as string);
    } catch (e) {
      bad(ANNOTATIONS.proxyConfig, `invalid YAML: ${e instanceof Error ? e.message : String(e)}`);
    }
    try {
      annotated = parseProxyDefaults(doc ?? {}, annotationPath(ANNOTATIONS.proxyConfig));
    } catch (e) {
      throw new InjectionError(annotationPath(ANNOTATIONS.proxyConfig), e instanceof Error ? e.message.replace(`${annotationPath(ANNOTATIONS.proxyConfig)}: `, '') : String(e));
    }
  }
  const proxyConfig = mergeProxyDefaults(inputs.mesh.defaultConfig, annotated);

  const hub = g.hub || 'docker.io/meshproject';
  const tag = g.tag || 'latest';
  const variant = proxyConfig.image?.imageType && proxyConfig.image.imageType !== 'default' ? `-${proxyConfig.image.imageType}` : '';
  const image = a[ANNOTATIONS.proxyImage] ?? (g.proxyImage ? `${g.proxyImage}${variant}` : `${hub}/proxy:${tag}${variant}`);
  if (a[ANNOTATIONS.proxyImage] !== undefined && !/^\S+$/.test(image)) bad(ANNOTATIONS.proxyImage, `${JSON.stringify(image)} is not an image reference`);

  const requests = { ...(stringValues(p.resources?.requests) ?? { cpu: '100m', memory: '128Mi' }) };
  const limits = { ...(stringValues(p.resources?.limits) ?? { cpu: '2000m', memory: '1024Mi' }) };
  const cpu = quantity(a, ANNOTATIONS.proxyCPU);
  const memory = quantity(a, ANNOTATIONS.proxyMemory);
  const cpuLimit = quantity(a, ANNOTATIONS.proxyCPULimit);
  const memoryLimit = quantity(a, ANNOTATIONS.proxyMemoryLimit);
  if (cpu !== undefined) requests.cpu = cpu;
  if (memory !== undefined) requests.memory = memory;
  if (cpuLimit !== undefined) limits.cpu = cpuLimit;
  if (memoryLimit !== undefined) limits.memory = memoryLimit;

  const logLevel = a[ANNOTATIONS.logLevel] ?? p.logLevel ?? 'warning';
  if (!LOG_LEVELS.includes(logLevel)) bad(ANNOTATIONS.logLevel, `${JSON.stringify(logLevel)} is not one of ${LOG_LEVELS.join(', ')}`);
  const componentLogLevel = a[ANNOTATIONS.componentLogLevel] ?? p.componentLogLevel ?? 'misc:error';
  const componentProblem = proxyComponentLevelProblem(componentLogLevel);
  if (componentProblem) bad(ANNOTATIONS.componentLogLevel, componentProblem);
  // The annotation is the agent's own and must be what it runs with; the values' level is the
  // control plane's (meshd's scopes too), of which the agent takes its default level.
  const annotatedAgentLevel = a[ANNOTATIONS.agentLogLevel];
  const agentLogLevel = annotatedAgentLevel ?? agentLogLevelOfMesh(g.logging?.level);
  const agentLevelCheck = parseAgentLevel(agentLogLevel);
  if ('problem' in agentLevelCheck) {
    if (annotatedAgentLevel !== undefined) bad(ANNOTATIONS.agentLogLevel, agentLevelCheck.problem);
    throw new InjectionError('values.global.logging.level', `${JSON.stringify(g.logging?.level)}: its default level: ${agentLevelCheck.problem}`);
  }

  const modeRaw = a[ANNOTATIONS.interceptionMode] ?? p.interceptionMode ?? proxyConfig.interceptionMode ?? 'REDIRECT';
  if (modeRaw === 'TPROXY') bad(ANNOTATIONS.interceptionMode, 'TPROXY is not supported by mesh-agent capture; use REDIRECT (or NONE for no capture)');
  if (modeRaw !== 'REDIRECT' && modeRaw !== 'NONE') bad(ANNOTATIONS.interceptionMode, `${JSON.stringify(modeRaw)} is not one of REDIRECT, NONE`);

  const excludedInbound = new Set(PROXY_INBOUND_EXCLUDED_PORTS.map(String));
  const userExcludedInbound = checkPorts(a[ANNOTATIONS.excludeInboundPorts] ?? p.excludeInboundPorts ?? '', ANNOTATIONS.excludeInboundPorts);
  for (const port of userExcludedInbound.split(',').filter((x) => x !== '')) excludedInbound.add(port);
  const capture: CaptureSettings = {
    includeOutboundIPRanges: checkIpRanges(a[ANNOTATIONS.includeOutboundIPRanges] ?? p.includeIPRanges ?? '*', ANNOTATIONS.includeOutboundIPRanges),
    excludeOutboundIPRanges: checkIpRanges(a[ANNOTATIONS.excludeOutboundIPRanges] ?? p.excludeIPRanges ?? '', ANNOTATIONS.excludeOutboundIPRanges),
    includeInboundPorts: checkPorts(a[ANNOTATIONS.includeInboundPorts] ?? p.includeInboundPorts ?? '*', ANNOTATIONS.includeInboundPorts),
    excludeInboundPorts: [...excludedInbound].sort((x, y) => Number(x) - Number(y)).join(','),
    includeOutboundPorts: checkPorts(a[ANNOTATIONS.includeOutboundPorts] ?? p.includeOutboundPorts ?? '', ANNOTATIONS.includeOutboundPorts),
    excludeOutboundPorts: checkPorts(a[ANNOTATIONS.excludeOutboundPorts] ?? p.excludeOutboundPorts ?? '', ANNOTATIONS.excludeOutboundPorts),
  };

  const statusPort = intAnnotation(a, ANNOTATIONS.statusPort, 0, 65535) ?? proxyConfig.statusPort ?? PROXY_PORTS.status;
  const discoveryAddress = a[ANNOTATIONS.discoveryAddress] !== undefined
    ? hostPort(a[ANNOTATIONS.discoveryAddress] as string, ANNOTATIONS.discoveryAddress)
    : (proxyConfig.discoveryAddress || g.discoveryAddress || `meshd.${g.meshNamespace || 'mesh-system'}.svc:15012`);
  const nativeSidecar = g.nativeSidecar ?? inputs.clusterSupportsNativeSidecars;

  return {
    templates,
    image,
    imagePullPolicy: g.imagePullPolicy,
    imagePullSecrets: g.imagePullSecrets ?? [],
    resources: { requests, limits },
    logLevel,
    componentLogLevel,
    agentLogLevel,
    interceptionMode: modeRaw,
    capture,
    rewriteProbes: boolAnnotation(a, ANNOTATIONS.rewriteAppHTTPProbers) ?? inputs.values.sidecarInjectorWebhook?.rewriteAppHTTPProbe ?? true,
    statusPort,
    readiness: {
      initialDelaySeconds: intAnnotation(a, ANNOTATIONS.readinessInitialDelay, 0, 3600) ?? p.readinessInitialDelaySeconds ?? 0,
      periodSeconds: intAnnotation(a, ANNOTATIONS.readinessPeriod, 1, 3600) ?? p.readinessPeriodSeconds ?? 15,
      failureThreshold: intAnnotation(a, ANNOTATIONS.readinessFailureThreshold, 1, 1000) ?? p.readinessFailureThreshold ?? 4,
    },
    proxyConfig: { ...proxyConfig, discoveryAddress },
    discoveryAddress,
    caAddress: g.caAddress || discoveryAddress,
    holdApplication: proxyConfig.holdApplicationUntilProxyStarts ?? p.holdApplicationUntilProxyStarts ?? false,
    nativeSidecar,
    userVolumes: Object.entries(jsonMap<Volume>(a, ANNOTATIONS.userVolume)).map(([name, v]) => ({ ...v, name })),
    userVolumeMounts: Object.entries(jsonMap<VolumeMount>(a, ANNOTATIONS.userVolumeMount)).map(([name, m]) => ({ ...m, name })),
    trustDomain: g.trustDomain || inputs.mesh.trustDomain || 'cluster.local',
    clusterId: g.multiCluster?.clusterName || 'Cluster',
    meshId: proxyConfig.meshId || g.meshID || g.trustDomain || inputs.mesh.trustDomain || 'cluster.local',
    network: g.network ?? '',
    jwtPolicy: g.jwtPolicy ?? 'third-party-jwt',
    mergeMetrics: boolAnnotation(a, ANNOTATIONS.mergeMetrics) ?? true,
    revision: inputs.revision || 'default',
    meshNamespace: g.meshNamespace || 'mesh-system',
  };
}
