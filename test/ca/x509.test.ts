import { createPrivateKey } from 'node:crypto';
import { DerError } from '../../src/ca/der.js';
import { CsrError, createCertificate, createCsr, encodeName, generateKey, keyIdentifier, parseCertificate, parseCsrPem, privateKeyPem, spkiOf, issuedBy } from '../../src/ca/x509.js';
import { certificatePem, encodePem } from '../../src/ca/pem.js';
import { openssl, opensslWorkspace, type OpensslWorkspace } from '../support/openssl.js';

let ws: OpensslWorkspace;
beforeAll(async () => {
  ws = await opensslWorkspace();
});
afterAll(() => ws.cleanup());

async function selfSignedRoot(type: 'rsa' | 'ec-p256' = 'rsa') {
  const key = await generateKey(type);
  const subjectRaw = encodeName([{ o: 'cluster.local' }]);
  const spki = spkiOf(key);
  const now = Date.now();
  const der = await createCertificate(
    { subjectRaw, spki, notBefore: new Date(now - 60_000), notAfter: new Date(now + 3600_000), isCA: true },
    { subjectRaw, key, keyId: keyIdentifier(spki) },
  );
  return { key, cert: parseCertificate(der) };
}

describe('certificates written by the CA', () => {
  it('a self-signed RSA root is a CA that openssl accepts as its own trust anchor', async () => {
    const root = await selfSignedRoot('rsa');
    expect(root.cert.isCA).toBe(true);
    const r = await ws.verify(root.cert.pem, root.cert.pem);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const text = await ws.text(root.cert.pem);
    expect(text).toContain('CA:TRUE');
    expect(text).toContain('Certificate Sign, CRL Sign');
    expect(text).toMatch(/Subject: O\s*=\s*cluster.local/);
  });

  it.each(['ec-p256', 'rsa'] as const)('signs a %s CSR into a leaf with only the SPIFFE URI, verified by openssl', async (type) => {
    const root = await selfSignedRoot('rsa');
    const wkey = await generateKey(type);
    const id = 'spiffe://cluster.local/ns/default/sa/echo';
    const csr = parseCsrPem(await createCsr(wkey, { uris: [id] }));
    expect(await csr.verifySignature()).toBe(true);
    expect(csr.altNames.uris).toEqual([id]);
    expect(csr.keyType).toBe(type);
    const now = Date.now();
    const leafDer = await createCertificate(
      { spki: csr.spki, notBefore: new Date(now - 60_000), notAfter: new Date(now + 600_000), isCA: false, altNames: { uris: [id] } },
      { subjectRaw: root.cert.subjectRaw, key: root.key, keyId: root.cert.subjectKeyId },
    );
    const leaf = parseCertificate(leafDer);
    expect(issuedBy(leaf, root.cert)).toBe(true);
    expect(leaf.altNames.uris).toEqual([id]);
    const r = await ws.verify(certificatePem(leafDer), root.cert.pem, { purpose: 'sslclient' });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const text = await ws.text(certificatePem(leafDer));
    expect(text).toContain(`URI:${id}`);
    expect(text).toContain('CA:FALSE');
    expect(text).toContain('TLS Web Server Authentication, TLS Web Client Authentication');
    // the leaf's key matches the requester's private key
    expect(leaf.x509.checkPrivateKey(wkey)).toBe(true);
  });

  it('parses CSRs that openssl made, ECDSA and RSA', async () => {
    for (const keyArgs of [['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'], ['-newkey', 'rsa:2048']]) {
      const keyFile = `${ws.dir}/k-${keyArgs[1]}.pem`;
      const r = await openssl(['req', '-new', ...keyArgs, '-nodes', '-keyout', keyFile, '-subj', '/O=ignored', '-addext', 'subjectAltName=URI:spiffe://cluster.local/ns/a/sa/b']);
      expect(r.code).toBe(0);
      const csr = parseCsrPem(r.stdout);
      expect(csr.altNames.uris).toEqual(['spiffe://cluster.local/ns/a/sa/b']);
      expect(await csr.verifySignature()).toBe(true);
    }
  });
});

describe('malformed requests are refused with the reason', () => {
  it('a CSR whose signature does not match its key fails verification', async () => {
    const k1 = await generateKey('ec-p256');
    const pem = await createCsr(k1, { uris: ['spiffe://cluster.local/ns/a/sa/b'] });
    const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
    der[der.length - 5] ^= 0xff; // inside the signature
    const csr = parseCsrPem(encodePem('CERTIFICATE REQUEST', der));
    expect(await csr.verifySignature()).toBe(false);
  });

  it('truncated, over-long and trailing-garbage DER are DerErrors', async () => {
    const k = await generateKey('ec-p256');
    const pem = await createCsr(k, {});
    const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
    expect(() => parseCsrPem(encodePem('CERTIFICATE REQUEST', der.subarray(0, der.length - 3)))).toThrow(DerError);
    expect(() => parseCsrPem(encodePem('CERTIFICATE REQUEST', Buffer.concat([der, Buffer.from([0])])))).toThrow(/trailing/);
    const longLength = Buffer.from([0x30, 0x84, 0x7f, 0xff, 0xff, 0xff, 0x00]);
    expect(() => parseCsrPem(encodePem('CERTIFICATE REQUEST', longLength))).toThrow(/runs past the end/);
    const indefinite = Buffer.from([0x30, 0x80, 0x00, 0x00]);
    expect(() => parseCsrPem(encodePem('CERTIFICATE REQUEST', indefinite))).toThrow(/indefinite/);
  });

  it('no CSR block, small RSA keys and unsupported curves are CsrErrors', async () => {
    expect(() => parseCsrPem('hello')).toThrow(CsrError);
    const small = await openssl(['req', '-new', '-newkey', 'rsa:1024', '-nodes', '-keyout', `${ws.dir}/small.pem`, '-subj', '/O=x']);
    expect(() => parseCsrPem(small.stdout)).toThrow(/RSA key of 1024 bits/);
    const p521 = await openssl(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-521', '-nodes', '-keyout', `${ws.dir}/p521.pem`, '-subj', '/O=x']);
    expect(() => parseCsrPem(p521.stdout)).toThrow(/secp521r1.*accepted: P-256, P-384/);
  });

  it('keys round-trip through PKCS #8 PEM', async () => {
    const k = await generateKey('ec-p256');
    const back = createPrivateKey(privateKeyPem(k));
    expect(back.asymmetricKeyDetails?.namedCurve).toBe('prime256v1');
  });
});
