/**
 * The agent's SDS server on a Unix socket (SDS_SOCKET_PATH): `envoy.service.secret.v3.
 * SecretDiscoveryService` with StreamSecrets (state of the world), DeltaSecrets (incremental) and
 * FetchSecrets, serving two secrets of the certificate manager (./certificates.ts):
 *
 *   default  tls_certificate: the workload's chain and key
 *   ROOTCA   validation_context: the mesh root bundle
 *
 * Every stream that asked for a secret gets the new one pushed when the certificate is renewed or
 * the root bundle changes. A NACK is logged (without the secret) and the secret is not sent again
 * until it changes. Names other than these two are answered with nothing, and logged. The socket
 * is made owner-only (0600): the key is served to the proxy's own user.
 */
import * as grpc from '@grpc/grpc-js';
import { chmod, mkdir, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { Any } from '../gen/google/protobuf/any.js';
import { Secret } from '../gen/envoy/extensions/transport_sockets/tls/v3/secret.js';
import { DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse } from '../gen/envoy/service/discovery/v3/discovery.js';
import { SDS_ROOT_SECRET, SDS_WORKLOAD_SECRET } from './names.js';
import type { WorkloadCertificate } from './certificates.js';

export const SECRET_TYPE_URL = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret';
const SERVICE = 'envoy.service.secret.v3.SecretDiscoveryService';
/** Bound on the names one stream may subscribe to (Envoy asks for one or two). */
const MAX_NAMES = 16;

export interface SdsServerOptions {
  readonly socketPath: string;
  readonly log: Logger;
  /** The certificate held now (undefined until the first one). */
  readonly current: () => WorkloadCertificate | undefined;
  /** Subscribes to certificate changes; returns an unsubscribe. */
  readonly onChange: (listener: (cert: WorkloadCertificate) => void) => () => void;
}

/** The Secret named `name` from `cert`, or undefined for a name the agent does not serve. */
export function secretFor(name: string, cert: WorkloadCertificate): Secret | undefined {
  if (name === SDS_WORKLOAD_SECRET) {
    return Secret.fromPartial({
      name,
      tlsCertificate: { certificateChain: { inlineBytes: Buffer.from(cert.certChainPem) }, privateKey: { inlineBytes: Buffer.from(cert.keyPem) } },
    });
  }
  if (name === SDS_ROOT_SECRET) return Secret.fromPartial({ name, validationContext: { trustedCa: { inlineBytes: Buffer.from(cert.rootPem) } } });
  return undefined;
}

const packSecret = (s: Secret): Any => Any.fromPartial({ typeUrl: SECRET_TYPE_URL, value: Buffer.from(Secret.encode(s).finish()) });

function bidi<Req, Res>(path: string, req: { encode(m: Req): { finish(): Uint8Array }; decode(b: Uint8Array): Req }, res: { encode(m: Res): { finish(): Uint8Array }; decode(b: Uint8Array): Res }, responseStream = true, requestStream = true): grpc.MethodDefinition<Req, Res> {
  return {
    path,
    requestStream,
    responseStream,
    requestSerialize: (m: Req) => Buffer.from(req.encode(m).finish()),
    requestDeserialize: (b: Buffer) => req.decode(b),
    responseSerialize: (m: Res) => Buffer.from(res.encode(m).finish()),
    responseDeserialize: (b: Buffer) => res.decode(b),
  };
}

export const SDS_SERVICE_DEFINITION: grpc.ServiceDefinition = {
  StreamSecrets: bidi(`/${SERVICE}/StreamSecrets`, DiscoveryRequest, DiscoveryResponse),
  DeltaSecrets: bidi(`/${SERVICE}/DeltaSecrets`, DeltaDiscoveryRequest, DeltaDiscoveryResponse),
  FetchSecrets: bidi(`/${SERVICE}/FetchSecrets`, DiscoveryRequest, DiscoveryResponse, false, false),
};

export class SdsServer {
  private readonly server = new grpc.Server({ 'grpc.max_receive_message_length': 1 << 20 });
  private nonce = 0;
  private readonly streams = new Set<() => void>();
  private unsubscribe: (() => void) | undefined;
  /** Open streams (the agent's metric). */
  get streamCount(): number {
    return this.streams.size;
  }

  constructor(private readonly o: SdsServerOptions) {
    this.server.addService(SDS_SERVICE_DEFINITION, {
      StreamSecrets: (call: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>) => this.sotw(call),
      DeltaSecrets: (call: grpc.ServerDuplexStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>) => this.delta(call),
      FetchSecrets: (call: grpc.ServerUnaryCall<DiscoveryRequest, DiscoveryResponse>, cb: grpc.sendUnaryData<DiscoveryResponse>) => {
        const cert = this.o.current();
        if (!cert) return cb({ code: grpc.status.UNAVAILABLE, details: 'no workload certificate yet' });
        const secrets = call.request.resourceNames.slice(0, MAX_NAMES).map((n) => secretFor(n, cert)).filter((s): s is Secret => s !== undefined);
        cb(null, DiscoveryResponse.fromPartial({ versionInfo: String(cert.version), typeUrl: SECRET_TYPE_URL, resources: secrets.map(packSecret), nonce: String(++this.nonce) }));
      },
    });
  }

  async start(): Promise<void> {
    await mkdir(dirname(this.o.socketPath), { recursive: true });
    await rm(this.o.socketPath, { force: true }); // a socket left by a previous run
    await new Promise<void>((resolve, reject) => this.server.bindAsync(`unix:${this.o.socketPath}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())));
    await chmod(this.o.socketPath, 0o600);
    this.unsubscribe = this.o.onChange(() => {
      for (const push of this.streams) push();
    });
  }

  async stop(): Promise<void> {
    this.unsubscribe?.();
    await new Promise<void>((resolve) => this.server.tryShutdown(() => resolve()));
    this.server.forceShutdown();
    await rm(this.o.socketPath, { force: true });
  }

  private badType(typeUrl: string): boolean {
    return typeUrl !== '' && typeUrl !== SECRET_TYPE_URL;
  }

  private sotw(call: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>): void {
    let names: string[] = [];
    let sentVersion = '';
    let lastNonce = '';
    const send = (): void => {
      const cert = this.o.current();
      if (!cert || names.length === 0) return;
      const version = String(cert.version);
      if (version === sentVersion) return;
      const secrets = names.map((n) => secretFor(n, cert)).filter((s): s is Secret => s !== undefined);
      sentVersion = version;
      lastNonce = String(++this.nonce);
      call.write(DiscoveryResponse.fromPartial({ versionInfo: version, typeUrl: SECRET_TYPE_URL, resources: secrets.map(packSecret), nonce: lastNonce }));
    };
    this.streams.add(send);
    const close = (): void => void this.streams.delete(send);
    call.on('data', (req: DiscoveryRequest) => {
      if (this.badType(req.typeUrl)) {
        call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: `type_url ${JSON.stringify(req.typeUrl)}: this server serves only ${SECRET_TYPE_URL}` });
        return close();
      }
      if (req.errorDetail) {
        this.o.log.warn({ names, version: req.versionInfo, code: req.errorDetail.code }, `proxy rejected secrets: ${req.errorDetail.message}`);
        return;
      }
      if (req.responseNonce && req.responseNonce !== lastNonce) return; // stale: a newer response is on its way
      if (req.resourceNames.length > MAX_NAMES) {
        call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: `resource_names: ${req.resourceNames.length} names, at most ${MAX_NAMES}` });
        return close();
      }
      const wanted = [...new Set(req.resourceNames)].sort();
      for (const n of wanted) if (n !== SDS_WORKLOAD_SECRET && n !== SDS_ROOT_SECRET) this.o.log.warn({ name: n }, `secret ${JSON.stringify(n)} is not served (only ${SDS_WORKLOAD_SECRET} and ${SDS_ROOT_SECRET})`);
      if (wanted.join('\0') !== names.join('\0')) {
        names = wanted;
        sentVersion = '';
      }
      send();
    });
    call.on('end', () => {
      close();
      call.end();
    });
    call.on('error', close);
    call.on('cancelled', close);
  }

  private delta(call: grpc.ServerDuplexStream<DeltaDiscoveryRequest, DeltaDiscoveryResponse>): void {
    const names = new Set<string>();
    /** Version of each name last sent. */
    const sent = new Map<string, string>();
    const send = (): void => {
      const cert = this.o.current();
      if (!cert) return;
      const version = String(cert.version);
      const resources = [];
      for (const n of names) {
        if (sent.get(n) === version) continue;
        const s = secretFor(n, cert);
        if (!s) continue;
        sent.set(n, version);
        resources.push({ name: n, version, resource: packSecret(s), aliases: [] });
      }
      if (resources.length === 0) return;
      call.write(DeltaDiscoveryResponse.fromPartial({ systemVersionInfo: version, typeUrl: SECRET_TYPE_URL, resources, nonce: String(++this.nonce) }));
    };
    this.streams.add(send);
    const close = (): void => void this.streams.delete(send);
    call.on('data', (req: DeltaDiscoveryRequest) => {
      if (this.badType(req.typeUrl)) {
        call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: `type_url ${JSON.stringify(req.typeUrl)}: this server serves only ${SECRET_TYPE_URL}` });
        return close();
      }
      if (req.errorDetail) {
        this.o.log.warn({ code: req.errorDetail.code }, `proxy rejected secrets: ${req.errorDetail.message}`);
        return;
      }
      for (const [n, v] of Object.entries(req.initialResourceVersions ?? {})) sent.set(n, v);
      for (const n of req.resourceNamesSubscribe) if (names.size < MAX_NAMES) names.add(n);
      for (const n of req.resourceNamesUnsubscribe) {
        names.delete(n);
        sent.delete(n);
      }
      send();
    });
    call.on('end', () => {
      close();
      call.end();
    });
    call.on('error', close);
    call.on('cancelled', close);
  }
}
