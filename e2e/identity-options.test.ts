/**
 * The identity options end to end, each on a daemon of its own:
 * - root rotation with shortened lifetimes (a daemon without cluster, root in <configDir>/.mesh-ca);
 * - `--tls-cipher-suites` on the secured port, and refusals at start-up naming the variable;
 * - SPIFFE_BUNDLE_ENDPOINTS and DISC_SKIP_VALIDATE_TRUST_DOMAIN (a bundle endpoint run here);
 * - EXTERNAL_CA=MESHD_RA_CLUSTER_API signing through the local plane's CSR API, and
 *   XDS_AUTH_PLAINTEXT on the plaintext port.
 *
 * Needs `npm run build` and Go (tools/mesh-workload).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ensureCluster, readKubeconfig, type KubeconfigCredentials } from '../test/support/cluster.js';
import { DaemonStartError, freePort, makeConfigDir, startDaemon, type ConfigDir, type Daemon } from '../test/support/daemon.js';
import { GO_TOOL_BUILD_TIMEOUT_MS, goToolPath } from '../test/support/go-tools.js';
import { openssl, opensslWorkspace, pemCertificates, type OpensslWorkspace } from '../test/support/openssl.js';
import { apply, applyCrds, createNamespace, deleteNamespace } from './support/kube.js';
import { eventually } from '../test/support/eventually.js';
import { requestToken, runWorkload } from './support/workload.js';

const run = promisify(execFile);
let bin: string;
let ws: OpensslWorkspace;
let tmp: string;

beforeAll(async () => {
  bin = await goToolPath('mesh-workload');
  ws = await opensslWorkspace();
  tmp = await mkdtemp(join(tmpdir(), 'mesh-identity-options-'));
}, GO_TOOL_BUILD_TIMEOUT_MS);
afterAll(async () => {
  await ws?.cleanup();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

async function ossl(args: string[]): Promise<void> {
  const r = await openssl(args);
  if (r.code !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
}

/** A first certificate straight from the local CA directory (scripts/workload-cert.mjs). */
async function bootstrapCert(caDir: string, identity: string, out: string): Promise<void> {
  await run(process.execPath, ['scripts/workload-cert.mjs', '--ca-dir', caDir, '--identity', identity, '--out', out]);
}

describe('a daemon without cluster', () => {
  let dir: ConfigDir;
  let daemon: Daemon | undefined;
  let secure: string;
  const ID = 'spiffe://cluster.local/ns/default/sa/echo';
  beforeAll(async () => {
    dir = await makeConfigDir();
    secure = `127.0.0.1:${await freePort()}`;
    daemon = await startDaemon({
      configDir: dir.path,
      args: ['--secureGRPCAddr', secure, '--tls-cipher-suites', 'TLS_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384'],
      env: {
        ENABLE_CA_SERVER: 'true',
        CA_SELF_SIGNED_CA_CERT_TTL: '16s',
        CA_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL: '1s',
        CA_SELF_SIGNED_ROOT_CERT_GRACE_PERIOD_PERCENTILE: '50',
        CA_ENABLE_JITTER_FOR_ROOT_CERT_ROTATOR: 'false',
      },
    });
  });
  afterAll(async () => {
    await daemon?.stop();
    await dir?.cleanup();
  });

  it('rotates its root inside the grace period: old and new roots in the bundle, old certificates keep verifying, renewal reaches the new root', async () => {
    const caDir = join(dir.path, '.mesh-ca');
    const firstBundle = await readFile(join(caDir, 'root-cert.pem'), 'utf8');
    expect(pemCertificates(firstBundle)).toHaveLength(1);
    const out = join(tmp, 'rot');
    await bootstrapCert(caDir, ID, out);
    const oldChain = await readFile(join(out, 'cert-chain.pem'), 'utf8');
    const bundle = await eventually(
      'a second root in the bundle',
      async () => {
        const b = await readFile(join(caDir, 'root-cert.pem'), 'utf8');
        return pemCertificates(b).length === 2 ? b : undefined;
      },
      { timeoutMs: 20_000, retryErrors: true, diagnostics: () => daemon!.logs().slice(-3000) },
    );
    const [newRoot, oldRoot] = pemCertificates(bundle);
    expect(oldRoot).toBe(pemCertificates(firstBundle)[0]);
    expect((await ws.verify(oldChain, bundle)).code).toBe(0);
    expect((await ws.verify(oldChain, newRoot)).code).not.toBe(0);
    await writeFile(join(tmp, 'bundle.pem'), bundle);
    // renewal with the old certificate; the serving certificate now chains to the new root
    const renewed = join(tmp, 'renewed.pem');
    const r = await runWorkload(bin, ['cert', '-addr', secure, '-root', join(tmp, 'bundle.pem'), '-cert', join(out, 'cert-chain.pem'), '-key', join(out, 'key.pem'), '-out-cert', renewed]);
    expect(r).toMatchObject({ ok: true, chain: 2 });
    const chain = pemCertificates(await readFile(renewed, 'utf8'));
    expect(chain[1]).toBe(newRoot);
    expect((await ws.verify(chain.join(''), newRoot)).code).toBe(0);
    const s = await openssl(['s_client', '-connect', secure, '-servername', 'meshd.mesh-system.svc', '-CAfile', join(tmp, 'bundle.pem'), '-verify_return_error', '-brief'], '');
    expect(s.stderr).toMatch(/Verification: OK/);
    expect(await daemon!.metric('ca_server_root_cert_expiry_timestamp')).toBeGreaterThan(Date.now() / 1000);
  }, 40_000);

  it('--tls-cipher-suites: a TLS 1.2 client offering only other suites is refused, a listed one is served', async () => {
    const other = await openssl(['s_client', '-connect', secure, '-tls1_2', '-cipher', 'ECDHE-ECDSA-AES128-GCM-SHA256', '-brief'], '');
    expect(other.code).not.toBe(0);
    const listed = await openssl(['s_client', '-connect', secure, '-tls1_2', '-cipher', 'ECDHE-ECDSA-AES256-GCM-SHA384', '-brief'], '');
    expect(listed.stderr).toMatch(/Ciphersuite: ECDHE-ECDSA-AES256-GCM-SHA384/);
    const tls13 = await openssl(['s_client', '-connect', secure, '-tls1_3', '-ciphersuites', 'TLS_AES_256_GCM_SHA384', '-brief'], '');
    expect(tls13.code).not.toBe(0);
  });
});

describe('XDS_AUTH=false with DISC_ENABLE_XDS_IDENTITY_CHECK=true (docs/adr/0142)', () => {
  let dir: ConfigDir;
  let daemon: Daemon | undefined;
  let secure: string;
  beforeAll(async () => {
    dir = await makeConfigDir();
    secure = `127.0.0.1:${await freePort()}`;
    daemon = await startDaemon({ configDir: dir.path, args: ['--secureGRPCAddr', secure], env: { ENABLE_CA_SERVER: 'true', XDS_AUTH: 'false' } });
  });
  afterAll(async () => {
    await daemon?.stop();
    await dir?.cleanup();
  });

  it('warns at start naming both variables; a stream with a certificate is still held to its namespace, one without a credential is served', async () => {
    expect(daemon!.logs()).toMatch(/warn[^\n]*DISC_ENABLE_XDS_IDENTITY_CHECK=true with XDS_AUTH=false/i);
    const caDir = join(dir.path, '.mesh-ca');
    const out = join(tmp, 'noauth');
    await bootstrapCert(caDir, 'spiffe://cluster.local/ns/default/sa/echo', out);
    const root = join(caDir, 'root-cert.pem');
    const cert = ['-cert', join(out, 'cert-chain.pem'), '-key', join(out, 'key.pem')];
    const own = await runWorkload(bin, ['xds', '-addr', secure, '-root', root, ...cert, '-node-id', 'sidecar~10.0.0.7~echo-0.default~default.svc.cluster.local']);
    expect(own).toMatchObject({ ok: true });
    const other = await runWorkload(bin, ['xds', '-addr', secure, '-root', root, ...cert, '-node-id', 'sidecar~10.0.0.7~echo-0.prod~prod.svc.cluster.local']);
    expect(other).toMatchObject({ ok: false, code: 'PermissionDenied', message: expect.stringMatching(/may act only for namespace default/) });
    const anonymous = await runWorkload(bin, ['xds', '-addr', secure, '-root', root, '-node-id', 'sidecar~10.0.0.7~echo-0.prod~prod.svc.cluster.local']);
    expect(anonymous).toMatchObject({ ok: true });
    expect(await daemon!.metric('ca_server_authentication_failure_count', { reason: 'xds_namespace' })).toBe(1);
  }, 40_000);
});

describe('refused at start-up, naming the setting', () => {
  it.each([
    [{ MESH_MULTIROOT_MESH: 'true' }, [], /MESH_MULTIROOT_MESH/],
    [{}, ['--tls-cipher-suites', 'TLS_RSA_WITH_RC4_128_SHA'], /--tls-cipher-suites: TLS_RSA_WITH_RC4_128_SHA is classed insecure/],
    [{ EXTERNAL_CA: 'MESHD_RA_MESH_API' }, [], /EXTERNAL_CA: MESHD_RA_MESH_API is not supported/],
  ] as Array<[Record<string, string>, string[], RegExp]>)('%j %j', async (env, args, message) => {
    const err = await startDaemon({ env: { ENABLE_CA_SERVER: 'true', ...env }, args: ['--secureGRPCAddr', `127.0.0.1:${await freePort()}`, ...args] }).then(
      (d) => d.stop().then(() => new Error('started')),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DaemonStartError);
    expect((err as Error).message).toMatch(/exited with code 1/);
    expect((err as Error).message).toMatch(message);
  });
});

describe('SPIFFE_BUNDLE_ENDPOINTS and DISC_SKIP_VALIDATE_TRUST_DOMAIN', () => {
  let server: Server;
  let url: string;
  const FOREIGN = 'spiffe://other.org/ns/default/sa/visitor';

  beforeAll(async () => {
    const d = ws.dir;
    // The bundle endpoint's own TLS certificate, trusted by the daemon through NODE_EXTRA_CA_CERTS.
    await ossl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${d}/web.key`, '-out', `${d}/web.pem`, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1']);
    // The other trust domain's root and a workload certificate of it.
    await ossl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${d}/other-ca.key`, '-out', `${d}/other-ca.pem`, '-days', '1', '-subj', '/O=other.org', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign']);
    await ossl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${d}/visitor.key`, '-out', `${d}/visitor.csr`, '-subj', '/O=visitor']);
    await writeFile(`${d}/visitor.ext`, `subjectAltName=critical,URI:${FOREIGN}\nextendedKeyUsage=clientAuth\n`);
    await ossl(['x509', '-req', '-in', `${d}/visitor.csr`, '-CA', `${d}/other-ca.pem`, '-CAkey', `${d}/other-ca.key`, '-CAcreateserial', '-out', `${d}/visitor.pem`, '-days', '1', '-extfile', `${d}/visitor.ext`]);
    const der = pemCertificates(await readFile(`${d}/other-ca.pem`, 'utf8'))[0].replace(/-----[^-]+-----|\s/g, '');
    const bundle = JSON.stringify({ keys: [{ use: 'x509-svid', kty: 'EC', crv: 'P-256', x5c: [der] }], spiffe_refresh_hint: 300 });
    server = createServer({ key: await readFile(`${d}/web.key`), cert: await readFile(`${d}/web.pem`) }, (_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(bundle);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const addr = server.address();
    url = `https://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/bundle`;
  });
  afterAll(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

  async function daemonWith(skip: boolean): Promise<{ daemon: Daemon; secure: string; dir: ConfigDir; root: string }> {
    const dir = await makeConfigDir();
    const secure = `127.0.0.1:${await freePort()}`;
    const daemon = await startDaemon({
      configDir: dir.path,
      args: ['--secureGRPCAddr', secure],
      env: { ENABLE_CA_SERVER: 'true', SPIFFE_BUNDLE_ENDPOINTS: `other.org|${url}`, DISC_SKIP_VALIDATE_TRUST_DOMAIN: String(skip), NODE_EXTRA_CA_CERTS: `${ws.dir}/web.pem` },
    });
    const root = join(dir.path, '.mesh-ca', 'root-cert.pem');
    return { daemon, secure, dir, root };
  }

  it('the other trust domain is trusted for xDS only with DISC_SKIP_VALIDATE_TRUST_DOMAIN=true; never for certificates', async () => {
    const node = 'sidecar~10.0.0.9~visitor-0.default~default.svc.cluster.local';
    const visitor = ['-cert', `${ws.dir}/visitor.pem`, '-key', `${ws.dir}/visitor.key`];
    for (const skip of [false, true]) {
      const d = await daemonWith(skip);
      try {
        const r = await runWorkload(bin, ['xds', '-addr', d.secure, '-root', d.root, ...visitor, '-node-id', node]);
        if (skip) expect(r).toMatchObject({ ok: true });
        else expect(r).toMatchObject({ ok: false, code: 'Unauthenticated', message: expect.stringMatching(/trust domain other.org, not cluster.local/) });
        const c = await runWorkload(bin, ['cert', '-addr', d.secure, '-root', d.root, ...visitor]);
        expect(c).toMatchObject({ ok: false, code: 'Unauthenticated' });
      } finally {
        await d.daemon.stop();
        await d.dir.cleanup();
      }
    }
  }, 60_000);

  it('an unreachable bundle endpoint stops the start with its name', async () => {
    const err = await startDaemon({ env: { ENABLE_CA_SERVER: 'true', SPIFFE_BUNDLE_ENDPOINTS: `gone.org|https://127.0.0.1:${await freePort()}/b` }, args: ['--secureGRPCAddr', `127.0.0.1:${await freePort()}`] }).then(
      (d) => d.stop().then(() => new Error('started')),
      (e: unknown) => e,
    );
    expect((err as Error).message).toMatch(/SPIFFE_BUNDLE_ENDPOINTS gone.org/);
  });
});

describe('on the local plane', () => {
  const ns = `ra-${randomBytes(3).toString('hex')}`;
  let creds: KubeconfigCredentials;
  let kubeconfig: string;
  let daemon: Daemon | undefined;
  let secure: string;
  let serverRoot: string;
  const ID = `spiffe://cluster.local/ns/${ns}/sa/echo`;

  beforeAll(async () => {
    const cluster = await ensureCluster();
    kubeconfig = cluster.kubeconfig;
    creds = await readKubeconfig(kubeconfig);
    await applyCrds(creds);
    await createNamespace(creds, ns);
    await apply(creds, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'echo', namespace: ns } });
    // The serving certificate comes from files (no built-in CA with EXTERNAL_CA).
    const d = ws.dir;
    await ossl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${d}/meshd.key`, '-out', `${d}/meshd.pem`, '-days', '1', '-subj', '/O=meshd', '-addext', `subjectAltName=DNS:meshd.${ns}.svc`]);
    serverRoot = `${d}/meshd.pem`;
    secure = `127.0.0.1:${await freePort()}`;
    daemon = await startDaemon({
      registries: 'Cluster',
      args: ['--clusterconfig', kubeconfig, '--secureGRPCAddr', secure, '--tlsCertFile', `${d}/meshd.pem`, '--tlsKeyFile', `${d}/meshd.key`],
      env: {
        ENABLE_CA_SERVER: 'true',
        EXTERNAL_CA: 'MESHD_RA_CLUSTER_API',
        CLUSTER_SIGNER: 'kubernetes.io/kube-apiserver-client',
        ROOT_CA_DIR: join(tmp, 'no-root-ca-dir'),
        XDS_AUTH_PLAINTEXT: 'true',
        POD_NAMESPACE: ns,
        DISC_ENABLE_STATUS: 'false',
      },
      readyTimeoutMs: 60_000,
    });
  }, 120_000);
  afterAll(async () => {
    await daemon?.stop();
    if (creds) await deleteNamespace(creds, ns);
  }, 60_000);

  it('EXTERNAL_CA=MESHD_RA_CLUSTER_API: the cluster signer issues the workload certificate, chained to the cluster CA', async () => {
    const token = join(tmp, 'ra-token');
    await writeFile(token, await requestToken(creds, ns, 'echo', ['mesh-ca']));
    const out = join(tmp, 'ra-chain.pem');
    const r = await runWorkload(bin, ['cert', '-addr', secure, '-server-name', `meshd.${ns}.svc`, '-root', serverRoot, '-token-file', token, '-identity', ID, '-out-cert', out]);
    expect(r).toMatchObject({ ok: true, chain: 2 });
    const chain = await readFile(out, 'utf8');
    const clusterCa = creds.ca!.toString('utf8');
    expect(pemCertificates(chain)[1].trim()).toBe(pemCertificates(clusterCa)[0].trim());
    expect((await ws.verify(chain, clusterCa, { purpose: 'sslclient' })).code).toBe(0);
    expect(await ws.text(chain)).toContain(`URI:${ID}`);
    // a CSR without the identity cannot go to the external signer as it is
    const bare = await runWorkload(bin, ['cert', '-addr', secure, '-server-name', `meshd.${ns}.svc`, '-root', serverRoot, '-token-file', token]);
    expect(bare).toMatchObject({ ok: false, code: 'InvalidArgument' });
    expect(bare.message).toContain(ID);
  });

  it('XDS_AUTH_PLAINTEXT: the plaintext port wants a token too', async () => {
    const token = join(tmp, 'plain-token');
    await writeFile(token, await requestToken(creds, ns, 'echo', ['mesh-ca']));
    const node = `sidecar~198.18.250.2~echo-0.${ns}~${ns}.svc.cluster.local`;
    expect(await runWorkload(bin, ['xds', '-plaintext', '-addr', daemon!.grpcAddr, '-node-id', node])).toMatchObject({ ok: false, code: 'Unauthenticated' });
    expect(await runWorkload(bin, ['xds', '-plaintext', '-addr', daemon!.grpcAddr, '-token-file', token, '-node-id', node])).toMatchObject({ ok: true });
  });
});
