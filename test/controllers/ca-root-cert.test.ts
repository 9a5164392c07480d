/**
 * Trust distribution on the local plane's real API server: the ca-root-cert controller keeps
 * `mesh-ca-root-cert` (key `root-cert.pem`) in every namespace equal to the CA's trust bundle; it
 * recreates a deleted map, restores an edited one (keeping keys it does not own), fills a namespace
 * created later, and after a root rotation (stored in the real `mesh-ca-secret`) every map carries
 * the new and the old root, so a certificate the old root signed keeps verifying (openssl) against
 * any namespace's map.
 */
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { CertificateAuthority } from '../../src/ca/authority.js';
import { trustBundlePem } from '../../src/ca/material.js';
import { createCaMetrics } from '../../src/ca/metrics.js';
import { RootRotator } from '../../src/ca/rotation.js';
import { SecretCaStore } from '../../src/ca/secret-store.js';
import { loadOrCreateSelfSigned } from '../../src/ca/self-signed.js';
import { generateKey, spkiOf } from '../../src/ca/x509.js';
import { CA_ROOT_CERT_CONTROLLER, ROOT_CERT_CONFIGMAP, ROOT_CERT_KEY, RootCertController } from '../../src/controllers/ca-root-cert/controller.js';
import type { KubeObject } from '../../src/kube/types.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';
import { eventually } from '../support/eventually.js';
import { opensslWorkspace, pemCertificates, type OpensslWorkspace } from '../support/openssl.js';
import { createNamespace, deleteNamespace, kubeTestEnv, type KubeTestEnv } from '../kube/helpers.js';

type ConfigMap = KubeObject & { data?: Record<string, string> };

const log = pino({ level: 'silent' });
const SELF = { trustDomain: 'cluster.local', rsaKeySize: 2048, ttlMs: 60_000 };
const WAIT = { timeoutMs: 30_000, intervalMs: 100, retryErrors: true };
let env: KubeTestEnv;
let home: string;
const namespaces: string[] = [];
let ws: OpensslWorkspace;

beforeAll(async () => {
  env = await kubeTestEnv();
  home = await createNamespace(env.client, 'rootcert-home');
  for (const p of ['rootcert-a', 'rootcert-b']) namespaces.push(await createNamespace(env.client, p));
  ws = await opensslWorkspace();
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  for (const ns of [home, ...namespaces]) await deleteNamespace(env?.client, ns);
  env?.client.close();
  await ws?.cleanup();
});

const mapRef = (namespace: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', namespace, name: ROOT_CERT_CONFIGMAP });
const bundleIn = async (ns: string): Promise<string | undefined> => (await env.client.find<ConfigMap>(mapRef(ns)))?.data?.[ROOT_CERT_KEY];

describe('ca-root-cert controller', () => {
  it('keeps mesh-ca-root-cert in every namespace: recreated, restored, filled in new namespaces, updated with old and new roots on rotation', async () => {
    const store = new SecretCaStore(env.client, home);
    const start = await loadOrCreateSelfSigned(store, SELF);
    const ca = new CertificateAuthority(start.material, { metrics: createCaMetrics(new Registry()), log });
    const errors: string[] = [];
    const controller = new RootCertController({
      client: env.client,
      bundle: { pem: () => trustBundlePem(ca.current()), onChange: (l) => ca.onChange(() => l()) },
      log,
      syncErrors: { inc: ({ controller: c }) => errors.push(c) },
    });
    const abort = new AbortController();
    const running = controller.run(abort.signal);
    try {
      const first = trustBundlePem(start.material);
      for (const ns of [home, ...namespaces]) await eventually(`${ns}/${ROOT_CERT_CONFIGMAP} with the root`, async () => (await bundleIn(ns)) === first, WAIT);
      // namespaces that existed before the test (default, kube-system) get it too
      expect(await bundleIn('default')).toBe(first);
      const made = await env.client.get<ConfigMap>(mapRef(namespaces[0]!));
      expect(made.metadata?.labels?.['mesh.io/config']).toBe('true');

      // deleted: created again
      await env.client.delete(mapRef(namespaces[0]!));
      await eventually('the deleted map recreated', async () => (await bundleIn(namespaces[0]!)) === first, WAIT);

      // edited: root-cert.pem restored, a key someone else added kept
      const current = await env.client.get<ConfigMap>(mapRef(namespaces[1]!));
      await env.client.replace<ConfigMap>({ ...current, data: { [ROOT_CERT_KEY]: 'not a certificate', extra: 'mine' } });
      const restored = await eventually(
        'the edited map restored',
        async () => {
          const m = await env.client.find<ConfigMap>(mapRef(namespaces[1]!));
          return m?.data?.[ROOT_CERT_KEY] === first ? m : undefined;
        },
        WAIT,
      );
      expect(restored.data?.extra).toBe('mine');

      // a namespace created while the controller runs
      const late = await createNamespace(env.client, 'rootcert-late');
      namespaces.push(late);
      await eventually('the new namespace filled', async () => (await bundleIn(late)) === first, WAIT);

      // a certificate from the first root, then a rotation through the real Secret
      const leafKey = await generateKey('ec-p256');
      const oldChain = (await ca.sign({ spki: spkiOf(leafKey), identity: `spiffe://cluster.local/ns/${late}/sa/default`, ttlMs: 30_000 })).join('');
      const rotator = new RootRotator(ca, store, start.version, { ...SELF, checkIntervalMs: 1000, gracePeriodPercentile: 20, jitter: false }, log);
      expect(await rotator.check(start.material.root.notAfter.getTime() - 5_000)).toBe('rotated');
      const rotated = trustBundlePem(ca.current());
      const roots = pemCertificates(rotated);
      expect(roots).toHaveLength(2);
      expect(roots[1]).toBe(first);
      for (const ns of [home, ...namespaces]) await eventually(`${ns} with old and new roots`, async () => (await bundleIn(ns)) === rotated, WAIT);
      for (const ns of namespaces) {
        const bundle = (await bundleIn(ns))!;
        expect((await ws.verify(oldChain, bundle)).code).toBe(0);
        expect((await ws.verify(oldChain, roots[0]!)).code).not.toBe(0);
      }
      expect(controller.name).toBe(CA_ROOT_CERT_CONTROLLER);
      expect(errors).toEqual([]);
    } finally {
      abort.abort();
      await running;
    }
  }, 120_000);

  it('two controllers with different bundles fighting over the maps slow down instead of rewriting without end', async () => {
    const ns = namespaces[0]!;
    const aborts = [new AbortController(), new AbortController()];
    const runs = ['A', 'B'].map((text, i) => new RootCertController({ client: env.client, bundle: { pem: () => `bundle ${text}\n` }, log }).run(aborts[i]!.signal));
    const versions = new Set<string>();
    const until = Date.now() + 8_000;
    try {
      while (Date.now() < until) {
        const v = (await env.client.find<ConfigMap>(mapRef(ns)))?.metadata?.resourceVersion;
        if (v) versions.add(v);
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      for (const a of aborts) a.abort();
      await Promise.all(runs);
    }
    // unguarded, two writers rewrite a map hundreds of times in 8 s; each waits 2, 4, 8 s here
    expect(versions.size).toBeGreaterThan(1);
    expect(versions.size).toBeLessThan(15);
  }, 60_000);

  it('writes nothing once its leader term ends', async () => {
    const abort = new AbortController();
    const controller = new RootCertController({ client: env.client, bundle: { pem: () => 'ignored' }, log });
    const running = controller.run(abort.signal);
    abort.abort();
    await running;
    const ns = namespaces[0]!;
    await env.client.delete(mapRef(ns));
    await new Promise((r) => setTimeout(r, 1500));
    expect(await env.client.find(mapRef(ns))).toBeUndefined();
  }, 60_000);
});
