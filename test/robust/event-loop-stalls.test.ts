/**
 * Big synchronous work does not hold the daemon's event loop (issue 15): rendering /debug/syncz for
 * connections with large subscriptions (tens of MB of JSON), and loading a ~12 MB configuration file
 * into a running daemon (thousands of documents, also with YAML directives and end markers), leave
 * the loop free often enough that a well-behaved `GET /ready` is still answered promptly. The longest `/ready` round trip, polled back to back from this process, is an upper
 * bound of the daemon's longest stall plus loopback latency (docs/adr/0113, docs/adr/0163).
 */
import { jest } from '@jest/globals';
import { request } from 'node:http';
import { TypeUrl } from '../../src/xds/types.js';
import { queryDebug } from '../../src/cli/meshctl/diag/xds-client.js';
import { SotwStream } from '../support/ads-client.js';
import { makeConfigDir, startDaemon, toYamlDocuments, type Daemon } from '../support/daemon.js';
import { eventually } from '../support/eventually.js';
import { meshObjects, sampleRss, sidecarNode } from './support.js';

jest.setTimeout(120_000);


function get(addr: string, path: string): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const [host, port] = addr.split(':');
    const req = request({ host, port: Number(port), path, agent: false, timeout: 20_000 }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer within 20 s`)));
    req.end();
  });
}

/** Polls `/ready` back to back until stopped; the longest round trip and how many answered. */
function probeReady(addr: string): { stop(): Promise<{ longestMs: number; answered: number }> } {
  let running = true;
  let longestMs = 0;
  let answered = 0;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      const { status } = await get(addr, '/ready').catch(() => ({ status: 0 }));
      longestMs = Math.max(longestMs, performance.now() - t0);
      if (status === 200) answered++;
      await new Promise((r) => setTimeout(r, 5));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { longestMs, answered };
    },
  };
}

describe('event-loop stalls', () => {
  let dir: Awaited<ReturnType<typeof makeConfigDir>>;
  let d: Daemon;
  const streams: SotwStream[] = [];

  beforeAll(async () => {
    dir = await makeConfigDir();
    await dir.write('mesh.yaml', meshObjects(5));
    d = await startDaemon({ configDir: dir.path });
  });

  afterAll(async () => {
    for (const s of streams) s.close();
    await d?.stop();
    await dir?.cleanup();
  });

  it('serving /debug/syncz for connections with large subscriptions', async () => {
    const names = (k: number): string[] => Array.from({ length: 20_000 }, (_, i) => `outbound|8080||service-${k}-${i}.some-namespace.svc.cluster.local`);
    for (let k = 0; k < 60; k++) {
      const s = new SotwStream(d.grpcAddr, sidecarNode(1000 + k));
      s.send({ typeUrl: TypeUrl.Endpoint, names: names(k) });
      streams.push(s);
    }
    await eventually('every stream to be watched', async () => {
      const status = (await d.debug('push_status').catch(() => ({ connections: 0 }))) as { connections: number };
      return status.connections >= streams.length;
    }, { timeoutMs: 30_000 });
    const probe = probeReady(d.monitoringAddr);
    await new Promise((r) => setTimeout(r, 100));
    const t0 = performance.now();
    const syncz = await get(d.httpAddr, '/debug/syncz');
    const tookMs = performance.now() - t0;
    const { longestMs, answered } = await probe.stop();
    process.stdout.write(`syncz ${(syncz.bytes / 1e6).toFixed(1)} MB in ${tookMs.toFixed(0)} ms: longest /ready round trip ${longestMs.toFixed(0)} ms (${answered} answered)\n`);
    expect(syncz.status).toBe(200);
    expect(syncz.bytes).toBeGreaterThan(60_000_000);
    expect(answered).toBeGreaterThan(5);
    // rendered and written in one piece, the whole render was one stall (429 of 600 ms); streamed,
    // the longest is a small part of it (253 of 1,500 ms), also on a loaded machine
    expect(longestMs).toBeLessThan(tookMs / 3);
  });

  it('answering syncz over the xDS debug channel (meshctl proxy-status) for the same connections', async () => {
    // the streams of the case above are still connected
    const probe = probeReady(d.monitoringAddr);
    await new Promise((r) => setTimeout(r, 100));
    const t0 = performance.now();
    const flags = { xdsAddress: '', xdsPort: 0, xdsLabel: '', plaintext: true, insecure: false, certDir: '', authority: '', revision: '', timeoutMs: 60_000, meshNamespace: 'mesh-system' };
    const [result] = await queryDebug<unknown[]>(flags, [{ name: 'meshd', address: d.grpcAddr }], 'syncz');
    const tookMs = performance.now() - t0;
    const { longestMs, answered } = await probe.stop();
    process.stdout.write(`xDS syncz: ${result.body?.length ?? 0} entries in ${tookMs.toFixed(0)} ms: longest /ready round trip ${longestMs.toFixed(0)} ms (${answered} answered)\n`);
    expect(result.error).toBeUndefined();
    expect(result.body!.length).toBeGreaterThanOrEqual(streams.length);
    expect(answered).toBeGreaterThan(5);
    // rendered in one piece (JSON.stringify of the whole view), the render was one stall, nearly all
    // of the time. Rendered over turns, what remains is the one message the answer is sent in, and
    // this test process's own decoding of it (the probe shares its event loop): 21-38 % of the time
    // measured (1.19 of 5.6 s quiet; 1.29 of 3.4 s in a full CI run). Sent in parts of whole items,
    // which meshctl parses and joins one by one (docs/adr/0185): 7 % (336 of 4,780 ms at load 13).
    expect(longestMs).toBeLessThan(tookMs / 5);
  });
});

/**
 * ~12 MB of configuration in one file: 6,000 services, each a ServiceEntry with 24 endpoints, a
 * DestinationRule with two subsets, and for every fifth a VirtualService (13,200 documents).
 */
const BIG_SERVICES = 6_000;
const BIG_ENDPOINTS = 24;

type Shape = 'documents' | 'directives' | 'one document';

/** The big file in one of its shapes, and what the daemon holds once it is loaded (on top of meshObjects(5)). */
function bigFile(shape: Shape): { text: string; services: number; virtualServices: number; endpoints: number } {
  if (shape === 'one document') return { text: hugeDocument(), services: 1, virtualServices: 0, endpoints: HUGE_ENDPOINTS };
  // other names and addresses than the small file's, so that nothing is refused as a duplicate
  const objects = meshObjects(BIG_SERVICES, BIG_ENDPOINTS).map((o) => JSON.parse(JSON.stringify(o).replaceAll('svc-', 'big-').replaceAll('240.240.', '240.250.')) as object);
  const docs = toYamlDocuments(objects);
  // a directive before the first document, and every document closed by an end marker
  const text = shape === 'directives' ? `%YAML 1.2\n---\n${docs.replaceAll('---\n', '...\n---\n')}...\n` : docs;
  return { text, services: BIG_SERVICES, virtualServices: BIG_SERVICES / 5, endpoints: BIG_SERVICES * BIG_ENDPOINTS };
}

interface PushStatus {
  services: number;
  virtualServices: number;
  endpoints: number;
}

/**
 * Bound of the longest /ready round trip while a 12 MB file loads, stated for a busy 2-core machine
 * (load average 8 to 17 while this was measured): 5 s. Before docs/adr/0163 /ready went unanswered
 * for over a minute (the probe gives up at 20 s); after it, 0.4 to 1.1 s at load 8 and 2.1 s at
 * load 17: what is left is the store's one change and the snapshot rebuild, each synchronous.
 */
const LOAD_STALL_BOUND_MS = 5_000;

/**
 * Bound of the daemon's own longest event-loop stall (ControlZ `/loopj`) while the 12 MB document of
 * one ServiceEntry loads, stated for a busy 2-core machine: 500 ms. Before docs/adr/0204 the result
 * of the worker was one structured clone and the registry's 200,000 endpoints one computation:
 * 0.53 to 1.5 s at load average 7 to 10; after it, 135 to 224 ms at load average 7 to 15 (bench/big-document.mjs and this test),
 * what is left being slices of ~5 ms stretched by the machine's load and garbage collection.
 */
const ONE_DOCUMENT_STALL_BOUND_MS = 500;

/** `GET /loopj` of the daemon's ControlZ: its event-loop figures over a window of about a minute. */
async function loopFigures(d: Daemon): Promise<{ windowSeconds: number; delayMs: { max: number } }> {
  const res = await fetch(`http://${d.ctrlzAddr}/loopj`);
  if (!res.ok) throw new Error(`GET /loopj: ${res.status}`);
  return (await res.json()) as { windowSeconds: number; delayMs: { max: number } };
}

/**
 * Restarts ControlZ's window of loop figures, which the first read after 60 s does (waiting for
 * that), so that its maximum is afterwards the daemon's longest stall since this call.
 */
async function restartLoopWindow(d: Daemon): Promise<void> {
  const { windowSeconds } = await loopFigures(d);
  if (windowSeconds <= 60) await new Promise((r) => setTimeout(r, (61 - windowSeconds) * 1000));
  await loopFigures(d);
}

/**
 * Writes `text` as `name` into the config directory of a running daemon while probing /ready and
 * sampling its memory, until push_status says `loaded`. What it took, and the last push_status.
 */
async function loadWhileProbing(
  d: Daemon,
  dir: Awaited<ReturnType<typeof makeConfigDir>>,
  name: string,
  text: string,
  loaded: (status: PushStatus) => boolean,
): Promise<{ loadMs: number; longestMs: number; answered: number; peak: number; status: PushStatus }> {
  const rss = sampleRss(d.pid, 100);
  let stopped: { longestMs: number; answered: number };
  let peak: number;
  const probe = probeReady(d.monitoringAddr);
  const t0 = performance.now();
  let status = (await d.debug('push_status')) as PushStatus;
  let loadMs: number;
  try {
    await dir.write(name, text);
    await eventually(`${name} to be in the model`, async () => {
      status = (await d.debug('push_status')) as PushStatus;
      return loaded(status);
    }, { timeoutMs: 150_000, intervalMs: 50, retryErrors: true });
    loadMs = performance.now() - t0;
  } finally {
    stopped = await probe.stop();
    peak = rss.stop().peak;
  }
  return { loadMs, ...stopped, peak, status };
}

describe.each<Shape>(['documents', 'directives', 'one document'])('loading a 12 MB config file (%s) into a running daemon', (shape) => {
  let dir: Awaited<ReturnType<typeof makeConfigDir>>;
  let d: Daemon;

  beforeAll(async () => {
    dir = await makeConfigDir();
    await dir.write('mesh.yaml', meshObjects(5));
    d = await startDaemon({ configDir: dir.path });
  });

  afterAll(async () => {
    await d?.stop(60_000);
    await dir?.cleanup();
  });

  it('keeps answering /ready and ends with every object', async () => {
    const big = bigFile(shape);
    const small = (await d.debug('push_status')) as PushStatus;
    const want = { services: small.services + big.services, virtualServices: small.virtualServices + big.virtualServices, endpoints: small.endpoints + big.endpoints };
    // the daemon's own longest stall, for the one document (its window restarts at most a minute after start)
    if (shape === 'one document') await restartLoopWindow(d);
    const { loadMs, longestMs, answered, peak, status } = await loadWhileProbing(d, dir, 'big.yaml', big.text, (st) => st.services === want.services && st.virtualServices === want.virtualServices && st.endpoints === want.endpoints);
    // what follows the model's change (the push) counts too
    const stallMs = shape === 'one document' ? (await new Promise((r) => setTimeout(r, 1_000)), (await loopFigures(d)).delayMs.max) : undefined;
    const stall = stallMs === undefined ? '' : `, daemon's longest stall ${stallMs.toFixed(0)} ms`;
    process.stdout.write(`${shape}: ${(big.text.length / 1e6).toFixed(1)} MB loaded in ${loadMs.toFixed(0)} ms: longest /ready round trip ${longestMs.toFixed(0)} ms (${answered} answered)${stall}, peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB\n`);
    expect(big.text.length).toBeGreaterThan(11_000_000);
    expect({ services: status.services, virtualServices: status.virtualServices, endpoints: status.endpoints }).toEqual(want);
    expect(await d.metric('disc_total_rejected_configs')).toBe(0);
    // one document: before docs/adr/0183 its parse alone was one stall of tens of seconds, and it
    // never loaded (not within 200 s); after it, 3.9 s of a 99 s load at load average 14
    expect(longestMs).toBeLessThan(shape === 'one document' ? loadMs / 4 : LOAD_STALL_BOUND_MS);
    if (stallMs !== undefined) expect(stallMs).toBeLessThan(ONE_DOCUMENT_STALL_BOUND_MS);
  }, 270_000);
});

/** One document of ~12 MB: a ServiceEntry of 200,000 endpoints (the YAML parse of one document cannot be cut into turns). */
const HUGE_ENDPOINTS = 200_000;

function hugeDocument(): string {
  const endpoints = Array.from({ length: HUGE_ENDPOINTS }, (_, k) => ({ address: `10.${100 + ((k >> 16) & 255)}.${(k >> 8) & 255}.${k & 255}`, labels: { version: `v${(k % 2) + 1}` } }));
  return toYamlDocuments([
    {
      apiVersion: 'networking.mesh.io/v1',
      kind: 'ServiceEntry',
      metadata: { name: 'huge', namespace: 'ns-0' },
      spec: { hosts: ['huge.ns-0.svc.cluster.local'], addresses: ['240.251.0.1'], location: 'MESH_INTERNAL', resolution: 'STATIC', ports: [{ number: 8080, name: 'http', protocol: 'HTTP' }], endpoints },
    },
  ]);
}

describe('/debug/config_dump of a sidecar in a mesh of 2,000 services', () => {
  let dir: Awaited<ReturnType<typeof makeConfigDir>>;
  let d: Daemon;

  beforeAll(async () => {
    dir = await makeConfigDir();
    await dir.write('mesh.yaml', meshObjects(2_000, BIG_ENDPOINTS));
    d = await startDaemon({ configDir: dir.path, readyTimeoutMs: 120_000 });
  }, 150_000);

  afterAll(async () => {
    await d?.stop(60_000);
    await dir?.cleanup();
  });

  it('is rendered over turns, in both formats', async () => {
    const node = sidecarNode(1);
    const s = new SotwStream(d.grpcAddr, node);
    try {
      s.send({ typeUrl: TypeUrl.Cluster });
      await eventually('the sidecar to be connected', async () => ((await d.debug('push_status')) as { connections: number }).connections >= 1, { timeoutMs: 60_000 });
      for (const format of ['mesh', 'envoy']) {
        const probe = probeReady(d.monitoringAddr);
        await new Promise((r) => setTimeout(r, 100));
        const t0 = performance.now();
        const dump = await get(d.httpAddr, `/debug/config_dump?proxyID=${encodeURIComponent(node.id)}&format=${format}`);
        const tookMs = performance.now() - t0;
        const { longestMs, answered } = await probe.stop();
        process.stdout.write(`config_dump (${format}) ${(dump.bytes / 1e6).toFixed(1)} MB in ${tookMs.toFixed(0)} ms: longest /ready round trip ${longestMs.toFixed(0)} ms (${answered} answered)\n`);
        expect(dump.status).toBe(200);
        expect(dump.bytes).toBeGreaterThan(10_000_000);
        expect(answered).toBeGreaterThan(5);
        // generated, decoded and rendered whole, the dump was one stall, nearly all of its time (docs/adr/0184);
        // over turns the longest round trip was 0.1-0.36 of it (the latter on a loaded CI machine, load 10)
        expect(longestMs).toBeLessThan(tookMs / 2);
      }
    } finally {
      s.close();
    }
  }, 200_000);
});
