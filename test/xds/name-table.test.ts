/**
 * The name table (NDS, docs/adr/0187) as an agent that captures DNS receives it: a real grpc-js ADS
 * server on loopback and raw state-of-the-world clients with the node metadata DNS_CAPTURE and
 * DNS_AUTO_ALLOCATE. The addresses in the table are the ones the same proxy's listeners route by.
 */
import { NameTable, type NameEntry } from '../../src/gen/mesh/v1/dns/name_table.js';
import { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import type { DiscoveryResponse } from '../../src/gen/envoy/service/discovery/v3/discovery.js';
import { synczEntries, type DebugDeps } from '../../src/server/debug-views.js';
import { TypeUrl } from '../../src/xds/types.js';
import { eventually } from '../support/eventually.js';
import { namesOf, type NodeSpec, type SotwStream } from '../support/ads-client.js';
import { serviceEntry, sidecarNode, startAds, type Harness } from './ads-harness.js';

const EXT = 'ext.default.svc.cluster.local';
const API = `
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: api, namespace: default }
spec:
  hosts: [api.example.com]
  addresses: [10.20.0.1, 2001:db8::1]
  location: MESH_EXTERNAL
  resolution: DNS
  ports: [{ number: 443, name: tls, protocol: TLS }]
---
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: wild, namespace: default }
spec:
  hosts: ['*.wild.example.com']
  location: MESH_EXTERNAL
  resolution: NONE
  ports: [{ number: 443, name: tls, protocol: TLS }]
---
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: passthrough, namespace: default }
spec:
  hosts: [none.example.com]
  location: MESH_EXTERNAL
  resolution: NONE
  ports: [{ number: 9000, name: tcp, protocol: TCP }]
---
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: other, namespace: other }
spec:
  hosts: [other.other.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: 8080, name: http, protocol: HTTP }]
  endpoints: [{ address: 10.1.0.9 }]
---
`;
const BASE = serviceEntry('ext', ['10.1.0.1']) + API;
/** A VirtualService edit: it changes routes, not names or addresses. */
const EXT_TIMEOUT = `
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: ext, namespace: default }
spec:
  hosts: [ext]
  http: [{ timeout: 3s, route: [{ destination: { host: ext } }] }]
---
`;

const node = (meta: Record<string, string>, ns = 'default'): NodeSpec => {
  const n = sidecarNode(ns);
  return { ...n, metadata: { ...n.metadata, ...meta } };
};
const CAPTURE_AUTO = { DNS_CAPTURE: 'true', DNS_AUTO_ALLOCATE: 'true' };

const harnesses: Harness[] = [];
async function start(yaml = BASE): Promise<Harness> {
  const h = await startAds(yaml, { features: { mock: false } });
  harnesses.push(h);
  return h;
}
afterEach(async () => {
  for (const h of harnesses.splice(0)) await h.close();
});

async function table(s: SotwStream): Promise<{ res: DiscoveryResponse; byHost: Map<string, NameEntry> }> {
  s.send({ typeUrl: TypeUrl.NameTable });
  const res = await s.next();
  expect(res.typeUrl).toBe(TypeUrl.NameTable);
  s.ack(res);
  return { res, byHost: decodeTable(res) };
}

function decodeTable(res: DiscoveryResponse): Map<string, NameEntry> {
  expect(namesOf(res)).toEqual(['']);
  const t = NameTable.decode(res.resources[0].value);
  return new Map(t.entries.map((e) => [e.hostname, e]));
}

describe('the name table', () => {
  it('gives a sidecar that captures DNS with automatic addresses every visible host with its address and short names; the listeners route by the same addresses', async () => {
    const h = await start();
    const s = h.sotw(node(CAPTURE_AUTO));
    const { byHost } = await table(s);
    const ext = byHost.get(EXT)!;
    expect(ext.addresses).toHaveLength(1);
    expect(ext.addresses[0]).toMatch(/^240\.240\.\d+\.\d+$/);
    expect(ext.autoAllocated).toBe(true);
    expect(ext.aliases).toEqual(['ext.default.svc', 'ext.default', 'ext']);
    expect(byHost.get('api.example.com')).toEqual({ hostname: 'api.example.com', addresses: ['10.20.0.1', '2001:db8::1'], aliases: [], autoAllocated: false });
    // another namespace's host: no bare name for a client of default
    expect(byHost.get('other.other.svc.cluster.local')?.aliases).toEqual(['other.other.svc', 'other.other']);
    // wildcards and resolution NONE have no address to answer with
    expect([...byHost.keys()].sort()).toEqual(['api.example.com', EXT, 'other.other.svc.cluster.local']);

    s.send({ typeUrl: TypeUrl.Listener });
    const lds = await s.next();
    s.ack(lds);
    const chains = lds.resources.map((a) => Listener.decode(a.value)).flatMap((l) => l.filterChains.map((c) => c.filterChainMatch?.prefixRanges.map((p) => p.addressPrefix) ?? []));
    expect(chains.flat()).toContain(ext.addresses[0]);
  });

  it('gives a sidecar that captures DNS without automatic addresses the declared addresses only', async () => {
    const h = await start();
    const { byHost } = await table(h.sotw(node({ DNS_CAPTURE: 'true' })));
    expect([...byHost.keys()]).toEqual(['api.example.com']);
  });

  it('shows a pod whose agent holds the name-table stream as one proxy in syncz, the table inside the proxy\'s entry', async () => {
    const h = await start();
    const n = node(CAPTURE_AUTO);
    const envoy = h.sotw(n);
    envoy.send({ typeUrl: TypeUrl.Cluster });
    envoy.ack(await envoy.next());
    const agent = h.sotw(n);
    await table(agent);
    type Entry = { proxy: string; connection: string; watches: Record<string, { resources: number; status: string }> };
    const entries = (): Entry[] => [...synczEntries({ ads: h.ads, identity: 'meshd-0' } as unknown as DebugDeps)] as Entry[];
    const one = await eventually('the table ACKed', async () => {
      const e = entries().filter((x) => x.proxy === n.id);
      return e.some((x) => x.watches.nds?.status === 'SYNCED') ? e : undefined;
    });
    expect(one).toHaveLength(1);
    expect(one[0]!.watches.cds!.resources).toBeGreaterThan(0);
    expect(one[0]!.watches.nds).toMatchObject({ resources: 1, status: 'SYNCED' });
    // the agent alone (its proxy gone) is listed as it is
    envoy.close();
    await eventually('the proxy\'s stream gone', async () => (h.ads.connections.size === 1 ? true : undefined));
    const alone = entries().filter((e) => e.proxy === n.id);
    expect(alone).toHaveLength(1);
    expect(Object.keys(alone[0]!.watches)).toContain('nds');
  });

  it('sends nothing of the type to a sidecar that does not capture DNS', async () => {
    const h = await start();
    const s = h.sotw(node({ DNS_AUTO_ALLOCATE: 'true' }));
    s.send({ typeUrl: TypeUrl.NameTable });
    const res = await s.next();
    expect(res.typeUrl).toBe(TypeUrl.NameTable);
    expect(res.resources).toEqual([]);
  });

  it('is pushed when names or addresses change, not on a VirtualService edit, and the same bytes go to every proxy of a scope', async () => {
    const h = await start();
    const a = h.sotw(node(CAPTURE_AUTO));
    const b = h.sotw({ ...node(CAPTURE_AUTO), id: 'sidecar~10.0.0.60~client-2.default~default.svc.cluster.local' });
    const first = await table(a);
    const second = await table(b);
    expect(Buffer.from(second.res.resources[0].value).equals(Buffer.from(first.res.resources[0].value))).toBe(true);
    await h.change(EXT_TIMEOUT);
    expect(await a.quietTypes()).toEqual([]);
    await h.change(serviceEntry('added', ['10.1.0.5']));
    const next = await a.next();
    expect(next.typeUrl).toBe(TypeUrl.NameTable);
    const byHost = decodeTable(next);
    expect(byHost.get('added.default.svc.cluster.local')?.addresses[0]).toMatch(/^240\.240\./);
    // the other hosts keep their addresses
    expect(byHost.get(EXT)).toEqual(first.byHost.get(EXT));
    a.ack(next);
    expect(await a.quietTypes()).toEqual([]);
  });

  it('is served over delta xDS as one resource, replaced when names change and not resent on a VirtualService edit', async () => {
    const h = await start();
    const d = h.delta(node(CAPTURE_AUTO));
    d.send({ typeUrl: TypeUrl.NameTable, subscribe: ['*'] });
    const first = await d.next();
    expect(first.typeUrl).toBe(TypeUrl.NameTable);
    expect(first.resources.map((r) => r.name)).toEqual(['']);
    const before = new Map(NameTable.decode(first.resources[0]!.resource!.value).entries.map((e) => [e.hostname, e]));
    expect(before.get(EXT)?.addresses[0]).toMatch(/^240\.240\./);
    d.ack(first);
    await h.change(EXT_TIMEOUT);
    expect(await d.quietTypes()).toEqual([]);
    const from = d.responses.length;
    await h.change(serviceEntry('added', ['10.1.0.5']));
    const next = await d.nextMatching((r) => r.typeUrl === TypeUrl.NameTable, 5000, from);
    expect(next.resources.map((r) => r.name)).toEqual(['']);
    expect(next.removedResources).toEqual([]);
    const after = new Map(NameTable.decode(next.resources[0]!.resource!.value).entries.map((e) => [e.hostname, e]));
    expect(after.get('added.default.svc.cluster.local')?.addresses[0]).toMatch(/^240\.240\./);
    expect(after.get(EXT)).toEqual(before.get(EXT));
    d.ack(next);
  });

  it('follows the Sidecar’s egress hosts', async () => {
    const h = await start(
      BASE +
        `
apiVersion: networking.mesh.io/v1
kind: Sidecar
metadata: { name: default, namespace: default }
spec:
  egress: [{ hosts: ['./*'] }]
---
`,
    );
    const { byHost } = await table(h.sotw(node(CAPTURE_AUTO)));
    expect([...byHost.keys()].sort()).toEqual(['api.example.com', EXT]);
  });
});
