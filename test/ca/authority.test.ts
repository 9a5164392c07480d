import { mkdtemp, readFile, rm, stat, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { CertificateAuthority, SignQueue, SignerError } from '../../src/ca/authority.js';
import { CaMaterialError, caFilesOf, readCaFiles, trustBundlePem } from '../../src/ca/material.js';
import { bundleExpirySource, createCaMetrics } from '../../src/ca/metrics.js';
import { loadPluginCa } from '../../src/ca/plugin.js';
import { RootRotator, inGracePeriod } from '../../src/ca/rotation.js';
import { PluginReload } from '../../src/controllers/ca-plugin/controller.js';
import { firstCheckDelayMs, rootRotationController } from '../../src/controllers/ca-root-rotation/controller.js';
import { eventually } from '../support/eventually.js';
import { createSelfSignedMaterial, loadOrCreateSelfSigned } from '../../src/ca/self-signed.js';
import { DirectoryCaStore, MemoryCaStore } from '../../src/ca/store.js';
import { createCsr, generateKey, parseCertificatePem, parseCsrPem } from '../../src/ca/x509.js';
import { openssl, opensslWorkspace, pemCertificates, type OpensslWorkspace } from '../support/openssl.js';

const log = pino({ level: 'silent' });
const ID = 'spiffe://cluster.local/ns/default/sa/echo';
let ws: OpensslWorkspace;
let dir: string;
beforeAll(async () => {
  ws = await opensslWorkspace();
  dir = await mkdtemp(join(tmpdir(), 'mesh-ca-test-'));
});
afterAll(async () => {
  await ws.cleanup();
  await rm(dir, { recursive: true, force: true });
});

const SELF = { trustDomain: 'cluster.local', rsaKeySize: 2048, ttlMs: 3600_000 };

async function leafFor(ca: CertificateAuthority, ttlMs = 600_000): Promise<string[]> {
  const key = await generateKey('ec-p256');
  const csr = parseCsrPem(await createCsr(key, { uris: [ID] }));
  return ca.sign({ spki: csr.spki, identity: ID, ttlMs });
}

describe('self-signed root', () => {
  it('is created once in a directory and read back on the next start; files are private', async () => {
    const store = new DirectoryCaStore(join(dir, 'ca1'));
    const first = await loadOrCreateSelfSigned(store, SELF);
    expect(first.created).toBe(true);
    const again = await loadOrCreateSelfSigned(new DirectoryCaStore(join(dir, 'ca1')), SELF);
    expect(again.created).toBe(false);
    expect(again.material.root.der.equals(first.material.root.der)).toBe(true);
    expect((await stat(join(dir, 'ca1', 'ca-key.pem'))).mode & 0o077).toBe(0);
    const text = await ws.text(first.material.root.pem);
    expect(text).toContain('Public-Key: (2048 bit)');
    const days = (first.material.root.notAfter.getTime() - Date.now()) / 3600_000;
    expect(days).toBeGreaterThan(0.98);
    expect(days).toBeLessThanOrEqual(1);
  });

  it('two creators racing on one store agree on one root', async () => {
    const store = new DirectoryCaStore(join(dir, 'race'));
    const [a, b] = await Promise.all([loadOrCreateSelfSigned(store, SELF), loadOrCreateSelfSigned(new DirectoryCaStore(join(dir, 'race')), SELF)]);
    expect(a.material.root.der.equals(b.material.root.der)).toBe(true);
    expect([a.created, b.created].filter(Boolean)).toHaveLength(1);
  });
});

describe('signing', () => {
  it('leaf first, root last; the lifetime asked for; openssl verifies the chain', async () => {
    const { material } = await loadOrCreateSelfSigned(new MemoryCaStore(), SELF);
    const ca = new CertificateAuthority(material, { metrics: createCaMetrics(new Registry()), log });
    const chain = await leafFor(ca, 600_000);
    expect(chain).toHaveLength(2);
    expect(chain[1]).toBe(material.root.pem);
    const leaf = parseCertificatePem(chain[0]);
    expect(leaf.altNames.uris).toEqual([ID]);
    expect(Math.abs(leaf.notAfter.getTime() - Date.now() - 600_000)).toBeLessThan(5_000);
    expect((await ws.verify(chain.join(''), trustBundlePem(material))).code).toBe(0);
  });

  it('never issues past the signing certificate', async () => {
    const { material } = await loadOrCreateSelfSigned(new MemoryCaStore(), { ...SELF, ttlMs: 120_000 });
    const ca = new CertificateAuthority(material, { metrics: createCaMetrics(new Registry()), log });
    const leaf = parseCertificatePem((await leafFor(ca, 24 * 3600_000))[0]);
    expect(leaf.notAfter.getTime()).toBeLessThanOrEqual(material.root.notAfter.getTime());
  });

  it('the queue refuses beyond its bound instead of holding', async () => {
    const q = new SignQueue(1, 1);
    let release!: () => void;
    const first = q.run(() => new Promise<void>((r) => (release = r)));
    const second = q.run(async () => 'second');
    await expect(q.run(async () => 'third')).rejects.toThrow(SignerError);
    release();
    await first;
    await expect(second).resolves.toBe('second');
  });

  it('records the root and chain expiry gauges', async () => {
    const { material } = await loadOrCreateSelfSigned(new MemoryCaStore(), SELF);
    const registry = new Registry();
    new CertificateAuthority(material, { metrics: createCaMetrics(registry), log });
    const text = await registry.metrics();
    expect(text).toContain(`ca_server_root_cert_expiry_timestamp ${Math.floor(material.root.notAfter.getTime() / 1000)}`);
    expect(text).toContain(`ca_server_cert_chain_expiry_timestamp ${Math.floor(material.root.notAfter.getTime() / 1000)}`);
  });

  it('the expiry gauges turn negative when the root expires without a rotation (read at scrape time)', async () => {
    // a root made two hours ago that lived one hour: expired, and nothing rotates it
    const expired = await createSelfSignedMaterial({ ...SELF, ttlMs: 3600_000 }, [], Date.now() - 2 * 3600_000);
    const registry = new Registry();
    const ca = new CertificateAuthority(expired, { metrics: createCaMetrics(registry), log });
    const seconds = Math.floor(expired.root.notAfter.getTime() / 1000);
    const text = await registry.metrics();
    expect(text).toContain(`ca_server_root_cert_expiry_timestamp ${-seconds}`);
    expect(text).toContain(`ca_server_cert_chain_expiry_timestamp ${-seconds}`);

    // a root that is valid when the CA starts and expires while it runs
    const short = await createSelfSignedMaterial({ ...SELF, ttlMs: 1_500 });
    const later = new Registry();
    new CertificateAuthority(short, { metrics: createCaMetrics(later), log });
    const at = Math.floor(short.root.notAfter.getTime() / 1000);
    expect(await later.metrics()).toContain(`ca_server_root_cert_expiry_timestamp ${at}`);
    await new Promise((r) => setTimeout(r, short.root.notAfter.getTime() - Date.now() + 50));
    const after = await later.metrics();
    expect(after).toContain(`ca_server_root_cert_expiry_timestamp ${-at}`);
    expect(after).toContain(`ca_server_cert_chain_expiry_timestamp ${-at}`);
    expect(ca.current()).toBe(expired);
  });

  it('with an external signer the gauges read its trust bundle at scrape time', async () => {
    const old = await createSelfSignedMaterial({ ...SELF, ttlMs: 3600_000 }, [], Date.now() - 2 * 3600_000);
    const fresh = await createSelfSignedMaterial(SELF);
    let bundle = [fresh.root];
    const registry = new Registry();
    createCaMetrics(registry).setExpirySource(bundleExpirySource(() => bundle));
    expect(await registry.metrics()).toContain(`ca_server_root_cert_expiry_timestamp ${Math.floor(fresh.root.notAfter.getTime() / 1000)}`);
    bundle = [fresh.root, old.root];
    const text = await registry.metrics();
    expect(text).toContain(`ca_server_root_cert_expiry_timestamp ${-Math.floor(old.root.notAfter.getTime() / 1000)}`);
    expect(text).toContain(`ca_server_cert_chain_expiry_timestamp ${-Math.floor(old.root.notAfter.getTime() / 1000)}`);
  });
});

describe('root rotation', () => {
  it('inside the grace period a new root is made; old and new roots are both trusted; old leaves keep verifying', async () => {
    const store = new DirectoryCaStore(join(dir, 'rot'));
    const ttlMs = 10_000;
    const start = await loadOrCreateSelfSigned(store, { ...SELF, ttlMs });
    const ca = new CertificateAuthority(start.material, { metrics: createCaMetrics(new Registry()), log });
    const oldChain = await leafFor(ca, 60_000);
    const rotator = new RootRotator(ca, store, start.version, { ...SELF, ttlMs, checkIntervalMs: 1000, gracePeriodPercentile: 20, jitter: false }, log);
    // 50 % left: nothing to do
    expect(await rotator.check((start.material.root.notBefore.getTime() + start.material.root.notAfter.getTime()) / 2)).toBe('unchanged');
    // 10 % left: rotate (the check runs at a simulated time; openssl checks at that time too)
    const late = start.material.root.notAfter.getTime() - ttlMs / 10;
    expect(await rotator.check(late)).toBe('rotated');
    const after = ca.current();
    expect(after.root.der.equals(start.material.root.der)).toBe(false);
    expect(after.roots.map((r) => r.der.toString('base64'))).toEqual([after.root.der.toString('base64'), start.material.root.der.toString('base64')]);
    const bundle = trustBundlePem(after);
    expect(pemCertificates(bundle)).toHaveLength(2);
    // certificates of the old root keep verifying against the bundle, new ones too
    expect((await ws.verify(oldChain.join(''), bundle, { atTime: new Date(late) })).code).toBe(0);
    const newChain = await leafFor(ca, 60_000);
    const nv = await ws.verify(newChain.join(''), bundle, { atTime: new Date(late) });
    expect(nv.code).toBe(0);
    // without the old root in the bundle, the old leaf would not verify
    const ov = await ws.verify(oldChain.join(''), after.root.pem, { atTime: new Date(late) });
    expect(ov.code).not.toBe(0);
    expect(newChain[newChain.length - 1]).toBe(after.root.pem);
    // the store holds the new material: a restart reads it back
    const reread = readCaFiles((await store.load())!.files, 'test', new Date(late));
    expect(reread.roots).toHaveLength(2);
    expect(reread.root.der.equals(after.root.der)).toBe(true);
  });

  it('a replica adopts the root another one rotated to', async () => {
    const store = new DirectoryCaStore(join(dir, 'adopt'));
    const start = await loadOrCreateSelfSigned(store, { ...SELF, ttlMs: 10_000 });
    const opts = { ...SELF, ttlMs: 10_000, checkIntervalMs: 1000, gracePeriodPercentile: 20, jitter: false };
    const caA = new CertificateAuthority(start.material, { metrics: createCaMetrics(new Registry()), log });
    const caB = new CertificateAuthority(start.material, { metrics: createCaMetrics(new Registry()), log });
    const a = new RootRotator(caA, store, start.version, opts, log);
    const b = new RootRotator(caB, store, start.version, opts, log);
    const late = start.material.root.notAfter.getTime() - 1000;
    expect(await a.check(late)).toBe('rotated');
    expect(await b.check(late)).toBe('adopted');
    expect(caB.current().root.der.equals(caA.current().root.der)).toBe(true);
  });

  it('expired old roots leave the bundle', async () => {
    const store = new MemoryCaStore();
    const start = await loadOrCreateSelfSigned(store, { ...SELF, ttlMs: 10_000 });
    const ca = new CertificateAuthority(start.material, { metrics: createCaMetrics(new Registry()), log });
    const r = new RootRotator(ca, store, start.version, { ...SELF, ttlMs: 3600_000, checkIntervalMs: 1000, gracePeriodPercentile: 20, jitter: false }, log);
    expect(await r.check(start.material.root.notAfter.getTime() - 1000)).toBe('rotated');
    expect(ca.current().roots).toHaveLength(2);
    expect(await r.check(start.material.root.notAfter.getTime() + 1000)).toBe('pruned');
    expect(ca.current().roots).toHaveLength(1);
  });

  it('grace period arithmetic', () => {
    const root = { notBefore: new Date(0), notAfter: new Date(100_000) };
    expect(inGracePeriod(root, 20, 79_000)).toBe(false);
    expect(inGracePeriod(root, 20, 80_000)).toBe(true);
    expect(inGracePeriod(root, 0, 99_999)).toBe(false);
  });

  it('the ca-root-rotation controller checks on its schedule (first check jittered) and rotates inside the grace period', async () => {
    expect(() => rootRotationController({ rotator: { check: async () => 'unchanged' }, checkIntervalMs: 0, jitter: true })).toThrow(/must be positive/);
    expect(firstCheckDelayMs(60_000, false)).toBe(60_000);
    expect(firstCheckDelayMs(60_000, true, () => 0.25)).toBe(15_000);
    const ttlMs = 4000;
    const store = new MemoryCaStore();
    const start = await loadOrCreateSelfSigned(store, { ...SELF, ttlMs });
    const ca = new CertificateAuthority(start.material, { metrics: createCaMetrics(new Registry()), log });
    const rotator = new RootRotator(ca, store, start.version, { ...SELF, ttlMs, checkIntervalMs: 200, gracePeriodPercentile: 50, jitter: true }, log);
    const controller = rootRotationController({ rotator, checkIntervalMs: 200, jitter: true, log });
    controller.start();
    try {
      await eventually('a rotated root', () => !ca.current().root.der.equals(start.material.root.der), { timeoutMs: 20_000 });
      expect(ca.current().roots.some((r) => r.der.equals(start.material.root.der))).toBe(true);
      expect((await store.load())!.files['root-cert.pem']).toBe(trustBundlePem(ca.current()));
      expect(controller.stats().reconciles).toBeGreaterThan(1);
      expect(controller.stats().failures).toBe(0);
    } finally {
      await controller.stop();
    }
  }, 30_000);
});

describe('plug-in CA', () => {
  /** An operator's root → intermediate made with openssl, written as the four files. */
  async function pluginDir(name: string): Promise<string> {
    const d = join(dir, name);
    await mkdir(d, { recursive: true });
    const run = async (args: string[]): Promise<void> => {
      const r = await openssl(args);
      if (r.code !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
    };
    await run(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', join(d, 'root-key.pem'), '-out', join(d, 'root-cert.pem'), '-days', '10', '-subj', '/O=Operator Root', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
    await run(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', join(d, 'ca-key.pem'), '-out', join(d, 'ca.csr'), '-subj', '/O=Operator Intermediate']);
    await writeFile(join(d, 'ext.cnf'), 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign,digitalSignature\n');
    await run(['x509', '-req', '-in', join(d, 'ca.csr'), '-CA', join(d, 'root-cert.pem'), '-CAkey', join(d, 'root-key.pem'), '-CAcreateserial', '-out', join(d, 'ca-cert.pem'), '-days', '5', '-extfile', join(d, 'ext.cnf')]);
    const chain = (await readFile(join(d, 'ca-cert.pem'), 'utf8')) + (await readFile(join(d, 'root-cert.pem'), 'utf8'));
    await writeFile(join(d, 'cert-chain.pem'), chain);
    return d;
  }

  it('ROOT_CA_DIR files: the intermediate signs, the chain is served whole, openssl verifies it to the operator root', async () => {
    const d = await pluginDir('plugin');
    const plugin = await loadPluginCa({ namespace: 'mesh-system', rootCaDir: d, requireSecret: false });
    expect(plugin?.source).toBe(`ROOT_CA_DIR ${d}`);
    expect(plugin!.material.selfSigned).toBe(false);
    const ca = new CertificateAuthority(plugin!.material, { metrics: createCaMetrics(new Registry()), log });
    const chain = await leafFor(ca);
    expect(chain).toHaveLength(3);
    expect(parseCertificatePem(chain[1]).subjectRaw.toString('latin1')).toContain('Operator Intermediate');
    expect(chain[2]).toBe(parseCertificatePem(await readFile(join(d, 'root-cert.pem'), 'utf8')).pem);
    expect((await ws.verify(chain.join(''), await readFile(join(d, 'root-cert.pem'), 'utf8'))).code).toBe(0);
    // the material round-trips through the four entries
    expect(readCaFiles(caFilesOf(plugin!.material), 'again').intermediates).toHaveLength(0);
  });

  it('no files: no plug-in CA; some files: an error naming the missing ones; a wrong key: an error', async () => {
    expect(await loadPluginCa({ namespace: 'x', rootCaDir: join(dir, 'nothing-here'), requireSecret: false })).toBeUndefined();
    const d = await pluginDir('partial');
    await rm(join(d, 'cert-chain.pem'));
    await expect(loadPluginCa({ namespace: 'x', rootCaDir: d, requireSecret: false })).rejects.toThrow(/lacks cert-chain.pem/);
    const w = await pluginDir('wrongkey');
    await writeFile(join(w, 'ca-key.pem'), await readFile(join(w, 'root-key.pem'), 'utf8'));
    await expect(loadPluginCa({ namespace: 'x', rootCaDir: w, requireSecret: false })).rejects.toThrow(CaMaterialError);
    await expect(loadPluginCa({ namespace: 'x', rootCaDir: w, requireSecret: false })).rejects.toThrow(/key does not belong to ca-cert.pem/);
  });

  it('a changed ROOT_CA_DIR is followed without a restart; an incomplete one is refused and the CA keeps signing', async () => {
    const d = await pluginDir('reload');
    const plugin = await loadPluginCa({ namespace: 'x', rootCaDir: d, requireSecret: false });
    const ca = new CertificateAuthority(plugin!.material, { metrics: createCaMetrics(new Registry()), log });
    const reload = new PluginReload({ namespace: 'x', rootCaDir: d, requireSecret: false, ca, from: plugin!.from, pollMs: 100, log });
    reload.start();
    try {
      const other = await pluginDir('reload-next');
      for (const f of ['root-cert.pem', 'cert-chain.pem', 'ca-key.pem', 'ca-cert.pem']) await writeFile(join(d, f), await readFile(join(other, f), 'utf8'));
      const newRoot = parseCertificatePem(await readFile(join(other, 'root-cert.pem'), 'utf8'));
      await eventually('the CA signing with the new plug-in CA', () => ca.current().root.der.equals(newRoot.der), { timeoutMs: 20_000 });
      const chain = await leafFor(ca);
      expect((await ws.verify(chain.join(''), newRoot.pem)).code).toBe(0);
      await rm(join(d, 'cert-chain.pem'));
      await eventually('the incomplete directory refused', () => reload.controller.stats().terminal > 0, { timeoutMs: 20_000 });
      expect(ca.current().root.der.equals(newRoot.der)).toBe(true);
    } finally {
      await reload.stop();
    }
  }, 60_000);

  it('USE_REMOTE_CERTS without a cluster is refused by name', async () => {
    await expect(loadPluginCa({ namespace: 'x', rootCaDir: dir, requireSecret: true })).rejects.toThrow(/USE_REMOTE_CERTS=true/);
  });
});
