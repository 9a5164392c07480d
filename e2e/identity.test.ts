/**
 * Workload identity end to end on the local control plane: the daemon runs with `--registries
 * Cluster` and its built-in CA (root in the Secret mesh-ca-secret of its namespace); a grpc-go
 * workload (tools/mesh-workload) gets certificates from the certificate service on the secured
 * port with service-account tokens from the real TokenRequest API, openssl verifies them, and the
 * same workload receives its xDS configuration over mutual TLS. Refusals are checked for their
 * status and for the metric that counts them.
 *
 * Needs `npm run build` (the daemon runs from dist/) and Go (tools/mesh-workload).
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusterDir, ensureCluster, kubeRequest, readKubeconfig, type KubeconfigCredentials } from '../test/support/cluster.js';
import { freePort, startDaemon, type Daemon } from '../test/support/daemon.js';
import { GO_TOOL_BUILD_TIMEOUT_MS, goToolPath } from '../test/support/go-tools.js';
import { openssl, opensslWorkspace, pemCertificates, type OpensslWorkspace } from '../test/support/openssl.js';
import { apply, applyCrds, createNamespace, deleteNamespace, remove } from './support/kube.js';
import { eventually } from '../test/support/eventually.js';
import { expiredCopy, holdXdsStream, requestToken, runWorkload } from './support/workload.js';

const suffix = randomBytes(3).toString('hex');
const meshNs = `mesh-ca-${suffix}`;
const appNs = `app-ca-${suffix}`;
const ID = `spiffe://cluster.local/ns/${appNs}/sa/echo`;
const SERVER_NAME = `meshd.${meshNs}.svc`;

let creds: KubeconfigCredentials;
let kubeconfig: string;
let daemon: Daemon | undefined;
let bin: string;
let dir: string;
let ws: OpensslWorkspace;
let secureAddr: string;
let rootFile: string;

async function secretRoots(): Promise<string> {
  const res = await kubeRequest(creds, 'GET', `/api/v1/namespaces/${meshNs}/secrets/mesh-ca-secret`);
  if (res.status !== 200) throw new Error(`mesh-ca-secret: HTTP ${res.status}`);
  const data = (res.body as { data: Record<string, string> }).data;
  return Buffer.from(data['root-cert.pem'], 'base64').toString('utf8');
}

async function startMeshd(extraEnv: Record<string, string> = {}): Promise<Daemon> {
  secureAddr = `127.0.0.1:${await freePort()}`;
  return startDaemon({
    registries: 'Cluster',
    args: ['--clusterconfig', kubeconfig, '--secureGRPCAddr', secureAddr],
    env: {
      ENABLE_CA_SERVER: 'true',
      POD_NAMESPACE: meshNs,
      DEFAULT_WORKLOAD_CERT_TTL: '1h',
      MAX_WORKLOAD_CERT_TTL: '2h',
      DISC_ENABLE_STATUS: 'false',
      ...extraEnv,
    },
    readyTimeoutMs: 60_000,
  });
}

const tokenFile = async (name: string, token: string): Promise<string> => {
  const p = join(dir, name);
  await writeFile(p, token, { mode: 0o600 });
  return p;
};

const base = (): string[] => ['-addr', secureAddr, '-server-name', SERVER_NAME, '-root', rootFile];
const nodeId = (ns: string): string => `sidecar~198.18.250.1~echo-0.${ns}~${ns}.svc.cluster.local`;

beforeAll(async () => {
  bin = await goToolPath('mesh-workload');
  const cluster = await ensureCluster();
  kubeconfig = cluster.kubeconfig;
  creds = await readKubeconfig(kubeconfig);
  dir = await mkdtemp(join(tmpdir(), 'mesh-identity-e2e-'));
  ws = await opensslWorkspace();
  await applyCrds(creds);
  await createNamespace(creds, meshNs);
  await createNamespace(creds, appNs);
  for (const sa of ['echo', 'gone']) await apply(creds, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: sa, namespace: appNs } });
  daemon = await startMeshd();
  rootFile = join(dir, 'root-cert.pem');
  await writeFile(rootFile, await secretRoots());
}, GO_TOOL_BUILD_TIMEOUT_MS);

afterAll(async () => {
  await daemon?.stop();
  await ws?.cleanup();
  if (dir) await rm(dir, { recursive: true, force: true });
  if (creds) {
    await deleteNamespace(creds, appNs);
    await deleteNamespace(creds, meshNs);
  }
}, 60_000);

const diagnostics = (): string => (daemon ? daemon.logs().slice(-6000) : '');

describe('the self-signed root', () => {
  it('lives in the Secret mesh-ca-secret of the daemon namespace with the four entries', async () => {
    const res = await kubeRequest(creds, 'GET', `/api/v1/namespaces/${meshNs}/secrets/mesh-ca-secret`);
    expect(res.status).toBe(200);
    expect(Object.keys((res.body as { data: Record<string, string> }).data).sort()).toEqual(['ca-cert.pem', 'ca-key.pem', 'cert-chain.pem', 'root-cert.pem']);
    expect(pemCertificates(await secretRoots())).toHaveLength(1);
  });
});

describe('the certificate service', () => {
  it.each(['ec', 'rsa'])('a token for audience mesh-ca gets a %s certificate: SPIFFE URI, default lifetime, chain verified by openssl', async (keyType) => {
    const token = await tokenFile(`echo-${keyType}`, await requestToken(creds, appNs, 'echo', ['mesh-ca']));
    const out = join(dir, `chain-${keyType}.pem`);
    const r = await runWorkload(bin, ['cert', ...base(), '-token-file', token, '-key-type', keyType, '-identity', ID, '-out-cert', out, '-out-key', join(dir, `key-${keyType}.pem`)]);
    expect(r).toMatchObject({ ok: true, chain: 2 });
    const chain = await readFile(out, 'utf8');
    const v = await ws.verify(chain, await readFile(rootFile, 'utf8'), { purpose: 'sslclient' });
    expect(v.stderr).toBe('');
    expect(v.code).toBe(0);
    const text = await ws.text(chain);
    expect(text).toContain(`URI:${ID}`);
    expect(text).toContain(keyType === 'rsa' ? 'rsaEncryption' : 'id-ecPublicKey');
    const end = await openssl(['x509', '-noout', '-enddate', '-in', out]);
    const notAfter = Date.parse(end.stdout.replace('notAfter=', '').trim());
    expect(Math.abs(notAfter - Date.now() - 3600_000)).toBeLessThan(60_000); // DEFAULT_WORKLOAD_CERT_TTL=1h
  });

  it('a CSR without names gets the identity of the token; lifetimes are capped at MAX_WORKLOAD_CERT_TTL', async () => {
    const token = await tokenFile('echo-ttl', await requestToken(creds, appNs, 'echo', ['mesh-ca']));
    const out = join(dir, 'chain-ttl.pem');
    expect(await runWorkload(bin, ['cert', ...base(), '-token-file', token, '-ttl', '5h', '-out-cert', out])).toMatchObject({ ok: true });
    expect(await ws.text(await readFile(out, 'utf8'))).toContain(`URI:${ID}`);
    const end = await openssl(['x509', '-noout', '-enddate', '-in', out]);
    expect(Math.abs(Date.parse(end.stdout.replace('notAfter=', '').trim()) - Date.now() - 2 * 3600_000)).toBeLessThan(60_000);
    const short = join(dir, 'chain-short.pem');
    expect(await runWorkload(bin, ['cert', ...base(), '-token-file', token, '-ttl', '10m', '-out-cert', short])).toMatchObject({ ok: true });
    const end2 = await openssl(['x509', '-noout', '-enddate', '-in', short]);
    expect(Math.abs(Date.parse(end2.stdout.replace('notAfter=', '').trim()) - Date.now() - 600_000)).toBeLessThan(60_000);
  });

  it('renews with a client certificate it issued, for the same identity only', async () => {
    const cert = join(dir, 'chain-ec.pem');
    const key = join(dir, 'key-ec.pem');
    expect(await runWorkload(bin, ['cert', ...base(), '-cert', cert, '-key', key, '-identity', ID, '-out-cert', join(dir, 'renewed.pem')])).toMatchObject({ ok: true, chain: 2 });
    const other = await runWorkload(bin, ['cert', ...base(), '-cert', cert, '-key', key, '-identity', `spiffe://cluster.local/ns/${appNs}/sa/gone`]);
    expect(other).toMatchObject({ ok: false, code: 'PermissionDenied' });
  });

  describe('refusals: a clear status, counted', () => {
    const metric = (name: string, reason: string): Promise<number> => daemon!.metric(name, { reason });

    it('a token for another audience', async () => {
      const before = await metric('ca_server_authentication_failure_count', 'audience');
      const token = await tokenFile('wrong-aud', await requestToken(creds, appNs, 'echo', ['not-mesh']));
      const r = await runWorkload(bin, ['cert', ...base(), '-token-file', token]);
      expect(r).toMatchObject({ ok: false, code: 'Unauthenticated' });
      expect(r.message).toMatch(/audience/i);
      expect(await metric('ca_server_authentication_failure_count', 'audience')).toBe(before + 1);
    });

    it('an expired token (signed by the cluster issuer, expired a minute ago)', async () => {
      const saKey = join(clusterDir(), 'pki', 'sa.key');
      if (!existsSync(saKey)) {
        console.warn(`skipped: ${saKey} is not readable (external cluster)`);
        return;
      }
      const before = await metric('ca_server_authentication_failure_count', 'expired');
      const token = await tokenFile('expired', await expiredCopy(await requestToken(creds, appNs, 'echo', ['mesh-ca']), saKey));
      const r = await runWorkload(bin, ['cert', ...base(), '-token-file', token]);
      expect(r).toMatchObject({ ok: false, code: 'Unauthenticated' });
      expect(r.message).toMatch(/expired/i);
      expect(await metric('ca_server_authentication_failure_count', 'expired')).toBe(before + 1);
    });

    it('a token of a service account deleted since', async () => {
      const before = await metric('ca_server_authentication_failure_count', 'not_found');
      const token = await tokenFile('gone', await requestToken(creds, appNs, 'gone', ['mesh-ca']));
      await remove(creds, 'v1', 'ServiceAccount', appNs, 'gone');
      const r = await eventually(
        'the deleted account to be refused',
        async () => {
          const res = await runWorkload(bin, ['cert', ...base(), '-token-file', token]);
          return res.ok ? undefined : res;
        },
        { timeoutMs: 20_000, retryErrors: true, diagnostics },
      );
      expect(r.code).toBe('Unauthenticated');
      expect(r.message).toMatch(/not found|deleted/i);
      expect(await metric('ca_server_authentication_failure_count', 'not_found')).toBeGreaterThan(before);
    });

    it('a CSR asking for another identity', async () => {
      const before = await metric('ca_server_id_extraction_err_count', 'csr_identity');
      const token = await tokenFile('echo-other', await requestToken(creds, appNs, 'echo', ['mesh-ca']));
      const r = await runWorkload(bin, ['cert', ...base(), '-token-file', token, '-identity', `spiffe://cluster.local/ns/kube-system/sa/admin`]);
      expect(r).toMatchObject({ ok: false, code: 'PermissionDenied' });
      expect(r.message).toContain(ID);
      expect(await metric('ca_server_id_extraction_err_count', 'csr_identity')).toBe(before + 1);
    });

    it('no credential at all', async () => {
      const before = await metric('ca_server_authentication_failure_count', 'no_credential');
      expect(await runWorkload(bin, ['cert', ...base()])).toMatchObject({ ok: false, code: 'Unauthenticated' });
      expect(await metric('ca_server_authentication_failure_count', 'no_credential')).toBe(before + 1);
    });

    it('counts every CSR and every issuance', async () => {
      expect(await daemon!.metric('ca_server_csr_count')).toBeGreaterThanOrEqual(10);
      expect(await daemon!.metric('ca_server_success_cert_issuance_count')).toBeGreaterThanOrEqual(5);
      expect(await daemon!.metric('ca_server_root_cert_expiry_timestamp')).toBeGreaterThan(Date.now() / 1000);
    });
  });
});

describe('the secured xDS port', () => {
  it('serves a workload with its certificate, and shows its identity in /debug/connections and syncz', async () => {
    const held = await holdXdsStream(bin, [...base(), '-cert', join(dir, 'chain-ec.pem'), '-key', join(dir, 'key-ec.pem'), '-node-id', nodeId(appNs), '-hold', '4s', '-timeout', '30s']);
    const conns = (await daemon!.debug('connections')) as { connections: Array<{ proxy: string; identity: string | null }> };
    expect(conns.connections.find((c) => c.proxy === nodeId(appNs))?.identity).toBe(ID);
    const syncz = (await daemon!.debug('syncz')) as Array<{ proxy: string; identity: string | null }>;
    expect(syncz.find((c) => c.proxy === nodeId(appNs))?.identity).toBe(ID);
    const r = await held.done;
    expect(r.ok).toBe(true);
    expect(r.resources!.clusters).toBeGreaterThan(0);
  }, 60_000);

  it('serves a workload that presents a token instead of a certificate', async () => {
    const token = await tokenFile('xds-token', await requestToken(creds, appNs, 'echo', ['mesh-ca']));
    expect(await runWorkload(bin, ['xds', ...base(), '-token-file', token, '-node-id', nodeId(appNs)])).toMatchObject({ ok: true });
  });

  it('refuses a client without credentials', async () => {
    const r = await runWorkload(bin, ['xds', ...base(), '-node-id', nodeId(appNs)]);
    expect(r).toMatchObject({ ok: false, code: 'Unauthenticated' });
  });

  it('refuses a certificate of a foreign CA, even for the right identity', async () => {
    const d = ws.dir;
    const run = async (args: string[]): Promise<void> => {
      const res = await openssl(args);
      if (res.code !== 0) throw new Error(res.stderr);
    };
    await run(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${d}/foreign-ca.key`, '-out', `${d}/foreign-ca.pem`, '-days', '1', '-subj', '/O=cluster.local', '-addext', 'basicConstraints=critical,CA:TRUE']);
    await run(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${d}/foreign.key`, '-out', `${d}/foreign.csr`, '-subj', '/O=x']);
    await writeFile(`${d}/foreign.ext`, `subjectAltName=critical,URI:${ID}\nextendedKeyUsage=clientAuth,serverAuth\n`);
    await run(['x509', '-req', '-in', `${d}/foreign.csr`, '-CA', `${d}/foreign-ca.pem`, '-CAkey', `${d}/foreign-ca.key`, '-CAcreateserial', '-out', `${d}/foreign.pem`, '-days', '1', '-extfile', `${d}/foreign.ext`]);
    const before = await daemon!.metric('ca_server_authentication_failure_count', { reason: 'xds_no_credential' });
    const r = await runWorkload(bin, ['xds', ...base(), '-cert', `${d}/foreign.pem`, '-key', `${d}/foreign.key`, '-node-id', nodeId(appNs)]);
    expect(r).toMatchObject({ ok: false, code: 'Unauthenticated' });
    expect(await daemon!.metric('ca_server_authentication_failure_count', { reason: 'xds_no_credential' })).toBe(before + 1);
  });

  it('refuses a proxy claiming another namespace than its identity (PERMISSION_DENIED, counted)', async () => {
    const before = await daemon!.metric('ca_server_authentication_failure_count', { reason: 'xds_namespace' });
    const r = await runWorkload(bin, ['xds', ...base(), '-cert', join(dir, 'chain-ec.pem'), '-key', join(dir, 'key-ec.pem'), '-node-id', nodeId(meshNs)]);
    expect(r).toMatchObject({ ok: false, code: 'PermissionDenied' });
    expect(r.message).toContain(`namespace ${appNs}`);
    expect(await daemon!.metric('ca_server_authentication_failure_count', { reason: 'xds_namespace' })).toBe(before + 1);
  });

  it('the serving certificate names the daemon service and verifies to the root', async () => {
    const s = await openssl(['s_client', '-connect', secureAddr, '-servername', SERVER_NAME, '-CAfile', rootFile, '-verify_hostname', SERVER_NAME, '-verify_return_error', '-brief'], '');
    expect(s.stderr).toMatch(/Verification: OK/);
  });
});

describe('restart', () => {
  it('a restarted daemon signs with the same root', async () => {
    const before = await secretRoots();
    const metricsBefore = await daemon!.metric('ca_server_csr_count');
    expect(metricsBefore).toBeGreaterThan(0);
    await daemon!.stop();
    daemon = await startMeshd();
    expect(await secretRoots()).toBe(before);
    const token = await tokenFile('after-restart', await requestToken(creds, appNs, 'echo', ['mesh-ca']));
    const out = join(dir, 'after-restart.pem');
    expect(await runWorkload(bin, ['cert', ...base(), '-token-file', token, '-out-cert', out])).toMatchObject({ ok: true });
    expect((await ws.verify(await readFile(out, 'utf8'), before)).code).toBe(0);
  }, 90_000);
});

