/**
 * DNS capture end to end (docs/adr/0187): the built daemon on a config directory serves the name
 * table; the agent's DNS capture (its real name-table client over gRPC, as the node of a sidecar with
 * DNS_CAPTURE and DNS_AUTO_ALLOCATE) answers node:dns Resolver questions over UDP for table names
 * with the table's addresses, and forwards others to a tiny real DNS server standing in for the
 * resolver of resolv.conf (on port 53 of a loopback address of its own), over UDP and TCP.
 */
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { Resolver } from 'node:dns/promises';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { agentMetrics } from '../../src/agent/metrics.js';
import { startDnsCapture, type DnsCapture } from '../../src/agent/dns/capture.js';
import { QTYPE, RCODE, addressAnswer, emptyAnswer, parseQuery } from '../../src/agent/dns/wire.js';
import { startDaemon, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { GO_TOOL_BUILD_TIMEOUT_MS, goToolPath, runXdsValidate, type XdsValidateReport } from '../support/go-tools.js';

const CONFIG = `
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: ext, namespace: default }
spec:
  hosts: [ext.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: 8080, name: http, protocol: HTTP }]
  endpoints: [{ address: 10.1.0.1 }]
---
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: api, namespace: default }
spec:
  hosts: [api.example.com]
  addresses: [10.20.0.1, 2001:db8::1]
  location: MESH_EXTERNAL
  resolution: DNS
  ports: [{ number: 443, name: tls, protocol: TLS }]
`;

/** A real DNS server for one name (UDP and TCP on port 53): `outside.example.org` A 192.0.2.7; NXDOMAIN otherwise. */
async function upstreamServer(host: string): Promise<{ udp: UdpSocket; tcp: Server; asked: string[] }> {
  const asked: string[] = [];
  const reply = (msg: Buffer): Buffer => {
    const q = parseQuery(msg);
    asked.push(q.name);
    return q.name === 'outside.example.org' && q.qtype === QTYPE.A ? addressAnswer(msg, q, ['192.0.2.7'], 60) : emptyAnswer(msg, q, RCODE.NXDOMAIN);
  };
  const udp = createSocket('udp4');
  udp.on('message', (msg, from) => udp.send(reply(msg), from.port, from.address));
  await new Promise<void>((r) => udp.bind(53, host, () => r()));
  const tcp = createServer((s) => {
    let buf = Buffer.alloc(0);
    s.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const out = reply(buf.subarray(2, 2 + buf.readUInt16BE(0)));
        const len = Buffer.alloc(2);
        len.writeUInt16BE(out.length);
        s.end(Buffer.concat([len, out]));
      }
    });
  });
  await new Promise<void>((r) => tcp.listen(53, host, () => r()));
  return { udp, tcp, asked };
}

/** One question over TCP to host:port; the answer's rcode and A addresses. */
async function askTcp(port: number, name: string): Promise<{ rcode: number; addresses: string[] }> {
  const labels = name.split('.').flatMap((l) => [Buffer.from([l.length]), Buffer.from(l)]);
  const header = Buffer.from([0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
  const msg = Buffer.concat([header, ...labels, Buffer.from([0, 0, 1, 0, 1])]);
  const len = Buffer.alloc(2);
  len.writeUInt16BE(msg.length);
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port });
    let buf = Buffer.alloc(0);
    s.on('error', reject);
    s.on('connect', () => s.write(Buffer.concat([len, msg])));
    s.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      if (buf.length < 2 || buf.length < 2 + buf.readUInt16BE(0)) return;
      const r = buf.subarray(2);
      s.destroy();
      const ancount = r.readUInt16BE(6);
      const addresses: string[] = [];
      // answers follow the question; each A record is a 2-byte pointer, 10 bytes of fields, 4 of address
      let at = msg.length;
      for (let i = 0; i < ancount; i++) {
        const rdlen = r.readUInt16BE(at + 10);
        if (rdlen === 4) addresses.push([...r.subarray(at + 12, at + 16)].join('.'));
        at += 12 + rdlen;
      }
      resolve({ rcode: r.readUInt16BE(2) & 0xf, addresses });
    });
  });
}

describe('DNS capture: the agent answers from the daemon’s name table and forwards the rest', () => {
  let dir: string;
  let daemon: Daemon;
  let capture: DnsCapture;
  let upstream: Awaited<ReturnType<typeof upstreamServer>>;
  const metrics = agentMetrics(() => 0);
  const upstreamHost = `127.0.${40 + (process.pid % 200)}.53`;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mesh-dns-'));
    await writeFile(join(dir, 'config.yaml'), CONFIG);
    upstream = await upstreamServer(upstreamHost);
    await writeFile(join(dir, 'resolv.conf'), `# test\nnameserver ${upstreamHost}\nsearch default.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n`);
    daemon = await startDaemon({ configDir: dir });
    capture = await startDnsCapture({
      discoveryAddress: daemon.grpcAddr,
      serverName: 'localhost',
      credentials: () => grpc.credentials.createInsecure(),
      node: { id: 'sidecar~10.0.0.50~client-1.default~default.svc.cluster.local', metadata: { NAMESPACE: 'default', DNS_CAPTURE: 'true', DNS_AUTO_ALLOCATE: 'true' } },
      host: '127.0.0.1',
      port: 0,
      resolvConfPath: join(dir, 'resolv.conf'),
      log: pino({ level: 'silent' }),
      metrics,
    });
    await eventually('the first name table', () => capture.client.received > 0, { timeoutMs: 20_000 });
  }, 120_000);

  afterAll(async () => {
    await capture?.stop();
    await daemon?.stop();
    try {
      upstream?.udp.close();
    } catch {
      // the last test closed it already
    }
    upstream?.tcp.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const resolver = (): Resolver => {
    const r = new Resolver({ timeout: 3000, tries: 1 });
    r.setServers([`127.0.0.1:${capture.proxy.port}`]);
    return r;
  };

  it('answers a host without addresses with its automatic address, under its full and short names', async () => {
    const [full] = await resolver().resolve4('ext.default.svc.cluster.local');
    expect(full).toMatch(/^240\.240\.\d+\.\d+$/);
    expect(await resolver().resolve4('ext')).toEqual([full]);
    expect(await resolver().resolve4('ext.default')).toEqual([full]);
    // a search domain appended by the application's resolver
    expect(await resolver().resolve4('ext.default.svc.cluster.local.cluster.local')).toEqual([full]);
    // the daemon's listeners for the same node route by that address
    const dump = (await daemon.debug('config_dump?proxyID=sidecar~10.0.0.50~client-1.default~default.svc.cluster.local')) as unknown;
    expect(JSON.stringify(dump)).toContain(full);
  });

  it('answers declared addresses as A and AAAA records', async () => {
    expect(await resolver().resolve4('api.example.com')).toEqual(['10.20.0.1']);
    expect(await resolver().resolve6('api.example.com')).toEqual(['2001:db8::1']);
  });

  it('forwards other names to the upstream resolver, over UDP and TCP, and passes its NXDOMAIN on', async () => {
    expect(await resolver().resolve4('outside.example.org')).toEqual(['192.0.2.7']);
    await expect(resolver().resolve4('nowhere.example.org')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    expect(await askTcp(capture.proxy.port, 'outside.example.org')).toEqual({ rcode: 0, addresses: ['192.0.2.7'] });
    expect(await askTcp(capture.proxy.port, 'ext.default.svc.cluster.local')).toMatchObject({ rcode: 0, addresses: [expect.stringMatching(/^240\.240\./)] });
    expect(upstream.asked).toContain('outside.example.org');
    expect(upstream.asked).not.toContain('ext.default.svc.cluster.local');
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/mesh_agent_dns_requests_total\{answer="forwarded",transport="udp"\} [1-9]/);
    expect(text).toMatch(/mesh_agent_dns_requests_total\{answer="table",transport="tcp"\} [1-9]/);
    expect(text).toMatch(/mesh_agent_dns_names [1-9]/);
  });

  it('serves the sidecar that resolves names to automatic addresses a configuration that passes Envoy validation and whose references all resolve', async () => {
    const bin = await goToolPath('xds-validate');
    const args = [
      ...['-addr', daemon.grpcAddr, '-node-id', 'sidecar~10.0.0.51~client-2.default~default.svc.cluster.local'],
      ...['-metadata', JSON.stringify({ NAMESPACE: 'default', DNS_CAPTURE: 'true', DNS_AUTO_ALLOCATE: 'true' })],
      ...['-timeout', '30s', '-dump'],
    ];
    const report = await runXdsValidate<XdsValidateReport>(bin, args);
    expect(report.errors).toEqual([]);
    expect(report.ok).toBe(true);
    const [address] = await resolver().resolve4('ext.default.svc.cluster.local');
    expect(JSON.stringify(report.dump['type.googleapis.com/envoy.config.listener.v3.Listener'])).toContain(address);
    expect(Object.keys(report.dump['type.googleapis.com/envoy.config.route.v3.RouteConfiguration'] ?? {})).toContain('ext.default.svc.cluster.local:8080');
  }, GO_TOOL_BUILD_TIMEOUT_MS);

  it('answers SERVFAIL when the upstream does not answer', async () => {
    upstream.udp.close();
    await expect(resolver().resolve4('later.example.org')).rejects.toMatchObject({ code: 'ESERVFAIL' });
  }, 20_000);
});
