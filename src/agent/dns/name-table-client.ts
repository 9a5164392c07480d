/**
 * The agent's subscription to meshd's name table (docs/adr/0187): an ADS stream of its own to meshd's
 * secured port, as the same node as its Envoy (node id and metadata, so meshd scopes the table as it
 * scopes the proxy's routes) and with the same credential (the workload certificate over mutual
 * TLS, checked against the mesh root for meshd's name). It asks for the one resource of type
 * `mesh.v1.dns.NameTable`, hands every table it receives to `onTable`, and ACKs it. A stream that
 * ends or fails is opened again after a growing pause (1 s to 30 s), with the credential current then.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { DiscoveryRequest, DiscoveryResponse } from '../../gen/envoy/service/discovery/v3/discovery.js';
import { NameTable, type NameEntry } from '../../gen/mesh/v1/dns/name_table.js';

export const NAME_TABLE_TYPE_URL = 'type.googleapis.com/mesh.v1.dns.NameTable';
const ADS_METHOD = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';
/** A name table of 100,000 hosts is a few MiB. */
const MAX_MESSAGE = 64 * 1024 * 1024;

export interface NameTableClientOptions {
  /** meshd's xDS address, `host:port`. */
  readonly address: string;
  /** The name meshd's certificate is checked for. */
  readonly serverName: string;
  /** The channel credential of the next connection (the current workload certificate). */
  readonly credentials: () => grpc.ChannelCredentials;
  readonly node: { readonly id: string; readonly metadata: Readonly<Record<string, unknown>> };
  readonly log: Logger;
  readonly onTable: (entries: ReadonlyArray<NameEntry>) => void;
  /** Pause before the first retry, ms (default 1000); doubled up to 30 s. */
  readonly retryMs?: number;
}

export class NameTableClient {
  private client?: grpc.Client;
  private call?: grpc.ClientDuplexStream<DiscoveryRequest, DiscoveryResponse>;
  private stopped = false;
  private retryTimer?: NodeJS.Timeout;
  private pause: number;
  /** Tables received (for readiness and tests). */
  received = 0;

  constructor(private readonly o: NameTableClientOptions) {
    this.pause = o.retryMs ?? 1000;
  }

  start(): void {
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    this.call?.cancel();
    this.client?.close();
  }

  private connect(): void {
    if (this.stopped) return;
    let creds: grpc.ChannelCredentials;
    try {
      creds = this.o.credentials();
    } catch (err) {
      this.o.log.warn(`name table: no credential to reach meshd yet: ${(err as Error).message}`);
      this.retry();
      return;
    }
    this.client?.close();
    const client = new grpc.Client(this.o.address, creds, {
      'grpc.ssl_target_name_override': this.o.serverName,
      'grpc.default_authority': this.o.serverName,
      'grpc.max_receive_message_length': MAX_MESSAGE,
    });
    this.client = client;
    const call = client.makeBidiStreamRequest(
      ADS_METHOD,
      (m: DiscoveryRequest) => Buffer.from(DiscoveryRequest.encode(m).finish()),
      (b: Buffer) => DiscoveryResponse.decode(b),
    );
    this.call = call;
    const node = { id: this.o.node.id, metadata: { ...this.o.node.metadata } };
    call.on('data', (res: DiscoveryResponse) => {
      if (res.typeUrl !== NAME_TABLE_TYPE_URL) return;
      let entries: NameEntry[] = [];
      let error: string | undefined;
      try {
        for (const r of res.resources) {
          if (r.typeUrl !== NAME_TABLE_TYPE_URL) throw new Error(`resource of type ${r.typeUrl}`);
          entries = entries.concat(NameTable.decode(r.value).entries);
        }
      } catch (err) {
        error = (err as Error).message;
      }
      if (error === undefined) {
        this.pause = this.o.retryMs ?? 1000;
        this.received++;
        this.o.onTable(entries);
        this.o.log.info({ version: res.versionInfo, names: entries.length }, 'name table received');
      } else {
        this.o.log.warn({ version: res.versionInfo }, `name table refused: ${error}`);
      }
      call.write(
        DiscoveryRequest.fromPartial({
          typeUrl: NAME_TABLE_TYPE_URL,
          versionInfo: error === undefined ? res.versionInfo : '',
          responseNonce: res.nonce,
          ...(error === undefined ? {} : { errorDetail: { code: grpc.status.INVALID_ARGUMENT, message: error } }),
        }),
      );
    });
    call.on('error', (err: grpc.ServiceError) => {
      if (this.stopped) return;
      this.o.log.warn(`name table stream from ${this.o.address}: ${grpc.status[err.code] ?? err.code}: ${err.details || err.message}`);
    });
    call.on('close', () => {
      if (this.call === call) this.retry();
    });
    call.write(DiscoveryRequest.fromPartial({ node, typeUrl: NAME_TABLE_TYPE_URL, resourceNames: [] }));
  }

  private retry(): void {
    if (this.stopped) return;
    clearTimeout(this.retryTimer);
    const wait = this.pause;
    this.pause = Math.min(this.pause * 2, 30_000);
    this.retryTimer = setTimeout(() => this.connect(), wait);
    this.retryTimer.unref();
  }
}
