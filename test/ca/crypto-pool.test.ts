/**
 * The CA's crypto pool: CSRs (made by openssl and here) are read and certificates signed in worker
 * threads; what they produce is what the event loop would have produced (openssl verifies it); the
 * event loop's own CPU time stays a small part of the work; the queue refuses beyond its bound.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { CertificateAuthority, SignerError } from '../../src/ca/authority.js';
import { readCsrSync } from '../../src/ca/crypto-jobs.js';
import { CryptoPool, defaultPoolSize } from '../../src/ca/crypto-pool.js';
import { trustBundlePem } from '../../src/ca/material.js';
import { createCaMetrics } from '../../src/ca/metrics.js';
import { createSelfSignedMaterial } from '../../src/ca/self-signed.js';
import { CsrError, DerError, createCsr, generateKey, parseCertificatePem } from '../../src/ca/x509.js';
import { openssl, opensslWorkspace, type OpensslWorkspace } from '../support/openssl.js';

const log = pino({ level: 'silent' });
const ID = 'spiffe://cluster.local/ns/default/sa/echo';
const SELF = { trustDomain: 'cluster.local', rsaKeySize: 2048, ttlMs: 3600_000 };
let ws: OpensslWorkspace;
let pool: CryptoPool;

beforeAll(async () => {
  ws = await opensslWorkspace();
  pool = new CryptoPool({ size: 2, log });
});
afterAll(async () => {
  await pool.close();
  await ws.cleanup();
});

async function opensslCsr(keyArgs: string[], name: string): Promise<string> {
  const cnf = join(ws.dir, `${name}.cnf`);
  await writeFile(cnf, `[req]\ndistinguished_name=dn\nreq_extensions=ext\nprompt=no\n[dn]\nO=x\n[ext]\nsubjectAltName=URI:${ID}\n`);
  const r = await openssl(['req', '-new', '-newkey', ...keyArgs, '-nodes', '-keyout', join(ws.dir, `${name}.key`), '-config', cnf]);
  if (r.code !== 0) throw new Error(r.stderr);
  return r.stdout;
}

describe('CryptoPool', () => {
  it('sizes itself to the CPUs, leaving one to the event loop', () => {
    expect(defaultPoolSize(1)).toBe(1);
    expect(defaultPoolSize(2)).toBe(1);
    expect(defaultPoolSize(8)).toBe(7);
    expect(defaultPoolSize(64)).toBe(8);
  });

  it.each([
    ['ECDSA P-256', ['ec', '-pkeyopt', 'ec_paramgen_curve:P-256'], 'ec-p256'],
    ['RSA 2048', ['rsa:2048'], 'rsa'],
  ])('reads an openssl %s CSR as this thread would', async (_name, keyArgs, keyType) => {
    const pem = await opensslCsr(keyArgs as string[], String(keyType));
    const info = await pool.readCsr(pem);
    expect(info).toMatchObject({ keyType, signatureValid: true, altNames: { uris: [ID], dnsNames: [], ips: [] } });
    expect(Buffer.isBuffer(info.spki)).toBe(true);
    expect(info.spki.equals(readCsrSync(pem).spki)).toBe(true);
  });

  it('starts its threads on the first job and stops them when idle; the next job starts one again', async () => {
    const lazy = new CryptoPool({ size: 2, idleMs: 200, log });
    try {
      expect(lazy.threads).toBe(0);
      const csr = await createCsr(await generateKey('ec-p256'), { uris: [ID] });
      expect((await lazy.readCsr(csr)).signatureValid).toBe(true);
      expect(lazy.threads).toBe(1);
      const deadline = Date.now() + 10_000;
      while (lazy.threads > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(lazy.threads).toBe(0);
      const again = await Promise.all([lazy.readCsr(csr), lazy.readCsr(csr), lazy.readCsr(csr), lazy.readCsr(csr), lazy.readCsr(csr)]);
      expect(again.every((i) => i.signatureValid)).toBe(true);
      expect(lazy.threads).toBe(2);
    } finally {
      await lazy.close();
    }
    expect(lazy.threads).toBe(0);
  });

  it('a bad CSR is refused with the reason; a forged signature reads as invalid', async () => {
    await expect(pool.readCsr('not a csr')).rejects.toThrow(CsrError);
    const good = await createCsr(await generateKey('ec-p256'), { uris: [ID] });
    const der = Buffer.from(good.replace(/-----[^-]+-----|\s/g, ''), 'base64');
    await expect(pool.readCsr(`-----BEGIN CERTIFICATE REQUEST-----\n${der.subarray(0, 40).toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`)).rejects.toThrow(DerError);
    der[der.length - 5] ^= 0xff; // inside the signature
    const forged = `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
    expect((await pool.readCsr(forged)).signatureValid).toBe(false);
  });

  it('a CA on the pool issues chains openssl verifies, and signs with the new key after its material changes', async () => {
    const first = await createSelfSignedMaterial(SELF);
    const ca = new CertificateAuthority(first, { metrics: createCaMetrics(new Registry()), log, pool });
    const sign = async (): Promise<string[]> => {
      const info = await pool.readCsr(await createCsr(await generateKey('ec-p256'), { uris: [ID] }));
      return ca.sign({ spki: info.spki, identity: ID, ttlMs: 600_000 });
    };
    const chains = await Promise.all(Array.from({ length: 8 }, sign));
    for (const chain of chains) expect((await ws.verify(chain.join(''), trustBundlePem(first), { purpose: 'sslclient' })).code).toBe(0);
    expect(parseCertificatePem(chains[0][0]).altNames.uris).toEqual([ID]);

    const second = await createSelfSignedMaterial(SELF, first.roots);
    ca.update(second);
    const after = await sign();
    expect(after[1]).toBe(second.root.pem);
    expect((await ws.verify(after.join(''), second.root.pem)).code).toBe(0);
    expect((await ws.verify(after.join(''), first.root.pem)).code).not.toBe(0);
  });

  it('the event loop spends a small part of the CPU the signatures cost', async () => {
    const material = await createSelfSignedMaterial(SELF);
    const spki = (await pool.readCsr(await createCsr(await generateKey('ec-p256'), { uris: [ID] }))).spki;
    const issuer = { subjectRaw: material.signingCert.subjectRaw, key: material.signingKey, keyId: material.signingCert.subjectKeyId };
    const template = { spki, notBefore: new Date(), notAfter: new Date(Date.now() + 60_000), isCA: false, altNames: { uris: [ID] } };
    const N = 150;
    await pool.createCertificate(template, issuer); // the issuer reaches the workers
    const t0 = process.threadCpuUsage();
    await Promise.all(Array.from({ length: N }, () => pool.createCertificate(template, issuer)));
    const used = process.threadCpuUsage(t0);
    const pooledMs = (used.user + used.system) / 1000;
    const { createCertificateSync } = await import('../../src/ca/x509.js');
    const s0 = process.threadCpuUsage();
    for (let i = 0; i < N; i++) createCertificateSync(template, issuer);
    const sUsed = process.threadCpuUsage(s0);
    const inlineMs = (sUsed.user + sUsed.system) / 1000;
    expect(pooledMs).toBeLessThan(inlineMs / 3);
  });

  it('refuses beyond its queue instead of holding; a closed pool fails what it held', async () => {
    const small = new CryptoPool({ size: 1, perWorker: 1, maxQueued: 1 });
    const pem = await createCsr(await generateKey('ec-p256'), { uris: [ID] });
    const a = small.readCsr(pem);
    const b = small.readCsr(pem);
    await expect(small.readCsr(pem)).rejects.toMatchObject({ name: 'SignerError', code: 'overloaded' });
    await expect(a).resolves.toMatchObject({ signatureValid: true });
    await expect(b).resolves.toMatchObject({ signatureValid: true });
    const held = expect(small.readCsr(pem)).rejects.toThrow(SignerError);
    await small.close();
    await held;
    await expect(small.readCsr(pem)).rejects.toMatchObject({ code: 'unavailable' });
  });
});
