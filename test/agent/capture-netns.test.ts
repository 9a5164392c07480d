/**
 * `mesh-agent capture` for real: the rules are applied inside a network namespace this test
 * creates (test/support/netns.ts), with exactly the arguments the injector renders for a pod's
 * `mesh-init` container, and real TCP connections show where traffic goes:
 *   - an application (not uid 1337) reaching out lands on the proxy's outbound port 15001;
 *   - the proxy itself (uid and gid 1337, through setpriv) reaches the real destination;
 *   - an excluded outbound port and an excluded range are left alone;
 *   - a client of this machine connecting in lands on the inbound port 15006, except on an
 *     excluded inbound port;
 *   - a second run replaces the rules instead of adding a second set;
 *   - with --ipv6 the same holds over an IPv6 link.
 * Needs root and netfilter; skipped with the reason when the machine cannot make namespaces or the
 * kernel has no nat table. No control plane.
 */
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { DEFAULT_INJECTOR_CONFIG, parseInjectionValues, type InjectionInputs } from '../../src/inject/config.js';
import { injectPod } from '../../src/inject/inject.js';
import type { Pod } from '../../src/inject/pod.js';
import { createTestHost, netnsSupport, ownedName, removeLeftovers, type TestHost } from '../support/netns.js';

const AGENT = path.resolve('dist/cli/mesh-agent.js');

function netfilterSupport(): { ok: boolean; reason?: string } {
  const ns = netnsSupport();
  if (!ns.ok) return ns;
  const probe = `mesh-captprobe-${process.pid}`;
  spawnSync('ip', ['netns', 'add', probe]);
  try {
    const r = spawnSync('ip', ['netns', 'exec', probe, 'iptables-save', '-t', 'nat'], { encoding: 'utf8' });
    if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true }; // iptables missing: the test fails, naming it
    if (r.status !== 0 && /table|protocol|module|not supported|does not exist/i.test(r.stderr)) {
      return { ok: false, reason: `the kernel has no netfilter nat table: ${r.stderr.trim()}` };
    }
    return { ok: true };
  } finally {
    spawnSync('ip', ['netns', 'del', probe]);
  }
}

const support = netfilterSupport();
if (!support.ok) process.stderr.write(`test/agent/capture-netns: skipped: ${support.reason}\n`);
const maybe = support.ok ? describe : describe.skip;

const PREFIX = `mesh-capt${randomInt(1000, 9999)}-`;
const address = (): string => `203.0.113.${randomInt(2, 254)}`;

/** Listeners inside the namespace: each port answers its name, then closes. Prints "ready". */
const LISTENERS = `
const net = require('node:net');
const pairs = process.argv.slice(1).map((a) => a.split('='));
let up = 0;
for (const [port, name] of pairs) {
  const on = process.env.LISTEN_IPV6 ? { host: '::', ipv6Only: true } : { host: '0.0.0.0' };
  net.createServer((s) => s.end(name + '\\n')).listen({ port: Number(port), ...on }, () => { if (++up === pairs.length) console.log('ready'); });
}
process.stdin.on('end', () => process.exit(0)).resume();
`;

/** A client: connects to host:port, prints what it is told (or the error code). */
const CLIENT = `
const [host, port] = process.argv.slice(1);
const s = require('node:net').connect(Number(port), host);
let out = '';
s.setEncoding('utf8').on('data', (d) => (out += d)).on('end', () => console.log(out.trim()));
s.on('error', (e) => console.log('error ' + e.code));
s.setTimeout(5000, () => { console.log('timeout'); s.destroy(); });
`;

/** A UDP client: sends one datagram to host:port, prints the first reply (or timeout). */
const UDP_CLIENT = `
const [host, port] = process.argv.slice(1);
const d = require('node:dgram').createSocket('udp4');
d.on('message', (m) => { console.log(m.toString()); process.exit(0); });
d.send('question', Number(port), host);
setTimeout(() => { console.log('timeout'); process.exit(0); }, 5000);
`;

/** A UDP server inside the namespace on 0.0.0.0:<port> answering <name> to every datagram. Prints "ready". */
const UDP_LISTENER = `
const [port, name] = process.argv.slice(1);
const d = require('node:dgram').createSocket('udp4');
d.on('message', (m, from) => d.send(name, from.port, from.address));
d.bind(Number(port), '0.0.0.0', () => console.log('ready'));
process.stdin.on('end', () => process.exit(0)).resume();
`;

function ask(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    let out = '';
    s.setEncoding('utf8').on('data', (d: string) => (out += d)).on('end', () => resolve(out.trim()));
    s.on('error', (e: NodeJS.ErrnoException) => resolve(`error ${e.code ?? e.message}`));
    s.setTimeout(5000, () => {
      s.destroy();
      resolve('timeout');
    });
  });
}

function inputs(): InjectionInputs {
  return {
    config: DEFAULT_INJECTOR_CONFIG,
    values: parseInjectionValues(JSON.stringify({ global: { hub: 'registry.example/mesh', tag: 'test' } })),
    mesh: { trustDomain: 'cluster.local' },
    revision: 'default',
    domain: 'cluster.local',
    clusterSupportsNativeSidecars: false,
    probeLocalhost: false,
    legacyFsGroup: false,
  };
}

/** The `mesh-init` arguments the injector renders for a pod with these annotations. */
function initArgs(annotations: Record<string, string>): string[] {
  const pod: Pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'shop', annotations }, spec: { containers: [{ name: 'web', image: 'web' }] } } as Pod;
  const init = injectPod(pod, 'shop', inputs()).pod.spec?.initContainers?.find((c) => c.name === 'mesh-init');
  if (!init?.args) throw new Error('the injector rendered no mesh-init container');
  return init.args;
}

maybe('mesh-agent capture in a network namespace', () => {
  let host: TestHost;
  const servers: Server[] = [];
  let realPort = 0;
  let excludedPort = 0;

  const hostServer = async (name: string, gateway: string): Promise<number> => {
    const server = createServer((s) => s.end(`${name}\n`));
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, gateway, resolve));
    return (server.address() as AddressInfo).port;
  };

  /** Connects from inside the namespace as root, or as the proxy (uid/gid 1337). */
  const inside = async (port: number, as: 'app' | 'proxy', target = host.gateway): Promise<string> => {
    const node = [process.execPath, '-e', CLIENT, target, String(port)];
    const argv = as === 'proxy' ? ['setpriv', '--reuid=1337', '--regid=1337', '--clear-groups', ...node] : node;
    const r = await host.exec(argv, { timeoutMs: 20_000 });
    return r.stdout.trim() || `exit ${String(r.code)}: ${r.stderr.trim()}`;
  };

  const capture = async (args: string[]): Promise<{ code: number | null; stderr: string }> => {
    const r = await host.exec([process.execPath, AGENT, ...args], { timeoutMs: 30_000 });
    return { code: r.code, stderr: r.stderr };
  };

  beforeAll(async () => {
    for (let attempt = 0; ; attempt++) {
      try {
        host = await createTestHost({ name: ownedName(PREFIX, 'pod'), address: address() });
        break;
      } catch (err) {
        if (attempt >= 4 || !/already routed|routed elsewhere/.test(String(err))) throw err;
      }
    }
    realPort = await hostServer('real destination', host.gateway);
    excludedPort = await hostServer('real destination (excluded port)', host.gateway);
    const listeners = host.spawn([process.execPath, '-e', LISTENERS, '15001=outbound proxy', '15006=inbound proxy', '8080=app 8080', '8081=app 8081', '15053=dns proxy (tcp)'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const udpDns = host.spawn([process.execPath, '-e', UDP_LISTENER, '15053', 'dns proxy (udp)'], { stdio: ['pipe', 'pipe', 'pipe'] });
    for (const child of [listeners, udpDns]) {
      await new Promise<void>((resolve, reject) => {
        let stderr = '';
        child.stderr?.setEncoding('utf8').on('data', (c: string) => (stderr += c));
        createInterface({ input: child.stdout! }).once('line', () => resolve());
        child.once('exit', (code) => reject(new Error(`listeners exited with ${String(code)}: ${stderr}`)));
      });
    }
  }, 60_000);

  afterAll(async () => {
    for (const s of servers) s.close();
    await host?.destroy();
    await removeLeftovers(PREFIX, 'all');
  });

  it('before any rule, an outbound connection reaches its real destination', async () => {
    expect(await inside(realPort, 'app')).toBe('real destination');
  });

  it('with the injector\'s mesh-init arguments: outbound to 15001, the proxy\'s own traffic and excluded ports left alone, inbound to 15006', async () => {
    const args = initArgs({ 'traffic.sidecar.mesh.io/excludeOutboundPorts': String(excludedPort), 'traffic.sidecar.mesh.io/excludeInboundPorts': '8081' });
    expect(args[0]).toBe('capture');
    const applied = await capture(args);
    expect(applied).toMatchObject({ code: 0 });
    expect(applied.stderr).toContain('ipv4 rules applied');

    expect(await inside(realPort, 'app')).toBe('outbound proxy');
    expect(await inside(realPort, 'proxy')).toBe('real destination');
    expect(await inside(excludedPort, 'app')).toBe('real destination (excluded port)');
    // loopback is never captured: the app reaches its own listener
    expect(await inside(8080, 'app', '127.0.0.1')).toBe('app 8080');

    expect(await ask(host.address, 8080)).toBe('inbound proxy');
    expect(await ask(host.address, 8081)).toBe('app 8081');
    // the proxy's own ports are excluded by the injector: the agent's listener answers for itself
    expect(await ask(host.address, 15006)).toBe('inbound proxy');
  }, 90_000);

  it('a second run replaces the rules (one jump per chain) and honours an excluded range', async () => {
    const args = initArgs({ 'traffic.sidecar.mesh.io/excludeOutboundIPRanges': `${host.gateway}/32` });
    const again = await capture(args);
    expect(again).toMatchObject({ code: 0 });
    expect(again.stderr).toContain('replaced an earlier run');
    const saved = await host.exec(['iptables-save', '-t', 'nat']);
    expect(saved.stdout.split('\n').filter((l) => /^-A (PREROUTING|OUTPUT) .*-j MESH_/.test(l))).toEqual(['-A PREROUTING -p tcp -j MESH_INBOUND', '-A OUTPUT -p tcp -j MESH_OUTPUT']);
    expect(saved.stdout).not.toContain(`--dport ${excludedPort}`);

    expect(await inside(realPort, 'app')).toBe('real destination');
    expect(await ask(host.address, 8081)).toBe('inbound proxy');
  }, 90_000);

  it('with DNS capture in the proxy metadata: the app\'s port-53 UDP and TCP reach the agent\'s DNS port 15053, the proxy\'s own DNS its real resolver', async () => {
    // the real resolver, on the gateway: port 53 over UDP and TCP
    const udp = createSocket('udp4');
    udp.on('message', (_m, from) => udp.send('real resolver (udp)', from.port, from.address));
    await new Promise<void>((resolve) => udp.bind(53, host.gateway, () => resolve()));
    const tcp = createServer((s) => s.end('real resolver (tcp)\n'));
    servers.push(tcp);
    await new Promise<void>((resolve) => tcp.listen(53, host.gateway, resolve));
    try {
      const args = initArgs({ 'proxy.mesh.io/config': 'proxyMetadata: {MESH_META_DNS_CAPTURE: "true"}' });
      expect(args).toContain('--redirect-dns');
      const applied = await capture(args);
      expect(applied).toMatchObject({ code: 0 });
      expect(applied.stderr).toContain('DNS (port 53) -> 15053');
      const udpAsk = async (as: 'app' | 'proxy'): Promise<string> => {
        const node = [process.execPath, '-e', UDP_CLIENT, host.gateway, '53'];
        const r = await host.exec(as === 'proxy' ? ['setpriv', '--reuid=1337', '--regid=1337', '--clear-groups', ...node] : node, { timeoutMs: 20_000 });
        return r.stdout.trim() || `exit ${String(r.code)}: ${r.stderr.trim()}`;
      };
      expect(await udpAsk('app')).toBe('dns proxy (udp)');
      expect(await udpAsk('proxy')).toBe('real resolver (udp)');
      // TCP to port 53 goes to the DNS port, not to the outbound proxy
      expect(await inside(53, 'app')).toBe('dns proxy (tcp)');
      expect(await inside(53, 'proxy')).toBe('real resolver (tcp)');
      // other outbound TCP is captured as before
      expect(await inside(realPort, 'app')).toBe('outbound proxy');
    } finally {
      udp.close();
    }
  }, 90_000);

  it('with --ipv6, IPv6 is captured the same way: the app to 15001, the proxy to its real destination', async () => {
    // an IPv6 link between this machine (…::1) and the namespace (…::2), without duplicate address detection
    const net = `fd00:6d65:${(process.pid & 0xffff).toString(16)}`;
    const [hostSide, podSide] = [`${net}::1`, `${net}::2`];
    const ipRun = (args: string[]): void => {
      const r = spawnSync('ip', args, { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${r.stderr}`);
    };
    ipRun(['-6', 'addr', 'add', `${hostSide}/128`, 'dev', host.hostInterface, 'nodad']);
    ipRun(['-6', 'route', 'add', `${podSide}/128`, 'dev', host.hostInterface]);
    ipRun(['-n', host.name, '-6', 'addr', 'add', `${podSide}/128`, 'dev', 'eth0', 'nodad']);
    ipRun(['-n', host.name, '-6', 'route', 'add', `${hostSide}/128`, 'dev', 'eth0']);
    const realV6 = await hostServer('real destination (ipv6)', hostSide);
    const v6proxy = host.spawn([process.execPath, '-e', LISTENERS, '15001=outbound proxy (ipv6)'], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, LISTEN_IPV6: '1' } });
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: v6proxy.stdout! }).once('line', () => resolve());
      v6proxy.once('exit', (code) => reject(new Error(`IPv6 listener exited with ${String(code)}`)));
    });
    expect(await inside(realV6, 'app', hostSide)).toBe('real destination (ipv6)');

    const applied = await capture([...initArgs({}), '--ipv6']);
    expect(applied).toMatchObject({ code: 0 });
    expect(applied.stderr).toContain('ipv6 rules applied');
    expect(await inside(realV6, 'app', hostSide)).toBe('outbound proxy (ipv6)');
    expect(await inside(realV6, 'proxy', hostSide)).toBe('real destination (ipv6)');
    expect(await inside(realPort, 'app')).toBe('outbound proxy');
  }, 90_000);

  it('refuses a bad range before touching the rules, naming the flag', async () => {
    const bad = await capture(['capture', '-x', '10.0.0.0/40']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('--exclude-outbound-ip-ranges: "10.0.0.0/40": prefix length must be 0-32');
    expect(await ask(host.address, 8081)).toBe('inbound proxy');
  }, 60_000);
});
