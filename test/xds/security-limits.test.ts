/**
 * What the security translation cannot apply as written, and says so (docs/adr/0154): proxyless gRPC
 * servers drop ALLOW rules whose attributes gRPC cannot evaluate and fail CUSTOM policies closed;
 * proxyless clients get a DestinationRule's SIMPLE and MUTUAL TLS in the form gRPC loads (checked by
 * @grpc/grpc-js-xds's own cluster validation, which refuses the Envoy form); MESH_MUTUAL keeps
 * subjectAltNames that are not SPIFFE URIs as SAN matchers of their type; dry-run AUDIT and CUSTOM
 * policies are named in the diagnostics the daemon logs.
 */
import { ClusterResourceType } from '@grpc/grpc-js-xds/build/src/xds-resource-type/cluster-resource-type.js';
import { modelFromYaml, sidecar, TypeUrl, type TestModel } from '../support/model.js';
import { hcmOf } from '../support/decode.js';
import { echoGrpcServiceEntry, grpcProxy } from '../support/grpc-fixtures.js';
import { Any } from '../../src/gen/google/protobuf/any.js';
import { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster.js';
import { UpstreamTlsContext } from '../../src/gen/envoy/extensions/transport_sockets/tls/v3/tls.js';
import { RBAC as HttpRbac } from '../../src/gen/envoy/extensions/filters/http/rbac/v3/rbac.js';
import { destinationRuleTls } from '../../src/xds/envoy/security/tls.js';
import { PROXYLESS_DR_TLS } from '../../src/model/policy/diagnostics.js';

const HOST = 'echo-grpc.default.svc.cluster.local';
const PORT = 7070;
const CLUSTER = `outbound|${PORT}||${HOST}`;

const server = grpcProxy('echo-grpc-0', '10.0.0.5', { app: 'echo-grpc' });
const client = grpcProxy('client-0', '10.0.0.9', { app: 'client' });

const SERVICE_ENTRY = echoGrpcServiceEntry({ host: HOST, port: PORT, identity: 'spiffe://cluster.local/ns/default/sa/echo', endpoints: `{ address: 10.0.0.5, ports: { grpc: ${PORT} }, labels: { app: echo-grpc } }` });
const ap = (name: string, spec: string, annotations = '{}'): string => `
apiVersion: security.mesh.io/v1
kind: AuthorizationPolicy
metadata: { name: ${name}, namespace: default, annotations: ${annotations} }
spec:
${spec}
`;
const dr = (tls: string): string => `
apiVersion: networking.mesh.io/v1
kind: DestinationRule
metadata: { name: echo-grpc, namespace: default }
spec: { host: ${HOST}, trafficPolicy: { tls: ${tls} } }
`;
const docs = (...d: string[]): string => d.join('---');

/** What the snapshot's diagnostics say about one object (the lines the daemon logs). */
function said(m: TestModel, name: string): Array<{ message: string; level: string }> {
  return m.model
    .current()
    .push.policies.diagnostics.filter((d) => d.name === name)
    .map((d) => ({ message: d.message, level: d.level ?? 'warn' }));
}

/** gRPC's (grpc-js-xds) verdict on a cluster as the daemon encodes it, with a bootstrap declaring the provider instance `default`. */
function grpcVerdict(any: Uint8Array): { error?: string; security?: unknown } {
  const value = Any.decode(any).value;
  const context = { bootstrap: { certificateProviders: { default: { pluginName: 'file_watcher', config: {} } } } } as never;
  const r = ClusterResourceType.get().decode(context, { type_url: 'type.googleapis.com/envoy.config.cluster.v3.Cluster', value: Buffer.from(value) } as never) as { error?: string; value?: { securityUpdate?: unknown } };
  return r.error !== undefined ? { error: r.error } : { security: r.value?.securityUpdate };
}

describe('proxyless gRPC servers: what their authorization cannot evaluate', () => {
  it('drops an ALLOW rule on JWT attributes, fails CUSTOM closed, and names both once per policy', () => {
    const m = modelFromYaml(
      docs(
        SERVICE_ENTRY,
        ap('jwt-only', '  selector: { matchLabels: { app: echo-grpc } }\n  rules:\n    - from: [{ source: { requestPrincipals: ["https://issuer.test/alice"] } }]\n    - from: [{ source: { principals: ["cluster.local/ns/default/sa/client"] } }]'),
        ap('ext', '  selector: { matchLabels: { app: echo-grpc } }\n  action: CUSTOM\n  provider: { name: opa }\n  rules: [{ to: [{ operation: { paths: ["/admin*"] } }] }]'),
        ap('deny-sni', '  selector: { matchLabels: { app: echo-grpc } }\n  action: DENY\n  rules: [{ to: [{ operation: { paths: ["/x"] } }], when: [{ key: connection.sni, values: ["a.test"] }] }]'),
      ),
      { mock: false, mesh: { extensionProviders: [{ name: 'opa', envoyExtAuthzGrpc: { service: 'opa.default.svc.cluster.local', port: 9191 } }] } },
    );
    try {
      const l = m.generate(server, TypeUrl.Listener, [`grpc/server?xds.resource.listening_address=10.0.0.5:${PORT}`])[0];
      const rbac = Object.fromEntries(
        hcmOf(l)[0]
          .httpFilters.filter((f) => f.name.startsWith('envoy.filters.http.rbac'))
          .map((f) => [f.name, Object.keys(HttpRbac.decode(f.typedConfig!.value).rules?.policies ?? {})]),
      );
      expect(rbac).toEqual({
        // CUSTOM: no external authorizer on gRPC servers, its rule denies; the SNI condition is ignored
        'envoy.filters.http.rbac.deny': ['ns[default]-policy[deny-sni]-rule[0]', 'ns[default]-policy[ext]-rule[0]'],
        // the JWT rule is dropped, the principal rule stays
        'envoy.filters.http.rbac.allow': ['ns[default]-policy[jwt-only]-rule[1]'],
      });
      expect(said(m, 'jwt-only')).toContainEqual({ message: 'on proxyless gRPC servers, whose authorization cannot evaluate some of its attributes, rule 0 (from.requestPrincipals) is dropped there, so it allows nothing', level: 'info' });
      expect(said(m, 'ext')).toContainEqual({ message: 'on proxyless gRPC servers, which cannot call an external authorizer, requests its rules match are denied (fail closed)', level: 'info' });
      expect(said(m, 'deny-sni')).toContainEqual({ message: 'on proxyless gRPC servers, whose authorization cannot evaluate some of its attributes, rule 0 (when[connection.sni]) ignores those attributes there, so it matches more', level: 'info' });
    } finally {
      m.stop();
    }
  });

  it('names dry-run AUDIT and CUSTOM policies, which generate nothing', () => {
    const dry = "{ 'mesh.io/dry-run': 'true' }";
    const m = modelFromYaml(
      docs(
        ap('audit', '  action: AUDIT\n  rules: [{ to: [{ operation: { paths: ["/a"] } }] }]', dry),
        ap('custom', '  action: CUSTOM\n  provider: { name: opa }\n  rules: [{ to: [{ operation: { paths: ["/a"] } }] }]', dry),
        ap('deny', '  action: DENY\n  rules: [{ to: [{ operation: { paths: ["/a"] } }] }]', dry),
      ),
      { mesh: { extensionProviders: [{ name: 'opa', envoyExtAuthzGrpc: { service: 'opa.default.svc.cluster.local', port: 9191 } }] } },
    );
    try {
      const text = (action: string): string => `mesh.io/dry-run applies to ALLOW and DENY policies only: this ${action} policy is neither enforced nor evaluated in dry run on any workload`;
      const dryRun = (name: string): string[] => said(m, name).filter((d) => d.message.includes('dry-run') && d.level === 'warn').map((d) => d.message);
      expect(dryRun('audit')).toEqual([text('AUDIT')]);
      expect(dryRun('custom')).toEqual([text('CUSTOM')]);
      expect(dryRun('deny')).toEqual([]);
      // and indeed: the sidecar's filters carry the dry-run DENY as shadow rules, nothing of the others
      const l = m.generate(sidecar('127.0.0.1', 'echo-v1-abc', 'default', { app: 'echo' }), TypeUrl.Listener).find((x) => x.name === 'virtualInbound')!;
      const dump = JSON.stringify(l.filterChains.flatMap((c) => c.filters.map((f) => f.name)));
      expect(dump).not.toContain('ext_authz');
      expect(dump).not.toContain('rbac.audit');
    } finally {
      m.stop();
    }
  });
});

describe('proxyless gRPC clients: DestinationRule SIMPLE and MUTUAL TLS in the form gRPC loads', () => {
  const raw = (m: TestModel): Uint8Array => m.generateRaw(client, TypeUrl.Cluster).find((r) => r.name === CLUSTER)!.any;
  const tlsOf = (any: Uint8Array): UpstreamTlsContext => UpstreamTlsContext.decode(Cluster.decode(Any.decode(any).value).transportSocket!.typedConfig!.value);

  it.each([
    ['SIMPLE', '{ mode: SIMPLE, sni: echo.example.com, caCertificates: /etc/ca.pem, subjectAltNames: [echo.example.com] }'],
    ['MUTUAL', '{ mode: MUTUAL, clientCertificate: /etc/c.pem, privateKey: /etc/k.pem, caCertificates: /etc/ca.pem, subjectAltNames: [echo.example.com] }'],
    ['MUTUAL with credentialName', '{ mode: MUTUAL, credentialName: echo-cred, subjectAltNames: [echo.example.com] }'],
  ])('%s: TLS verified against the mesh roots and the SANs, no client certificate, accepted by gRPC, logged', (_what, tls) => {
    const m = modelFromYaml(docs(SERVICE_ENTRY, dr(tls)), { mock: false });
    try {
      const any = raw(m);
      const ctx = tlsOf(any);
      expect(ctx.sni).toBe(tls.includes('sni:') ? 'echo.example.com' : HOST);
      expect(ctx.commonTlsContext?.tlsCertificateProviderInstance).toBeUndefined();
      expect(ctx.commonTlsContext?.tlsCertificates).toEqual([]);
      expect(ctx.commonTlsContext?.tlsCertificateSdsSecretConfigs).toEqual([]);
      expect(ctx.commonTlsContext?.validationContext?.caCertificateProviderInstance).toEqual({ instanceName: 'default', certificateName: 'ROOTCA' });
      expect(ctx.commonTlsContext?.validationContext?.matchSubjectAltNames.map((s) => s.exact)).toEqual(['echo.example.com']);
      expect(grpcVerdict(any)).toEqual({ security: expect.objectContaining({ caCertificateProviderInstance: 'default', identityCertificateProviderInstance: undefined }) });
      expect(said(m, 'echo-grpc').map((d) => d.message)).toContainEqual(expect.stringContaining(PROXYLESS_DR_TLS));
    } finally {
      m.stop();
    }
  });

  it('the Envoy form of the same rule is what gRPC refuses (the check can fail)', () => {
    const socket = destinationRuleTls({ mode: 'SIMPLE', caCertificates: '/etc/ca.pem', subjectAltNames: ['echo.example.com'] } as never, HOST);
    const cluster = Cluster.fromPartial({ name: CLUSTER, type: 3, edsClusterConfig: { edsConfig: { ads: {} } }, transportSocket: socket as never });
    const any = Any.encode({ typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster', value: Buffer.from(Cluster.encode(cluster).finish()) }).finish();
    expect(grpcVerdict(any).error).toMatch(/ca_certificate_provider_instance unset/);
  });

  it('MESH_MUTUAL keeps subjectAltNames that are not SPIFFE URIs: gRPC by name, Envoy by SAN type', () => {
    const m = modelFromYaml(docs(SERVICE_ENTRY, dr('{ mode: MESH_MUTUAL, subjectAltNames: ["spiffe://cluster.local/ns/default/sa/echo", echo.example.com, 10.0.0.5] }')), { mock: false });
    try {
      const any = raw(m);
      expect(tlsOf(any).commonTlsContext?.validationContext?.matchSubjectAltNames.map((s) => s.exact)).toEqual(['spiffe://cluster.local/ns/default/sa/echo', 'echo.example.com', '10.0.0.5']);
      expect(grpcVerdict(any).error).toBeUndefined();
      const envoy = m.generate(sidecar('127.0.0.1', 'c-1', 'default', { app: 'c' }), TypeUrl.Cluster).find((c) => c.name === CLUSTER)!;
      const sans = UpstreamTlsContext.decode(envoy.transportSocket!.typedConfig!.value).commonTlsContext?.combinedValidationContext?.defaultValidationContext?.matchTypedSubjectAltNames;
      // URI 3, DNS 2, IP_ADDRESS 4
      expect(sans?.map((s) => [s.sanType, s.matcher?.exact])).toEqual([
        [3, 'spiffe://cluster.local/ns/default/sa/echo'],
        [2, 'echo.example.com'],
        [4, '10.0.0.5'],
      ]);
    } finally {
      m.stop();
    }
  });
});
