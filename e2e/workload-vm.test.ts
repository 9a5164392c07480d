/**
 * `meshctl x workload group create` and `x workload entry configure` (the built program, as a
 * process) on the local plane: the group's YAML applies as it is; the files a VM needs are written
 * from the group on the API server or from a file, and hold what the VM's agent reads: a token the
 * API server's TokenReview accepts for the group's service account with the mesh-ca audience and
 * the lifetime asked for, the mesh's root certificate, cluster.env, mesh.yaml with the revision's
 * discovery address and the mesh's proxy metadata, and hosts with the east-west gateway's address.
 * Bad input ends with a clear message and exit 1.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import type { KubeClient } from '../src/kube/client.js';
import { applyMeshCrds, createNamespace, deleteNamespace, kubeTestEnv } from '../test/kube/helpers.js';
import { REPO_ROOT } from '../test/support/daemon.js';
import { openssl } from '../test/support/openssl.js';

const MESHCTL = path.join(REPO_ROOT, 'dist', 'bin', 'meshctl.js');

let client: KubeClient;
let kubeconfig: string;
let ns: string | undefined;
let mesh: string | undefined;
let dir: string;
let root: string;

function meshctl(args: string[], stdin?: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MESHCTL, ...args, '-c', kubeconfig], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.stdin.end(stdin ?? '');
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

/** The claims of a JWT (not verified here: the API server's TokenReview does that). */
function claims(token: string): { exp: number; iat: number; aud: string[]; sub: string } {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8')) as { exp: number; iat: number; aud: string[]; sub: string };
}

async function tokenReview(token: string): Promise<{ authenticated?: boolean; user?: { username?: string }; audiences?: string[]; error?: string }> {
  const r = await client.request<{ status: { authenticated?: boolean; user?: { username?: string }; audiences?: string[]; error?: string } }>({
    method: 'POST',
    path: '/apis/authentication.k8s.io/v1/tokenreviews',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, audiences: ['mesh-ca'] } },
  });
  return r.status;
}

function envOf(text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .trim()
      .split('\n')
      .map((line) => {
        const eq = line.indexOf('=');
        return [line.slice(0, eq), line.slice(eq + 2, -1).replace(/'\\''/g, "'")];
      }),
  );
}

beforeAll(async () => {
  const env = await kubeTestEnv();
  client = env.client;
  kubeconfig = env.cluster.kubeconfig;
  await applyMeshCrds(client);
  ns = await createNamespace(client, 'vm');
  mesh = await createNamespace(client, 'vm-mesh');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'workload-vm-'));
  root = (await openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/O=mesh test root', '-days', '1', '-keyout', path.join(dir, 'root.key')])).stdout;
  expect(root).toContain('BEGIN CERTIFICATE');
  await client.create({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'vm-sa', namespace: ns } });
  await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'mesh-ca-root-cert', namespace: ns }, data: { 'root-cert.pem': root } });
  await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'mesh', namespace: mesh }, data: { mesh: 'trustDomain: example.org\ndefaultConfig:\n  proxyMetadata:\n    FROM_MESH: "yes"\n' } });
  await client.create({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'mesh-canary', namespace: mesh }, data: { mesh: 'defaultConfig: {}\n' } });
  await client.create({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'mesh-eastwestgateway', namespace: mesh },
    spec: { type: 'LoadBalancer', ports: [{ name: 'tls-xds', port: 15012 }], selector: { app: 'mesh-eastwestgateway' } },
  });
  await client.mergePatch({ apiVersion: 'v1', kind: 'Service', namespace: mesh, name: 'mesh-eastwestgateway' }, { status: { loadBalancer: { ingress: [{ ip: '198.51.100.20' }] } } }, { subresource: 'status' });
}, 120_000);

afterAll(async () => {
  await deleteNamespace(client, ns);
  await deleteNamespace(client, mesh);
  client?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('meshctl x workload', () => {
  it('group create prints a WorkloadGroup that applies, and entry configure writes the files of a VM from it', async () => {
    const created = await meshctl(['x', 'workload', 'group', 'create', '--name', 'ratings-vm', '-n', ns!, '-l', 'app=ratings,version=v3', '-a', 'team=data', '-p', 'http=8080', '-p', 'grpc=9090', '-s', 'vm-sa']);
    expect(created.err).toBe('');
    expect(created.code).toBe(0);
    const group = parse(created.out) as Record<string, unknown>;
    expect(group).toEqual({
      apiVersion: 'networking.mesh.io/v1',
      kind: 'WorkloadGroup',
      metadata: { name: 'ratings-vm', namespace: ns },
      spec: { metadata: { labels: { app: 'ratings', version: 'v3' }, annotations: { team: 'data' } }, template: { ports: { http: 8080, grpc: 9090 }, serviceAccount: 'vm-sa' } },
    });
    await client.create(group as never);

    const out = path.join(dir, 'by-name');
    const r = await meshctl(['x', 'workload', 'entry', 'configure', '--name', 'ratings-vm', '-n', ns!, '-i', mesh!, '-o', out, '--autoregister', '--capture-dns', '--workloadIP', '10.1.2.3', '--tokenDuration', '1200', '--clusterID', 'west']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain(`Files of a VM of WorkloadGroup ${ns}/ratings-vm:`);
    expect(fs.readdirSync(out).sort()).toEqual(['cluster.env', 'hosts', 'mesh-token', 'mesh.yaml', 'root-cert.pem']);

    const token = fs.readFileSync(path.join(out, 'mesh-token'), 'utf8');
    expect(fs.statSync(path.join(out, 'mesh-token')).mode & 0o777).toBe(0o600);
    const review = await tokenReview(token);
    expect(review.error ?? '').toBe('');
    expect(review.authenticated).toBe(true);
    expect(review.user?.username).toBe(`system:serviceaccount:${ns}:vm-sa`);
    expect(review.audiences).toEqual(['mesh-ca']);
    const c = claims(token);
    expect(c.exp - c.iat).toBe(1200);
    expect(c.aud).toEqual(['mesh-ca']);

    expect(fs.readFileSync(path.join(out, 'root-cert.pem'), 'utf8')).toBe(root);
    expect(envOf(fs.readFileSync(path.join(out, 'cluster.env'), 'utf8'))).toEqual({
      CANONICAL_REVISION: 'v3',
      CANONICAL_SERVICE: 'ratings',
      INSTANCE_IP: '10.1.2.3',
      MESH_INBOUND_PORTS: '8080,9090',
      MESH_LOCAL_EXCLUDE_PORTS: '15090,15021,15020',
      MESH_METAJSON_LABELS: '{"app":"ratings","version":"v3"}',
      MESH_META_AUTO_REGISTER_GROUP: 'ratings-vm',
      MESH_META_CLUSTER_ID: 'west',
      MESH_META_DNS_CAPTURE: 'true',
      MESH_META_MESH_ID: 'example.org',
      MESH_META_WORKLOAD_NAME: 'ratings-vm',
      MESH_NAMESPACE: ns,
      MESH_SERVICE_CIDR: '*',
      POD_NAMESPACE: ns,
      SERVICE_ACCOUNT: 'vm-sa',
      TRUST_DOMAIN: 'example.org',
    });
    expect(parse(fs.readFileSync(path.join(out, 'mesh.yaml'), 'utf8'))).toEqual({
      defaultConfig: { discoveryAddress: `meshd.${mesh}.svc:15012`, proxyMetadata: { FROM_MESH: 'yes', MESH_META_DNS_CAPTURE: 'true', MESH_META_AUTO_REGISTER_GROUP: 'ratings-vm' } },
    });
    // The east-west gateway's load-balancer address, found by --ingressService's default.
    expect(fs.readFileSync(path.join(out, 'hosts'), 'utf8')).toBe(`198.51.100.20 meshd.${mesh}.svc\n`);
  }, 120_000);

  it('entry configure reads the group from a file (or standard input), for a revision, with the ingress address given', async () => {
    const file = path.join(dir, 'group.yaml');
    fs.writeFileSync(file, `apiVersion: networking.mesh.io/v1\nkind: WorkloadGroup\nmetadata:\n  name: legacy\n  namespace: ${ns}\nspec:\n  template:\n    serviceAccount: vm-sa\n    network: vm-net\n`);
    const out = path.join(dir, 'from-file');
    const r = await meshctl(['x', 'workload', 'entry', 'configure', '-f', file, '-i', mesh!, '-o', out, '-r', 'canary', '--ingressIP', '192.0.2.7']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(fs.readFileSync(path.join(out, 'hosts'), 'utf8')).toBe(`192.0.2.7 meshd-canary.${mesh}.svc\n`);
    expect(parse(fs.readFileSync(path.join(out, 'mesh.yaml'), 'utf8'))).toEqual({ defaultConfig: { discoveryAddress: `meshd-canary.${mesh}.svc:15012` } });
    const env = envOf(fs.readFileSync(path.join(out, 'cluster.env'), 'utf8'));
    expect(env).toMatchObject({ CANONICAL_SERVICE: 'legacy', CANONICAL_REVISION: 'latest', MESH_INBOUND_PORTS: '*', MESH_META_CLUSTER_ID: 'Cluster', MESH_META_NETWORK: 'vm-net', TRUST_DOMAIN: 'cluster.local' });
    expect(env).not.toHaveProperty('MESH_META_DNS_CAPTURE');
    expect(env).not.toHaveProperty('MESH_META_AUTO_REGISTER_GROUP');
    const c = claims(fs.readFileSync(path.join(out, 'mesh-token'), 'utf8'));
    expect(c.exp - c.iat).toBe(3600);
    expect(c.sub).toBe(`system:serviceaccount:${ns}:vm-sa`);

    const stdin = path.join(dir, 'from-stdin');
    const s = await meshctl(['x', 'workload', 'entry', 'configure', '-f', '-', '-i', mesh!, '-o', stdin, '--ingressService', 'nowhere'], fs.readFileSync(file, 'utf8'));
    expect(s.code).toBe(0);
    expect(s.err).toBe(`warning: service ${mesh}/nowhere (--ingressService) not found: no hosts file written; give --ingressIP for a VM that reaches meshd through a gateway\n`);
    expect(fs.readdirSync(stdin).sort()).toEqual(['cluster.env', 'mesh-token', 'mesh.yaml', 'root-cert.pem']);
  }, 120_000);

  it.each([
    ['group create without a name', ['x', 'workload', 'group', 'create'], /--name: the WorkloadGroup needs a name/],
    ['a port that is not a number', ['x', 'workload', 'group', 'create', '--name', 'g', '-p', 'http=web'], /--ports: http=web: "web" is not a port number/],
    ['a label without a value', ['x', 'workload', 'group', 'create', '--name', 'g', '-l', 'app'], /--labels: "app" is not <key>=<value>/],
    ['no output directory', ['x', 'workload', 'entry', 'configure', '--name', 'g'], /-o\/--output: give the directory to write the files to/],
    ['no group', ['x', 'workload', 'entry', 'configure', '-o', '/tmp/x'], /name the WorkloadGroup: -f\/--file <file>, or --name <name>/],
    ['a token shorter than the API server issues', ['x', 'workload', 'entry', 'configure', '--name', 'g', '-o', '/tmp/x', '--tokenDuration', '60'], /--tokenDuration: 60 is not a whole number of seconds from 600/],
    ['a token duration that is not a number', ['x', 'workload', 'entry', 'configure', '--name', 'g', '-o', '/tmp/x', '--tokenDuration', '1h'], /--tokenDuration: "1h" is not a whole number of seconds/],
    ['an ingress IP that is not one', ['x', 'workload', 'entry', 'configure', '--name', 'g', '-o', '/tmp/x', '--ingressIP', 'gateway.example'], /--ingressIP: "gateway\.example" is not an IP address/],
    ['a workload IP that is not one', ['x', 'workload', 'entry', 'configure', '--name', 'g', '-o', '/tmp/x', '--workloadIP', '10.1'], /--workloadIP: "10\.1" is not an IP address/],
    ['a group file that does not exist', ['x', 'workload', 'entry', 'configure', '-f', '/nonexistent/group.yaml', '-o', '/tmp/x'], /-f\/--file: cannot read \/nonexistent\/group\.yaml: ENOENT/],
  ])('%s ends with a clear message and exit 1', async (_what, argv, message) => {
    const r = await meshctl(argv);
    expect(r.err).toMatch(message);
    expect(r.code).toBe(1);
  }, 60_000);

  it('a group that is not there, a malformed group file, a revision that is not installed: clear messages, exit 1, no files', async () => {
    const out = path.join(dir, 'refused');
    const missing = await meshctl(['x', 'workload', 'entry', 'configure', '--name', 'nobody', '-n', ns!, '-i', mesh!, '-o', out]);
    expect(missing.code).toBe(1);
    expect(missing.err).toBe(`error: WorkloadGroup ${ns}/nobody not found\n`);

    const bad = path.join(dir, 'bad.yaml');
    fs.writeFileSync(bad, 'apiVersion: networking.mesh.io/v1\nkind: WorkloadGroup\nmetadata:\n  name: bad\nspec:\n  template:\n    ports:\n      http: not-a-port\n');
    const malformed = await meshctl(['x', 'workload', 'entry', 'configure', '-f', bad, '-n', ns!, '-i', mesh!, '-o', out]);
    expect(malformed.code).toBe(1);
    expect(malformed.err).toMatch(new RegExp(`error: ${bad.replace(/[.]/g, '\\.')}: spec\\.template\\.ports\\.http: `));

    const noRevision = await meshctl(['x', 'workload', 'entry', 'configure', '--name', 'ratings-vm', '-n', ns!, '-i', mesh!, '-o', out, '-r', 'blue']);
    expect(noRevision.code).toBe(1);
    expect(noRevision.err).toMatch(new RegExp(`error: mesh config: ConfigMap ${mesh}/mesh-blue not found \\(is the mesh revision blue installed\\?`));

    const noAccount = path.join(dir, 'no-account.yaml');
    fs.writeFileSync(noAccount, `apiVersion: networking.mesh.io/v1\nkind: WorkloadGroup\nmetadata:\n  name: orphan\nspec:\n  template:\n    serviceAccount: ghost\n`);
    const orphan = await meshctl(['x', 'workload', 'entry', 'configure', '-f', noAccount, '-n', ns!, '-i', mesh!, '-o', out]);
    expect(orphan.code).toBe(1);
    expect(orphan.err).toBe(`error: service account ${ns}/ghost of WorkloadGroup ${ns}/orphan not found\n`);
    expect(fs.existsSync(out)).toBe(false);
  }, 120_000);
});
