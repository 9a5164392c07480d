/**
 * The mesh config from the `mesh` ConfigMap on the local control plane: absent → defaults, edits
 * take effect, invalid content is refused (named and counted) while the last good settings stay,
 * deletion restores the defaults, a revision reads `mesh-<rev>`, an existing `--meshConfig` file
 * wins; and through a started daemon, a sidecar's catch-all outbound traffic goes to the black hole
 * under REGISTRY_ONLY from the ConfigMap and to the passthrough cluster once it says ALLOW_ANY.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import pino from 'pino';
import { MeshConfigMapSource, openMeshSources, type MeshConfigMapIssue, type MeshConfigMapKey } from '../../src/bootstrap/mesh-config-map.js';
import type { MeshSettings } from '../../src/model/mesh-settings.js';
import type { DiscoveryResponse } from '../../src/gen/envoy/service/discovery/v3/discovery.js';
import type { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import { Any } from '../../src/gen/google/protobuf/any.js';
import { TypeUrl } from '../../src/xds/types.js';
import { decodeResource, tcpProxiesOf } from '../support/decode.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';
import { startDaemon, type Daemon } from '../support/daemon.js';
import { applyMeshCrds, configMap, createNamespace, deleteNamespace, kubeTestEnv, type KubeTestEnv } from '../kube/helpers.js';
import { SotwStream } from '../support/ads-client.js';
import { sidecarNode } from '../xds/ads-harness.js';
import { eventually } from '../support/eventually.js';

const base = { domain: 'cluster.local', clusterId: 'Cluster' };

/** A logger whose lines the test can read. */
function capturedLog(): { log: pino.Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { log: pino({ level: 'info' }, sink), lines };
}

let env: KubeTestEnv;
let ns: string;

beforeAll(async () => {
  env = await kubeTestEnv();
  // The daemon started below reads the config kinds from the CRDs: they must be served.
  await applyMeshCrds(env.client);
  ns = await createNamespace(env.client, 'meshcm');
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  await deleteNamespace(env?.client, ns);
  env?.client.close();
});

async function putConfigMap(name: string, data: Record<string, string>): Promise<void> {
  const obj = configMap(ns, name, data);
  const existing = await env.client.find({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name });
  if (existing) await env.client.replace({ ...obj, metadata: { ...obj.metadata, resourceVersion: existing.metadata?.resourceVersion } });
  else await env.client.create(obj);
}

async function deleteConfigMap(name: string): Promise<void> {
  await env.client.delete({ apiVersion: 'v1', kind: 'ConfigMap', namespace: ns, name });
}

describe('MeshConfigMapSource', () => {
  it('follows the ConfigMap: absent, created, refused edits, deleted', async () => {
    const { log, lines } = capturedLog();
    const rejections: Array<{ key: MeshConfigMapKey; issues: ReadonlyArray<MeshConfigMapIssue> }> = [];
    const source = new MeshConfigMapSource({ client: env.client, namespace: ns, base, log, onReject: (key, issues) => rejections.push({ key, issues }) });
    const seen: MeshSettings[] = [];
    source.mesh.onChange((m) => seen.push(m));
    try {
      await source.start({ timeoutMs: 30_000 });
      expect(source.name).toBe('mesh');
      expect(source.mesh.current().outboundTrafficPolicy).toBe('ALLOW_ANY');
      expect(source.mesh.current().connectTimeoutMs).toBe(10_000);
      expect(source.networks.current()).toEqual({ networks: {} });

      await putConfigMap('mesh', {
        mesh: 'outboundTrafficPolicy: { mode: REGISTRY_ONLY }\nconnectTimeout: 5s\n',
        meshNetworks: 'networks:\n  net1:\n    endpoints: [ { fromRegistry: Cluster } ]\n    gateways: [ { address: 192.0.2.10, port: 15443 } ]\n',
      });
      await eventually('the ConfigMap settings', () => source.mesh.current().outboundTrafficPolicy === 'REGISTRY_ONLY', { timeoutMs: 15_000 });
      expect(source.mesh.current().connectTimeoutMs).toBe(5000);
      await eventually('the ConfigMap networks', () => source.networks.current().networks?.net1 !== undefined, { timeoutMs: 15_000 });
      expect(source.networks.current().networks?.net1?.gateways).toEqual([{ address: '192.0.2.10', port: 15443 }]);
      const changes = seen.length;

      // an invalid field: named, reported, and the last good settings stay
      await putConfigMap('mesh', { mesh: 'outboundTrafficPolicy: { mode: SOMETIMES }\n', meshNetworks: 'networks:\n  net1:\n    gateways: [ { port: 15443 } ]\n' });
      await eventually('the rejections', () => rejections.length >= 2, { timeoutMs: 15_000 });
      const meshRejection = rejections.find((r) => r.key === 'mesh');
      expect(meshRejection?.issues.map((i) => i.field)).toContain('outboundTrafficPolicy.mode');
      expect(rejections.find((r) => r.key === 'meshNetworks')?.issues.map((i) => i.field)).toContain('networks.net1.gateways[0]');
      const warning = lines.find((l) => l.includes('rejected') && l.includes(`ConfigMap ${ns}/mesh key mesh`));
      expect(warning).toContain('outboundTrafficPolicy.mode');
      expect(source.mesh.current().outboundTrafficPolicy).toBe('REGISTRY_ONLY');
      expect(source.networks.current().networks?.net1?.gateways).toHaveLength(1);
      expect(seen.length).toBe(changes);

      // invalid YAML
      await putConfigMap('mesh', { mesh: 'outboundTrafficPolicy: [unclosed\n' });
      await eventually('the YAML rejection', () => rejections.some((r) => r.issues.some((i) => i.field === '(yaml)')), { timeoutMs: 15_000 });
      expect(source.mesh.current().connectTimeoutMs).toBe(5000);

      // a good edit after bad ones applies
      await putConfigMap('mesh', { mesh: 'connectTimeout: 7s\n' });
      await eventually('the repaired settings', () => source.mesh.current().connectTimeoutMs === 7000, { timeoutMs: 15_000 });
      expect(source.mesh.current().outboundTrafficPolicy).toBe('ALLOW_ANY');
      expect(source.networks.current()).toEqual({ networks: {} }); // key removed → no networks

      await deleteConfigMap('mesh');
      await eventually('the defaults after deletion', () => source.mesh.current().connectTimeoutMs === 10_000, { timeoutMs: 15_000 });
    } finally {
      await source.stop();
    }
  }, 60_000);

  it('reads mesh-<revision> for a named revision and ignores the default one', async () => {
    await putConfigMap('mesh', { mesh: 'connectTimeout: 3s\n' });
    await putConfigMap('mesh-canary', { mesh: 'connectTimeout: 4s\n' });
    const source = new MeshConfigMapSource({ client: env.client, namespace: ns, revision: 'canary', base, log: pino({ level: 'silent' }) });
    try {
      await source.start({ timeoutMs: 30_000 });
      expect(source.name).toBe('mesh-canary');
      expect(source.mesh.current().connectTimeoutMs).toBe(4000);
      await putConfigMap('mesh', { mesh: 'connectTimeout: 9s\n' });
      await putConfigMap('mesh-canary', { mesh: 'connectTimeout: 6s\n' });
      await eventually('the canary edit', () => source.mesh.current().connectTimeoutMs === 6000, { timeoutMs: 15_000 });
    } finally {
      await source.stop();
      await deleteConfigMap('mesh');
      await deleteConfigMap('mesh-canary');
    }
  }, 60_000);

  it('lets an existing --meshConfig file win over the ConfigMap', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mesh-cm-'));
    await putConfigMap('mesh', { mesh: 'connectTimeout: 3s\n', meshNetworks: 'networks:\n  net2: {}\n' });
    const cluster = { client: async () => env.client, namespace: ns };
    const withFile = await openMeshSources({ meshConfigFile: join(dir, 'mesh'), networksConfigFile: join(dir, 'meshNetworks'), base, log: pino({ level: 'silent' }), cluster });
    try {
      // no files: both from the ConfigMap
      expect(withFile.meshOrigin).toBe('configmap');
      expect(withFile.mesh.current().connectTimeoutMs).toBe(3000);
      expect(Object.keys(withFile.networks.current().networks ?? {})).toEqual(['net2']);
    } finally {
      await withFile.stop();
    }
    await writeFile(join(dir, 'mesh'), 'connectTimeout: 2s\n');
    const fileWins = await openMeshSources({ meshConfigFile: join(dir, 'mesh'), networksConfigFile: join(dir, 'meshNetworks'), base, log: pino({ level: 'silent' }), cluster });
    try {
      expect(fileWins.meshOrigin).toBe('file');
      expect(fileWins.mesh.current().connectTimeoutMs).toBe(2000);
      expect(fileWins.networksOrigin).toBe('configmap');
    } finally {
      await fileWins.stop();
      await deleteConfigMap('mesh');
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('a daemon with --registries Cluster', () => {
  let daemon: Daemon | undefined;
  let grpcClient: grpc.Client | undefined;

  afterAll(async () => {
    grpcClient?.close();
    await daemon?.stop();
  }, 30_000);

  /** The cluster of the catch-all chain of the virtualOutbound listener in an LDS response. */
  function catchAll(res: DiscoveryResponse): string {
    const listeners = res.resources.map((r) => decodeResource(TypeUrl.Listener, Any.encode(r).finish()) as Listener);
    const outbound = listeners.find((l) => l.name === 'virtualOutbound');
    if (!outbound) throw new Error(`no virtualOutbound listener among ${listeners.map((l) => l.name).join(', ')}`);
    const proxy = tcpProxiesOf(outbound)[0];
    return proxy?.cluster ?? '(none)';
  }

  it('applies outboundTrafficPolicy from the ConfigMap to sidecars, and counts a refused edit', async () => {
    await putConfigMap('mesh', { mesh: 'outboundTrafficPolicy: { mode: REGISTRY_ONLY }\n' });
    daemon = await startDaemon({
      registries: 'Cluster',
      args: ['--clusterconfig', env.cluster.kubeconfig],
      env: { POD_NAMESPACE: ns, POD_NAME: 'meshd-meshcm-0' },
      readyTimeoutMs: 60_000,
    });
    const node = sidecarNode(ns);
    grpcClient = new grpc.Client(daemon.grpcAddr, grpc.credentials.createInsecure());
    const stream = new SotwStream(grpcClient, node);
    try {
      stream.send({ typeUrl: TypeUrl.Listener });
      const first = await stream.next(10_000);
      stream.ack(first);
      expect(catchAll(first)).toBe('BlackHoleCluster');

      await putConfigMap('mesh', { mesh: 'outboundTrafficPolicy: { mode: ALLOW_ANY }\n' });
      // the proxy gets a push with the new listeners (pushes for other events of the shared plane
      // may come first; each is ACKed and must still be a listener push)
      const deadline = Date.now() + 15_000;
      let pushed = await stream.next(15_000);
      for (;;) {
        expect(pushed.typeUrl).toBe(TypeUrl.Listener);
        stream.ack(pushed);
        if (catchAll(pushed) === 'PassthroughCluster' || Date.now() > deadline) break;
        pushed = await stream.next(Math.max(1, deadline - Date.now()));
      }
      expect(catchAll(pushed)).toBe('PassthroughCluster');

      const before = await daemon.metric('disc_total_rejected_configs', { type: 'MeshConfig' });
      await putConfigMap('mesh', { mesh: 'outboundTrafficPolicy: { mode: NEVER }\n' });
      await eventually('the rejection to be counted', async () => (await daemon!.metric('disc_total_rejected_configs', { type: 'MeshConfig' })) === before + 1, { timeoutMs: 15_000 });
      expect(daemon.logs()).toContain(`ConfigMap ${ns}/mesh key mesh rejected: outboundTrafficPolicy.mode`);
      // the refused edit changes nothing for the proxy (a response that still arrives, e.g. from
      // other cluster events of the shared plane, carries the same catch-all)
      for (const late of await stream.quiet(1500)) {
        if (late.typeUrl === TypeUrl.Listener) expect(catchAll(late)).toBe('PassthroughCluster');
      }
    } finally {
      stream.cancel();
      await deleteConfigMap('mesh').catch(() => undefined);
    }
  }, 120_000);
});
