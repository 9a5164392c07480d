/**
 * Gateway credentials end to end on the local control plane (docs/adr/0105): a Kubernetes Secret
 * holding an openssl-made certificate reaches a gateway (a raw ADS client) over SDS on its ADS
 * stream; an edit of the Secret reaches it without a restart; a gateway of another namespace that
 * asks for it is refused and counted; the whole configuration passes tools/xds-validate, SDS names
 * included; the debug views and the daemon's log never show the private key; a deleted Secret
 * takes its server's chain away. A sidecar that a DestinationRule with a workloadSelector selects gets
 * the rule's credential the same way (docs/adr/0152).
 */
import { randomBytes } from 'node:crypto';
import { Listener } from '../src/gen/envoy/config/listener/v3/listener.js';
import { Secret } from '../src/gen/envoy/extensions/transport_sockets/tls/v3/secret.js';
import { DownstreamTlsContext } from '../src/gen/envoy/extensions/transport_sockets/tls/v3/tls.js';
import { Any } from '../src/gen/google/protobuf/any.js';
import type { DiscoveryResponse } from '../src/gen/envoy/service/discovery/v3/discovery.js';
import { TypeUrl } from '../src/xds/types.js';
import { SotwStream } from '../test/support/ads-client.js';
import { ensureCluster, readKubeconfig, type KubeconfigCredentials } from '../test/support/cluster.js';
import { makeConfigDir, startDaemon, type ConfigDir, type Daemon } from '../test/support/daemon.js';
import { eventually } from '../test/support/eventually.js';
import { GO_TOOL_BUILD_TIMEOUT_MS, goToolPath, runXdsValidate } from '../test/support/go-tools.js';
import { openssl, opensslWorkspace, type OpensslWorkspace } from '../test/support/openssl.js';
import { apply, createNamespace, deleteNamespace, remove } from './support/kube.js';

const suffix = randomBytes(3).toString('hex');
const NS = `e2e-gw-${suffix}`;
const OTHER = `e2e-gw-other-${suffix}`;
const nodeId = (ns: string, pod = 'gw-1'): string => `router~10.0.0.20~${pod}.${ns}~${ns}.svc.cluster.local`;
const metadata = (ns: string): Record<string, unknown> => ({ NAMESPACE: ns, LABELS: { app: 'e2e-gw' } });

const GATEWAY = `
apiVersion: networking.mesh.io/v1
kind: Gateway
metadata: { name: public, namespace: ${NS} }
spec:
  selector: { app: e2e-gw }
  servers:
    - port: { number: 8443, name: https, protocol: HTTPS }
      hosts: ["*/echo.example.com"]
      tls: { mode: MUTUAL, credentialName: echo-cert, subjectAltNames: [client.example.com], minProtocolVersion: TLSV1_2 }
---
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: upstream, namespace: ${NS} }
spec:
  hosts: [upstream.example.com]
  location: MESH_EXTERNAL
  resolution: DNS
  ports: [{ number: 443, name: tls, protocol: TLS }]
---
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: upstream-mtls, namespace: ${NS} }
spec:
  host: upstream.example.com
  workloadSelector: { matchLabels: { app: e2e-client } }
  trafficPolicy: { tls: { mode: MUTUAL, credentialName: echo-cert, sni: upstream.example.com } }
`;

interface Report {
  ok: boolean;
  counts: { secrets: number };
  errors: Array<{ type: string; name: string; message: string }>;
  resources: Record<string, string[]>;
}

let creds: KubeconfigCredentials;
let kubeconfig: string;
let ws: OpensslWorkspace;
let dir: ConfigDir;
let daemon: Daemon;
const streams: SotwStream[] = [];

async function run(args: string[]): Promise<string> {
  const r = await openssl(args);
  if (r.code !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** A CA, and a server certificate for echo.example.com signed by it (P-256), made by openssl. */
async function issue(name: string): Promise<{ cert: string; key: string; ca: string }> {
  const p = (f: string): string => `${ws.dir}/${name}-${f}`;
  await run(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', p('ca.key'), '-out', p('ca.crt'), '-subj', `/CN=${name}-ca`, '-days', '1']);
  await run(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', p('tls.key'), '-out', p('tls.csr'), '-subj', '/CN=echo.example.com']);
  await ws.file(`${name}-ext.cnf`, 'subjectAltName=DNS:echo.example.com\n');
  await run(['x509', '-req', '-in', p('tls.csr'), '-CA', p('ca.crt'), '-CAkey', p('ca.key'), '-CAcreateserial', '-out', p('tls.crt'), '-days', '1', '-extfile', p('ext.cnf')]);
  const read = async (f: string): Promise<string> => (await import('node:fs/promises')).readFile(p(f), 'utf8');
  return { cert: await read('tls.crt'), key: await read('tls.key'), ca: await read('ca.crt') };
}

const b64 = (s: string): string => Buffer.from(s).toString('base64');

async function putSecret(material: { cert: string; key: string; ca: string }): Promise<void> {
  await apply(creds, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'echo-cert', namespace: NS },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': b64(material.cert), 'tls.key': b64(material.key), 'ca.crt': b64(material.ca) },
  } as never);
}

function gateway(ns: string, pod = 'gw-1'): SotwStream {
  const s = new SotwStream(daemon.grpcAddr, { id: nodeId(ns, pod), metadata: metadata(ns) });
  streams.push(s);
  return s;
}

function secretsOf(res: DiscoveryResponse): Secret[] {
  return res.resources.map((r) => Secret.decode(r.value));
}

function listenersOf(res: DiscoveryResponse): Listener[] {
  return res.resources.map((r) => Listener.decode(r.value));
}

/** The public key of a certificate or private key, as openssl prints it (to tell them apart or match them). */
async function publicKey(pem: string, kind: 'cert' | 'key'): Promise<string> {
  const f = await ws.file(`pub-${randomBytes(4).toString('hex')}.pem`, pem);
  return kind === 'cert' ? run(['x509', '-in', f, '-noout', '-pubkey']) : run(['pkey', '-in', f, '-pubout']);
}

beforeAll(async () => {
  const cluster = await ensureCluster();
  kubeconfig = cluster.kubeconfig;
  creds = await readKubeconfig(kubeconfig);
  ws = await opensslWorkspace();
  await createNamespace(creds, NS);
  await createNamespace(creds, OTHER);
  await putSecret(await issue('first'));
  dir = await makeConfigDir();
  await dir.write('gateway.yaml', GATEWAY);
  daemon = await startDaemon({ registries: 'Cluster', configDir: dir.path, args: ['--clusterconfig', kubeconfig], readyTimeoutMs: 60_000 });
}, GO_TOOL_BUILD_TIMEOUT_MS);

afterAll(async () => {
  for (const s of streams) s.close();
  await daemon?.stop();
  await dir?.cleanup();
  await ws?.cleanup();
  if (creds) {
    await deleteNamespace(creds, NS).catch(() => undefined);
    await deleteNamespace(creds, OTHER).catch(() => undefined);
  }
});

describe('gateway credentials from Kubernetes Secrets over SDS', () => {
  it('a gateway gets the Secret’s certificate and key, and its CA, over SDS on the ADS stream; an edit reaches it without a restart', async () => {
    const gw = gateway(NS);
    gw.send({ typeUrl: TypeUrl.Listener });
    const lds = await gw.nextMatching((r) => r.typeUrl === TypeUrl.Listener && r.resources.length > 0, 20_000);
    gw.ack(lds);
    const [l] = listenersOf(lds);
    expect(l.name).toBe('0.0.0.0_8443');
    const ctx = DownstreamTlsContext.decode(l.filterChains[0].transportSocket!.typedConfig!.value);
    expect(ctx.requireClientCertificate).toBe(true);
    const names = [ctx.commonTlsContext!.tlsCertificateSdsSecretConfigs[0].name, ctx.commonTlsContext!.combinedValidationContext!.validationContextSdsSecretConfig!.name];
    expect(names).toEqual(['kubernetes://echo-cert', 'kubernetes://echo-cert-cacert']);

    const first = await issue('first-again'); // a different certificate to edit to later
    gw.send({ typeUrl: TypeUrl.Secret, names });
    const sds = await gw.nextMatching((r) => r.typeUrl === TypeUrl.Secret && r.resources.length === 2, 20_000);
    gw.ack(sds, names);
    const byName = new Map(secretsOf(sds).map((s) => [s.name, s]));
    const cert = Buffer.from(byName.get('kubernetes://echo-cert')!.tlsCertificate!.certificateChain!.inlineBytes!).toString();
    const key = Buffer.from(byName.get('kubernetes://echo-cert')!.tlsCertificate!.privateKey!.inlineBytes!).toString();
    const ca = Buffer.from(byName.get('kubernetes://echo-cert-cacert')!.validationContext!.trustedCa!.inlineBytes!).toString();
    // what arrived is a certificate openssl reads, its key, and a CA that verifies it
    expect(await publicKey(cert, 'cert')).toBe(await publicKey(key, 'key'));
    expect((await ws.verify(cert, ca)).code).toBe(0);
    expect(await ws.text(cert)).toContain('DNS:echo.example.com');

    // the edit: a new certificate, key and CA in the same Secret
    const from = gw.responses.length;
    await putSecret(first);
    const pushed = await gw.nextMatching((r) => r.typeUrl === TypeUrl.Secret && secretsOf(r).some((s) => s.name === 'kubernetes://echo-cert'), 20_000, from);
    gw.ack(pushed, names);
    const edited = secretsOf(pushed).find((s) => s.name === 'kubernetes://echo-cert')!;
    expect(Buffer.from(edited.tlsCertificate!.certificateChain!.inlineBytes!).toString()).toBe(first.cert);
    expect(Buffer.from(edited.tlsCertificate!.privateKey!.inlineBytes!).toString()).toBe(first.key);
    // the listener names the Secret, not its content: the edit sends no new listener
    expect(gw.responses.slice(from).filter((r) => r.typeUrl === TypeUrl.Listener)).toEqual([]);
  }, 90_000);

  it('a gateway of another namespace asking for the Secret is refused and counted', async () => {
    const before = await daemon.metric('disc_sds_certificate_errors_total');
    const other = gateway(OTHER, 'gw-other');
    other.send({ typeUrl: TypeUrl.Secret, names: [`kubernetes://${NS}/echo-cert`, `kubernetes://${NS}/echo-cert-cacert`] });
    await other.nextMatching((r) => r.typeUrl === TypeUrl.Secret, 10_000);
    await other.quiet(1000);
    // answered (an Envoy does not wait on a timer), with nothing in it, however often it is pushed
    expect(other.ofType(TypeUrl.Secret).flatMap((r) => r.resources)).toEqual([]);
    await eventually('refusals counted', async () => (await daemon.metric('disc_sds_certificate_errors_total')) - before === 2, { timeoutMs: 10_000 });
    expect(daemon.logs()).toContain(`SDS: refused kubernetes://${NS}/echo-cert for ${nodeId(OTHER, 'gw-other')}`);
  }, 30_000);

  it('passes xds-validate as the gateway, every SDS secret name included', async () => {
    const validator = await goToolPath('xds-validate');
    const report = await runXdsValidate<Report>(validator, ['-addr', daemon.grpcAddr, '-node-id', nodeId(NS, 'gw-validate'), '-metadata', JSON.stringify(metadata(NS)), '-timeout', '20s']);
    expect(report.errors).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.resources[TypeUrl.Secret]).toEqual(['kubernetes://echo-cert', 'kubernetes://echo-cert-cacert']);
  }, GO_TOOL_BUILD_TIMEOUT_MS);

  it('a sidecar selected by a DestinationRule with a workloadSelector gets its credential over SDS, and passes xds-validate, SDS names included (docs/adr/0152)', async () => {
    const validator = await goToolPath('xds-validate');
    const node = `sidecar~10.0.0.30~client-1.${NS}~${NS}.svc.cluster.local`;
    const report = await runXdsValidate<Report & { dump: Record<string, Record<string, unknown>> }>(validator, [
      ...['-addr', daemon.grpcAddr, '-node-id', node, '-metadata', JSON.stringify({ NAMESPACE: NS, LABELS: { app: 'e2e-client' } }), '-timeout', '20s', '-dump'],
    ]);
    expect(report.errors).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.resources[TypeUrl.Secret]).toEqual(['kubernetes://echo-cert', 'kubernetes://echo-cert-cacert']);
    expect(JSON.stringify(report.dump[TypeUrl.Cluster]['outbound|443||upstream.example.com'])).toContain('kubernetes://echo-cert');
    // a sidecar of the namespace the rule does not select names no credential (its neighbour's rule is not its own)
    const other = await runXdsValidate<Report>(validator, [
      ...['-addr', daemon.grpcAddr, '-node-id', `sidecar~10.0.0.31~web-1.${NS}~${NS}.svc.cluster.local`, '-metadata', JSON.stringify({ NAMESPACE: NS, LABELS: { app: 'web' } }), '-timeout', '20s'],
    ]);
    expect(other.errors).toEqual([]);
    expect(other.resources[TypeUrl.Secret] ?? []).toEqual([]);
  }, GO_TOOL_BUILD_TIMEOUT_MS);

  it('shows no private key in the debug views or the log', async () => {
    const dump = JSON.stringify(await daemon.debug(`config_dump?proxyID=${encodeURIComponent(nodeId(NS))}&format=envoy`));
    const mesh = JSON.stringify(await daemon.debug(`config_dump?proxyID=${encodeURIComponent(nodeId(NS))}`));
    const syncz = JSON.stringify(await daemon.debug('syncz'));
    expect(dump).toContain('kubernetes://echo-cert');
    expect(dump).toContain('[redacted]');
    for (const text of [dump, mesh, syncz, daemon.logs(), await daemon.metrics()]) {
      expect(text).not.toContain('PRIVATE KEY');
      expect(text).not.toMatch(/LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0t|LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0t/); // base64 of the PEM headers
    }
  }, 30_000);

  it('a deleted Secret takes its server’s chain away, and says so', async () => {
    const gw = gateway(NS, 'gw-2');
    gw.send({ typeUrl: TypeUrl.Listener });
    // a gateway that just connected gets the server at once, while the Secret's watch starts
    const lds = await gw.nextMatching((r) => r.typeUrl === TypeUrl.Listener, 20_000);
    expect(lds.resources).toHaveLength(1);
    gw.ack(lds);
    const from = gw.responses.length;
    await remove(creds, 'v1', 'Secret', NS, 'echo-cert');
    const after = await gw.nextMatching((r) => r.typeUrl === TypeUrl.Listener, 20_000, from).catch((e: unknown) => {
      throw new Error(`${String(e)}\n${daemon.logs().split('\n').filter((l) => /credential|push:/.test(l)).slice(-30).join('\n')}`);
    });
    expect(after.resources.map((r) => Any.decode(Any.encode(r).finish()).typeUrl)).toEqual([]);
    await eventually('the deletion logged', async () => daemon.logs().includes(`credentials: Secret ${NS}/echo-cert was deleted`), { timeoutMs: 10_000 });
  }, 60_000);
});
