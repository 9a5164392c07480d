/**
 * A certificate service on another host than meshd (CA_ADDR): the agent starts, and its CA client
 * checks that service's certificate for the service's own name (the host of CA_ADDR, or
 * --caServerName), not meshd's. A real TLS gRPC server with a certificate for `localhost` signed by
 * an openssl root stands in for the certificate service; the client is the agent's own.
 */
import * as grpc from '@grpc/grpc-js';
import { readFile } from 'node:fs/promises';
import { createCertificate } from '../../src/agent/ca-client.js';
import { caClientOptions } from '../../src/agent/run.js';
import { agentSettings } from '../../src/agent/settings.js';
import { MeshCertificateRequest, MeshCertificateResponse } from '../../src/gen/mesh/v1/auth/certificate.js';
import { CERTIFICATE_SERVICE_DEFINITION } from '../../src/security/certificate-service.js';
import { openssl, opensslWorkspace, type OpensslWorkspace } from '../support/openssl.js';

let ws: OpensslWorkspace;
let server: grpc.Server;
let port: number;
let rootPem: string;
const seen: Array<{ authorization: string; csr: string }> = [];

async function ok(args: string[]): Promise<void> {
  const r = await openssl(args);
  if (r.code !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
}

beforeAll(async () => {
  ws = await opensslWorkspace();
  const f = (n: string): string => `${ws.dir}/${n}`;
  await ok(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', f('root.key'), '-out', f('root.pem'), '-subj', '/CN=test root', '-days', '1', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign']);
  await ok(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.csr'), '-subj', '/CN=certificate service']);
  await ws.file('ext.cnf', 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n');
  await ok(['x509', '-req', '-in', f('ca.csr'), '-CA', f('root.pem'), '-CAkey', f('root.key'), '-CAcreateserial', '-out', f('ca.pem'), '-days', '1', '-extfile', f('ext.cnf')]);
  rootPem = await readFile(f('root.pem'), 'utf8');
  server = new grpc.Server();
  server.addService(
    CERTIFICATE_SERVICE_DEFINITION,
    {
      CreateCertificate: (call: grpc.ServerUnaryCall<MeshCertificateRequest, MeshCertificateResponse>, done: grpc.sendUnaryData<MeshCertificateResponse>) => {
        seen.push({ authorization: String(call.metadata.get('authorization')[0] ?? ''), csr: call.request.csr });
        done(null, MeshCertificateResponse.fromPartial({ certChain: ['LEAF', 'ROOT'] }));
      },
    },
  );
  const creds = grpc.ServerCredentials.createSsl(null, [{ private_key: await readFile(f('ca.key')), cert_chain: await readFile(f('ca.pem')) }], false);
  port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', creds, (err, p) => (err ? reject(err) : resolve(p))));
});

afterAll(async () => {
  await new Promise<void>((r) => server.tryShutdown(() => r()));
  await ws.cleanup();
});

const env = (caAddr: string): Record<string, string> => ({
  POD_NAME: 'web-0',
  POD_NAMESPACE: 'shop',
  SERVICE_ACCOUNT: 'web',
  INSTANCE_IP: '10.1.2.3',
  PROXY_CONFIG: JSON.stringify({ discoveryAddress: 'meshd.mesh-system.svc:15012' }),
  CA_ADDR: caAddr,
});

describe('a certificate service on another host (CA_ADDR)', () => {
  it('the agent starts with it and checks its certificate for the host of CA_ADDR', async () => {
    const s = agentSettings('sidecar', {}, env(`localhost:${port}`));
    expect(s.xdsServerName).toBe('meshd.mesh-system.svc');
    expect(s.caServerName).toBe('localhost');
    const chain = await createCertificate({ ...caClientOptions(s), rootPem }, { kind: 'token', token: 'tok' }, 'CSR', 3600);
    expect(chain).toEqual(['LEAF', 'ROOT']);
    expect(seen.at(-1)).toEqual({ authorization: 'Bearer tok', csr: 'CSR' });
  });

  it("checked for meshd's name instead, the same service is refused (the name is what decides)", async () => {
    const s = agentSettings('sidecar', {}, env(`localhost:${port}`));
    const calls = seen.length;
    await expect(createCertificate({ ...caClientOptions(s), serverName: s.xdsServerName, rootPem }, { kind: 'token', token: 'tok' }, 'CSR', 3600)).rejects.toThrow(/UNAVAILABLE/);
    expect(seen.length).toBe(calls);
  });

  it('--caServerName names the certificate service explicitly; --xdsServerName does not change it', () => {
    expect(agentSettings('sidecar', { caServerName: 'ca.internal' }, env('10.9.9.9:8060')).caServerName).toBe('ca.internal');
    expect(agentSettings('sidecar', { xdsServerName: 'meshd.example' }, env('ca.security.svc:8060')).caServerName).toBe('ca.security.svc');
    // by default the certificate service is meshd's port: one name for both
    const same = agentSettings('sidecar', { xdsServerName: 'meshd.example' }, { ...env(''), CA_ADDR: '' });
    expect([same.caAddress, same.caServerName]).toEqual(['meshd.mesh-system.svc:15012', 'meshd.example']);
  });
});
