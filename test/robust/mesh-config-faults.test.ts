/**
 * The `--meshConfig` and `--networksConfig` files faulting at run time: a file that was read and
 * then disappears or cannot be read keeps its last good settings, says so in one error line and is
 * counted in disc_mesh_config_lost{file}; it is read again once it is back. Before, a vanished mesh
 * config fell back to the defaults (logged at info, counted nowhere), and a networks file that
 * could not be read was taken as an empty one.
 */
import { jest } from '@jest/globals';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { openMeshSources } from '../../src/bootstrap/mesh-config-map.js';
import type { DiscoveryResponse } from '../../src/gen/envoy/service/discovery/v3/discovery.js';
import type { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import { Any } from '../../src/gen/google/protobuf/any.js';
import { TypeUrl } from '../../src/xds/types.js';
import { SotwStream } from '../support/ads-client.js';
import { decodeResource, tcpProxiesOf } from '../support/decode.js';
import { makeConfigDir, startDaemon, writeFileAtomic, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { meshObjects, sidecarNode } from './support.js';

jest.setTimeout(90_000);

/** The cluster of the catch-all chain of the virtualOutbound listener. */
function catchAll(res: DiscoveryResponse): string {
  const listeners = res.resources.map((r) => decodeResource(TypeUrl.Listener, Any.encode(r).finish()) as Listener);
  const outbound = listeners.find((l) => l.name === 'virtualOutbound');
  return (outbound && tcpProxiesOf(outbound)[0]?.cluster) ?? '(none)';
}

describe('a --meshConfig file that disappears at run time (real daemon)', () => {
  let dir: Awaited<ReturnType<typeof makeConfigDir>>;
  let meshDir: string;
  let d: Daemon;
  let n = 0;

  /** The catch-all cluster a new sidecar gets now. */
  async function newSidecarCatchAll(): Promise<string> {
    const s = new SotwStream(d.grpcAddr, sidecarNode(++n));
    try {
      s.send({ typeUrl: TypeUrl.Listener });
      return catchAll(await s.nextMatching((r) => r.typeUrl === TypeUrl.Listener, 10_000));
    } finally {
      s.close();
    }
  }

  beforeAll(async () => {
    dir = await makeConfigDir();
    await dir.write('mesh.yaml', meshObjects(3));
    meshDir = await mkdtemp(join(tmpdir(), 'mesh-config-faults-'));
    await writeFile(join(meshDir, 'mesh'), 'outboundTrafficPolicy: { mode: REGISTRY_ONLY }\n');
    d = await startDaemon({ configDir: dir.path, meshConfig: join(meshDir, 'mesh') });
  });

  afterAll(async () => {
    await d?.stop();
    await dir?.cleanup();
    await rm(meshDir, { recursive: true, force: true });
  });

  it('keeps the last good settings, logs an error and counts it; reads the file again when it is back', async () => {
    expect(await newSidecarCatchAll()).toBe('BlackHoleCluster');
    await rm(join(meshDir, 'mesh'));
    await eventually('the loss to be counted', async () => (await d.metric('disc_mesh_config_lost', { file: 'meshConfig' })) === 1, { timeoutMs: 10_000 });
    expect(d.logs()).toMatch(/\terror\t[^\n]*mesh config file [^\n]*cannot be read \(ENOENT\): keeping the last good settings/);
    // before: the defaults (ALLOW_ANY, the passthrough cluster) went to every proxy
    expect(await newSidecarCatchAll()).toBe('BlackHoleCluster');
    await new Promise((r) => setTimeout(r, 2500)); // more polls of the missing file: one loss, one count
    expect(await d.metric('disc_mesh_config_lost', { file: 'meshConfig' })).toBe(1);

    await writeFileAtomic(join(meshDir, 'mesh'), 'outboundTrafficPolicy: { mode: ALLOW_ANY }\n');
    await eventually('the file to be read again', async () => (await newSidecarCatchAll()) === 'PassthroughCluster', { timeoutMs: 15_000 });
  });
});

describe('a --networksConfig file that cannot be read', () => {
  it('keeps the last good networks instead of taking it as empty', async () => {
    const tmp = await mkdtemp(join(tmpdir(), 'mesh-networks-faults-'));
    const lines: string[] = [];
    const log = pino({ level: 'info' }, new Writable({ write: (c: Buffer, _e, done) => (lines.push(c.toString('utf8')), done()) }));
    const lost: string[] = [];
    const networksFile = join(tmp, 'meshNetworks');
    await writeFile(networksFile, 'networks:\n  net1:\n    endpoints: [{ fromRegistry: Kubernetes }]\n    gateways: [{ address: 1.2.3.4, port: 15443 }]\n');
    const sources = await openMeshSources({
      meshConfigFile: join(tmp, 'absent-mesh'),
      networksConfigFile: networksFile,
      base: { domain: 'cluster.local', clusterId: 'Cluster' },
      log,
      onFileLost: (f) => lost.push(f),
    });
    try {
      expect(Object.keys(sources.networks.current().networks ?? {})).toEqual(['net1']);
      // unreadable (a directory where the file was: EISDIR; the tests run as root, so a mode would not do)
      await rm(networksFile);
      await mkdir(networksFile);
      await eventually('the fault to be reported', () => lost.length > 0, { timeoutMs: 10_000 });
      expect(lost).toEqual(['networksConfig']);
      expect(lines.join('')).toMatch(/"level":50[^\n]*mesh networks file [^\n]*cannot be read \((EISDIR|ENOENT)\)/);
      expect(Object.keys(sources.networks.current().networks ?? {})).toEqual(['net1']);
      // back, with other content: read again
      await rm(networksFile, { recursive: true });
      await writeFile(networksFile, 'networks:\n  net2:\n    endpoints: [{ fromRegistry: Kubernetes }]\n    gateways: [{ address: 1.2.3.5, port: 15443 }]\n');
      await eventually('the file to be read again', () => Object.keys(sources.networks.current().networks ?? {})[0] === 'net2', { timeoutMs: 10_000 });
      expect(lost).toEqual(['networksConfig']);
    } finally {
      await sources.stop();
      await rm(tmp, { recursive: true, force: true });
    }
  });
});
