/**
 * What the agent runs with, from what the injector gives the proxy container (src/inject/
 * templates.ts): its arguments (`proxy sidecar|router [--mode grpc] --domain ... --proxyLogLevel
 * ... --proxyComponentLogLevel ... --log_output_level ... [--statusPort n]`), the variables of the
 * downward API and the mesh (POD_NAME, POD_NAMESPACE, INSTANCE_IP, SERVICE_ACCOUNT, HOST_IP,
 * JWT_POLICY, CA_ADDR, PROXY_CONFIG, TRUST_DOMAIN, MESH_META_*, MESH_KUBE_APP_PROBERS,
 * MESH_PROMETHEUS_ANNOTATIONS, REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION) and the files it
 * mounts (token, root, pod labels). Every value is checked here; a bad or unsupported one is an
 * AgentSettingsError naming the flag or variable. No I/O: the caller reads files.
 */
import { isIP } from 'node:net';
import { z } from 'zod';
import { ProxyDefaultsSchema, type ProxyDefaults } from '../gen/config/schemas.js';
import { durationMs } from '../util/config-duration.js';
import { parseBool } from '../util/parse.js';
import {
  APP_HEALTH_PREFIX,
  APP_PROBERS_ENV,
  CERT_OUTPUT_DIR,
  META_ENV_PREFIX,
  POD_INFO_DIR,
  PROMETHEUS_ANNOTATIONS_ENV,
  PROXY_CONFIG_DIR,
  PROXY_PORTS,
  ROOT_CERT_PATH,
  SDS_SOCKET_PATH,
  TOKEN_PATH,
} from './names.js';

export class AgentSettingsError extends Error {
  override readonly name = 'AgentSettingsError';
  readonly exitCode = 2;
}

const bad = (what: string, reason: string): never => {
  throw new AgentSettingsError(`${what}: ${reason}`);
};

/** One application probe the agent runs for the kubelet (the injector's AppProber). */
const ProberSchema = z.strictObject({
  httpGet: z
    .strictObject({
      path: z.string().optional(),
      port: z.number().int().min(1).max(65535),
      scheme: z.enum(['HTTP', 'HTTPS']).optional(),
      host: z.string().optional(),
      httpHeaders: z.array(z.strictObject({ name: z.string(), value: z.string() })).optional(),
    })
    .optional(),
  tcpSocket: z.strictObject({ port: z.number().int().min(1).max(65535), host: z.string().optional() }).optional(),
  timeoutSeconds: z.number().int().min(1).optional(),
});
export type AppProber = z.infer<typeof ProberSchema>;

/** The flags of `mesh-agent proxy`, as commander hands them over (strings). */
export interface ProxyFlags {
  readonly mode?: string;
  readonly domain?: string;
  readonly proxyLogLevel?: string;
  readonly proxyComponentLogLevel?: string;
  readonly log_output_level?: string;
  readonly statusPort?: string;
  readonly healthPort?: string;
  readonly envoyBinary?: string;
  readonly tokenPath?: string;
  readonly rootCertPath?: string;
  readonly sdsSocket?: string;
  readonly configDir?: string;
  readonly certDir?: string;
  readonly podInfoDir?: string;
  readonly xdsServerName?: string;
  readonly caServerName?: string;
  readonly secretTtl?: string;
  readonly secretGracePeriodRatio?: string;
}

export interface AgentSettings {
  readonly kind: 'sidecar' | 'router';
  /** `envoy`: run Envoy with SDS; `grpc`: write the gRPC xDS bootstrap and certificate files. */
  readonly mode: 'envoy' | 'grpc';
  readonly podName: string;
  readonly namespace: string;
  readonly instanceIps: ReadonlyArray<string>;
  readonly serviceAccount: string;
  /** `<namespace>.svc.<cluster domain>`, the node id's last part. */
  readonly dnsDomain: string;
  readonly trustDomain: string;
  /** `spiffe://<trust domain>/ns/<namespace>/sa/<service account>`. */
  readonly identity: string;
  readonly proxyConfig: ProxyDefaults;
  /** meshd's secured xDS address and the certificate service's, `host:port`. */
  readonly discoveryAddress: string;
  readonly caAddress: string;
  /** The name meshd's certificate is checked for (default: the host of the address). */
  readonly xdsServerName: string;
  /**
   * The name the certificate service's certificate is checked for: --caServerName, else the host
   * of CA_ADDR (--xdsServerName when CA_ADDR is meshd's host, as it is by default).
   */
  readonly caServerName: string;
  /** Node metadata from MESH_META_* and the pod (strings, and LABELS). */
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly paths: {
    readonly token: string;
    readonly rootCert: string;
    readonly sdsSocket: string;
    readonly configDir: string;
    readonly certDir: string;
    readonly podInfoDir: string;
    readonly envoyBinary: string;
  };
  readonly ports: { readonly admin: number; readonly status: number; readonly health: number; readonly envoyPrometheus: number };
  readonly proxyLogLevel: string;
  readonly proxyComponentLogLevel: string;
  /** pino level of the agent's own log (`default` scope of --log_output_level). */
  readonly agentLogLevel: 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
  readonly secretTtlSeconds: number;
  readonly secretGraceRatio: number;
  readonly concurrency: number;
  readonly drainDurationMs: number;
  /** Rewritten probes: agent path (`/app-health/<container>/<kind>`) → original probe. */
  readonly appProbers: Readonly<Record<string, AppProber>>;
  /** The pod's own scrape target for merged metrics, if annotated. */
  readonly appMetrics?: { readonly port: number; readonly path: string };
  /** Probe the application on localhost rather than the pod IP. */
  readonly probeLocalhost: boolean;
  /**
   * MESH_META_DNS_CAPTURE: the agent answers the application's DNS on 127.0.0.1:15053 from meshd's
   * name table (docs/adr/0187); with MESH_META_DNS_AUTO_ALLOCATE also hosts without addresses.
   */
  readonly dnsCapture: boolean;
}

const ENVOY_LEVELS = ['trace', 'debug', 'info', 'warning', 'warn', 'error', 'critical', 'off'];
const AGENT_LEVELS = { debug: 'debug', info: 'info', warn: 'warn', error: 'error', fatal: 'fatal', none: 'silent' } as const;

function port(text: string | undefined, fallback: number, what: string): number {
  if (text === undefined) return fallback;
  if (!/^\d{1,5}$/.test(text) || Number(text) < 1 || Number(text) > 65535) bad(what, `${JSON.stringify(text)} is not a port (1 to 65535)`);
  return Number(text);
}

function hostPort(value: string, what: string): string {
  const m = /^([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(value);
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) bad(what, `${JSON.stringify(value)} is not host:port`);
  return value;
}

function required(env: Readonly<Record<string, string | undefined>>, name: string): string {
  const v = env[name];
  if (v === undefined || v === '') return bad(name, 'is not set (the injector sets it from the downward API)');
  return v;
}

/** Why `text` is not Envoy's `<component>:<level>[,...]`, or undefined when it is. */
export function proxyComponentLevelProblem(text: string): string | undefined {
  for (const part of text.split(',').filter(Boolean)) {
    const [c, l, ...rest] = part.split(':');
    if (!c || !/^[a-z0-9_]+$/.test(c) || !l || rest.length > 0 || !ENVOY_LEVELS.includes(l)) return `${JSON.stringify(part)} is not <component>:<level> (levels ${ENVOY_LEVELS.join(', ')})`;
  }
  return undefined;
}

/**
 * The scopes of the agent's `--log_output_level`: `default` (or `all`) is the proxy agent's own
 * log; `capture` is the init step's (the injector gives both containers the same value, and
 * `mesh-agent capture` reads its scope, else default).
 */
export const AGENT_LOG_SCOPES: ReadonlyArray<string> = ['default', 'all', 'capture'];

/**
 * `default:info,capture:debug` → the proxy agent's level, or why the text is not one (scopes other
 * than AGENT_LOG_SCOPES are refused).
 */
export function parseAgentLevel(text: string): { level: AgentSettings['agentLogLevel'] } | { problem: string } {
  let level: AgentSettings['agentLogLevel'] = 'info';
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const [scope, lvl, ...rest] = part.split(':');
    if (rest.length > 0 || !scope || !lvl || !(lvl in AGENT_LEVELS)) return { problem: `${JSON.stringify(part)} is not <scope>:<level> (levels ${Object.keys(AGENT_LEVELS).join(', ')})` };
    if (!AGENT_LOG_SCOPES.includes(scope)) return { problem: `scope ${JSON.stringify(scope)}: the agent logs under default (or all), its init step under capture` };
    if (scope !== 'capture') level = AGENT_LEVELS[lvl as keyof typeof AGENT_LEVELS];
  }
  return { level };
}

/** parseAgentLevel for --log_output_level, refusing by name. */
export function agentLevel(text: string): AgentSettings['agentLogLevel'] {
  const r = parseAgentLevel(text);
  return 'level' in r ? r.level : bad('--log_output_level', r.problem);
}

/**
 * The agent's part of the control plane's `values.global.logging.level` (meshd's
 * `--log_output_level`, whose other scopes — ads, model, ... — are meshd's own): the level of its
 * last `default` or `all` entry as `default:<level>`, else `default:info`. The level itself is not
 * checked here; agentLevel checks the result.
 */
export function agentLogLevelOfMesh(meshLevels: string | undefined): string {
  let level = 'info';
  for (const part of (meshLevels ?? '').split(',').map((p) => p.trim()).filter(Boolean)) {
    const colon = part.lastIndexOf(':');
    const scope = colon < 0 ? 'default' : part.slice(0, colon);
    if (scope === 'default' || scope === 'all') level = part.slice(colon + 1);
  }
  return `default:${level}`;
}

/**
 * Tracing defaults of PROXY_CONFIG. The agent writes no tracer into the bootstrap: the public
 * ProxyConfig names no collector, and spans are a listener's setting (meshd's HCM tracing), which
 * reads these values from the node metadata (PROXY_CONFIG) the agent sends. Checked here so a
 * wrong value is refused at start-up by name (docs/adr/0143).
 */
function checkTracing(t: ProxyDefaults['tracing']): void {
  if (!t) return;
  if (t.sampling !== undefined && !(t.sampling >= 0 && t.sampling <= 100)) bad('PROXY_CONFIG.tracing.sampling', `${t.sampling} is not a percentage from 0 to 100`);
}

/** Downward-API file text (`key="value"` per line, values quoted Go-style) → map. */
export function parseDownwardMap(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq <= 0) continue;
    const raw = line.slice(eq + 1).trim();
    let value = raw;
    if (raw.startsWith('"')) {
      try {
        value = JSON.parse(raw) as string;
      } catch {
        value = raw.slice(1, -1);
      }
    }
    out[line.slice(0, eq).trim()] = value;
  }
  return out;
}

/** The settings of `mesh-agent proxy <kind>` from its flags, environment and pod labels (the downward-API file's text, if any). */
export function agentSettings(kindArg: string, flags: ProxyFlags, env: Readonly<Record<string, string | undefined>>, podLabels?: Readonly<Record<string, string>>): AgentSettings {
  if (kindArg !== 'sidecar' && kindArg !== 'router') bad('proxy type', `${JSON.stringify(kindArg)} is not sidecar or router`);
  const kind = kindArg as 'sidecar' | 'router';
  const mode = flags.mode === undefined || flags.mode === '' ? 'envoy' : flags.mode === 'grpc' ? 'grpc' : bad('--mode', `${JSON.stringify(flags.mode)} is not supported (only grpc, or no --mode for Envoy)`);
  if (mode === 'grpc' && kind !== 'sidecar') bad('--mode', 'grpc is for `proxy sidecar` only');
  const jwt = env.JWT_POLICY ?? 'third-party-jwt';
  if (jwt !== 'third-party-jwt') bad('JWT_POLICY', `${JSON.stringify(jwt)} is not supported (the agent uses the projected token, third-party-jwt)`);

  const podName = required(env, 'POD_NAME');
  const namespace = required(env, 'POD_NAMESPACE');
  const serviceAccount = required(env, 'SERVICE_ACCOUNT');
  const instanceIps = required(env, 'INSTANCE_IP').split(',').map((s) => s.trim()).filter(Boolean);
  for (const ip of instanceIps) if (isIP(ip) === 0) bad('INSTANCE_IP', `${JSON.stringify(ip)} is not an IP address`);
  const trustDomain = env.TRUST_DOMAIN || 'cluster.local';
  if (!/^[a-z0-9.-]+$/.test(trustDomain)) bad('TRUST_DOMAIN', `${JSON.stringify(trustDomain)} is not a trust domain (lower-case letters, digits, dots, dashes)`);

  let proxyConfig: ProxyDefaults = {};
  if (env.PROXY_CONFIG) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(env.PROXY_CONFIG);
    } catch {
      bad('PROXY_CONFIG', 'is not JSON');
    }
    const r = ProxyDefaultsSchema.safeParse(parsed);
    if (!r.success) bad('PROXY_CONFIG', r.error.issues.map((i) => `${i.path.join('.') || '(top)'}: ${i.message}`).join('; '));
    proxyConfig = r.data as ProxyDefaults;
  }
  checkTracing(proxyConfig.tracing);
  if (proxyConfig.configPath && proxyConfig.configPath !== PROXY_CONFIG_DIR && !flags.configDir) bad('PROXY_CONFIG.configPath', `only ${PROXY_CONFIG_DIR} is supported (the injector mounts it)`);
  const discoveryAddress = hostPort(proxyConfig.discoveryAddress || `meshd.mesh-system.svc:15012`, 'PROXY_CONFIG.discoveryAddress');
  const caAddress = hostPort(env.CA_ADDR || discoveryAddress, 'CA_ADDR');
  const serverHost = (a: string): string => a.slice(0, a.lastIndexOf(':')).replace(/^\[|\]$/g, '');
  const xdsServerName = flags.xdsServerName || serverHost(discoveryAddress);
  const caServerName = flags.caServerName || (serverHost(caAddress) === serverHost(discoveryAddress) ? xdsServerName : serverHost(caAddress));
  for (const [flag, name] of [['--xdsServerName', flags.xdsServerName], ['--caServerName', flags.caServerName]] as const) {
    if (name !== undefined && name !== '' && !/^[A-Za-z0-9.-]+$/.test(name)) bad(flag, `${JSON.stringify(name)} is not a DNS name`);
  }

  const domain = flags.domain || `${namespace}.svc.cluster.local`;
  if (!/^[A-Za-z0-9.-]+$/.test(domain)) bad('--domain', `${JSON.stringify(domain)} is not a DNS domain (was $(POD_NAMESPACE) expanded?)`);

  const proxyLogLevel = flags.proxyLogLevel ?? 'warning';
  if (!ENVOY_LEVELS.includes(proxyLogLevel)) bad('--proxyLogLevel', `${JSON.stringify(proxyLogLevel)} is not one of ${ENVOY_LEVELS.join(', ')}`);
  const proxyComponentLogLevel = flags.proxyComponentLogLevel ?? '';
  const componentProblem = proxyComponentLevelProblem(proxyComponentLogLevel);
  if (componentProblem) bad('--proxyComponentLogLevel', componentProblem);

  const metadata: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(env)) if (k.startsWith(META_ENV_PREFIX) && k.length > META_ENV_PREFIX.length && v !== undefined) metadata[k.slice(META_ENV_PREFIX.length)] = v;
  Object.assign(metadata, {
    NAME: podName,
    NAMESPACE: namespace,
    SERVICE_ACCOUNT: serviceAccount,
    INSTANCE_IPS: instanceIps.join(','),
    LABELS: { ...(podLabels ?? {}) },
    PROXY_CONFIG: proxyConfig,
  });
  if (mode === 'grpc') metadata.GENERATOR = 'grpc';
  if (typeof metadata.CLUSTER_ID !== 'string' || metadata.CLUSTER_ID === '') metadata.CLUSTER_ID = 'Kubernetes';

  const appProbers: Record<string, AppProber> = {};
  if (env[APP_PROBERS_ENV]) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(env[APP_PROBERS_ENV] as string);
    } catch {
      bad(APP_PROBERS_ENV, 'is not JSON');
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) bad(APP_PROBERS_ENV, 'is not a JSON map from paths to probes');
    for (const [path, p] of Object.entries(parsed as Record<string, unknown>)) {
      if (!path.startsWith(APP_HEALTH_PREFIX)) bad(APP_PROBERS_ENV, `path ${JSON.stringify(path)} does not start with ${APP_HEALTH_PREFIX}`);
      const r = ProberSchema.safeParse(p);
      if (!r.success || (!r.data.httpGet === !r.data.tcpSocket)) bad(APP_PROBERS_ENV, `${path}: not one httpGet or tcpSocket probe`);
      appProbers[path] = r.data as AppProber;
    }
  }
  let appMetrics: AgentSettings['appMetrics'];
  if (env[PROMETHEUS_ANNOTATIONS_ENV]) {
    let parsed: Record<string, string>;
    try {
      parsed = JSON.parse(env[PROMETHEUS_ANNOTATIONS_ENV] as string) as Record<string, string>;
    } catch {
      return bad(PROMETHEUS_ANNOTATIONS_ENV, 'is not JSON');
    }
    const scrape = parsed['prometheus.io/scrape'];
    if (scrape === undefined || scrape === 'true') {
      const p = parsed['prometheus.io/port'];
      if (p !== undefined) appMetrics = { port: port(p, 0, `${PROMETHEUS_ANNOTATIONS_ENV} prometheus.io/port`), path: parsed['prometheus.io/path'] || '/metrics' };
    }
  }
  const probeLocalhost = parseFlagBool(env.REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION, 'REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION');
  // meshd reads these two as "true" in any case, else off (src/model/proxy.ts): any other value is refused here
  const dnsCapture = metaBool(env, 'DNS_CAPTURE');
  metaBool(env, 'DNS_AUTO_ALLOCATE');
  if (dnsCapture && mode === 'grpc') bad(`${META_ENV_PREFIX}DNS_CAPTURE`, 'the DNS proxy is the Envoy sidecar\'s; a proxyless gRPC application (--mode grpc) resolves its xds:/// targets without DNS');

  const ttl = flags.secretTtl ?? '24h';
  let secretTtlSeconds: number;
  try {
    secretTtlSeconds = Math.round(durationMs(ttl) / 1000);
  } catch (err) {
    return bad('--secretTtl', (err as Error).message);
  }
  if (secretTtlSeconds < 2) bad('--secretTtl', 'must be at least 2s');
  const grace = flags.secretGracePeriodRatio === undefined ? 0.5 : Number(flags.secretGracePeriodRatio);
  if (!(grace >= 0.1 && grace <= 0.9)) bad('--secretGracePeriodRatio', `${JSON.stringify(flags.secretGracePeriodRatio)} is not a number from 0.1 to 0.9`);

  const drain = proxyConfig.terminationDrainDuration ?? '5s';
  const concurrency = proxyConfig.concurrency ?? 2;
  if (concurrency < 0) bad('PROXY_CONFIG.concurrency', 'must be 0 or more');

  return {
    kind,
    mode,
    podName,
    namespace,
    instanceIps,
    serviceAccount,
    dnsDomain: domain,
    trustDomain,
    identity: `spiffe://${trustDomain}/ns/${namespace}/sa/${serviceAccount}`,
    proxyConfig,
    discoveryAddress,
    caAddress,
    xdsServerName,
    caServerName,
    metadata,
    paths: {
      token: flags.tokenPath || TOKEN_PATH,
      rootCert: flags.rootCertPath || ROOT_CERT_PATH,
      sdsSocket: flags.sdsSocket || SDS_SOCKET_PATH,
      configDir: flags.configDir || PROXY_CONFIG_DIR,
      certDir: flags.certDir || CERT_OUTPUT_DIR,
      podInfoDir: flags.podInfoDir || POD_INFO_DIR,
      envoyBinary: flags.envoyBinary || proxyConfig.binaryPath || '/usr/local/bin/envoy',
    },
    ports: {
      admin: proxyConfig.proxyAdminPort ?? PROXY_PORTS.admin,
      status: port(flags.statusPort, proxyConfig.statusPort ?? PROXY_PORTS.status, '--statusPort'),
      health: port(flags.healthPort, PROXY_PORTS.health, '--healthPort'),
      envoyPrometheus: PROXY_PORTS.envoyPrometheus,
    },
    proxyLogLevel: proxyLogLevel === 'warn' ? 'warning' : proxyLogLevel,
    proxyComponentLogLevel,
    agentLogLevel: agentLevel(flags.log_output_level ?? 'default:info'),
    secretTtlSeconds,
    secretGraceRatio: grace,
    concurrency,
    drainDurationMs: durationMs(drain),
    appProbers,
    appMetrics,
    probeLocalhost,
    dnsCapture,
  };
}

/** A node-metadata boolean as meshd reads it: `true` or `false` in any case; unset is false. */
function metaBool(env: Readonly<Record<string, string | undefined>>, key: string): boolean {
  const name = `${META_ENV_PREFIX}${key}`;
  const v = env[name];
  if (v === undefined || v === '') return false;
  const lower = v.toLowerCase();
  if (lower !== 'true' && lower !== 'false') bad(name, `${JSON.stringify(v)} is not true or false (meshd reads node metadata booleans so)`);
  return lower === 'true';
}

function parseFlagBool(v: string | undefined, name: string): boolean {
  if (v === undefined || v === '') return false;
  try {
    return parseBool(v);
  } catch (err) {
    return bad(name, (err as Error).message);
  }
}

/** The node id meshd parses (src/model/proxy.ts): `<type>~<ips>~<pod>.<namespace>~<domain>`. */
export function nodeId(s: AgentSettings): string {
  return `${s.kind}~${s.instanceIps.join(',')}~${s.podName}.${s.namespace}~${s.dnsDomain}`;
}
