/**
 * Reading a proxy's configuration as Envoy's admin port gives it: `/config_dump` (ClustersConfigDump,
 * ListenersConfigDump, RoutesConfigDump, EndpointsConfigDump, SecretsConfigDump, BootstrapConfigDump;
 * proto JSON with snake_case names as Envoy writes them, or lowerCamelCase as other writers do) and
 * `/clusters?format=json` (cluster_statuses with host_statuses). Keys are read in lowerCamelCase
 * whichever way they came. A file that is not such a document is a CliError naming what is wrong.
 *
 * The summaries are the rows `meshctl proxy-config` prints: plain data, filtered by the flags.
 */
import { X509Certificate } from 'node:crypto';
import { CliError } from '../../runner.js';

type Json = Record<string, unknown>;

const camel = (k: string): string => (k.startsWith('@') ? k : k.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase()));

/** `value` with every object key in lowerCamelCase (`@type` kept). */
export function camelKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(camelKeys);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [camel(k), camelKeys(v)]));
}

const obj = (v: unknown): Json => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {});
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');

export interface ConfigDump {
  readonly bootstrap?: Json;
  readonly clusters: Json[];
  readonly listeners: Json[];
  readonly routes: Json[];
  /** ClusterLoadAssignments (EDS) of the dump. */
  readonly endpoints: Json[];
  /** `/clusters?format=json` cluster statuses, when that was given. */
  readonly clusterStatuses: Json[];
  readonly secrets: Array<{ name: string; secret: Json; state: string }>;
}

const TYPE_SUFFIX = {
  bootstrap: 'BootstrapConfigDump',
  clusters: 'ClustersConfigDump',
  listeners: 'ListenersConfigDump',
  routes: 'RoutesConfigDump',
  endpoints: 'EndpointsConfigDump',
  secrets: 'SecretsConfigDump',
} as const;

/** Parses the text of a config dump (or a `/clusters?format=json` reply); `source` names it in errors. */
export function parseConfigDump(text: string, source: string): ConfigDump {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new CliError(`${source}: not a config dump: invalid JSON (${(err as Error).message})`);
  }
  const root = obj(camelKeys(raw));
  const dump: { -readonly [K in keyof ConfigDump]: ConfigDump[K] } = { clusters: [], listeners: [], routes: [], endpoints: [], clusterStatuses: [], secrets: [] };
  if (Array.isArray(root.clusterStatuses)) {
    dump.clusterStatuses = root.clusterStatuses.map(obj);
    return dump;
  }
  if (!Array.isArray(root.configs)) throw new CliError(`${source}: not a config dump: expected an object with a "configs" list (the admin /config_dump reply)`);
  root.configs.forEach((entry, i) => {
    const c = obj(entry);
    const type = str(c['@type']);
    if (type === '') throw new CliError(`${source}: configs[${i}] has no "@type"`);
    const dynamicOrStatic = (dynamic: string, stat: string, field: string) => [...arr(c[dynamic]), ...arr(c[stat])].map((x) => obj(obj(x)[field]));
    if (type.endsWith(TYPE_SUFFIX.bootstrap)) dump.bootstrap = obj(c.bootstrap);
    else if (type.endsWith(TYPE_SUFFIX.clusters)) dump.clusters = [...arr(c.staticClusters), ...arr(c.dynamicActiveClusters)].map((x) => obj(obj(x).cluster));
    else if (type.endsWith(TYPE_SUFFIX.listeners)) {
      dump.listeners = [...arr(c.staticListeners).map((x) => obj(obj(x).listener)), ...arr(c.dynamicListeners).map((x) => obj(obj(obj(x).activeState).listener))].filter((l) => Object.keys(l).length > 0);
    } else if (type.endsWith(TYPE_SUFFIX.routes)) dump.routes = dynamicOrStatic('dynamicRouteConfigs', 'staticRouteConfigs', 'routeConfig');
    else if (type.endsWith(TYPE_SUFFIX.endpoints)) dump.endpoints = dynamicOrStatic('dynamicEndpointConfigs', 'staticEndpointConfigs', 'endpointConfig');
    else if (type.endsWith(TYPE_SUFFIX.secrets)) {
      const secrets = [
        ...arr(c.staticSecrets).map((x) => ({ name: str(obj(x).name), secret: obj(obj(x).secret), state: 'ACTIVE' })),
        ...arr(c.dynamicActiveSecrets).map((x) => ({ name: str(obj(x).name), secret: obj(obj(x).secret), state: 'ACTIVE' })),
        ...arr(c.dynamicWarmingSecrets).map((x) => ({ name: str(obj(x).name), secret: obj(obj(x).secret), state: 'WARMING' })),
      ];
      dump.secrets = secrets;
    }
  });
  for (const [what, list] of [['cluster', dump.clusters], ['listener', dump.listeners], ['route configuration', dump.routes]] as const) {
    const i = list.findIndex((x) => str(x.name) === '');
    if (i >= 0) throw new CliError(`${source}: a ${what} without a name (entry ${i})`);
  }
  return dump;
}

// ---- clusters ----------------------------------------------------------------------------------

export interface ClusterRow {
  readonly fqdn: string;
  readonly port: string;
  readonly subset: string;
  readonly direction: string;
  readonly type: string;
  readonly name: string;
}

export interface ClusterFilter {
  readonly fqdn?: string;
  readonly port?: number;
  readonly subset?: string;
  readonly direction?: string;
}

export function clusterRows(dump: ConfigDump, f: ClusterFilter = {}): ClusterRow[] {
  return dump.clusters
    .map((c) => {
      const name = str(c.name);
      const parts = name.split('|');
      const discovery = str(c.type) || (c.clusterType ? 'CUSTOM' : 'STATIC');
      if (parts.length === 4 && (parts[0] === 'outbound' || parts[0] === 'inbound')) {
        return { fqdn: parts[3], port: parts[1], subset: parts[2], direction: parts[0], type: discovery, name };
      }
      return { fqdn: name, port: '', subset: '', direction: '', type: discovery, name };
    })
    .filter((r) => (!f.fqdn || r.fqdn.includes(f.fqdn)) && (!f.port || r.port === String(f.port)) && (!f.subset || r.subset.includes(f.subset)) && (!f.direction || r.direction === f.direction))
    .sort((a, b) => a.fqdn.localeCompare(b.fqdn) || Number(a.port || 0) - Number(b.port || 0) || a.subset.localeCompare(b.subset) || a.direction.localeCompare(b.direction));
}

export const matchingClusters = (dump: ConfigDump, rows: readonly ClusterRow[]): Json[] => {
  const names = new Set(rows.map((r) => r.name));
  return dump.clusters.filter((c) => names.has(str(c.name)));
};

// ---- listeners ---------------------------------------------------------------------------------

export interface ListenerRow {
  readonly name: string;
  readonly address: string;
  readonly port: string;
  readonly type: 'HTTP' | 'TCP' | '';
  readonly match: string;
  readonly destination: string;
}

export interface ListenerFilter {
  readonly address?: string;
  readonly port?: number;
  readonly type?: string;
  /** Listeners whose HTTP chains use this route configuration (`proxy-config all --name`). */
  readonly routeName?: string;
}

function socket(l: Json): { address: string; port: string } {
  const sa = obj(obj(l.address).socketAddress);
  return { address: str(sa.address), port: str(sa.portValue) };
}

function chainMatch(m: Json): string {
  const parts: string[] = [];
  if (m.destinationPort !== undefined) parts.push(`port ${str(m.destinationPort)}`);
  const ranges = arr(m.prefixRanges).map((r) => `${str(obj(r).addressPrefix)}/${str(obj(r).prefixLen) || '32'}`);
  if (ranges.length > 0) parts.push(`addr ${ranges.join(',')}`);
  const sni = arr(m.serverNames).map(str);
  if (sni.length > 0) parts.push(`SNI ${sni.join(',')}`);
  if (m.transportProtocol) parts.push(`trans ${str(m.transportProtocol)}`);
  const alpn = arr(m.applicationProtocols).map(str);
  if (alpn.length > 0) parts.push(`ALPN ${alpn.join(',')}`);
  return parts.length > 0 ? parts.join('; ') : 'ALL';
}

function chainDestination(chain: Json): { type: 'HTTP' | 'TCP' | ''; destination: string } {
  for (const filter of arr(chain.filters).map(obj)) {
    const cfg = obj(filter.typedConfig);
    const t = str(cfg['@type']);
    if (t.endsWith('HttpConnectionManager')) {
      const rds = obj(cfg.rds);
      if (rds.routeConfigName !== undefined) return { type: 'HTTP', destination: `Route: ${str(rds.routeConfigName)}` };
      const inline = obj(cfg.routeConfig);
      return { type: 'HTTP', destination: `Inline Route: ${str(inline.name) || '<unnamed>'}` };
    }
    if (t.endsWith('TcpProxy')) {
      if (cfg.cluster !== undefined) return { type: 'TCP', destination: `Cluster: ${str(cfg.cluster)}` };
      const weighted = arr(obj(cfg.weightedClusters).clusters).map((c) => str(obj(c).name));
      return { type: 'TCP', destination: `Clusters: ${weighted.join(',')}` };
    }
  }
  return { type: '', destination: 'Non-HTTP/Non-TCP' };
}

export function listenerRows(dump: ConfigDump, f: ListenerFilter = {}): ListenerRow[] {
  const rows: ListenerRow[] = [];
  for (const l of dump.listeners) {
    const { address, port } = socket(l);
    const apiListener = l.apiListener !== undefined;
    const chains = arr(l.filterChains).map(obj);
    const all = l.defaultFilterChain ? [...chains, obj(l.defaultFilterChain)] : chains;
    if (apiListener) {
      const hcm = obj(obj(l.apiListener).apiListener);
      const rds = obj(hcm.rds);
      rows.push({ name: str(l.name), address: '', port: '', type: 'HTTP', match: 'ALL', destination: rds.routeConfigName !== undefined ? `Route: ${str(rds.routeConfigName)}` : 'Inline Route' });
      continue;
    }
    if (all.length === 0) rows.push({ name: str(l.name), address, port, type: '', match: 'ALL', destination: 'Non-HTTP/Non-TCP' });
    for (const chain of all) {
      const d = chainDestination(chain);
      rows.push({ name: str(l.name), address, port, type: d.type, match: chainMatch(obj(chain.filterChainMatch)), destination: d.destination });
    }
  }
  return rows
    .filter(
      (r) =>
        (!f.address || r.address === f.address) &&
        (!f.port || r.port === String(f.port)) &&
        (!f.type || r.type === f.type.toUpperCase()) &&
        (!f.routeName || r.destination === `Route: ${f.routeName}` || r.destination === `Inline Route: ${f.routeName}`),
    )
    .sort((a, b) => a.address.localeCompare(b.address) || Number(a.port || 0) - Number(b.port || 0) || a.name.localeCompare(b.name) || a.match.localeCompare(b.match));
}

export const matchingListeners = (dump: ConfigDump, rows: readonly ListenerRow[]): Json[] => {
  const names = new Set(rows.map((r) => r.name));
  return dump.listeners.filter((l) => names.has(str(l.name)));
};

// ---- routes ------------------------------------------------------------------------------------

export interface RouteRow {
  readonly name: string;
  readonly vhost: string;
  readonly domains: string;
  readonly match: string;
  readonly action: string;
}

function routeMatch(r: Json): string {
  const m = obj(r.match);
  let text = m.prefix !== undefined ? `${str(m.prefix)}*` : m.path !== undefined ? str(m.path) : m.safeRegex !== undefined ? `regex ${str(obj(m.safeRegex).regex)}` : m.pathSeparatedPrefix !== undefined ? `${str(m.pathSeparatedPrefix)}/*` : '/*';
  const headers = arr(m.headers).map((h) => str(obj(h).name));
  if (headers.length > 0) text += ` (headers ${headers.join(',')})`;
  return text;
}

function routeAction(r: Json): string {
  const a = obj(r.route);
  if (a.cluster !== undefined) return str(a.cluster);
  if (a.weightedClusters !== undefined) return arr(obj(a.weightedClusters).clusters).map((c) => `${str(obj(c).name)} ${str(obj(c).weight)}`).join(', ');
  if (r.redirect !== undefined) return 'redirect';
  if (r.directResponse !== undefined) return `direct response ${str(obj(r.directResponse).status)}`;
  return '';
}

const domainsText = (d: string[]): string => (d.length <= 2 ? d.join(', ') : `${d[0]}, ${d[1]} +${d.length - 2} more`);

/** One row per virtual host (its first route's match and action), or per route with `verbose`. */
export function routeRows(dump: ConfigDump, f: { readonly name?: string; readonly verbose?: boolean } = {}): RouteRow[] {
  const rows: RouteRow[] = [];
  for (const rc of dump.routes) {
    const name = str(rc.name);
    if (f.name && name !== f.name) continue;
    for (const vh of arr(rc.virtualHosts).map(obj)) {
      const domains = domainsText(arr(vh.domains).map(str));
      const routes = arr(vh.routes).map(obj);
      if (f.verbose) {
        for (const r of routes) rows.push({ name, vhost: str(vh.name), domains, match: routeMatch(r), action: routeAction(r) });
      } else {
        const first = routes[0];
        rows.push({ name, vhost: str(vh.name), domains, match: first ? routeMatch(first) + (routes.length > 1 ? ` +${routes.length - 1} more` : '') : '', action: first ? routeAction(first) : '' });
      }
    }
  }
  return rows.sort((a, b) => a.name.localeCompare(b.name) || a.vhost.localeCompare(b.vhost));
}

export const matchingRoutes = (dump: ConfigDump, name?: string): Json[] => dump.routes.filter((r) => !name || str(r.name) === name);

// ---- endpoints ---------------------------------------------------------------------------------

export interface EndpointRow {
  readonly endpoint: string;
  readonly status: string;
  readonly outlierCheck: string;
  readonly cluster: string;
}

export interface EndpointFilter {
  readonly address?: string;
  readonly port?: number;
  readonly cluster?: string;
  readonly status?: string;
}

const HEALTH: Readonly<Record<string, string>> = { UNKNOWN: 'HEALTHY', HEALTHY: 'HEALTHY', UNHEALTHY: 'UNHEALTHY', DRAINING: 'DRAINING', TIMEOUT: 'TIMEOUT', DEGRADED: 'DEGRADED' };

export function endpointRows(dump: ConfigDump, f: EndpointFilter = {}): EndpointRow[] {
  const rows: Array<EndpointRow & { address: string; port: string }> = [];
  for (const cla of dump.endpoints) {
    for (const group of arr(cla.endpoints).map(obj)) {
      for (const lb of arr(group.lbEndpoints).map(obj)) {
        const sa = obj(obj(obj(obj(lb.endpoint).address)).socketAddress);
        const address = str(sa.address);
        const port = str(sa.portValue);
        rows.push({ address, port, endpoint: `${address}:${port}`, status: HEALTH[str(lb.healthStatus) || 'UNKNOWN'] ?? str(lb.healthStatus), outlierCheck: 'OK', cluster: str(cla.clusterName) });
      }
    }
  }
  for (const cs of dump.clusterStatuses) {
    for (const h of arr(cs.hostStatuses).map(obj)) {
      const sa = obj(obj(h.address).socketAddress);
      const address = str(sa.address);
      const port = str(sa.portValue);
      const health = obj(h.healthStatus);
      const failed = health.failedOutlierCheck === true;
      const status = str(health.edsHealthStatus) || 'HEALTHY';
      rows.push({ address, port, endpoint: `${address}:${port}`, status: HEALTH[status] ?? status, outlierCheck: failed ? 'FAILED' : 'OK', cluster: str(cs.name) });
    }
  }
  return rows
    .filter((r) => (!f.address || r.address === f.address) && (!f.port || r.port === String(f.port)) && (!f.cluster || r.cluster === f.cluster) && (!f.status || r.status === f.status.toUpperCase()))
    .sort((a, b) => a.cluster.localeCompare(b.cluster) || a.endpoint.localeCompare(b.endpoint))
    .map(({ endpoint, status, outlierCheck, cluster }) => ({ endpoint, status, outlierCheck, cluster }));
}

// ---- secrets -----------------------------------------------------------------------------------

export interface SecretRow {
  readonly name: string;
  readonly type: string;
  readonly status: string;
  readonly valid: string;
  readonly serial: string;
  readonly notAfter: string;
  readonly notBefore: string;
}

function inlinePem(source: Json): string | undefined {
  if (source.inlineBytes !== undefined) return Buffer.from(str(source.inlineBytes), 'base64').toString('utf8');
  if (source.inlineString !== undefined) return str(source.inlineString);
  return undefined;
}

export function secretRows(dump: ConfigDump, now = new Date()): SecretRow[] {
  return dump.secrets.map(({ name, secret, state }) => {
    const tls = obj(secret.tlsCertificate);
    const validation = obj(secret.validationContext);
    const pem = inlinePem(obj(tls.certificateChain)) ?? inlinePem(obj(validation.trustedCa));
    const type = secret.tlsCertificate !== undefined ? 'Cert Chain' : secret.validationContext !== undefined ? 'CA' : 'Unknown';
    if (!pem) return { name, type, status: state, valid: 'false', serial: '', notAfter: '', notBefore: '' };
    try {
      const cert = new X509Certificate(pem);
      const notBefore = new Date(cert.validFrom);
      const notAfter = new Date(cert.validTo);
      const valid = now >= notBefore && now <= notAfter;
      return { name, type, status: state, valid: String(valid), serial: cert.serialNumber.toLowerCase(), notAfter: notAfter.toISOString(), notBefore: notBefore.toISOString() };
    } catch {
      return { name, type, status: state, valid: 'false', serial: '', notAfter: '', notBefore: '' };
    }
  });
}

/** Secrets as JSON with every private key replaced: key material never leaves through meshctl. */
export function redactedSecrets(dump: ConfigDump): Json[] {
  const redact = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(redact);
    if (typeof v !== 'object' || v === null) return v;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, /privateKey|password|secret$/i.test(k) ? '[redacted]' : redact(x)]));
  };
  return dump.secrets.map((s) => ({ name: s.name, state: s.state, secret: redact(s.secret) as Json }));
}
