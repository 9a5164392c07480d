/**
 * `meshctl x authz check`: the authorization a proxy enforces, read from config dumps of the
 * daemon's own output. The daemon runs as a process (Mock registry) with a mesh-wide STRICT
 * PeerAuthentication and AuthorizationPolicies of every action (ALLOW, DENY, AUDIT, a dry-run
 * DENY); a real ADS client plays the ratings sidecar and dumps what it holds; a golden file fixes
 * the table. A proxy no policy selects shows none; bad input ends with a message and exit 1.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { main as meshctl } from '../src/cli/meshctl.js';
import { captureIO } from '../test/cli/capture.js';
import { expectGolden } from '../test/cli/golden.js';
import { makeConfigDir, startDaemon, type ConfigDir, type Daemon } from '../test/support/daemon.js';
import { TestProxy } from '../test/support/proxy-dump.js';

const POLICIES = `
apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata: { name: default, namespace: mesh-system }
spec:
  mtls: { mode: STRICT }
---
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: allow-frontend, namespace: default }
spec:
  selector: { matchLabels: { app: ratings } }
  rules:
    - from: [{ source: { principals: ["cluster.local/ns/web/sa/frontend"] } }]
      to: [{ operation: { methods: [GET], paths: ["/api/*"] } }]
    - from: [{ source: { namespaces: [ops] } }]
      to: [{ operation: { ports: ["19080"] } }]
---
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: deny-admin, namespace: default }
spec:
  selector: { matchLabels: { app: ratings } }
  action: DENY
  rules:
    - to: [{ operation: { paths: ["/admin/*"] } }]
---
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: deny-legacy, namespace: default, annotations: { "mesh.io/dry-run": "true" } }
spec:
  selector: { matchLabels: { app: ratings } }
  action: DENY
  rules:
    - from: [{ source: { ipBlocks: [10.0.0.0/8] } }]
---
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: audit-deletes, namespace: mesh-system }
spec:
  action: AUDIT
  rules: [{ to: [{ operation: { methods: [DELETE] } }] }]
`;

const RATINGS = { id: 'sidecar~127.0.0.1~ratings-v1-abc.default~default.svc.cluster.local', metadata: { NAMESPACE: 'default', LABELS: { app: 'ratings', version: 'v1' } } };
const DB = { id: 'sidecar~10.2.0.9~db-0.data~data.svc.cluster.local', metadata: { NAMESPACE: 'data', LABELS: { app: 'db' } } };

let daemon: Daemon;
let config: ConfigDir;
let dir: string;
const proxies: TestProxy[] = [];

async function run(argv: string[]) {
  const c = captureIO({ HOME: dir });
  const code = await meshctl(argv, c.io);
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}
const file = (name: string) => path.join(dir, name);

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mesh-authz-check-'));
  config = await makeConfigDir();
  await config.write('policies.yaml', POLICIES);
  daemon = await startDaemon({ configDir: config.path });
  for (const [name, node] of [['ratings.json', RATINGS], ['db.json', DB]] as const) {
    const p = new TestProxy(daemon.grpcAddr, node);
    proxies.push(p);
    await p.start();
    fs.writeFileSync(file(name), p.dump());
  }
  fs.writeFileSync(file('garbage.json'), '{"configs": [');
  fs.writeFileSync(file('empty.json'), '{"configs": []}');
}, 60_000);

afterAll(async () => {
  for (const p of proxies) p.close();
  await daemon?.stop();
  await config?.cleanup();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('x authz check', () => {
  it('lists per chain, in evaluation order, the policies the sidecar enforces and what their rules match', async () => {
    const r = await run(['x', 'authz', 'check', '-f', file('ratings.json')]);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expectGolden('meshctl-x-authz-check-sidecar.txt', r.stdout);
    const http = r.stdout.split('\n').filter((l) => l.startsWith('virtualInbound inbound|19080||-mtls'));
    expect(http.map((l) => l.split(/\s{3,}/).slice(1, 5))).toEqual([
      ['HTTP', 'AUDIT', 'mesh-system/audit-deletes', '0'],
      ['HTTP', 'DENY', 'default/deny-admin', '0'],
      ['HTTP', 'DENY (dry-run)', 'default/deny-legacy', '0'],
      ['HTTP', 'ALLOW', 'default/allow-frontend', '0'],
      ['HTTP', 'ALLOW', 'default/allow-frontend', '1'],
    ]);
    expect(http[3]).toMatch(/to \(method GET and path \/api\/\*\), from principal spiffe:\/\/cluster\.local\/ns\/web\/sa\/frontend$/);
    // on a TCP chain the ALLOW rule using HTTP attributes is dropped; the namespace rule stays
    const tcp = r.stdout.split('\n').filter((l) => l.startsWith('virtualInbound inbound|15432||-mtls'));
    expect(tcp.filter((l) => /\sALLOW\s/.test(l)).map((l) => l.split(/\s{3,}/)[4])).toEqual(['1']);
  });

  it('a proxy no policy selects enforces only the mesh-wide AUDIT policy', async () => {
    const r = await run(['experimental', 'authz', 'check', '--file', file('db.json')]);
    expect(r.code).toBe(0);
    const actions = new Set(r.stdout.trimEnd().split('\n').slice(1).map((l) => l.split(/\s{3,}/)[2]));
    expect([...actions]).toEqual(['AUDIT']);
  });

  it.each([
    [['x', 'authz', 'check', '-f', '/nonexistent/dump.json'], /--file: cannot read \/nonexistent\/dump.json: no such file/],
    [['x', 'authz', 'check', '-f', 'garbage.json'], /not a config dump: invalid JSON/],
    [['x', 'authz', 'check', '-f', 'empty.json'], /holds no listeners/],
    [['x', 'authz', 'check'], /name a proxy .* or give --file/],
    [['x', 'authz', 'check', 'ratings-v1.default', '-f', 'ratings.json'], /give a proxy or --file, not both/],
    [['x', 'authz', 'check', 'pod/Not_A_Name'], /"Not_A_Name" is not a valid name/],
    [['authz', 'check', 'x'], /use `meshctl experimental authz check/],
  ])('%j fails with a clear message', async (argv, message) => {
    const r = await run(argv.map((a) => (a.endsWith('.json') && !a.startsWith('/') ? file(a) : a)));
    expect(r.stderr).toMatch(message);
    expect(r.code).toBe(1);
  });
});
