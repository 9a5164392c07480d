/**
 * A snapshot rebuilt for one changed document shares what that document does not reach with the
 * snapshot before it (docs/adr/0206): a VirtualService edit does not read the registries' services
 * and endpoints again, nor rebuild the DestinationRule, service and policy indexes. What a user
 * notices is that every edit is still seen, whichever kind it touches, and that the edits in between
 * do not undo one another.
 */
import { grpcClient, modelFromYaml, TypeUrl, type TestModel } from '../support/model.js';

const HOST = 'echo.default.svc.cluster.local';
const TARGET = `${HOST}:8080`;

const serviceEntry = (addresses: string[]): string => `apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: default }
spec:
  hosts: [${HOST}]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: 8080, name: http, protocol: HTTP }]
  endpoints:
${addresses.map((a, i) => `    - { address: ${a}, labels: { version: v${(i % 2) + 1} } }`).join('\n')}
`;
const destinationRule = (subsets: string[]): string => `apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: echo, namespace: default }
spec:
  host: ${HOST}
  subsets:
${subsets.map((s) => `    - { name: ${s}, labels: { version: ${s} } }`).join('\n')}
`;
const virtualService = (w1: number, w2: number): string => `apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: echo, namespace: default }
spec:
  hosts: [${HOST}]
  http:
    - route:
        - { destination: { host: ${HOST}, subset: v1 }, weight: ${w1} }
        - { destination: { host: ${HOST}, subset: v2 }, weight: ${w2} }
`;
const peerAuthentication = (mode: string): string => `apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata: { name: default, namespace: default }
spec: { mtls: { mode: ${mode} } }
`;

let m: TestModel;
afterEach(() => m?.stop());

function weights(): Record<string, number | undefined> {
  const [rc] = m.generate(grpcClient(), TypeUrl.Route, [TARGET]);
  const clusters = rc.virtualHosts[0].routes[0].route?.weightedClusters?.clusters ?? [];
  return Object.fromEntries(clusters.map((c) => [c.name, c.weight]));
}

describe('a snapshot rebuilt for one changed document', () => {
  beforeEach(() => {
    m = modelFromYaml('', { mock: false });
    m.apply('se.yaml', serviceEntry(['10.1.0.1', '10.1.0.2']));
    m.apply('dr.yaml', destinationRule(['v1', 'v2']));
    m.apply('vs.yaml', virtualService(90, 10));
    m.apply('pa.yaml', peerAuthentication('PERMISSIVE'));
  });

  it('serves a VirtualService edit without reading the services and endpoints again', () => {
    expect(weights()).toEqual({ [`outbound|8080|v1|${HOST}`]: 90, [`outbound|8080|v2|${HOST}`]: 10 });
    const before = m.model.current();
    m.apply('vs.yaml', virtualService(50, 50));
    const after = m.model.current();
    expect(after.push.version).not.toBe(before.push.version);
    expect(weights()).toEqual({ [`outbound|8080|v1|${HOST}`]: 50, [`outbound|8080|v2|${HOST}`]: 50 });
    // what the edit cannot reach is the previous snapshot's
    expect(after.push.services).toBe(before.push.services);
    expect(after.endpoints).toBe(before.endpoints);
    expect(after.push.policies).toBe(before.push.policies);
  });

  it('still sees edits of every other kind, before and after VirtualService edits', () => {
    const client = grpcClient();
    const subsets = (): string[] => (m.model.current().push.destinationRule(client, m.model.current().push.servicesForHost(HOST)[0])?.spec.subsets ?? []).map((s) => s.name ?? '');
    const endpoints = (): string[] => m.model.current().endpoints.get(HOST).endpoints.map((e) => e.address).sort();
    const mtls = (): string => m.model.current().push.policies.mtlsFor({ namespace: 'default', labels: {} }).mode;

    m.apply('dr.yaml', destinationRule(['v1', 'v2', 'v3']));
    expect(subsets()).toEqual(['v1', 'v2', 'v3']);
    m.apply('vs.yaml', virtualService(50, 50));
    expect(subsets()).toEqual(['v1', 'v2', 'v3']);

    m.apply('se.yaml', serviceEntry(['10.1.0.1', '10.1.0.2', '10.1.0.3']));
    expect(endpoints()).toEqual(['10.1.0.1', '10.1.0.2', '10.1.0.3']);
    m.apply('vs.yaml', virtualService(20, 80));
    expect(endpoints()).toEqual(['10.1.0.1', '10.1.0.2', '10.1.0.3']);

    expect(mtls()).toBe('PERMISSIVE');
    m.apply('pa.yaml', peerAuthentication('STRICT'));
    expect(mtls()).toBe('STRICT');
    m.apply('vs.yaml', virtualService(70, 30));
    expect(mtls()).toBe('STRICT');
    expect(weights()).toEqual({ [`outbound|8080|v1|${HOST}`]: 70, [`outbound|8080|v2|${HOST}`]: 30 });

    // a removed DestinationRule and VirtualService are gone from the next snapshot
    m.apply('dr.yaml', '');
    expect(subsets()).toEqual([]);
    m.apply('vs.yaml', '');
    expect(Object.keys(weights())).toEqual([]);
  });
});
