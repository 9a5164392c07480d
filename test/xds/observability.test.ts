/**
 * Tracing and access logs reach the proxies (docs/adr/0176): with the mesh config's `enableTracing`
 * every HTTP connection manager of a sidecar (outbound and inbound) and of a gateway samples the
 * proxy's own `tracing.sampling` (PROXY_CONFIG node metadata), else DISC_TRACE_SAMPLING; the mesh
 * config's `accessLogFile` becomes a file access log. Decoded with the Envoy protos here; the daemon
 * half starts meshd with a mesh config file, passes its output through xds-validate, and turns
 * tracing off under a connected sidecar.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelFromYaml, router, sidecar, TypeUrl } from '../support/model.js';
import { hcmOf } from '../support/decode.js';
import { makeConfigDir, startDaemon, type ConfigDir, type Daemon } from '../support/daemon.js';
import { goToolPath, GO_TOOL_BUILD_TIMEOUT_MS, runXdsValidate, type XdsValidateReport } from '../support/go-tools.js';
import { SotwStream } from '../support/ads-client.js';
import { eventually } from '../support/eventually.js';
import { Listener } from '../../src/gen/envoy/config/listener/v3/listener.js';
import { FileAccessLog } from '../../src/gen/envoy/extensions/access_loggers/file/v3/file.js';
import type { HttpConnectionManager } from '../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.js';
import type { Proxy } from '../../src/model/proxy.js';

const CONFIG = `
apiVersion: networking.mesh.io/v1
kind: ServiceEntry
metadata: { name: echo, namespace: default }
spec:
  hosts: [echo.example.com]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: 8080, name: http, protocol: HTTP }]
  endpoints: [{ address: 10.9.0.1, labels: { app: echo } }]
---
apiVersion: networking.mesh.io/v1
kind: Gateway
metadata: { name: public, namespace: mesh-system }
spec:
  selector: { app: mesh-ingressgateway }
  servers: [{ port: { number: 80, name: http, protocol: HTTP }, hosts: ["*/echo.example.com"] }]
---
apiVersion: networking.mesh.io/v1
kind: VirtualService
metadata: { name: public, namespace: default }
spec:
  hosts: [echo.example.com]
  gateways: [mesh-system/public]
  http: [{ route: [{ destination: { host: echo.example.com } }] }]
`;

/** Every HTTP connection manager of the proxy's listeners. */
function managers(listeners: ReadonlyArray<Listener>): HttpConnectionManager[] {
  return listeners.flatMap((l) => hcmOf(l));
}

const client = sidecar('10.9.0.7', 'client-1');
const echo = sidecar('10.9.0.1', 'echo-1', 'default', { app: 'echo' });
const gateway = router();
const withSampling = (p: Proxy, sampling: number, maxPathTagLength?: number): Proxy => ({
  ...p,
  metadata: { ...p.metadata, PROXY_CONFIG: { tracing: { sampling, ...(maxPathTagLength ? { maxPathTagLength } : {}) } } },
});

describe('tracing and access logs in the generated listeners', () => {
  it('adds neither by default', () => {
    const m = modelFromYaml(CONFIG);
    for (const p of [client, echo, gateway]) {
      const hcms = managers(m.generate(p, TypeUrl.Listener));
      expect(hcms.length).toBeGreaterThan(0);
      for (const h of hcms) {
        expect(h.tracing).toBeUndefined();
        expect(h.accessLog).toEqual([]);
      }
    }
  });

  it('samples DISC_TRACE_SAMPLING on every HTTP manager of sidecars and gateways when tracing is on', () => {
    const m = modelFromYaml(CONFIG, { mesh: { enableTracing: true }, settings: { traceSampling: 7.5 } });
    for (const p of [client, echo, gateway]) {
      const hcms = managers(m.generate(p, TypeUrl.Listener));
      expect(hcms.length).toBeGreaterThan(0);
      for (const h of hcms) {
        expect(h.tracing?.randomSampling?.value).toBe(7.5);
        expect(h.tracing?.maxPathTagLength).toBe(256);
      }
    }
  });

  it("uses the proxy's own ProxyConfig sampling over the daemon's, without touching other proxies' listeners", () => {
    const m = modelFromYaml(CONFIG, { mesh: { enableTracing: true }, settings: { traceSampling: 1 } });
    const own = managers(m.generate(withSampling(client, 100, 64), TypeUrl.Listener));
    for (const h of own) {
      expect(h.tracing?.randomSampling?.value).toBe(100);
      expect(h.tracing?.maxPathTagLength).toBe(64);
    }
    // the shared listener cache keeps the two apart
    for (const h of managers(m.generate(client, TypeUrl.Listener))) expect(h.tracing?.randomSampling?.value).toBe(1);
    // a malformed value in the metadata is not used
    for (const h of managers(m.generate(withSampling(client, 250), TypeUrl.Listener))) expect(h.tracing?.randomSampling?.value).toBe(1);
  });

  it('writes the access log to accessLogFile', () => {
    const m = modelFromYaml(CONFIG, { mesh: { accessLogFile: '/dev/stdout' } });
    for (const p of [client, echo, gateway]) {
      for (const h of managers(m.generate(p, TypeUrl.Listener))) {
        expect(h.tracing).toBeUndefined();
        expect(h.accessLog.map((a) => a.name)).toEqual(['envoy.access_loggers.file']);
        expect(FileAccessLog.decode(h.accessLog[0].typedConfig!.value).path).toBe('/dev/stdout');
      }
    }
  });
});

describe('tracing and access logs from a running daemon', () => {
  let bin: string;
  let config: ConfigDir;
  let daemon: Daemon;
  let work: string;
  let meshConfig: string;
  const NODE = 'sidecar~10.9.0.7~client-1.default~default.svc.cluster.local';
  const META = { NAMESPACE: 'default', PROXY_CONFIG: { tracing: { sampling: 42 } } };

  beforeAll(async () => {
    bin = await goToolPath('xds-validate');
    work = await mkdtemp(join(tmpdir(), 'mesh-observability-'));
    meshConfig = join(work, 'mesh.yaml');
    await writeFile(meshConfig, 'enableTracing: true\naccessLogFile: /dev/stdout\n');
    config = await makeConfigDir();
    await config.write('config.yaml', CONFIG);
    daemon = await startDaemon({ configDir: config.path, meshConfig, env: { DISC_TRACE_SAMPLING: '5' } });
  }, GO_TOOL_BUILD_TIMEOUT_MS);

  afterAll(async () => {
    await daemon?.stop();
    await config?.cleanup();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('serves listeners with tracing and access logs that pass Envoy validation', async () => {
    const report = await runXdsValidate<XdsValidateReport>(bin, [
      ...['-addr', daemon.grpcAddr, '-node-id', NODE, '-metadata', JSON.stringify(META), '-timeout', '30s', '-dump'],
    ]);
    expect(report.errors).toEqual([]);
    expect(report.ok).toBe(true);
    const text = JSON.stringify(report.dump['type.googleapis.com/envoy.config.listener.v3.Listener']);
    expect(text).toContain('envoy.access_loggers.file');
    expect(text).toContain('"random_sampling":{"value":42}');
  }, 120_000);

  it('a mesh config edit turning tracing off reaches a connected sidecar', async () => {
    const stream = new SotwStream(daemon.grpcAddr, { id: 'sidecar~10.9.0.8~client-2.default~default.svc.cluster.local', metadata: { NAMESPACE: 'default' } });
    try {
      stream.send({ typeUrl: TypeUrl.Listener });
      const first = await stream.nextMatching((r) => r.typeUrl === TypeUrl.Listener, 10_000);
      stream.ack(first);
      const sampled = (res: typeof first): Array<number | undefined> =>
        managers(res.resources.map((a) => Listener.decode(a.value))).map((h) => h.tracing?.randomSampling?.value);
      expect(new Set(sampled(first))).toEqual(new Set([5]));
      await writeFile(meshConfig, 'enableTracing: false\naccessLogFile: /dev/stdout\n');
      const last = await eventually(
        'listeners without tracing',
        () => {
          const l = [...stream.responses].reverse().find((r) => r.typeUrl === TypeUrl.Listener);
          return l && sampled(l).every((v) => v === undefined) ? l : undefined;
        },
        { timeoutMs: 15_000 },
      );
      expect(sampled(last).length).toBeGreaterThan(0);
    } finally {
      stream.close();
    }
  }, 60_000);
});
