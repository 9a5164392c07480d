/**
 * X.509 certificates and PKCS #10 certificate signing requests over node:crypto (docs/adr/0040):
 * the structure is read and written with the small DER codec of ./der.ts; keys, signatures and
 * verification are node:crypto's, asynchronous (libuv thread pool) where they cost time, so that
 * signing never holds the event loop.
 */
import { X509Certificate, createHash, createPublicKey, generateKeyPair, randomBytes, sign, verify, type KeyObject } from 'node:crypto';
import {
  DerError,
  Tag,
  bitString,
  boolean,
  children,
  explicit,
  expectTag,
  nullValue,
  octetString,
  oid,
  readBitString,
  readOid,
  readOne,
  readTime,
  seq,
  set,
  smallInteger,
  time,
  tlv,
  unsignedInteger,
  utf8,
  type Element,
} from './der.js';
import { decodePemOne, encodePem } from './pem.js';

export { DerError } from './der.js';

const OID = {
  rsaEncryption: '1.2.840.113549.1.1.1',
  ecPublicKey: '1.2.840.10045.2.1',
  sha256WithRSA: '1.2.840.113549.1.1.11',
  sha384WithRSA: '1.2.840.113549.1.1.12',
  sha512WithRSA: '1.2.840.113549.1.1.13',
  ecdsaSha256: '1.2.840.10045.4.3.2',
  ecdsaSha384: '1.2.840.10045.4.3.3',
  extensionRequest: '1.2.840.113549.1.9.14',
  organization: '2.5.4.10',
  commonName: '2.5.4.3',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  subjectKeyId: '2.5.29.14',
  authorityKeyId: '2.5.29.35',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  clientAuth: '1.3.6.1.5.5.7.3.2',
} as const;

/** Hash of each signature algorithm a CSR or certificate may use. */
const SIGNATURE_HASH: Readonly<Record<string, string>> = {
  [OID.sha256WithRSA]: 'sha256',
  [OID.sha384WithRSA]: 'sha384',
  [OID.sha512WithRSA]: 'sha512',
  [OID.ecdsaSha256]: 'sha256',
  [OID.ecdsaSha384]: 'sha384',
};

/** Key types accepted in CSRs and for CA keys. */
export type KeyType = 'rsa' | 'ec-p256' | 'ec-p384';

export class CsrError extends Error {
  override readonly name = 'CsrError';
}

/** Subject alternative names. */
export interface AltNames {
  readonly uris: ReadonlyArray<string>;
  readonly dnsNames: ReadonlyArray<string>;
  readonly ips: ReadonlyArray<string>;
}

// ---------------------------------------------------------------------------------------------
// Keys

/** What a public key is, or an error naming why it is not accepted. */
export function keyTypeOf(key: KeyObject, what: string, minRsaBits = 2048): KeyType {
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa') {
    const bits = details.modulusLength ?? 0;
    if (bits < minRsaBits || bits > 8192) throw new CsrError(`${what}: RSA key of ${bits} bits (accepted: ${minRsaBits} to 8192)`);
    return 'rsa';
  }
  if (key.asymmetricKeyType === 'ec') {
    if (details.namedCurve === 'prime256v1') return 'ec-p256';
    if (details.namedCurve === 'secp384r1') return 'ec-p384';
    throw new CsrError(`${what}: elliptic curve ${details.namedCurve ?? 'unknown'} (accepted: P-256, P-384)`);
  }
  throw new CsrError(`${what}: ${key.asymmetricKeyType ?? 'unknown'} keys are not accepted (accepted: ECDSA P-256, P-384, RSA)`);
}

/** A new private key, generated off the event loop. */
export function generateKey(type: KeyType, rsaBits = 2048): Promise<KeyObject> {
  return new Promise((resolve, reject) => {
    const done = (err: Error | null, _pub: KeyObject, priv: KeyObject): void => (err ? reject(err) : resolve(priv));
    if (type === 'rsa') generateKeyPair('rsa', { modulusLength: rsaBits }, done);
    else generateKeyPair('ec', { namedCurve: type === 'ec-p256' ? 'prime256v1' : 'secp384r1' }, done);
  });
}

export function privateKeyPem(key: KeyObject): string {
  return key.export({ type: 'pkcs8', format: 'pem' }) as string;
}

interface SignatureAlgorithm {
  readonly identifier: Buffer;
  readonly hash: string;
}

/** The signature algorithm a CA or requester key signs with. */
function signatureAlgorithmFor(key: KeyObject): SignatureAlgorithm {
  const type = keyTypeOf(key, 'signing key', 1024);
  if (type === 'rsa') return { identifier: seq(oid(OID.sha256WithRSA), nullValue()), hash: 'sha256' };
  if (type === 'ec-p256') return { identifier: seq(oid(OID.ecdsaSha256)), hash: 'sha256' };
  return { identifier: seq(oid(OID.ecdsaSha384)), hash: 'sha384' };
}

function signAsync(hash: string, data: Buffer, key: KeyObject): Promise<Buffer> {
  return new Promise((resolve, reject) => sign(hash, data, key, (err, sig) => (err ? reject(err) : resolve(sig))));
}

function verifyAsync(hash: string, data: Buffer, key: KeyObject, signature: Buffer): Promise<boolean> {
  return new Promise((resolve, reject) => verify(hash, data, key, signature, (err, ok) => (err ? reject(err) : resolve(ok))));
}

/** SHA-1 of the subjectPublicKey bits (RFC 5280 4.2.1.2 method 1). */
export function keyIdentifier(spki: Buffer): Buffer {
  const parts = children(readOne(spki, 'public key', Tag.SEQUENCE), 'public key');
  if (parts.length !== 2) throw new DerError('public key: want algorithm and key');
  return createHash('sha1').update(readBitString(parts[1], 'public key bits')).digest();
}

export function spkiOf(key: KeyObject): Buffer {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  return pub.export({ type: 'spki', format: 'der' });
}

// ---------------------------------------------------------------------------------------------
// Names

/** A distinguished name of (type, value) attributes, one per RDN, as the CA writes them. */
export function encodeName(attrs: ReadonlyArray<{ readonly o?: string; readonly cn?: string }>): Buffer {
  const rdns: Buffer[] = [];
  for (const a of attrs) {
    if (a.o !== undefined) rdns.push(set(seq(oid(OID.organization), utf8(a.o))));
    if (a.cn !== undefined) rdns.push(set(seq(oid(OID.commonName), utf8(a.cn))));
  }
  return seq(...rdns);
}

const EMPTY_NAME = seq();

// ---------------------------------------------------------------------------------------------
// Extensions

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return critical ? seq(oid(id), boolean(true), octetString(value)) : seq(oid(id), octetString(value));
}

/** KeyUsage bits: digitalSignature 0, keyEncipherment 2, keyCertSign 5, cRLSign 6. */
function keyUsageValue(bits: ReadonlyArray<number>): Buffer {
  let byte = 0;
  for (const b of bits) byte |= 0x80 >> b;
  let unused = 0;
  while (unused < 7 && !(byte & (1 << unused))) unused++;
  return tlv(Tag.BIT_STRING, Buffer.from([unused, byte]));
}

function altNamesValue(names: Partial<AltNames>): Buffer {
  const out: Buffer[] = [];
  for (const d of names.dnsNames ?? []) out.push(tlv(0x82, Buffer.from(d, 'latin1')));
  for (const u of names.uris ?? []) out.push(tlv(0x86, Buffer.from(u, 'latin1')));
  return seq(...out);
}

interface ParsedExtensions {
  readonly ca: boolean;
  readonly pathLen?: number;
  readonly keyUsage?: number;
  readonly altNames: AltNames;
  readonly subjectKeyId?: Buffer;
  readonly authorityKeyId?: Buffer;
}

function readAltNames(value: Buffer, what: string): AltNames {
  const uris: string[] = [];
  const dnsNames: string[] = [];
  const ips: string[] = [];
  for (const gn of children(readOne(value, what, Tag.SEQUENCE), what)) {
    if (gn.tag === 0x86) uris.push(gn.value.toString('latin1'));
    else if (gn.tag === 0x82) dnsNames.push(gn.value.toString('latin1'));
    else if (gn.tag === 0x87) ips.push(gn.value.length === 4 ? [...gn.value].join('.') : gn.value.toString('hex'));
  }
  return { uris, dnsNames, ips };
}

function readExtensions(list: Element, what: string): ParsedExtensions {
  let ca = false;
  let pathLen: number | undefined;
  let keyUsage: number | undefined;
  let altNames: AltNames = { uris: [], dnsNames: [], ips: [] };
  let subjectKeyId: Buffer | undefined;
  let authorityKeyId: Buffer | undefined;
  const seen = new Set<string>();
  for (const ext of children(list, what)) {
    const parts = children(ext, what);
    if (parts.length < 2 || parts.length > 3) throw new DerError(`${what}: malformed extension`);
    const id = readOid(parts[0], `${what} id`);
    if (seen.has(id)) throw new DerError(`${what}: extension ${id} appears twice`);
    seen.add(id);
    const value = parts[parts.length - 1];
    expectTag(value, Tag.OCTET_STRING, `${what} ${id}`);
    if (id === OID.basicConstraints) {
      const bc = children(readOne(value.value, 'basic constraints', Tag.SEQUENCE), 'basic constraints');
      for (const e of bc) {
        if (e.tag === Tag.BOOLEAN) ca = e.value[0] !== 0;
        else if (e.tag === Tag.INTEGER) pathLen = e.value.length <= 4 ? e.value.readUIntBE(0, e.value.length) : undefined;
      }
    } else if (id === OID.keyUsage) {
      const bits = readOne(value.value, 'key usage', Tag.BIT_STRING).value;
      keyUsage = bits.length > 1 ? bits[1] : 0;
    } else if (id === OID.subjectAltName) {
      altNames = readAltNames(value.value, 'subject alternative names');
    } else if (id === OID.subjectKeyId) {
      subjectKeyId = readOne(value.value, 'subject key identifier', Tag.OCTET_STRING).value;
    } else if (id === OID.authorityKeyId) {
      const kid = children(readOne(value.value, 'authority key identifier', Tag.SEQUENCE), 'authority key identifier').find((e) => e.tag === 0x80);
      authorityKeyId = kid?.value;
    }
  }
  return { ca, pathLen, keyUsage, altNames, subjectKeyId, authorityKeyId };
}

// ---------------------------------------------------------------------------------------------
// Certificates

/** What the CA reads of a certificate. */
export interface Certificate {
  readonly der: Buffer;
  readonly pem: string;
  readonly serialHex: string;
  readonly issuerRaw: Buffer;
  readonly subjectRaw: Buffer;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly spki: Buffer;
  readonly isCA: boolean;
  readonly altNames: AltNames;
  readonly subjectKeyId?: Buffer;
  readonly authorityKeyId?: Buffer;
  /** node:crypto's view, for signature checks and key matching. */
  readonly x509: X509Certificate;
}

/** Parses one DER certificate; a `DerError` names what is wrong. */
export function parseCertificate(der: Buffer, what = 'certificate'): Certificate {
  const outer = children(readOne(der, what, Tag.SEQUENCE), what);
  if (outer.length !== 3) throw new DerError(`${what}: want tbsCertificate, signatureAlgorithm, signature`);
  const tbs = children(outer[0], `${what} tbsCertificate`);
  let i = 0;
  if (tbs[i]?.tag === 0xa0) i++; // version
  const serial = tbs[i++];
  expectTag(serial, Tag.INTEGER, `${what} serial`);
  i++; // signature algorithm
  const issuer = tbs[i++];
  const validity = children(tbs[i++], `${what} validity`);
  const subject = tbs[i++];
  const spki = tbs[i++];
  if (!issuer || !subject || !spki || validity.length !== 2) throw new DerError(`${what}: incomplete tbsCertificate`);
  expectTag(issuer, Tag.SEQUENCE, `${what} issuer`);
  expectTag(subject, Tag.SEQUENCE, `${what} subject`);
  expectTag(spki, Tag.SEQUENCE, `${what} public key`);
  const extList = tbs.slice(i).find((e) => e.tag === 0xa3);
  const ext = extList ? readExtensions(children(extList, `${what} extensions`)[0], `${what} extensions`) : undefined;
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(der);
  } catch (err) {
    throw new DerError(`${what}: ${(err as Error).message}`);
  }
  return {
    der,
    pem: encodePem('CERTIFICATE', der),
    serialHex: serial.value.toString('hex'),
    issuerRaw: issuer.raw,
    subjectRaw: subject.raw,
    notBefore: readTime(validity[0], `${what} notBefore`),
    notAfter: readTime(validity[1], `${what} notAfter`),
    spki: spki.raw,
    isCA: ext?.ca ?? false,
    altNames: ext?.altNames ?? { uris: [], dnsNames: [], ips: [] },
    subjectKeyId: ext?.subjectKeyId,
    authorityKeyId: ext?.authorityKeyId,
    x509,
  };
}

export function parseCertificatePem(pem: string, what = 'certificate'): Certificate {
  return parseCertificate(decodePemOne(pem, 'CERTIFICATE', what), what);
}

/** Whether `cert` carries a valid signature of `issuer`'s key and names it as issuer. */
export function issuedBy(cert: Certificate, issuer: Certificate): boolean {
  if (!cert.issuerRaw.equals(issuer.subjectRaw)) return false;
  try {
    return cert.x509.verify(issuer.x509.publicKey);
  } catch {
    return false;
  }
}

/** What a new certificate says; the issuer's key signs it. */
export interface CertificateTemplate {
  readonly subjectRaw?: Buffer;
  readonly spki: Buffer;
  readonly notBefore: Date;
  readonly notAfter: Date;
  readonly isCA: boolean;
  readonly altNames?: Partial<AltNames>;
  /** Extended key usages server/client auth (leaves); default both. */
  readonly extKeyUsage?: ReadonlyArray<'server' | 'client'>;
}

export interface Issuer {
  /** The issuer's subject (for a self-signed certificate, the template's own). */
  readonly subjectRaw: Buffer;
  readonly key: KeyObject;
  /** Subject key identifier of the issuer (authority key identifier of what it signs). */
  readonly keyId?: Buffer;
}

/** Builds and signs a certificate; the signature is computed off the event loop. */
export async function createCertificate(t: CertificateTemplate, issuer: Issuer): Promise<Buffer> {
  const alg = signatureAlgorithmFor(issuer.key);
  const serial = randomBytes(16);
  serial[0] = (serial[0] & 0x7f) | 0x01; // positive, never zero, 16 bytes
  const hasNames = (t.altNames?.uris?.length ?? 0) + (t.altNames?.dnsNames?.length ?? 0) > 0;
  const subject = t.subjectRaw ?? EMPTY_NAME;
  const exts: Buffer[] = [];
  if (t.isCA) {
    exts.push(extension(OID.keyUsage, true, keyUsageValue([0, 5, 6])));
    exts.push(extension(OID.basicConstraints, true, seq(boolean(true))));
  } else {
    exts.push(extension(OID.keyUsage, true, keyUsageValue([0, 2])));
    const eku = t.extKeyUsage ?? ['server', 'client'];
    exts.push(extension(OID.extKeyUsage, false, seq(...eku.map((u) => oid(u === 'server' ? OID.serverAuth : OID.clientAuth)))));
    exts.push(extension(OID.basicConstraints, true, seq()));
  }
  exts.push(extension(OID.subjectKeyId, false, octetString(keyIdentifier(t.spki))));
  if (issuer.keyId) exts.push(extension(OID.authorityKeyId, false, seq(tlv(0x80, issuer.keyId))));
  // RFC 5280 4.2.1.6: with an empty subject the alternative names are critical.
  if (hasNames) exts.push(extension(OID.subjectAltName, subject.equals(EMPTY_NAME), altNamesValue(t.altNames ?? {})));
  const tbs = seq(
    explicit(0, smallInteger(2)),
    unsignedInteger(serial),
    alg.identifier,
    issuer.subjectRaw,
    seq(time(t.notBefore), time(t.notAfter)),
    subject,
    t.spki,
    explicit(3, seq(...exts)),
  );
  const signature = await signAsync(alg.hash, tbs, issuer.key);
  return seq(tbs, alg.identifier, bitString(signature));
}

// ---------------------------------------------------------------------------------------------
// Certificate signing requests

export interface CertificateRequest {
  readonly spki: Buffer;
  readonly publicKey: KeyObject;
  readonly keyType: KeyType;
  readonly altNames: AltNames;
  /** Checks the request's self-signature (off the event loop). */
  verifySignature(): Promise<boolean>;
}

/** Parses a PEM CSR; `CsrError` or `DerError` names what is wrong. The signature is not checked here. */
export function parseCsrPem(pem: string): CertificateRequest {
  let der: Buffer;
  try {
    der = decodePemOne(pem, 'CERTIFICATE REQUEST', 'CSR');
  } catch (err) {
    throw new CsrError((err as Error).message);
  }
  return parseCsr(der);
}

export function parseCsr(der: Buffer): CertificateRequest {
  const outer = children(readOne(der, 'CSR', Tag.SEQUENCE), 'CSR');
  if (outer.length !== 3) throw new DerError('CSR: want certificationRequestInfo, signatureAlgorithm, signature');
  const [info, sigAlg, sigBits] = outer;
  const cri = children(info, 'CSR info');
  if (cri.length !== 4) throw new DerError('CSR info: want version, subject, public key, attributes');
  expectTag(cri[0], Tag.INTEGER, 'CSR version');
  if (cri[0].value.length !== 1 || cri[0].value[0] !== 0) throw new DerError('CSR version: must be 0 (v1)');
  expectTag(cri[1], Tag.SEQUENCE, 'CSR subject');
  expectTag(cri[2], Tag.SEQUENCE, 'CSR public key');
  if (cri[3].tag !== 0xa0) throw new DerError('CSR attributes: expected [0]');
  let altNames: AltNames = { uris: [], dnsNames: [], ips: [] };
  for (const attr of children(cri[3], 'CSR attributes')) {
    const parts = children(attr, 'CSR attribute');
    if (parts.length !== 2) throw new DerError('CSR attribute: want type and values');
    if (readOid(parts[0], 'CSR attribute type') !== OID.extensionRequest) continue;
    const values = children(parts[1], 'CSR extension request');
    if (values.length !== 1) throw new DerError('CSR extension request: want one value');
    altNames = readExtensions(values[0], 'CSR extensions').altNames;
  }
  const algParts = children(sigAlg, 'CSR signature algorithm');
  const algOid = readOid(algParts[0], 'CSR signature algorithm');
  const hash = SIGNATURE_HASH[algOid];
  if (!hash) throw new CsrError(`CSR signature algorithm ${algOid} is not accepted (accepted: ECDSA or RSA PKCS #1 v1.5 with SHA-256/384/512)`);
  const signature = readBitString(sigBits, 'CSR signature');
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: cri[2].raw, format: 'der', type: 'spki' });
  } catch (err) {
    throw new CsrError(`CSR public key: ${(err as Error).message}`);
  }
  const keyType = keyTypeOf(publicKey, 'CSR public key');
  const isRsaAlg = algOid === OID.sha256WithRSA || algOid === OID.sha384WithRSA || algOid === OID.sha512WithRSA;
  if (isRsaAlg !== (keyType === 'rsa')) throw new CsrError(`CSR: signature algorithm ${algOid} does not match the ${keyType} key`);
  const criRaw = info.raw;
  const spki = cri[2].raw;
  return {
    spki,
    publicKey,
    keyType,
    altNames,
    verifySignature: () => verifyAsync(hash, criRaw, publicKey, signature).catch(() => false),
  };
}

/** A CSR for `key` asking for `altNames`, signed with it. */
export async function createCsr(key: KeyObject, altNames: Partial<AltNames>, subjectRaw: Buffer = EMPTY_NAME): Promise<string> {
  const alg = signatureAlgorithmFor(key);
  const attrs = altNames.uris?.length || altNames.dnsNames?.length
    ? explicit(0, seq(oid(OID.extensionRequest), set(seq(extension(OID.subjectAltName, subjectRaw.equals(EMPTY_NAME), altNamesValue(altNames))))))
    : explicit(0);
  const info = seq(smallInteger(0), subjectRaw, spkiOf(key), attrs);
  const signature = await signAsync(alg.hash, info, key);
  return encodePem('CERTIFICATE REQUEST', seq(info, alg.identifier, bitString(signature)));
}
