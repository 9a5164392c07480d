/**
 * Hand-assembled protobuf framing for the hot path: resources are encoded once into `Any` bytes and
 * spliced into each DiscoveryResponse without re-encoding. Field numbers follow
 * envoy.service.discovery.v3.DiscoveryResponse / DeltaDiscoveryResponse / Resource and google.protobuf.Any.
 */

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

function writeVarint(buf: Buffer, offset: number, n: number): number {
  while (n >= 0x80) {
    buf[offset++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[offset++] = n;
  return offset;
}

/** The header of a length-delimited field: its tag, then `length` as a varint (the bytes follow). */
export function fieldHeader(field: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(1 + varintSize(length));
  buf[0] = (field << 3) | 2;
  writeVarint(buf, 1, length);
  return buf;
}

/** A length-delimited field: tag, length, bytes. */
type Part = { field: number; bytes: Uint8Array };

/** Length-delimited fields in order, after `reserve` bytes left for the caller (a gRPC message prefix). */
function concatFields(parts: ReadonlyArray<Part>, reserve = 0): Buffer {
  let total = reserve;
  for (const p of parts) total += 1 + varintSize(p.bytes.length) + p.bytes.length;
  const buf = Buffer.allocUnsafe(total);
  let off = reserve;
  for (const p of parts) {
    buf[off++] = (p.field << 3) | 2;
    off = writeVarint(buf, off, p.bytes.length);
    buf.set(p.bytes, off);
    off += p.bytes.length;
  }
  return buf;
}

const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');

/**
 * Already-encoded messages as one repeated length-delimited field, ready to be placed between the
 * other fields of their parent (a message's fields may come in any order; the generated encoders
 * write them in field order, and so do callers that splice these).
 */
export function encodeRepeatedField(field: number, items: ReadonlyArray<Uint8Array>): Buffer {
  return concatFields(items.map((bytes) => ({ field, bytes })));
}

/** google.protobuf.Any { type_url = 1; value = 2 } */
export function encodeAny(typeUrl: string, value: Uint8Array): Buffer {
  return concatFields([
    { field: 1, bytes: utf8(typeUrl) },
    { field: 2, bytes: value },
  ]);
}

export interface ControlPlaneId {
  readonly identifier: string;
}

/** Bytes before a message on a gRPC stream: a compressed flag (0) and the message length (uint32 BE). */
export const GRPC_PREFIX_BYTES = 5;

/**
 * A message as it goes on a gRPC stream: the 5-byte prefix followed by the message bytes. Responses
 * are framed once and the same bytes are written to every stream that gets them (ADR 0022).
 */
export type GrpcFrame = Buffer & { readonly __grpcFrame: true };

function framed(parts: ReadonlyArray<Part>): GrpcFrame {
  const buf = concatFields(parts, GRPC_PREFIX_BYTES);
  buf[0] = 0;
  buf.writeUInt32BE(buf.length - GRPC_PREFIX_BYTES, 1);
  return buf as GrpcFrame;
}

/** The message bytes of a frame (a view, no copy). */
export function frameMessage(frame: GrpcFrame): Buffer {
  return frame.subarray(GRPC_PREFIX_BYTES);
}


/**
 * A DiscoveryResponse { version_info = 1; resources = 2 (Any); type_url = 4; nonce = 5;
 * control_plane = 6 } framed for a gRPC stream (`frameMessage` gives the message alone).
 */
export function frameDiscoveryResponse(
  versionInfo: string,
  typeUrl: string,
  nonce: string,
  anyResources: ReadonlyArray<Uint8Array>,
  controlPlane?: Uint8Array,
): GrpcFrame {
  const parts: Part[] = [{ field: 1, bytes: utf8(versionInfo) }];
  for (const r of anyResources) parts.push({ field: 2, bytes: r });
  parts.push({ field: 4, bytes: utf8(typeUrl) }, { field: 5, bytes: utf8(nonce) });
  if (controlPlane) parts.push({ field: 6, bytes: controlPlane });
  return framed(parts);
}

/** envoy.config.core.v3.ControlPlane { identifier = 1 } */
export function encodeControlPlane(identifier: string): Buffer {
  return concatFields([{ field: 1, bytes: utf8(identifier) }]);
}

/** Resource { version = 1; resource = 2 (Any); name = 3 } as used by delta responses. */
export function encodeDeltaResource(name: string, version: string, anyBytes: Uint8Array): Buffer {
  return concatFields([
    { field: 1, bytes: utf8(version) },
    { field: 2, bytes: anyBytes },
    { field: 3, bytes: utf8(name) },
  ]);
}

/**
 * A DeltaDiscoveryResponse { system_version_info = 1; resources = 2; type_url = 4; nonce = 5;
 * removed_resources = 6; control_plane = 7 } framed for a gRPC stream.
 */
export function frameDeltaDiscoveryResponse(
  systemVersion: string,
  typeUrl: string,
  nonce: string,
  resources: ReadonlyArray<Uint8Array>,
  removed: ReadonlyArray<string>,
  controlPlane?: Uint8Array,
): GrpcFrame {
  const parts: Part[] = [{ field: 1, bytes: utf8(systemVersion) }];
  for (const r of resources) parts.push({ field: 2, bytes: r });
  parts.push({ field: 4, bytes: utf8(typeUrl) }, { field: 5, bytes: utf8(nonce) });
  for (const name of removed) parts.push({ field: 6, bytes: utf8(name) });
  if (controlPlane) parts.push({ field: 7, bytes: controlPlane });
  return framed(parts);
}
