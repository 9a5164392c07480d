/**
 * Auto mutual TLS follows the destination's PeerAuthentication (docs/adr/0151): an endpoint's
 * `tlsMode` label says whether a sidecar answers it, and the destination workload's effective mode
 * for the port overrides it — DISABLE → plaintext, STRICT → mesh TLS (a proxyless gRPC server has no
 * label). Decoded here; the daemon half checks a connected sidecar's EDS after a policy edit and runs
 * the whole configuration through xds-validate.
 */
import { modelFromYaml, sidecar, router, TypeUrl, type TestModel } from '../support/model.js';
import { makeConfigDir, startDaemon, type ConfigDir, type Daemon } from '../support/daemon.js';
import { goToolPath, GO_TOOL_BUILD_TIMEOUT_MS, runXdsValidate, echoSidecarValidateArgs } from '../support/go-tools.js';
import { SotwStream } from '../support/ads-client.js';
import { eventually } from '../support/eventually.js';
import { ClusterLoadAssignment } from '../../src/gen/envoy/config/endpoint/v3/endpoint.js';
import type { Proxy } from '../../src/model/proxy.js';

const SHOP = 'outbound|8080||shop.default.svc.cluster.local';

const SERVICES = `
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: shop, namespace: default }
spec:
  hosts: [shop.default.svc.cluster.local]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: 8080, name: http, protocol: HTTP }]
  endpoints:
    - { address: 10.1.0.1, labels: { app: shop, kind: sidecar, security.mesh.io/tlsMode: mesh } }
    - { address: 10.1.0.2, labels: { app: shop, kind: proxyless } }
`;

const pa = (name: string, kind: string, mode: string): string => `
---
apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata: { name: ${name}, namespace: default }
spec:
  selector: { matchLabels: { kind: ${kind} } }
  mtls: { mode: ${mode} }
`;

const client = sidecar('10.9.0.1', 'web-1', 'default', { app: 'web' });

/** Per endpoint address of a load assignment: whether it is marked for mesh TLS. */
function meshMarks(cla: ClusterLoadAssignment): Record<string, boolean> {
  const out: Record<string, boolean> = {};
  for (const g of cla.endpoints) {
    for (const e of g.lbEndpoints) {
      const addr = e.endpoint!.address!.socketAddress!.address;
      const json = JSON.stringify(ClusterLoadAssignment.toJSON(ClusterLoadAssignment.fromPartial({ endpoints: [{ lbEndpoints: [e] }] })));
      out[addr] = json.includes('envoy.transport_socket_match') && json.includes('"tlsMode":"mesh"');
    }
  }
  return out;
}

function marks(m: TestModel, proxy: Proxy = client, cluster = SHOP): Record<string, boolean> {
  const [cla] = m.generate(proxy, TypeUrl.Endpoint, [cluster]);
  return meshMarks(cla);
}

describe('auto mutual TLS and the destination’s PeerAuthentication', () => {
  it('without a policy the label decides: mesh TLS toward the sidecar, plaintext toward the unlabelled server', () => {
    const m = modelFromYaml(SERVICES);
    try {
      expect(marks(m)).toEqual({ '10.1.0.1': true, '10.1.0.2': false });
      const c = m.generate(client, TypeUrl.Cluster).find((x) => x.name === SHOP)!;
      expect(c.transportSocketMatches.map((t) => t.name)).toEqual(['tlsMode-mesh']);
      expect(c.transportSocket).toBeUndefined();
    } finally {
      m.stop();
    }
  });

  it('DISABLE on a labelled workload sends plaintext; STRICT on an unlabelled (proxyless) server sends mesh TLS; for gateways too', () => {
    const m = modelFromYaml(SERVICES + pa('sidecars', 'sidecar', 'DISABLE') + pa('proxyless', 'proxyless', 'STRICT'));
    try {
      expect(marks(m)).toEqual({ '10.1.0.1': false, '10.1.0.2': true });
      expect(marks(m, router())).toEqual({ '10.1.0.1': false, '10.1.0.2': true });
    } finally {
      m.stop();
    }
  });

  it('mesh and namespace levels and port-level settings count: the effective mode of the endpoint’s port', () => {
    const yaml = `${SERVICES}
---
apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata: { name: default, namespace: mesh-system }
spec: { mtls: { mode: STRICT } }
---
apiVersion: security.mesh.io/v1
kind: PeerAuthentication
metadata: { name: sidecars, namespace: default }
spec:
  selector: { matchLabels: { kind: sidecar } }
  mtls: { mode: UNSET }
  portLevelMtls: { 8080: { mode: DISABLE } }
`;
    const m = modelFromYaml(yaml);
    try {
      // mesh-wide STRICT reaches the proxyless server; the sidecar's port 8080 is DISABLE
      expect(marks(m)).toEqual({ '10.1.0.1': false, '10.1.0.2': true });
    } finally {
      m.stop();
    }
  });

  it('a PeerAuthentication edit changes exactly the load assignments whose answer changes', () => {
    const m = modelFromYaml(SERVICES);
    try {
      const names = [SHOP, 'outbound|9080||ratings.default.svc.cluster.local'];
      const before = m.generateRaw(client, TypeUrl.Endpoint, names);
      m.apply('policy.yaml', pa('proxyless', 'proxyless', 'STRICT'));
      m.model.flush();
      const after = m.generateRaw(client, TypeUrl.Endpoint, names);
      expect(after.find((r) => r.name === SHOP)!.version).not.toBe(before.find((r) => r.name === SHOP)!.version);
      expect(after.find((r) => r.name === names[1])).toBe(before.find((r) => r.name === names[1]));
      expect(marks(m)).toEqual({ '10.1.0.1': true, '10.1.0.2': true });
      // an AuthorizationPolicy edit does not touch them
      m.apply('authz.yaml', `apiVersion: security.mesh.io/v1\nkind: AuthorizationPolicy\nmetadata: { name: deny, namespace: default }\nspec: { action: DENY, rules: [{ to: [{ operation: { paths: [/x] } }] }] }\n`);
      m.model.flush();
      const third = m.generateRaw(client, TypeUrl.Endpoint, names);
      expect(third.find((r) => r.name === SHOP)).toBe(after.find((r) => r.name === SHOP));
      // and removing the policy goes back
      m.apply('policy.yaml', '');
      m.model.flush();
      expect(marks(m)).toEqual({ '10.1.0.1': true, '10.1.0.2': false });
    } finally {
      m.stop();
    }
  });

  it('without enableAutoMtls nothing changes: the label alone (and no transport socket matches)', () => {
    const m = modelFromYaml(SERVICES + pa('sidecars', 'sidecar', 'DISABLE') + pa('proxyless', 'proxyless', 'STRICT'), { mesh: { enableAutoMtls: false } });
    try {
      expect(marks(m)).toEqual({ '10.1.0.1': true, '10.1.0.2': false });
      expect(m.generate(client, TypeUrl.Cluster).find((x) => x.name === SHOP)!.transportSocketMatches).toEqual([]);
    } finally {
      m.stop();
    }
  });
});

describe('auto mutual TLS policy through a running daemon', () => {
  let bin: string;
  let config: ConfigDir;
  let daemon: Daemon;

  beforeAll(async () => {
    bin = await goToolPath('xds-validate');
    config = await makeConfigDir();
    await config.write('services.yaml', SERVICES);
    await config.write('policy.yaml', pa('sidecars', 'sidecar', 'DISABLE'));
    daemon = await startDaemon({ configDir: config.path });
  }, GO_TOOL_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await daemon?.stop();
    await config?.cleanup();
  });

  it('a connected sidecar’s EDS follows a PeerAuthentication edit, and the result passes Envoy validation', async () => {
    const stream = new SotwStream(daemon.grpcAddr, {
      id: 'sidecar~10.9.0.1~web-1.default~default.svc.cluster.local',
      metadata: { NAMESPACE: 'default', LABELS: { app: 'web' } },
    });
    try {
      stream.send({ typeUrl: TypeUrl.Endpoint, names: [SHOP] });
      const first = await stream.nextMatching((r) => r.typeUrl === TypeUrl.Endpoint, 10_000);
      stream.ack(first, [SHOP]);
      const marksOf = (r: typeof first): Record<string, boolean> => meshMarks(ClusterLoadAssignment.decode(r.resources[0].value));
      expect(marksOf(first)).toEqual({ '10.1.0.1': false, '10.1.0.2': false });
      const mark = stream.responses.length;
      await config.write('policy.yaml', pa('proxyless', 'proxyless', 'STRICT'));
      await eventually(
        'the sidecar’s load assignment with the edited policy',
        () => stream.responses.slice(mark).find((r) => r.typeUrl === TypeUrl.Endpoint && r.resources.length > 0 && marksOf(r)['10.1.0.2'] && marksOf(r)['10.1.0.1']),
        { timeoutMs: 20_000 },
      );
    } finally {
      stream.close();
    }
    const report = await runXdsValidate<{ ok: boolean; errors: unknown[] }>(bin, echoSidecarValidateArgs(daemon.grpcAddr));
    expect(report.errors).toEqual([]);
    expect(report.ok).toBe(true);
  }, 60_000);
});
