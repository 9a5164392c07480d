/**
 * MCS parts on the local control plane: the auto-export controller (ENABLE_MCS_AUTOEXPORT) creates
 * an owned ServiceExport per Service except cluster-local ones, follows mesh config changes and
 * leaves hand-made exports alone; and a daemon with ENABLE_MCS_HOST and ENABLE_MCS_AUTOEXPORT serves
 * `<svc>.<ns>.svc.clusterset.local` with the Service's endpoints and, as leader, exports the Service.
 */
import pino from 'pino';
import { clusterLocalMatcher } from '../../src/controllers/service-export/cluster-local.js';
import { AUTO_EXPORT_LABEL, ServiceExportController } from '../../src/controllers/service-export/controller.js';
import type { KubeObject } from '../../src/kube/types.js';
import { CLUSTER_START_TIMEOUT_MS } from '../support/cluster.js';
import { startDaemon, type Daemon } from '../support/daemon.js';
import { applyServiceExportCrd } from '../support/service-export-crd.js';
import { applyMeshCrds, createNamespace, deleteNamespace, kubeTestEnv, type KubeTestEnv } from '../kube/helpers.js';
import { eventually } from '../support/eventually.js';

let env: KubeTestEnv;
let ns: string;

beforeAll(async () => {
  env = await kubeTestEnv();
  // The daemon started below reads the config kinds from the CRDs: they must be served.
  await applyMeshCrds(env.client);
  await applyServiceExportCrd(env.client);
  ns = await createNamespace(env.client, 'mcs');
}, CLUSTER_START_TIMEOUT_MS);

afterAll(async () => {
  await deleteNamespace(env?.client, ns);
  env?.client.close();
});

const exportRef = (name: string) => ({ apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ServiceExport', namespace: ns, name });

async function createService(name: string, withSlice = false): Promise<KubeObject> {
  const svc = await env.client.create({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: ns },
    spec: { ports: [{ name: 'http', port: 8080, targetPort: 8080 }] },
  } as KubeObject);
  if (withSlice) {
    await env.client.create({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `${name}-1`, namespace: ns, labels: { 'kubernetes.io/service-name': name } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.9.0.1'], conditions: { ready: true } }],
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    } as KubeObject);
  }
  return svc;
}

describe('cluster-local host patterns', () => {
  it('matches exact hosts, wildcard suffixes and *', () => {
    const m = clusterLocalMatcher(['db.a.svc.cluster.local', '*.kube-system.svc.cluster.local']);
    expect(m('db.a.svc.cluster.local')).toBe(true);
    expect(m('DB.a.svc.cluster.local')).toBe(true);
    expect(m('kube-dns.kube-system.svc.cluster.local')).toBe(true);
    expect(m('web.a.svc.cluster.local')).toBe(false);
    expect(clusterLocalMatcher(['*'])('anything.x.svc.cluster.local')).toBe(true);
    expect(clusterLocalMatcher([])('web.a.svc.cluster.local')).toBe(false);
  });
});

describe('ServiceExportController', () => {
  it('exports every Service but cluster-local ones, following mesh changes and Service deletion', async () => {
    const web = await createService('web');
    await createService('db');
    await createService('manual');
    await env.client.create({ ...exportRef('manual'), metadata: { name: 'manual', namespace: ns } });
    let clusterLocal = [`db.${ns}.svc.cluster.local`, `manual.${ns}.svc.cluster.local`];
    const listeners = new Set<() => void>();
    const controller = new ServiceExportController({
      client: env.client,
      domain: 'cluster.local',
      clusterLocalHosts: () => clusterLocal,
      onMeshChange: (l) => {
        listeners.add(l);
        return () => listeners.delete(l);
      },
      crdPollMs: 200,
      log: pino({ level: 'silent' }),
    });
    const abort = new AbortController();
    const running = controller.run(abort.signal);
    try {
      const exported = await eventually('the web export', () => env.client.find<KubeObject>(exportRef('web')), { timeoutMs: 20_000 });
      expect(exported.metadata?.ownerReferences).toEqual([expect.objectContaining({ apiVersion: 'v1', kind: 'Service', name: 'web', uid: web.metadata?.uid })]);
      expect(exported.metadata?.labels?.[AUTO_EXPORT_LABEL]).toBe('true');
      await new Promise((r) => setTimeout(r, 500));
      expect(await env.client.find(exportRef('db'))).toBeUndefined();

      // web becomes cluster-local: its export goes; the hand-made export of a cluster-local service stays
      clusterLocal = [`*.${ns}.svc.cluster.local`];
      for (const l of listeners) l();
      await eventually('the web export to go', async () => (await env.client.find(exportRef('web'))) === undefined, { timeoutMs: 20_000 });
      expect(await env.client.find(exportRef('manual'))).toBeDefined();

      // no longer cluster-local: exported again
      clusterLocal = [];
      for (const l of listeners) l();
      await eventually('db to be exported', () => env.client.find(exportRef('db')), { timeoutMs: 20_000 });
      await eventually('web to be exported again', () => env.client.find(exportRef('web')), { timeoutMs: 20_000 });

      // deleting the Service takes its export with it (owner reference, garbage collector)
      await env.client.delete({ apiVersion: 'v1', kind: 'Service', namespace: ns, name: 'web' });
      await eventually('the export of the deleted Service to go', async () => (await env.client.find(exportRef('web'))) === undefined, { timeoutMs: 60_000 });
    } finally {
      abort.abort();
      await running;
    }
  }, 120_000);
});

describe('a daemon with ENABLE_MCS_HOST and ENABLE_MCS_AUTOEXPORT', () => {
  let daemon: Daemon | undefined;
  afterAll(async () => {
    await daemon?.stop();
  }, 30_000);

  it('serves the clusterset.local alias with the endpoints of the Service and exports it as leader', async () => {
    await createService('echo', true);
    daemon = await startDaemon({
      registries: 'Cluster',
      args: ['--clusterconfig', env.cluster.kubeconfig],
      env: { POD_NAMESPACE: ns, POD_NAME: 'meshd-mcs-0', ENABLE_MCS_HOST: 'true', ENABLE_MCS_AUTOEXPORT: 'true', DISC_USE_ENDPOINT_SLICE: 'true' },
      readyTimeoutMs: 60_000,
    });
    const alias = `echo.${ns}.svc.clusterset.local`;
    type Eps = Array<{ hostname: string; endpoints: Array<{ address: string }> }>;
    let last: Eps = [];
    const eps = await eventually(
      'the alias in endpointz',
      async () => {
        last = (await daemon!.debug('endpointz')) as Eps;
        const a = last.find((s) => s.hostname === alias);
        return a && a.endpoints.length > 0 ? last : undefined;
      },
      { timeoutMs: 20_000 },
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}; endpointz of ${ns}: ${JSON.stringify(last.filter((s) => s.hostname.includes(ns)))}\n${daemon?.logs().slice(-3000)}`);
    });
    const own = eps.find((s) => s.hostname === `echo.${ns}.svc.cluster.local`);
    expect(eps.find((s) => s.hostname === alias)?.endpoints.map((e) => e.address)).toEqual(own?.endpoints.map((e) => e.address));
    const services = (await daemon.debug('registryz')) as Array<{ hostname: string; ports: Array<{ port: number }>; addresses: string[] }>;
    expect(services.find((s) => s.hostname === alias)?.ports.map((p) => p.port)).toEqual([8080]);

    const exported = await eventually('the daemon to export echo', () => env.client.find<KubeObject>(exportRef('echo')), { timeoutMs: 30_000 });
    expect(exported.metadata?.ownerReferences?.[0]?.name).toBe('echo');
  }, 120_000);
});
