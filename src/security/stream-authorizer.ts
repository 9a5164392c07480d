/**
 * The seam between the ADS server and authentication (docs/adr/0042): the server calls a port's
 * authorizer once per new stream, with the proxy its first request names, and serves or refuses as
 * told. This file is all of src/security the transport may see (eslint/layers.mjs, SEAMS); the
 * implementation is xds-auth.ts, wired per port by the bootstrap.
 */
import type * as grpc from '@grpc/grpc-js';
import type { Proxy } from '../model/proxy.js';

/** Whether a stream may be served; `identity` is shown for the connection in the debug views. */
export type StreamDecision = { readonly allowed: true; readonly identity?: string } | { readonly allowed: false; readonly code: grpc.status; readonly message: string };

/** Decides whether a stream may be served for the proxy its first request names. */
export type StreamAuthorizer = (call: grpc.ServerDuplexStream<Buffer, Buffer>, proxy: Proxy) => Promise<StreamDecision>;

/**
 * Of the names a stream subscribes to for `typeUrl`, those it may not have (docs/adr/0105: Secrets
 * of another namespace, Secrets asked for by a proxy that is not a gateway). The transport drops
 * them from the subscription, so no generator ever sees them; the implementation logs and counts.
 * Called when a subscription's names change, not on every ACK.
 */
export type ResourceAccess = (proxy: Proxy, typeUrl: string, names: ReadonlySet<string>) => ReadonlySet<string>;
