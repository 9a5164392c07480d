/**
 * Stack frames back in source terms. The daemon runs as a bundle (scripts/bundle.mjs, ADR 0194):
 * its frames point into `dist/bin/chunk-*.js`, several sources merged and minified onto a few
 * lines. Each output file has a source map beside it (`x.js.map`; tsc's output has them too), and
 * this module maps a frame's position through it, so the caller and stack of a log line name
 * `src/<file>.ts:<line>`.
 *
 * Maps are read on first need only (a `--log_caller` scope, a stack at `--log_stacktrace_level`):
 * an idle daemon pays nothing for them. A frame Node already mapped (`--enable-source-maps`)
 * names a `.ts` file without a map beside it and stays as it is.
 */
import fs from 'node:fs';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** `(file:line:column)` or `file:line:column` at the end of a V8 stack frame. */
const FRAME_LOCATION = /(\(?)((?:file:\/\/)?[^()\s]+):(\d+):(\d+)(\)?)$/;

const maps = new Map<string, SourceMap | null>();

function mapFor(file: string): SourceMap | null {
  let map = maps.get(file);
  if (map === undefined) {
    try {
      map = new SourceMap(JSON.parse(fs.readFileSync(`${file}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]);
    } catch {
      map = null; // no map beside the file (a package, Node's own modules) or not a readable one
    }
    maps.set(file, map);
  }
  return map;
}

export interface SourcePosition {
  readonly file: string;
  /** 1-based. */
  readonly line: number;
  /** 1-based. */
  readonly column: number;
}

/** Where a stack frame points, in the sources when the file has a map; undefined for a frame without a location. */
export function framePosition(frame: string): SourcePosition | undefined {
  const m = FRAME_LOCATION.exec(frame);
  if (!m) return undefined;
  const file = m[2].startsWith('file://') ? fileURLToPath(m[2]) : m[2];
  const line = Number(m[3]);
  const column = Number(m[4]);
  if (!path.isAbsolute(file)) return { file, line, column };
  const entry = mapFor(file)?.findEntry(line - 1, column - 1);
  if (entry === undefined || !('originalSource' in entry)) return { file, line, column };
  const source = entry.originalSource.startsWith('file://') ? fileURLToPath(entry.originalSource) : path.resolve(path.dirname(file), entry.originalSource);
  return { file: source, line: entry.originalLine + 1, column: entry.originalColumn + 1 };
}

/** The frame with its location replaced by the source position (unchanged when there is none). */
export function mapFrame(frame: string): string {
  const pos = framePosition(frame);
  const m = FRAME_LOCATION.exec(frame);
  if (pos === undefined || m === null) return frame;
  return `${frame.slice(0, m.index)}${m[1]}${pos.file}:${pos.line}:${pos.column}${m[5]}`;
}
