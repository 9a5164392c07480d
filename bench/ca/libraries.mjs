// Compares ways of issuing a workload certificate (docs/adr/0040): node-forge, node:crypto with
// @peculiar/x509, and node:crypto with the project's DER codec (dist/ca). Prints figures; asserts
// nothing. The two libraries are not dependencies of the project:
//
//   npm run build && npm i --no-save node-forge @peculiar/x509 reflect-metadata
//   node bench/ca/libraries.mjs
import { generateKeyPair, webcrypto } from 'node:crypto';
import { promisify } from 'node:util';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const own = await import(join(root, 'dist/ca/x509.js'));
const now = () => performance.now();
const ID = 'spiffe://cluster.local/ns/default/sa/default';
const row = (label, value) => console.log(`${label.padEnd(70)} ${value}`);

async function storm(label, n, one) {
  let maxGap = 0;
  let last = now();
  const iv = setInterval(() => {
    const t = now();
    maxGap = Math.max(maxGap, t - last);
    last = t;
  }, 1);
  const cpu0 = process.cpuUsage();
  const t0 = now();
  await Promise.all(Array.from({ length: n }, (_, i) => one(i)));
  const dt = now() - t0;
  clearInterval(iv);
  const cpu = process.cpuUsage(cpu0);
  row(`${label}: ${n} at once`, `${Math.round((n / dt) * 1000)} certs/s, CPU ${((cpu.user + cpu.system) / 1000 / n).toFixed(2)} ms/cert, longest loop stall ${maxGap.toFixed(0)} ms`);
}

// --- the project's codec over node:crypto
const ownCa = await own.generateKey('rsa', 2048);
const ownCaSubject = own.encodeName([{ o: 'cluster.local' }]);
const ecKey = await own.generateKey('ec-p256');
const ecCsr = await own.createCsr(ecKey, { uris: [ID] });
const rsaKey = await own.generateKey('rsa', 2048);
const rsaCsr = await own.createCsr(rsaKey, { uris: [ID] });
for (const [name, csrPem] of [['ECDSA', ecCsr], ['RSA', rsaCsr]]) {
  await storm(`node:crypto + DER codec, ${name} CSR, RSA-2048 CA`, 1000, async () => {
    const csr = own.parseCsrPem(csrPem);
    if (!(await csr.verifySignature())) throw new Error('bad CSR');
    const t = new Date();
    return own.createCertificate({ spki: csr.spki, notBefore: t, notAfter: new Date(t.getTime() + 3600_000), isCA: false, altNames: { uris: [ID] } }, { subjectRaw: ownCaSubject, key: ownCa });
  });
}

// --- @peculiar/x509 over WebCrypto
try {
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto);
  const caAlg = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256', publicExponent: new Uint8Array([1, 0, 1]), modulusLength: 2048 };
  const caKeys = await webcrypto.subtle.generateKey(caAlg, true, ['sign', 'verify']);
  const ecAlg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const wk = await webcrypto.subtle.generateKey(ecAlg, true, ['sign', 'verify']);
  const pem = (await x509.Pkcs10CertificateRequestGenerator.create({ keys: wk, signingAlgorithm: ecAlg, extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'url', value: ID }])] })).toString('pem');
  await storm('node:crypto + @peculiar/x509, ECDSA CSR, RSA-2048 CA', 1000, async (i) => {
    const req = new x509.Pkcs10CertificateRequest(pem);
    if (!(await req.verify())) throw new Error('bad CSR');
    const c = await x509.X509CertificateGenerator.create({ serialNumber: (1000 + i).toString(16), issuer: 'O=cluster.local', subject: '', notBefore: new Date(), notAfter: new Date(Date.now() + 3600_000), publicKey: req.publicKey, signingKey: caKeys.privateKey, signingAlgorithm: caAlg, extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'url', value: ID }], true)] });
    return c.toString('pem');
  });
} catch (err) {
  row('@peculiar/x509', `not installed (${err.code ?? err.message})`);
}

// --- node-forge (pure JavaScript)
try {
  const forge = (await import('node-forge')).default;
  try {
    forge.pki.certificationRequestFromPem(ecCsr);
    row('node-forge: ECDSA CSR', 'parsed');
  } catch (err) {
    row('node-forge: ECDSA CSR', `refused: ${err.message}`);
  }
  const t0 = now();
  const caKeys = forge.pki.rsa.generateKeyPair({ bits: 2048 });
  row('node-forge: RSA-2048 key (synchronous)', `${(now() - t0).toFixed(0)} ms`);
  const r = forge.pki.certificationRequestFromPem(rsaCsr);
  const t1 = now();
  for (let i = 0; i < 50; i++) {
    if (!r.verify()) throw new Error('bad CSR');
    const c = forge.pki.createCertificate();
    c.publicKey = r.publicKey;
    c.serialNumber = (1000 + i).toString(16);
    c.validity.notBefore = new Date();
    c.validity.notAfter = new Date(Date.now() + 3600_000);
    c.setIssuer([{ name: 'organizationName', value: 'cluster.local' }]);
    c.setExtensions([{ name: 'subjectAltName', altNames: [{ type: 6, value: ID }] }]);
    c.sign(caKeys.privateKey, forge.md.sha256.create());
    forge.pki.certificateToPem(c);
  }
  row('node-forge: RSA CSR, RSA-2048 CA (synchronous, blocks the loop)', `${((now() - t1) / 50).toFixed(1)} ms/cert`);
} catch (err) {
  row('node-forge', `not installed (${err.code ?? err.message})`);
}
const t2 = now();
await promisify(generateKeyPair)('rsa', { modulusLength: 2048 });
row('node:crypto: RSA-2048 key (thread pool)', `${(now() - t2).toFixed(0)} ms`);
