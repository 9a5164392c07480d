/**
 * The xDS debug channel (docs/adr/0060): a request of type `mesh.io/debug/<view>[?query]` on the ADS
 * stream is answered with one resource, a `google.protobuf.StringValue` holding the view's JSON
 * (debug-views.ts), so meshctl reaches every daemon replica on its xDS port without port-forwarding.
 *
 * Who may ask: the stream passes the port's authorizer first, as a proxy's does (xds-auth.ts). Then
 * an authenticated caller must be of the daemon's own namespace (the mesh namespace: operators and
 * meshctl use its service accounts); an unauthenticated stream (a port without XDS_AUTH) is served
 * only from a loopback peer, that is on the daemon's host or through a port-forward.
 */
import * as grpc from '@grpc/grpc-js';
import { StringValue } from '../gen/google/protobuf/wrappers.js';
import { Any } from '../gen/google/protobuf/any.js';
import { parseSpiffeId } from '../security/spiffe.js';
import { DEBUG_TYPE_PREFIX, type DebugAnswer, type DebugCaller, type DebugHandler } from '../xds/ads-server.js';
import { fieldHeader } from '../xds/wire.js';
import type { DebugView } from './debug-views.js';
import { isStreamed, JsonArray, jsonArrayParts, jsonChunks } from '../util/json-stream.js';

export const DEBUG_RESOURCE_TYPE = 'type.googleapis.com/google.protobuf.StringValue';

/** True for a gRPC peer string of a loopback address (`127.0.0.1:5000`, `[::1]:5000`, `ipv4:…`). */
export function isLoopbackPeer(peer: string): boolean {
  const p = peer.replace(/^ipv[46]:/, '');
  const host = p.startsWith('[') ? p.slice(1, p.indexOf(']')) : p.slice(0, p.lastIndexOf(':') < 0 ? undefined : p.lastIndexOf(':'));
  return host === '::1' || host.startsWith('127.') || host === 'localhost' || host.startsWith('::ffff:127.');
}

/** Why `caller` may not read debug views, or undefined when it may. */
export function debugRefusal(caller: DebugCaller, namespace: string): string | undefined {
  if (caller.identity === undefined) {
    return isLoopbackPeer(caller.peer) ? undefined : `debug types need an authenticated caller of namespace ${namespace} on this port (or a loopback peer); ${caller.peer} is neither`;
  }
  const ns = parseSpiffeId(caller.identity)?.namespace;
  return ns === namespace ? undefined : `${caller.identity} may not read the debug views: only identities of namespace ${namespace} may`;
}

function encodeJson(value: unknown): Uint8Array {
  const inner = StringValue.encode({ value: JSON.stringify(value) }).finish();
  return Any.encode({ typeUrl: DEBUG_RESOURCE_TYPE, value: Buffer.from(inner) }).finish();
}

/** Text of one part of an answer in parts: about 1 MiB of items (docs/adr/0185). */
const PART_CHARS = 1024 * 1024;

/**
 * The same `Any` as encodeJson, for a value with long lists rendered item by item with yields
 * (json-stream.ts): the text never exists as one string, and the protobuf is assembled from its
 * chunks' bytes.
 */
async function encodeStreamedJson(value: unknown): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const text of jsonChunks(value, { compact: true })) chunks.push(Buffer.from(text, 'utf8'));
  return stringValueAny(chunks);
}

/** An `Any` holding a `google.protobuf.StringValue` of the text of `chunks` (UTF-8), assembled from their bytes. */
function stringValueAny(chunks: ReadonlyArray<Buffer>): Buffer {
  let length = 0;
  for (const b of chunks) length += b.length;
  const stringValue = [fieldHeader(1, length), ...chunks];
  const innerLength = stringValue[0].length + length;
  const typeUrl = Buffer.from(DEBUG_RESOURCE_TYPE, 'utf8');
  return Buffer.concat([fieldHeader(1, typeUrl.length), typeUrl, fieldHeader(2, innerLength), ...stringValue]);
}

async function* answerParts(array: JsonArray): AsyncGenerator<ReadonlyArray<Uint8Array>, void, undefined> {
  for await (const text of jsonArrayParts(array.items, PART_CHARS)) yield [stringValueAny([Buffer.from(text, 'utf8')])];
}

const STATUS_CODES: Readonly<Record<number, grpc.status>> = { 400: grpc.status.INVALID_ARGUMENT, 404: grpc.status.NOT_FOUND, 403: grpc.status.PERMISSION_DENIED };

/** The ADS server's debug handler over `views`, for a daemon of namespace `namespace`. */
export function xdsDebugHandler(views: ReadonlyMap<string, DebugView>, namespace: string): DebugHandler {
  return async (typeUrl: string, caller: DebugCaller): Promise<DebugAnswer> => {
    const refusal = debugRefusal(caller, namespace);
    if (refusal) return { code: grpc.status.PERMISSION_DENIED, message: refusal };
    const rest = typeUrl.slice(DEBUG_TYPE_PREFIX.length);
    const q = rest.indexOf('?');
    const name = q < 0 ? rest : rest.slice(0, q);
    const view = views.get(name);
    if (!view) return { code: grpc.status.NOT_FOUND, message: `no debug view ${JSON.stringify(name)} (views: ${[...views.keys()].sort().join(', ')})` };
    const reply = await view(new URLSearchParams(q < 0 ? '' : rest.slice(q + 1)));
    if (reply.status !== 200) {
      const error = (reply.body as { error?: unknown }).error;
      return { code: STATUS_CODES[reply.status] ?? grpc.status.UNKNOWN, message: typeof error === 'string' ? error : `debug view ${name} failed` };
    }
    // a long list to a client that joins parts: several messages, each a JSON array of whole items,
    // so that neither side holds (or parses) the whole text at once (docs/adr/0185)
    if (reply.body instanceof JsonArray && caller.joinsParts) return { parts: answerParts(reply.body) };
    // large views are rendered item by item with yields: a big view does not block the loop
    return { resources: [isStreamed(reply.body) ? await encodeStreamedJson(reply.body) : encodeJson(reply.body)] };
  };
}
