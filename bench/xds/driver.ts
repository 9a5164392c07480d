/**
 * The client driver: one process holding every simulated xDS client, so that the daemon's CPU use
 * can be read alone from /proc. Started by main.ts with an IPC channel; see protocol.ts.
 *
 * Each client is one state-of-the-world ADS stream. Streams are spread over a handful of grpc-js
 * channels (one HTTP/2 connection each, `streamsPerChannel` streams per channel).
 *
 *  - sidecar (Envoy-like): wildcard CDS and LDS; for each CDS response, EDS for its EDS clusters;
 *    for each LDS response, RDS for the route names of the listeners' connection managers.
 *  - grpc (proxyless, GENERATOR=grpc): LDS for one `host:port`, then RDS for the listener's route,
 *    CDS for the routes' clusters, EDS for the EDS clusters.
 *
 * Every response is ACKed with its version and nonce, after any new subscription it implies (as
 * Envoy does). A client is complete when it has ACKed every type and the ACKed resources cover
 * every name its other resources reference.
 */
import * as grpc from '@grpc/grpc-js';
import { ResourceMemo, TYPE_KEY, TYPE_URL, type ResourceInfo, type TypeKey } from './decode.js';
import { encodeNames, encodeNodeField, encodeRequest, parseResponse } from './frames.js';
import type { ClientSpec } from './protocol.js';
import type { ArmCommand, ClientKind, DriverCommand, DriverEvent, EditResult, InitialResult, MeasureCommand, PerType, StartCommand } from './protocol.js';

const ADS_METHOD = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';
const identity = (b: Buffer): Buffer => b;

function send(ev: DriverEvent): void {
  process.send?.(ev);
}

const zero = (): PerType => ({ cds: 0, eds: 0, lds: 0, rds: 0 });
const sinceMs = (from: bigint, to: bigint = process.hrtime.bigint()): number => Number(to - from) / 1e6;

interface Watch {
  /** undefined: wildcard. */
  names: ReadonlyArray<string> | undefined;
  namesBlock: Buffer;
  version: string;
  nonce: string;
  /** Content of the last ACKed response that covered every subscribed name. */
  info: ResourceInfo | undefined;
  /**
   * EDS and RDS: names received since in responses that carried only some of the subscribed
   * resources (the server sends only what changed; the client keeps the rest, as Envoy does).
   */
  extra: Set<string> | undefined;
}

const memo = new ResourceMemo();
const blocks = new WeakMap<ReadonlyArray<string>, Buffer>();
const EMPTY_NAMES: ReadonlyArray<string> = [];

function namesBlock(names: ReadonlyArray<string>): Buffer {
  let b = blocks.get(names);
  if (!b) {
    b = encodeNames(names);
    blocks.set(names, b);
  }
  return b;
}

function sameList(a: ReadonlyArray<string> | undefined, b: ReadonlyArray<string>): boolean {
  if (!a) return false;
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function covers(info: ResourceInfo | undefined, names: ReadonlyArray<string>): boolean {
  if (names.length === 0) return true;
  if (!info) return false;
  for (const n of names) if (!info.names.has(n)) return false;
  return true;
}

/** Whether the client holds every one of `names` of the watch (its full response plus partial ones since). */
function holds(w: Watch | undefined, names: ReadonlyArray<string>): boolean {
  if (names.length === 0) return true;
  if (!w?.info) return false;
  if (!w.extra) return covers(w.info, names);
  for (const n of names) if (!w.info.names.has(n) && !w.extra.has(n)) return false;
  return true;
}

/** EDS and RDS responses may carry only some of the subscribed resources (not full-state types). */
const PARTIAL_TYPES: ReadonlySet<TypeKey> = new Set(['eds', 'rds']);

/** What the edit window is looking for, and what it saw. */
interface Window {
  readonly arm: ArmCommand;
  readonly expected: Set<number>;
  readonly ackedAt: Map<number, bigint>;
  readonly responses: PerType;
  readonly bytes: PerType;
  readonly clientsByType: Record<TypeKey, Set<number>>;
  readonly gotAny: Set<number>;
  firstResponseAt: bigint;
  lastResponseAt: bigint;
  readonly cpuAtArm: NodeJS.CpuUsage;
}

class Driver {
  readonly clients: SimClient[] = [];
  readonly channels: grpc.Client[] = [];
  readonly responses = zero();
  readonly bytes = zero();
  readonly errors: string[] = [];
  failedStreams = 0;
  completeCount = 0;
  window: Window | undefined;
  lastResponseAt = process.hrtime.bigint();

  constructor(readonly cfg: StartCommand) {}

  error(msg: string): void {
    if (this.errors.length < 10) this.errors.push(msg);
  }

  async open(): Promise<number> {
    const started = process.hrtime.bigint();
    const per = Math.max(1, this.cfg.streamsPerChannel);
    for (let c = 0; c < this.cfg.clients; c++) {
      if (c % per === 0) {
        this.channels.push(
          new grpc.Client(this.cfg.addr, grpc.credentials.createInsecure(), {
            // a connection of its own per channel (no sharing through the global subchannel pool)
            'grpc.use_local_subchannel_pool': 1,
            'grpc.max_receive_message_length': -1,
            'grpc.max_send_message_length': -1,
            ...(this.cfg.windowBytes > 0 ? { 'grpc-node.flow_control_window': this.cfg.windowBytes } : {}),
          }),
        );
      }
      this.clients.push(new SimClient(this, c, this.cfg.kind, this.cfg.clientSpecs[c], this.channels[this.channels.length - 1]));
      // let the event loop breathe so that early streams are served while later ones open
      if (c % 50 === 49) await new Promise((r) => setImmediate(r));
    }
    return sinceMs(started);
  }

  async initial(): Promise<InitialResult> {
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    const openMs = await this.open();
    const deadline = Date.now() + this.cfg.timeoutMs;
    let timedOut = false;
    while (this.completeCount + this.failedStreams < this.cfg.clients) {
      if (Date.now() > deadline) {
        timedOut = true;
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    const wallMs = sinceMs(t0);
    const completionMs = this.clients
      .filter((c) => c.completedAt !== undefined)
      .map((c) => sinceMs(c.openedAt, c.completedAt))
      .sort((a, b) => a - b);
    const cpu = process.cpuUsage(cpu0);
    return {
      clients: this.cfg.clients,
      complete: this.completeCount,
      failedStreams: this.failedStreams,
      completionMs,
      wallMs,
      openMs,
      responses: { ...this.responses },
      bytes: { ...this.bytes },
      driverCpuS: (cpu.user + cpu.system) / 1e6,
      decodes: memo.decodes,
      memoHits: memo.hits,
      errors: [...this.errors],
      timedOut,
    };
  }

  arm(cmd: ArmCommand): void {
    const expected = new Set<number>();
    for (const i of cmd.expected) if (this.clients[i] && !this.clients[i].failed) expected.add(i);
    this.window = {
      arm: cmd,
      expected,
      ackedAt: new Map(),
      responses: zero(),
      bytes: zero(),
      clientsByType: { cds: new Set(), eds: new Set(), lds: new Set(), rds: new Set() },
      gotAny: new Set(),
      firstResponseAt: 0n,
      lastResponseAt: 0n,
      cpuAtArm: process.cpuUsage(),
    };
  }

  async measure(cmd: MeasureCommand): Promise<EditResult> {
    const w = this.window;
    if (!w) throw new Error('measure without arm');
    const written = BigInt(cmd.writtenAtNs);
    const deadline = Date.now() + cmd.timeoutMs;
    let timedOut = false;
    const allAcked = (): boolean => [...w.expected].every((i) => w.ackedAt.has(i) || this.clients[i].failed !== undefined);
    for (;;) {
      const now = process.hrtime.bigint();
      const quiet = sinceMs(w.lastResponseAt > written ? w.lastResponseAt : written, now) >= cmd.quietMs;
      if (allAcked() && quiet) break;
      if (Date.now() > deadline) {
        timedOut = true;
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    const latenciesMs = [...w.ackedAt.values()].map((t) => sinceMs(written, t)).sort((a, b) => a - b);
    let unexpected = 0;
    for (const i of w.gotAny) if (!w.expected.has(i)) unexpected++;
    const cpu = process.cpuUsage(w.cpuAtArm);
    this.window = undefined;
    return {
      expected: w.expected.size,
      latenciesMs,
      gotAny: w.gotAny.size,
      unexpectedGotAny: unexpected,
      responses: w.responses,
      bytes: w.bytes,
      clientsByType: { cds: w.clientsByType.cds.size, eds: w.clientsByType.eds.size, lds: w.clientsByType.lds.size, rds: w.clientsByType.rds.size },
      firstResponseMs: w.firstResponseAt > 0n ? sinceMs(written, w.firstResponseAt) : NaN,
      lastResponseMs: w.lastResponseAt > written ? sinceMs(written, w.lastResponseAt) : 0,
      driverCpuS: (cpu.user + cpu.system) / 1e6,
      timedOut,
      failedStreams: this.failedStreams,
    };
  }

  close(): void {
    for (const c of this.clients) c.close();
    for (const ch of this.channels) ch.close();
  }
}

class SimClient {
  readonly openedAt = process.hrtime.bigint();
  completedAt: bigint | undefined;
  failed: string | undefined;
  private closing = false;
  private readonly call: grpc.ClientDuplexStream<Buffer, Buffer>;
  private readonly watches: Partial<Record<TypeKey, Watch>> = {};
  private node: Buffer | undefined;
  private readonly target: string | undefined;

  constructor(
    private readonly driver: Driver,
    readonly idx: number,
    private readonly kind: ClientKind,
    spec: ClientSpec,
    channel: grpc.Client,
  ) {
    this.node = encodeNodeField({
      id: spec.id,
      cluster: spec.cluster,
      metadata: spec.metadata,
      dynamicParameters: {},
      locality: { region: '', zone: '', subZone: '' },
      userAgentName: spec.userAgent,
      userAgentVersion: '0.0.0-bench',
      extensions: [],
      clientFeatures: [],
      listeningAddresses: [],
    });
    this.target = spec.target;
    this.call = channel.makeBidiStreamRequest<Buffer, Buffer>(ADS_METHOD, identity, identity, new grpc.Metadata());
    this.call.on('data', (buf: Buffer) => {
      try {
        this.onResponse(buf);
      } catch (e) {
        this.fail(`client ${idx}: ${e instanceof Error ? e.message : String(e)}`);
      }
    });
    this.call.on('error', (err: grpc.ServiceError) => this.fail(`client ${idx}: stream error ${grpc.status[err.code] ?? err.code}: ${err.details}`));
    this.call.on('status', (s: grpc.StatusObject) => {
      if (s.code !== grpc.status.OK) this.fail(`client ${idx}: stream ended ${grpc.status[s.code] ?? s.code}: ${s.details}`);
    });
    if (kind === 'sidecar') {
      this.subscribe('cds', undefined);
      this.subscribe('lds', undefined);
    } else {
      this.subscribe('lds', [this.target!]);
    }
  }

  private fail(msg: string): void {
    if (this.failed || this.closing) return;
    this.failed = msg;
    this.driver.failedStreams++;
    this.driver.error(msg);
  }

  close(): void {
    this.closing = true;
    this.call.cancel();
  }

  /** Starts or changes the subscription of one type (no-op when the names are the same). */
  private subscribe(type: TypeKey, names: ReadonlyArray<string> | undefined): void {
    let w = this.watches[type];
    if (w && names && sameList(w.names, names)) return;
    if (!w && names && names.length === 0) return;
    if (!w) {
      w = { names, namesBlock: namesBlock(names ?? EMPTY_NAMES), version: '', nonce: '', info: undefined, extra: undefined };
      this.watches[type] = w;
    } else {
      w.names = names;
      w.namesBlock = namesBlock(names ?? EMPTY_NAMES);
    }
    this.write(type, w);
  }

  private write(type: TypeKey, w: Watch): void {
    const node = this.node;
    this.node = undefined; // the node goes with the first request only
    this.call.write(encodeRequest({ versionInfo: w.version, node, names: w.namesBlock, typeUrl: TYPE_URL[type], nonce: w.nonce }));
  }

  private onResponse(buf: Buffer): void {
    const now = process.hrtime.bigint();
    const env = parseResponse(buf);
    const type = TYPE_KEY[env.typeUrl];
    const d = this.driver;
    d.lastResponseAt = now;
    if (!type) {
      d.error(`client ${this.idx}: response of unknown type ${env.typeUrl}`);
      return;
    }
    d.responses[type]++;
    d.bytes[type] += buf.length;
    const win = d.window;
    if (win) {
      win.responses[type]++;
      win.bytes[type] += buf.length;
      win.clientsByType[type].add(this.idx);
      win.gotAny.add(this.idx);
      if (win.firstResponseAt === 0n) win.firstResponseAt = now;
      win.lastResponseAt = now;
    }
    const w = this.watches[type];
    if (!w) {
      d.error(`client ${this.idx}: unsolicited ${type} response`);
      return;
    }
    const info = memo.info(env);
    w.version = env.versionInfo;
    w.nonce = env.nonce;
    if (PARTIAL_TYPES.has(type) && w.info && w.names && !covers(info, w.names)) {
      // a partial response: the client keeps what it had and adds these (grpc clients watch one
      // route name, so their RDS responses are never partial and routeClusters stays whole)
      w.extra ??= new Set();
      for (const n of info.names) w.extra.add(n);
    } else {
      w.info = info;
      w.extra = undefined;
    }
    // subscriptions the response implies go out before its ACK, as Envoy does
    if (this.kind === 'sidecar') {
      if (type === 'cds') this.subscribe('eds', info.edsClusters);
      else if (type === 'lds') this.subscribe('rds', info.routeNames);
    } else {
      if (type === 'lds') this.subscribe('rds', info.routeNames);
      else if (type === 'rds') this.subscribe('cds', info.routeClusters);
      else if (type === 'cds') this.subscribe('eds', info.edsClusters);
    }
    this.write(type, w); // ACK
    const ackedAt = process.hrtime.bigint();
    if (win && win.arm.probe.type === type && !win.ackedAt.has(this.idx)) {
      const sig = info.signatures.get(win.arm.probe.key);
      if (sig !== undefined && win.arm.probe.mustContain.every((s) => sig.includes(s))) win.ackedAt.set(this.idx, ackedAt);
    }
    if (this.completedAt === undefined && this.complete()) {
      this.completedAt = ackedAt;
      d.completeCount++;
    }
  }

  private complete(): boolean {
    const cds = this.watches.cds?.info;
    const lds = this.watches.lds?.info;
    const rds = this.watches.rds?.info;
    if (!cds || !lds) return false;
    if (this.kind === 'sidecar') return holds(this.watches.eds, cds.edsClusters) && holds(this.watches.rds, lds.routeNames);
    if (!lds.names.has(this.target!)) return false;
    if (!rds || !holds(this.watches.rds, lds.routeNames)) return false;
    return covers(cds, rds.routeClusters) && holds(this.watches.eds, cds.edsClusters);
  }
}

let driver: Driver | undefined;

async function handle(cmd: DriverCommand): Promise<void> {
  switch (cmd.cmd) {
    case 'start':
      driver = new Driver(cmd);
      send({ ev: 'initial', result: await driver.initial() });
      break;
    case 'arm':
      if (!driver) throw new Error('arm before start');
      driver.arm(cmd);
      send({ ev: 'armed' });
      break;
    case 'measure':
      if (!driver) throw new Error('measure before start');
      send({ ev: 'edit', result: await driver.measure(cmd) });
      break;
    case 'stop':
      driver?.close();
      send({ ev: 'stopped' });
      setTimeout(() => process.exit(0), 100).unref();
      break;
  }
}

process.on('message', (cmd: DriverCommand) => {
  handle(cmd).catch((e: unknown) => {
    send({ ev: 'fatal', message: e instanceof Error ? (e.stack ?? e.message) : String(e) });
    setTimeout(() => process.exit(1), 100).unref();
  });
});
// the runner going away ends the driver
process.on('disconnect', () => process.exit(0));
send({ ev: 'loaded' });
