/**
 * The config CRD source's metrics on a daemon with `--registries Cluster` against the local plane's
 * real API server: each custom-resource event is counted in disc_cluster_cfg_events, converted
 * (cfg_source_cluster_dynamic_converter_*) and handled (cfg_source_cluster_event_*); an object the
 * semantic checks refuse counts as a failed conversion and an event error (docs/adr/0175).
 */
import { jest } from '@jest/globals';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { KubeClient } from '../src/kube/client.js';
import { applyMeshCrds, createNamespace, deleteNamespace, kubeTestEnv } from '../test/kube/helpers.js';
import { startDaemon, type Daemon } from '../test/support/daemon.js';
import { eventually } from '../test/support/eventually.js';

jest.setTimeout(120_000);

let client: KubeClient;
let ns: string;
let dir: string;
let daemon: Daemon;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mesh-cfg-metrics-'));
  const env = await kubeTestEnv();
  client = env.client;
  await applyMeshCrds(client);
  ns = await createNamespace(client, 'cfg-metrics');
  fs.writeFileSync(path.join(dir, 'mesh.yaml'), `rootNamespace: ${ns}\n`);
  daemon = await startDaemon({ registries: 'Cluster', meshConfig: path.join(dir, 'mesh.yaml'), args: ['--clusterconfig', env.cluster.kubeconfig], env: { POD_NAMESPACE: ns, POD_NAME: 'meshd-0' }, readyTimeoutMs: 60_000 });
}, 180_000);

afterAll(async () => {
  await daemon?.stop();
  await deleteNamespace(client, ns);
  client?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}, 60_000);

const vs = (name: string, spec: object): object => ({ apiVersion: 'networking.mesh.io/v1', kind: 'VirtualService', metadata: { name, namespace: ns }, spec });

describe('config CRD source metrics', () => {
  it('counts add, update and delete events, conversions, and a refused object as an error', async () => {
    const m = (name: string, labels: Record<string, string> = { kind: 'VirtualService' }): Promise<number> => daemon.metric(name, labels);
    const ok0 = await m('cfg_source_cluster_event_success_total');
    const conv0 = await m('cfg_source_cluster_dynamic_converter_success_total');
    const adds0 = await m('disc_cluster_cfg_events', { type: 'VirtualService', event: 'add' });

    await client.create(vs('good', { hosts: ['good.example.com'], http: [{ route: [{ destination: { host: 'good.example.com' } }] }] }) as never);
    await eventually('the add to be counted', async () => (await m('disc_cluster_cfg_events', { type: 'VirtualService', event: 'add' })) === adds0 + 1, { timeoutMs: 20_000 });
    await eventually('the add to be handled', async () => (await m('cfg_source_cluster_event_success_total')) === ok0 + 1);
    expect(await m('cfg_source_cluster_dynamic_converter_success_total')).toBe(conv0 + 1);

    // a delegate (no hosts) that lists gateways: the API server stores it, meshd's checks refuse it
    const err0 = await m('cfg_source_cluster_event_error_total');
    const fail0 = await m('cfg_source_cluster_dynamic_converter_failure_total');
    await client.create(vs('bad', { gateways: ['gw'], http: [{ route: [{ destination: { host: 'good.example.com' } }] }] }) as never);
    await eventually('the refusal to be counted', async () => (await m('cfg_source_cluster_event_error_total')) === err0 + 1, { timeoutMs: 20_000 });
    expect(await m('cfg_source_cluster_dynamic_converter_failure_total')).toBe(fail0 + 1);

    const dels0 = await m('disc_cluster_cfg_events', { type: 'VirtualService', event: 'delete' });
    await client.delete({ apiVersion: 'networking.mesh.io/v1', kind: 'VirtualService', namespace: ns, name: 'good' });
    await eventually('the delete to be counted', async () => (await m('disc_cluster_cfg_events', { type: 'VirtualService', event: 'delete' })) === dels0 + 1, { timeoutMs: 20_000 });
    await eventually('the delete to be handled', async () => (await m('cfg_source_cluster_event_success_total')) === ok0 + 2);
    // every event reached the runtime processor
    expect(await daemon.metric('cfg_runtime_processor_events_processed_total')).toBeGreaterThanOrEqual(2);
  });
});
