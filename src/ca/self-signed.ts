/**
 * The self-signed root: created on first start (RSA of CA_SELF_SIGNED_CA_RSA_KEY_SIZE bits, valid
 * CA_SELF_SIGNED_CA_CERT_TTL, subject O=<trust domain>) and kept in a `CaStore` so that every
 * replica and restart signs with the same root; rotated by ./rotation.ts.
 */
import { caFilesOf, readCaFiles, type SigningMaterial } from './material.js';
import type { CaStore } from './store.js';
import { createCertificate, encodeName, generateKey, keyIdentifier, parseCertificate, spkiOf, type Certificate } from './x509.js';

export interface SelfSignedOptions {
  readonly trustDomain: string;
  readonly rsaKeySize: number;
  readonly ttlMs: number;
}

/** A new root key and certificate; `keep` are older roots that stay trusted (rotation). */
export async function createSelfSignedMaterial(o: SelfSignedOptions, keep: ReadonlyArray<Certificate> = [], now = Date.now()): Promise<SigningMaterial> {
  const key = await generateKey('rsa', o.rsaKeySize);
  const subjectRaw = encodeName([{ o: o.trustDomain }]);
  const spki = spkiOf(key);
  const keyId = keyIdentifier(spki);
  const der = await createCertificate(
    // Backdated against clock skew, by at most a tenth of the lifetime (short test lifetimes).
    { subjectRaw, spki, notBefore: new Date(now - Math.min(60_000, o.ttlMs / 10)), notAfter: new Date(now + o.ttlMs), isCA: true },
    { subjectRaw, key, keyId },
  );
  const root = parseCertificate(der, 'self-signed root');
  const older = keep.filter((c) => !c.der.equals(root.der) && c.notAfter.getTime() > now);
  return { signingCert: root, signingKey: key, intermediates: [], root, roots: [root, ...older], selfSigned: true };
}

/**
 * The stored self-signed material, created if the store has none. When two replicas start at once
 * both create a root, one store write wins, and both return the winner's.
 */
export async function loadOrCreateSelfSigned(store: CaStore, o: SelfSignedOptions): Promise<{ material: SigningMaterial; version: string; created: boolean }> {
  const existing = await store.load();
  if (existing) return { material: readCaFiles(existing.files, store.description), version: existing.version, created: false };
  const mine = await createSelfSignedMaterial(o);
  const files = caFilesOf(mine);
  const stored = await store.createIfAbsent(files);
  const created = stored.files['ca-cert.pem'] === files['ca-cert.pem'];
  return { material: created ? mine : readCaFiles(stored.files, store.description), version: stored.version, created };
}
