/**
 * The aggregated discovery service: gRPC transport, the state-of-the-world and delta protocols, ACK/NACK
 * tracking per connection, and the push fan-out. It knows nothing about how config is made: it asks
 * the model for the current snapshot and the generators for resources.
 */
import { createHash } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { DeltaDiscoveryRequest } from '../gen/envoy/service/discovery/v3/discovery.js';
import type { Node } from '../gen/envoy/config/core/v3/base.js';
import type { Metrics } from '../metrics/metrics.js';
import type { EndpointIndex } from '../model/endpoint-index.js';
import { parseProxy, ProxyIdError, type Proxy } from '../model/proxy.js';
import type { PushContext } from '../model/push-context.js';
// authentication lives outside the transport: a port's authorizer is handed in (src/security/xds-auth.ts)
import type { ResourceAccess, StreamAuthorizer } from '../security/stream-authorizer.js';
import type { EncodedResource, ResourceCache } from './cache.js';
import { Connection, changedResources, generatorNames, listVersion, newWatch, type ResponseWriter, type WatchState } from './connection.js';
import type { GeneratorSet, GeneratorSettings } from './generators/types.js';
import type { ListenerConflicts } from './generators/sidecar.js';
import { Limiter, nextRank, type Slot } from './limiter.js';
import { Delivery, type DeliveryOptions } from './delivery.js';
import { PushQueue } from './push-queue.js';
import { RequestBacklog, type BacklogBounds, type BacklogStats, type Readable } from './request-backlog.js';
import { LogRateLimit } from '../log/rate-limit.js';
import { affectedTypes } from './affected-types.js';
import type { PushRequest } from '../model/push-request.js';
import { intern, knownRuns, readSotwRequest, sameNames, type SotwRequest } from './request-intake.js';
import { PARTIAL_STATE_TYPES, PUSH_ORDER, TypeUrl, WILDCARD_TYPES, isKnownType, shortType, type XdsTypeUrl } from './types.js';
import { frameWriter } from './frame-writer.js';
import { compactReads, elidedNames, releaseMessage } from './frame-reader.js';
import { encodeControlPlane, encodeDeltaResource, frameDeltaDiscoveryResponse, frameDiscoveryResponse, type GrpcFrame } from './wire.js';
import { yieldPoint } from '../util/cooperative.js';
import { overTurns } from '../model/derived.js';
import { mayName, pushedHosts } from './push-order.js';

export interface ModelView {
  readonly push: PushContext;
  readonly endpoints: EndpointIndex;
}

export interface AdsOptions {
  readonly pushThrottle: number;
  readonly sendTimeoutMs: number;
  readonly flowControl: boolean;
  readonly flowControlTimeoutMs: number;
  readonly deltaEnabled: boolean;
  readonly controlPlaneId: string;
  readonly distributionTracking: boolean;
  /**
   * Write shared frames straight to the HTTP/2 stream (frame-writer.ts); default true. False sends
   * every response through grpc-js's copying `call.write` (tests of the fallback).
   */
  readonly directWrites?: boolean;
  /**
   * Assemble request messages in buffers of their own (frame-reader.ts); default true. False keeps
   * grpc-js's decoder (tests of the fallback, before/after measurements).
   */
  readonly compactReads?: boolean;
  /** A cached response frame unused this long is dropped (default 10 s); see `sotwFrame`. */
  readonly frameIdleMs?: number;
  /** Bounds on what slow clients may hold (delivery.ts DELIVERY_DEFAULTS); tests shorten them. */
  readonly delivery?: DeliveryOptions['bounds'];
  /** A stream that sends no DiscoveryRequest this long after it opened is closed (default 10 s). */
  readonly firstRequestMs?: number;
  /** Bounds on the requests a stream has waiting (request-backlog.ts BACKLOG_DEFAULTS); tests shorten them. */
  readonly backlog?: Partial<BacklogBounds>;
  /** Most names one delta watch may hold (default MAX_DELTA_NAMES); a subscribe past it ends the stream. */
  readonly maxDeltaNames?: number;
}

export interface AdsDeps {
  readonly model: () => ModelView;
  readonly generatorsFor: (proxy: Proxy) => GeneratorSet;
  readonly cache: ResourceCache;
  readonly settings: GeneratorSettings;
  readonly metrics: Metrics;
  readonly log: Logger;
  readonly options: AdsOptions;
  /**
   * Told when a proxy's stream opens and ends (workload-entry auto-registration). Its failures are
   * logged; they never affect the stream.
   */
  readonly observer?: AdsObserver;
  /**
   * Answers debug type requests (`mesh.io/debug/<endpoint>[?query]`, DEBUG_TYPE_PREFIX) on streams
   * of their own; absent: such requests are ignored like any unknown type. The transport only
   * carries them: what is shown, and to whom, is the handler's (src/server/xds-debug.ts).
   */
  readonly debug?: DebugHandler;
  /**
   * Names a stream may not subscribe to (gateway credentials of another namespace, …); they are
   * dropped from the subscription before any generator sees them. Absent: every name is kept.
   */
  readonly access?: ResourceAccess;
  /**
   * The listener conflicts the generators resolved for a proxy's listeners (disc_conflict_*); read
   * after each LDS generation. Absent or undefined: none counted.
   */
  readonly listenerConflicts?: (proxy: Proxy, push: PushContext, endpoints: EndpointIndex) => ListenerConflicts | undefined;
}

/** Type URLs of the xDS debug channel start with this (docs/spec/CONVENTIONS.md). */
export const DEBUG_TYPE_PREFIX = 'mesh.io/debug/';

/** Who asks on a debug stream: what the port's authorizer said, and where the stream comes from. */
export interface DebugCaller {
  /** The authenticated identity (a SPIFFE id); absent when the port does not authenticate. */
  readonly identity?: string;
  readonly peer: string;
  /** The client joins an answer sent in parts (node metadata DEBUG_PARTS=true; DEBUG_PARTS_METADATA). */
  readonly joinsParts?: boolean;
}

/**
 * Node metadata key by which a debug client says it joins answers in parts: every message of such an
 * answer but the last carries the version DEBUG_PART_VERSION (docs/adr/0185).
 */
export const DEBUG_PARTS_METADATA = 'DEBUG_PARTS';
export const DEBUG_PART_VERSION = 'part';

/**
 * Encoded `Any` resources of the answer (one message), or the resources of each message of an
 * answer in parts, or the gRPC status that ends the stream.
 */
export type DebugAnswer =
  | { readonly resources: ReadonlyArray<Uint8Array> }
  | { readonly parts: AsyncIterable<ReadonlyArray<Uint8Array>> }
  | { readonly code: grpc.status; readonly message: string };

export type DebugHandler = (typeUrl: string, caller: DebugCaller) => Promise<DebugAnswer> | DebugAnswer;

/**
 * Told about proxies' streams and acknowledgements. Its failures are logged; they never affect the
 * stream. Calls are synchronous from the stream's point of view and should be cheap.
 */
export interface AdsObserver {
  connected?(proxy: Proxy): void | Promise<void>;
  disconnected?(proxy: Proxy): void | Promise<void>;
  /**
   * `proxy` holds `typeUrl` as built from the snapshot `version` (PushContext.version): it ACKed a
   * response built from it, or a push of `version` had nothing new for a type whose last response it
   * had ACKed. Delta and state-of-the-world alike; at most once per response or push.
   */
  acked?(proxy: Proxy, typeUrl: string, version: string): void | Promise<void>;
}

const SERVICE = '/envoy.service.discovery.v3.AggregatedDiscoveryService';
const FRAME_CACHE_ENTRIES = 64;
/**
 * Frames are for fan-out: once a push has reached every proxy of a scope, a frame only duplicates the
 * bytes of its resources (a sidecar's CDS answer is 8 MB at 5,000 services). Idle ones are dropped;
 * a later connection of the scope builds its frame again.
 */
const DEFAULT_FRAME_IDLE_MS = 10_000;
const passthrough = (b: Buffer): Buffer => b;
/** A stream must send its first request within this (a half-open stream holds a slot of grpc.max_concurrent_streams). */
const DEFAULT_FIRST_REQUEST_MS = 10_000;
/**
 * Longest node id accepted: the proxy id `type~ip~pod.namespace~namespace.svc.<domain>` of DNS
 * names (253 bytes each at most) fits well; the id is kept per connection and labels NACK series.
 */
export const MAX_NODE_ID_BYTES = 1024;
type RejectGauge = Metrics['cdsReject'];

type DuplexCall = grpc.ServerDuplexStream<Buffer, Buffer>;

class StreamError extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
  }
}

function nodeMetadata(node: Node | undefined): Record<string, unknown> {
  return (node?.metadata as Record<string, unknown> | undefined) ?? {};
}

export class DiscoveryServer {
  readonly connections = new Map<string, Connection>();
  private readonly queue: PushQueue<Connection>;
  private readonly controlPlane: Buffer;
  /** Bounds responses to client requests (connect storms) like the push queue bounds pushes. */
  private readonly requestLimiter: Limiter;
  /** Writes frames; bounds what slow clients hold (delivery.ts). */
  private readonly delivery: Delivery;
  private nonceCounter = 0;
  /** NACK lines: a storm of NACKs costs a few lines a second (the count is in disc_total_xds_rejects). */
  private readonly nackLog = new LogRateLimit(10, 50);
  /** Lines about what clients send (closed streams, unsupported types): a storm costs a few lines a second. */
  private readonly closeLog = new LogRateLimit(10, 50);
  private readonly unsupportedLog = new LogRateLimit(5, 20);
  /** The request backlogs of open streams (request-backlog.ts). */
  private readonly backlogs = new Set<{ stats(): BacklogStats }>();
  /** Recently built frames by list; bounded, since a list that is not shared gains nothing from it. */
  private readonly frames = new Map<ReadonlyArray<EncodedResource>, { typeUrl: string; version: string; frame: GrpcFrame; nonce: string; usedAt: number }>();
  private readonly frameSweep: NodeJS.Timeout;
  private closing = false;

  constructor(private readonly deps: AdsDeps) {
    this.queue = new PushQueue(Math.max(1, deps.options.pushThrottle), (conn, req, enqueuedAt, slot) => this.pushConnection(conn, req, enqueuedAt, slot));
    this.delivery = new Delivery(deps.metrics, deps.log, { sendTimeoutMs: deps.options.sendTimeoutMs, bounds: deps.options.delivery });
    this.controlPlane = encodeControlPlane(deps.options.controlPlaneId);
    this.requestLimiter = new Limiter(Math.max(1, deps.options.pushThrottle));
    const idleMs = deps.options.frameIdleMs ?? DEFAULT_FRAME_IDLE_MS;
    this.frameSweep = setInterval(() => {
      const before = Date.now() - idleMs;
      for (const [list, f] of this.frames) if (f.usedAt < before) this.frames.delete(list);
    }, Math.max(10, idleMs / 2));
    this.frameSweep.unref();
  }

  /** Response frames kept for sharing (tests). */
  get cachedFrames(): number {
    return this.frames.size;
  }

  /** The gRPC service definition with pass-through (de)serializers: frames are assembled by hand. */
  serviceDefinition(): grpc.ServiceDefinition {
    const method = (name: string): grpc.MethodDefinition<Buffer, Buffer> => ({
      path: `${SERVICE}/${name}`,
      requestStream: true,
      responseStream: true,
      requestSerialize: passthrough,
      requestDeserialize: passthrough,
      responseSerialize: passthrough,
      responseDeserialize: passthrough,
    });
    return { StreamAggregatedResources: method('StreamAggregatedResources'), DeltaAggregatedResources: method('DeltaAggregatedResources') };
  }

  /** Handlers for one port; `authorize` decides on each new stream (none: every stream is served). */
  handlers(authorize?: StreamAuthorizer): grpc.UntypedServiceImplementation {
    return {
      StreamAggregatedResources: (call: DuplexCall) => this.serve(call, false, authorize),
      DeltaAggregatedResources: (call: DuplexCall) => {
        if (!this.deps.options.deltaEnabled) {
          call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'delta xDS is disabled on this daemon (set MESH_DELTA_XDS=true)' });
          return;
        }
        this.serve(call, true, authorize);
      },
    };
  }

  /**
   * Queue a push to every connection: first those whose subscriptions of the types the push reaches
   * may name a host it is about, then the others (push-order.ts).
   */
  push(req: PushRequest): void {
    for (const [reason, n] of req.reasons) this.deps.metrics.pushTriggers.inc({ type: reason }, n);
    const hosts = pushedHosts(req, this.deps.model().push.changes);
    if (!hosts) {
      for (const conn of this.connections.values()) this.queue.enqueue(conn, req);
      return;
    }
    const later: Connection[] = [];
    for (const conn of this.connections.values()) {
      if (this.mayReach(conn, req, hosts)) this.queue.enqueue(conn, req);
      else later.push(conn);
    }
    for (const conn of later) this.queue.enqueue(conn, req);
  }

  /** Whether a push about `hosts` may change something `conn` watches. */
  private mayReach(conn: Connection, req: PushRequest, hosts: ReadonlySet<string>): boolean {
    const affected = affectedTypes(req, conn.proxy.type);
    for (const [typeUrl, watch] of conn.watches) {
      if (affected.has(typeUrl as XdsTypeUrl) && mayName(generatorNames(conn, watch), hosts)) return true;
    }
    return false;
  }

  /** Resolves when queued pushes are done (tests, shutdown). */
  idle(): Promise<void> {
    return this.queue.idle();
  }

  get queueLength(): number {
    return this.queue.pendingCount;
  }

  /** Pushes holding a slot, answers holding a slot, and what writes hold (debug, tests). */
  loadStats(): {
    pushSlots: number;
    answerSlots: number;
    pushesInProgress: number;
    writes: ReturnType<Delivery['stats']>;
    requests: { waiting: number; bytes: number; pausedStreams: number; coalesced: number };
  } {
    const requests = { waiting: 0, bytes: 0, pausedStreams: 0, coalesced: 0 };
    for (const b of this.backlogs) {
      const s = b.stats();
      requests.waiting += s.waiting;
      requests.bytes += s.bytes;
      requests.coalesced += s.coalesced;
      if (s.paused) requests.pausedStreams++;
    }
    return { pushSlots: this.queue.activeCount, answerSlots: this.requestLimiter.active, pushesInProgress: this.queue.inProgressCount, writes: this.delivery.stats(), requests };
  }

  close(): void {
    this.closing = true;
    clearInterval(this.frameSweep);
    this.frames.clear();
    this.queue.close();
    this.delivery.close();
    for (const c of this.connections.values()) c.writer.close(grpc.status.UNAVAILABLE, 'server shutting down');
  }

  private serve(call: DuplexCall, delta: boolean, authorize: StreamAuthorizer | undefined): void {
    if (this.closing) {
      call.emit('error', { code: grpc.status.UNAVAILABLE, details: 'server shutting down' });
      return;
    }
    const log = this.deps.log;
    let conn: Connection | undefined;
    let debugCaller: DebugCaller | undefined;
    let ended = false;
    const out = frameWriter(call, { allowDirect: this.deps.options.directWrites !== false });
    // requests are assembled in buffers of their own, not kept as views of shared reads, and a
    // state-of-the-world request's names are not kept when they repeat a known list (frame-reader.ts)
    const nameRuns = (first: Buffer): Buffer[] => [...(conn ? expectedSpans(conn) : []), ...knownRuns(first)];
    if (this.deps.options.compactReads !== false) compactReads(call, delta ? undefined : nameRuns);
    const firstRequestMs = this.deps.options.firstRequestMs ?? DEFAULT_FIRST_REQUEST_MS;
    let firstRequest: NodeJS.Timeout | undefined = setTimeout(() => {
      firstRequest = undefined;
      if (ended || conn) return;
      writer.close(grpc.status.DEADLINE_EXCEEDED, `no DiscoveryRequest within ${firstRequestMs / 1000} s of opening the stream`);
      finish();
      // the status ends our half; a peer that never ends its own would keep the stream (and its
      // slot of grpc.max_concurrent_streams): reset it once the status had time to leave
      setTimeout(() => out.abort(), 1000).unref();
    }, firstRequestMs).unref();
    const writer: ResponseWriter = {
      direct: out.direct,
      session: out.session,
      write: (frame, progress) =>
        new Promise<void>((resolve, reject) => {
          if (ended) return reject(new Error('stream closed'));
          // Settles once the transport has taken the frame (HTTP/2 flow control included);
          // `progress` tells the delivery that the client takes its bytes (delivery.ts).
          out.write(frame, (err) => (err ? reject(err) : resolve()), progress);
        }),
      close: (code, message) => {
        if (ended) return;
        ended = true;
        call.emit('error', { code, details: message });
      },
      abort: () => {
        ended = true;
        out.abort();
        finish();
      },
    };
    const finish = (): void => {
      ended = true;
      clearTimeout(firstRequest);
      backlog.stop();
      this.backlogs.delete(backlog);
      if (conn && !conn.closed) {
        this.clearRejects(conn);
        this.countListenerConflicts(conn, undefined);
        conn.closed = true;
        this.connections.delete(conn.id);
        this.queue.remove(conn);
        this.deps.metrics.xdsClients.dec();
        log.info({ conn: conn.id, peer: conn.proxy.id }, 'ADS: connection closed');
        this.observe('disconnected', conn.proxy);
      }
    };
    type Queued = { readonly sotw?: SotwRequest; readonly deltaRaw?: Buffer };
    const handle = async ({ sotw, deltaRaw }: Queued): Promise<void> => {
      if (ended) return;
      if (sotw && this.deps.debug && sotw.typeUrl.startsWith(DEBUG_TYPE_PREFIX)) {
        if (conn) throw new StreamError(grpc.status.INVALID_ARGUMENT, 'debug types are served on a stream of their own, not on a proxy\'s stream');
        debugCaller ??= await this.acceptDebug(call, sotw.node, authorize);
        if (!ended) await this.answerDebug(writer, debugCaller, sotw.typeUrl);
        return;
      }
      if (debugCaller) throw new StreamError(grpc.status.INVALID_ARGUMENT, 'a debug stream carries debug types only');
      if (!conn) {
        const accepted = await this.accept(call, sotw ? sotw.node : this.decodeDelta(deltaRaw!).node, delta, writer, authorize);
        if (ended) return;
        conn = this.register(accepted);
      }
      if (sotw) await this.onRequest(conn, sotw);
      else await this.onDeltaRequest(conn, deltaRaw!);
    };
    const failed = (err: unknown): void => {
      const code = err instanceof StreamError ? err.code : grpc.status.INTERNAL;
      const message = err instanceof Error ? err.message : String(err);
      if (!(err instanceof StreamError)) this.deps.metrics.internalErrors.inc();
      const held = this.closeLog.take();
      if (held !== undefined) log.warn({ peer: call.getPeer(), conn: conn?.id, err: message.slice(0, 1024), ...(held > 0 ? { suppressed: held } : {}) }, 'ADS: closing stream');
      writer.close(code, message);
      finish();
    };
    // Requests wait for their turn here, bounded (request-backlog.ts): a state-of-the-world request
    // supersedes a waiting one of its type, and past the bounds the stream is paused.
    const backlog = new RequestBacklog<Queued>(readableOf(call), handle, failed, this.deps.options.backlog, (older, newer) =>
      older.sotw?.node && newer.sotw && !newer.sotw.node ? { sotw: { ...newer.sotw, node: older.sotw.node } } : newer,
    );
    this.backlogs.add(backlog);
    call.on('data', (raw: Buffer) => {
      clearTimeout(firstRequest);
      if (ended) return;
      if (delta) {
        backlog.add({ deltaRaw: raw }, raw.length);
        return;
      }
      // A state-of-the-world request is read now and its buffer let go (request-intake.ts); it
      // waits for its turn behind the stream's earlier requests in that compact form.
      let sotw: SotwRequest;
      try {
        sotw = readSotwRequest(raw, conn && expectedSpans(conn), elidedNames(raw));
      } catch (e) {
        backlog.stop();
        failed(new StreamError(grpc.status.INVALID_ARGUMENT, e instanceof Error ? e.message : String(e)));
        return;
      }
      const bytes = raw.length;
      // what the request says is read (nothing of it is kept): its memory goes back now, not at the next GC
      releaseMessage(raw);
      backlog.add({ sotw }, bytes, sotw.typeUrl);
    });
    call.on('end', () => {
      finish();
      if (!call.writableEnded) call.end();
    });
    call.on('error', () => finish());
    call.on('cancelled', () => finish());
  }

  private observe(event: 'connected' | 'disconnected', proxy: Proxy): void {
    const handler = this.deps.observer?.[event];
    if (!handler) return;
    this.settleObserver(event, proxy, () => handler.call(this.deps.observer, proxy));
  }

  /** Tells the observer that `conn` holds `watch`'s type at the snapshot its last response was built from. */
  private observeAck(conn: Connection, watch: WatchState): void {
    const handler = this.deps.observer?.acked;
    if (!handler || watch.snapshotSent === '') return;
    this.settleObserver('acked', conn.proxy, () => handler.call(this.deps.observer, conn.proxy, watch.typeUrl, watch.snapshotSent));
  }

  private settleObserver(event: string, proxy: Proxy, call: () => void | Promise<void>): void {
    const report = (err: unknown): void => {
      this.deps.log.warn({ proxy: proxy.id, err: err instanceof Error ? err.message : String(err) }, `ADS: ${event} observer failed`);
    };
    try {
      const result = call();
      // no promise per call for synchronous observers (thousands of ACKs in a connect storm)
      if (result instanceof Promise) result.catch(report);
    } catch (err) {
      report(err);
    }
  }

  private async accept(call: DuplexCall, node: Node | undefined, delta: boolean, writer: ResponseWriter, authorize: StreamAuthorizer | undefined): Promise<Connection> {
    if (!node?.id) throw new StreamError(grpc.status.INVALID_ARGUMENT, 'first discovery request must carry node.id');
    const idBytes = Buffer.byteLength(node.id);
    if (idBytes > MAX_NODE_ID_BYTES) throw new StreamError(grpc.status.INVALID_ARGUMENT, `node.id is ${idBytes} bytes, more than the ${MAX_NODE_ID_BYTES} allowed`);
    let proxy: Proxy;
    try {
      proxy = parseProxy(node.id, nodeMetadata(node), node.locality);
    } catch (e) {
      if (e instanceof ProxyIdError) throw new StreamError(grpc.status.INVALID_ARGUMENT, e.message);
      throw e;
    }
    const decision = authorize ? await authorize(call, proxy) : { allowed: true as const };
    if (!decision.allowed) throw new StreamError(decision.code, decision.message);
    return new Connection(proxy, call.getPeer(), delta, writer, decision.identity);
  }

  /** A debug stream: authorized like a proxy's (same node rules, same port authorizer), never registered. */
  private async acceptDebug(call: DuplexCall, node: Node | undefined, authorize: StreamAuthorizer | undefined): Promise<DebugCaller> {
    const conn = await this.accept(call, node, false, { direct: false, write: () => Promise.resolve(), close: () => undefined, abort: () => undefined }, authorize);
    return { identity: conn.identity, peer: conn.peer, joinsParts: conn.proxy.metadata[DEBUG_PARTS_METADATA] === 'true' };
  }

  private async answerDebug(writer: ResponseWriter, caller: DebugCaller, typeUrl: string): Promise<void> {
    const answer = await this.deps.debug!(typeUrl, caller);
    if ('code' in answer) throw new StreamError(answer.code, answer.message);
    if ('resources' in answer) {
      const nonce = (++this.nonceCounter).toString(36);
      await writer.write(frameDiscoveryResponse(nonce, typeUrl, nonce, answer.resources, this.controlPlane));
      return;
    }
    // one message per part, each written when the transport took the previous one; the last one
    // (known once the next is asked for) carries the nonce as its version, as a whole answer does
    let held: ReadonlyArray<Uint8Array> | undefined;
    for await (const part of answer.parts) {
      if (held) {
        const nonce = (++this.nonceCounter).toString(36);
        await writer.write(frameDiscoveryResponse(DEBUG_PART_VERSION, typeUrl, nonce, held, this.controlPlane));
      }
      held = part;
    }
    const nonce = (++this.nonceCounter).toString(36);
    await writer.write(frameDiscoveryResponse(nonce, typeUrl, nonce, held ?? [], this.controlPlane));
  }

  private register(conn: Connection): Connection {
    const proxy = conn.proxy;
    this.connections.set(conn.id, conn);
    this.deps.metrics.xdsClients.inc();
    this.observe('connected', proxy);
    this.deps.log.info({ conn: conn.id, type: proxy.type, delta: conn.delta, identity: conn.identity }, 'ADS: new connection');
    return conn;
  }

  private decodeDelta(raw: Buffer): DeltaDiscoveryRequest {
    try {
      return DeltaDiscoveryRequest.decode(raw);
    } catch (e) {
      throw new StreamError(grpc.status.INVALID_ARGUMENT, `malformed DeltaDiscoveryRequest: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  /** ACK/NACK bookkeeping shared by both protocols. Returns 'ack', 'nack', 'stale' or 'initial'. */
  private track(conn: Connection, watch: WatchState, nonce: string, error: { code: number; message: string } | undefined): 'ack' | 'nack' | 'stale' | 'initial' {
    // Nothing sent for this type on this stream yet: a nonce from an earlier stream (a client
    // reconnecting to this or another daemon) cannot be answered later, so treat it as a first request.
    if (nonce === '' || watch.nonceSent === '') return 'initial';
    const type = shortType[watch.typeUrl as XdsTypeUrl] ?? 'unknown';
    if (nonce !== watch.nonceSent) {
      this.deps.metrics.expiredNonce.inc({ type });
      this.deps.log.debug({ conn: conn.id, type, nonce, current: watch.nonceSent }, 'ADS: stale nonce ignored');
      return 'stale';
    }
    watch.awaitingAck = false;
    conn.notifyAck();
    if (error) {
      watch.lastError = boundedText(error.message, MAX_ERROR_TEXT);
      this.deps.metrics.xdsRejects.inc({ type });
      this.setReject(conn, type, error.code);
      const held = this.nackLog.take();
      if (held !== undefined) {
        this.deps.log.warn(
          { conn: conn.id, type, version: watch.versionSent, code: error.code, reason: error.message.slice(0, 1024), ...(held > 0 ? { suppressed: held } : {}) },
          'ADS: NACK',
        );
      }
      // The client kept what it had before the rejected response: the next one lists everything.
      if (!conn.delta && PARTIAL_STATE_TYPES.has(watch.typeUrl)) watch.resendAll = true;
      return 'nack';
    }
    const rejected = conn.rejects.get(type);
    if (rejected !== undefined) {
      // the proxy took a response of this type again: it no longer rejects it
      this.rejectGauge(type)?.remove({ node: conn.proxy.id, err: rejected });
      conn.rejects.delete(type);
    }
    watch.nonceAcked = nonce;
    watch.versionAcked = watch.versionSent;
    watch.lastAckAt = Date.now();
    watch.lastError = undefined;
    this.checkConvergence(conn, watch.typeUrl);
    this.observeAck(conn, watch);
    return 'ack';
  }

  private rejectGauge(type: string): RejectGauge | undefined {
    const m = this.deps.metrics;
    return ({ cds: m.cdsReject, eds: m.edsReject, lds: m.ldsReject, rds: m.rdsReject } as Record<string, RejectGauge>)[type];
  }

  /**
   * One series per connected proxy and type, labelled with the NACK's status code (a bounded set),
   * not its text: the text is in the log and in /debug/syncz. Removed when the proxy leaves.
   */
  private setReject(conn: Connection, type: string, code: number): void {
    const gauge = this.rejectGauge(type);
    if (!gauge) return;
    const err = grpc.status[code] ?? 'UNKNOWN';
    const previous = conn.rejects.get(type);
    if (previous !== undefined && previous !== err) gauge.remove({ node: conn.proxy.id, err: previous });
    conn.rejects.set(type, err);
    gauge.set({ node: conn.proxy.id, err }, 1);
  }

  private clearRejects(conn: Connection): void {
    // nothing to clear (the usual case): no walk over every connection, which a mass disconnect
    // of thousands of streams would pay once per stream
    if (conn.rejects.size === 0) return;
    // another stream of the same proxy keeps its series
    for (const c of this.connections.values()) if (c !== conn && c.proxy.id === conn.proxy.id && c.rejects.size > 0) return;
    for (const [type, err] of conn.rejects) this.rejectGauge(type)?.remove({ node: conn.proxy.id, err });
    conn.rejects.clear();
  }

  private checkConvergence(conn: Connection, typeUrl: string): void {
    const pc = conn.pendingConvergence;
    if (!pc) return;
    pc.types.delete(typeUrl);
    if (pc.types.size === 0) {
      this.deps.metrics.convergence.observe((Date.now() - pc.start) / 1000);
      conn.pendingConvergence = undefined;
    }
  }

  private async onRequest(conn: Connection, req: SotwRequest): Promise<void> {
    const typeUrl = req.typeUrl;
    let watch = conn.watches.get(typeUrl);
    // Most requests are ACKs repeating the names of the previous request of their type: the shared
    // names buffer identifies them without comparing names (thousands of EDS names per sidecar ACK).
    if (watch && !req.error && req.namesBytes !== undefined && watch.namesBytes === req.namesBytes) {
      const known = watch;
      const kind = this.track(conn, known, req.nonce, undefined);
      if (kind === 'initial') {
        known.resendAll = true; // a request without a nonce knows nothing: answer with everything
        await this.answer(conn, known);
      }
      return;
    }
    if (!isKnownType(typeUrl)) {
      this.unsupported(conn, typeUrl, 'ADS: request for an unsupported type URL ignored');
      return;
    }
    const wildcard = req.star || (req.empty && WILDCARD_TYPES.has(typeUrl) && (!watch || watch.names === undefined));
    // Keep the current set when the names are the same, so that its identity (and memoized work) stays.
    const unchanged = !wildcard && watch?.names !== undefined && sameNames(watch.names, req.names);
    const names: ReadonlySet<string> | undefined = wildcard ? undefined : unchanged ? watch!.names : this.allowedNames(conn, typeUrl, req.names);
    if (!watch) {
      watch = newWatch(typeUrl, names);
      conn.watches.set(typeUrl, watch);
    }
    const kind = this.track(conn, watch, req.nonce, req.error);
    if (kind === 'stale' || kind === 'nack') return;
    const namesChanged = !sameNames(watch.names, names);
    if (namesChanged) watch.names = names;
    watch.namesBytes = req.namesBytes;
    if (kind === 'initial') watch.resendAll = true; // a request without a nonce knows nothing: answer with everything
    if (kind === 'initial' || namesChanged) {
      // A changed subscription is always answered, even when the resulting set is unchanged, so a
      // client asking for a name that does not exist learns it at once instead of waiting on a timer.
      await this.answer(conn, watch);
    }
  }

  private async onDeltaRequest(conn: Connection, raw: Buffer): Promise<void> {
    const req = this.decodeDelta(raw);
    const typeUrl = req.typeUrl;
    if (!isKnownType(typeUrl)) {
      this.unsupported(conn, typeUrl, 'ADS: delta request for an unsupported type URL ignored');
      return;
    }
    let watch = conn.watches.get(typeUrl);
    const first = !watch;
    if (!watch) {
      const wildcard = req.resourceNamesSubscribe.includes('*') || (req.resourceNamesSubscribe.length === 0 && WILDCARD_TYPES.has(typeUrl));
      let names: Set<string> | undefined;
      if (!wildcard) {
        const allowed = this.allowedNames(conn, typeUrl, new Set(req.resourceNamesSubscribe));
        this.checkDeltaBound(typeUrl, 0, 0, allowed.size, namesBytes(allowed));
        names = new Set([...allowed].map(intern));
      }
      watch = newWatch(typeUrl, names);
      watch.namesByteCount = names ? namesBytes(names) : 0;
      for (const [n, v] of Object.entries(req.initialResourceVersions)) watch.sent.set(n, v);
      conn.watches.set(typeUrl, watch);
    }
    const kind = this.track(conn, watch, req.responseNonce, req.errorDetail ? { code: req.errorDetail.code, message: req.errorDetail.message } : undefined);
    if (kind === 'stale' || kind === 'nack') return;
    if (first || !watch.names) {
      // a first subscription by name is answered like any later one: what exists, and what does not
      const only = watch.names && generatorNames(conn, watch);
      if (first) await this.answer(conn, watch, only);
      return;
    }
    // Work proportional to the change (issue 15): the subscription is edited in place, an
    // unsubscribe needs no answer, and a subscribe is answered with the new names only.
    const names = watch.names as Set<string>;
    let bytes = watch.namesByteCount ?? 0;
    let removed = false;
    for (const n of req.resourceNamesUnsubscribe) {
      if (names.delete(n)) {
        watch.sent.delete(n);
        bytes -= Buffer.byteLength(n);
        removed = true;
      }
    }
    const added = new Set<string>();
    let addedBytes = 0;
    const wanted = req.resourceNamesSubscribe.length > 0 ? this.allowedNames(conn, typeUrl, new Set(req.resourceNamesSubscribe)) : undefined;
    for (const n of wanted ?? []) {
      if (n === '*' || names.has(n) || added.has(n)) continue;
      added.add(n);
      addedBytes += Buffer.byteLength(n);
    }
    watch.namesByteCount = bytes;
    if (removed) watch.namesView = undefined;
    // past the bound nothing of this request is taken: the stream ends with the reason
    this.checkDeltaBound(typeUrl, names.size, bytes, added.size, addedBytes);
    for (const n of added) names.add(intern(n));
    watch.namesByteCount = bytes + addedBytes;
    if (added.size > 0) watch.namesView = undefined;
    if (added.size > 0) await this.answer(conn, watch, added);
  }

  /**
   * A delta watch holds at most MAX_DELTA_NAMES names of at most MAX_DELTA_NAME_BYTES (issue 15):
   * names are the client's choice and kept as long as its stream. A subscribe past either ends the
   * stream with RESOURCE_EXHAUSTED, counted in disc_xds_subscription_too_large.
   */
  private checkDeltaBound(typeUrl: string, held: number, heldBytes: number, adding: number, addingBytes: number): void {
    const maxNames = this.deps.options.maxDeltaNames ?? MAX_DELTA_NAMES;
    const maxBytes = Math.min(MAX_DELTA_NAME_BYTES, maxNames * 1024);
    if (held + adding <= maxNames && heldBytes + addingBytes <= maxBytes) return;
    const type = shortType[typeUrl as XdsTypeUrl] ?? 'unknown';
    this.deps.metrics.requestsTooLarge.inc({ type });
    throw new StreamError(
      grpc.status.RESOURCE_EXHAUSTED,
      `delta subscription to ${type} would hold ${held + adding} names (${heldBytes + addingBytes} bytes); a stream may subscribe to at most ${maxNames} names of ${maxBytes} bytes per type`,
    );
  }

  private unsupported(conn: Connection, typeUrl: string, line: string): void {
    const held = this.unsupportedLog.take();
    if (held !== undefined) this.deps.log.warn({ conn: conn.id, typeUrl: typeUrl.slice(0, 256), ...(held > 0 ? { suppressed: held } : {}) }, line);
  }

  /** `names` without those the stream may not have (AdsDeps.access); the same set when none is refused. */
  private allowedNames(conn: Connection, typeUrl: string, names: ReadonlySet<string>): ReadonlySet<string> {
    const refused = this.deps.access?.(conn.proxy, typeUrl, names);
    if (!refused || refused.size === 0) return names;
    const kept = new Set<string>();
    for (const n of names) if (!refused.has(n)) kept.add(n);
    return kept;
  }

  /** Worker of the push queue. */
  private async pushConnection(conn: Connection, req: PushRequest, enqueuedAt: number, slot: Slot): Promise<void> {
    if (conn.closed) return;
    this.deps.metrics.queueTime.observe((Date.now() - enqueuedAt) / 1000);
    const affected = affectedTypes(req, conn.proxy.type);
    // The request covers every change up to the current snapshot (later ones queue behind it): a
    // type it does not reach is the same in that snapshot, so a client holding it holds the snapshot.
    const model = this.deps.model();
    const untouched = [...conn.watches].filter(([typeUrl]) => !affected.has(typeUrl as XdsTypeUrl)).map(([, watch]) => [watch, watch.snapshotSent] as const);
    const types = PUSH_ORDER.filter((t) => conn.watches.has(t) && affected.has(t));
    await this.pushTypes(conn, types, req, false, slot);
    // Told after the push, not before: observers learn of the snapshot from the same model event,
    // after this push was queued. A type the client asked for again meanwhile has its own answer.
    for (const [watch, sent] of untouched) if (!conn.closed && watch.snapshotSent === sent) this.unchangedAt(conn, watch, model);
  }

  /**
   * Answers a client's request of `watch`'s type with a request slot, in the connection's line
   * (rankOf); `only` (delta): the names just subscribed.
   */
  private answer(conn: Connection, watch: WatchState, only?: ReadonlySet<string>): Promise<void> {
    const rank = rankOf(conn, watch);
    return this.requestLimiter.run((slot) => this.pushTypes(conn, [watch.typeUrl], undefined, true, slot, only, rank), rank);
  }

  /**
   * Generate and send the given types to one connection, skipping types whose content is unchanged.
   * Generation holds `slot`; waiting on the client (flow control, the write) does not. `only`
   * (delta, one type): the names just subscribed; only they are generated and sent. `rank`: the
   * writes' place in line (an answer's, or a fresh one per type for a push).
   */
  private async pushTypes(
    conn: Connection,
    types: ReadonlyArray<string>,
    req: PushRequest | undefined,
    force: boolean,
    slot: Slot,
    only?: ReadonlySet<string>,
    rank?: number,
  ): Promise<void> {
    const model = this.deps.model();
    const generators = this.deps.generatorsFor(conn.proxy);
    const sentTypes = new Set<string>();
    for (const typeUrl of types) {
      const watch = conn.watches.get(typeUrl);
      if (!watch || conn.closed) continue;
      if (req && !req.full && typeUrl === TypeUrl.Endpoint && !this.edsAffected(conn, watch, req)) continue;
      await slot.hold();
      if (conn.closed) return;
      // Generation for a scope can take a while: let ACKs and health checks in between.
      const turn = yieldPoint();
      if (turn) await turn;
      const started = process.hrtime.bigint();
      let resources: ReadonlyArray<EncodedResource>;
      const names = only ?? generatorNames(conn, watch);
      const input = { proxy: conn.proxy, push: model.push, endpoints: model.endpoints, names, few: only !== undefined, cache: this.deps.cache, settings: this.deps.settings };
      try {
        // Generation runs within this turn's share of the loop: a large list that is not finished
        // by then keeps its progress and asks for another turn (model/derived.ts).
        const built = await overTurns(() => generators[typeUrl as XdsTypeUrl](input), () => conn.closed);
        if (built === undefined) return;
        resources = built;
      } catch (e) {
        this.deps.metrics.xdsPushes.inc({ type: `${shortType[typeUrl as XdsTypeUrl]}_builderr` });
        this.deps.metrics.internalErrors.inc();
        this.deps.log.error({ conn: conn.id, typeUrl, err: e instanceof Error ? e.stack : String(e) }, 'ADS: generation failed');
        continue;
      }
      if (typeUrl === TypeUrl.Listener) this.countListenerConflicts(conn, this.deps.listenerConflicts?.(conn.proxy, model.push, model.endpoints));
      // Flow control holds server-initiated pushes only: an answer to the client's own request must not
      // wait for an ACK that is queued behind that request on the same stream.
      const throttled = req !== undefined;
      const send: SendInput = { conn, watch, resources, model, force, throttled, slot, rank: rank ?? rankOf(conn, watch) };
      const sent = conn.delta ? await this.sendDelta(send, only) : await this.sendSotw(send);
      if (sent) {
        sentTypes.add(typeUrl);
        this.deps.metrics.pushTime.observe({ type: shortType[typeUrl as XdsTypeUrl] }, Number(process.hrtime.bigint() - started) / 1e9);
      }
    }
    if (req && sentTypes.size > 0) conn.pendingConvergence = { start: req.start, types: sentTypes };
  }

  /** Replaces a connection's share of the disc_conflict_* gauges (the sum over connected proxies). */
  private countListenerConflicts(conn: Connection, now: ListenerConflicts | undefined): void {
    const before = conn.listenerConflicts;
    conn.listenerConflicts = now;
    const m = this.deps.metrics;
    const gauges = [
      [m.conflictInboundListener, 'inbound'],
      [m.conflictHttpOverTcp, 'httpOverCurrentTcp'],
      [m.conflictTcpOverHttp, 'tcpOverCurrentHttp'],
      [m.conflictTcpOverTcp, 'tcpOverCurrentTcp'],
    ] as const;
    for (const [gauge, key] of gauges) {
      const delta = (now?.[key] ?? 0) - (before?.[key] ?? 0);
      if (delta !== 0) gauge.inc(delta);
    }
  }

  private edsAffected(conn: Connection, watch: WatchState, req: PushRequest): boolean {
    return mayName(generatorNames(conn, watch), req.edsHosts);
  }

  /**
   * The response frame for a resource list. Proxies of one scope share their lists, so the frame is
   * built once per list and version and written to each of them: the nonce is derived from the
   * version and the list's content (unique per stream for every different response, and meaningful
   * for distribution tracking), not from the connection.
   */
  private sotwFrame(typeUrl: string, version: string, resources: ReadonlyArray<EncodedResource>): { frame: GrpcFrame; nonce: string } {
    const cached = this.frames.get(resources);
    if (cached && cached.version === version && cached.typeUrl === typeUrl) {
      cached.usedAt = Date.now();
      return cached;
    }
    // Partial (EDS/RDS) payloads of different pushes can be equal: the version keeps their nonces apart.
    const nonce = `${this.deps.options.distributionTracking ? `${version}/` : ''}${listVersion(resources).slice(0, 12)}.${versionTag(version)}`;
    const frame = frameDiscoveryResponse(version, typeUrl, nonce, resources.map((r) => r.any), this.controlPlane);
    const entry = { typeUrl, version, frame, nonce, usedAt: Date.now() };
    this.frames.delete(resources);
    this.frames.set(resources, entry);
    if (this.frames.size > FRAME_CACHE_ENTRIES) this.frames.delete(this.frames.keys().next().value!);
    return entry;
  }

  private nextNonce(model: ModelView): string {
    const n = (++this.nonceCounter).toString(36);
    return this.deps.options.distributionTracking ? `${model.push.version}/${n}` : n;
  }

  /** Waits (without a slot) for the ACK of the type's previous response, at most DISC_FLOW_CONTROL_TIMEOUT. */
  private async flowControl(conn: Connection, watch: WatchState, slot: Slot): Promise<void> {
    if (!this.deps.options.flowControl || !watch.awaitingAck) return;
    slot.release();
    const type = shortType[watch.typeUrl as XdsTypeUrl];
    this.deps.metrics.delayedPushes.inc({ type });
    // Any ACK/NACK on the connection wakes the waiter; keep waiting until this type's own answer.
    const deadline = Date.now() + this.deps.options.flowControlTimeoutMs;
    while (watch.awaitingAck && !conn.closed) {
      const left = deadline - Date.now();
      if (left <= 0 || !(await conn.waitForAck(left))) {
        this.deps.metrics.delayedPushTimeouts.inc({ type });
        return;
      }
    }
  }

  private async sendSotw({ conn, watch, resources, model, force, throttled, slot, rank }: SendInput): Promise<boolean> {
    if (!force && !Connection.changed(watch, resources)) {
      this.unchangedAt(conn, watch, model);
      return false;
    }
    // EDS and RDS responses carry only what the client does not hold yet; it keeps the rest.
    const partial = PARTIAL_STATE_TYPES.has(watch.typeUrl) && watch.nonceSent !== '' && !watch.resendAll;
    const payload = partial ? changedResources(watch.sentList, resources) : resources;
    if (partial && payload.length === 0 && !force) {
      // only removals of a partial-state type: the client keeps resources a response leaves out, so
      // there is nothing to say (for listeners and clusters an empty list does say: none is left)
      watch.sentList = resources;
      this.unchangedAt(conn, watch, model);
      return false;
    }
    if (throttled) {
      await this.flowControl(conn, watch, slot);
      await slot.hold();
    }
    // Endpoint-only pushes keep the snapshot: the endpoint index version tells them apart.
    const version = watch.typeUrl === TypeUrl.Endpoint ? `${model.push.version}+e${model.endpoints.version}` : model.push.version;
    const type = shortType[watch.typeUrl as XdsTypeUrl];
    const { frame, nonce } = this.sotwFrame(watch.typeUrl, version, payload);
    // Record before writing: the ACK may arrive before the write promise settles.
    watch.nonceSent = nonce;
    watch.versionSent = version;
    watch.snapshotSent = model.push.version;
    watch.sentList = resources;
    watch.resendAll = false;
    watch.lastSentAt = Date.now();
    watch.awaitingAck = true;
    return this.delivery.send(conn, frame, type, slot, rank);
  }

  /**
   * A push of a newer snapshot had nothing new for this type: a client that ACKed what it holds now
   * holds the new snapshot's config for it.
   */
  private unchangedAt(conn: Connection, watch: WatchState, model: ModelView): void {
    const version = model.push.version;
    if (watch.snapshotSent === version || watch.snapshotSent === '') return;
    // the same content: once the client ACKs what is on the wire, it holds this snapshot's config
    watch.snapshotSent = version;
    if (!watch.awaitingAck && watch.nonceAcked === watch.nonceSent) this.observeAck(conn, watch);
  }

  private async sendDelta({ conn, watch, resources, model, force, throttled, slot, rank }: SendInput, only?: ReadonlySet<string>): Promise<boolean> {
    const changed = resources.filter((r) => watch.sent.get(r.name) !== r.version);
    const present = new Set(resources.map((r) => r.name));
    const removed: string[] = [];
    if (only) {
      // names just subscribed: one without a resource is listed as removed, which tells the client
      // at once that it does not exist (the incremental protocol's way of saying so)
      for (const name of only) if (!present.has(name)) removed.push(name);
    } else {
      for (const name of watch.sent.keys()) {
        if (!present.has(name) && (watch.names === undefined || watch.names.has(name))) removed.push(name);
      }
    }
    if (changed.length === 0 && removed.length === 0 && !force) {
      this.unchangedAt(conn, watch, model);
      return false;
    }
    if (throttled) {
      await this.flowControl(conn, watch, slot);
      await slot.hold();
    }
    const nonce = this.nextNonce(model);
    const type = shortType[watch.typeUrl as XdsTypeUrl];
    const frame = frameDeltaDiscoveryResponse(
      model.push.version,
      watch.typeUrl,
      nonce,
      changed.map((r) => encodeDeltaResource(r.name, r.version, r.any)),
      removed,
      this.controlPlane,
    );
    watch.nonceSent = nonce;
    watch.versionSent = model.push.version;
    watch.snapshotSent = model.push.version;
    for (const r of changed) watch.sent.set(r.name, r.version);
    for (const n of removed) watch.sent.delete(n);
    watch.lastSentAt = Date.now();
    watch.awaitingAck = true;
    return this.delivery.send(conn, frame, type, slot, rank);
  }
}

/** What a response of one type to one connection is sent from (sendSotw, sendDelta). */
interface SendInput {
  readonly conn: Connection;
  readonly watch: WatchState;
  readonly resources: ReadonlyArray<EncodedResource>;
  readonly model: ModelView;
  readonly force: boolean;
  /** A server-initiated push: waits for the previous response's ACK under flow control. */
  readonly throttled: boolean;
  readonly slot: Slot;
  /** Place in line of the write (rankOf). */
  readonly rank: number;
}

/**
 * The place in line of a response of `watch`'s type (docs/adr/0200): until the client has ACKed the
 * type once, it is part of the connection's initial configuration and goes with the connection's
 * rank (older connections are configured first); afterwards, a fresh rank (in the order asked).
 */
function rankOf(conn: Connection, watch: WatchState): number {
  return watch.nonceAcked === '' ? conn.rank : nextRank();
}

/**
 * Most names a delta watch holds: five times the largest mesh a sidecar asks for by name (20,000
 * clusters), and 16 MiB of them (four requests of gRPC's 4 MiB default).
 */
export const MAX_DELTA_NAMES = 200_000;
const MAX_DELTA_NAME_BYTES = 16 * 1024 * 1024;

function namesBytes(names: Iterable<string>): number {
  let n = 0;
  for (const name of names) n += Buffer.byteLength(name);
  return n;
}

/** Longest NACK text kept per watch (shown in /debug/syncz); the rest is cut. */
const MAX_ERROR_TEXT = 4096;

function boundedText(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

/**
 * The readable side of a call, for the backlog to pause. Its buffer is lowered to one message:
 * a paused objectMode stream otherwise still reads 16 more (up to 64 MiB of 4 MiB requests) before
 * HTTP/2 flow control holds the client back.
 */
function readableOf(call: DuplexCall): Readable {
  const state = (call as unknown as { _readableState?: { highWaterMark?: unknown } })._readableState;
  if (state && typeof state.highWaterMark === 'number') state.highWaterMark = 1;
  return { pause: () => call.pause(), resume: () => call.resume() };
}

const versionTags = new Map<string, string>();

/** A short tag per version string (versions are few: one per snapshot and endpoint change). */
function versionTag(version: string): string {
  let tag = versionTags.get(version);
  if (tag === undefined) {
    if (versionTags.size >= 1000) versionTags.clear();
    tag = createHash('sha1').update(version).digest('base64url').slice(0, 6);
    versionTags.set(version, tag);
  }
  return tag;
}

/** The names spans of a stream's subscriptions: its ACKs repeat them. */
function expectedSpans(conn: Connection): Buffer[] {
  const out: Buffer[] = [];
  for (const w of conn.watches.values()) if (w.namesBytes !== undefined) out.push(w.namesBytes);
  return out;
}

