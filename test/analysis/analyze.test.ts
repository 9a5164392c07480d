/**
 * The analyzers (src/analysis/) over config snapshots built from documents as an operator writes
 * them: each finding names the object, a stable code, the field and what is wrong, and disappears
 * once the configuration is fixed.
 */
import { analyze, ANALYZERS } from '../../src/analysis/analyze.js';
import { MESSAGE_TYPES } from '../../src/analysis/messages.js';
import type { WorkloadInfo } from '../../src/analysis/types.js';
import { parseConfigObject } from '../../src/config/parse.js';
import { MemoryConfigStore } from '../../src/config/store.js';
import type { ConfigObject } from '../../src/config/types.js';
import { DEFAULT_MESH_SETTINGS } from '../../src/model/mesh-settings.js';
import type { Service } from '../../src/model/service.js';

type Doc = { apiVersion: string; kind: string; metadata: Record<string, unknown>; spec: unknown };

function storeOf(docs: ReadonlyArray<Doc>): MemoryConfigStore {
  const objects = docs.map((d, i) => {
    const parsed = parseConfigObject(d, `test.yaml#${i}`, 'default');
    if ('issues' in parsed) throw new Error(`invalid test document ${d.kind}: ${JSON.stringify(parsed.issues)}`);
    return parsed as ConfigObject;
  });
  const store = new MemoryConfigStore();
  store.applySource('test', objects);
  return store;
}

const vs = (name: string, ns: string, spec: unknown): Doc => ({ apiVersion: 'networking.mesh.io/v1', kind: 'VirtualService', metadata: { name, namespace: ns }, spec });
const dr = (name: string, ns: string, spec: unknown): Doc => ({ apiVersion: 'networking.mesh.io/v1', kind: 'DestinationRule', metadata: { name, namespace: ns }, spec });

function service(hostname: string, namespace: string): Service {
  return {
    hostname,
    namespace,
    name: hostname.split('.')[0],
    ports: [{ name: 'http', port: 80, protocol: 'HTTP' }],
    addresses: [],
    resolution: 'ClientSideLB',
    meshExternal: false,
    labels: {},
    serviceAccounts: [],
    clusterId: 'Cluster',
    registry: 'Cluster',
    creationTime: 0,
  };
}

function run(docs: ReadonlyArray<Doc>, services: Service[] = [], workloads?: WorkloadInfo[]) {
  return analyze({ configs: storeOf(docs), services, workloads, mesh: DEFAULT_MESH_SETTINGS });
}

const REVIEWS = service('reviews.shop.svc.cluster.local', 'shop');
const routeToSubset = (subset: string) => ({ hosts: ['reviews'], http: [{ route: [{ destination: { host: 'reviews', subset } }] }] });

describe('analyzers', () => {
  test('every analyzer reports only codes of the message table, and codes are unique', () => {
    const codes = MESSAGE_TYPES.map((m) => m.code);
    expect(new Set(codes).size).toBe(codes.length);
    for (const a of ANALYZERS) for (const c of a.codes) expect(codes).toContain(c);
  });

  test('a VirtualService route to a subset no DestinationRule defines is an error on the subset field, cleared when the rule defines it', () => {
    const broken = run([vs('reviews-route', 'shop', routeToSubset('v2')), dr('reviews', 'shop', { host: 'reviews', subsets: [{ name: 'v1', labels: { version: 'v1' } }] })], [REVIEWS]);
    expect(broken.findings).toEqual([
      {
        kind: 'VirtualService',
        namespace: 'shop',
        name: 'reviews-route',
        code: 'MESH0103',
        level: 'ERROR',
        path: 'spec.http[0].route[0].destination.subset',
        message: 'subset "v2" of host reviews.shop.svc.cluster.local is not defined by DestinationRule shop/reviews (its subsets: v1)',
      },
    ]);
    const fixed = run(
      [
        vs('reviews-route', 'shop', routeToSubset('v2')),
        dr('reviews', 'shop', { host: 'reviews', subsets: [{ name: 'v1', labels: { version: 'v1' } }, { name: 'v2', labels: { version: 'v2' } }] }),
      ],
      [REVIEWS],
    );
    expect(fixed.findings).toEqual([]);
    expect(fixed.byObject.size).toBe(0);
  });

  test('a subset without any DestinationRule for the host says so', () => {
    const r = run([vs('reviews-route', 'shop', routeToSubset('v1'))], [REVIEWS]);
    expect(r.byObject.get('VirtualService/shop/reviews-route')).toEqual([
      { code: 'MESH0103', level: 'ERROR', path: 'spec.http[0].route[0].destination.subset', message: 'subset "v1" of host reviews.shop.svc.cluster.local: no DestinationRule applies to this host' },
    ]);
  });

  test('an unknown destination host is a warning; a ServiceEntry host makes it known', () => {
    const spec = { hosts: ['api.example.com'], http: [{ route: [{ destination: { host: 'api.example.com' } }] }] };
    const unknown = run([vs('api', 'shop', spec)]);
    expect(unknown.findings.map((f) => [f.code, f.level, f.path, f.message])).toEqual([
      ['MESH0102', 'WARNING', 'spec.http[0].route[0].destination.host', 'host api.example.com is not defined by any service or ServiceEntry'],
    ]);
    const known = run([
      vs('api', 'shop', spec),
      { apiVersion: 'networking.mesh.io/v1', kind: 'ServiceEntry', metadata: { name: 'api', namespace: 'shop' }, spec: { hosts: ['*.example.com'], ports: [{ number: 443, name: 'https', protocol: 'TLS' }], resolution: 'NONE' } },
    ]);
    expect(known.findings).toEqual([]);
  });

  test('missing gateways and delegates are reported where they are named; `mesh` is not a gateway', () => {
    const r = run(
      [
        vs('front', 'shop', { hosts: ['reviews'], gateways: ['mesh', 'edge', 'infra/public'], http: [{ delegate: { name: 'inner' } }] }),
        { apiVersion: 'networking.mesh.io/v1', kind: 'Gateway', metadata: { name: 'public', namespace: 'infra' }, spec: { servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }] } },
      ],
      [REVIEWS],
    );
    expect(r.findings.map((f) => [f.code, f.path, f.message])).toEqual([
      ['MESH0101', 'spec.gateways[1]', 'Gateway shop/edge does not exist'],
      ['MESH0101', 'spec.http[0].delegate', 'delegate VirtualService shop/inner does not exist'],
    ]);
  });

  test('a Gateway selector matching no workload is an error; silent when workloads are unknown', () => {
    const gw: Doc = {
      apiVersion: 'networking.mesh.io/v1',
      kind: 'Gateway',
      metadata: { name: 'edge', namespace: 'infra' },
      spec: { selector: { app: 'edge-gw' }, servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }] },
    };
    expect(run([gw]).findings).toEqual([]);
    const none = run([gw], [], [{ namespace: 'infra', labels: { app: 'other' } }]);
    expect(none.findings.map((f) => [f.name, f.code, f.path, f.message])).toEqual([['edge', 'MESH0104', 'spec.selector', 'selector app=edge-gw matches no workload']]);
    expect(run([gw], [], [{ namespace: 'mesh-system', labels: { app: 'edge-gw', version: '1' } }]).findings).toEqual([]);
  });

  test('two DestinationRules of a namespace for one host conflict; rules with workload selectors or in other namespaces do not', () => {
    const r = run([
      dr('a-rule', 'shop', { host: 'reviews' }),
      dr('b-rule', 'shop', { host: 'reviews.shop.svc.cluster.local', trafficPolicy: { tls: { mode: 'MESH_MUTUAL' } } }),
      dr('scoped', 'shop', { host: 'reviews', workloadSelector: { matchLabels: { app: 'x' } } }),
      dr('elsewhere', 'other', { host: 'reviews.shop.svc.cluster.local' }),
    ]);
    const conflicts = r.findings.filter((f) => f.code === 'MESH0105');
    expect(conflicts.map((f) => `${f.namespace}/${f.name}`).sort()).toEqual(['shop/a-rule', 'shop/b-rule']);
    expect(conflicts[0].message).toContain('host reviews.shop.svc.cluster.local');
    expect(conflicts[0].level).toBe('WARNING');
  });

  test('a ServiceEntry without ports is a warning on spec.ports', () => {
    const r = run([{ apiVersion: 'networking.mesh.io/v1', kind: 'ServiceEntry', metadata: { name: 'db', namespace: 'shop' }, spec: { hosts: ['db.internal'], resolution: 'DNS' } }]);
    expect(r.findings.map((f) => [f.code, f.level, f.path])).toEqual([['MESH0106', 'WARNING', 'spec.ports']]);
    expect(r.findings[0].message).toContain('db.internal');
  });
});
