/**
 * The Cluster registry's pure conversions (src/registry/kube/convert.ts): Kubernetes objects as the
 * API server returns them (plain JSON fixtures) → mesh services and endpoints.
 */
import type { V1Endpoints, V1EndpointSlice, V1Namespace, V1Node, V1Pod, V1Service } from '@kubernetes/client-node';
import type { ConfigObject } from '../../src/config/types.js';
import type { WorkloadEntry } from '../../src/config/spec-types.js';
import type { Service } from '../../src/model/service.js';
import {
  buildEndpoints,
  convertService,
  externalNameEndpoints,
  localityOf,
  parseExportTo,
  portProtocol,
  rawFromEndpoints,
  rawFromSlices,
  serviceAccountsOf,
  workloadEntryEndpoints,
  type ConvertSettings,
  type WorkloadLookup,
} from '../../src/registry/kube/convert.js';

const S: ConvertSettings = { registry: 'east', clusterId: 'east', domain: 'example.internal', trustDomain: 'td.example', edsForHeadless: false };

function service(spec: V1Service['spec'], meta: Partial<NonNullable<V1Service['metadata']>> = {}): V1Service {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web', namespace: 'shop', creationTimestamp: new Date('2026-01-02T03:04:05Z'), ...meta }, spec };
}

const WEB = service(
  {
    clusterIP: '10.96.4.7',
    clusterIPs: ['10.96.4.7', 'fd00::7'],
    selector: { app: 'web' },
    ports: [
      { name: 'http-api', port: 80, targetPort: 8080 },
      { name: 'metrics', port: 9090, targetPort: 'metrics', appProtocol: 'http' },
    ],
  },
  { labels: { app: 'web', tier: 'front' }, annotations: { 'networking.mesh.io/exportTo': ' ., billing ' } },
);

function mustConvert(svc: V1Service, s: ConvertSettings = S): Service {
  const out = convertService(svc, s);
  if (!out) throw new Error('no service');
  return out;
}

function pod(name: string, opts: { labels?: Record<string, string>; sa?: string; node?: string; ip?: string } = {}): V1Pod {
  return {
    metadata: { name, namespace: 'shop', labels: opts.labels ?? { app: 'web' } },
    spec: { containers: [], serviceAccountName: opts.sa, nodeName: opts.node },
    status: { podIP: opts.ip },
  };
}

function lookup(pods: V1Pod[], nodes: V1Node[] = [], namespaces: V1Namespace[] = []): WorkloadLookup {
  return {
    pod: (ns, name) => pods.find((p) => p.metadata?.namespace === ns && p.metadata?.name === name),
    node: (name) => nodes.find((n) => n.metadata?.name === name),
    namespace: (name) => namespaces.find((n) => n.metadata?.name === name),
  };
}

function slice(endpoints: V1EndpointSlice['endpoints'], ports: V1EndpointSlice['ports'] = [{ name: 'http-api', port: 8080 }, { name: 'metrics', port: 9102 }]): V1EndpointSlice {
  return { addressType: 'IPv4', metadata: { name: 'web-abc', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } }, endpoints, ports };
}

const podRef = (name: string) => ({ kind: 'Pod', name, namespace: 'shop' });

describe('port protocol', () => {
  test('appProtocol wins over the port name; Kubernetes appProtocol values are understood', () => {
    expect(portProtocol({ name: 'tcp-x', appProtocol: 'grpc' })).toBe('GRPC');
    expect(portProtocol({ name: 'web', appProtocol: 'kubernetes.io/h2c' })).toBe('HTTP2');
    expect(portProtocol({ name: 'web', appProtocol: 'kubernetes.io/wss' })).toBe('HTTPS');
  });

  test('falls back to the port name prefix; unknown names are UNSUPPORTED (sniffed)', () => {
    expect(portProtocol({ name: 'http-api' })).toBe('HTTP');
    expect(portProtocol({ name: 'grpc' })).toBe('GRPC');
    expect(portProtocol({ name: 'http2-x' })).toBe('HTTP2');
    expect(portProtocol({ name: 'mongo-db' })).toBe('MONGO');
    expect(portProtocol({ name: 'redis' })).toBe('REDIS');
    expect(portProtocol({ name: 'tls-passthrough' })).toBe('TLS');
    expect(portProtocol({ name: 'web' })).toBe('UNSUPPORTED');
    expect(portProtocol({ name: 'madeup', appProtocol: 'example.com/custom' })).toBe('UNSUPPORTED');
  });

  test('UDP ports are UDP whatever their name', () => {
    expect(portProtocol({ name: 'http-dns', protocol: 'UDP' })).toBe('UDP');
    expect(portProtocol({ name: 'http-x', protocol: 'SCTP' })).toBe('UNSUPPORTED');
  });
});

describe('Service → mesh service', () => {
  test('hostname, ports, cluster IPs, exportTo, labels, cluster and registry', () => {
    const s = mustConvert(WEB);
    expect(s).toEqual({
      hostname: 'web.shop.svc.example.internal',
      namespace: 'shop',
      name: 'web',
      ports: [
        { name: 'http-api', port: 80, protocol: 'HTTP' },
        { name: 'metrics', port: 9090, protocol: 'HTTP' },
      ],
      addresses: ['10.96.4.7', 'fd00::7'],
      resolution: 'ClientSideLB',
      meshExternal: false,
      exportTo: ['.', 'billing'],
      labels: { app: 'web', tier: 'front' },
      serviceAccounts: [],
      clusterId: 'east',
      registry: 'east',
      creationTime: Date.parse('2026-01-02T03:04:05Z'),
    });
    expect(Object.isFrozen(s)).toBe(true);
  });

  test('headless: no address, Passthrough; ClientSideLB when EDS for headless services is on', () => {
    const headless = service({ clusterIP: 'None', clusterIPs: ['None'], ports: [{ name: 'tcp-db', port: 5432 }] });
    expect(mustConvert(headless)).toMatchObject({ addresses: [], resolution: 'Passthrough' });
    expect(mustConvert(headless, { ...S, edsForHeadless: true })).toMatchObject({ addresses: [], resolution: 'ClientSideLB' });
  });

  test('ExternalName: DNS resolution, mesh-external, one endpoint per port at the external name', () => {
    const ext = service({ type: 'ExternalName', externalName: 'db.example.com', ports: [{ name: 'tcp', port: 5432 }, { name: 'http', port: 80 }] });
    const s = mustConvert(ext);
    expect(s).toMatchObject({ addresses: [], resolution: 'DNS', meshExternal: true });
    expect(externalNameEndpoints(ext, s, S).map((e) => [e.address, e.port, e.servicePortName, e.healthy])).toEqual([
      ['db.example.com', 5432, 'tcp', true],
      ['db.example.com', 80, 'http', true],
    ]);
    expect(externalNameEndpoints(WEB, mustConvert(WEB), S)).toEqual([]);
  });

  test('a service without name or namespace is not converted; exportTo without values is the mesh default', () => {
    expect(convertService({ spec: {} }, S)).toBeUndefined();
    expect(parseExportTo(' , ')).toBeUndefined();
    expect(parseExportTo(undefined)).toBeUndefined();
    expect(mustConvert(service({ ports: [] }, { annotations: { 'networking.mesh.io/exportTo': '' } })).exportTo).toBeUndefined();
  });
});

describe('locality', () => {
  test('from the node topology labels, the slice zone when there is no node', () => {
    const node: V1Node = { metadata: { name: 'n1', labels: { 'topology.kubernetes.io/region': 'eu', 'topology.kubernetes.io/zone': 'eu-1a', 'topology.mesh.io/subzone': 'rack7' } } };
    expect(localityOf(node)).toEqual({ region: 'eu', zone: 'eu-1a', subzone: 'rack7' });
    expect(localityOf(undefined, 'zone-b')).toEqual({ region: '', zone: 'zone-b', subzone: '' });
    expect(localityOf({ metadata: { name: 'bare', labels: {} } })).toEqual({ region: '', zone: '', subzone: '' });
  });
});

describe('endpoints from EndpointSlices', () => {
  const node: V1Node = { metadata: { name: 'n1', labels: { 'topology.kubernetes.io/region': 'eu', 'topology.kubernetes.io/zone': 'eu-1a' } } };
  const ns: V1Namespace = { metadata: { name: 'shop', labels: { 'topology.mesh.io/network': 'net-ns' } } };

  test('ready pod endpoints take pod labels, SPIFFE identity, node locality, network and TLS mode', () => {
    const svc = mustConvert(WEB);
    const pods = [
      pod('web-1', { labels: { app: 'web', version: 'v1', 'security.mesh.io/tlsMode': 'mesh' }, sa: 'web-sa', node: 'n1' }),
      pod('web-2', { labels: { app: 'web', version: 'v2', 'topology.mesh.io/network': 'net-pod' }, node: 'n1' }),
    ];
    const raws = rawFromSlices([
      slice([
        { addresses: ['10.0.0.2'], conditions: { ready: true }, targetRef: podRef('web-2'), nodeName: 'n1' },
        { addresses: ['10.0.0.1'], conditions: {}, targetRef: podRef('web-1'), nodeName: 'n1' },
      ]),
    ]);
    const b = buildEndpoints(svc, raws, lookup(pods, [node], [ns]), S);
    expect(b.endpoints.map((e) => [e.address, e.servicePortName, e.port, e.healthy])).toEqual([
      ['10.0.0.1', 'http-api', 8080, true],
      ['10.0.0.1', 'metrics', 9102, true],
      ['10.0.0.2', 'http-api', 8080, true],
      ['10.0.0.2', 'metrics', 9102, true],
    ]);
    const [first, , third] = b.endpoints;
    expect(first).toMatchObject({
      labels: { app: 'web', version: 'v1', 'security.mesh.io/tlsMode': 'mesh' },
      serviceAccount: 'spiffe://td.example/ns/shop/sa/web-sa',
      locality: { region: 'eu', zone: 'eu-1a', subzone: '' },
      network: 'net-ns',
      tlsMode: 'mesh',
      clusterId: 'east',
      workload: 'web-1.shop',
    });
    expect(third).toMatchObject({ serviceAccount: 'spiffe://td.example/ns/shop/sa/default', network: 'net-pod', tlsMode: 'disabled' });
    expect(serviceAccountsOf(b.endpoints)).toEqual(['spiffe://td.example/ns/shop/sa/default', 'spiffe://td.example/ns/shop/sa/web-sa']);
    expect([...b.pods].sort()).toEqual(['shop/web-1', 'shop/web-2']);
    expect(b.nodes).toEqual(['n1']);
    expect(b.pendingPods).toEqual([]);
  });

  test('not-ready endpoints are kept as unhealthy and counted', () => {
    const raws = rawFromSlices([slice([{ addresses: ['10.0.0.3'], conditions: { ready: false, serving: true, terminating: true }, targetRef: podRef('web-3') }])]);
    const b = buildEndpoints(mustConvert(WEB), raws, lookup([pod('web-3')]), S);
    expect(b.endpoints.map((e) => e.healthy)).toEqual([false, false]);
    expect(b.notReady).toBe(1);
  });

  test('an endpoint whose pod is not in the cache is held back as pending', () => {
    const raws = rawFromSlices([
      slice([
        { addresses: ['10.0.0.1'], targetRef: podRef('web-1') },
        { addresses: ['10.0.0.9'], targetRef: podRef('web-new') },
      ]),
    ]);
    const b = buildEndpoints(mustConvert(WEB), raws, lookup([pod('web-1')]), S);
    expect([...new Set(b.endpoints.map((e) => e.address))]).toEqual(['10.0.0.1']);
    expect(b.pendingPods).toEqual(['shop/web-new']);
    expect([...b.pods].sort()).toEqual(['shop/web-1', 'shop/web-new']);
  });

  test('an endpoint without a pod reference is kept with the service labels, the namespace network and the slice zone', () => {
    const raws = rawFromSlices([slice([{ addresses: ['192.168.9.9'], zone: 'z9' }])]);
    const b = buildEndpoints(mustConvert(WEB), raws, lookup([], [], [ns]), S);
    expect(b.endpoints[0]).toMatchObject({ address: '192.168.9.9', labels: { app: 'web', tier: 'front' }, serviceAccount: '', network: 'net-ns', locality: { zone: 'z9' }, workload: '192.168.9.9' });
    expect(b.noPodAddresses).toEqual(['192.168.9.9']);
  });

  test('ports are matched by name: a slice port the service does not have is ignored', () => {
    const raws = rawFromSlices([slice([{ addresses: ['10.0.0.1'], targetRef: podRef('web-1') }], [{ name: 'metrics', port: 9102 }, { name: 'other', port: 1 }])]);
    const b = buildEndpoints(mustConvert(WEB), raws, lookup([pod('web-1')]), S);
    expect(b.endpoints.map((e) => [e.servicePortName, e.port])).toEqual([['metrics', 9102]]);
  });

  test('FQDN slices are ignored; an address in two slices appears once, ready winning', () => {
    const raws = rawFromSlices([
      { ...slice([{ addresses: ['x.example.com'] }]), addressType: 'FQDN' },
      slice([{ addresses: ['10.0.0.1'], conditions: { ready: false } }], [{ name: 'http-api', port: 8080 }]),
      slice([{ addresses: ['10.0.0.1'], conditions: { ready: true } }], [{ name: 'metrics', port: 9102 }]),
    ]);
    expect(raws).toHaveLength(1);
    expect(raws[0].address).toBe('10.0.0.1');
    expect(raws[0].ready).toBe(true);
    expect(Object.fromEntries(raws[0].ports)).toEqual({ 'http-api': 8080, metrics: 9102 });
  });
});

describe('endpoints from Endpoints', () => {
  test('addresses are ready, notReadyAddresses are not', () => {
    const ep: V1Endpoints = {
      metadata: { name: 'web', namespace: 'shop' },
      subsets: [
        {
          addresses: [{ ip: '10.0.0.1', targetRef: podRef('web-1'), nodeName: 'n1' }],
          notReadyAddresses: [{ ip: '10.0.0.2', targetRef: podRef('web-2') }],
          ports: [{ name: 'http-api', port: 8080 }],
        },
      ],
    };
    const b = buildEndpoints(mustConvert(WEB), rawFromEndpoints(ep), lookup([pod('web-1'), pod('web-2')]), S);
    expect(b.endpoints.map((e) => [e.address, e.port, e.healthy])).toEqual([
      ['10.0.0.1', 8080, true],
      ['10.0.0.2', 8080, false],
    ]);
    expect(b.notReady).toBe(1);
    expect(rawFromEndpoints(undefined)).toEqual([]);
  });
});

describe('WorkloadEntries selected by a service', () => {
  const entry = (name: string, ns: string, spec: WorkloadEntry): ConfigObject<WorkloadEntry> => ({
    meta: { gvk: { group: 'networking.mesh.io', version: 'v1', kind: 'WorkloadEntry' }, name, namespace: ns, labels: {}, annotations: {}, generation: 1, resourceVersion: '1' },
    spec,
  });

  test('entries of the namespace whose labels match the selector become endpoints', () => {
    const entries = [
      entry('vm-1', 'shop', { address: '172.16.0.5', labels: { app: 'web', 'security.mesh.io/tlsMode': 'mesh' }, serviceAccount: 'vm', locality: 'eu/eu-1b', network: 'vpc', weight: 3, ports: { metrics: 9999 } }),
      entry('vm-other-ns', 'billing', { address: '172.16.0.6', labels: { app: 'web' } }),
      entry('vm-other-app', 'shop', { address: '172.16.0.7', labels: { app: 'cart' } }),
    ];
    const eps = workloadEntryEndpoints(WEB, mustConvert(WEB), entries, S);
    expect(eps.map((e) => [e.address, e.servicePortName, e.port])).toEqual([
      ['172.16.0.5', 'http-api', 8080],
      ['172.16.0.5', 'metrics', 9999],
    ]);
    expect(eps[0]).toMatchObject({
      serviceAccount: 'spiffe://td.example/ns/shop/sa/vm',
      locality: { region: 'eu', zone: 'eu-1b', subzone: '' },
      network: 'vpc',
      weight: 3,
      tlsMode: 'mesh',
      workload: 'vm-1.shop',
      healthy: true,
    });
  });

  test('a service without a selector selects no entries', () => {
    const noSelector = service({ clusterIP: '10.96.0.9', ports: [{ name: 'http', port: 80 }] });
    const entries = [entry('vm-1', 'shop', { address: '172.16.0.5', labels: { app: 'web' } })];
    expect(workloadEntryEndpoints(noSelector, mustConvert(noSelector), entries, S)).toEqual([]);
  });
});
