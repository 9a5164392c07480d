/**
 * DNS capture in one piece (docs/adr/0187): the name table from meshd (./name-table-client.ts) feeds
 * the DNS proxy on 127.0.0.1:15053 (./server.ts), which forwards everything else to the resolvers of
 * /etc/resolv.conf. Until the first table arrives every query is forwarded, as without capture.
 */
import { readFile } from 'node:fs/promises';
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { AgentMetrics } from '../metrics.js';
import { NameTableClient } from './name-table-client.js';
import { parseResolvConf } from './resolv-conf.js';
import { DnsProxy, tableLookup } from './server.js';

export interface DnsCaptureOptions {
  /** meshd's xDS address and the name its certificate is checked for. */
  readonly discoveryAddress: string;
  readonly serverName: string;
  readonly credentials: () => grpc.ChannelCredentials;
  readonly node: { readonly id: string; readonly metadata: Readonly<Record<string, unknown>> };
  readonly host: string;
  readonly port: number;
  readonly resolvConfPath: string;
  readonly log: Logger;
  readonly metrics: Pick<AgentMetrics, 'dnsRequests' | 'dnsNames'>;
}

export interface DnsCapture {
  readonly proxy: DnsProxy;
  readonly client: NameTableClient;
  stop(): Promise<void>;
}

export async function startDnsCapture(o: DnsCaptureOptions): Promise<DnsCapture> {
  let text: string;
  try {
    text = await readFile(o.resolvConfPath, 'utf8');
  } catch (err) {
    throw new Error(`DNS capture: cannot read ${o.resolvConfPath}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, { cause: err });
  }
  const upstream = parseResolvConf(text);
  if (upstream.nameservers.length === 0) o.log.warn(`DNS capture: ${o.resolvConfPath} names no nameserver: names outside the mesh will not resolve`);
  let names = new Map<string, ReadonlyArray<string>>();
  const proxy = new DnsProxy({
    host: o.host,
    port: o.port,
    upstream,
    lookup: (n) => names.get(n),
    log: o.log,
    onOutcome: (answer, transport) => o.metrics.dnsRequests.inc({ answer, transport }),
  });
  await proxy.start();
  const client = new NameTableClient({
    address: o.discoveryAddress,
    serverName: o.serverName,
    credentials: o.credentials,
    node: o.node,
    log: o.log,
    onTable: (entries) => {
      names = tableLookup(entries);
      o.metrics.dnsNames.set(entries.length);
    },
  });
  client.start();
  return {
    proxy,
    client,
    async stop() {
      client.stop();
      await proxy.stop();
    },
  };
}
