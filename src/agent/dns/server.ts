/**
 * The agent's DNS proxy (docs/adr/0187): listens on 127.0.0.1:15053, UDP and TCP, where
 * `mesh-agent capture --redirect-dns` sends the application's port-53 traffic. A question of type A
 * or AAAA for a name of the name table (a hostname, one of its short names, or either followed by a
 * search domain of /etc/resolv.conf) is answered here with the table's addresses; every other
 * message is forwarded as it came to the upstream resolvers of /etc/resolv.conf, one after the other,
 * and their answer returned. Bounded: at most `maxInFlight` forwarded queries at once (beyond that
 * SERVFAIL at once), each upstream attempt has a timeout, TCP messages and connections are limited,
 * and nothing is cached. Logs and metrics carry names and counts, never more.
 */
import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram';
import { connect, createServer, isIPv6, type Server, type Socket } from 'node:net';
import type { Logger } from 'pino';
import { RCODE, QTYPE, addressAnswer, emptyAnswer, messageId, parseQuery, DnsFormatError, type DnsQuery } from './wire.js';
import type { ResolvConf } from './resolv-conf.js';

/** One name of the table: its addresses (IPv4 and IPv6 text). */
export type NameLookup = (name: string) => ReadonlyArray<string> | undefined;

/** How a message was handled (the `answer` label of mesh_agent_dns_requests_total). */
export type DnsOutcome = 'table' | 'forwarded' | 'upstream_failed' | 'overloaded' | 'malformed';

export interface DnsProxyOptions {
  readonly host: string;
  readonly port: number;
  readonly upstream: ResolvConf;
  readonly lookup: NameLookup;
  readonly log: Logger;
  /** Forwarded queries at once (default 256). */
  readonly maxInFlight?: number;
  /** Timeout of one attempt at one upstream, ms (default 2000). */
  readonly upstreamTimeoutMs?: number;
  /** TTL of table answers, seconds (default 30). */
  readonly ttlSeconds?: number;
  /** Open TCP client connections at once (default 64). */
  readonly maxTcpConnections?: number;
  readonly onOutcome?: (outcome: DnsOutcome, transport: 'udp' | 'tcp') => void;
}

/** Largest DNS message over TCP (two-byte length). */
const MAX_TCP_MESSAGE = 65535;
/** A TCP client that sends nothing for this long is closed. */
const TCP_IDLE_MS = 10_000;

export class DnsProxy {
  private udp?: UdpSocket;
  private tcp?: Server;
  private inFlight = 0;
  private readonly tcpClients = new Set<Socket>();
  private readonly maxInFlight: number;
  private readonly timeoutMs: number;
  private readonly ttl: number;
  private readonly maxTcp: number;

  constructor(private readonly o: DnsProxyOptions) {
    this.maxInFlight = o.maxInFlight ?? 256;
    this.timeoutMs = o.upstreamTimeoutMs ?? 2000;
    this.ttl = o.ttlSeconds ?? 30;
    this.maxTcp = o.maxTcpConnections ?? 64;
  }

  /** The bound UDP and TCP port (equal; the option's unless it was 0). */
  get port(): number {
    const a = this.udp?.address();
    return a ? a.port : this.o.port;
  }

  async start(): Promise<void> {
    // With port 0 the UDP socket takes a free port and TCP must take the same number, which another
    // TCP socket may hold: then both are given up and another UDP port is tried.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.bindBoth();
        break;
      } catch (err) {
        const inUse = (err as NodeJS.ErrnoException).code === 'EADDRINUSE';
        await this.stop();
        if (this.o.port !== 0 || !inUse || attempt >= 20) throw err;
      }
    }
    this.o.log.info({ address: `${this.o.host}:${this.port}`, upstreams: this.o.upstream.nameservers.map((n) => n.host) }, 'DNS proxy listening');
  }

  private async bindBoth(): Promise<void> {
    this.udp = undefined;
    this.tcp = undefined;
    const udp = createSocket(isIPv6(this.o.host) ? 'udp6' : 'udp4');
    this.udp = udp;
    udp.on('message', (msg, from) => void this.onUdp(msg, from));
    udp.on('error', (err) => this.o.log.warn(`DNS proxy: UDP socket: ${err.message}`));
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(this.o.port, this.o.host, () => {
        udp.off('error', reject);
        resolve();
      });
    });
    const tcp = createServer((s) => this.onTcpClient(s));
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen(this.port, this.o.host, () => {
        tcp.off('error', reject);
        resolve();
      });
    });
    this.tcp = tcp;
  }

  async stop(): Promise<void> {
    for (const c of this.tcpClients) c.destroy();
    await Promise.all([
      new Promise<void>((r) => {
        try {
          if (this.udp) this.udp.close(() => r());
          else r();
        } catch {
          r(); // closed already, or never bound
        }
      }),
      new Promise<void>((r) => (this.tcp ? this.tcp.close(() => r()) : r())),
    ]);
  }

  /** The answer to one message: from the table, or from upstream; undefined when none can be given. */
  private async answer(msg: Buffer, transport: 'udp' | 'tcp'): Promise<Buffer | undefined> {
    let q: DnsQuery;
    try {
      q = parseQuery(msg);
    } catch (err) {
      this.o.onOutcome?.('malformed', transport);
      if (err instanceof DnsFormatError) this.o.log.debug(`DNS proxy: unreadable message: ${err.message}`);
      return undefined;
    }
    if (q.standard && q.qclass === 1) {
      const addresses = this.find(q.name);
      if (addresses) {
        this.o.onOutcome?.('table', transport);
        if (q.qtype === QTYPE.A || q.qtype === QTYPE.AAAA) return addressAnswer(msg, q, addresses, this.ttl);
        // the name exists, not with this type
        return emptyAnswer(msg, q, RCODE.NOERROR);
      }
    }
    if (this.inFlight >= this.maxInFlight) {
      this.o.onOutcome?.('overloaded', transport);
      return emptyAnswer(msg, q, RCODE.SERVFAIL);
    }
    this.inFlight++;
    try {
      for (const up of this.o.upstream.nameservers) {
        const reply = await (transport === 'udp' ? this.forwardUdp(msg, up) : this.forwardTcp(msg, up)).catch((err: unknown) => {
          this.o.log.debug(`DNS proxy: upstream ${up.host}: ${(err as Error).message}`);
          return undefined;
        });
        if (reply && messageId(reply) === q.id) {
          this.o.onOutcome?.('forwarded', transport);
          return reply;
        }
      }
    } finally {
      this.inFlight--;
    }
    this.o.onOutcome?.('upstream_failed', transport);
    return emptyAnswer(msg, q, RCODE.SERVFAIL);
  }

  /** The table's addresses for `name`, also when a search domain was appended to a table name. */
  private find(name: string): ReadonlyArray<string> | undefined {
    const direct = this.o.lookup(name);
    if (direct) return direct;
    for (const d of this.o.upstream.search) {
      if (name.length > d.length + 1 && name.endsWith(`.${d}`)) {
        const hit = this.o.lookup(name.slice(0, -(d.length + 1)));
        if (hit) return hit;
      }
    }
    return undefined;
  }

  private forwardUdp(msg: Buffer, up: { host: string; port: number }): Promise<Buffer> {
    return this.exchange((done) => {
      const sock = createSocket(isIPv6(up.host.replace(/%.*$/, '')) ? 'udp6' : 'udp4');
      const id = messageId(msg);
      sock.on('error', (err) => done(err));
      sock.on('message', (reply, from) => {
        // only the upstream's answer to this query
        if (from.port === up.port && messageId(reply) === id) done(undefined, reply);
      });
      sock.send(msg, up.port, up.host);
      return () => sock.close();
    });
  }

  private forwardTcp(msg: Buffer, up: { host: string; port: number }): Promise<Buffer> {
    return this.exchange((done) => {
      const sock = connect({ host: up.host, port: up.port });
      let buf = Buffer.alloc(0);
      sock.on('error', (err) => done(err));
      sock.on('connect', () => sock.write(framed(msg)));
      sock.on('data', (chunk: Buffer) => {
        buf = Buffer.concat([buf, chunk]);
        if (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) done(undefined, buf.subarray(2, 2 + buf.readUInt16BE(0)));
      });
      sock.on('end', () => done(new Error('closed before answering')));
      return () => sock.destroy();
    });
  }

  /**
   * One exchange with an upstream under the attempt timeout: `start` sends and calls `done` once
   * with the answer or a failure; it returns what closes its socket, which runs once it settles.
   */
  private exchange(start: (done: (err?: Error, reply?: Buffer) => void) => () => void): Promise<Buffer> {
    let close = (): void => undefined;
    const answer = new Promise<Buffer>((resolve, reject) => {
      // a settled promise ignores later calls: the first answer, failure or timeout wins
      const timer = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
      close = start((err, reply) => {
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(reply!);
      });
    });
    return answer.finally(() => close());
  }

  private async onUdp(msg: Buffer, from: RemoteInfo): Promise<void> {
    const reply = await this.answer(msg, 'udp');
    if (reply) this.udp?.send(reply, from.port, from.address);
  }

  private onTcpClient(s: Socket): void {
    if (this.tcpClients.size >= this.maxTcp) {
      s.destroy();
      this.o.onOutcome?.('overloaded', 'tcp');
      return;
    }
    this.tcpClients.add(s);
    s.setTimeout(TCP_IDLE_MS, () => s.destroy());
    s.on('close', () => this.tcpClients.delete(s));
    s.on('error', () => s.destroy());
    let buf = Buffer.alloc(0);
    // one message at a time per connection, in order
    let chain = Promise.resolve();
    s.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (buf.length > MAX_TCP_MESSAGE + 2) {
        s.destroy();
        return;
      }
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const msg = Buffer.from(buf.subarray(2, 2 + buf.readUInt16BE(0)));
        buf = buf.subarray(2 + msg.length);
        chain = chain.then(async () => {
          const reply = await this.answer(msg, 'tcp');
          if (reply && !s.destroyed) s.write(framed(reply));
          else if (!reply) s.destroy();
        });
      }
    });
  }
}

function framed(msg: Buffer): Buffer {
  const len = Buffer.alloc(2);
  len.writeUInt16BE(msg.length, 0);
  return Buffer.concat([len, msg]);
}

/**
 * A lookup over the entries of a name table: every hostname and alias, in lower case, to the entry's
 * addresses. Built once per table the agent receives.
 */
export function tableLookup(entries: ReadonlyArray<{ readonly hostname: string; readonly aliases: ReadonlyArray<string>; readonly addresses: ReadonlyArray<string> }>): Map<string, ReadonlyArray<string>> {
  const byName = new Map<string, ReadonlyArray<string>>();
  for (const e of entries) {
    for (const n of [e.hostname, ...e.aliases]) {
      const k = n.toLowerCase().replace(/\.$/, '');
      // a hostname is never shadowed by another host's alias
      if (!byName.has(k) || n === e.hostname) byName.set(k, e.addresses);
    }
  }
  return byName;
}
