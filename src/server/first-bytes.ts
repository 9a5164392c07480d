/**
 * A deadline for a connection's first bytes, on every listener: a peer that opens a TCP connection
 * and sends nothing (a half-open connection, a port scan left hanging, a client that died during
 * the handshake) holds a socket and its buffers for ever otherwise. The connection is closed once
 * the deadline passes with nothing read, and the caller counts it (issue 15).
 *
 * A peer that sends its first bytes and then stalls is the protocols' matter: HTTP's header
 * timeout, TLS's handshake timeout, and on ADS streams the first-request deadline and keepalive.
 */
import type { Server as NetServer, Socket } from 'node:net';
import type * as grpc from '@grpc/grpc-js';

/** How long a new connection may stay without sending a byte. */
export const FIRST_BYTES_MS = 10_000;

/** Closes connections of `server` that sent nothing within `ms`; `closed` is told of each. */
export function closeSilentConnections(server: NetServer, closed: () => void, ms = FIRST_BYTES_MS): void {
  server.on('connection', (socket: Socket) => {
    const timer = setTimeout(() => {
      if (socket.bytesRead > 0 || socket.destroyed) return;
      socket.destroy();
      closed();
    }, ms);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
  });
}

/**
 * The HTTP/2 (net or TLS) servers behind a bound grpc-js server. grpc-js does not expose them; this
 * reads its `http2Servers` map (grpc-js 1.10–1.14, pinned), and a test fails when it is gone.
 */
export function grpcNetServers(server: grpc.Server): NetServer[] {
  const map = (server as unknown as { http2Servers?: unknown }).http2Servers;
  return map instanceof Map ? [...(map as Map<NetServer, unknown>).keys()] : [];
}
