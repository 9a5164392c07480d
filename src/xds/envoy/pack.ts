/** Small builders for Envoy protobuf values: typed Any packing, durations, percentages, addresses. */
import type { Any } from '../../gen/google/protobuf/any.js';
import type { Duration } from '../../gen/google/protobuf/duration.js';
import { FractionalPercent_DenominatorType, type FractionalPercent } from '../../gen/envoy/type/v3/percent.js';
import type { BinaryWriter } from '@bufbuild/protobuf/wire';
import { durationMs } from '../../util/config-duration.js';

/** The part of a ts-proto message namespace the builders use. */
export interface Codec<T> {
  encode(message: T, writer?: BinaryWriter): BinaryWriter;
  fromPartial(object: never): T;
}

export type Shape<T> = T extends ReadonlyArray<infer U>
  ? ReadonlyArray<Shape<U>>
  : T extends Uint8Array
    ? T
    : T extends object
      ? { readonly [K in keyof T]?: Shape<T[K]> }
      : T;

/** A shape whose top-level fields can be filled in step by step. */
export type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** Builds a full message from a partial literal (defaults filled in). */
export function msg<T>(codec: Codec<T>, partial: NoInfer<Shape<T>>): T {
  return codec.fromPartial(partial as never);
}

export function encode<T>(codec: Codec<T>, message: T): Uint8Array {
  return codec.encode(message).finish();
}

/** Packs a message as google.protobuf.Any with the type URL of its full proto name. */
export function pack<T>(typeName: string, codec: Codec<T>, partial: NoInfer<Shape<T>>): Any {
  const bytes = encode(codec, msg(codec, partial));
  return { typeUrl: `type.googleapis.com/${typeName}`, value: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) };
}

export function duration(ms: number): Duration {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1e6) };
}

/** Percentage 0..100 (with fractions) as a per-million fraction. */
export function percent(value: number | undefined): FractionalPercent {
  const v = value === undefined ? 100 : Math.max(0, Math.min(100, value));
  return { numerator: Math.round(v * 10_000), denominator: FractionalPercent_DenominatorType.MILLION };
}

export function socketAddress(address: string, port: number): { socketAddress: { address: string; portValue: number } } {
  return { socketAddress: { address, portValue: port } };
}

/** Milliseconds of an optional config duration (`1.5s`, `100ms`), or `fallback` when unset. */
export function configMs(value: string | undefined, fallback: number): number;
export function configMs(value: string | undefined): number | undefined;
export function configMs(value: string | undefined, fallback?: number): number | undefined {
  return value === undefined || value === '' ? fallback : durationMs(value);
}
