/**
 * The client certificate a call carries is read once per connection (docs/adr/0180): calls on
 * connections with different certificates, interleaved, each get their own connection's verified
 * certificate; a connection without one, or with one the port does not trust, gets none, however
 * many calls other connections made before. A real TLS gRPC server with the project's credentials
 * and CA; real grpc-js clients, one connection each.
 */
import * as grpc from '@grpc/grpc-js';
import { Registry } from 'prom-client';
import { pino } from 'pino';
import { CertificateAuthority } from '../../src/ca/authority.js';
import { trustBundlePem } from '../../src/ca/material.js';
import { createCaMetrics } from '../../src/ca/metrics.js';
import { createSelfSignedMaterial } from '../../src/ca/self-signed.js';
import { parseCertificate } from '../../src/ca/x509.js';
import { MeshCertificateRequest, MeshCertificateResponse } from '../../src/gen/mesh/v1/auth/certificate.js';
import { callCredentials } from '../../src/security/authn.js';
import { CERTIFICATE_SERVICE_DEFINITION } from '../../src/security/certificate-service.js';
import { ReloadableServerCredentials } from '../../src/security/tls-credentials.js';

const SELF = { trustDomain: 'cluster.local', rsaKeySize: 2048, ttlMs: 3600_000 };
const PATH = '/mesh.v1.auth.MeshCertificateService/CreateCertificate';
const id = (sa: string): string => `spiffe://cluster.local/ns/default/sa/${sa}`;

let server: grpc.Server;
let port: number;
let rootPem: string;
const clients: grpc.Client[] = [];
type Pair = { keyPem: string; certChainPem: string };
let pairs: Record<'a' | 'b' | 'foreign', Pair>;

/** A client on its own connection, with the key pair (or none). */
function client(pair?: Pair): grpc.Client {
  const creds = grpc.credentials.createSsl(Buffer.from(rootPem), pair ? Buffer.from(pair.keyPem) : null, pair ? Buffer.from(pair.certChainPem) : null);
  const c = new grpc.Client(`localhost:${port}`, creds, { 'grpc.use_local_subchannel_pool': 1 });
  clients.push(c);
  return c;
}

/** What the server saw of the call's client certificate: its URI, or "none". */
function whoAmI(c: grpc.Client): Promise<string> {
  return new Promise((resolve, reject) =>
    c.makeUnaryRequest(
      PATH,
      (m: MeshCertificateRequest) => Buffer.from(MeshCertificateRequest.encode(m).finish()),
      (b: Buffer) => MeshCertificateResponse.decode(b),
      { csr: '', validityDuration: 0 },
      (err, res) => (err ? reject(err) : resolve(res!.certChain[0])),
    ),
  );
}

beforeAll(async () => {
  const log = pino({ level: 'silent' });
  const material = await createSelfSignedMaterial(SELF);
  const ca = new CertificateAuthority(material, { metrics: createCaMetrics(new Registry()), log });
  rootPem = trustBundlePem(material);
  const serving = await ca.issueKeyPair({ dnsNames: ['localhost'] }, 3600_000);
  server = new grpc.Server();
  server.addService(CERTIFICATE_SERVICE_DEFINITION, {
    CreateCertificate: (call: grpc.ServerUnaryCall<MeshCertificateRequest, MeshCertificateResponse>, done: grpc.sendUnaryData<MeshCertificateResponse>) => {
      const der = callCredentials(call).peerCertificate;
      done(null, { certChain: [der ? parseCertificate(der).altNames.uris.join(',') : 'none'] });
    },
  });
  const creds = new ReloadableServerCredentials({ keyPem: serving.keyPem, certChainPem: serving.certChainPem, clientRootsPem: rootPem }, undefined);
  port = await new Promise<number>((res, rej) => server.bindAsync('127.0.0.1:0', creds, (err, p) => (err ? rej(err) : res(p))));
  pairs = {
    a: await ca.issueKeyPair({ uris: [id('a')] }, 3600_000),
    b: await ca.issueKeyPair({ uris: [id('b')] }, 3600_000),
    // issued by another CA: the handshake does not verify it, so no call may see it
    foreign: await new CertificateAuthority(await createSelfSignedMaterial(SELF), { metrics: createCaMetrics(new Registry()), log }).issueKeyPair({ uris: [id('a')] }, 3600_000),
  };
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.close();
  await new Promise<void>((r) => server.tryShutdown(() => r()));
});

describe('the client certificate of a call', () => {
  it('is its own connection’s, on interleaved calls of several connections; none without a verified one', async () => {
    const a = client(pairs.a);
    const b = client(pairs.b);
    const anonymous = client();
    const foreign = client(pairs.foreign);
    for (let round = 0; round < 3; round++) {
      const seen = await Promise.all([whoAmI(a), whoAmI(b), whoAmI(anonymous), whoAmI(foreign), whoAmI(b), whoAmI(a)]);
      expect(seen).toEqual([id('a'), id('b'), 'none', 'none', id('b'), id('a')]);
    }
  });
});
