/**
 * meshctl diagnosing a running meshd: the daemon as a process (Mock registry, config files), real
 * ADS clients playing a sidecar and a gateway (test/support/proxy-dump.ts), and meshctl in-process
 * talking to the daemon over the xDS debug channel of its plaintext port.
 *
 * - proxy-status lists each client with SYNCED per type, and STALE with the versions once a client
 *   stops ACKing a change; x proxy-status takes the same as flags.
 * - proxy-config reads config dumps of what the clients hold (the daemon's own output) for a
 *   sidecar and a gateway; golden files fix the tables.
 * - proxy-status <pod> -f compares meshd's view with a dump: match, and a difference.
 * - bad input: unreachable meshd, unknown proxy, malformed dump, unknown view, bad flags.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { main as meshctl } from '../src/cli/meshctl.js';
import { captureIO } from '../test/cli/capture.js';
import { expectGolden } from '../test/cli/golden.js';
import { eventually } from '../test/support/eventually.js';
import { makeConfigDir, REPO_ROOT, startDaemon, toYamlDocuments, type ConfigDir, type Daemon } from '../test/support/daemon.js';
import { TestProxy } from '../test/support/proxy-dump.js';

const ROUTING = fs.readFileSync(path.join(REPO_ROOT, 'examples', 'config', 'routing.yaml'), 'utf8');

const GATEWAY = [
  {
    apiVersion: 'networking.mesh.io/v1',
    kind: 'Gateway',
    metadata: { name: 'public', namespace: 'mesh-system' },
    spec: { selector: { app: 'mesh-ingressgateway' }, servers: [{ port: { number: 8080, name: 'http', protocol: 'HTTP' }, hosts: ['*/echo.example.com'] }] },
  },
  {
    apiVersion: 'networking.mesh.io/v1',
    kind: 'VirtualService',
    metadata: { name: 'public', namespace: 'default' },
    spec: {
      hosts: ['echo.example.com'],
      gateways: ['mesh-system/public'],
      http: [{ match: [{ uri: { prefix: '/v2' } }], route: [{ destination: { host: 'echo.default.svc.cluster.local', subset: 'v2' } }] }, { route: [{ destination: { host: 'echo.default.svc.cluster.local', subset: 'v1' } }] }],
    },
  },
];

const SIDECAR_NODE = { id: 'sidecar~10.1.0.7~echo-v1-abc.default~default.svc.cluster.local', metadata: { NAMESPACE: 'default', LABELS: { app: 'echo', version: 'v1' } } };
const GATEWAY_NODE = { id: 'router~10.1.0.9~gw-1.mesh-system~mesh-system.svc.cluster.local', metadata: { NAMESPACE: 'mesh-system', LABELS: { app: 'mesh-ingressgateway' } } };

let daemon: Daemon;
let config: ConfigDir;
let sidecar: TestProxy;
let gateway: TestProxy;
let dir: string;
let env: Record<string, string>;

async function run(argv: string[], extraEnv: Record<string, string> = {}) {
  const c = captureIO({ ...env, ...extraEnv });
  const code = await meshctl(argv, c.io);
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mesh-diagnose-'));
  config = await makeConfigDir();
  await config.write('routing.yaml', ROUTING);
  await config.write('gateway.yaml', toYamlDocuments(GATEWAY));
  daemon = await startDaemon({ configDir: config.path });
  env = { MESHCTL_XDS_ADDRESS: daemon.grpcAddr, MESHCTL_PLAINTEXT: 'true', HOME: dir };
  sidecar = new TestProxy(daemon.grpcAddr, SIDECAR_NODE);
  gateway = new TestProxy(daemon.grpcAddr, GATEWAY_NODE);
  await Promise.all([sidecar.start(), gateway.start()]);
  fs.writeFileSync(path.join(dir, 'sidecar.json'), sidecar.dump());
  fs.writeFileSync(path.join(dir, 'gateway.json'), gateway.dump());
}, 60_000);

afterAll(async () => {
  sidecar?.close();
  gateway?.close();
  await daemon?.stop();
  await config?.cleanup();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('proxy-status', () => {
  it('shows every connected proxy SYNCED per type', async () => {
    const r = await eventually('both proxies synced', async () => {
      const out = await run(['proxy-status']);
      return out.stdout.includes('echo-v1-abc.default') && out.stdout.includes('gw-1.mesh-system') && !/STALE|NOT SENT/.test(out.stdout.split('\n').filter((l) => l.includes('echo-v1')).join()) ? out : undefined;
    });
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0].split(/\s{2,}/)).toEqual(['NAME', 'TYPE', 'CDS', 'LDS', 'EDS', 'RDS', 'MESHD', 'VERSION']);
    const side = lines.find((l) => l.startsWith('echo-v1-abc.default'))!.split(/\s{2,}/);
    expect(side.slice(0, 6)).toEqual(['echo-v1-abc.default', 'sidecar', 'SYNCED', 'SYNCED', 'SYNCED', 'SYNCED']);
    expect(lines.find((l) => l.startsWith('gw-1.mesh-system'))).toMatch(/router\s+SYNCED\s+SYNCED/);
  });

  it('x proxy-status takes the connection as flags, and -o json gives the sync state', async () => {
    const r = await run(['x', 'proxy-status', '--xds-address', daemon.grpcAddr, '--plaintext', '-o', 'json'], { MESHCTL_XDS_ADDRESS: '' });
    expect(r.code).toBe(0);
    const entries = JSON.parse(r.stdout) as Array<{ workload: string; watches: Record<string, { status: string }> }>;
    expect(entries.map((e) => e.workload).sort()).toEqual(['echo-v1-abc.default', 'gw-1.mesh-system']);
  });

  it('compares meshd with what a proxy holds: a match, then a difference', async () => {
    const same = await run(['proxy-status', 'echo-v1-abc.default', '-f', path.join(dir, 'sidecar.json')]);
    expect(same.stderr).toBe('');
    expect(same.stdout).toMatch(/Clusters Match\nListeners Match\nRoutes Match\n$/);
    expect(same.code).toBe(0);
    const dump = JSON.parse(fs.readFileSync(path.join(dir, 'sidecar.json'), 'utf8')) as { configs: Array<{ dynamic_active_clusters?: unknown[] }> };
    const clusters = dump.configs.find((c) => c.dynamic_active_clusters)!;
    const removed = (clusters.dynamic_active_clusters!.shift() as { cluster: { name: string } }).cluster.name;
    fs.writeFileSync(path.join(dir, 'sidecar-old.json'), JSON.stringify(dump));
    const diff = await run(['proxy-status', 'echo-v1-abc.default', '-f', path.join(dir, 'sidecar-old.json')]);
    expect(diff.code).toBe(1);
    expect(diff.stdout).toContain("Clusters Don't Match");
    expect(diff.stdout).toContain(`- ${removed}: sent by meshd, not held by the proxy`);
  });

  it('shows STALE with the versions when a proxy stops ACKing a change', async () => {
    sidecar.stopAcking();
    const before = sidecar.received;
    await config.write('routing.yaml', ROUTING.replace('weight: 80', 'weight: 70').replace('weight: 20', 'weight: 30'));
    await eventually('a push to the sidecar', () => sidecar.received > before);
    const r = await eventually('the sidecar STALE', async () => {
      const out = await run(['proxy-status']);
      const line = out.stdout.split('\n').find((l) => l.startsWith('echo-v1-abc.default'));
      return line?.includes('STALE') ? line : undefined;
    });
    expect(r).toMatch(/STALE \(sent \S+, acked \S+\)/);
  });
});

describe('proxy-config', () => {
  const file = (name: string) => path.join(dir, name);
  it.each([
    ['meshctl-proxy-config-cluster-sidecar.txt', ['cluster', '-f', 'sidecar.json']],
    ['meshctl-proxy-config-cluster-sidecar-fqdn.txt', ['cluster', '-f', 'sidecar.json', '--fqdn', 'echo', '--direction', 'outbound']],
    ['meshctl-proxy-config-listener-sidecar.txt', ['listener', '-f', 'sidecar.json']],
    ['meshctl-proxy-config-listener-sidecar-port.txt', ['listeners', '-f', 'sidecar.json', '--port', '7070', '--verbose']],
    ['meshctl-proxy-config-route-sidecar.txt', ['route', '-f', 'sidecar.json']],
    ['meshctl-proxy-config-route-sidecar-verbose.txt', ['r', '-f', 'sidecar.json', '--name', 'echo.default.svc.cluster.local:7070', '--verbose']],
    ['meshctl-proxy-config-endpoint-sidecar.txt', ['endpoint', '-f', 'sidecar.json']],
    ['meshctl-proxy-config-all-sidecar.txt', ['all', '-f', 'sidecar.json']],
    ['meshctl-proxy-config-cluster-gateway.txt', ['c', '-f', 'gateway.json']],
    ['meshctl-proxy-config-listener-gateway.txt', ['listener', '-f', 'gateway.json']],
    ['meshctl-proxy-config-route-gateway.txt', ['route', '-f', 'gateway.json', '--verbose']],
    ['meshctl-proxy-config-bootstrap-gateway.txt', ['bootstrap', '-f', 'gateway.json']],
    ['meshctl-proxy-config-secret-gateway.txt', ['secret', '-f', 'gateway.json']],
  ])('%s', async (golden, argv) => {
    const args = argv.map((a) => (a.endsWith('.json') ? file(a) : a));
    const r = await run(['proxy-config', ...args]);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expectGolden(golden, r.stdout);
  });

  it('all --name keeps the listeners that use that route, and lists every route', async () => {
    const r = await run(['proxy-config', 'all', '-f', file('sidecar.json'), '--name', 'echo.default.svc.cluster.local:7070']);
    expect(r.code).toBe(0);
    const destinations = r.stdout.split('\n').filter((l) => /^\S+\s+\d+\s+.*(Route|Cluster|Non-HTTP)/.test(l) && !/^(NAME|SERVICE)/.test(l)).map((l) => l.split(/\s{2,}/).at(-1));
    expect(destinations).toEqual(['Route: echo.default.svc.cluster.local:7070']);
    const routeNames = new Set(r.stdout.split('\n').filter((l) => /\sallow_any\s/.test(l)).map((l) => l.split(/\s+/)[0]));
    expect([...routeNames].sort()).toEqual(['7070', '9080', 'echo.default.svc.cluster.local:7070', 'ratings.default.svc.cluster.local:9080']);
    const json = await run(['proxy-config', 'all', '-o', 'json', '-f', file('sidecar.json'), '--name', '9080']);
    const doc = JSON.parse(json.stdout) as { listeners: Array<{ name: string }>; routes: Array<{ name: string }> };
    expect(doc.listeners.map((l) => l.name)).toEqual(['0.0.0.0_9080']);
    expect(doc.routes).toHaveLength(4);
  });

  it('-o json gives the matching resources', async () => {
    const r = await run(['proxy-config', '-o', 'json', 'cluster', '-f', file('sidecar.json'), '--subset', 'v2']);
    expect(r.code).toBe(0);
    expect((JSON.parse(r.stdout) as Array<{ name: string }>).map((c) => c.name)).toEqual(['outbound|7070|v2|echo.default.svc.cluster.local']);
  });

  it.each([
    [['cluster', '-f', '/nonexistent/dump.json'], /--file: cannot read \/nonexistent\/dump.json: no such file/],
    [['cluster', '-f', 'garbage'], /not a config dump: invalid JSON/],
    [['cluster', '-f', 'nolist'], /not a config dump: expected an object with a "configs" list/],
    [['cluster'], /name a proxy .* or give --file/],
    [['cluster', '--port', 'eighty', '-f', 'sidecar.json'], /--port: "eighty" is not a port number/],
    [['listener', '--type', 'UDP', '-f', 'sidecar.json'], /--type: invalid value "UDP"/],
    [['cluster', 'Bad_Pod!', '-f', 'sidecar.json'], /give a proxy or --file, not both/],
    [['log', '--level', 'loud', '-f', 'sidecar.json'], /--file does not apply/],
  ])('%j fails with a clear message', async (argv, message) => {
    fs.writeFileSync(file('garbage'), '{"configs": [');
    fs.writeFileSync(file('nolist'), '{"clusters": 3}');
    const r = await run(['proxy-config', ...argv.map((a) => (['sidecar.json', 'garbage', 'nolist'].includes(a) ? file(a) : a))]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(message);
  });
});

describe('x internal-debug', () => {
  it('fetches a view over the xDS debug channel', async () => {
    const r = await run(['x', 'internal-debug', 'push_status']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ services: expect.any(Number), connections: 2 });
    const dump = await run(['x', 'internal-debug', `config_dump?proxyID=${SIDECAR_NODE.id}&format=envoy`]);
    expect(dump.code).toBe(0);
    expect((JSON.parse(dump.stdout) as { configs: Array<{ '@type': string }> }).configs.map((c) => c['@type'].split('.').pop())).toEqual([
      'BootstrapConfigDump',
      'ClustersConfigDump',
      'ListenersConfigDump',
      'RoutesConfigDump',
      'EndpointsConfigDump',
      'SecretsConfigDump',
    ]);
  });
});

describe('bad input', () => {
  it.each([
    ['an unreachable meshd', ['proxy-status'], { MESHCTL_XDS_ADDRESS: '127.0.0.1:1' }, /meshd 127.0.0.1:1: unreachable/],
    ['an unknown proxy', ['proxy-status', 'nobody.default', '-f', '/dev/null'], {}, /proxy nobody.default is connected to no meshd/],
    ['a malformed proxy name', ['proxy-status', 'pod/Not_A_Name'], {}, /"Not_A_Name" is not a valid name/],
    ['an unknown debug view', ['x', 'internal-debug', 'nope'], {}, /no debug view "nope"/],
    ['a config_dump without proxyID', ['x', 'internal-debug', 'config_dump'], {}, /proxyID query parameter is required/],
    ['a bad timeout', ['x', 'proxy-status', '--timeout', 'soon'], {}, /--timeout: "soon" is not a duration/],
    ['an unknown wait type', ['x', 'wait', 'Widget', 'a.b'], {}, /unknown type "Widget"/],
    ['a bad threshold', ['x', 'wait', 'vs', 'echo.default', '--threshold', '2'], {}, /--threshold: "2" is not a ratio between 0 and 1/],
    ['wait without tracking', ['x', 'wait', 'vs', 'echo.default', '--generation', '1', '--timeout', '1s'], {}, /config distribution is not tracked by this daemon/],
  ])('%s ends with a clear message and exit 1', async (_what, argv, extra, message) => {
    const r = await run(argv, extra as Record<string, string>);
    expect(r.stderr).toMatch(message);
    expect(r.code).toBe(1);
  });
});
