/**
 * Hostile xDS and HTTP clients, as a hostile network and careless operators produce them: streams
 * that stop reading (HTTP/2 window 0, or paused after the first response), proxies that come and go
 * each with a list of 50,000 names of their own, NACK storms with a distinct message per NACK,
 * oversized HTTP bodies, and half-open connections (TCP or TLS without a byte sent, HTTP/2 streams
 * without a request). All on loopback, every one bounded in number, and stopped by `stop()`.
 *
 * Used by the fault-and-abuse suite (test/robust/) in the test process, and by `bench/xds --hostile`
 * as a child process (`node bench/dist/xds/hostile.js '<json HostileSpec>'`), which prints one JSON
 * line of `HostileStats` per second and stops on SIGTERM or when stdin closes.
 */
import { connect as connectH2, constants as h2, type ClientHttp2Session, type ClientHttp2Stream } from 'node:http2';
import { request as httpRequest } from 'node:http';
import { connect as connectTcp, type Socket } from 'node:net';
import { pathToFileURL } from 'node:url';
import { Node } from '../../src/gen/envoy/config/core/v3/base.js';
import { DeltaDiscoveryRequest, DiscoveryRequest, DiscoveryResponse } from '../../src/gen/envoy/service/discovery/v3/discovery.js';

const ADS_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';
const DELTA_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources';
const CDS = 'type.googleapis.com/envoy.config.cluster.v3.Cluster';
const EDS = 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment';
const LDS = 'type.googleapis.com/envoy.config.listener.v3.Listener';

export interface HostileSpec {
  /** `host:port` of the plaintext xDS listener. */
  readonly grpc: string;
  /** `host:port` of the TLS xDS listener, for half-open TLS connections. */
  readonly secureGrpc?: string;
  /** `host:port` of HTTP listeners that get oversized bodies and half-open connections. */
  readonly http: ReadonlyArray<string>;
  /** Streams that stop reading: half with HTTP/2 window 0, half paused after their first response. */
  readonly stuck?: number;
  /** Proxies that connect, send an EDS request of `names` names of their own, and leave; `concurrency` at a time. */
  readonly departing?: { readonly concurrency: number; readonly names: number };
  /** Proxies that NACK every response with a distinct message, then leave and come back with another id. */
  readonly nackStorm?: { readonly concurrency: number };
  /** HTTP requests with bodies of `bytes` to every route, `concurrency` at a time. */
  readonly oversized?: { readonly concurrency: number; readonly bytes: number };
  /** TCP connections that send nothing (per listener), and HTTP/2 streams that never send a request. */
  readonly halfOpen?: number;
  /**
   * Streams that never read (HTTP/2 window 0) and keep sending requests, each with `names` names of
   * its own (EDS), as fast as the server takes them: `sotw` state-of-the-world and `delta` delta
   * streams. Each stream stops after `bytes` bytes were taken by the server.
   */
  readonly flood?: { readonly sotw: number; readonly delta: number; readonly names: number; readonly bytes: number };
}

/**
 * The load of issue 15's proof on `grpc` and the `http` listeners: 500 stuck streams, departing
 * proxies with 50,000 names each, a NACK storm, 50 MB bodies and 50 half-open connections per
 * listener (bench/xds --hostile and test/robust/combined.test.ts run the same).
 */
export function issue15Load(grpc: string, http: ReadonlyArray<string>): HostileSpec {
  return {
    grpc,
    http,
    stuck: 500,
    departing: { concurrency: 2, names: 50_000 },
    nackStorm: { concurrency: 2 },
    oversized: { concurrency: 2, bytes: 50 * 1024 * 1024 },
    halfOpen: 50,
  };
}

export interface HostileStats {
  /** Stuck streams that the server has not closed. */
  readonly stuckOpen: number;
  /** Stuck streams the server ended (a slow stream loses its stream past a bound). */
  readonly stuckClosed: number;
  readonly departed: number;
  readonly departedNames: number;
  readonly nacks: number;
  readonly oversizedSent: number;
  /** Status codes the HTTP servers answered oversized requests with (0: connection closed). */
  readonly oversizedStatus: Readonly<Record<string, number>>;
  /** Half-open connections and streams the server closed, and the longest any stayed open, ms. */
  readonly halfOpenClosed: number;
  readonly halfOpenOpen: number;
  readonly halfOpenMaxMs: number;
  /** Flood streams: requests and bytes the server took (written to the connection), per protocol. */
  readonly floodTaken: number;
  readonly floodTakenBytes: { readonly sotw: number; readonly delta: number };
  /** Flood streams the server ended, by gRPC status (or `reset`). */
  readonly floodEnded: Readonly<Record<string, number>>;
  readonly errors: number;
  readonly lastError?: string;
}

function frame(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

function request(r: Partial<DiscoveryRequest>): Buffer {
  return frame(DiscoveryRequest.encode(DiscoveryRequest.fromPartial(r)).finish());
}

function sidecarNode(kind: string, n: number): Node {
  const ns = `ns-${n % 10}`;
  return Node.fromPartial({ id: `sidecar~10.250.${(n >> 8) & 255}.${n & 255}~${kind}-${n}.${ns}~${ns}.svc.cluster.local`, metadata: { NAMESPACE: ns } });
}

/** Reads gRPC messages out of a stream's DATA, whatever the chunking. */
class MessageReader {
  private buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Buffer[] {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    const out: Buffer[] = [];
    while (this.buf.length >= 5) {
      const len = this.buf.readUInt32BE(1);
      if (this.buf.length < 5 + len) break;
      out.push(this.buf.subarray(5, 5 + len));
      this.buf = this.buf.subarray(5 + len);
    }
    return out;
  }
}

function adsStream(session: ClientHttp2Session): ClientHttp2Stream {
  return session.request({
    [h2.HTTP2_HEADER_METHOD]: 'POST',
    [h2.HTTP2_HEADER_PATH]: ADS_PATH,
    [h2.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
    te: 'trailers',
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());

export class HostileLoad {
  private stopped = false;
  private readonly sessions = new Set<ClientHttp2Session>();
  private readonly sockets = new Set<Socket>();
  private readonly loops: Promise<void>[] = [];
  private counter = 0;
  private readonly s = {
    stuckOpen: 0,
    stuckClosed: 0,
    departed: 0,
    departedNames: 0,
    nacks: 0,
    oversizedSent: 0,
    oversizedStatus: {} as Record<string, number>,
    halfOpenClosed: 0,
    halfOpenOpen: 0,
    halfOpenMaxMs: 0,
    floodTaken: 0,
    floodTakenBytes: { sotw: 0, delta: 0 },
    floodEnded: {} as Record<string, number>,
    errors: 0,
    lastError: undefined as string | undefined,
  };

  constructor(private readonly spec: HostileSpec) {}

  stats(): HostileStats {
    return { ...this.s, oversizedStatus: { ...this.s.oversizedStatus }, floodEnded: { ...this.s.floodEnded }, floodTakenBytes: { ...this.s.floodTakenBytes } };
  }

  /** Opens the stuck streams and half-open connections, and starts the loops of the others. */
  async start(): Promise<void> {
    await this.openStuck(this.spec.stuck ?? 0);
    await this.openHalfOpen(this.spec.halfOpen ?? 0);
    const d = this.spec.departing;
    if (d) for (let i = 0; i < d.concurrency; i++) this.loops.push(this.loop(() => this.departOnce(d.names)));
    const n = this.spec.nackStorm;
    if (n) for (let i = 0; i < n.concurrency; i++) this.loops.push(this.loop(() => this.nackOnce()));
    const o = this.spec.oversized;
    if (o) for (let i = 0; i < o.concurrency; i++) this.loops.push(this.loop(() => this.oversizedOnce(o.bytes, i)));
    const f = this.spec.flood;
    if (f) {
      for (let i = 0; i < f.sotw; i++) this.loops.push(this.flood(false, f.names, f.bytes).catch((e) => this.error(e)));
      for (let i = 0; i < f.delta; i++) this.loops.push(this.flood(true, f.names, f.bytes).catch((e) => this.error(e)));
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const s of this.sessions) s.destroy();
    for (const s of this.sockets) s.destroy();
    await Promise.all(this.loops);
  }

  private error(err: unknown): void {
    this.s.errors++;
    this.s.lastError = err instanceof Error ? err.message : String(err);
  }

  private async loop(once: () => Promise<void>): Promise<void> {
    while (!this.stopped) {
      try {
        await once();
      } catch (err) {
        this.error(err);
        await sleep(50);
      }
    }
  }

  private session(addr: string, settings: { initialWindowSize?: number } = {}): Promise<ClientHttp2Session> {
    return new Promise((resolve, reject) => {
      const session = connectH2(`http://${addr}`, { settings });
      this.sessions.add(session);
      session.once('connect', () => resolve(session));
      session.once('error', (err) => reject(err));
      session.on('close', () => {
        this.sessions.delete(session);
        reject(new Error('session closed before it connected')); // no-op once connected
      });
      session.on('error', () => undefined);
    });
  }

  /** Stuck streams: 50 per connection; odd connections announce window 0, even ones pause after the first response. */
  private async openStuck(count: number): Promise<void> {
    const perSession = 50;
    for (let first = 0; first < count; first += perSession) {
      const windowZero = (first / perSession) % 2 === 0;
      const session = await this.session(this.spec.grpc, windowZero ? { initialWindowSize: 0 } : {});
      for (let i = first; i < Math.min(count, first + perSession); i++) {
        const stream = adsStream(session);
        this.s.stuckOpen++;
        let open = true;
        const closed = (): void => {
          if (!open) return;
          open = false;
          this.s.stuckOpen--;
          if (!this.stopped) this.s.stuckClosed++;
        };
        stream.on('close', closed);
        stream.on('error', () => undefined);
        if (!windowZero) stream.once('data', () => stream.pause());
        const node = sidecarNode('stuck', i);
        stream.write(request({ node, typeUrl: CDS }));
        stream.write(request({ node, typeUrl: LDS }));
      }
    }
  }

  private async openHalfOpen(count: number): Promise<void> {
    const started = Date.now();
    const track = (close: (cb: () => void) => void): void => {
      this.s.halfOpenOpen++;
      let open = true;
      close(() => {
        if (!open) return;
        open = false;
        this.s.halfOpenOpen--;
        if (this.stopped) return;
        this.s.halfOpenClosed++;
        this.s.halfOpenMaxMs = Math.max(this.s.halfOpenMaxMs, Date.now() - started);
      });
    };
    const addrs = [this.spec.grpc, ...(this.spec.secureGrpc ? [this.spec.secureGrpc] : []), ...this.spec.http];
    for (let i = 0; i < count; i++) {
      for (const addr of addrs) {
        const [host, port] = splitAddr(addr);
        const socket = connectTcp(port, host);
        this.sockets.add(socket);
        socket.on('error', () => undefined);
        socket.on('data', () => undefined); // read what the server says; never answer
        track((cb) => socket.on('close', () => (this.sockets.delete(socket), cb())));
      }
    }
    // HTTP/2 streams that never send their first request
    if (count > 0) {
      const session = await this.session(this.spec.grpc);
      for (let i = 0; i < count; i++) {
        const stream = adsStream(session);
        stream.on('error', () => undefined);
        stream.on('data', () => undefined);
        track((cb) => stream.on('close', cb));
      }
    }
  }

  /** One proxy that subscribes to `names` EDS names no other proxy uses, waits for the answer, and leaves. */
  private async departOnce(names: number): Promise<void> {
    const n = ++this.counter;
    const session = await this.session(this.spec.grpc);
    try {
      const stream = adsStream(session);
      const list = Array.from({ length: names }, (_, i) => `outbound|8080||gone-${n}-${i}.ns-${n % 10}.svc.cluster.local`);
      const answered = new Promise<void>((resolve) => {
        const reader = new MessageReader();
        stream.on('data', (chunk: Buffer) => {
          if (reader.push(chunk).length > 0) resolve();
        });
        stream.on('close', () => resolve());
        setTimeout(resolve, 5000).unref();
      });
      stream.on('error', () => undefined);
      stream.write(request({ node: sidecarNode('departing', n), typeUrl: EDS, resourceNames: list }));
      await answered;
      this.s.departed++;
      this.s.departedNames += names;
    } finally {
      session.destroy();
    }
  }

  /** One proxy that NACKs every response with a message of its own, then leaves. */
  private async nackOnce(): Promise<void> {
    const n = ++this.counter;
    const session = await this.session(this.spec.grpc);
    try {
      const stream = adsStream(session);
      const node = sidecarNode('nacker', n);
      const reader = new MessageReader();
      let nacked = 0;
      const done = new Promise<void>((resolve) => {
        stream.on('data', (chunk: Buffer) => {
          for (const m of reader.push(chunk)) {
            const res = DiscoveryResponse.decode(m);
            nacked++;
            this.s.nacks++;
            stream.write(
              request({
                node,
                typeUrl: res.typeUrl,
                versionInfo: '',
                responseNonce: res.nonce,
                errorDetail: { code: 3, message: `rejected by hostile proxy ${n}, NACK ${nacked}: ${'x'.repeat(n % 200)}`, details: [] },
              }),
            );
            if (nacked >= 2) resolve();
          }
        });
        stream.on('close', () => resolve());
        setTimeout(resolve, 3000).unref();
      });
      stream.on('error', () => undefined);
      stream.write(request({ node, typeUrl: CDS }));
      stream.write(request({ node, typeUrl: LDS }));
      await done;
      await sleep(20);
    } finally {
      session.destroy();
    }
  }

  /**
   * A stream that never reads its responses (window 0) and sends requests of `names` EDS names of its
   * own, one after the other, as fast as the server takes them, until `bytes` were taken or the
   * server ends the stream. A request counts as taken once it was written to the connection, which
   * HTTP/2 flow control allows only as far as the server reads.
   */
  private async flood(delta: boolean, names: number, bytes: number): Promise<void> {
    const n = ++this.counter;
    const session = await this.session(this.spec.grpc, { initialWindowSize: 0 });
    const stream = session.request({
      [h2.HTTP2_HEADER_METHOD]: 'POST',
      [h2.HTTP2_HEADER_PATH]: delta ? DELTA_PATH : ADS_PATH,
      [h2.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
      te: 'trailers',
    });
    let open = true;
    stream.on('response', (headers) => {
      const status = headers['grpc-status'];
      if (status !== undefined) this.ended(String(status));
    });
    stream.on('trailers', (trailers) => this.ended(String(trailers['grpc-status'] ?? 'unknown')));
    stream.on('close', () => {
      if (open && !this.stopped && stream.rstCode !== h2.NGHTTP2_NO_ERROR) this.ended('reset');
      open = false;
    });
    stream.on('error', () => undefined);
    const node = sidecarNode('flood', n);
    const first = delta
      ? frame(DeltaDiscoveryRequest.encode(DeltaDiscoveryRequest.fromPartial({ node, typeUrl: CDS })).finish())
      : request({ node, typeUrl: CDS });
    stream.write(first);
    let taken = 0;
    // one encoded request, its names made distinct per request by patching a fixed-width field in
    // place (encoding 10,000 names per request would make the client, not the server, the limit)
    const mark = 'QQQQQQ';
    const list = Array.from({ length: names }, (_, j) => `outbound|8080||flood-${n}-${mark}-${j}.ns-${n % 10}.svc.cluster.local`);
    const template = delta
      ? frame(DeltaDiscoveryRequest.encode(DeltaDiscoveryRequest.fromPartial({ typeUrl: EDS, resourceNamesSubscribe: list })).finish())
      : request({ typeUrl: EDS, resourceNames: list });
    const offsets: number[] = [];
    for (let at = template.indexOf(mark); at >= 0; at = template.indexOf(mark, at + mark.length)) offsets.push(at);
    for (let i = 0; open && !this.stopped && taken < bytes; i++) {
      const msg = Buffer.from(template);
      const tag = i.toString(16).padStart(mark.length, '0');
      for (const at of offsets) msg.write(tag, at, 'latin1');
      // wait until the server took it: flow control, not the client's buffer, sets the pace
      const ok = await new Promise<boolean>((resolve) => {
        const done = (): void => {
          stream.off('close', closed);
          resolve(true);
        };
        const closed = (): void => resolve(false);
        stream.once('close', closed);
        stream.write(msg, done);
      });
      if (!ok) break;
      taken += msg.length;
      this.s.floodTaken++;
      this.s.floodTakenBytes[delta ? 'delta' : 'sotw'] += msg.length;
    }
    // hold the stream, unread, until stopped or ended by the server
    while (open && !this.stopped) await sleep(100);
    session.destroy();
  }

  private ended(status: string): void {
    if (this.stopped) return;
    this.s.floodEnded[status] = (this.s.floodEnded[status] ?? 0) + 1;
  }

  /** One request with a body of `bytes` (streamed, never held whole) to one route of one listener. */
  private async oversizedOnce(bytes: number, i: number): Promise<void> {
    const addrs = this.spec.http;
    if (addrs.length === 0) return sleep(1000);
    const routes = ['/metrics', '/ready', '/healthz', '/debug/syncz', '/debug/configz', '/version'];
    const addr = addrs[(this.counter + i) % addrs.length];
    const path = routes[++this.counter % routes.length];
    const [host, port] = splitAddr(addr);
    const status = await new Promise<number>((resolve) => {
      const req = httpRequest({ host, port, path, method: 'POST', headers: { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked' } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', () => resolve(0));
      req.setTimeout(20_000, () => req.destroy());
      const chunk = Buffer.alloc(256 * 1024, 0x61);
      let sent = 0;
      const pump = (): void => {
        while (sent < bytes && !this.stopped) {
          sent += chunk.length;
          if (!req.write(chunk)) {
            req.once('drain', pump);
            return;
          }
        }
        req.end();
      };
      pump();
    });
    this.s.oversizedSent++;
    this.s.oversizedStatus[String(status)] = (this.s.oversizedStatus[String(status)] ?? 0) + 1;
  }
}

function splitAddr(addr: string): [string, number] {
  const i = addr.lastIndexOf(':');
  return [addr.slice(0, i).replace(/^\[|\]$/g, ''), Number(addr.slice(i + 1))];
}

/** Child-process entry: `node hostile.js '<json HostileSpec>'`. */
async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '{}') as HostileSpec;
  const load = new HostileLoad(spec);
  await load.start();
  const report = setInterval(() => process.stdout.write(`${JSON.stringify(load.stats())}\n`), 1000);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.stdin.once('close', resolve);
    process.stdin.resume();
  });
  clearInterval(report);
  await load.stop();
  process.stdout.write(`${JSON.stringify(load.stats())}\n`);
  process.exit(0);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) void main();
