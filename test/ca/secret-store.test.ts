/** The CA's Secrets on the local plane's real API server: mesh-ca-secret races and rotation, cacerts. */
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { CertificateAuthority } from '../../src/ca/authority.js';
import { caFilesOf } from '../../src/ca/material.js';
import { createCaMetrics } from '../../src/ca/metrics.js';
import { loadPluginCa } from '../../src/ca/plugin.js';
import { RootRotator } from '../../src/ca/rotation.js';
import { SecretCaStore } from '../../src/ca/secret-store.js';
import { createSelfSignedMaterial, loadOrCreateSelfSigned } from '../../src/ca/self-signed.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';
import { createNamespace, deleteNamespace, kubeTestEnv, type KubeTestEnv } from '../kube/helpers.js';

const log = pino({ level: 'silent' });
const SELF = { trustDomain: 'cluster.local', rsaKeySize: 2048, ttlMs: 20_000 };
let env: KubeTestEnv;
let ns: string;

beforeAll(async () => {
  env = await kubeTestEnv();
  ns = await createNamespace(env.client, 'ca-secret');
}, CLUSTER_START_TIMEOUT_MS);
afterAll(async () => {
  await deleteNamespace(env.client, ns);
  env.client.close();
});

describe('mesh-ca-secret', () => {
  it('replicas starting together agree on one root: one create wins, the other reads it back', async () => {
    const results = await Promise.all(Array.from({ length: 3 }, () => loadOrCreateSelfSigned(new SecretCaStore(env.client, ns), SELF)));
    const roots = new Set(results.map((r) => r.material.root.der.toString('base64')));
    expect(roots.size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    const secret = await env.client.get<{ metadata?: object; type?: string }>({ apiVersion: 'v1', kind: 'Secret', namespace: ns, name: 'mesh-ca-secret' });
    expect(secret.type).toBe('mesh.io/ca-root');
  });

  it('a rotation writes old and new roots with the resourceVersion it read; a racing replica adopts the winner', async () => {
    const store = new SecretCaStore(env.client, ns);
    const start = await loadOrCreateSelfSigned(store, SELF);
    const opts = { ...SELF, checkIntervalMs: 1000, gracePeriodPercentile: 20, jitter: false };
    const caA = new CertificateAuthority(start.material, { metrics: createCaMetrics(new Registry()), log });
    const caB = new CertificateAuthority(start.material, { metrics: createCaMetrics(new Registry()), log });
    const late = start.material.root.notAfter.getTime() - 1000;
    const [a, b] = await Promise.all([new RootRotator(caA, store, start.version, opts, log).check(late), new RootRotator(caB, new SecretCaStore(env.client, ns), start.version, opts, log).check(late)]);
    expect([a, b].sort()).toEqual(['adopted', 'rotated']);
    expect(caA.current().root.der.equals(caB.current().root.der)).toBe(true);
    expect(caA.current().roots).toHaveLength(2);
    const stored = await store.load();
    expect(stored!.files['root-cert.pem']).toBe(caFilesOf(caA.current())['root-cert.pem']);
  });
});

describe('cacerts', () => {
  it('a cacerts Secret is the plug-in CA; USE_REMOTE_CERTS requires it', async () => {
    await expect(loadPluginCa({ client: env.client, namespace: ns, rootCaDir: '/nonexistent', requireSecret: true })).rejects.toThrow(`USE_REMOTE_CERTS=true: Secret ${ns}/cacerts does not exist`);
    expect(await loadPluginCa({ client: env.client, namespace: ns, rootCaDir: '/nonexistent', requireSecret: false })).toBeUndefined();
    const operator = await createSelfSignedMaterial({ ...SELF, trustDomain: 'operator', ttlMs: 3600_000 });
    const files = caFilesOf(operator);
    await env.client.create({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'cacerts', namespace: ns },
      data: Object.fromEntries(Object.entries(files).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
    } as never);
    const plugin = await loadPluginCa({ client: env.client, namespace: ns, rootCaDir: '/nonexistent', requireSecret: true });
    expect(plugin?.source).toBe(`Secret ${ns}/cacerts`);
    expect(plugin!.material.root.der.equals(operator.root.der)).toBe(true);
  });
});
