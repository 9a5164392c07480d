/**
 * `meshctl x describe pod|service` on the local plane, with meshd running as a process (Cluster
 * registry, the test's namespace as its root namespace) and a real ADS client playing the pod's
 * sidecar: a workload with a Service, a DestinationRule with subsets, a VirtualService with a header
 * match and a weighted split, an ingress Gateway route, mesh- and workload-level
 * PeerAuthentications and AuthorizationPolicies of three actions. A golden file fixes the text (the
 * random namespace names and meshd's address replaced). A pod outside the mesh gets a warning; an
 * unknown pod or service, an unreachable meshd and a user without rights end with a message and
 * exit 1, and so does `x authz check` on a pod whose admin port cannot be reached.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { main as meshctl } from '../src/cli/meshctl.js';
import type { KubeClient } from '../src/kube/client.js';
import type { KubeObject } from '../src/kube/types.js';
import { captureIO } from '../test/cli/capture.js';
import { expectGolden, normalize } from '../test/cli/golden.js';
import { applyMeshCrds, createNamespace, kubeTestEnv, powerlessKubeconfig, tearDown } from '../test/kube/helpers.js';
import { startDaemon, type Daemon } from '../test/support/daemon.js';
import { eventually } from '../test/support/eventually.js';
import { TestProxy } from '../test/support/proxy-dump.js';

let client: KubeClient;
let kubeconfig: string;
let meshNs: string;
let ns: string;
let daemon: Daemon;
let proxy: TestProxy;
let dir: string;

async function run(argv: string[], extraEnv: Record<string, string> = {}) {
  const c = captureIO({ HOME: dir, MESHCTL_XDS_ADDRESS: daemon?.grpcAddr ?? '', MESHCTL_PLAINTEXT: 'true', ...extraEnv });
  const code = await meshctl(argv, c.io);
  return { code, stdout: c.stdout(), stderr: c.stderr() };
}

const names = (text: string): string => normalize(text, { [meshNs]: '<mesh-ns>', [ns]: '<ns>', [daemon.grpcAddr]: '<meshd>' }).replace(/zone-\d+/g, 'zone-N');

const objects = (): Array<Record<string, unknown>> => [
  { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'ratings', namespace: ns } },
  { apiVersion: 'v1', kind: 'Service', metadata: { name: 'ratings', namespace: ns }, spec: { selector: { app: 'ratings' }, ports: [{ name: 'http', port: 9080 }] } },
  {
    apiVersion: 'networking.mesh.io/v1',
    kind: 'DestinationRule',
    metadata: { name: 'ratings', namespace: ns },
    spec: {
      host: 'ratings',
      trafficPolicy: { loadBalancer: { simple: 'LEAST_REQUEST' }, outlierDetection: { consecutive5xxErrors: 5 } },
      subsets: [
        { name: 'v1', labels: { version: 'v1' } },
        { name: 'v2', labels: { version: 'v2' } },
      ],
    },
  },
  {
    apiVersion: 'networking.mesh.io/v1',
    kind: 'VirtualService',
    metadata: { name: 'ratings', namespace: ns },
    spec: {
      hosts: ['ratings'],
      http: [
        { name: 'canary', match: [{ headers: { 'x-canary': { exact: 'true' } } }], route: [{ destination: { host: 'ratings', subset: 'v2' } }] },
        {
          name: 'split',
          route: [
            { destination: { host: 'ratings', subset: 'v1' }, weight: 80 },
            { destination: { host: 'ratings', subset: 'v2' }, weight: 20 },
          ],
          timeout: '5s',
          retries: { attempts: 2, perTryTimeout: '1s' },
        },
      ],
    },
  },
  {
    apiVersion: 'networking.mesh.io/v1',
    kind: 'Gateway',
    metadata: { name: 'public', namespace: meshNs },
    spec: { selector: { app: 'mesh-ingressgateway' }, servers: [{ port: { number: 8080, name: 'http', protocol: 'HTTP' }, hosts: ['*/ratings.example.com'] }] },
  },
  {
    apiVersion: 'networking.mesh.io/v1',
    kind: 'VirtualService',
    metadata: { name: 'public', namespace: ns },
    spec: { hosts: ['ratings.example.com'], gateways: [`${meshNs}/public`], http: [{ route: [{ destination: { host: `ratings.${ns}.svc.cluster.local`, subset: 'v1' } }] }] },
  },
  { apiVersion: 'security.mesh.io/v1', kind: 'PeerAuthentication', metadata: { name: 'default', namespace: meshNs }, spec: { mtls: { mode: 'STRICT' } } },
  {
    apiVersion: 'security.mesh.io/v1',
    kind: 'PeerAuthentication',
    metadata: { name: 'ratings', namespace: ns },
    spec: { selector: { matchLabels: { app: 'ratings' } }, portLevelMtls: { 9080: { mode: 'PERMISSIVE' } } },
  },
  {
    apiVersion: 'security.mesh.io/v1',
    kind: 'AuthorizationPolicy',
    metadata: { name: 'allow-frontend', namespace: ns },
    spec: { selector: { matchLabels: { app: 'ratings' } }, rules: [{ from: [{ source: { principals: ['cluster.local/ns/web/sa/frontend'] } }], to: [{ operation: { methods: ['GET'] } }] }] },
  },
  {
    apiVersion: 'security.mesh.io/v1',
    kind: 'AuthorizationPolicy',
    metadata: { name: 'deny-admin', namespace: ns },
    spec: { selector: { matchLabels: { app: 'ratings' } }, action: 'DENY', rules: [{ to: [{ operation: { paths: ['/admin/*'] } }] }] },
  },
  { apiVersion: 'security.mesh.io/v1', kind: 'AuthorizationPolicy', metadata: { name: 'audit-deletes', namespace: meshNs }, spec: { action: 'AUDIT', rules: [{ to: [{ operation: { methods: ['DELETE'] } }] }] } },
  {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'ratings-v1-0', namespace: ns, labels: { app: 'ratings', version: 'v1' } },
    spec: { serviceAccountName: 'ratings', containers: [{ name: 'app', image: 'ratings', ports: [{ containerPort: 9080 }] }, { name: 'mesh-proxy', image: 'proxy' }] },
  },
  { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'legacy-0', namespace: ns, labels: { app: 'legacy' } }, spec: { containers: [{ name: 'app', image: 'legacy' }] } },
];

/** A kubeconfig of a service account that may do nothing. */
beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mesh-describe-'));
  const env = await kubeTestEnv();
  client = env.client;
  kubeconfig = env.cluster.kubeconfig;
  await applyMeshCrds(client);
  meshNs = await createNamespace(client, 'des-mesh');
  ns = await createNamespace(client, 'des-app');
  for (const o of objects()) await client.create(o as never);
  fs.writeFileSync(path.join(dir, 'mesh.yaml'), `rootNamespace: ${meshNs}\n`);
  daemon = await startDaemon({ registries: 'Cluster', meshConfig: path.join(dir, 'mesh.yaml'), args: ['--clusterconfig', kubeconfig], env: { POD_NAMESPACE: meshNs, POD_NAME: 'meshd-0' }, readyTimeoutMs: 60_000 });
  await eventually('meshd to hold the policies', async () => JSON.stringify(await daemon.debug('configz')).includes('deny-admin'), { retryErrors: true });
  // the sidecar announces its pod's address, so meshd gives it the inbound chains of its Service port
  const podIp = await eventually('the pod to get an address', async () => (await client.get<{ status?: { podIP?: string } } & KubeObject>({ apiVersion: 'v1', kind: 'Pod', namespace: ns, name: 'ratings-v1-0' })).status?.podIP);
  proxy = new TestProxy(daemon.grpcAddr, { id: `sidecar~${podIp}~ratings-v1-0.${ns}~${ns}.svc.cluster.local`, metadata: { NAMESPACE: ns, LABELS: { app: 'ratings', version: 'v1' } } });
  await proxy.start();
}, 180_000);

afterAll(() => tearDown({ close: [proxy], daemon, client, namespaces: [meshNs, ns], dir }), 60_000);

describe('x describe', () => {
  it('pod: services, routes, subsets, TLS, mTLS, policies, and the proxy in meshd', async () => {
    const r = await eventually('the proxy synced in the description', async () => {
      const out = await run(['x', 'describe', 'pod', `ratings-v1-0.${ns}`, '-c', kubeconfig, '-i', meshNs]);
      return out.code === 0 && /connected, CDS SYNCED, EDS SYNCED, LDS SYNCED, RDS SYNCED/.test(out.stdout) ? out : undefined;
    });
    expect(r.stderr).toBe('');
    expectGolden('meshctl-x-describe-pod.txt', names(r.stdout));
    expect(r.stdout).toContain('Matching subsets: v1 (non-matching: v2)');
    expect(r.stdout).toContain('HTTP canary: when header x-canary=true → ratings subset v2');
    expect(r.stdout).toContain('HTTP split: otherwise → 80% ratings subset v1, 20% ratings subset v2 [timeout 5s; retries 2 × 1s]');
    expect(r.stdout).toContain('Client TLS: MESH_MUTUAL (auto mutual TLS)');
    expect(r.stdout).toContain('Inbound mutual TLS: STRICT, port 9080 PERMISSIVE');
    expect(r.stdout).toMatch(/Its configuration enforces: AUDIT <?[\w-]+>?\/audit-deletes, DENY .*\/deny-admin, ALLOW .*\/allow-frontend/);
  }, 90_000);

  it('service (alias des svc): the same for the service, with the pods it selects', async () => {
    const r = await run(['x', 'des', 'svc', 'ratings', '-n', ns, '-c', kubeconfig, '-i', meshNs]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expectGolden('meshctl-x-describe-service.txt', names(r.stdout));
    expect(r.stdout).toContain('Pods selected: ratings-v1-0');
    expect(names(r.stdout)).toContain('Exposed on gateway(s) <mesh-ns>/public by VirtualService <ns>/public for hosts ratings.example.com');
  }, 60_000);

  it('a pod outside the mesh gets a warning, unless --ignoreUnmeshed', async () => {
    const r = await run(['x', 'describe', 'pod', 'legacy-0', '-n', ns, '-c', kubeconfig, '-i', meshNs]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Warning: pod legacy-0.${ns} has no mesh-proxy container: it is not in the mesh`);
    expect(r.stdout).toContain(`Warning: no Service selects pod legacy-0.${ns}`);
    const quiet = await run(['x', 'describe', 'pod', 'legacy-0', '-n', ns, '-c', kubeconfig, '-i', meshNs, '--ignoreUnmeshed']);
    expect(quiet.stdout).not.toContain('not in the mesh');
  }, 60_000);

  it('an unreachable meshd: the description, the reason on stderr, exit 1', async () => {
    const r = await run(['x', 'describe', 'pod', `ratings-v1-0.${ns}`, '-c', kubeconfig, '-i', meshNs], { MESHCTL_XDS_ADDRESS: '127.0.0.1:1' });
    expect(r.stdout).toContain('VirtualService: ratings');
    expect(r.stderr).toMatch(/meshd could not be asked about this proxy: meshd 127\.0\.0\.1:1: unreachable/);
    expect(r.code).toBe(1);
  }, 60_000);

  it.each([
    ['an unknown pod', () => ['x', 'describe', 'pod', `nope.${ns}`], /pod .+\/nope not found/],
    ['an unknown service', () => ['x', 'describe', 'service', `nope.${ns}`], /service .+\/nope not found/],
    ['a malformed name', () => ['x', 'describe', 'pod', 'Not_A_Pod'], /"Not_A_Pod" is not a valid name/],
    ['authz check of an unknown pod', () => ['x', 'authz', 'check', `nope.${ns}`], /pod .+\/nope not found/],
    ['authz check of a pod whose admin port cannot be reached', () => ['x', 'authz', 'check', `ratings-v1-0.${ns}`], /cannot reach port 15000 of pod .+\/ratings-v1-0 through the API server/],
  ])('%s ends with a clear message and exit 1', async (_what, argv, message) => {
    const r = await run([...argv(), '-c', kubeconfig, '-i', meshNs]);
    expect(r.stderr).toMatch(message);
    expect(r.code).toBe(1);
  }, 60_000);

  it('a user without rights is told so, exit 1', async () => {
    const nobody = await powerlessKubeconfig(client, kubeconfig, ns, dir);
    for (const argv of [
      ['x', 'describe', 'pod', `ratings-v1-0.${ns}`],
      ['x', 'authz', 'check', `ratings-v1-0.${ns}`],
      ['bug-report', '--dir', path.join(dir, 'nobody'), '--timeout', '30s'],
    ]) {
      const r = await run([...argv, '-c', nobody, '-i', meshNs]);
      expect({ argv, stderr: r.stderr }).toEqual({ argv, stderr: expect.stringMatching(/forbidden/i) });
      expect(r.code).toBe(1);
    }
  }, 90_000);
});
