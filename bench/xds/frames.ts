/**
 * Cheap handling of the DiscoveryRequest/DiscoveryResponse envelopes for the client driver.
 *
 * Thousands of simulated clients receive byte-identical resources, so the driver never decodes a
 * whole response per client: it walks the envelope's fields, finds the span of bytes holding the
 * resources and decodes the resources themselves (with the generated types, see decode.ts) once per
 * distinct span (compared with memcmp, see ResourceMemo). Requests are assembled from pre-encoded parts so that a 3,000-name EDS subscription is
 * encoded once, not once per client.
 *
 * Field numbers (envoy.service.discovery.v3):
 *   DiscoveryRequest  { version_info = 1; node = 2; resource_names = 3; type_url = 4; response_nonce = 5 }
 *   DiscoveryResponse { version_info = 1; resources = 2 (Any); canary = 3; type_url = 4; nonce = 5; control_plane = 6 }
 */
import { Node } from '../../src/gen/envoy/config/core/v3/base.js';

export interface ResponseEnvelope {
  readonly versionInfo: string;
  readonly typeUrl: string;
  readonly nonce: string;
  /** `google.protobuf.Any` bytes of each resource (views into the received buffer). */
  readonly resources: Buffer[];
  /** The bytes spanning every resource field: equal spans mean equal resources. */
  readonly span: Buffer;
}

const EMPTY = Buffer.alloc(0);

function readVarint(buf: Buffer, pos: number): [value: number, next: number] {
  let value = 0;
  let mul = 1;
  for (;;) {
    if (pos >= buf.length) throw new Error('truncated varint');
    const b = buf[pos++];
    value += (b & 0x7f) * mul;
    if (b < 0x80) return [value, pos];
    mul *= 128;
    if (mul > 2 ** 63) throw new Error('varint too long');
  }
}

/** Walks a DiscoveryResponse without decoding the resources. */
export function parseResponse(buf: Buffer): ResponseEnvelope {
  let versionInfo = '';
  let typeUrl = '';
  let nonce = '';
  const resources: Buffer[] = [];
  let spanStart = -1;
  let spanEnd = -1;
  let pos = 0;
  while (pos < buf.length) {
    const fieldStart = pos;
    let key: number;
    [key, pos] = readVarint(buf, pos);
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (wire === 2) {
      let len: number;
      [len, pos] = readVarint(buf, pos);
      const end = pos + len;
      if (end > buf.length) throw new Error('truncated length-delimited field');
      switch (field) {
        case 1:
          versionInfo = buf.toString('utf8', pos, end);
          break;
        case 2:
          resources.push(buf.subarray(pos, end));
          if (spanStart < 0) spanStart = fieldStart;
          spanEnd = end;
          break;
        case 4:
          typeUrl = buf.toString('utf8', pos, end);
          break;
        case 5:
          nonce = buf.toString('utf8', pos, end);
          break;
        default:
          break;
      }
      pos = end;
    } else if (wire === 0) {
      [, pos] = readVarint(buf, pos);
    } else if (wire === 1) {
      pos += 8;
    } else if (wire === 5) {
      pos += 4;
    } else {
      throw new Error(`unsupported wire type ${wire} in DiscoveryResponse`);
    }
  }
  // Whatever else lies between the first and the last resource (nothing, with this daemon) is part
  // of the span: a spurious difference costs a decode, never a wrong answer.
  const span = spanStart < 0 ? EMPTY : buf.subarray(spanStart, spanEnd);
  return { versionInfo, typeUrl, nonce, resources, span };
}

function varintBytes(n: number): number[] {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

/** One length-delimited field: tag, length, payload. */
export function lengthDelimited(field: number, payload: Uint8Array): Buffer {
  const head = Buffer.from([...varintBytes((field << 3) | 2), ...varintBytes(payload.length)]);
  return Buffer.concat([head, payload]);
}

const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');

/** The repeated `resource_names` (field 3) block of a request, encoded once per distinct list. */
export function encodeNames(names: ReadonlyArray<string>): Buffer {
  return Buffer.concat(names.map((n) => lengthDelimited(3, utf8(n))));
}

/** The `node` field (2) of a request: the generated Node codec does the work. */
export function encodeNodeField(node: Node): Buffer {
  return lengthDelimited(2, Node.encode(node).finish());
}

const typeUrlFields = new Map<string, Buffer>();

/** Assembles a DiscoveryRequest from its parts; empty strings and absent parts are left out. */
export function encodeRequest(parts: { versionInfo: string; node?: Buffer; names: Buffer; typeUrl: string; nonce: string }): Buffer {
  let typeField = typeUrlFields.get(parts.typeUrl);
  if (!typeField) {
    typeField = lengthDelimited(4, utf8(parts.typeUrl));
    typeUrlFields.set(parts.typeUrl, typeField);
  }
  const chunks: Buffer[] = [];
  if (parts.versionInfo) chunks.push(lengthDelimited(1, utf8(parts.versionInfo)));
  if (parts.node) chunks.push(parts.node);
  chunks.push(parts.names, typeField);
  if (parts.nonce) chunks.push(lengthDelimited(5, utf8(parts.nonce)));
  return Buffer.concat(chunks);
}
