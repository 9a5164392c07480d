/**
 * The signing material of the CA and its trust bundle, as read from and written to the four PEM
 * entries every CA source uses (the `cacerts` and `mesh-ca-secret` Secrets, ROOT_CA_DIR, the local
 * directory of a cluster-less daemon):
 *
 * | entry            | holds                                                                     |
 * |------------------|---------------------------------------------------------------------------|
 * | `ca-cert.pem`    | the certificate the CA signs with                                         |
 * | `ca-key.pem`     | its private key                                                           |
 * | `cert-chain.pem` | that certificate and the intermediates above it (the root may follow)     |
 * | `root-cert.pem`  | the trust bundle: the current root first, then roots kept for rotation    |
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { decodePemAll } from './pem.js';
import { issuedBy, keyTypeOf, parseCertificate, privateKeyPem, type Certificate } from './x509.js';

export const CA_CERT = 'ca-cert.pem';
export const CA_KEY = 'ca-key.pem';
export const CERT_CHAIN = 'cert-chain.pem';
export const ROOT_CERT = 'root-cert.pem';
export const CA_FILES = [CA_CERT, CA_KEY, CERT_CHAIN, ROOT_CERT] as const;

/** The four entries as text. */
export type CaFiles = Readonly<Record<(typeof CA_FILES)[number], string>>;

/** Tolerated clock difference between replicas. */
const CLOCK_SKEW_MS = 5 * 60_000;

export class CaMaterialError extends Error {
  override readonly name = 'CaMaterialError';
}

/** What the CA signs with and whom it tells workloads to trust. Immutable. */
export interface SigningMaterial {
  readonly signingCert: Certificate;
  readonly signingKey: KeyObject;
  /** Certificates between the signing certificate (excluded) and the root (excluded). */
  readonly intermediates: ReadonlyArray<Certificate>;
  /** The root the signing certificate chains to. */
  readonly root: Certificate;
  /** Every trusted root: `root` first, then older roots kept during a rotation. */
  readonly roots: ReadonlyArray<Certificate>;
  /** True when the signing certificate is the root itself (the self-signed CA). */
  readonly selfSigned: boolean;
}

function certificates(text: string, what: string): Certificate[] {
  let ders: Buffer[];
  try {
    ders = decodePemAll(text, 'CERTIFICATE', what);
  } catch (err) {
    throw new CaMaterialError((err as Error).message);
  }
  return ders.map((d, i) => {
    try {
      return parseCertificate(d, `${what} certificate ${i + 1}`);
    } catch (err) {
      throw new CaMaterialError((err as Error).message);
    }
  });
}

/**
 * Reads and checks the four entries: the key matches the signing certificate, which is a CA
 * certificate valid now; cert-chain.pem starts with it and each certificate is issued by the next;
 * the chain ends at a root of root-cert.pem. `source` names where they came from in errors.
 */
export function readCaFiles(files: CaFiles, source: string, now = new Date()): SigningMaterial {
  const what = (entry: string): string => `${source} ${entry}`;
  for (const entry of CA_FILES) if (!files[entry]?.trim()) throw new CaMaterialError(`${what(entry)}: missing or empty`);
  const signingCert = certificates(files[CA_CERT], what(CA_CERT));
  if (signingCert.length !== 1) throw new CaMaterialError(`${what(CA_CERT)}: ${signingCert.length} certificates, want one`);
  const cert = signingCert[0];
  let key: KeyObject;
  try {
    key = createPrivateKey(files[CA_KEY]);
  } catch (err) {
    throw new CaMaterialError(`${what(CA_KEY)}: ${(err as Error).message}`);
  }
  try {
    keyTypeOf(key, what(CA_KEY));
  } catch (err) {
    throw new CaMaterialError((err as Error).message);
  }
  if (!cert.x509.checkPrivateKey(key)) throw new CaMaterialError(`${what(CA_KEY)}: the key does not belong to ${CA_CERT}`);
  if (!cert.isCA) throw new CaMaterialError(`${what(CA_CERT)}: not a CA certificate (basicConstraints CA:TRUE missing)`);
  if (cert.notAfter <= now) throw new CaMaterialError(`${what(CA_CERT)}: expired at ${cert.notAfter.toISOString()}`);
  // Another replica's clock may run a little ahead of ours.
  if (cert.notBefore.getTime() > now.getTime() + CLOCK_SKEW_MS) throw new CaMaterialError(`${what(CA_CERT)}: not valid before ${cert.notBefore.toISOString()}`);

  const roots = certificates(files[ROOT_CERT], what(ROOT_CERT));
  const chain = certificates(files[CERT_CHAIN], what(CERT_CHAIN));
  if (!chain[0].der.equals(cert.der)) throw new CaMaterialError(`${what(CERT_CHAIN)}: must start with ${CA_CERT}`);
  for (let i = 0; i + 1 < chain.length; i++) {
    if (!issuedBy(chain[i], chain[i + 1])) throw new CaMaterialError(`${what(CERT_CHAIN)}: certificate ${i + 1} is not issued by certificate ${i + 2}`);
  }
  const isRoot = (c: Certificate): boolean => roots.some((r) => r.der.equals(c.der));
  // The chain may or may not repeat the root; it must reach one of the trusted roots.
  let body = chain;
  let root: Certificate | undefined;
  if (isRoot(chain[chain.length - 1])) {
    root = roots.find((r) => r.der.equals(chain[chain.length - 1].der));
    body = chain.slice(0, -1);
  } else {
    const top = chain[chain.length - 1];
    root = roots.find((r) => issuedBy(top, r));
  }
  if (!root) throw new CaMaterialError(`${what(CERT_CHAIN)}: does not chain to a root of ${ROOT_CERT}`);
  const selfSigned = root.der.equals(cert.der);
  return {
    signingCert: cert,
    signingKey: key,
    intermediates: selfSigned ? [] : body.slice(1),
    root,
    roots: [root, ...roots.filter((r) => r !== root)],
    selfSigned,
  };
}

/** The four entries of `m`. */
export function caFilesOf(m: SigningMaterial): CaFiles {
  const chain = m.selfSigned ? [m.signingCert] : [m.signingCert, ...m.intermediates, m.root];
  return {
    [CA_CERT]: m.signingCert.pem,
    [CA_KEY]: privateKeyPem(m.signingKey),
    [CERT_CHAIN]: chain.map((c) => c.pem).join(''),
    [ROOT_CERT]: m.roots.map((c) => c.pem).join(''),
  };
}

/** The chain a workload receives after its leaf: signing certificate and intermediates, root last. */
export function chainAfterLeaf(m: SigningMaterial): Certificate[] {
  return m.selfSigned ? [m.root] : [m.signingCert, ...m.intermediates, m.root];
}

/** The trust bundle as one PEM text. */
export function trustBundlePem(m: SigningMaterial): string {
  return m.roots.map((c) => c.pem).join('');
}

/** The time the signing chain stops working: the earliest expiry of the signing certificate, intermediates and root. */
export function chainExpiry(m: SigningMaterial): Date {
  return new Date(Math.min(...[m.signingCert, ...m.intermediates, m.root].map((c) => c.notAfter.getTime())));
}
