#!/usr/bin/env node
// Issues a first workload certificate straight from a local CA directory, for a daemon that runs
// without a cluster (there is no service-account token to authenticate with then). The operator
// who can read the CA's key acts as the CA; the workload then renews over the secured port with
// this certificate (CreateCertificate authenticated by its client certificate).
//
//   npm run build
//   node scripts/workload-cert.mjs --ca-dir <configDir>/.mesh-ca \
//     --identity spiffe://cluster.local/ns/default/sa/echo --out ./workload [--ttl-hours 1]
//
// Writes <out>/cert-chain.pem (leaf first, root last), <out>/key.pem and <out>/root-cert.pem.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({
  options: { 'ca-dir': { type: 'string' }, identity: { type: 'string' }, out: { type: 'string' }, 'ttl-hours': { type: 'string', default: '1' } },
});
if (!values['ca-dir'] || !values.identity || !values.out) {
  console.error('usage: node scripts/workload-cert.mjs --ca-dir DIR --identity spiffe://<td>/ns/<ns>/sa/<sa> --out DIR [--ttl-hours H]');
  process.exit(2);
}
const { readCaFiles, trustBundlePem } = await import(join(root, 'dist/ca/material.js'));
const { CertificateAuthority } = await import(join(root, 'dist/ca/authority.js'));
const { createCaMetrics } = await import(join(root, 'dist/ca/metrics.js'));
const { generateKey, privateKeyPem, spkiOf } = await import(join(root, 'dist/ca/x509.js'));
const { parseSpiffeId } = await import(join(root, 'dist/security/spiffe.js'));
const { Registry } = await import('prom-client');
const { pino } = await import('pino');

if (!parseSpiffeId(values.identity)) {
  console.error(`--identity: ${values.identity} is not spiffe://<trust-domain>/ns/<namespace>/sa/<service-account>`);
  process.exit(2);
}
const dir = resolve(values['ca-dir']);
const files = {};
for (const name of ['ca-cert.pem', 'ca-key.pem', 'cert-chain.pem', 'root-cert.pem']) files[name] = await readFile(join(dir, name), 'utf8');
const material = readCaFiles(files, dir);
const ca = new CertificateAuthority(material, { metrics: createCaMetrics(new Registry()), log: pino({ level: 'silent' }) });
const key = await generateKey('ec-p256');
const chain = await ca.sign({ spki: spkiOf(key), identity: values.identity, ttlMs: Number(values['ttl-hours']) * 3600_000 });
const out = resolve(values.out);
await mkdir(out, { recursive: true, mode: 0o700 });
await writeFile(join(out, 'cert-chain.pem'), chain.join(''), { mode: 0o600 });
await writeFile(join(out, 'key.pem'), privateKeyPem(key), { mode: 0o600 });
await writeFile(join(out, 'root-cert.pem'), trustBundlePem(material));
console.log(`${values.identity}: ${join(out, 'cert-chain.pem')}, ${join(out, 'key.pem')}, trust bundle ${join(out, 'root-cert.pem')}`);
