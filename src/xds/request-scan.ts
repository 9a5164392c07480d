/**
 * A quick read of a state-of-the-world DiscoveryRequest for the common case, an ACK that repeats the
 * names of the previous request: the scalar fields are read and the resource names are located as
 * one byte span, without decoding them (a sidecar's EDS ACK lists thousands of names). Field numbers
 * follow envoy.service.discovery.v3.DiscoveryRequest.
 */

export interface ScannedRequest {
  readonly typeUrl: string;
  readonly nonce: string;
  /** node (2) or error_detail (6) present: the request needs a full decode. */
  readonly needsDecode: boolean;
  /** The bytes of every resource_names (3) field, tags included (they are contiguous). */
  readonly names: Buffer;
  /** The one of `expected` that `names` equals, when it does. */
  readonly known?: Buffer;
}

const EMPTY = Buffer.alloc(0);

/** A varint at `pos`: its value and the position after it; undefined when `buf` ends first or it is longer than 10 bytes. */
export function readVarint(buf: Buffer, pos: number): [value: number, next: number] | undefined {
  let value = 0;
  let shift = 1;
  for (let i = 0; i < 10; i++) {
    if (pos >= buf.length) return undefined;
    const b = buf[pos++];
    value += (b & 0x7f) * shift;
    if ((b & 0x80) === 0) return [value, pos];
    shift *= 128;
  }
  return undefined;
}

/**
 * Undefined when the bytes are not a well-formed message, or the names are not in one run.
 * `expected` are name spans the request is likely to repeat (those of the connection's watches):
 * a run of names equal to one of them is skipped with one comparison instead of field by field.
 */
export function scanDiscoveryRequest(buf: Buffer, expected: ReadonlyArray<Buffer> = []): ScannedRequest | undefined {
  let pos = 0;
  let typeUrl = '';
  let nonce = '';
  let needsDecode = false;
  let namesStart = -1;
  let namesEnd = -1;
  let split = false;
  let known: Buffer | undefined;
  while (pos < buf.length) {
    const tagStart = pos;
    const tag = readVarint(buf, pos);
    if (!tag) return undefined;
    pos = tag[1];
    const field = Math.floor(tag[0] / 8);
    const wire = tag[0] & 7;
    let end: number;
    if (wire === 2) {
      const len = readVarint(buf, pos);
      if (!len) return undefined;
      pos = len[1];
      end = pos + len[0];
    } else if (wire === 0) {
      const v = readVarint(buf, pos);
      if (!v) return undefined;
      end = v[1];
    } else if (wire === 1) {
      end = pos + 8;
    } else if (wire === 5) {
      end = pos + 4;
    } else {
      return undefined;
    }
    if (end > buf.length) return undefined;
    if (field === 3 && wire === 2 && namesStart < 0) {
      known = expected.find((e) => e.length > 0 && tagStart + e.length <= buf.length && buf.compare(e, 0, e.length, tagStart, tagStart + e.length) === 0);
      if (known) {
        // the fields after the known run are read as usual: another name there splits the run
        namesStart = tagStart;
        namesEnd = tagStart + known.length;
        pos = namesEnd;
        continue;
      }
    }
    if (field === 3 && wire === 2) {
      if (namesStart < 0) namesStart = tagStart;
      else if (namesEnd !== tagStart) split = true;
      namesEnd = end;
    } else if (field === 4 && wire === 2) {
      typeUrl = buf.toString('utf8', pos, end);
    } else if (field === 5 && wire === 2) {
      nonce = buf.toString('utf8', pos, end);
    } else if (field === 2 || field === 6) {
      needsDecode = true;
    }
    pos = end;
  }
  if (split) return undefined;
  const names = namesStart < 0 ? EMPTY : buf.subarray(namesStart, namesEnd);
  // a name after the known run extends it: then the names are not that span
  return { typeUrl, nonce, needsDecode, names, known: known?.length === names.length ? known : undefined };
}
