/**
 * Config-source faults against a real daemon on file config (loopback): a typo in a document's
 * `kind` keeps the object that was valid there, the --configDir directory disappearing keeps the
 * last good configuration (logged, counted in disc_config_dir_lost), and only removing a file
 * removes its configuration. What proxies get is read over xDS.
 */
import { jest } from '@jest/globals';
import { mkdir, rm } from 'node:fs/promises';
import { TypeUrl } from '../../src/xds/types.js';
import { SotwStream, namesOf } from '../support/ads-client.js';
import { makeConfigDir, startDaemon, toYamlDocuments, writeFileAtomic, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { meshObjects, sidecarNode } from './support.js';
import { join } from 'node:path';

jest.setTimeout(90_000);

const cluster = (host: string): string => `outbound|8080||${host}`;
const EXTRA = 'extra.ns-0.svc.cluster.local';

function extra(kind: string): object {
  return {
    apiVersion: 'networking.mesh.io/v1',
    kind,
    metadata: { name: 'extra', namespace: 'ns-0' },
    spec: { hosts: [EXTRA], location: 'MESH_INTERNAL', resolution: 'STATIC', ports: [{ number: 8080, name: 'http', protocol: 'HTTP' }], endpoints: [{ address: '10.3.0.1' }] },
  };
}

describe('config-source faults', () => {
  let dir: Awaited<ReturnType<typeof makeConfigDir>>;
  let d: Daemon;
  let n = 0;

  /** The clusters a new sidecar gets now. */
  async function clusters(): Promise<string[]> {
    const s = new SotwStream(d.grpcAddr, sidecarNode(++n));
    try {
      s.send({ typeUrl: TypeUrl.Cluster });
      return namesOf(await s.nextMatching((r) => r.typeUrl === TypeUrl.Cluster, 10_000));
    } finally {
      s.close();
    }
  }

  beforeAll(async () => {
    dir = await makeConfigDir();
    await dir.write('mesh.yaml', meshObjects(5));
    await dir.write('extra.yaml', extra('ServiceEntry'));
    d = await startDaemon({ configDir: dir.path });
  });

  afterAll(async () => {
    await d?.stop();
    await dir?.cleanup();
  });

  it('a typo in kind keeps the object that was valid in that document', async () => {
    expect(await clusters()).toContain(cluster(EXTRA));
    await dir.write('extra.yaml', extra('ServiceEntri'));
    await eventually('the refused document to be logged', () => d.logs().includes('ServiceEntri'), { timeoutMs: 10_000 });
    expect(await clusters()).toContain(cluster(EXTRA));
    // a valid version replaces it as usual
    await dir.write('extra.yaml', extra('ServiceEntry'));
  });

  it('the directory disappearing keeps the last good configuration, loudly and counted; removing a file removes its objects', async () => {
    const before = (await clusters()).sort();
    expect(before).toContain(cluster('svc-0.ns-0.svc.cluster.local'));
    await rm(dir.path, { recursive: true, force: true });
    await eventually('the loss to be counted', async () => (await d.metric('disc_config_dir_lost')) === 1, { timeoutMs: 10_000, diagnostics: () => d.logs().slice(-2000) });
    expect(d.logs()).toMatch(/config directory .* does not exist any more: keeping the last good configuration/);
    // a while later (several rescans), proxies still get everything
    await new Promise((r) => setTimeout(r, 1500));
    expect((await clusters()).sort()).toEqual(before);
    // the directory comes back without extra.yaml: that file is gone, the rest stays
    await mkdir(dir.path);
    await writeFileAtomic(join(dir.path, 'mesh.yaml'), toYamlDocuments(meshObjects(5)));
    await eventually('extra.yaml\'s object to go', async () => !(await clusters()).includes(cluster(EXTRA)), { timeoutMs: 15_000 });
    await eventually('mesh.yaml\'s objects to be served', async () => (await clusters()).includes(cluster('svc-0.ns-0.svc.cluster.local')), { timeoutMs: 15_000 });
    expect(await d.metric('disc_config_dir_lost')).toBe(1);
  });
});
