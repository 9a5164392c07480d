/**
 * A push after a change of a few hosts (docs/adr/0206): proxyless clients asking for the same names
 * share one list per snapshot, a client whose names the change does not reach keeps the very list it
 * holds (nothing to send, nothing to compare), and the push visits the clients the change may reach
 * before the others.
 */
import { ChangeSet, Dep } from '../../src/model/derived.js';
import { pushRequest } from '../../src/model/push-request.js';
import { mayName, pushedHosts } from '../../src/xds/push-order.js';
import { grpcClient, modelFromYaml, TypeUrl, type TestModel } from '../support/model.js';

const host = (i: number): string => `svc-${i}.default.svc.cluster.local`;
const services = (n: number): string =>
  Array.from(
    { length: n },
    (_, i) => `apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: svc-${i}, namespace: default }
spec:
  hosts: [${host(i)}]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: 8080, name: http, protocol: HTTP }]
  endpoints: [{ address: 10.1.0.${i + 1}, labels: { version: v1 } }, { address: 10.2.0.${i + 1}, labels: { version: v2 } }]
---
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: svc-${i}, namespace: default }
spec: { host: ${host(i)}, subsets: [{ name: v1, labels: { version: v1 } }, { name: v2, labels: { version: v2 } }] }
`,
  ).join('---\n');
const virtualService = (i: number, w1: number): string => `apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: svc-${i}, namespace: default }
spec:
  hosts: [${host(i)}]
  http: [{ route: [{ destination: { host: ${host(i)}, subset: v1 }, weight: ${w1} }, { destination: { host: ${host(i)}, subset: v2 }, weight: ${100 - w1} }] }]
`;

let m: TestModel;
afterEach(() => m?.stop());

describe('proxyless clients after an edit of one host', () => {
  it('share one route list per name set, kept as it is for clients the edit does not reach', () => {
    m = modelFromYaml(services(3), { mock: false });
    m.apply('vs-0.yaml', virtualService(0, 90));
    m.apply('vs-1.yaml', virtualService(1, 90));
    const edited = [`${host(0)}:8080`];
    const other = [`${host(1)}:8080`];
    const a = grpcClient('default', { app: 'a' });
    const b = grpcClient('default', { app: 'b' });
    const before = { edited: m.generateRaw(a, TypeUrl.Route, edited), other: m.generateRaw(a, TypeUrl.Route, other) };
    // two clients asking for the same names get the same list
    expect(m.generateRaw(b, TypeUrl.Route, edited)).toBe(before.edited);

    m.apply('vs-0.yaml', virtualService(0, 50));
    const after = { edited: m.generateRaw(a, TypeUrl.Route, edited), other: m.generateRaw(b, TypeUrl.Route, other) };
    expect(after.other).toBe(before.other);
    expect(after.edited).not.toBe(before.edited);
    expect(after.edited[0].version).not.toBe(before.edited[0].version);
    expect(m.generateRaw(b, TypeUrl.Route, edited)).toBe(after.edited);
    // and the client of the edited host reads the new weights
    const [rc] = m.generate(a, TypeUrl.Route, edited);
    expect(rc.virtualHosts[0].routes[0].route?.weightedClusters?.clusters.map((c) => c.weight)).toEqual([50, 50]);
    // listeners of the same names are shared too
    expect(m.generateRaw(a, TypeUrl.Listener, edited)).toBe(m.generateRaw(b, TypeUrl.Listener, edited));
  });
});

describe('the order of a push', () => {
  it('is about the hosts of the change, or about everyone when the change reaches past named hosts', () => {
    const full = pushRequest({ full: true, reason: 'config', kinds: ['VirtualService'] });
    const hosts = pushedHosts(full, ChangeSet.of([Dep.version, Dep.virtualService(host(0)), Dep.gatewayVirtualServices('mesh')]));
    expect(hosts && [...hosts]).toEqual([host(0)]);
    expect(pushedHosts(full, ChangeSet.ALL)).toBeUndefined();
    expect(pushedHosts(full, ChangeSet.of([Dep.virtualService(host(0)), Dep.policies]))).toBeUndefined();
    expect(pushedHosts(full, ChangeSet.of([Dep.wildcardVirtualServices]))).toBeUndefined();
    expect(pushedHosts(full, ChangeSet.of([Dep.sidecars]))).toBeUndefined();
    // an endpoint push is about its hosts
    const eds = pushRequest({ full: false, reason: 'endpoint', edsHosts: [host(2)] });
    expect([...pushedHosts(eds, ChangeSet.ALL)!]).toEqual([host(2)]);
  });

  it('visits first the clients whose names may name those hosts', () => {
    const hosts = new Set([host(0)]);
    const set = (...names: string[]): ReadonlySet<string> => new Set(names);
    expect(mayName(set(`${host(0)}:8080`), hosts)).toBe(true);
    expect(mayName(set(`outbound|8080|v1|${host(0)}`), hosts)).toBe(true);
    expect(mayName(set(`${host(1)}:8080`, `outbound|8080|v1|${host(1)}`), hosts)).toBe(false);
    // a wildcard subscription, or a name that names no host (a sidecar's route by port, a gRPC
    // server's listener), may be reached by anything
    expect(mayName(undefined, hosts)).toBe(true);
    expect(mayName(set('8080'), hosts)).toBe(true);
    expect(mayName(set('grpc/server?xds.resource.listening_address=10.0.0.1:8080'), hosts)).toBe(true);
  });
});
