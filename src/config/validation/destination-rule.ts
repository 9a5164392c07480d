/** Semantic checks of DestinationRule specs. */
import type {
  ClientTLSSettings,
  ConnectionPoolSettings,
  DestinationRule,
  LoadBalancerSettings,
  LocalityLoadBalancerSetting,
  OutlierDetection,
  TrafficPolicy,
} from '../../gen/config/schemas.js';
import {
  type ConfigIssue,
  Issues,
  checkExportTo,
  checkHost,
  checkLabels,
  checkMinDuration,
  checkNonNegative,
  checkPercent,
  checkPortNumber,
  checkUnique,
  isDns1123Label,
  join,
} from './common.js';

export function validateDestinationRule(spec: DestinationRule, path = 'spec'): ConfigIssue[] {
  const issues = new Issues();
  checkHost(issues, join(path, 'host'), spec.host, { wildcard: true, ip: false });
  if (spec.trafficPolicy) checkTrafficPolicy(issues, join(path, 'trafficPolicy'), spec.trafficPolicy, true);
  (spec.subsets ?? []).forEach((s, i) => {
    const p = join(path, 'subsets', i);
    if (!isDns1123Label(s.name)) issues.add(join(p, 'name'), `subset name "${s.name}" is not a DNS-1123 label`);
    checkLabels(issues, join(p, 'labels'), s.labels);
    if (s.trafficPolicy) checkTrafficPolicy(issues, join(p, 'trafficPolicy'), s.trafficPolicy, true);
  });
  checkUnique(issues, join(path, 'subsets'), spec.subsets, (s) => s.name, 'subset name');
  checkExportTo(issues, join(path, 'exportTo'), spec.exportTo);
  return issues.list;
}

function checkTrafficPolicy(issues: Issues, path: string, tp: TrafficPolicy, allowPortLevel: boolean): void {
  if (isEmptyObject(tp)) issues.add(path, 'trafficPolicy must have at least one field');
  if (tp.retryBudget) checkPercent(issues, join(path, 'retryBudget', 'percent'), tp.retryBudget.percent);
  if (tp.loadBalancer) checkLoadBalancer(issues, join(path, 'loadBalancer'), tp.loadBalancer);
  if (tp.connectionPool) checkConnectionPool(issues, join(path, 'connectionPool'), tp.connectionPool);
  if (tp.outlierDetection) checkOutlier(issues, join(path, 'outlierDetection'), tp.outlierDetection);
  if (tp.tls) checkClientTls(issues, join(path, 'tls'), tp.tls);
  if (tp.tunnel) {
    const proto = tp.tunnel.protocol;
    if (proto !== undefined && proto !== 'CONNECT' && proto !== 'POST') {
      issues.add(join(path, 'tunnel', 'protocol'), `tunnel protocol "${proto}" is neither CONNECT nor POST`);
    }
    checkPortNumber(issues, join(path, 'tunnel', 'targetPort'), tp.tunnel.targetPort);
  }
  if (!allowPortLevel && tp.portLevelSettings) issues.add(join(path, 'portLevelSettings'), 'not allowed here');
  (tp.portLevelSettings ?? []).forEach((pl, i) => {
    const p = join(path, 'portLevelSettings', i);
    if (pl.port?.number === undefined) issues.add(join(p, 'port', 'number'), 'a port-level setting needs a port number');
    if (!pl.loadBalancer && !pl.connectionPool && !pl.outlierDetection && !pl.tls) issues.add(p, 'a port-level setting must have at least one of loadBalancer, connectionPool, outlierDetection or tls');
    checkPortNumber(issues, join(p, 'port', 'number'), pl.port?.number);
    if (pl.loadBalancer) checkLoadBalancer(issues, join(p, 'loadBalancer'), pl.loadBalancer);
    if (pl.connectionPool) checkConnectionPool(issues, join(p, 'connectionPool'), pl.connectionPool);
    if (pl.outlierDetection) checkOutlier(issues, join(p, 'outlierDetection'), pl.outlierDetection);
    if (pl.tls) checkClientTls(issues, join(p, 'tls'), pl.tls);
  });
  checkUnique(issues, join(path, 'portLevelSettings'), tp.portLevelSettings, (pl) => (pl.port?.number !== undefined ? String(pl.port.number) : undefined), 'port');
}

function checkLoadBalancer(issues: Issues, path: string, lb: LoadBalancerSettings): void {
  const ch = lb.consistentHash;
  if (ch) {
    const p = join(path, 'consistentHash');
    const keys = [ch.httpHeaderName, ch.httpCookie, ch.useSourceIp, ch.httpQueryParameterName].filter((k) => k !== undefined);
    if (keys.length === 0) issues.add(p, 'one hash key is required: httpHeaderName, httpCookie, useSourceIp or httpQueryParameterName');
    if (ch.useSourceIp === false) issues.add(join(p, 'useSourceIp'), 'useSourceIp: false is not a hash key; set another key instead');
    if (ch.minimumRingSize !== undefined && (ch.ringHash || ch.maglev)) {
      issues.add(join(p, 'minimumRingSize'), 'minimumRingSize cannot be combined with ringHash or maglev (use ringHash.minimumRingSize)');
    }
    if (ch.httpCookie) {
      const cp = join(p, 'httpCookie');
      checkMinDuration(issues, join(cp, 'ttl'), ch.httpCookie.ttl, 0);
      if (ch.httpCookie.name === '') issues.add(join(cp, 'name'), 'a cookie name is required');
      (ch.httpCookie.attributes ?? []).forEach((a, i) => {
        if (!COOKIE_TOKEN.test(a.name)) issues.add(join(cp, 'attributes', i, 'name'), `"${a.name}" is not a cookie attribute name`);
        if (a.value !== undefined && /[;\0\r\n]/.test(a.value)) issues.add(join(cp, 'attributes', i, 'value'), 'a cookie attribute value must not contain ";" or control characters');
      });
      checkUnique(issues, join(cp, 'attributes'), ch.httpCookie.attributes, (a) => a.name.toLowerCase(), 'cookie attribute');
    }
  }
  if (lb.localityLbSetting) checkLocalityLb(issues, join(path, 'localityLbSetting'), lb.localityLbSetting);
  if (lb.zoneAwareLbSetting) {
    const zp = join(path, 'zoneAwareLbSetting');
    if (lb.localityLbSetting && lb.localityLbSetting.enabled !== false) issues.add(zp, 'zoneAwareLbSetting and localityLbSetting are mutually exclusive');
    (lb.zoneAwareLbSetting.failoverPriority ?? []).forEach((label, i) => {
      const key = label.split('=')[0];
      if (TOPOLOGY_LABELS.has(key)) issues.add(join(zp, 'failoverPriority', i), `${key} is not allowed here: zone-aware balancing already prefers the region and zone`);
    });
    checkFailover(issues, join(zp, 'failover'), lb.zoneAwareLbSetting.failover);
  }
  checkMinDuration(issues, join(path, 'warmupDurationSecs'), lb.warmupDurationSecs, 1);
  if (lb.warmupDurationSecs !== undefined) {
    if (lb.warmup) issues.add(join(path, 'warmupDurationSecs'), 'warmupDurationSecs and warmup are mutually exclusive');
    else issues.warn(join(path, 'warmupDurationSecs'), 'warmupDurationSecs is deprecated: use warmup.duration');
  }
  if (lb.warmup) {
    const wp = join(path, 'warmup');
    checkMinDuration(issues, join(wp, 'duration'), lb.warmup.duration, 1);
    checkPercent(issues, join(wp, 'minimumPercent'), lb.warmup.minimumPercent);
    if (lb.warmup.aggression !== undefined && lb.warmup.aggression < 1) issues.add(join(wp, 'aggression'), `aggression ${lb.warmup.aggression} must be at least 1 (1 is linear)`);
  }
  const simple = lb.simple;
  if ((lb.warmup || lb.warmupDurationSecs) && simple !== undefined && simple !== 'ROUND_ROBIN' && simple !== 'LEAST_REQUEST' && simple !== 'UNSPECIFIED') {
    issues.warn(join(path, 'simple'), `warm-up only applies to ROUND_ROBIN and LEAST_REQUEST, not ${simple}`);
  }
}

const COOKIE_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const TOPOLOGY_LABELS = new Set(['topology.kubernetes.io/region', 'topology.kubernetes.io/zone', 'topology.mesh.io/subzone']);

function isEmptyObject(o: object): boolean {
  return Object.values(o).every((v) => v === undefined);
}

function checkFailover(issues: Issues, path: string, failover: LocalityLoadBalancerSetting['failover']): void {
  (failover ?? []).forEach((f, i) => {
    const p = join(path, i);
    if (!f.from || !f.to) issues.add(p, 'failover needs both from and to regions');
    else if (f.from === f.to) issues.add(p, `failover from "${f.from}" to itself`);
  });
}

export function checkLocalityLb(issues: Issues, path: string, l: LocalityLoadBalancerSetting): void {
  if ((l.distribute?.length ?? 0) > 0 && (l.failover?.length ?? 0) > 0) {
    issues.add(path, 'distribute and failover are mutually exclusive');
  }
  (l.distribute ?? []).forEach((d, i) => {
    const p = join(path, 'distribute', i);
    if (!d.from) issues.add(join(p, 'from'), 'a source locality is required');
    const sum = Object.values(d.to ?? {}).reduce((a, b) => a + b, 0);
    if (sum !== 100) issues.add(join(p, 'to'), `weights add up to ${sum}, they must add up to 100`);
  });
  checkFailover(issues, join(path, 'failover'), l.failover);
}

function checkConnectionPool(issues: Issues, path: string, cp: ConnectionPoolSettings): void {
  if (!cp.tcp && !cp.http) issues.add(path, 'connectionPool must have at least one of tcp or http');
  if (cp.tcp) {
    const p = join(path, 'tcp');
    checkNonNegative(issues, join(p, 'maxConnections'), cp.tcp.maxConnections);
    checkMinDuration(issues, join(p, 'connectTimeout'), cp.tcp.connectTimeout, 1);
    checkMinDuration(issues, join(p, 'maxConnectionDuration'), cp.tcp.maxConnectionDuration, 1);
    checkMinDuration(issues, join(p, 'idleTimeout'), cp.tcp.idleTimeout, 0);
    checkMinDuration(issues, join(p, 'tcpKeepalive', 'time'), cp.tcp.tcpKeepalive?.time, 1000);
    checkMinDuration(issues, join(p, 'tcpKeepalive', 'interval'), cp.tcp.tcpKeepalive?.interval, 1000);
  }
  if (cp.http) {
    const p = join(path, 'http');
    const h = cp.http;
    checkNonNegative(issues, join(p, 'http1MaxPendingRequests'), h.http1MaxPendingRequests);
    checkNonNegative(issues, join(p, 'http2MaxRequests'), h.http2MaxRequests);
    checkNonNegative(issues, join(p, 'maxRequestsPerConnection'), h.maxRequestsPerConnection);
    checkNonNegative(issues, join(p, 'maxRetries'), h.maxRetries);
    checkNonNegative(issues, join(p, 'maxConcurrentStreams'), h.maxConcurrentStreams);
    checkMinDuration(issues, join(p, 'idleTimeout'), h.idleTimeout, 1);
    checkMinDuration(issues, join(p, 'http2KeepAlive', 'interval'), h.http2KeepAlive?.interval, 1);
    checkMinDuration(issues, join(p, 'http2KeepAlive', 'timeout'), h.http2KeepAlive?.timeout, 1);
    if (h.http2KeepAlive && h.http2KeepAlive.interval === undefined) issues.add(join(p, 'http2KeepAlive', 'interval'), 'HTTP/2 keepalive needs an interval');
    if (h.useClientProtocol && h.h2UpgradePolicy === 'UPGRADE') issues.warn(join(p, 'h2UpgradePolicy'), 'h2UpgradePolicy UPGRADE has no effect with useClientProtocol: true');
  }
}

function checkOutlier(issues: Issues, path: string, od: OutlierDetection): void {
  checkPercent(issues, join(path, 'maxEjectionPercent'), od.maxEjectionPercent);
  checkPercent(issues, join(path, 'minHealthPercent'), od.minHealthPercent);
  checkMinDuration(issues, join(path, 'interval'), od.interval, 1);
  checkMinDuration(issues, join(path, 'baseEjectionTime'), od.baseEjectionTime, 1);
  if (od.consecutiveLocalOriginFailures !== undefined && !od.splitExternalLocalOriginErrors) {
    issues.add(join(path, 'consecutiveLocalOriginFailures'), 'needs splitExternalLocalOriginErrors: true');
  }
  if (od.consecutiveErrors !== undefined) {
    checkNonNegative(issues, join(path, 'consecutiveErrors'), od.consecutiveErrors);
    if (od.consecutive5xxErrors !== undefined) issues.add(join(path, 'consecutiveErrors'), 'consecutiveErrors and consecutive5xxErrors are mutually exclusive');
    else issues.warn(join(path, 'consecutiveErrors'), 'consecutiveErrors is deprecated: use consecutive5xxErrors');
  }
}

export function checkClientTls(issues: Issues, path: string, tls: ClientTLSSettings): void {
  const mode = tls.mode ?? 'DISABLE';
  const hasFiles = Boolean(tls.clientCertificate || tls.privateKey || tls.caCertificates);
  if (tls.credentialName && hasFiles && mode !== 'MESH_MUTUAL') {
    issues.warn(join(path, 'credentialName'), 'credentialName is used: clientCertificate, privateKey and caCertificates are ignored');
  }
  if (tls.insecureSkipVerify === true) {
    if (tls.caCertificates) issues.add(join(path, 'caCertificates'), 'caCertificates cannot be set when insecureSkipVerify is true');
    if ((tls.subjectAltNames?.length ?? 0) > 0) issues.add(join(path, 'subjectAltNames'), 'subjectAltNames cannot be set when insecureSkipVerify is true');
  }
  if (mode === 'MUTUAL' && !tls.credentialName && (!tls.clientCertificate || !tls.privateKey)) {
    issues.add(path, 'MUTUAL mode needs credentialName, or clientCertificate and privateKey');
  }
  if (mode === 'MESH_MUTUAL' && (hasFiles || tls.credentialName)) {
    issues.add(path, 'MESH_MUTUAL uses the mesh certificates: certificate files and credentialName must be empty');
  }
  if (mode === 'SIMPLE' && (tls.clientCertificate || tls.privateKey)) {
    issues.add(path, 'SIMPLE mode does not present a client certificate: use MUTUAL for clientCertificate/privateKey');
  }
}
