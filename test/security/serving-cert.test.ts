/**
 * The serving certificate from the built-in CA across a root rotation (docs/adr/0147): while the old
 * root stays trusted the certificate it signed is kept (clients that learn of the new root a moment
 * later, like the API server through a webhook's caBundle, still verify it) and the bundle grows at
 * once; when the old root leaves the trust bundle, or the CA is replaced by one that does not trust
 * it, the certificate is reissued from the new root at once.
 */
import { X509Certificate } from 'node:crypto';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { CertificateAuthority } from '../../src/ca/authority.js';
import { createCaMetrics } from '../../src/ca/metrics.js';
import { createSelfSignedMaterial } from '../../src/ca/self-signed.js';
import { ServingCertificate } from '../../src/security/serving-cert.js';
import { eventually } from '../support/eventually.js';
import { pemCertificates } from '../support/openssl.js';

const log = pino({ level: 'silent' });
const OPTS = { trustDomain: 'cluster.local', rsaKeySize: 2048, ttlMs: 3_600_000 };

async function setup(): Promise<{ ca: CertificateAuthority; serving: ServingCertificate; changes: () => number }> {
  const ca = new CertificateAuthority(await createSelfSignedMaterial(OPTS), { metrics: createCaMetrics(new Registry()), log });
  let n = 0;
  const serving = await ServingCertificate.start({ source: { kind: 'ca' }, ca, dnsNames: ['meshd.mesh-system.svc'], ttlMs: 600_000, ownRoots: () => ca.trustBundle(), foreignRoots: () => [], log });
  serving.onChange(() => n++);
  return { ca, serving, changes: () => n };
}

/** Whether the leaf in use was signed by the root `pem`. */
function signedBy(serving: ServingCertificate, pem: string): boolean {
  const leaf = new X509Certificate(pemCertificates(serving.credentials.current().certChainPem)[0]!);
  return leaf.verify(new X509Certificate(pem).publicKey);
}

describe('the serving certificate across a root rotation', () => {
  it('keeps the certificate of a root still trusted, with both roots in the caBundle; reissues once the old root is gone', async () => {
    const { ca, serving, changes } = await setup();
    try {
      const oldRoot = ca.current().root;
      const leaf = serving.credentials.current();
      // rotation: the new root signs, the old one stays in the bundle
      const rotated = await createSelfSignedMaterial(OPTS, ca.current().roots);
      ca.update(rotated);
      expect(serving.credentials.current().certChainPem).toBe(leaf.certChainPem);
      expect(signedBy(serving, oldRoot.pem)).toBe(true);
      expect(pemCertificates(serving.caBundle())).toEqual([rotated.root.pem, oldRoot.pem].map((p) => pemCertificates(p)[0]));
      expect(changes()).toBe(1);
      // the old root leaves the bundle: a certificate from the new root at once
      ca.update({ ...rotated, roots: [rotated.root] });
      await eventually('a certificate from the new root', () => signedBy(serving, rotated.root.pem), { timeoutMs: 10_000 });
      expect(pemCertificates(serving.caBundle())).toEqual(pemCertificates(rotated.root.pem));
    } finally {
      serving.stop();
    }
  }, 30_000);

  it('reissues at once when the CA is replaced by one that does not trust the old root', async () => {
    const { ca, serving } = await setup();
    try {
      const replacement = await createSelfSignedMaterial(OPTS);
      ca.update(replacement);
      await eventually('a certificate from the replacement root', () => signedBy(serving, replacement.root.pem), { timeoutMs: 10_000 });
    } finally {
      serving.stop();
    }
  }, 30_000);
});
